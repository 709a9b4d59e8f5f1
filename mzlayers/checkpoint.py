r"""Activation checkpointing of row-wise computations in chunks of rows."""
from collections.abc import Callable

import torch
from torch import Tensor
from torch.utils.checkpoint import checkpoint


def checkpoint_rows(fn: Callable[..., tuple[Tensor, ...]], tensors: tuple[Tensor, ...],
                    rows: int) -> tuple[Tensor, ...]:
    r"""Applies a row-wise :obj:`fn` to chunks of at most :obj:`rows` rows
    under :func:`torch.utils.checkpoint.checkpoint`, so that its
    intermediate activations are not kept for backward but recomputed one
    chunk at a time: the extra memory of the backward pass is that of one
    chunk, at the cost of a second forward of :obj:`fn`.

    :obj:`fn` must treat every row independently (row :math:`i` of each
    output depends on row :math:`i` of each input only); its random
    operations (dropout) replay identically, as the RNG state is restored
    for the recomputation.  With gradients disabled (inference) :obj:`fn`
    runs once on all rows.

    Args:
        fn (Callable): Maps tensors :obj:`[n, *]` to a tuple of tensors
            :obj:`[n, *]`.
        tensors (tuple[torch.Tensor]): Inputs, all with the same number of
            rows :obj:`N`.
        rows (int): Rows per chunk.

    Returns:
        tuple[torch.Tensor]: The outputs of :obj:`fn` on all :obj:`N` rows.
    """
    check_rows('rows', rows)
    if len({t.size(0) for t in tensors}) > 1:
        raise ValueError(f"All inputs of a row-wise function must have the same number "
                         f"of rows (got {[t.size(0) for t in tensors]})")
    if not torch.is_grad_enabled():
        return fn(*tensors)
    chunks = zip(*(t.split(rows) for t in tensors), strict=True)
    outs = [checkpoint(fn, *chunk, use_reentrant=False) for chunk in chunks]
    return tuple(torch.cat(parts) for parts in zip(*outs, strict=True))



def check_rows(name: str, rows: int | None) -> None:
    r"""Raises a :class:`ValueError` unless :obj:`rows` is :obj:`None` or a
    positive number of rows per chunk."""
    if rows is not None and rows < 1:
        raise ValueError(f"'{name}' must be a positive number of rows per chunk "
                         f"(got {rows})")
