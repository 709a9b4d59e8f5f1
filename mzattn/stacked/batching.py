r"""The batches of :math:`K` replicas as one padded, masked batch."""
from collections.abc import Sequence

import torch
from torch import Tensor

from mzlayers.static import bucket_batch
from mzlayers.validate import count_sets


def stack_sets(xs: Sequence[Tensor], batches: Sequence[Tensor], dim_size: int
               ) -> tuple[Tensor, Tensor]:
    r"""Pads the ragged batch of every replica to one width, the bucket
    (:func:`~mzlayers.static.bucket_size`) of the largest set of all of
    them, and stacks them: replica :math:`k`'s sets are :obj:`x[k][b][mask[k][b]]`,
    in their order, so that a model called with :obj:`mask=` computes on
    exactly replica :math:`k`'s ragged sets (:mod:`mzlayers.static`).  Reads
    the set sizes on the host once per replica, where the batches are made.

    Args:
        xs (Sequence[torch.Tensor]): Elements :obj:`[N_k, F]` of each
            replica.
        batches (Sequence[torch.Tensor]): Sorted set index :obj:`[N_k]` of
            each replica.
        dim_size (int): The number of sets :obj:`B` of every replica (sets
            beyond a replica's last index are empty).

    Returns:
        (torch.Tensor, torch.Tensor): :obj:`x` :obj:`[K, B, n, F]` and
        :obj:`mask` :obj:`[K, B, n]` (:obj:`True` = real element).
    """
    if len(xs) < 1 or len(xs) != len(batches):
        raise ValueError(f"'xs' and 'batches' must hold one batch per replica "
                         f"(got {len(xs)} and {len(batches)})")
    largest = max(max(count_sets(batch, x.size(0), dim_size)[1], default=0)
                  for x, batch in zip(xs, batches, strict=True))
    padded = [bucket_batch(x, batch, dim_size, min_size=largest)
              for x, batch in zip(xs, batches, strict=True)]
    return (torch.stack([x for x, _ in padded]), torch.stack([mask for _, mask in padded]))
