r"""Parked checkpoints: a copy of a cell's checkpoints that git can carry,
so that a cell resumes in a later session on a fresh clone of the
repository (:obj:`mzattn-repro campaign NAME --park`).

A cell's checkpoints (:func:`~mzattn.repro.training.layout.checkpoint_dir`)
are ignored by git, so that a session that ends on another machine loses
them. :func:`park` copies its :obj:`last.ckpt` and :obj:`best.ckpt` (one of
an earlier epoch without the optimiser's state, :func:`lean`: the test reads
the weights) to :obj:`{out}/{table}/parked/{cell_id}/`
(:func:`~mzattn.repro.training.layout.parked_dir`), which
:obj:`--park --commit` commits to the repository's parks branch, or with
:obj:`--park-branch results` to the results' own
(:mod:`~mzattn.repro.engine.parks_branch`, which also copies a park back
from the parks branch on a fresh clone); :func:`unpark` copies them back when the cell
starts without a :obj:`last.ckpt` of its own, and the cell resumes from them as from its own
(:func:`~mzattn.repro.training.checkpoints.resumable`: one that does not
load is set aside and the cell restarts; the paths of the callback state
are re-rooted in the clone's folder by
:class:`~mzattn.repro.training.checkpoints.CellCheckpoint`). A finished
cell's parked folder is removed with its checkpoints (:func:`remove_parked`).

A park may copy the checkpoints of a cell that trains in another process:
Lightning replaces them with :func:`os.replace` (a new inode each time), so
a copy whose sources changed while it read them is taken again, and the
two files of a park are always of one moment. They are written to
temporary files first and renamed in place only once both are complete,
:obj:`best.ckpt` first (a :obj:`last.ckpt` never names a best epoch later
than the :obj:`best.ckpt` beside it): a failed park leaves the previous one
as it was.
"""
import contextlib
import io
import os
import os.path as osp
import shutil
import time
import uuid
from collections.abc import Callable
from typing import IO, Any

import torch
from mzattn.repro.core.faults import atomic_write

from .checkpoints import safe_load
from .layout import Cell, checkpoint_dir, parked_dir

NAMES = ("best.ckpt", "last.ckpt")
r"""The files of a park, in the order they are renamed into place."""

TRAINING_STATE = ("optimizer_states", "lr_schedulers")
r"""What a parked :obj:`best.ckpt` of an earlier epoch than :obj:`last.ckpt`
leaves out (:func:`park`): a cell tests its best epoch's weights and resumes
from :obj:`last.ckpt` alone, and under AdamW the optimiser's moments are two
thirds of a checkpoint."""

ATTEMPTS = 5
r"""Copies :func:`park` tries while the cell's checkpoints keep changing."""


class ParkError(RuntimeError):
    r"""The checkpoints of a cell kept changing while :func:`park` copied
    them; nothing was parked."""


def park(out: str, cell: Cell, attempts: int = ATTEMPTS) -> bool:
    r"""Copies :obj:`cell`'s :obj:`last.ckpt` and :obj:`best.ckpt` (when it
    has one) to :func:`~mzattn.repro.training.layout.parked_dir`, replacing
    an earlier park. A :obj:`best.ckpt` of an earlier step than
    :obj:`last.ckpt` is parked without its :obj:`TRAINING_STATE`
    (:func:`lean`: a third of its size); one of the same step is parked
    whole, since git then stores it as a small delta of :obj:`last.ckpt`,
    which it does not do for a lean one (docs/reproduction.md). Returns
    :obj:`False`, writing nothing, when the cell has no :obj:`last.ckpt`.

    Raises:
        ParkError: The checkpoints changed during each of :obj:`attempts`
            copies (the cell trains epochs faster than they are read).
        ~mzattn.repro.core.faults.NoSpace: The disk is full; the previous
            park is left as it was.
    """
    return _copy(checkpoint_dir(out, cell), parked_dir(out, cell), attempts,
                 rewrite=_lean_older_best)


def lean(data: bytes) -> bytes:
    r"""The checkpoint :obj:`data` without its :obj:`TRAINING_STATE`: what
    :meth:`~lightning.pytorch.Trainer.test` reads of it (the weights, the
    loops' and callbacks' states) and nothing else. One that does not load
    (:func:`~mzattn.repro.training.checkpoints.safe_load`) is returned as it
    is, for the cell's test to name it."""
    try:
        checkpoint = safe_load(io.BytesIO(data))
    except ValueError:
        return data
    if not isinstance(checkpoint, dict) or not set(TRAINING_STATE) & set(checkpoint):
        return data
    buffer = io.BytesIO()
    torch.save({key: value for key, value in checkpoint.items() if key not in TRAINING_STATE},
               buffer)
    return buffer.getvalue()


def _lean_older_best(contents: dict[str, bytes | None]) -> dict[str, bytes | None]:
    # a park's files with best.ckpt lean when it is of an earlier step than last.ckpt (park)
    best, last = contents["best.ckpt"], contents["last.ckpt"]
    if best is None or last is None or _step(best) == _step(last):
        return contents
    return contents | {"best.ckpt": lean(best)}


