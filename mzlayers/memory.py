r"""The memory guard of :class:`~mzlayers.aggregation.MZSetTransformerAggregation`:
the peak memory of a call, estimated from the set sizes that its
:class:`~mzlayers.layout.SetLayout` already holds on the host, checked
against a budget before anything runs.

The estimate (:meth:`EncoderShape.peak`) is :obj:`OVERHEAD` plus

* the **row activations**: every element is a zonotope of :math:`(1 + n_g) d`
  numbers, and a block keeps about :obj:`ROW_TENSORS` such tensors per element
  at once (all blocks' when autograd stores them for backward, one block's
  otherwise, or with :obj:`checkpoint_rows`);
* the **attention** of the largest call, as the kernel that runs it
  (:func:`~mzlayers.attention.set_attention`) materialises it: the padded
  queries, keys and values of its largest bucket (:obj:`PADDED_TENSORS`
  copies) and :obj:`SCORE_TENSORS`
  score tensors of the query-key pairs it holds at once: all the pairs of a
  bucket, or of a run of small sets in the segment kernel, or the query
  chunks of :func:`~mzlayers.kernels.sdpa.sdpa` when values are wider than
  keys.

Nothing is read from the device; the free memory is queried only when the
estimate exceeds :obj:`GUARD_FLOOR`.
"""
from dataclasses import dataclass, replace

import torch

from mzlayers.attention import AUTO_MAX_PADDING, SEGMENT_FUSED_MIN_PAIRS
from mzlayers.kernels import sdpa as sdpa_module
from mzlayers.kernels.dense import size_groups
from mzlayers.kernels.policy import auto_kernel
from mzlayers.kernels.segment import segment_runs
from mzlayers.layout import SetLayout

#: The default budget: this fraction of the memory free on the device when
#: the call starts (host memory on CPU, :func:`torch.cuda.mem_get_info` plus
#: PyTorch's cached blocks on CUDA).
DEFAULT_BUDGET = 0.5

#: Estimates below this many bytes (256 MiB) pass without a query of the free memory.
GUARD_FLOOR = 2**28

#: Row tensors of :math:`(1 + n_g) d` numbers alive per element in one block:
#: with autograd storing them for backward, and without.
ROW_TENSORS = {True: 12, False: 8}

#: Factor on the stored row tensors when MZ attention stores its activations
#: instead of recomputing them (:obj:`recompute=False`): one MZ-ISAB's
#: training peak with it over the default's, 4.0x at Table 30's three sizes
#: (9.61x / 9.54x / 9.52x an ISAB's against 2.38x / 2.40x / 2.42x; bench row
#: ``mz-isab-stored``, ``bench/results/isab_memory.json``).
STORED_FACTOR = 4

#: Score-sized tensors alive at once in an attention call (scores, weights,
#: the mask of non-finite scores; in backward also their gradients): with
#: autograd recording the call, and without.
SCORE_TENSORS = {True: 5, False: 3}

#: Copies of the padded queries, keys and values of a dense bucket alive at
#: once (autograd keeps them, and backward makes their gradients).
PADDED_TENSORS = {True: 3, False: 2}

#: Bytes every call adds whatever its size (index tensors, the allocator's slack).
OVERHEAD = 2**24


@dataclass(frozen=True)
class Attention:
    r"""One attention call of a block: queries (a layout of set elements, or
    :obj:`learned` queries shared by all sets) over the keys of :obj:`keys`."""
    keys: SetLayout
    queries: SetLayout | None
    learned: int = 1


