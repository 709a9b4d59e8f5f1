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

* ``'segment'``: no padding and no :obj:`[N, m, H, d]` intermediate (for
  :math:`m` queries or keys per set).  A set with at least
  :obj:`SEGMENT_FUSED_MIN_PAIRS` query-key pairs is attended on its own by
  one fused :func:`~torch.nn.functional.scaled_dot_product_attention` call
  on views of its rows (for such a set the call's overhead is small beside
  its work); the consecutive smaller sets between two of them run together
  through the bag kernel, and the outputs are concatenated in set order
  (:meth:`~mzlayers.layout.SetLayout.segment_runs`).  In the bag kernel
  every weighted sum is one
  :func:`~torch.nn.functional.embedding_bag` (``mode='sum'`` with
  ``per_sample_weights``) over index tensors cached on the
  :class:`~mzlayers.layout.SetLayout`, and hand-written backward passes
  that are bag sums again (embedding_bag's own weight gradient sorts its
  indices).  Three cases:

  - learned queries (:math:`M` shared by all sets): the scores are one
    dense product :obj:`[N, H, M]` against every key; the per-set softmax
    statistics (max, then sum) come from
    :meth:`~torch.Tensor.scatter_reduce_` and
    :meth:`~torch.Tensor.index_add`; each set's
    :math:`\sum_{j \in b} e_{j,h,m} \mathbf{v}_{j,h}` is a per-set sum of
    outer products (bags :math:`(h, m, b)`), normalised after the sum (so
    dropout on the unnormalised weights equals dropout on the attention
    weights);
  - keys with the same count :math:`W` in every set (ISAB's second block,
    whose keys are the :math:`m` pooled tokens of
    :meth:`~mzlayers.layout.SetLayout.pooled`): scores and outputs are
    products of every query row with the :obj:`[d, W]` key block and the
    :obj:`[W, d_v]` value block of its set (bags of :math:`d` block rows)
    and a dense softmax over :math:`W`;
  - ragged keys (self-attention on the sets): one bag per query and head
    over the :math:`E` same-set pairs, scores by
    embedding_bag's per-sample-weight kernel (a sampled dot product),
    segment softmax, and a transposed plan (:class:`~mzlayers.layout.Bags`)
    for the key and value gradients; :obj:`[E, H]` scores and weights
    remain, no :obj:`[E, H, d]` gathers.

  An empty set gives an exactly zero output (an empty bag) and no NaN.
  Gradients are first order only (the hand-written backward passes are
  not differentiable again).
* ``'dense'``: :func:`~torch_geometric.utils.to_dense_batch` padding and a
  masked :func:`~torch.nn.functional.scaled_dot_product_attention`.
