r"""The set-size feature: :math:`\log n` of every set, appended to its pooled
summary before a prediction head.

Exact attention normalised over the real elements of a set, PMA and means
give the same summary for a set and for the same set with every element
duplicated: they cannot see how many elements it has. A task whose target
grows with :math:`n` (sums, maxima over more draws) then leaves the
size-dependent part unexplained. Zero-padding without a mask (the reference
Set Transformer code, :mod:`mzattn.datasets.padding`) lets :math:`n` leak
through the pad rows, as a side effect of the batch's width; the principled
alternative is to give the head :math:`n` itself, the same for every batch.
"""
import torch
from torch import Tensor

from mzlayers.layout import SetLayout
from mzlayers.validate import check_choice

SIZE_FEATURES = ('log', )
r"""The set-size features: :obj:`'log'`, :math:`\log n` (:math:`0` for an
empty set)."""


def size_feature_channels(size_feature: str | None) -> int:
    r"""The columns that :obj:`size_feature` appends: :obj:`0` for
    :obj:`None`, else :obj:`1` (a :class:`ValueError` names an unknown one)."""
    if size_feature is None:
        return 0
    check_choice('size_feature', size_feature, SIZE_FEATURES)
    return 1


def append_size_feature(summary: Tensor, layout: SetLayout,
                        size_feature: str | None) -> Tensor:
    r"""Appends :math:`\log \max(n_b, 1)` of every set :math:`b` of
    :obj:`layout` (its real elements: a padded layout's padding is not
    counted) to its pooled :obj:`summary`; returns :obj:`summary` itself for
    :obj:`size_feature=None`. No device read.

    Shapes:
        - **input:** :obj:`summary` :obj:`[B, D]`
        - **output:** :obj:`[B, D + 1]` (:obj:`[B, D]` for :obj:`None`)
    """
    if not size_feature_channels(size_feature):
        return summary
    dtype = torch.promote_types(summary.dtype, torch.float32)  # counts exact beyond bf16's 256
    ones = torch.ones(layout.num_elements, 1, dtype=dtype, device=summary.device)
    n = layout.sum(ones)  # [B, 1]
    return torch.cat([summary, n.clamp(min=1).log().to(summary.dtype)], dim=-1)
