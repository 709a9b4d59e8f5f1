r"""Layouts of ragged set batches and the plans that pad them.

A :class:`SetLayout` is computed once from a PyG :obj:`batch` vector and
shared by every layer of a model: it holds the per-set element counts (read
to the host once) and caches the index tensors that the attention kernels
need, so no layer synchronises with the device again.

The padded-dense kernels run on :class:`DensePlan` buckets: groups of sets of
similar size, each padded to its own largest set.  With a single bucket this
is exactly :func:`torch_geometric.utils.to_dense_batch`; with several buckets a
skewed batch (a few huge sets among many small ones) is padded at most
:obj:`max_padding` times per bucket instead of to the global maximum.
"""
from dataclasses import dataclass, field
from itertools import accumulate
from typing import Optional

import torch
from torch import Tensor
from torch_geometric.utils import scatter


def attention_bias(mask: Tensor, dtype: torch.dtype) -> Tensor:
    r"""Converts a key mask (:obj:`True` = real element, as returned by
    :func:`~torch_geometric.utils.to_dense_batch`) into the additive float
    mask of :func:`~torch.nn.functional.scaled_dot_product_attention`.

    This is the only place where the project's mask convention meets
    PyTorch's.  Padding gets the most negative finite value of :obj:`dtype`
    (not :obj:`-inf`), so a set without any element gives a uniform
    distribution over zero-padded values, i.e. an exactly zero output, and
    never a NaN.

    Args:
        mask (torch.Tensor): Boolean key mask of shape :obj:`[B, M]`.
        dtype (torch.dtype): The dtype of the attention scores.

    Returns:
        torch.Tensor: Bias of shape :obj:`[B, 1, 1, M]`.
    """
    bias = torch.zeros(mask.shape, dtype=dtype, device=mask.device)
    bias = bias.masked_fill(~mask, torch.finfo(dtype).min)
    return bias[:, None, None, :]


@dataclass
class Bucket:
    r"""One padded-dense group of sets.

    Attributes:
        set_ids (torch.Tensor): The sets of this bucket, :obj:`[S]`.
        key_index (torch.Tensor, optional): Element index of every key of the
            bucket (:obj:`None` when it is :obj:`arange(N)`).
        key_pos (torch.Tensor, optional): Flat position of every key in the
            padded :obj:`[S * key_width]` buffer (:obj:`None` when the bucket
            holds all sets in order, all of size :obj:`key_width`: no padding).
        key_width (int): Padded number of keys per set.
        key_mask (torch.Tensor): :obj:`[S, key_width]`, :obj:`True` = real.
        query_index, query_pos, query_width: The same for queries that are
            elements of a set (unused for learned queries).
    """
    set_ids: Tensor
    key_index: Tensor | None
    key_pos: Tensor | None
    key_width: int
    key_mask: Tensor
    query_index: Tensor | None = None
    query_pos: Tensor | None = None
    query_width: int = 0


@dataclass
class Bags:
    r"""The segment plan of attention from set-element queries to ragged
    keys (:meth:`SetLayout.pair_bags`): :obj:`S` weighted samples,
    sample :math:`s` reading table row :obj:`index[s]` into bag
    :obj:`bag[s]`; the bags are the contiguous runs
    :obj:`offsets[b]:offsets[b + 1]` of the flat sample order (the
    :obj:`offsets` of :func:`~torch.nn.functional.embedding_bag` with
    :obj:`include_last_offset=True`, empty runs for empty sets).

    The transposed plan lists the same samples grouped by table row (one run
    :obj:`t_offsets[r]:t_offsets[r + 1]` per row, in bag order): sample
    :obj:`perm[t]` of the flat order reads into bag :obj:`t_index[t]`.  It
    turns the gradient of a bag sum with respect to its table into one more
    bag sum, without sorting.

    Attributes:
        index (torch.Tensor): :obj:`[S]` table row of every sample.
        bag (torch.Tensor): :obj:`[S]` bag of every sample (non-decreasing).
        offsets (torch.Tensor): :obj:`[num_bags + 1]` run starts.
        perm (torch.Tensor): :obj:`[S]` flat position of every transposed sample.
        t_index (torch.Tensor): :obj:`[S]` bag of every transposed sample.
        t_offsets (torch.Tensor): :obj:`[num_rows + 1]` transposed run starts.
    """
    index: Tensor
    bag: Tensor
    offsets: Tensor
    perm: Tensor
    t_index: Tensor
    t_offsets: Tensor


