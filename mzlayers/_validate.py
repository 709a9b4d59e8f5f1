"""Input guards shared by every public layer.

Layers validate their inputs once, at the public entry point, and raise a
:class:`ValueError` that names the offending argument; ``forward`` bodies
only compute.
"""

import torch
from torch import Tensor


def check_features(x: Tensor, channels: int, name: str = 'x') -> None:
    r"""Checks that :obj:`x` is a finite ``[N, channels]`` float tensor."""
    if not torch.is_tensor(x):
        raise ValueError(f"'{name}' must be a tensor (got {type(x).__name__})")
    if x.dim() != 2:
        raise ValueError(f"'{name}' must be two-dimensional [N, {channels}] "
                         f"(got shape {tuple(x.shape)})")
    if x.size(-1) != channels:
        raise ValueError(f"'{name}' has {x.size(-1)} features per element but "
                         f"the layer expects {channels}")
    if not x.is_floating_point():
        raise ValueError(f"'{name}' must be a floating-point tensor (got {x.dtype})")
    if not _all_finite(x):
        raise ValueError(f"'{name}' contains NaN or infinite values")


def _all_finite(x: Tensor) -> bool:
    r"""Whether every entry of :obj:`x` is finite.  A NaN or infinity makes
    the sum non-finite, so one reduction decides the common case; only a
    non-finite sum (which finite values can also give, by overflow) is
    checked element-wise."""
    return bool(torch.isfinite(x.sum())) or bool(torch.isfinite(x).all())


def check_batch(batch: Tensor | None, num_elements: int,
                dim_size: int | None = None) -> int:
    r"""Checks a PyG :obj:`batch` vector and returns the number of sets.

    :obj:`batch` must be a sorted, non-negative, one-dimensional integer tensor
    with one entry per element; :obj:`dim_size`, if given, must exceed every
    set index (sets with no element are allowed).
    """
    if batch is None:
        num_sets = 1 if num_elements > 0 else 0
        return num_sets if dim_size is None else _check_dim_size(dim_size, num_sets)
    if not torch.is_tensor(batch) or batch.dtype not in (torch.long, torch.int):
        dtype = batch.dtype if torch.is_tensor(batch) else type(batch).__name__
        raise ValueError(f"'batch' must be an integer (torch.long) tensor (got {dtype})")
    if batch.dim() != 1 or batch.numel() != num_elements:
        raise ValueError(f"'batch' must have shape [{num_elements}] (one set index "
                         f"per element), got {tuple(batch.shape)}")
    if num_elements == 0:
        return _check_dim_size(dim_size, 0) if dim_size is not None else 0
    if bool((batch[1:] < batch[:-1]).any()):
        raise ValueError("'batch' must be sorted in ascending order (elements of "
                         "a set contiguous, as in a PyG Batch)")
    if int(batch[0]) < 0:
        raise ValueError("'batch' contains negative set indices")
    num_sets = int(batch[-1]) + 1
    return num_sets if dim_size is None else _check_dim_size(dim_size, num_sets)


def _check_dim_size(dim_size: int, min_size: int) -> int:
    if dim_size < min_size:
        raise ValueError(f"'dim_size' ({dim_size}) must be at least the number of "
                         f"sets in 'batch' ({min_size})")
    return int(dim_size)


def check_choice(name: str, value: str, choices: tuple) -> None:
    r"""Raises if :obj:`value` is not one of :obj:`choices`."""
    if value not in choices:
        raise ValueError(f"'{name}' must be one of {choices} (got '{value}')")


def resolve_layout(x: Tensor, batch: Tensor | None, dim_size: int | None,
                   channels: int, layout=None):
    r"""Validates a block's :obj:`(x, batch, dim_size)` input and returns its
    :class:`~mzlayers.layout.SetLayout` (the given :obj:`layout` when a model
    already built one for this batch)."""
    from mzlayers.layout import SetLayout
    check_features(x, channels)
    if layout is not None:
        if layout.num_elements != x.size(0):
            raise ValueError(f"'layout' describes {layout.num_elements} elements but "
                             f"'x' has {x.size(0)}")
        return layout
    num_sets = check_batch(batch, x.size(0), dim_size)
    return SetLayout.from_batch(batch, x.size(0), num_sets, x.device)
