r"""The static-shape path: ragged batches padded to a bucketed set size.

A ragged batch gives every step new shapes (the total number of elements
and the set sizes), so :func:`torch.compile` recompiles, or falls back to
dynamic shapes, and a CUDA graph cannot be replayed.  :func:`bucket_batch`
pads each set to :math:`n_b`, the next power of two of the largest set (or
:obj:`min_size`), and returns :obj:`(x [B, n_b, F], mask [B, n_b])`; a model
called with :obj:`mask=` builds a padded :class:`~mzlayers.layout.SetLayout`
from the shapes alone (:func:`~mzlayers.layout.resolve_input`), reads
nothing from the device, skips the padding in its set sums and means and
runs the dense attention kernel with the mask, so
:obj:`torch.compile(model, fullgraph=True)` traces one graph per bucket
:obj:`(B, n_b)`::

    model = torch.compile(SetTransformer(8, 1), fullgraph=True)
    x_pad, mask = bucket_batch(x, batch, dim_size=128)   # eager: one host read
    pred = model(x_pad, mask=mask)                       # [128, 1]

Passing a fixed :obj:`dim_size` (the loader's batch size) also keeps
:obj:`B` fixed: the last, smaller batch gets empty sets, which predict from
an exactly zero pooled token.  The outputs equal the ragged path's up to
rounding (the masked sums add zeros in another order).

The models that take :obj:`mask=`:

* :class:`~mzlayers.SetTransformer` and :class:`~mzlayers.MZSetTransformer`
  (and so every named configuration, :func:`~mzlayers.build_set_transformer`);
* every model of the :mod:`mzattn.baselines` registry: Deep Sets,
  Perceiver, Slot Attention, Mamba + PMA, the sequence Transformers, EGNN
  (the fully connected graph of each padded row, messages from padding
  weighted 0), FiLM, HyperNet, LA-ST and MZ-GenQK (Set Transformers with
  attention factories), and the MC-Dropout and Deep Ensemble wrappers
  (which pass :obj:`mask` on);
* :class:`~mzlayers.MZSetTransformerAggregation` takes PyG's own knob
  instead: :obj:`max_num_elements` with :obj:`dim_size` pads the groups
  inside, without a device read.

A row's set is :obj:`x[b][mask[b]]` in row order, so the mask may put the
real elements anywhere in the row; the order-dependent models read them in
that order.
"""
import torch
from torch import Tensor

from mzlayers.layout import SetLayout
from mzlayers.validate import count_sets


def bucket_size(n: int, min_size: int = 1) -> int:
    r"""The bucket of a largest set of :obj:`n` elements: the smallest power
    of two that is at least :obj:`max(n, min_size)`."""
    return 1 << max(0, max(n, min_size, 1) - 1).bit_length()


def bucket_batch(x: Tensor, batch: Tensor | None = None, dim_size: int | None = None, *,
                 min_size: int = 1) -> tuple[Tensor, Tensor]:
    r"""Pads a ragged PyG batch to the bucketed set size :obj:`n_b =`
    :func:`bucket_size` (largest set, :obj:`min_size`), like
    :func:`~torch_geometric.utils.to_dense_batch` with
    :obj:`max_num_nodes=n_b`.  Validates :obj:`x` and :obj:`batch` as the
    models do (sorted, finite; one host read).

    Args:
        x (torch.Tensor): Elements :obj:`[N, F]`.
        batch (torch.Tensor, optional): Sorted set index :obj:`[N]`
            (:obj:`None`: one set).
        dim_size (int, optional): The number of sets :obj:`B` (sets beyond
            the last index are empty). (default: :obj:`None`)
        min_size (int, optional): Smallest bucket. (default: :obj:`1`)

    Returns:
        (torch.Tensor, torch.Tensor): :obj:`x` padded with zeros to
        :obj:`[B, n_b, F]` and the mask :obj:`[B, n_b]` (:obj:`True` = real
        element).
    """
    if not torch.is_tensor(x) or x.dim() != 2 or not x.is_floating_point():
        shape = tuple(x.shape) if torch.is_tensor(x) else type(x).__name__
        raise ValueError(f"'x' must be a two-dimensional floating-point tensor [N, F] "
                         f"(got {shape})")
    num_sets, counts = count_sets(batch, x.size(0), dim_size, finite=(x,))
    if batch is None:
        batch = torch.zeros(x.size(0), dtype=torch.long, device=x.device)
    layout = SetLayout(batch.long(), num_sets, counts)
    return pad_sets(x, layout, bucket_size(max(counts, default=0), min_size))


def pad_sets(x: Tensor, layout: SetLayout, width: int | None = None
             ) -> tuple[Tensor, Tensor]:
    r"""Pads the rows :obj:`x` :obj:`[N, F]` of the ragged sets of
    :obj:`layout` to :obj:`[B, width, F]` with zeros, and returns the mask
    :obj:`[B, width]` (:obj:`True` = real element), from the layout's host
    sizes: no device read, no tensor made from host data.

    Args:
        width (int, optional): The padded set size, at least the largest
            set (:obj:`None`: the largest set, at least 1).
    """
    largest = max(layout.counts, default=0)
    width = max(1, largest) if width is None else width
    if width < largest:
        raise ValueError(f"'width' ({width}) must be at least the largest set ({largest})")
    slot = layout.batch * width + layout.positions  # [N] flat position in [B * width]
    out = x.new_zeros(layout.num_sets * width, x.size(-1)).index_copy(0, slot, x)
    mask = torch.zeros(layout.num_sets * width, dtype=torch.bool, device=x.device)
    mask = mask.index_fill(0, slot, True)
    return out.view(layout.num_sets, width, -1), mask.view(layout.num_sets, width)


def padded_for(backend: str, x: Tensor, layout: SetLayout) -> tuple[Tensor, SetLayout]:
    r"""One padded bucket for a whole model: with the ``'dense'`` backend, a
    ragged batch :obj:`(x [N, F], layout)` is padded once, where it enters
    the model (:func:`pad_sets`), and every block then runs on the padded
    rows :obj:`[B * n, F]` with a padded :class:`SetLayout`: each attention
    call is a view of its input and one masked SDPA, with no index or mask
    made per call.  Row-wise maps compute the padding rows too (the padding
    ratio in work, cheap on a GPU at low padding); the keys mask them out
    and the set statistics skip them, so the outputs are those of the
    ragged path up to rounding.  Other backends, and padded layouts, are
    returned as they are."""
    if backend != 'dense' or layout.mask is not None:
        return x, layout
    x_pad, mask = pad_sets(x, layout)
    return x_pad.view(-1, x.size(-1)), SetLayout.padded(mask)