def _step(data: bytes) -> int | None:
    # a checkpoint's global step; None when it does not load or has none
    try:
        checkpoint = safe_load(io.BytesIO(data))
    except ValueError:
        return None
    return checkpoint.get("global_step") if isinstance(checkpoint, dict) else None


def unpark(out: str, cell: Cell) -> bool:
    r"""Copies :obj:`cell`'s parked checkpoints into its checkpoint folder
    when it has no :obj:`last.ckpt` there and a parked one exists; returns
    whether it did. Called by :func:`~mzattn.repro.training.cells.train_cell`
    before it resumes, so that every entry point (tables, campaigns, SLURM)
    resumes from a parked checkpoint."""
    if osp.exists(osp.join(checkpoint_dir(out, cell), "last.ckpt")):
        return False
    return _copy(parked_dir(out, cell), checkpoint_dir(out, cell))


def remove_parked(out: str, cell: Cell) -> None:
    r"""Removes :obj:`cell`'s parked folder, and the table's :obj:`parked/`
    folder once it is empty."""
    folder = parked_dir(out, cell)
    shutil.rmtree(folder, ignore_errors=True)
    with contextlib.suppress(OSError):  # the table's parked/ folder, once empty
        os.rmdir(osp.dirname(folder))


def parked_history(out: str, cell: Cell) -> list[dict[str, Any]]:
    r"""The learning curve kept in :obj:`cell`'s parked :obj:`last.ckpt`
    (:func:`checkpoint_history`)."""
    return checkpoint_history(osp.join(parked_dir(out, cell), "last.ckpt"))


def checkpoint_history(source: str | IO[bytes]) -> list[dict[str, Any]]:
    r"""The learning curve kept in checkpoint :obj:`source` (a path or a
    binary file): :class:`~mzattn.repro.training.history.History`'s rows,
    one per epoch done; empty when it has none or it does not load."""
    try:
        checkpoint = safe_load(source)
    except (FileNotFoundError, ValueError):
        return []
    callbacks = checkpoint.get("callbacks") if isinstance(checkpoint, dict) else None
    history = callbacks.get("History") if isinstance(callbacks, dict) else None
    rows = history.get("rows") if isinstance(history, dict) else None
    return list(rows) if isinstance(rows, list) else []


def _stamps(folder: str) -> dict[str, tuple[int, int] | None]:
    # (inode, mtime) of each file of a park; a replaced file has another inode
    stamps: dict[str, tuple[int, int] | None] = {}
    for name in NAMES:
        try:
            stat = os.stat(osp.join(folder, name))
        except FileNotFoundError:
            stamps[name] = None
        else:
            stamps[name] = (stat.st_ino, stat.st_mtime_ns)
    return stamps


def _read(folder: str, name: str) -> bytes | None:
    try:
        with open(osp.join(folder, name), "rb") as f:
            return f.read()
    except FileNotFoundError:
        return None


def _copy(source: str, target: str, attempts: int = ATTEMPTS,
          rewrite: Callable[[dict[str, bytes | None]], dict[str, bytes | None]] | None = None
          ) -> bool:
    # The files of a park from `source` to `target`, both of one moment (see the module's doc);
    # `rewrite`, if given, rewrites their bytes on the way.
    for attempt in range(attempts):
        before = _stamps(source)
        if before["last.ckpt"] is None:
            return False
        contents = {name: _read(source, name) for name in NAMES}
        if _stamps(source) == before:
            write_park(target, contents if rewrite is None else rewrite(contents))
            return True
        if attempt + 1 < attempts:  # replaced while read: the cell saved an epoch
            time.sleep(0.1 * (attempt + 1))
    raise ParkError(f"{source}: its checkpoints changed during each of {attempts} copies; "
                    "nothing was copied")


def write_park(folder: str, contents: dict[str, bytes | None]) -> None:
    r"""Writes the files of a park, :obj:`contents` by name (:obj:`NAMES`),
    into :obj:`folder` together: each to a temporary name of this call's own
    (the ranks of a DDP run all unpark at once), then all renamed in place in
    :obj:`NAMES`' order; a file that is :obj:`None` is removed (a
    :obj:`best.ckpt` of an earlier park). On any error nothing is renamed."""
    staged: dict[str, str] = {}
    tag = uuid.uuid4().hex
    try:
        for name, data in contents.items():
            if data is not None:
                staged[name] = osp.join(folder, f".{name}.{tag}.staged")
                atomic_write(staged[name], lambda f, data=data: f.write(data), binary=True)
        for name in NAMES:
            if name in staged:
                os.replace(staged.pop(name), osp.join(folder, name))
            else:
                with contextlib.suppress(FileNotFoundError):
                    os.remove(osp.join(folder, name))
    finally:
        for path in staged.values():
            with contextlib.suppress(FileNotFoundError):
                os.remove(path)
