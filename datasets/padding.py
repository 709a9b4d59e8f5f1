r"""Set-size-aware batching: sets zero-padded to a fixed width, with no mask.

The reference Set Transformer code (Lee et al., 2019) and most code built on
it batch variable-size sets by zero-padding them to a common width and run
attention with no mask, so the pad rows are elements like any other and a
model's output depends on the set size :math:`n`. The paper never says how
it batches its sets; :obj:`~mzattn.datasets.batching.BATCHINGS` names the
three ways our harness can:

* :obj:`"masked"` (the default): a ragged PyG batch, every row a real
  element. Attention, PMA and means see only the real elements, so an exact
  softmax model gives the same output for a set and for the same set with
  every element duplicated.
* :obj:`"padded"`: every set of a batch padded to the batch's largest set.
* :obj:`"padded-dataset"`: every set padded to the dataset's largest set
  (over its train, validation and test splits), one width for every batch.

Padding happens here, at the data level, before any model sees the batch:
a padded set is an ordinary PyG :class:`~torch_geometric.data.Data` whose
last rows are exactly zero in :obj:`x` (and :obj:`pos`), so every model of
the registry takes the pad rows as real elements without model code.
"""
import copy
from collections.abc import Callable, Iterable, Sequence

import torch
from torch_geometric.data import Batch, Data

PADDED_KEYS = ("x", "pos")
r"""Per-element attributes that get zero rows; set-level ones (:obj:`y`,
labels) are kept as they are."""


def pad_set(data: Data, width: int) -> Data:
    r"""A copy of the set :obj:`data` with :obj:`width - n` rows of zeros
    appended to each of its :obj:`PADDED_KEYS`.

    Shapes:
        - **input:** :obj:`x` :obj:`[n, F]` (and :obj:`pos` :obj:`[n, D]`)
        - **output:** :obj:`x` :obj:`[width, F]` (and :obj:`pos`
          :obj:`[width, D]`), the first :obj:`n` rows those of :obj:`data`
    """
    n = data.num_nodes
    if n > width:
        raise ValueError(f"a set of {n} elements does not fit the pad width {width}")
    padded = copy.copy(data)
    for key in PADDED_KEYS:
        if key in data:
            value = data[key]
            padded[key] = torch.cat([value, value.new_zeros(width - n, *value.shape[1:])])
    if "num_nodes" in data:
        padded.num_nodes = width
    return padded


def largest_set(datasets: Iterable[Sequence[Data]]) -> int:
    r"""The number of elements of the largest set in :obj:`datasets` (e.g.
    the train, validation and test splits), :obj:`0` when they hold none."""
    return max((data.num_nodes for dataset in datasets for data in dataset), default=0)


class PadSets:
    r"""A collate function that zero-pads every set of a batch to
    :obj:`width` elements (:func:`pad_set`), then collates them with
    :obj:`collate` (a PyG :class:`~torch_geometric.loader.DataLoader`'s own
    collater), so the loader yields a :class:`~torch_geometric.data.Batch`
    of :obj:`B` sets of :obj:`width` elements each. Picklable, for loader
    workers.

    Args:
        collate (Callable): Collates a list of :class:`Data` into a batch.
        width (int, optional): The pad width; :obj:`None` = the batch's
            largest set (:obj:`"padded"`). (default: :obj:`None`)
    """
    def __init__(self, collate: Callable[[list[Data]], Batch], width: int | None = None) -> None:
        if width is not None and width < 1:
            raise ValueError(f"'width' must be positive or None (got {width})")
        self.collate, self.width = collate, width

    def __call__(self, items: list[Data]) -> Batch:
        width = self.width or max((data.num_nodes for data in items), default=0)
        return self.collate([pad_set(data, width) for data in items])

    def __repr__(self) -> str:
        width = "batch's largest set" if self.width is None else self.width
        return f"{self.__class__.__name__}(width={width})"
