"""Ragged batches for the layer tests."""
import torch

# Set sizes with an empty set (index 2) and a large one, so the 'auto'
# backend splits the batch into several padded buckets.
SIZES = (3, 1, 0, 7, 2, 40)


def ragged_batch(sizes=SIZES, channels=8, dtype=torch.float64):
    batch = torch.repeat_interleave(torch.arange(len(sizes)), torch.tensor(sizes))
    x = torch.randn(int(sum(sizes)), channels, dtype=dtype)
    return x, batch, len(sizes)


def shuffle_sets(x, batch, num_sets, generator=None):
    r"""Shuffles the elements inside each set and the order of the sets.

    Returns the new :obj:`(x, batch)`, the element permutation :obj:`perm`
    (new row i = old row perm[i]) and the set permutation :obj:`set_perm`
    (new set s = old set set_perm[s])."""
    set_perm = torch.randperm(num_sets, generator=generator)
    rows = []
    for old in set_perm.tolist():
        idx = (batch == old).nonzero().view(-1)
        rows.append(idx[torch.randperm(idx.numel(), generator=generator)])
    perm = torch.cat(rows)
    new_of_old = torch.empty_like(set_perm)
    new_of_old[set_perm] = torch.arange(num_sets)
    new_batch = new_of_old[batch[perm]]
    return x[perm], new_batch, perm, set_perm