@dataclass(frozen=True)
class EncoderShape:
    r"""What the peak of an
    :class:`~mzlayers.mz_set_transformer.MZSetTransformerEncoder` call
    depends on besides the set sizes (its arguments of the same names, and
    :obj:`recompute`: whether its MZ attention recomputes its activations in
    backward, the default, or stores them, :obj:`STORED_FACTOR`)."""
    channels: int
    heads: int
    num_generators: int
    num_encoder_blocks: int
    num_seed_points: int
    num_induced_points: int | None
    checkpoint_rows: int | None
    backend: str
    recompute: bool = True

    def calls(self, layout: SetLayout) -> list[Attention]:
        r"""The attention calls on :obj:`layout` that grow with the set
        sizes (the decoders attend :math:`k` pooled tokens per set)."""
        calls = [Attention(layout, None, self.num_seed_points)]  # MZ-PMA
        m = self.num_induced_points
        if m is None:  # MZ-SAB
            return calls + [Attention(layout, layout)]
        # MZ-ISAB: m inducing points over X, then X over the m induced tokens
        return calls + [Attention(layout, None, m), Attention(layout.pooled(m), layout)]

    def peak(self, layout: SetLayout, *, device_type: str, element_size: int,
             grad: bool) -> int:
        r"""Estimated peak bytes of one call on :obj:`layout` (module
        docstring) on a device of type :obj:`device_type`, with numbers of
        :obj:`element_size` bytes and :obj:`grad` when autograd records it."""
        C, G, H = self.channels, self.num_generators, self.heads
        row = (1 + G) * C * element_size
        stored = grad and self.checkpoint_rows is None
        blocks = self.num_encoder_blocks + 1
        rows = layout.num_elements * row * ROW_TENSORS[stored] * (blocks if stored else 1)
        if grad and not self.recompute:  # MZ attention's activations stored as well
            rows *= STORED_FACTOR
        if grad and not stored:  # checkpoint_rows keeps each block's input for backward
            rows += layout.num_elements * row * blocks
        return OVERHEAD + rows + max(attention_bytes(
            call, heads=H, key_channels=C // H, value_channels=(1 + G) * (C // H),
            backend=self.backend, device_type=device_type, element_size=element_size,
            grad=grad) for call in self.calls(layout))


def attention_bytes(call: Attention, *, heads: int, key_channels: int, value_channels: int,
                    backend: str, device_type: str, element_size: int, grad: bool) -> int:
    r"""Peak bytes of one attention call (module docstring) with
    :obj:`heads` heads of :obj:`key_channels` :math:`d_k` and
    :obj:`value_channels` :math:`d_v`, recorded by autograd if :obj:`grad`."""
    keys, queries = call.keys, call.queries
    kernel = auto_kernel(device_type, keys, queries) if backend == 'auto' else backend
    kernel = 'dense' if keys.mask is not None else kernel
    H, chunked = heads, value_channels != key_channels
    query_counts = [call.learned] * keys.num_sets if queries is None else queries.counts

    def at_once(sets: int, width_q: int, width_k: int) -> int:  # score elements held at once
        total = sets * H * width_q * width_k
        if not chunked:
            return total
        return min(total, max(sdpa_module.MAX_SCORE_ELEMENTS, sets * H * width_k))

    if kernel == 'varlen':  # every set's scores at once (the math kernel's, on CPU)
        return SCORE_TENSORS[grad] * H * sum(
            q * k for q, k in zip(query_counts, keys.counts, strict=True)) * element_size
    if kernel == 'segment':
        plan = segment_runs(keys, queries, SEGMENT_FUSED_MIN_PAIRS, call.learned)
        scores = [at_once(1, query_counts[run.start], keys.counts[run.start]) if run.fused
                  else H * sum(q * k for q, k in zip(query_counts[run.start:run.stop],
                                                       keys.counts[run.start:run.stop],
                                                       strict=True))
                  for run in plan.runs]
        return SCORE_TENSORS[grad] * max(scores, default=0) * element_size
    padding = AUTO_MAX_PADDING if kernel == 'buckets' else None
    peak = 0
    for group in size_groups(keys.counts, list(range(keys.num_sets)), padding):
        S = len(group)
        width_k = max((keys.counts[b] for b in group), default=0)
        width_q = max((query_counts[b] for b in group), default=0)
        padded = PADDED_TENSORS[grad] * S * H * (width_k + width_q) * (
            key_channels + value_channels)
        peak = max(peak, padded + SCORE_TENSORS[grad] * at_once(S, width_q, width_k))
    return peak * element_size


