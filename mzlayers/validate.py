r"""Input guards shared by every public layer, and by layers built on top of
:mod:`mzlayers` (the baselines of :mod:`mzattn.baselines` use them).

A model's :obj:`forward` starts with
:func:`~mzlayers.layout.resolve_layout`, which validates
:obj:`(x, batch, dim_size)` with these guards and returns the batch's
:class:`~mzlayers.layout.SetLayout`::

    layout = resolve_layout(x, batch, dim_size, self.in_channels,
                            dtype=parameter_dtype(self))

Layers validate their inputs once, at the public entry point (a model's or
a block's :obj:`forward` called with a :obj:`batch` vector), and raise an
error that names the offending argument; a block called with a ready
:class:`~mzlayers.layout.SetLayout` (the internal path of every model) only
checks shapes, on the host.  Every value a forward pass needs from the
device (the set sizes, the sortedness and finiteness flags) comes back in a
single read, :func:`read_host`: one host synchronisation per forward.
"""

import torch
from torch import Tensor

__all__ = [
    'MAX_DIM_SIZE',
    'read_host',
    'check_features',
    'check_shape',
    'check_batch',
    'check_dim_size',
    'check_index',
    'count_sets',
    'check_choice',
    'in_autocast',
    'parameter_dtype',
]

#: Largest accepted :obj:`dim_size` (indices are built in int32 where they fit).
MAX_DIM_SIZE = 2**31 - 1


def read_host(t: Tensor) -> list:
    r"""The one place where a forward pass reads device values to the host
    (one synchronisation; tests count the calls)."""
    return t.tolist()


def check_features(x: Tensor, channels: int, name: str = 'x',
                   dtype: torch.dtype | None = None, finite: bool = True) -> None:
    r"""Checks that :obj:`x` is a ``[N, channels]`` float tensor (of
    :obj:`dtype`, the layer's parameters, if given) and, with
    :obj:`finite`, that every entry is finite (one host read)."""
    check_shape(x, channels, name, dtype)
    if finite and not _all_finite(x):
        raise ValueError(f"'{name}' contains NaN or infinite values")


def check_shape(x: Tensor, channels: int, name: str = 'x',
                dtype: torch.dtype | None = None) -> None:
    r"""The host-side part of :func:`check_features` (no device read)."""
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
    if dtype is not None and x.dtype != dtype:
        raise TypeError(f"'{name}' has dtype {x.dtype} but the layer's parameters are "
                        f"{dtype} (convert one of them, e.g. x.to({dtype}) or "
                        f"model.to({x.dtype}))")


def _all_finite(x: Tensor) -> bool:
    r"""Whether every entry of :obj:`x` is finite.  A NaN or infinity makes
    the sum non-finite, so one reduction decides the common case; only a
    non-finite sum (which finite values can also give, by overflow) is
    checked element-wise."""
    return bool(read_host(torch.isfinite(x.sum()))) or \
        bool(read_host(torch.isfinite(x).all()))


def check_batch(batch: Tensor | None, num_elements: int,
                dim_size: int | None = None, name: str = 'batch') -> int:
    r"""Checks a PyG :obj:`batch` vector and returns the number of sets.

    :obj:`batch` must be a sorted, non-negative, one-dimensional integer tensor
    with one entry per element; :obj:`dim_size`, if given, must exceed every
    set index (sets with no element are allowed).
    """
    return count_sets(batch, num_elements, dim_size, name=name)[0]


def check_dim_size(dim_size) -> None:
    r"""Checks the type and range of a user's :obj:`dim_size` (host only)."""
    if dim_size is None:
        return
    if isinstance(dim_size, bool) or not isinstance(dim_size, int):
        raise TypeError(f"'dim_size' must be an int (got {type(dim_size).__name__})")
    if not 0 <= dim_size <= MAX_DIM_SIZE:
        raise ValueError(f"'dim_size' must lie in [0, {MAX_DIM_SIZE}] (got {dim_size})")


