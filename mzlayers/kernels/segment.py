r"""The CPU segment kernel of :func:`~mzlayers.attention.set_attention`.

Exact multi-head attention on ragged sets without padding and without an
:obj:`[N, m, H, d]` intermediate.  A set with many query-key pairs is
attended alone by one fused :func:`~torch.nn.functional.scaled_dot_product_attention`
call on views of its rows; the consecutive smaller sets between two of them
run together through :func:`~torch.nn.functional.embedding_bag` bag sums
with hand-written backward passes (embedding_bag's own weight gradient sorts
its indices), over index tensors cached on the
:class:`~mzlayers.layout.SetLayout`.  Three cases:

- learned queries (:math:`M` shared by all sets): the scores are one dense
  product :obj:`[N, H, M]` against every key; the per-set softmax
  statistics come from :meth:`~torch.Tensor.scatter_reduce_` and
  :meth:`~torch.Tensor.index_add`; each set's
  :math:`\sum_{j \in b} e_{j,h,m} \mathbf{v}_{j,h}` is a per-set sum of outer
  products (bags :math:`(h, m, b)`), normalised after the sum (so dropout on
  the unnormalised weights equals dropout on the attention weights);
- keys with the same count :math:`W` in every set (ISAB's second block):
  products of every query row with the :obj:`[d, W]` key block and the
  :obj:`[W, d_v]` value block of its set, and a dense softmax over :math:`W`;
- ragged keys (self-attention): one bag per query and head over the
  :math:`E` same-set pairs, scores by embedding_bag's per-sample-weight
  kernel (a sampled dot product), segment softmax, and a transposed plan
  (:class:`Bags`) for the key and value gradients; :obj:`[E, H]` scores
  remain, no :obj:`[E, H, d]` gathers.

An empty set gives an exactly zero output (an empty bag) and no NaN.
Gradients are first order only.  A reader who does not care about CPU speed
can skip this module: the ``'dense'`` backend computes the same function.
"""
from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import Tensor
from torch.autograd.function import once_differentiable

from mzlayers.kernels.sdpa import sdpa
from mzlayers.layout import SetLayout

# Plans cached on the layout #################################################

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


def segment_runs(layout: SetLayout, queries: SetLayout | None, min_pairs: int,
                 num_learned: int = 1) -> SegmentRuns:
    r"""Splits the sets into the calls of the segment kernel: every set
    with at least :obj:`min_pairs` query-key pairs alone, the others in
    maximal runs of consecutive sets.

    Args:
        queries (SetLayout, optional): The layout of set-element queries
            (the same sets as the key :obj:`layout`), or :obj:`None` for
            :obj:`num_learned` learned queries shared by all sets.
        min_pairs (int): Pairs (keys times queries) of a set on its own.
        num_learned (int, optional): The number of learned queries.
    """
    def build():
        runs: list[Run] = []
        for b, pairs in enumerate(layout.pair_counts(queries, num_learned)):
            if pairs >= min_pairs:
                runs.append(Run(b, b + 1, True))
            elif runs and not runs[-1].fused:
                runs[-1].stop = b + 1
            else:
                runs.append(Run(b, b + 1, False))
        return SegmentRuns(runs, _run_rows(layout, runs),
                           [] if queries is None else _run_rows(queries, runs))
    return layout.cached(('segment_runs', queries, min_pairs, num_learned), build)


def pair_bags(layout: SetLayout, queries: SetLayout, heads: int) -> Bags:
    r"""The :class:`Bags` of queries that are the elements of
    :obj:`queries` (a layout with the same sets): bag :math:`(i, h)` sums
    over the elements :math:`j` of the set of :math:`i`, samples in the
    flat order :math:`(i, h, j)`, table rows :math:`j H + h`."""
    layout.check_queries(queries)
    return layout.cached(('pair_bags', queries, heads),
                       lambda: _pair_bags(layout, queries, heads))


def block_index(layout: SetLayout, heads: int, width: int) -> Tensor:
    r"""Row :math:`k < W` of the block :math:`(b_x, h)` of every row
    :math:`(x, h)` of :obj:`layout`, :obj:`[N H W]` (flat order
    :math:`(x, h, k)`, value :math:`(b_x H + h) W + k`): the
    :func:`~torch.nn.functional.embedding_bag` indices of a product of
    every row with the :obj:`[W, *]` block of its set and head."""
    def build():
        dtype = _index_dtype(layout.num_sets * heads * width)
        group = layout.batch.to(dtype)[:, None] * heads + _arange(layout, heads, dtype)
        return (group[:, :, None] * width + _arange(layout, width, dtype)).view(-1)
    return layout.cached(('block_index', heads, width), build)

def block_sum_bags(layout: SetLayout, heads: int, width: int) -> tuple[Tensor, Tensor]:
    r"""Bags :math:`(h, k, b)` over the elements :math:`x` of set
    :math:`b` (:math:`k < W`): the row :math:`x H + h` of every sample in
    the flat order :math:`(h, k, x)`, :obj:`[H W N]`, and the
    :obj:`[H W B + 1]` run starts (the sum over a set of per-row outer
    products, block by block)."""
    def build():
        N = layout.num_elements
        dtype = _index_dtype(heads * width * N + 1)
        hk = _arange(layout, heads * width, dtype)[:, None]  # [H * W, 1]
        starts = (hk * N + layout.ptr[:-1].to(dtype)).view(-1)
        return ((_arange(layout, N, dtype) * heads + hk // width).view(-1),
                torch.cat([starts, starts.new_full((1,), heads * width * N)]))
    return layout.cached(('block_sum_bags', heads, width), build)


def _arange(layout: SetLayout, n: int, dtype: torch.dtype) -> Tensor:
    return torch.arange(n, dtype=dtype, device=layout.device)


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


# The kernel ################################################################

@torch._dynamo.disable(recursive=True)
def segment_attention(q: Tensor, k: Tensor, v: Tensor, key_layout: SetLayout,
                      query_layout: SetLayout | None, dropout: float,
                      fused_min_pairs: int) -> Tensor:
    r"""The ``'segment'`` backend of :func:`~mzlayers.attention.set_attention`
    (same arguments): sets with at least :obj:`fused_min_pairs` query-key
    pairs are attended alone by one fused call, the runs of smaller sets
    between them by the bag kernel.  Runs eagerly under
    :func:`torch.compile` (a graph break): dynamo cannot trace the custom
    autograd functions that build and cache index tensors on the layout."""
    plan = segment_runs(key_layout, query_layout, fused_min_pairs, q.size(0))
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
    out = sdpa(q.transpose(0, 1), k.transpose(0, 1), v.transpose(0, 1), dropout_p=dropout)
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
    bags = pair_bags(key_layout, query_layout, H)
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
        blocks = blocks.reshape(B * H, K).index_select(0, block_index(layout, H, 1))
        return (rows.to(blocks.dtype) * blocks).sum(-1, keepdim=True)
    index = block_index(layout, H, K)
    offsets = torch.arange(0, index.numel() + 1, K, dtype=index.dtype, device=index.device)
    return _bag_sum(rows.reshape(-1), blocks.reshape(B * H * K, W), index, offsets)


def _block_sum(a: Tensor, c: Tensor, layout: SetLayout, heads: int) -> Tensor:
    # out[b, h] = sum_{x in b} a[(x, h)]^T c[(x, h)]: [B, H, K, W] from [N * H, K], [N * H, W].
    K, W = a.size(-1), c.size(-1)
    index, offsets = block_sum_bags(layout, heads, K)
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
