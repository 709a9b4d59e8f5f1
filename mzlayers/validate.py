r"""Input guards shared by every public layer, and by layers built on top of
:mod:`mzlayers` (the baselines of :mod:`mzattn.baselines` use them).

A model's :obj:`forward` starts with :func:`resolve_layout`, which validates
:obj:`(x, batch, dim_size)` and returns the batch's
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
    'resolve_layout',
    'resolve_input',
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


def resolve_layout(x, batch: Tensor | None, dim_size: int | None,
                   channels: int, layout=None, dtype: torch.dtype | None = None):
    r"""Validates a block's or model's :obj:`(x, batch, dim_size)` input and
    returns its :class:`~mzlayers.layout.SetLayout`.

    :obj:`x` is a tensor or a :class:`~mzlayers.zonotope.Zonotope` (its
    centre is checked; its generators must be finite too).  When a model
    already built the :obj:`layout` of this batch, only the shapes are
    checked (no device read): the values were validated at the entry point.
    """
    from mzlayers.layout import SetLayout
    from mzlayers.zonotope import Zonotope
    tensors = (x.center, x.generators) if isinstance(x, Zonotope) else (x,)
    if layout is not None or in_autocast(tensors[0]):  # inside a model, or mixed precision
        dtype = None
    check_shape(tensors[0], channels, dtype=dtype)
    if layout is not None:
        if layout.num_elements != tensors[0].size(0):
            raise ValueError(f"'layout' describes {layout.num_elements} elements but "
                             f"'x' has {tensors[0].size(0)}")
        return layout
    num_elements = tensors[0].size(0)
    num_sets, counts = count_sets(batch, num_elements, dim_size, finite=tensors)
    if batch is None:
        batch = torch.zeros(num_elements, dtype=torch.long, device=tensors[0].device)
    return SetLayout(batch.long(), num_sets, counts)


def resolve_input(x: Tensor, batch: Tensor | None, dim_size: int | None, channels: int,
                  *, mask: Tensor | None = None, layout=None,
                  dtype: torch.dtype | None = None):
    r"""A model's input: a ragged batch (:func:`resolve_layout`, one device
    read) or, with :obj:`mask`, a padded one (the static-shape path of
    :func:`~mzlayers.static.bucket_batch`), or a ragged batch with its
    :obj:`layout` made where the batch was built
    (:meth:`~mzlayers.layout.SetLayout.from_sizes`).  The last two are
    checked on the host only, shapes and dtypes: no device read, so a CUDA
    step never waits and :func:`torch.compile` traces it without a graph
    break.  Returns :obj:`x` as flat rows and its
    :class:`~mzlayers.layout.SetLayout`.

    Args:
        x (torch.Tensor): :obj:`[N, channels]`, or :obj:`[B, n, channels]`
            with :obj:`mask` (returned as :obj:`[B * n, channels]`).
        batch (torch.Tensor, optional): Set index :obj:`[N]`; must be
            :obj:`None` with :obj:`mask`.
        dim_size (int, optional): The number of sets; :obj:`None` or
            :obj:`B` with :obj:`mask`.
        channels (int): The expected feature size.
        mask (torch.Tensor, optional): Boolean :obj:`[B, n]`, :obj:`True` =
            real element. (default: :obj:`None`)
        layout (SetLayout, optional): The layout of :obj:`batch`, computed
            where the batch was made; :obj:`batch` must be its
            :obj:`batch` or :obj:`None`, :obj:`dim_size` its number of sets
            or :obj:`None`.
        dtype (torch.dtype, optional): The model's parameter dtype.
    """
    from mzlayers.layout import SetLayout
    if layout is not None:
        return x, _given_layout(x, batch, dim_size, channels, mask, layout, dtype)
    if mask is None:
        return x, resolve_layout(x, batch, dim_size, channels, dtype=dtype)
    if batch is not None:
        raise ValueError("'batch' must be None when 'mask' is given (a padded batch "
                         "x [B, n, F] holds set b in x[b])")
    if not torch.is_tensor(x) or x.dim() != 3:
        shape = tuple(x.shape) if torch.is_tensor(x) else type(x).__name__
        raise ValueError(f"'x' must be a padded batch [B, n, {channels}] when 'mask' is "
                         f"given (got {shape})")
    if not torch.is_tensor(mask) or mask.dtype != torch.bool or mask.shape != x.shape[:2]:
        shape = tuple(mask.shape) if torch.is_tensor(mask) else type(mask).__name__
        raise ValueError(f"'mask' must be a boolean tensor of shape {tuple(x.shape[:2])} "
                         f"(got {shape})")
    if dim_size is not None and dim_size != x.size(0):
        raise ValueError(f"'dim_size' ({dim_size}) must be None or the number of padded "
                         f"sets ({x.size(0)})")
    flat = x.reshape(-1, x.size(-1))
    check_shape(flat, channels, dtype=None if in_autocast(flat) else dtype)
    return flat, SetLayout.padded(mask)


def _given_layout(x: Tensor, batch: Tensor | None, dim_size: int | None, channels: int,
                  mask: Tensor | None, layout, dtype: torch.dtype | None):
    r"""Checks a model input that comes with its :obj:`layout` (host only)."""
    if mask is not None:
        raise ValueError("'layout' describes a ragged batch; pass 'mask' or 'layout', "
                         "not both")
    if batch is not None and batch is not layout.batch and batch.shape != layout.batch.shape:
        raise ValueError(f"'batch' has {batch.numel()} entries but 'layout' describes "
                         f"{layout.num_elements} elements")
    if dim_size is not None and dim_size != layout.num_sets:
        raise ValueError(f"'dim_size' ({dim_size}) differs from the number of sets of "
                         f"'layout' ({layout.num_sets})")
    check_shape(x, channels, dtype=None if in_autocast(x) else dtype)
    if layout.num_elements != x.size(0):
        raise ValueError(f"'layout' describes {layout.num_elements} elements but "
                         f"'x' has {x.size(0)}")
    return layout


def in_autocast(x: Tensor) -> bool:
    return torch.is_tensor(x) and torch.is_autocast_enabled(x.device.type)


def parameter_dtype(module: torch.nn.Module) -> torch.dtype | None:
    r"""The dtype of :obj:`module`'s first floating-point parameter."""
    for p in module.parameters():
        if p.is_floating_point():
            return p.dtype
    return None
