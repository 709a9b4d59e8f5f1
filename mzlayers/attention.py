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

* ``'dense'``: :func:`~torch_geometric.utils.to_dense_batch`-style padding
  in size buckets and a masked
  :func:`~torch.nn.functional.scaled_dot_product_attention`
  (:mod:`mzlayers.kernels.dense`).
* ``'segment'``: no padding and no :obj:`[N, m, H, d]` intermediate; large
  sets get one fused call each, runs of small sets go through hand-written
  bag-sum kernels (:mod:`mzlayers.kernels.segment`, first-order gradients
  only, eager under :func:`torch.compile`).
* ``'varlen'``: no padding; PyTorch's own variable-length attention,
  :func:`~torch.nn.functional.scaled_dot_product_attention` on nested
  jagged tensors (:mod:`mzlayers.kernels.varlen`): the varlen entry points
  of the fused kernels on CUDA.
* ``'auto'`` (default): chooses per call, by device type, kind of call and
  padding ratio, from the table :obj:`~mzlayers.kernels.policy.AUTO_POLICY`
  (data, host sizes only).  On CPU (measured, :file:`bench/`), learned
  queries over sets of unequal size, and set-element queries of unequal
  size over keys of one width per set (ISAB's second block), run the
  segment kernel; everything else runs the dense kernel, unpadded on sets
  of equal size, on size buckets whose sets differ at most
  :obj:`AUTO_MAX_PADDING` times otherwise, where each set with at least
  :obj:`AUTO_ALONE_MIN_PAIRS` query-key pairs gets an unpadded bucket of
  its own.  On CUDA (defaults until a GPU run measures them), a call padded
  at most twice over runs the dense kernel as one
  bucket (one fused SDPA launch, no bucket index copied to the device), a
  call padded more the varlen kernel.

An empty set gives an exactly zero output and no NaN on every backend.  A
padded key layout (:meth:`SetLayout.padded`, the static-shape path) always
runs the dense kernel, with its mask.
"""

from torch import Tensor

from mzlayers.kernels.dense import dense_attention
from mzlayers.kernels.policy import auto_kernel
from mzlayers.kernels.segment import segment_attention
from mzlayers.kernels.varlen import varlen_attention
from mzlayers.layout import SetLayout

BACKENDS = ('auto', 'segment', 'dense', 'varlen')

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
    *,
    heads: int | None = None,
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
        backend (str, optional): ``'auto'``, ``'segment'``, ``'dense'`` or
            ``'varlen'``.
        dropout (float, optional): Dropout on the attention weights (pass
            :obj:`0.` in evaluation mode).
        heads (int, optional): When given, :obj:`q`, :obj:`k` and :obj:`v`
            come with their :obj:`heads` heads concatenated, :obj:`[*, H d]`,
            as a linear layer makes them, and the output leaves so: the
            dense kernel then runs without the views that split and join
            heads around it. (default: :obj:`None`)

    Returns:
        torch.Tensor: :obj:`[B * M, H, d_v]` (set-major) for learned queries,
        :obj:`[N_q, H, d_v]` otherwise (:obj:`[*, H d_v]` with :obj:`heads`).
    """
    if key_layout.mask is not None:  # padded layouts: only the dense kernel masks
        if backend in ('segment', 'varlen'):
            raise ValueError(f"The '{backend}' backend takes ragged batches only; a padded "
                             "batch (bucket_batch, 'mask') needs backend 'auto' or 'dense'")
        return dense_attention(q, k, v, key_layout, query_layout, dropout, None, None, heads)
    kernel = auto_kernel(q.device.type, key_layout, query_layout) if backend == 'auto' \
        else backend
    if kernel == 'buckets':
        return dense_attention(q, k, v, key_layout, query_layout, dropout, AUTO_MAX_PADDING,
                               AUTO_ALONE_MIN_PAIRS, heads)
    if kernel == 'dense':
        return dense_attention(q, k, v, key_layout, query_layout, dropout, None, None, heads)
    if heads is not None:  # the ragged kernels take heads split
        q, k, v = (t.view(t.size(0), heads, t.size(1) // heads) for t in (q, k, v))
    if kernel == 'segment':
        out = segment_attention(q, k, v, key_layout, query_layout, dropout,
                                SEGMENT_FUSED_MIN_PAIRS)
    else:
        out = varlen_attention(q, k, v, key_layout, query_layout, dropout)
    return out if heads is None else out.flatten(-2)