def free_memory(device: torch.device) -> int | None:
    r"""Bytes free for tensors on :obj:`device` now: on CUDA, the driver's
    free memory plus the blocks PyTorch's allocator holds unused; on CPU,
    the host's available memory (:obj:`psutil` if installed, else
    :file:`/proc/meminfo`); :obj:`None` where neither is known."""
    if device.type == 'cuda':
        free, _ = torch.cuda.mem_get_info(device)
        return free + torch.cuda.memory_reserved(device) - torch.cuda.memory_allocated(device)
    if device.type != 'cpu':
        return None
    try:
        import psutil
        return psutil.virtual_memory().available
    except ImportError:
        pass
    try:
        with open('/proc/meminfo') as f:
            fields = dict(line.split(':', 1) for line in f)
        return int(fields['MemAvailable'].split()[0]) * 1024
    except (OSError, KeyError, ValueError):
        return None


def resolve_budget(budget: float | int | None, device: torch.device) -> int | None:
    r"""The budget in bytes of :obj:`budget`: a float in :math:`(0, 1]` is
    that fraction of :func:`free_memory`, an int a number of bytes,
    :obj:`None` no budget (nor where the free memory is unknown)."""
    if budget is None or isinstance(budget, int):
        return budget
    free = free_memory(device)
    return None if free is None else int(budget * free)


def check_budget(name: str, budget) -> None:
    r"""Raises a :class:`ValueError` unless :obj:`budget` is :obj:`None`, a
    float in :math:`(0, 1]` or a positive int (:obj:`name` in the message)."""
    fraction = isinstance(budget, float) and 0.0 < budget <= 1.0
    count = isinstance(budget, int) and not isinstance(budget, bool) and budget > 0
    if not (budget is None or fraction or count):
        raise ValueError(f"'{name}' must be None, a fraction in (0, 1] of the free memory or "
                         f"a positive number of bytes (got {budget!r})")


def gib(size: int) -> str:
    r"""E.g. :obj:`'8.2 GiB'`, :obj:`'310 MiB'`."""
    return f'{size / 2**30:.1f} GiB' if size >= 2**30 else f'{size / 2**20:.0f} MiB'


#: The alternatives an over-budget call names, where they fit: the linear
#: MZ-ISAB encoder, the segment kernel, recomputing the row-wise part.
ALTERNATIVES = {'num_induced_points': 16, 'backend': 'segment', 'checkpoint_rows': 4096}


def check_memory(shape: EncoderShape, layout: SetLayout, budget: float | int | None, *,
                 device: torch.device, element_size: int, grad: bool) -> None:
    r"""Raises a :class:`MemoryError` when the estimated peak of a call of
    :obj:`shape` on :obj:`layout` (:meth:`EncoderShape.peak`) exceeds
    :obj:`budget` (:func:`resolve_budget`), naming the set sizes, the
    estimate, the budget and the :obj:`ALTERNATIVES` that fit it."""
    if budget is None:
        return
    def peak(s: EncoderShape) -> int:
        return s.peak(layout, device_type=device.type, element_size=element_size, grad=grad)
    estimate = peak(shape)
    if isinstance(budget, float) and estimate <= GUARD_FLOOR:
        return
    limit = resolve_budget(budget, device)
    if limit is None or estimate <= limit:
        return
    options = []
    for name, value in ALTERNATIVES.items():
        if getattr(shape, name) != value:
            cost = peak(replace(shape, **{name: value}))
            if cost <= limit:
                options.append(f"{name}={value!r} (about {gib(cost)})")
    largest = max(layout.counts, default=0)
    what = 'fraction' if isinstance(budget, float) else 'bytes'
    raise MemoryError(
        f"a call on {layout.num_sets:,} set(s) of {layout.num_elements:,} elements (the "
        f"largest of {largest:,}) would need about {gib(estimate)} on {device.type}, over "
        f"the budget of {gib(limit)} (memory_budget={budget!r}, {what}; "
        f"mzlayers.memory estimates it from the set sizes). "
        + (f"Options that fit: {', '.join(options)}. " if options else
           f"None of {', '.join(f'{k}={v!r}' for k, v in ALTERNATIVES.items())} fits: "
           "split the sets, or use a device with more memory. ")
        + "To raise the budget, pass memory_budget=<bytes> or a larger fraction; "
        "memory_budget=None disables the check.")
