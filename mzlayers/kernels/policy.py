r"""The policy of the ``'auto'`` backend, as data (:obj:`AUTO_POLICY`): per
device type and kind of attention call, the kernel to run for the call's
padding ratio.  :func:`auto_kernel` reads the table with host sizes only
(the :class:`~mzlayers.layout.SetLayout` holds them), never device data.

Kernels (see :func:`~mzlayers.attention.set_attention`):

* ``'dense'``: one padded bucket, one masked SDPA call;
* ``'buckets'``: padded size buckets whose sets differ at most
  :obj:`~mzlayers.attention.AUTO_MAX_PADDING` times, large sets alone;
* ``'segment'``: the hand-written CPU segment kernel, no padding;
* ``'varlen'``: PyTorch's nested-jagged SDPA, no padding
  (:mod:`mzlayers.kernels.varlen`).

Kinds of call: ``'learned'`` (learned queries shared by all sets: ISAB's
inducing points, PMA's seeds), ``'pooled'`` (set-element queries over keys
of one width per set: ISAB's second block) and ``'ragged'`` (set-element
queries over ragged keys: self-attention).  A call's padding ratio is that
of its keys or of its set-element queries, whichever is larger
(:attr:`SetLayout.padding_ratio`: 1 when every set has the same size).
"""
from dataclasses import dataclass
from math import inf

from mzlayers.layout import SetLayout

KERNELS = ('dense', 'buckets', 'segment', 'varlen')
KINDS = ('learned', 'pooled', 'ragged')


@dataclass(frozen=True)
class DevicePolicy:
    r"""The ``'auto'`` rule of one device type.

    Attributes:
        rules (dict): Kind of call -> :obj:`((kernel, max_padding), ...)`:
            the first kernel whose :obj:`max_padding` the call's padding
            ratio does not exceed runs (the last bound is :obj:`inf`).
        measured (str, optional): Where the cross-overs were measured;
            :obj:`None` for defaults no run has measured yet.
    """
    rules: dict[str, tuple[tuple[str, float], ...]]
    measured: str | None


def _same(rule: tuple[tuple[str, float], ...]) -> dict[str, tuple[tuple[str, float], ...]]:
    return dict.fromkeys(KINDS, rule)


#: Device type -> :class:`DevicePolicy`; device types without an entry use
#: :obj:`'other'`.
AUTO_POLICY: dict[str, DevicePolicy] = {
    # Unpadded kernels for ragged learned and pooled calls: the segment
    # kernel was faster than padded buckets on every such set_pooling
    # workload, and varlen ran at 0.15-0.43x its speed on every one
    # (docs/benchmarks.md).
    'cpu': DevicePolicy(
        rules={'learned': (('dense', 1.0), ('segment', inf)),
               'pooled': (('dense', 1.0), ('segment', inf)),
               'ragged': (('buckets', inf),)},
        measured='bench/results/set_pooling.json, self_attention.json, '
                 'kernel_crossover.json'),
    # Fused SDPA on one padded bucket where padding is low, varlen (the
    # fused kernels' cu_seqlens entry points) above: defaults until a GPU
    # run of `make gpu-check` measures ours-varlen against ours-dense.
    'cuda': DevicePolicy(rules=_same((('dense', 2.0), ('varlen', inf))), measured=None),
    # Devices nobody has measured (mps, xpu, ...): padded SDPA only.
    'other': DevicePolicy(rules=_same((('dense', 2.0), ('buckets', inf))), measured=None),
}


def call_kind(key_layout: SetLayout, query_layout: SetLayout | None) -> str:
    r"""The kind of an attention call (module docstring)."""
    if query_layout is None:
        return 'learned'
    return 'pooled' if key_layout.equal_sizes else 'ragged'


def call_padding(key_layout: SetLayout, query_layout: SetLayout | None) -> float:
    r"""The padding ratio of an attention call: of its keys or of its
    set-element queries, whichever is larger."""
    if query_layout is None:
        return key_layout.padding_ratio
    return max(key_layout.padding_ratio, query_layout.padding_ratio)


def auto_kernel(device_type: str, key_layout: SetLayout,
                query_layout: SetLayout | None) -> str:
    r"""The kernel that ``'auto'`` runs on a device of type
    :obj:`device_type` (one of :obj:`KERNELS`; host sizes only)."""
    policy = AUTO_POLICY.get(device_type, AUTO_POLICY['other'])
    padding = call_padding(key_layout, query_layout)
    rules = policy.rules[call_kind(key_layout, query_layout)]
    return next(kernel for kernel, bound in rules if padding <= bound)
