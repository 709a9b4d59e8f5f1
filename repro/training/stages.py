r"""The stages of a cell, said as it reaches them, and the pause that lets
a test stop it at any one of them on purpose (:obj:`docs/faults.md`).

A cell goes through :obj:`STAGES`: :obj:`"start"` (before its lock),
:obj:`"data"` (its data generated or read), :obj:`"model"` (built),
:obj:`"training"` (the first training step of this process done),
:obj:`"checkpoint"` (in the middle of writing a checkpoint; never said)
and :obj:`"test"` (the best checkpoint tested). Each but
:obj:`"checkpoint"` is a line on stderr.

Fault injection: with :obj:`MZATTN_PAUSE_AT` naming stages
(comma-separated) and :obj:`MZATTN_PAUSE_DIR` a folder, a cell pauses
the first time it reaches each named stage with no stop signal held (a
file per stage in that
folder remembers it, across processes and requeued jobs), says
:obj:`paused at STAGE` and waits up to :obj:`MZATTN_PAUSE_S` seconds
(default 600) for a stop signal (:mod:`~mzattn.repro.core.faults`). The
engine tests send the signal once the line is there, so that they
interrupt each stage on purpose rather than by timing.
"""
import os
import os.path as osp
import sys
import time
from typing import IO

from mzattn.repro.core.faults import pending_signal

STAGES = ("start", "data", "model", "training", "checkpoint", "test")
r"""The stages of a cell, in order."""

SAID = {"data": "preparing its data", "model": "building its model",
        "training": "training", "test": "testing its best checkpoint"}
r"""The words of each stage that is said."""


def reach(stage: str, name: str) -> None:
    r"""Says that :obj:`name` (:obj:`"{table} {cell_id}"`) reached
    :obj:`stage` and pauses there when :obj:`MZATTN_PAUSE_AT` asks to."""
    if stage in SAID:
        _say(f"{name}: {SAID[stage]}")
    if pending_signal() is None and _pause_once(stage):  # a held stop ends the cell anyway
        _say(f"{name}: paused at {stage} (MZATTN_PAUSE_AT)")
        deadline = time.monotonic() + float(os.environ.get("MZATTN_PAUSE_S", "600"))
        while pending_signal() is None and time.monotonic() < deadline:
            time.sleep(0.05)  # a stop signal raises here, or is held and ends the wait


def pausing(stage: str) -> bool:
    r"""Whether :obj:`MZATTN_PAUSE_AT` names :obj:`stage`."""
    return stage in os.environ.get("MZATTN_PAUSE_AT", "").split(",")


def _pause_once(stage: str) -> bool:
    # the first time this stage is reached, of all processes that share MZATTN_PAUSE_DIR
    folder = os.environ.get("MZATTN_PAUSE_DIR")
    if not pausing(stage) or not folder:
        return False
    os.makedirs(folder, exist_ok=True)
    try:
        os.close(os.open(osp.join(folder, stage), os.O_CREAT | os.O_EXCL | os.O_WRONLY))
    except FileExistsError:
        return False
    return True


def _say(text: str) -> None:
    print(f"[mzattn-repro] {text}", file=sys.stderr, flush=True)


class PausingFile:
    r"""A file that reaches stage :obj:`"checkpoint"` after its first
    write: a pause there falls inside :func:`torch.save`.

    Args:
        file (IO): The file written.
        name (str): The cell, as :func:`reach` names it.
    """
    def __init__(self, file: IO, name: str) -> None:
        self.file, self.name, self.writes = file, name, 0

    def write(self, data: bytes) -> int:
        written = self.file.write(data)
        self.writes += 1
        if self.writes == 1:
            reach("checkpoint", self.name)
        return written

    def flush(self) -> None:
        self.file.flush()
