r"""The layout of a ragged batch of sets.

A :class:`SetLayout` is computed once from a PyG :obj:`batch` vector and
shared by every layer of a model: it holds the per-set element counts (read
to the host once), the set bookkeeping every block needs (:obj:`ptr`, pooled
layouts, masks, per-set means) and a cache in which the attention kernels
(:mod:`mzlayers.kernels`) keep their index tensors, so no layer
synchronises with the device again.
"""
from collections.abc import Sequence
from dataclasses import dataclass, field
from itertools import accumulate
from typing import Optional

import torch
from torch import Tensor
from torch_geometric.utils import scatter

from mzlayers.validate import check_index, check_shape, count_sets, in_autocast
from mzlayers.zonotope import Zonotope


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


def _equal_sets_batch(num_sets: int, size: int, device: torch.device) -> Tensor:
    r"""The set index :obj:`[num_sets * size]` of :obj:`num_sets` sets of
    :obj:`size` rows each, in two operators (:obj:`repeat_interleave`
    dispatches about ten)."""
    return torch.arange(num_sets * size, device=device).div(max(size, 1), rounding_mode='floor')


@dataclass(eq=False)
class SetLayout:
    r"""The layout of a batch of :obj:`num_sets` sets stored as one flat,
    sorted element tensor (PyG's :obj:`batch` convention).

    A *padded* layout (:meth:`padded`) holds :obj:`B` sets of :obj:`n` rows
    each, of which :obj:`mask` marks the real elements: its shapes depend on
    :obj:`(B, n)` only, never on the set sizes, and building it reads
    nothing from the device (the static-shape path of
    :func:`~mzlayers.static.bucket_batch`).  Its :obj:`counts` are the
    padded widths; statistics (:meth:`mean`, :meth:`sum`,
    :attr:`nonempty`) and the ``'dense'`` attention kernel skip the padding.

    Args:
        batch (torch.Tensor): Sorted set index of every element, :obj:`[N]`.
        num_sets (int): Number of sets :obj:`B` (sets may be empty).
        counts (list[int]): Host copy of the number of elements per set.
        mask (torch.Tensor, optional): :obj:`[N]`, :obj:`True` = real
            element, for a padded layout; :obj:`None`: every row is an
            element. (default: :obj:`None`)
    """
    batch: Tensor
    num_sets: int
    counts: list[int]
    mask: Tensor | None = None
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
        num_sets, counts = count_sets(batch, num_elements, num_sets)
        if batch is None:
            batch = torch.zeros(num_elements, dtype=torch.long, device=device)
        return cls(batch.long(), num_sets, counts)

    @classmethod
    def from_sizes(cls, batch: Tensor, sizes: Sequence[int],
                   ptr: Tensor | None = None) -> 'SetLayout':
        r"""The layout of a batch whose set sizes are known on the host,
        computed where the batch was made (e.g. from a PyG :obj:`Batch`'s
        :obj:`ptr` before it moved to the GPU): no device read, no tensor
        made from host data.  Only the shapes are checked; the sizes must
        describe the sorted :obj:`batch` (as a PyG :obj:`Batch`'s do).

        Args:
            batch (torch.Tensor): Sorted set index of every element, :obj:`[N]`.
            sizes (Sequence[int]): The number of elements of every set.
            ptr (torch.Tensor, optional): :obj:`[B + 1]` CSR offsets of the
                sets on :obj:`batch`'s device (a PyG :obj:`Batch`'s
                :obj:`ptr`); computed on the device when :obj:`None`.
        """
        counts = [int(n) for n in sizes]
        check_index(batch, sum(counts))
        if ptr is not None and tuple(ptr.shape) != (len(counts) + 1,):
            raise ValueError(f"'ptr' must have shape [{len(counts) + 1}] (one offset per "
                             f"set, plus one), got {tuple(ptr.shape)}")
        layout = cls(batch.long(), len(counts), counts)
        if ptr is not None:
            layout._cache[('ptr',)] = ptr.to(batch.device, torch.long)
            layout._cache[('counts',)] = layout.ptr.diff()
        return layout

    @classmethod
    def uniform(cls, num_sets: int, size: int, device: torch.device) -> 'SetLayout':
        r"""The layout of :obj:`num_sets` sets of exactly :obj:`size` elements
        (e.g. the :math:`k` pooled seeds of every set)."""
        return cls(_equal_sets_batch(num_sets, size, device), num_sets, [size] * num_sets)

    @classmethod
    def padded(cls, mask: Tensor) -> 'SetLayout':
        r"""The layout of a padded batch :obj:`[B, n, *]` flattened to
        :obj:`[B * n, *]`, with :obj:`mask` :obj:`[B, n]` (:obj:`True` = real
        element, as :func:`~torch_geometric.utils.to_dense_batch` returns
        it).  No device read."""
        B, n = mask.shape
        return cls(_equal_sets_batch(B, n, mask.device), B, [n] * B, mask.reshape(B * n))

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
        r"""The number of elements of every set, :obj:`[B]`, made on the
        device from :obj:`batch` (no copy of the host :obj:`counts`: that
        would synchronise a CUDA stream)."""
        def build():
            if self.equal_sizes:
                size = self.counts[0] if self.counts else 0
                return torch.full((self.num_sets,), size, dtype=torch.long, device=self.device)
            ones = torch.ones_like(self.batch)
            return ones.new_zeros(self.num_sets).scatter_add_(0, self.batch, ones)
        return self.cached(('counts',), build)

    @property
    def ptr(self) -> Tensor:
        return self.cached(('ptr',), lambda: torch.cat([
            self.count_tensor.new_zeros(1), self.count_tensor.cumsum(0)]))

    @property
    def positions(self) -> Tensor:
        r"""The position of every row in its set, :obj:`[N]`: its index
        among the set's elements in input order.  In a padded layout the
        real elements come first, in their order (position = rank among the
        real elements), then the padding rows, so the rows of a set hold
        the positions :obj:`0, ..., n - 1` once each.  No device read."""
        def build():
            if self.mask is None:
                return torch.arange(self.num_elements, device=self.device) - \
                    self.ptr.index_select(0, self.batch)
            mask = self.mask.view(self.num_sets, -1).long()  # [B, n]
            real = mask.cumsum(1) - 1  # rank among the real elements
            pad = mask.sum(1, keepdim=True) + (1 - mask).cumsum(1) - 1  # after them
            return torch.where(mask.bool(), real, pad).view(-1)
        return self.cached(('positions',), build)

    @property
    def nonempty(self) -> Tensor:
        r"""Boolean :obj:`[B]`, :obj:`True` for sets with at least one element."""
        if self.mask is not None:
            return self.mask.view(self.num_sets, -1).any(-1)
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
            return SetLayout(self.batch[lo:hi] - start, stop - start, self.counts[start:stop],
                             None if self.mask is None else self.mask[lo:hi])
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
        if self.mask is not None:
            count = self.cached(('real_counts', x.dtype), lambda: self.mask.view(
                self.num_sets, -1).sum(-1).clamp(min=1).to(x.dtype))  # [B], once per layout
            return self.sum(x) / count.view(-1, *([1] * (x.dim() - 1)))
        if self._full_rows():
            return x.view(self.num_sets, -1, *x.shape[1:]).mean(1)
        return scatter(x, self.batch, dim=0, dim_size=self.num_sets, reduce='mean')

    def sum(self, x: Tensor) -> Tensor:
        r"""Per-set sum of :obj:`x` :obj:`[N, *]` -> :obj:`[B, *]` (real
        elements only in a padded layout)."""
        if self.mask is not None:
            mask = self.mask.view(-1, *([1] * (x.dim() - 1)))
            x = x.masked_fill(~mask, 0).view(self.num_sets, -1, *x.shape[1:])
            return x.sum(1)  # [B, n, *] -> [B, *]
        if self._full_rows():
            return x.view(self.num_sets, -1, *x.shape[1:]).sum(1)
        return scatter(x, self.batch, dim=0, dim_size=self.num_sets, reduce='sum')

    def _full_rows(self) -> bool:
        # every set has the same number n > 0 of elements, set after set: the
        # rows are a [B, n] grid, reduced by a view and one kernel where a
        # scatter dispatches about ten (pooled tokens, padded batches)
        return self.num_elements > 0 and self.equal_sizes

    def pair_counts(self, queries: Optional['SetLayout'], num_learned: int = 1) -> list[int]:
        r"""Query-key pairs of every set: its keys times its queries (the
        elements of :obj:`queries`, a layout with the same sets, or
        :obj:`num_learned` learned queries when it is :obj:`None`)."""
        if queries is None:
            return [num_learned * n for n in self.counts]
        self.check_queries(queries)
        return [a * b for a, b in zip(self.counts, queries.counts, strict=True)]

    def check_queries(self, queries: 'SetLayout') -> None:
        r"""Raises a :class:`ValueError` unless the query layout
        :obj:`queries` holds the same sets as this (key) layout."""
        if queries.num_sets != self.num_sets:
            raise ValueError(f"Query and key layouts must hold the same sets (got "
                             f"{queries.num_sets} and {self.num_sets})")


