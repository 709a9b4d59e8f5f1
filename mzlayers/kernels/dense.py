r"""The padded-dense kernel of :func:`~mzlayers.attention.set_attention`:
sets grouped into size buckets (:class:`Bucket`), each padded to its own
largest set and attended by one masked
:func:`~torch.nn.functional.scaled_dot_product_attention`.  With a single
bucket this is exactly :func:`torch_geometric.utils.to_dense_batch`
padding; with several, a skewed batch is padded at most :obj:`max_padding`
times per bucket instead of to the global maximum."""
from dataclasses import dataclass, field

import torch
from torch import Tensor

from mzlayers.kernels.sdpa import sdpa
from mzlayers.layout import SetLayout, attention_bias


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
        key_mask (torch.Tensor, optional): :obj:`[S, key_width]`, :obj:`True`
            = real (:obj:`None` when there is no padding to mask).
        query_index, query_pos, query_width: The same for queries that are
            elements of a set (unused for learned queries).
    """
    set_ids: Tensor
    key_index: Tensor | None
    key_pos: Tensor | None
    key_width: int
    key_mask: Tensor | None
    query_index: Tensor | None = None
    query_pos: Tensor | None = None
    query_width: int = 0
    _biases: dict = field(default_factory=dict, repr=False)

    def bias(self, dtype: torch.dtype) -> Tensor | None:
        r"""The additive SDPA mask of :obj:`key_mask` in :obj:`dtype`, made
        once (every block of a model shares it)."""
        if self.key_mask is None:
            return None
        if dtype not in self._biases:
            self._biases[dtype] = attention_bias(self.key_mask, dtype)
        return self._biases[dtype]


def plan(layout: SetLayout, queries: SetLayout | None, max_padding: float | None,
         alone_min_pairs: int | None = None, num_learned: int = 1) -> list[Bucket]:
    r"""Padded-dense buckets for attention from :obj:`queries` (a layout
    with the same sets, or :obj:`None` for :obj:`num_learned` learned
    queries shared by all sets) to the elements of :obj:`layout`.

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
    return layout.cached(key, lambda: _build_plan(layout, queries, max_padding,
                                                  alone_min_pairs, num_learned))


def _build_plan(layout: SetLayout, queries, max_padding, alone_min_pairs,
                num_learned) -> list[Bucket]:
    pairs = layout.pair_counts(queries, num_learned)  # also checks the query layout
    groups = size_groups(layout.counts, list(range(layout.num_sets)), max_padding)
    if len(groups) > 1 and alone_min_pairs is not None:
        alone = [b for b, p in enumerate(pairs) if p >= alone_min_pairs]
        rest = [b for b, p in enumerate(pairs) if p < alone_min_pairs]
        groups = [[b] for b in alone] + (
            size_groups(layout.counts, rest, max_padding) if rest else [])
    if len(groups) == 1:  # every set, in order: no index to copy from the host
        set_ids = [torch.arange(layout.num_sets, device=layout.device)]
    else:  # one host-to-device copy for the whole plan
        set_ids = torch.tensor([b for ids in groups for b in ids], dtype=torch.long,
                               device=layout.device).split([len(ids) for ids in groups])
    return [_bucket(layout, ids, index, queries, single=len(groups) == 1)
            for ids, index in zip(groups, set_ids, strict=True)]


def _bucket(layout: SetLayout, ids: list[int], set_ids: Tensor, queries,
            single: bool) -> Bucket:
    key_index, key_pos, key_width = _padding_index(layout, set_ids, ids, single)
    if layout.mask is not None:  # a padded layout: one bucket, all sets n wide
        mask = layout.mask
    elif key_pos is not None:
        mask = torch.zeros(len(ids) * key_width, dtype=torch.bool, device=layout.device)
        mask = mask.index_fill(0, key_pos, True)
    else:  # every set full: nothing to mask
        mask = None
    # the whole batch's buckets share their masks: made once per key layout
    biases = layout.cached(('biases',), dict) if single else {}
    bucket = Bucket(set_ids, key_index, key_pos, key_width,
                    None if mask is None else mask.view(len(ids), key_width), _biases=biases)
    if queries is not None:
        bucket.query_index, bucket.query_pos, bucket.query_width = \
            _padding_index(queries, set_ids, ids, single)
    return bucket