@dataclass
class Run:
    r"""Sets :obj:`start` to :obj:`stop - 1` of one call of the segment
    kernel: a single large set attended by one fused call (:obj:`fused`),
    or consecutive small sets attended together by the bag kernel."""
    start: int
    stop: int
    fused: bool


@dataclass
class SegmentRuns:
    r"""The runs of :meth:`SetLayout.segment_runs` in set order, with the
    number of key rows and of query rows (set elements) of every run."""
    runs: list[Run]
    key_rows: list[int]
    query_rows: list[int]


@dataclass(eq=False)
class SetLayout:
    r"""The layout of a batch of :obj:`num_sets` sets stored as one flat,
    sorted element tensor (PyG's :obj:`batch` convention).

    Args:
        batch (torch.Tensor): Sorted set index of every element, :obj:`[N]`.
        num_sets (int): Number of sets :obj:`B` (sets may be empty).
        counts (list[int]): Host copy of the number of elements per set.
    """
    batch: Tensor
    num_sets: int
    counts: list[int]
    _cache: dict[tuple, object] = field(default_factory=dict, repr=False)

    @classmethod
    def from_batch(cls, batch: Tensor | None, num_elements: int,
                   num_sets: int | None = None,
                   device: torch.device | None = None) -> 'SetLayout':
        r"""Builds the layout of a PyG :obj:`batch` vector, checking it
        (sorted, non-negative, below :obj:`num_sets`) with one host read:
        an unsorted :obj:`batch` would silently give wrong attention.

        Args:
            batch (torch.Tensor, optional): Set index of every element
                (:obj:`None`: one set).
            num_elements (int): :math:`N`.
            num_sets (int, optional): The number of sets :math:`B`
                (:obj:`None`: the largest index plus one).
            device (torch.device, optional): The device when :obj:`batch`
                is :obj:`None`.
        """
        from mzlayers._validate import count_sets
        num_sets, counts = count_sets(batch, num_elements, num_sets)
        if batch is None:
            batch = torch.zeros(num_elements, dtype=torch.long, device=device)
        return cls(batch.long(), num_sets, counts)

    @classmethod
    def uniform(cls, num_sets: int, size: int, device: torch.device) -> 'SetLayout':
        r"""The layout of :obj:`num_sets` sets of exactly :obj:`size` elements
        (e.g. the :math:`k` pooled seeds of every set)."""
        batch = torch.arange(num_sets, device=device).repeat_interleave(size)
        return cls(batch, num_sets, [size] * num_sets)

    @property
    def num_elements(self) -> int:
        return self.batch.numel()

    @property
    def device(self) -> torch.device:
        return self.batch.device

    def cached(self, key: tuple, build):
        r"""Returns :obj:`build()` computed once per layout and :obj:`key`."""
        if key not in self._cache:
            self._cache[key] = build()
        return self._cache[key]

    @property
    def count_tensor(self) -> Tensor:
        return self.cached(('counts',), lambda: torch.tensor(
            self.counts, dtype=torch.long, device=self.device))

    @property
    def ptr(self) -> Tensor:
        return self.cached(('ptr',), lambda: torch.cat([
            self.count_tensor.new_zeros(1), self.count_tensor.cumsum(0)]))

    @property
    def nonempty(self) -> Tensor:
        r"""Boolean :obj:`[B]`, :obj:`True` for sets with at least one element."""
        return self.count_tensor > 0

    def row_range(self, start: int, stop: int) -> tuple[int, int]:
        r"""The rows :obj:`[lo, hi)` of sets :obj:`start` to :obj:`stop - 1`
        (host integers, no device sync)."""
        offsets = self.cached(('offsets',), lambda: list(accumulate(self.counts, initial=0)))
        return offsets[start], offsets[stop]

    def subset(self, start: int, stop: int) -> 'SetLayout':
        r"""The layout of sets :obj:`start` to :obj:`stop - 1` alone,
        renumbered from 0 (its rows are :meth:`row_range`)."""
        def build():
            lo, hi = self.row_range(start, stop)
            return SetLayout(self.batch[lo:hi] - start, stop - start, self.counts[start:stop])
        return self.cached(('subset', start, stop), build)

    @property
    def equal_sizes(self) -> bool:
        r""":obj:`True` when every set has the same number of elements
        (computed once per layout: every attention call asks)."""
        return self.cached(('equal_sizes',), lambda: len(set(self.counts)) <= 1)

    @property
    def padding_ratio(self) -> float:
        r"""Padded size over real size when every set is padded to the largest."""
        if self.num_elements == 0:
            return 1.0
        return self.num_sets * max(self.counts) / self.num_elements

    def pooled(self, size: int) -> 'SetLayout':
        r"""The layout of :obj:`size` pooled tokens per set (set-major), e.g.
        the output of PMA with :obj:`size` seeds or ISAB's induced set."""
        return self.cached(('pooled', size), lambda: SetLayout.uniform(
            self.num_sets, size, self.device))

    def pooled_mask(self, size: int) -> Tensor:
        r"""Boolean :obj:`[B * size, 1]`, :obj:`False` on the rows pooled from
        an empty set (multiplied into pooled outputs so they are exactly 0)."""
        return self.cached(('pooled_mask', size), lambda: self.nonempty.repeat_interleave(
            size).unsqueeze(-1))

    def mean(self, x: Tensor) -> Tensor:
        r"""Per-set mean of :obj:`x` :obj:`[N, *]` -> :obj:`[B, *]` (zero for
        an empty set)."""
        return scatter(x, self.batch, dim=0, dim_size=self.num_sets, reduce='mean')

    def sum(self, x: Tensor) -> Tensor:
        r"""Per-set sum of :obj:`x` :obj:`[N, *]` -> :obj:`[B, *]`."""
        return scatter(x, self.batch, dim=0, dim_size=self.num_sets, reduce='sum')

    def plan(self, queries: Optional['SetLayout'], max_padding: float | None,
             alone_min_pairs: int | None = None, num_learned: int = 1) -> list[Bucket]:
        r"""Padded-dense buckets for attention from :obj:`queries` (a layout
        with the same sets, or :obj:`None` for :obj:`num_learned` learned
        queries shared by all sets) to the elements of this layout.

        Args:
            queries (SetLayout, optional): The query layout.
            max_padding (float, optional): Largest ratio between the biggest
                and the smallest set of a bucket; :obj:`None` gives a single
                bucket (plain :func:`to_dense_batch` padding).
            alone_min_pairs (int, optional): When the batch needs several
                buckets, every set with at least this many query-key pairs
                gets a bucket of its own (unpadded, unmasked).
            num_learned (int, optional): The number of learned queries.
        """
        key = ('plan', queries, max_padding, alone_min_pairs, num_learned)
        return self.cached(key, lambda: self._build_plan(queries, max_padding,
                                                         alone_min_pairs, num_learned))

    def block_index(self, heads: int, width: int) -> Tensor:
        r"""Row :math:`k < W` of the block :math:`(b_x, h)` of every row
        :math:`(x, h)` of this layout, :obj:`[N H W]` (flat order
        :math:`(x, h, k)`, value :math:`(b_x H + h) W + k`): the
        :func:`~torch.nn.functional.embedding_bag` indices of a product of
        every row with the :obj:`[W, *]` block of its set and head."""
        def build():
            dtype = _index_dtype(self.num_sets * heads * width)
            group = self.batch.to(dtype)[:, None] * heads + self._arange(heads, dtype)
            return (group[:, :, None] * width + self._arange(width, dtype)).view(-1)
        return self.cached(('block_index', heads, width), build)

    def block_sum_bags(self, heads: int, width: int) -> tuple[Tensor, Tensor]:
        r"""Bags :math:`(h, k, b)` over the elements :math:`x` of set
        :math:`b` (:math:`k < W`): the row :math:`x H + h` of every sample in
        the flat order :math:`(h, k, x)`, :obj:`[H W N]`, and the
        :obj:`[H W B + 1]` run starts (the sum over a set of per-row outer
        products, block by block)."""
        def build():
            N = self.num_elements
            dtype = _index_dtype(heads * width * N + 1)
            hk = self._arange(heads * width, dtype)[:, None]  # [H * W, 1]
            starts = (hk * N + self.ptr[:-1].to(dtype)).view(-1)
            return ((self._arange(N, dtype) * heads + hk // width).view(-1),
                    torch.cat([starts, starts.new_full((1,), heads * width * N)]))
        return self.cached(('block_sum_bags', heads, width), build)

    def segment_runs(self, queries: Optional['SetLayout'], min_pairs: int,
                     num_learned: int = 1) -> SegmentRuns:
        r"""Splits the sets into the calls of the segment kernel: every set
        with at least :obj:`min_pairs` query-key pairs alone, the others in
        maximal runs of consecutive sets.

        Args:
            queries (SetLayout, optional): The layout of set-element queries
                (the same sets as this key layout), or :obj:`None` for
                :obj:`num_learned` learned queries shared by all sets.
            min_pairs (int): Pairs (keys times queries) of a set on its own.
            num_learned (int, optional): The number of learned queries.
        """
        def build():
            runs: list[Run] = []
            for b, pairs in enumerate(self.pair_counts(queries, num_learned)):
                if pairs >= min_pairs:
                    runs.append(Run(b, b + 1, True))
                elif runs and not runs[-1].fused:
                    runs[-1].stop = b + 1
                else:
                    runs.append(Run(b, b + 1, False))
            return SegmentRuns(runs, _run_rows(self, runs),
                               [] if queries is None else _run_rows(queries, runs))
        return self.cached(('segment_runs', queries, min_pairs, num_learned), build)

    def pair_counts(self, queries: Optional['SetLayout'], num_learned: int = 1) -> list[int]:
        r"""Query-key pairs of every set: its keys times its queries (the
        elements of :obj:`queries`, a layout with the same sets, or
        :obj:`num_learned` learned queries when it is :obj:`None`)."""
        if queries is None:
            return [num_learned * n for n in self.counts]
        self.check_queries(queries)
        return [a * b for a, b in zip(self.counts, queries.counts, strict=True)]

    def _arange(self, n: int, dtype: torch.dtype) -> Tensor:
        return torch.arange(n, dtype=dtype, device=self.device)

    def check_queries(self, queries: 'SetLayout') -> None:
        r"""Raises a :class:`ValueError` unless the query layout
        :obj:`queries` holds the same sets as this (key) layout."""
        if queries.num_sets != self.num_sets:
            raise ValueError(f"Query and key layouts must hold the same sets (got "
                             f"{queries.num_sets} and {self.num_sets})")

    def pair_bags(self, queries: 'SetLayout', heads: int) -> 'Bags':
        r"""The :class:`Bags` of queries that are the elements of
        :obj:`queries` (a layout with the same sets): bag :math:`(i, h)` sums
        over the elements :math:`j` of the set of :math:`i`, samples in the
        flat order :math:`(i, h, j)`, table rows :math:`j H + h`."""
        self.check_queries(queries)
        return self.cached(('pair_bags', queries, heads),
                           lambda: _pair_bags(self, queries, heads))

    def _build_plan(self, queries, max_padding, alone_min_pairs, num_learned) -> list[Bucket]:
        pairs = self.pair_counts(queries, num_learned)  # also checks the query layout
        groups = _size_groups(self.counts, list(range(self.num_sets)), max_padding)
        if len(groups) > 1 and alone_min_pairs is not None:
            alone = [b for b, p in enumerate(pairs) if p >= alone_min_pairs]
            rest = [b for b, p in enumerate(pairs) if p < alone_min_pairs]
            groups = [[b] for b in alone] + (
                _size_groups(self.counts, rest, max_padding) if rest else [])
        return [self._bucket(ids, queries, single=len(groups) == 1) for ids in groups]

    def _bucket(self, ids: list[int], queries, single: bool) -> Bucket:
        set_ids = torch.tensor(ids, dtype=torch.long, device=self.device)
        key_index, key_pos, key_width = _padding_index(self, set_ids, ids, single)
        mask = torch.zeros(len(ids) * key_width, dtype=torch.bool, device=self.device)
        mask[slice(None) if key_pos is None else key_pos] = True
        bucket = Bucket(set_ids, key_index, key_pos, key_width,
                        mask.view(len(ids), key_width))
        if queries is not None:
            bucket.query_index, bucket.query_pos, bucket.query_width = \
                _padding_index(queries, set_ids, ids, single)
        return bucket


def _run_rows(layout: SetLayout, runs: list[Run]) -> list[int]:
    r"""The number of rows of :obj:`layout` in every run."""
    ranges = (layout.row_range(run.start, run.stop) for run in runs)
    return [hi - lo for lo, hi in ranges]


def _index_dtype(bound: int) -> torch.dtype:
    r""":obj:`int32` for indices below :obj:`bound` (on CPU several times
    faster to build and to read than :obj:`int64`), else :obj:`int64`."""
    return torch.int32 if bound < 2**31 else torch.long


def _pair_order(keys: SetLayout, queries: SetLayout, heads: int
                ) -> tuple[Tensor, Tensor, Tensor, Tensor]:
    r"""Bags :math:`(i, h)` of every query :math:`i` and head :math:`h` over
    the keys :math:`j` of its set, in the flat order :math:`(i, h, j)`:
    returns the bag :obj:`[S]`, the run starts :obj:`[N_q H + 1]`, the table
    row :math:`j H + h` :obj:`[S]` of every sample and the position of every
    query in its set :obj:`[N_q H]` (repeated over the heads)."""
    counts = keys.count_tensor[queries.batch].repeat_interleave(heads)  # [N_q * H]
    size = heads * sum(a * b for a, b in zip(queries.counts, keys.counts, strict=True))
    offsets = torch.cat([counts.new_zeros(1), counts.cumsum(0)])
    bags = torch.arange(counts.numel(), device=keys.device)
    first = keys.ptr.index_select(0, queries.batch).repeat_interleave(heads)  # [N_q * H]
    shift = (first - offsets[:-1]) * heads + bags % heads  # row of sample s: s H + shift
    row = torch.arange(size, device=keys.device) * heads + shift.repeat_interleave(
        counts, output_size=size)
    local = torch.arange(queries.num_elements, device=keys.device) - \
        queries.ptr.index_select(0, queries.batch)
    return bags.repeat_interleave(counts, output_size=size), offsets, row, \
        local.repeat_interleave(heads)


def _pair_bags(keys: SetLayout, queries: SetLayout, heads: int) -> Bags:
    bag, offsets, index, _ = _pair_order(keys, queries, heads)
    _, t_offsets, t_index, local = _pair_order(queries, keys, heads)  # order (j, h, i)
    size = index.numel()
    perm = offsets.index_select(0, t_index) + local.repeat_interleave(
        t_offsets.diff(), output_size=size)
    return Bags(index, bag, offsets, perm, t_index, t_offsets)


def _size_groups(counts: list[int], ids: list[int], max_padding: float | None
                 ) -> list[list[int]]:
    r"""Partitions the sets :obj:`ids` into groups whose sizes
    (:obj:`counts[i]`) differ at most :obj:`max_padding` times (a single
    group when it is :obj:`None` or when they are already that tight)."""
    if not ids:
        return [ids]
    sizes = [counts[i] for i in ids]
    if max_padding is None or max(sizes) <= max_padding * max(1, min(sizes)):
        return [ids]
    ids = sorted(ids, key=lambda i: -counts[i])
    groups, start = [], 0
    for pos in range(1, len(ids) + 1):
        if pos == len(ids) or counts[ids[pos]] * max_padding < counts[ids[start]]:
            groups.append(sorted(ids[start:pos]))
            start = pos
    return groups


def _padding_index(layout: SetLayout, set_ids: Tensor, ids: list[int], single: bool
                   ) -> tuple[Tensor | None, Tensor | None, int]:
    r"""Element indices of :obj:`set_ids` (:obj:`None` when the bucket is
    the whole batch in order) and their flat positions in a
    :obj:`[len(set_ids), width]` buffer (:obj:`None` when every set of the
    bucket has :obj:`width` elements: no padding)."""
    counts = layout.count_tensor[set_ids]
    width = max(1, max(layout.counts[i] for i in ids) if ids else 1)
    total = sum(layout.counts[i] for i in ids)  # host sizes: no device sync below
    local = torch.arange(len(set_ids), device=layout.device).repeat_interleave(
        counts, output_size=total)
    starts = (counts.cumsum(0) - counts).repeat_interleave(counts, output_size=total)
    offset = torch.arange(local.numel(), device=layout.device) - starts
    index = None if single else layout.ptr[set_ids][local] + offset
    if local.numel() == len(set_ids) * width:  # every set full: no padding
        return index, None, width
    return index, local * width + offset, width