def check_index(batch: Tensor | None, num_elements: int, name: str = 'batch') -> None:
    r"""The host-side part of :func:`count_sets`: :obj:`batch`, if given, is
    a one-dimensional integer tensor with one entry per element (its values
    are not read)."""
    if batch is None:
        return
    if not torch.is_tensor(batch) or batch.dtype not in (torch.long, torch.int):
        dtype = batch.dtype if torch.is_tensor(batch) else type(batch).__name__
        raise ValueError(f"'{name}' must be an integer (torch.long) tensor (got {dtype})")
    if batch.dim() != 1 or batch.numel() != num_elements:
        raise ValueError(f"'{name}' must have shape [{num_elements}] (one set index "
                         f"per element), got {tuple(batch.shape)}")


def count_sets(batch: Tensor | None, num_elements: int, dim_size: int | None = None,
               finite: tuple[Tensor, ...] = (), name: str = 'batch',
               hint: str = '') -> tuple[int, list[int]]:
    r"""Validates :obj:`batch` (and the finiteness of the tensors in
    :obj:`finite`) with one host read and returns :obj:`(num_sets, counts)`.

    Args:
        batch (torch.Tensor, optional): Set index of every element.
        num_elements (int): :math:`N`.
        dim_size (int, optional): The number of sets, if known.
        finite (tuple[torch.Tensor], optional): Tensors that must be finite;
            the first is named :obj:`'x'` in the error.
        name (str, optional): The name of :obj:`batch` in errors.
        hint (str, optional): Appended to the unsorted-index error.
    """
    check_dim_size(dim_size)
    check_index(batch, num_elements, name)
    finite = tuple(t for t in finite if t.numel())
    flags = [torch.isfinite(t.sum()).logical_not() for t in finite]
    counts = None
    if batch is not None and num_elements > 0:
        flags += [(batch[1:] < batch[:-1]).any(), batch[0] < 0]
        clamped = batch.clamp(min=0)
        if dim_size is not None:  # bin dim_size counts the indices beyond the sets
            # a scatter, not bincount: CUDA's bincount reads the index range to the host
            ones = torch.ones_like(clamped)
            counts = ones.new_zeros(dim_size + 1).scatter_add_(
                0, clamped.clamp(max=dim_size), ones)
        else:  # the number of sets is read from the device
            counts = torch.bincount(clamped)
    if counts is not None:
        values = read_host(torch.cat([torch.stack(flags).long(), counts]))
        flags, counts = values[:len(flags)], values[len(flags):]
    else:  # no element, or one set: the sizes are known on the host
        flags = read_host(torch.stack(flags)) if flags else []
        counts = [num_elements] if num_elements else []
        if dim_size is not None:
            counts = (counts + [0] * dim_size)[:dim_size] + [len(counts) > dim_size]
    for t, bad in zip(finite, flags, strict=False):
        if bad and not bool(read_host(torch.isfinite(t).all())):  # not just overflow
            label = 'x' if t is finite[0] else 'x.generators'
            raise ValueError(f"'{label}' contains NaN or infinite values")
    if batch is not None and num_elements > 0:
        unsorted, negative = flags[len(finite):]
        if negative:
            raise ValueError(f"'{name}' contains negative set indices")
        if unsorted:
            raise ValueError(f"'{name}' must be sorted in ascending order (elements of "
                             f"a set contiguous, as in a PyG Batch){hint}")
    if dim_size is None:
        return len(counts), counts
    if counts[dim_size]:
        raise ValueError(f"'dim_size' ({dim_size}) must be at least the number of "
                         f"sets in '{name}'")
    return dim_size, counts[:dim_size]


def check_choice(name: str, value: str, choices: tuple) -> None:
    r"""Raises if :obj:`value` is not one of :obj:`choices`."""
    if value not in choices:
        raise ValueError(f"'{name}' must be one of {choices} (got '{value}')")


def in_autocast(x: Tensor) -> bool:
    return torch.is_tensor(x) and torch.is_autocast_enabled(x.device.type)


def parameter_dtype(module: torch.nn.Module) -> torch.dtype | None:
    r"""The dtype of :obj:`module`'s first floating-point parameter."""
    for p in module.parameters():
        if p.is_floating_point():
            return p.dtype
    return None
