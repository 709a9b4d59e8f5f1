r"""What the dispatcher (:mod:`.launch`) runs and how it tells its progress:
the :class:`Run` protocol that every launcher takes (in process, the worker
pool, SLURM through :mod:`.slurm`), the :class:`CellName` of a run that is
not a table's cell, and the :class:`Progress` lines of a sweep."""
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Protocol

from mzattn.repro.training.layout import Cell


@dataclass(frozen=True)
class CellName:
    r"""The name of a run that is not a table's cell (an analysis
    training): :obj:`table` groups runs (one SLURM job array, files under
    :obj:`{out}/{table}/`) and :obj:`cell_id` names one."""
    table: str
    cell_id: str


class Run(Protocol):
    r"""What :func:`dispatch` runs: a picklable, frozen dataclass that runs
    in any process when called and returns its status (:obj:`"ok"`,
    :obj:`"failed"`, :obj:`"skipped"` or :obj:`"busy"`), with
    :obj:`threads` torch threads on GPU :obj:`gpu` (fields :func:`dispatch`
    sets), results under :obj:`out`, and a :obj:`cell` (a
    :class:`~mzattn.repro.training.layout.Cell` or :class:`CellName`) naming it in
    the progress lines. :class:`~mzattn.repro.engine.launch.CellRun` is the run of a table's
    cell."""
    cell: Cell | CellName
    out: str
    threads: int | None
    gpu: str | None

    def __call__(self) -> str: ...

    def finished(self) -> bool:
        r"""Whether it ran to the end before (it is then skipped)."""

    def fail(self, reason: str) -> str:
        r"""Records that it failed for :obj:`reason` (a killed worker, a
        scheduler error), prints the reason, and returns its status."""

    def outcome(self) -> str | None:
        r"""How it ended, as its own files record it once its process has
        ended (:obj:`"ok"` or :obj:`"failed"`), :obj:`None` when they
        record nothing."""

    def cost(self) -> float | None:
        r"""Its estimated cost (:mod:`~mzattn.repro.engine.cost`), :obj:`None`
        when unknown: :obj:`--jobs N` starts the costliest first."""


Pick = Callable[[Sequence[Run]], int]
r"""Which of the queued runs starts next, by its index in the queue
(:func:`~mzattn.repro.engine.launch.first`,
:func:`~mzattn.repro.engine.backfill.backfill`)."""


class Progress:
    r"""Counts of cells by state: prints them each time they change, and a
    line with the wall time of each cell that ends."""
    STATES = ("done", "running", "failed", "queued")

    def __init__(self, label: str, cells: Sequence[Cell]) -> None:
        self.label = label
        self.state = {cell_key(cell): "queued" for cell in cells}
        self.started: dict[str, float] = {}
        self.shown = ""

    def set(self, cell: Cell, state: str) -> None:
        r"""Moves :obj:`cell` to :obj:`state` and prints the counts if they changed."""
        key = cell_key(cell)
        if state == "running":
            self.started.setdefault(key, time.perf_counter())
        self.state[key] = state
        counts = {s: sum(v == s for v in self.state.values()) for s in self.STATES}
        line = ", ".join(f"{n} {s}" for s, n in counts.items())
        if line != self.shown:
            self.shown = line
            say(f"{self.label}: {line} (of {len(self.state)})")

    def end(self, cell: Cell, status: str) -> None:
        r"""Prints how :obj:`cell` ended (a
        :class:`~mzattn.repro.engine.launch.CellRun` status) and its
        wall time, and counts it as done or failed."""
        seconds = time.perf_counter() - self.started.pop(cell_key(cell), time.perf_counter())
        say(f"{cell.table} {cell.cell_id}: {ENDINGS.get(status, status)} ({seconds:.0f} s)")
        self.set(cell, "failed" if status == "failed" else "done")


ENDINGS = {"skipped": "skipped (finished before)", "busy": "busy (another run holds its lock)"}


def cell_key(cell: Cell) -> str:
    r"""A cell's name across tables: :obj:`{table}/{cell_id}`."""
    return f"{cell.table}/{cell.cell_id}"


def say(text: str) -> None:
    r"""Prints a line of the dispatcher."""
    print(f"[mzattn-repro] {text}", flush=True)
