r"""The varlen kernel of :func:`~mzlayers.attention.set_attention`: PyTorch's
own variable-length attention, :func:`~torch.nn.functional.scaled_dot_product_attention`
on nested jagged tensors (:func:`torch.nested.nested_tensor_from_jagged`).

Queries and keys enter as their flat rows with per-set offsets, no padding
and no mask.  On CUDA, PyTorch sends such a call to the varlen entry points
of its fused kernels (FlashAttention, memory-efficient attention or cuDNN,
with cumulative sequence lengths); elsewhere, and for float64, to its math
kernel, one product per set.  Learned queries (ISAB inducing points, PMA
seeds) are materialised once per set, :obj:`[B M, H, d_k]` jagged rows as
the padded kernel materialises them, and attend the jagged keys of their
set (cross-attention: query and key lengths differ per set).

Why this and not FlexAttention, measured on torch 2.14.1 on CPU:

* FlexAttention (:mod:`torch.nn.attention.flex_attention`, a document mask
  :obj:`query_set[i] == key_set[j]` through :func:`create_block_mask`) runs
  forward only on CPU: backward raises :class:`NotImplementedError`, eager
  and under :func:`torch.compile` alike, so it cannot train there or be
  tested against the other kernels; on CUDA it needs :func:`torch.compile`
  to be fast (eager is a reference path).
* Nested-jagged SDPA runs forward and backward on CPU in float32, float64
  and bfloat16 (autocast included), takes jagged queries of other lengths
  than the keys, and needs no compiler.  It rejects a set of length zero,
  so sets without queries or without keys are left out of the call (their
  outputs are exactly zero, as on the other kernels).

Sets are dropped through :func:`torch.nonzero_static` with sizes known on the
host, and the nested tensors get their shortest and longest lengths from
the host, so building the call reads nothing from the device.  (PyTorch's
CPU math kernel for nested tensors does: it splits them into sets on the
host; its CUDA kernels do not.)
"""
from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import Tensor

from mzlayers.layout import SetLayout


@dataclass
class VarlenPlan:
    r"""The jagged rows of one attention call.

    Attributes:
        query_offsets (torch.Tensor): :obj:`[S + 1]` offsets of the query
            rows of the :obj:`S` sets in the call.
        key_offsets (torch.Tensor): :obj:`[S + 1]` offsets of their keys.
        query_lengths (tuple[int, int]): Shortest and longest query length.
        key_lengths (tuple[int, int]): Shortest and longest key length.
        query_rows (torch.Tensor, optional): Rows of the queries in the
            call, i.e. their output rows (set-major for learned queries;
            :obj:`None`: every row, in order).
        key_rows (torch.Tensor, optional): Rows of the keys in the call.
        num_rows (int): Output rows of the whole batch.
    """
    query_offsets: Tensor
    key_offsets: Tensor
    query_lengths: tuple[int, int]
    key_lengths: tuple[int, int]
    query_rows: Tensor | None
    key_rows: Tensor | None
    num_rows: int


def varlen_plan(layout: SetLayout, queries: SetLayout | None, num_learned: int
                ) -> VarlenPlan:
    r"""The :class:`VarlenPlan` of attention from :obj:`queries` (a layout
    with the same sets, or :obj:`None` for :obj:`num_learned` learned
    queries shared by all sets) to the elements of :obj:`layout`, cached on
    :obj:`layout`."""
    if queries is None:
        queries = layout.pooled(num_learned)
    layout.check_queries(queries)
    return layout.cached(('varlen', queries), lambda: _build_plan(layout, queries))


def _build_plan(keys: SetLayout, queries: SetLayout) -> VarlenPlan:
    kept = [b for b, (m, n) in enumerate(zip(queries.counts, keys.counts, strict=True))
            if m > 0 and n > 0]
    if len(kept) == keys.num_sets:  # every set: no index
        return VarlenPlan(queries.ptr, keys.ptr, _lengths(queries.counts),
                          _lengths(keys.counts), None, None, queries.num_elements)
    kept_mask = (queries.count_tensor > 0) & (keys.count_tensor > 0)  # [B]
    sets = torch.nonzero_static(kept_mask, size=len(kept)).view(-1)
    query_counts = [queries.counts[b] for b in kept]
    key_counts = [keys.counts[b] for b in kept]
    return VarlenPlan(
        _offsets(queries.count_tensor.index_select(0, sets)),
        _offsets(keys.count_tensor.index_select(0, sets)),
        _lengths(query_counts), _lengths(key_counts),
        _rows(queries, kept_mask, sum(query_counts)), _rows(keys, kept_mask, sum(key_counts)),
        queries.num_elements)


def _lengths(counts: list[int]) -> tuple[int, int]:
    return (min(counts), max(counts)) if counts else (0, 0)


def _offsets(counts: Tensor) -> Tensor:
    return torch.cat([counts.new_zeros(1), counts.cumsum(0)])


def _rows(layout: SetLayout, kept: Tensor, size: int) -> Tensor:
    r"""The rows of :obj:`layout` in the sets :obj:`kept` (:obj:`[B]`
    boolean), :obj:`size` of them, without a host read."""
    return torch.nonzero_static(kept.index_select(0, layout.batch), size=size).view(-1)


def _jagged(rows: Tensor, offsets: Tensor, lengths: tuple[int, int]) -> Tensor:
    r"""Rows :obj:`[N, H, C]` as a nested :obj:`[S, H, j, C]` tensor (its
    rows contiguous: every SDPA kernel for nested tensors requires it)."""
    return torch.nested.nested_tensor_from_jagged(
        rows.contiguous(), offsets, min_seqlen=lengths[0], max_seqlen=lengths[1]).transpose(1, 2)


def varlen_attention(q: Tensor, k: Tensor, v: Tensor, key_layout: SetLayout,
                     query_layout: SetLayout | None, dropout: float) -> Tensor:
    r"""The ``'varlen'`` backend of :func:`~mzlayers.attention.set_attention`
    (same arguments)."""
    shared = query_layout is None
    plan = varlen_plan(key_layout, query_layout, q.size(0) if shared else 1)
    num_sets = plan.query_offsets.numel() - 1
    if num_sets == 0:  # no set has both queries and keys: zeros, independent of the inputs
        return v.new_zeros(plan.num_rows, v.size(1), v.size(2))
    if shared:  # [S M, H, d_k]: every set in the call gets its own copy
        queries = q.repeat(num_sets, 1, 1)
    else:
        queries = q if plan.query_rows is None else q.index_select(0, plan.query_rows)
    keys, values = (k, v) if plan.key_rows is None else (
        k.index_select(0, plan.key_rows), v.index_select(0, plan.key_rows))
    out = F.scaled_dot_product_attention(
        _jagged(queries, plan.query_offsets, plan.query_lengths),
        _jagged(keys, plan.key_offsets, plan.key_lengths),
        _jagged(values, plan.key_offsets, plan.key_lengths), dropout_p=dropout)
    rows = out.transpose(1, 2).values()  # [rows in the call, H, d_v]
    if plan.query_rows is None:  # every set in the call: the rows in order
        return rows
    return rows.new_zeros(plan.num_rows, *rows.shape[1:]).index_copy(0, plan.query_rows, rows)