def resolve_layout(x, batch: Tensor | None, dim_size: int | None,
                   channels: int, layout=None, dtype: torch.dtype | None = None):
    r"""Validates a block's or model's :obj:`(x, batch, dim_size)` input and
    returns its :class:`~mzlayers.layout.SetLayout`.

    :obj:`x` is a tensor or a :class:`~mzlayers.zonotope.Zonotope` (its
    centre is checked; its generators must be finite too).  When a model
    already built the :obj:`layout` of this batch, only the shapes are
    checked (no device read): the values were validated at the entry point.
    """
    tensors = (x.center, x.generators) if isinstance(x, Zonotope) else (x,)
    if layout is not None or in_autocast(tensors[0]):  # inside a model, or mixed precision
        dtype = None
    check_shape(tensors[0], channels, dtype=dtype)
    if layout is not None:
        if layout.num_elements != tensors[0].size(0):
            raise ValueError(f"'layout' describes {layout.num_elements} elements but "
                             f"'x' has {tensors[0].size(0)}")
        return layout
    num_elements = tensors[0].size(0)
    num_sets, counts = count_sets(batch, num_elements, dim_size, finite=tensors)
    if batch is None:
        batch = torch.zeros(num_elements, dtype=torch.long, device=tensors[0].device)
    return SetLayout(batch.long(), num_sets, counts)


