r"""Matching a model's width to a target parameter count."""
from collections.abc import Callable

import torch

from mzlayers import count_parameters


def match_width(build: Callable[[int], torch.nn.Module], target: int, *,
                low: int = 4, high: int = 1024, multiple: int = 4) -> int:
    r"""The width :math:`w` (a multiple of :obj:`multiple` in
    :obj:`[low, high]`) whose model :obj:`build(w)` has the parameter count
    closest to :obj:`target`, found by bisection (the count must grow with
    the width).

    Example::

        from mzattn.baselines import build_model
        width = match_width(lambda w: build_model('hypernet-r16', 8, 1, channels=w),
                            target=370_000)

    Args:
        build (Callable[[int], torch.nn.Module]): Builds the model of a width.
        target (int): Target number of trainable parameters.
        low (int, optional): Smallest width. (default: :obj:`4`)
        high (int, optional): Largest width. (default: :obj:`1024`)
        multiple (int, optional): Widths are multiples of it (e.g. the number
            of heads). (default: :obj:`4`)
    """
    if target < 1:
        raise ValueError(f"'target' must be positive (got {target})")
    lo, hi = -(-low // multiple), high // multiple
    if lo > hi:
        raise ValueError(f"No multiple of 'multiple' ({multiple}) in [{low}, {high}]")
    count = {}

    def params(k: int) -> int:
        if k not in count:
            count[k] = count_parameters(build(k * multiple))
        return count[k]

    while lo < hi:  # smallest k with params(k) >= target
        mid = (lo + hi) // 2
        lo, hi = (mid + 1, hi) if params(mid) < target else (lo, mid)
    best = min({max(lo - 1, -(-low // multiple)), lo},
               key=lambda k: abs(params(k) - target))
    return best * multiple
