r"""Exact scaled dot-product attention on ragged batches of sets.

Every kernel computes, for each query :math:`i` of set :math:`b` and head
:math:`h`,

.. math::
    \mathbf{o}_{i,h} = \sum_{j \in b} \mathrm{softmax}_j\left(
    \frac{\mathbf{q}_{i,h}^{\top} \mathbf{k}_{j,h}}{\sqrt{d_k}}\right)
    \mathbf{v}_{j,h},

where the softmax runs over the keys of the same set only.  Queries are
either learned parameters shared by all sets (ISAB inducing points, PMA
seeds) or elements of a set with the same set ids as the keys (self-attention
and ISAB's second block).

Backends:

* ``'segment'``: no padding; scores normalised with
  :func:`torch_geometric.utils.softmax` and values summed with
  :func:`torch_geometric.utils.scatter`.  Learned queries use one dense score
  product against all keys before segment normalisation.
* ``'dense'``: :func:`~torch_geometric.utils.to_dense_batch` padding and a
  masked :func:`~torch.nn.functional.scaled_dot_product_attention`.
* ``'auto'`` (default): the dense kernel on size buckets whose sets differ at
  most :obj:`AUTO_MAX_PADDING` times, so a skewed batch is not padded to its
  largest set while a uniform batch is one fused call.
"""

import torch
import torch.nn.functional as F
from torch import Tensor
from torch_geometric.utils import scatter, softmax

from mzlayers.layout import SetLayout, attention_bias

BACKENDS = ('auto', 'segment', 'dense')

#: Largest size ratio inside one padded bucket of the ``'auto'`` backend.
AUTO_MAX_PADDING = 2.0


def set_attention(
    q: Tensor,
    k: Tensor,
    v: Tensor,
    key_layout: SetLayout,
    query_layout: SetLayout | None = None,
    backend: str = 'auto',
    dropout: float = 0.0,
) -> Tensor:
    r"""Multi-head attention from queries to the keys of the same set.

    Args:
        q (torch.Tensor): Queries, :obj:`[M, H, d_k]` learned queries shared
            by all sets when :obj:`query_layout` is :obj:`None`, else
            :obj:`[N_q, H, d_k]` set elements.
        k (torch.Tensor): Keys :obj:`[N, H, d_k]`.
        v (torch.Tensor): Values :obj:`[N, H, d_v]` (:obj:`d_v` may differ
            from :obj:`d_k`).
        key_layout (SetLayout): Layout of the keys.
        query_layout (SetLayout, optional): Layout of set-element queries.
        backend (str, optional): ``'auto'``, ``'segment'`` or ``'dense'``.
        dropout (float, optional): Dropout on the attention weights (pass
            :obj:`0.` in evaluation mode).

    Returns:
        torch.Tensor: :obj:`[B * M, H, d_v]` (set-major) for learned queries,
        :obj:`[N_q, H, d_v]` otherwise.
    """
    if backend == 'segment':
        if query_layout is None:
            return _segment_shared(q, k, v, key_layout, dropout)
        return _segment_pairs(q, k, v, key_layout, query_layout, dropout)
    max_padding = AUTO_MAX_PADDING if backend == 'auto' else None
    return _dense(q, k, v, key_layout, query_layout, dropout, max_padding)


def _segment_shared(q, k, v, layout: SetLayout, dropout: float) -> Tensor:
    M, H, D = q.shape
    score = torch.einsum('nhd,mhd->nhm', k, q) / D**0.5  # [N, H, M]
    alpha = softmax(score, layout.batch, num_nodes=layout.num_sets, dim=0)
    alpha = F.dropout(alpha, p=dropout, training=dropout > 0)
    out = alpha.unsqueeze(-1) * v.unsqueeze(2)  # [N, H, M, d_v]
    out = scatter(out, layout.batch, dim=0, dim_size=layout.num_sets, reduce='sum')
    return out.transpose(1, 2).reshape(layout.num_sets * M, H, -1)


def _pairs(key_layout: SetLayout, query_layout: SetLayout):
    r"""All (query, key) pairs of the same set: :obj:`[E]` index tensors."""
    key_counts = key_layout.count_tensor[query_layout.batch]
    query = torch.arange(query_layout.num_elements, device=key_layout.device)
    query = query.repeat_interleave(key_counts)
    starts = (key_counts.cumsum(0) - key_counts).repeat_interleave(key_counts)
    offset = torch.arange(query.numel(), device=key_layout.device) - starts
    key = key_layout.ptr[query_layout.batch[query]] + offset
    return query, key


def _segment_pairs(q, k, v, key_layout, query_layout, dropout) -> Tensor:
    query, key = key_layout.cached(('pairs', query_layout),
                                   lambda: _pairs(key_layout, query_layout))
    score = (q[query] * k[key]).sum(-1) / q.size(-1)**0.5  # [E, H]
    alpha = softmax(score, query, num_nodes=q.size(0), dim=0)
    alpha = F.dropout(alpha, p=dropout, training=dropout > 0)
    return scatter(alpha.unsqueeze(-1) * v[key], query, dim=0, dim_size=q.size(0),
                   reduce='sum')


def _to_padded(x: Tensor, index: Tensor | None, pos: Tensor | None, sets: int,
               width: int) -> Tensor:
    r"""Scatters rows of :obj:`x` :obj:`[N, H, C]` into :obj:`[S, H, width, C]`
    (a view of :obj:`x`, no copy, when :obj:`pos` is :obj:`None`)."""
    if pos is None:
        return x.reshape(sets, width, *x.shape[1:]).transpose(1, 2)
    rows = x if index is None else x[index]
    out = x.new_zeros(sets * width, *x.shape[1:]).index_copy(0, pos, rows)
    return out.view(sets, width, *x.shape[1:]).transpose(1, 2)


def _dense(q, k, v, key_layout, query_layout, dropout, max_padding) -> Tensor:
    buckets = key_layout.plan(query_layout, max_padding)
    shared = query_layout is None
    num_rows = key_layout.num_sets * q.size(0) if shared else q.size(0)
    out = None
    for b in buckets:
        S = b.set_ids.numel()
        keys = _to_padded(k, b.key_index, b.key_pos, S, b.key_width)
        values = _to_padded(v, b.key_index, b.key_pos, S, b.key_width)
        if shared:
            queries = q.transpose(0, 1).unsqueeze(0).expand(S, -1, -1, -1)
        else:
            queries = _to_padded(q, b.query_index, b.query_pos, S, b.query_width)
        mask = None if b.key_pos is None else attention_bias(b.key_mask, q.dtype)
        res = F.scaled_dot_product_attention(
            queries, keys, values, attn_mask=mask, dropout_p=dropout)  # [S, H, width_q, d_v]
        res = res.transpose(1, 2)  # [S, width_q, H, d_v]
        if shared:
            rows = res.reshape(S * q.size(0), *res.shape[2:])
            index = (b.set_ids[:, None] * q.size(0) +
                     torch.arange(q.size(0), device=q.device)).view(-1)
        else:
            rows = res.reshape(-1, *res.shape[2:])
            rows = rows if b.query_pos is None else rows[b.query_pos]
            index = b.query_index
        if len(buckets) == 1 and (shared or index is None):
            return rows
        if out is None:
            out = v.new_zeros(num_rows, v.size(1), v.size(2))
        out = out.index_copy(0, index, rows)
    return out
