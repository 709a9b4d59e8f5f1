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
    width = bucket_size(max(counts, default=0), min_size)
    if batch is None:
        batch = torch.zeros(x.size(0), dtype=torch.long, device=x.device)
    count = torch.tensor(counts, dtype=torch.long, device=x.device)
    start = (count.cumsum(0) - count)[batch]  # first row of each element's set
    slot = batch * width + torch.arange(x.size(0), device=x.device) - start
    out = x.new_zeros(num_sets * width, x.size(-1)).index_copy(0, slot, x)
    mask = torch.zeros(num_sets * width, dtype=torch.bool, device=x.device)
    mask[slot] = True
    return out.view(num_sets, width, -1), mask.view(num_sets, width)
