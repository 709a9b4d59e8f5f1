r"""Activation checkpointing of set blocks in chunks of whole sets."""
from collections.abc import Callable

import torch
from torch import Tensor
from torch.utils.checkpoint import checkpoint

from mzlayers.layout import SetLayout
from mzlayers.zonotope import Zonotope

#: :obj:`fn(x_center, x_generators, y_center, y_generators, key_layout,
#: query_layout) -> (center, generators)`, the signature of a checkpointed block.
BlockFn = Callable[[Tensor, Tensor, Tensor, Tensor, SetLayout, SetLayout | None],
                   tuple[Tensor, Tensor]]


def check_rows(name: str, rows: int | None) -> None:
    r"""Raises a :class:`ValueError` unless :obj:`rows` is :obj:`None` or a
    positive number of rows per chunk."""
    if rows is not None and rows < 1:
        raise ValueError(f"'{name}' must be a positive number of rows per chunk "
                         f"(got {rows})")


def set_chunks(counts: list[int], rows: int) -> list[tuple[int, int]]:
    r"""Consecutive ranges :obj:`[start, stop)` of sets with at most
    :obj:`rows` rows each (:obj:`counts[i]` rows in set :obj:`i`); a set
    with more rows forms a chunk of its own."""
    check_rows('rows', rows)
    chunks, start, size = [], 0, 0
    for i, count in enumerate(counts):
        if size + count > rows and i > start:
            chunks.append((start, i))
            start, size = i, 0
        size += count
    return chunks + [(start, len(counts))] if counts else chunks


def checkpoint_sets(fn: BlockFn, x: Zonotope, y: Zonotope, key_layout: SetLayout,
                    query_layout: SetLayout | None, rows: int) -> Zonotope:
    r"""Runs a set-local block :obj:`fn` (the output rows of a set depend on
    that set's queries and keys only) on chunks of whole sets with about
    :obj:`rows` query and key rows each, under
    :func:`torch.utils.checkpoint.checkpoint`: only the inputs and outputs
    of the block are kept for backward, and its activations are recomputed
    one chunk at a time, so the extra memory of the backward pass is that of
    one chunk, at the cost of a second forward.  Random operations (dropout)
    replay identically in the recomputation.  With gradients disabled
    (inference) :obj:`fn` runs once on the whole batch, as it does for a
    batch without sets.

    Args:
        fn (Callable): The block, see :obj:`BlockFn`.
        x (Zonotope): Queries, :obj:`[N_q, ...]` with :obj:`query_layout`
            or :obj:`[M, ...]` learned queries shared by all sets.
        y (Zonotope): Keys and values :obj:`[N, ...]` with :obj:`key_layout`.
        key_layout (SetLayout): Layout of :obj:`y`.
        query_layout (SetLayout, optional): Layout of set-element queries.
        rows (int): Rows per chunk (query and key rows together).

    Returns:
        Zonotope: The output rows of all sets, in order (set-major
        :obj:`[B * M, ...]` for learned queries).
    """
    if not torch.is_grad_enabled() or key_layout.num_sets == 0:
        return Zonotope(*fn(x.center, x.generators, y.center, y.generators, key_layout,
                            query_layout))
    counts = key_layout.counts if query_layout is None else \
        [k + q for k, q in zip(key_layout.counts, query_layout.counts, strict=True)]
    outs = []
    for start, stop in set_chunks(counts, rows):
        k0, k1 = key_layout.row_range(start, stop)
        queries, q_rows = None, slice(None)
        if query_layout is not None:
            queries, q_rows = query_layout.subset(start, stop), slice(
                *query_layout.row_range(start, stop))
        outs.append(checkpoint(fn, x.center[q_rows], x.generators[q_rows], y.center[k0:k1],
                               y.generators[k0:k1], key_layout.subset(start, stop), queries,
                               use_reentrant=False))
    return Zonotope(torch.cat([o[0] for o in outs]), torch.cat([o[1] for o in outs]))
