"""Shared inputs of the baseline tests."""
import torch
from mzattn.baselines import model_info

# Ragged sizes with an empty set (index 2).
SIZES = (3, 1, 0, 6, 2, 9)


def ragged_batch(channels, sizes=SIZES, dtype=torch.float64):
    batch = torch.repeat_interleave(torch.arange(len(sizes)), torch.tensor(sizes))
    return torch.randn(int(sum(sizes)), channels, dtype=dtype), batch, len(sizes)


def prediction(out):
    return out[0] if isinstance(out, tuple) else out


def shuffle_within_sets(x, batch):
    """Permutes the elements inside every set (the set order is kept)."""
    sets = torch.arange(batch.numel()).split(torch.bincount(batch).tolist())
    perm = torch.cat([idx[torch.randperm(idx.numel())] for idx in sets])
    return x[perm], batch[perm]


def in_channels(name):
    return model_info(name).in_channels


def reverse_within_sets(x, batch):
    """Reverses the element order inside every set (changes every set with
    at least two distinct elements)."""
    sets = torch.arange(batch.numel()).split(torch.bincount(batch).tolist())
    perm = torch.cat([idx.flip(0) for idx in sets])
    return x[perm], batch[perm]

