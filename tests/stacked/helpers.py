r"""Shared helpers of the tests of :mod:`mzattn.stacked`."""
import torch

from mzlayers.layout import SetLayout


def layout_of(sizes: list[int]) -> tuple[torch.Tensor, SetLayout]:
    counts = torch.tensor(sizes)
    batch = torch.repeat_interleave(torch.arange(len(sizes)), counts)
    ptr = torch.cat([counts.new_zeros(1), counts.cumsum(0)])
    return batch, SetLayout.from_sizes(batch, sizes, ptr)


def prediction(out) -> torch.Tensor:
    return out[0] if isinstance(out, tuple) else out