def resolve_input(x: Tensor, batch: Tensor | None, dim_size: int | None, channels: int,
                  *, mask: Tensor | None = None, layout=None,
                  dtype: torch.dtype | None = None):
    r"""A model's input: a ragged batch (:func:`resolve_layout`, one device
    read) or, with :obj:`mask`, a padded one (the static-shape path of
    :func:`~mzlayers.static.bucket_batch`), or a ragged batch with its
    :obj:`layout` made where the batch was built
    (:meth:`~mzlayers.layout.SetLayout.from_sizes`).  The last two are
    checked on the host only, shapes and dtypes: no device read, so a CUDA
    step never waits and :func:`torch.compile` traces it without a graph
    break.  Returns :obj:`x` as flat rows and its
    :class:`~mzlayers.layout.SetLayout`.

    Args:
        x (torch.Tensor): :obj:`[N, channels]`, or :obj:`[B, n, channels]`
            with :obj:`mask` (returned as :obj:`[B * n, channels]`).
        batch (torch.Tensor, optional): Set index :obj:`[N]`; must be
            :obj:`None` with :obj:`mask`.
        dim_size (int, optional): The number of sets; :obj:`None` or
            :obj:`B` with :obj:`mask`.
        channels (int): The expected feature size.
        mask (torch.Tensor, optional): Boolean :obj:`[B, n]`, :obj:`True` =
            real element. (default: :obj:`None`)
        layout (SetLayout, optional): The layout of :obj:`batch`, computed
            where the batch was made; :obj:`batch` must be its
            :obj:`batch` or :obj:`None`, :obj:`dim_size` its number of sets
            or :obj:`None`.
        dtype (torch.dtype, optional): The model's parameter dtype.
    """
    if layout is not None:
        return x, _given_layout(x, batch, dim_size, channels, mask, layout, dtype)
    if mask is None:
        return x, resolve_layout(x, batch, dim_size, channels, dtype=dtype)
    if batch is not None:
        raise ValueError("'batch' must be None when 'mask' is given (a padded batch "
                         "x [B, n, F] holds set b in x[b])")
    if not torch.is_tensor(x) or x.dim() != 3:
        shape = tuple(x.shape) if torch.is_tensor(x) else type(x).__name__
        raise ValueError(f"'x' must be a padded batch [B, n, {channels}] when 'mask' is "
                         f"given (got {shape})")
    if not torch.is_tensor(mask) or mask.dtype != torch.bool or mask.shape != x.shape[:2]:
        shape = tuple(mask.shape) if torch.is_tensor(mask) else type(mask).__name__
        raise ValueError(f"'mask' must be a boolean tensor of shape {tuple(x.shape[:2])} "
                         f"(got {shape})")
    if dim_size is not None and dim_size != x.size(0):
        raise ValueError(f"'dim_size' ({dim_size}) must be None or the number of padded "
                         f"sets ({x.size(0)})")
    flat = x.reshape(-1, x.size(-1))
    check_shape(flat, channels, dtype=None if in_autocast(flat) else dtype)
    return flat, SetLayout.padded(mask)


def _given_layout(x: Tensor, batch: Tensor | None, dim_size: int | None, channels: int,
                  mask: Tensor | None, layout, dtype: torch.dtype | None):
    r"""Checks a model input that comes with its :obj:`layout` (host only)."""
    if mask is not None:
        raise ValueError("'layout' describes a ragged batch; pass 'mask' or 'layout', "
                         "not both")
    if batch is not None and batch is not layout.batch and batch.shape != layout.batch.shape:
        raise ValueError(f"'batch' has {batch.numel()} entries but 'layout' describes "
                         f"{layout.num_elements} elements")
    if dim_size is not None and dim_size != layout.num_sets:
        raise ValueError(f"'dim_size' ({dim_size}) differs from the number of sets of "
                         f"'layout' ({layout.num_sets})")
    check_shape(x, channels, dtype=None if in_autocast(x) else dtype)
    if layout.num_elements != x.size(0):
        raise ValueError(f"'layout' describes {layout.num_elements} elements but "
                         f"'x' has {x.size(0)}")
    return layout