def size_groups(counts: list[int], ids: list[int], max_padding: float | None
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
    bucket has :obj:`width` elements: no padding).  For the whole batch in
    one bucket the positions are made once per layout, for keys and queries
    alike, and not at all when every set has the same size."""
    if single:
        return layout.cached(('padding_index',), lambda: _whole_batch_index(layout))
    counts = layout.count_tensor[set_ids]
    width = max(1, max(layout.counts[i] for i in ids) if ids else 1)
    total = sum(layout.counts[i] for i in ids)  # host sizes: no device sync below
    local = torch.arange(len(set_ids), device=layout.device).repeat_interleave(
        counts, output_size=total)
    starts = (counts.cumsum(0) - counts).repeat_interleave(counts, output_size=total)
    offset = torch.arange(local.numel(), device=layout.device) - starts
    index = layout.ptr[set_ids][local] + offset
    if local.numel() == len(set_ids) * width:  # every set full: no padding
        return index, None, width
    return index, local * width + offset, width


def _whole_batch_index(layout: SetLayout) -> tuple[None, Tensor | None, int]:
    r""":func:`_padding_index` of all sets in order: no element index, and
    the flat positions :obj:`batch * width + position` (:obj:`None` when
    every set has :obj:`width` elements)."""
    width = max(1, max(layout.counts, default=1))
    if layout.equal_sizes and layout.num_elements == layout.num_sets * width:
        return None, None, width
    return None, layout.batch * width + layout.positions, width


def _to_padded(x: Tensor, index: Tensor | None, pos: Tensor | None, sets: int,
               width: int, heads: int) -> Tensor:
    r"""Scatters rows :obj:`index` of :obj:`x` :obj:`[N, H, C]` or
    :obj:`[N, H C]` (all when :obj:`None`) into :obj:`[S, H, width, C]` (a
    view of them when :obj:`pos` is :obj:`None`: no padding)."""
    rows = x if index is None else x[index]
    if pos is not None:
        rows = x.new_zeros(sets * width, *x.shape[1:]).index_copy(0, pos, rows)
    return rows.reshape(sets, width, heads, x.shape[1:].numel() // heads).transpose(1, 2)


def dense_attention(q: Tensor, k: Tensor, v: Tensor, key_layout: SetLayout,
                    query_layout: SetLayout | None, dropout: float,
                    max_padding: float | None, alone_min_pairs: int | None,
                    heads: int | None = None) -> Tensor:
    r"""The ``'dense'`` backend of :func:`~mzlayers.attention.set_attention`
    (same arguments) on the buckets of :func:`plan`."""
    shared = query_layout is None
    buckets = plan(key_layout, query_layout, max_padding, alone_min_pairs,
                   q.size(0) if shared else 1)
    heads = k.size(1) if heads is None else heads
    if len(buckets) == 1 and buckets[0].key_index is None:  # every row, in order
        return _dense_bucket(q, k, v, buckets[0], shared, dropout, heads)
    parts = [(_dense_bucket(q, k, v, b, shared, dropout, heads),
              _output_index(q, b, shared)) for b in buckets]
    rows = torch.cat([rows for rows, _ in parts])
    num_rows = key_layout.num_sets * q.size(0) if shared else q.size(0)
    out = rows.new_zeros(num_rows, *rows.shape[1:])  # one scatter for all buckets
    return out.index_copy(0, torch.cat([index for _, index in parts]), rows)


def _output_index(q: Tensor, b: Bucket, shared: bool) -> Tensor:
    r"""The rows of the output that bucket :obj:`b` computes."""
    if shared:  # learned queries: rows set-major
        return (b.set_ids[:, None] * q.size(0) +
                torch.arange(q.size(0), device=q.device)).view(-1)
    return b.query_index


def _dense_bucket(q, k, v, b: Bucket, shared: bool, dropout: float, heads: int) -> Tensor:
    r"""The output rows of bucket :obj:`b` (in :func:`_output_index`'s order),
    heads split or concatenated as :obj:`v`'s."""
    S = b.set_ids.numel()
    keys = _to_padded(k, b.key_index, b.key_pos, S, b.key_width, heads)
    values = _to_padded(v, b.key_index, b.key_pos, S, b.key_width, heads)
    if shared:  # materialised: the fused CUDA kernels reject a stride-0 batch dimension
        queries = q if q.dim() == 3 else q.view(q.size(0), heads, q.size(1) // heads)
        queries = queries.transpose(0, 1).repeat(S, 1, 1, 1)  # [M, H, C] -> [S, H, M, C]
    else:
        queries = _to_padded(q, b.query_index, b.query_pos, S, b.query_width, heads)
    res = sdpa(queries, keys, values, attn_mask=b.bias(q.dtype),
               dropout_p=dropout)  # [S, H, L, d_v]
    rows = res.transpose(1, 2).reshape(-1, *v.shape[1:-1], v.size(-1))  # [S width_q, *]
    return rows if shared or b.query_pos is None else rows[b.query_pos]