* ``'auto'`` (default): chooses per call, from measurements on CPU
  (:file:`bench/`).  On CPU, learned queries over sets of unequal size, and
  set-element queries of unequal size over keys of one width per set
  (ISAB's second block), run the segment kernel: it does the same work
  without padding and was faster than the padded kernel on every such
  workload we measured.  Everything else — sets of equal size (a view of
  the input, attended without a mask), self-attention over ragged keys, and
  every call on other devices (not measured) — runs the dense kernel on size
  buckets whose sets differ at most :obj:`AUTO_MAX_PADDING` times, so a
  skewed batch is not padded to its largest set.  On CPU, when a batch needs
  several buckets, each set with at least :obj:`AUTO_ALONE_MIN_PAIRS`
  query-key pairs gets an unpadded bucket of its own.
"""

import torch
import torch.nn.functional as F
from torch import Tensor
from torch.autograd.function import once_differentiable

from mzlayers.layout import Bags, Bucket, SetLayout, attention_bias

BACKENDS = ('auto', 'segment', 'dense')

#: Largest size ratio inside one padded bucket of the ``'auto'`` backend.
AUTO_MAX_PADDING = 2.0

#: Sets with at least this many query-key pairs run, in the segment kernel,
#: through one fused attention call on their own rows each: about where, on
#: our CPU, that call and the bag kernel cost the same for a training step
#: (16 learned queries over 512 keys, or self-attention on 91 elements).
SEGMENT_FUSED_MIN_PAIRS = 8192

#: When ``'auto'`` pads a batch of unequal sets on CPU, sets with at least
#: this many query-key pairs (self-attention on 256 elements) get a bucket of
#: their own, unpadded: padding them would cost up to ``AUTO_MAX_PADDING``
#: squared times their work, and one call per set costs little beside it.
AUTO_ALONE_MIN_PAIRS = 65536


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
    if backend == 'segment' or (backend == 'auto' and _auto_segment(
            q, key_layout, query_layout)):
        return _segment(q, k, v, key_layout, query_layout, dropout)
    if backend == 'dense':
        return _dense(q, k, v, key_layout, query_layout, dropout, None, None)
    alone = AUTO_ALONE_MIN_PAIRS if q.device.type == 'cpu' else None
    return _dense(q, k, v, key_layout, query_layout, dropout, AUTO_MAX_PADDING, alone)


def _auto_segment(q: Tensor, key_layout: SetLayout, query_layout: SetLayout | None) -> bool:
    r"""Whether ``'auto'`` runs the segment kernel (see the module docstring)."""
    if q.device.type != 'cpu':
        return False
    if query_layout is None:
        return not key_layout.equal_sizes
    return key_layout.equal_sizes and not query_layout.equal_sizes


@torch._dynamo.disable(recursive=True)
def _segment(q, k, v, key_layout, query_layout, dropout) -> Tensor:
    plan = key_layout.segment_runs(query_layout, SEGMENT_FUSED_MIN_PAIRS, q.size(0))
    if not any(run.fused for run in plan.runs):  # one run of small sets (or none)
        return _segment_bags(q, k, v, key_layout, query_layout, dropout)
    keys, values = k.split(plan.key_rows), v.split(plan.key_rows)
    queries = [q] * len(plan.runs) if query_layout is None else q.split(plan.query_rows)
    return torch.cat([
        _fused_set(qr, kr, vr, dropout) if run.fused else _segment_bags(
            qr, kr, vr, key_layout.subset(run.start, run.stop),
            None if query_layout is None else query_layout.subset(run.start, run.stop),
            dropout)
        for run, qr, kr, vr in zip(plan.runs, queries, keys, values, strict=True)])


def _fused_set(q: Tensor, k: Tensor, v: Tensor, dropout: float) -> Tensor:
    # One set: [L, H, d_k], [S, H, d_k], [S, H, d_v] -> [L, H, d_v], views in and out.
    out = F.scaled_dot_product_attention(q.transpose(0, 1), k.transpose(0, 1),
                                         v.transpose(0, 1), dropout_p=dropout)
    return out.transpose(0, 1)


def _segment_bags(q, k, v, key_layout, query_layout, dropout) -> Tensor:
    if query_layout is None:
        return _segment_shared(q, k, v, key_layout, dropout)
    return _segment_pairs(q, k, v, key_layout, query_layout, dropout)


def _segment_shared(q, k, v, layout: SetLayout, dropout: float) -> Tensor:
    M, H, D = q.shape
    N, B = layout.num_elements, layout.num_sets
    q = q / D**0.5
    if M == 1:  # a product with inner size 1 is slow as a batched matmul
        score = (k * q).sum(-1)  # [N, H]
    else:
        score = torch.einsum('nhd,mhd->nhm', k, q).reshape(N, H * M)
    index = layout.batch[:, None].expand_as(score)
    peak = score.new_zeros(B, H * M).scatter_reduce_(0, index, score.detach(), 'amax',
                                                     include_self=False)
    weight = (score - peak.index_select(0, layout.batch)).exp()
    total = score.new_zeros(B, H * M).index_add(0, layout.batch, weight)  # >= 1 unless empty
    weight = F.dropout(weight, p=dropout, training=dropout > 0)
    out = _BlockSum.apply(weight.reshape(N * H, M), v.reshape(N * H, v.size(-1)), layout, H)
    out = out / torch.where(total > 0, total, 1).view(B, H, M, 1)  # [B, H, M, d_v]
    return out.transpose(1, 2).reshape(B * M, H, v.size(-1))


def _segment_pairs(q, k, v, key_layout, query_layout, dropout) -> Tensor:
    N, H, D = q.shape
    key_layout.check_queries(query_layout)
    width = key_layout.counts[0] if key_layout.equal_sizes and key_layout.counts else 0
    if width > 0:  # [W] keys in every set (e.g. pooled): blocks, no ragged gathers
        keys = k.reshape(-1, width, H, D).permute(0, 2, 3, 1) / D**0.5  # [B, H, d_k, W]
        score = _BlockProduct.apply(q.reshape(N * H, D), keys, query_layout)
        weight = F.dropout(score.softmax(-1), p=dropout, training=dropout > 0)
        values = v.reshape(-1, width, H, v.size(-1)).transpose(1, 2)  # [B, H, W, d_v]
        return _BlockProduct.apply(weight, values, query_layout).view(N, H, v.size(-1))
    bags = key_layout.pair_bags(query_layout, H)
    score = _SampledDot.apply(q.reshape(-1, D), k.reshape(-1, D) / D**0.5, bags)  # [S]
    peak = torch.segment_reduce(score.detach(), 'max', offsets=bags.offsets)
    weight = (score - peak.index_select(0, bags.bag)).exp()
    total = torch.segment_reduce(weight, 'sum', offsets=bags.offsets)  # >= 1 unless empty
    weight = F.dropout(weight, p=dropout, training=dropout > 0)
    out = _BagSum.apply(weight, v.reshape(-1, v.size(-1)), bags)
    out = out / torch.where(total > 0, total, 1).unsqueeze(-1)
    return out.view(N, H, v.size(-1))


def _block_product(rows: Tensor, blocks: Tensor, layout: SetLayout) -> Tensor:
    # out[(x, h)] = rows[(x, h)] @ blocks[b_x, h]: [N * H, W] from [N * H, K], [B, H, K, W].
    B, H, K, W = blocks.shape
    if W == 1:  # a matrix-vector product: gathering the blocks costs no more than rows
        blocks = blocks.reshape(B * H, K).index_select(0, layout.block_index(H, 1))
        return (rows.to(blocks.dtype) * blocks).sum(-1, keepdim=True)
    index = layout.block_index(H, K)
    offsets = torch.arange(0, index.numel() + 1, K, dtype=index.dtype, device=index.device)
    return _bag_sum(rows.reshape(-1), blocks.reshape(B * H * K, W), index, offsets)


def _block_sum(a: Tensor, c: Tensor, layout: SetLayout, heads: int) -> Tensor:
    # out[b, h] = sum_{x in b} a[(x, h)]^T c[(x, h)]: [B, H, K, W] from [N * H, K], [N * H, W].
    K, W = a.size(-1), c.size(-1)
    index, offsets = layout.block_sum_bags(heads, K)
    weight = a.reshape(layout.num_elements, heads * K).t().contiguous().view(-1)  # (h, k, x)
    out = _bag_sum(weight, c, index, offsets)  # [H * K * B, W]
    return out.view(heads, K, layout.num_sets, W).permute(2, 0, 1, 3)


class _BlockProduct(torch.autograd.Function):
    r""":func:`_block_product` with the gradients of both factors."""
    @staticmethod
    def forward(ctx, rows: Tensor, blocks: Tensor, layout: SetLayout) -> Tensor:
        ctx.save_for_backward(rows, blocks)
        ctx.layout = layout
        return _block_product(rows, blocks, layout)

    @staticmethod
    @once_differentiable
    def backward(ctx, grad: Tensor):
        rows, blocks = ctx.saved_tensors
        grad_rows = _block_product(grad, blocks.transpose(2, 3), ctx.layout).to(rows.dtype) \
            if ctx.needs_input_grad[0] else None
        grad_blocks = _block_sum(rows, grad, ctx.layout, blocks.size(1)) \
            if ctx.needs_input_grad[1] else None
        return grad_rows, grad_blocks, None


class _BlockSum(torch.autograd.Function):
    r""":func:`_block_sum` with the gradients of both factors."""
    @staticmethod
    def forward(ctx, a: Tensor, c: Tensor, layout: SetLayout, heads: int) -> Tensor:
        ctx.save_for_backward(a, c)
        ctx.layout = layout
        return _block_sum(a, c, layout, heads)

    @staticmethod
    @once_differentiable
    def backward(ctx, grad: Tensor):
        a, c = ctx.saved_tensors
        grad_a = _block_product(c, grad.transpose(2, 3), ctx.layout).to(a.dtype) \
            if ctx.needs_input_grad[0] else None
        grad_c = _block_product(a, grad, ctx.layout).to(c.dtype) \
            if ctx.needs_input_grad[1] else None
        return grad_a, grad_c, None, None


def _bag_sum(weight: Tensor, table: Tensor, index: Tensor, offsets: Tensor) -> Tensor:
    # Called inside this module's autograd functions only: detached inputs
    # take embedding_bag's forward-only kernel.
    return F.embedding_bag(index, table.detach(), offsets, mode='sum',
                           per_sample_weights=weight.detach().to(table.dtype),
                           include_last_offset=True)


def _transposed_sum(weight: Tensor, rows: Tensor, bags: Bags) -> Tensor:
    # out[r] = sum_{s reads table row r} weight[s] * rows[bag[s]]: [num_rows, C].
    return _bag_sum(weight.index_select(0, bags.perm), rows, bags.t_index, bags.t_offsets)


def _sampled_dot(rows: Tensor, table: Tensor, bags: Bags) -> Tensor:
    # rows[bag[s]] . table[index[s]]: [S], the per-sample-weight gradient of a bag sum.
    return torch.ops.aten._embedding_bag_per_sample_weights_backward(
        rows.to(table.dtype), table, bags.index, bags.offsets, bags.bag, 0)


class _BagSum(torch.autograd.Function):
    r""":obj:`out[b] = sum_{s in b} weight[s] * table[index[s]]`, :obj:`[num_bags, C]`."""
    @staticmethod
    def forward(ctx, weight: Tensor, table: Tensor, bags: Bags) -> Tensor:
        ctx.save_for_backward(weight, table)
        ctx.bags = bags
        return _bag_sum(weight, table, bags.index, bags.offsets)

    @staticmethod
    @once_differentiable
    def backward(ctx, grad: Tensor):
        weight, table = ctx.saved_tensors
        bags, grad = ctx.bags, grad.contiguous()
        grad_weight = _sampled_dot(grad, table, bags).to(weight.dtype) \
            if ctx.needs_input_grad[0] else None
        grad_table = _transposed_sum(weight, grad, bags) \
            if ctx.needs_input_grad[1] else None
        return grad_weight, grad_table, None


class _SampledDot(torch.autograd.Function):
    r""":obj:`out[s] = rows[bag[s]] . table[index[s]]`, :obj:`[S]`."""
    @staticmethod
    def forward(ctx, rows: Tensor, table: Tensor, bags: Bags) -> Tensor:
        ctx.save_for_backward(rows, table)
        ctx.bags = bags
        return _sampled_dot(rows, table, bags)

    @staticmethod
    @once_differentiable
    def backward(ctx, grad: Tensor):
        rows, table = ctx.saved_tensors
        bags = ctx.bags
        grad_rows = _bag_sum(grad, table, bags.index, bags.offsets).to(rows.dtype) \
            if ctx.needs_input_grad[0] else None
        grad_table = _transposed_sum(grad, rows, bags) \
            if ctx.needs_input_grad[1] else None
        return grad_rows, grad_table, None


def _to_padded(x: Tensor, index: Tensor | None, pos: Tensor | None, sets: int,
               width: int) -> Tensor:
    r"""Scatters rows :obj:`index` of :obj:`x` :obj:`[N, H, C]` (all when
    :obj:`None`) into :obj:`[S, H, width, C]` (a view of them when :obj:`pos`
    is :obj:`None`: no padding)."""
    rows = x if index is None else x[index]
    if pos is None:
        return rows.reshape(sets, width, *x.shape[1:]).transpose(1, 2)
    out = x.new_zeros(sets * width, *x.shape[1:]).index_copy(0, pos, rows)
    return out.view(sets, width, *x.shape[1:]).transpose(1, 2)


def _dense(q, k, v, key_layout, query_layout, dropout, max_padding, alone_min_pairs
           ) -> Tensor:
    shared = query_layout is None
    buckets = key_layout.plan(query_layout, max_padding, alone_min_pairs,
                              q.size(0) if shared else 1)
    parts = [_dense_bucket(q, k, v, b, shared, dropout) for b in buckets]
    if len(parts) == 1 and (shared or parts[0][1] is None):  # every row, in order
        return parts[0][0]
    num_rows = key_layout.num_sets * q.size(0) if shared else q.size(0)
    out = v.new_zeros(num_rows, v.size(1), v.size(2))  # one scatter for all buckets
    return out.index_copy(0, torch.cat([index for _, index in parts]),
                          torch.cat([rows for rows, _ in parts]))


def _dense_bucket(q, k, v, b: Bucket, shared: bool, dropout: float
                  ) -> tuple[Tensor, Tensor | None]:
    r"""The output rows of bucket :obj:`b` and their row index in the output
    (:obj:`None`: every row in order)."""
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
    rows = res.transpose(1, 2).reshape(-1, *res.shape[1:2], res.size(-1))  # [S width_q, H, d_v]
    if shared:
        index = (b.set_ids[:, None] * q.size(0) +
                 torch.arange(q.size(0), device=q.device)).view(-1)
        return rows, index
    return (rows if b.query_pos is None else rows[b.query_pos]), b.query_index
