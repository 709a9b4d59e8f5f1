r"""The progress of a list of cells and the time they have left
(:obj:`mzattn-repro campaign NAME --status`).

Each cell gets a state, its epochs, its epoch time and the hours of one core
left at its epoch cap (an upper bound: early stopping ends most runs
sooner). A cell that has epochs is timed on its last ones. A cell not
started is timed, in this order of trust:

1. on the epochs that its run under another seed logged (the same table,
   row, column and batching, in the same list): the same model on the same
   split sizes, on this machine, validation and the optimiser included;
2. else by one training step on one thread
   (:func:`~mzattn.repro.engine.cost.training_cost`, marked :obj:`≈`),
   which leaves out validation, the optimiser, Lightning and the share of
   a core the run gets, and so runs below the epochs. Where a cell has both
   estimates, the ratio of the first to the second is measured; the last
   line gives its median, the factor by which to read the probed hours.

Epochs logged before (on another machine, which a fresh clone's logs and
records come from, or under another load) may run at another pace here. The
cells whose epochs ran here (they run now, or resume from their own
checkpoint) measure it: the median, over those with other seeds logged
before, of their last epochs' time over those seeds' median epoch
(:meth:`Plan.pace`). Every time logged before is read at that pace: the
other seeds' epochs (unless some ran here), and the log or park of a cell
that does not resume here. Until a cell has run here, there is no pace to
apply: the first cells a run starts are timed as logged.
"""
import csv
import io
import os.path as osp
import statistics
from collections import defaultdict
from dataclasses import dataclass
from typing import NamedTuple

from mzattn.repro.core.registry import load_spec
from mzattn.repro.training.cells import RunOptions, cell_config, peek_record
from mzattn.repro.training.layout import (
    Cell,
    cell_path,
    checkpoint_dir,
    lock_path,
    log_path,
    parked_dir,
)
from mzattn.repro.training.parking import checkpoint_history, parked_history
from mzattn.repro.training.twins import find_twin, run_of

from .launch import CellRun
from .parks_branch import HeldParks
from .runs import cell_key, say

HEADER = ["| table | cell | state | epochs | s/epoch | left at cap (h) | convergence |",
          "| --- | --- | --- | --- | --- | --- | --- |"]


@dataclass
class CellProgress:
    r"""Where one cell stands: :obj:`epoch_s` is its median epoch time
    over its last five epochs (:obj:`None` without epochs), :obj:`left_h` the
    hours left at the cap measured on them (0 for a cell done or taken by
    a twin, :obj:`None` for one not started, as logged: see :obj:`here`),
    :obj:`epoch_times` all its logged epoch times, and :obj:`here` whether
    they ran here: it resumes from its own checkpoint and is not done (else
    they come from a log or park of before, whose pace may differ)."""
    cell: Cell
    state: str
    epochs: int
    cap: int
    epoch_s: float | None
    left_h: float | None
    convergence: str
    epoch_times: list[float]
    here: bool


class Logged(NamedTuple):
    r"""The epochs one seed of a run logged: its :obj:`seed`, its median
    epoch :obj:`epoch_s` and whether they ran :obj:`here`."""
    seed: int
    epoch_s: float
    here: bool


class Pace(NamedTuple):
    r""":meth:`Plan.pace`: epochs here take :obj:`factor` times those
    logged before, the median over :obj:`cells` cells."""
    factor: float
    cells: int


@dataclass
class Estimate:
    r"""The hours left at the cap of a cell not started: :obj:`from_seeds`
    on :obj:`epoch_s`, the median epoch of the seeds :obj:`seeds` of its
    run (:obj:`None` when none has logged an epoch; those that ran here if
    any, else those of before, their hours times :obj:`pace`, or
    :obj:`None` when none applies), and :obj:`probed` from one timed
    training step (:obj:`None` where the step cannot be timed without the
    data: a real dataset)."""
    from_seeds: float | None
    seeds: tuple[int, ...]
    epoch_s: float | None
    probed: float | None
    pace: Pace | None = None


class Plan:
    r"""Where each of :obj:`cells` stands (:class:`CellProgress`, read once,
    as the list stood then) and the hours it has left at its cap
    (:meth:`hours_left`): measured on its own epochs, else on those its run
    logged under its other seeds in the list, else probed
    (:obj:`options` as the run's, e.g. with stored activations), each probe
    when first asked for. A cell with the run of a cell above it in another
    table (:mod:`~mzattn.repro.training.twins`) costs nothing: it takes that
    cell's record. A cell whose only checkpoint is parked
    (:mod:`~mzattn.repro.training.parking`, a fresh clone), in the work tree
    or on the parks branch (:mod:`.parks_branch`, read, not restored), is
    :obj:`parked`, its epochs those its park keeps. Hours from epochs
    logged before are read at this machine's :meth:`pace`."""

    def __init__(self, cells: list[Cell], out: str, profile: str,
                 options: RunOptions | None = None) -> None:
        held = HeldParks.of(out)  # listed once
        firsts: dict[tuple[str, str], Cell] = {}  # the first cell of the list with each run
        self.cells = [_progress(out, cell, profile, held, firsts) for cell in cells]
        self._by_key = {cell_key(progress.cell): progress for progress in self.cells}
        self._logged: dict[tuple, list[Logged]] = defaultdict(list)
        for progress in self.cells:
            if progress.epoch_times:
                self._logged[_seedless(progress.cell)].append(Logged(
                    progress.cell.seed, statistics.median(progress.epoch_times), progress.here))
        self.out, self.profile, self.options = out, profile, options
        self._pace = _pace(self.cells, self._logged)

    def progress(self, cell: Cell) -> CellProgress:
        r"""Where :obj:`cell`, one of the plan's, stands."""
        return self._by_key[cell_key(cell)]

    def pace(self) -> Pace | None:
        r"""How fast epochs run here against those logged before: the
        median, over the cells whose epochs ran here and whose run logged
        epochs under other seeds before, of their epoch time (:obj:`epoch_s`) over those
        seeds' median epoch (2.0: twice as slow); :obj:`None` when no cell
        has both."""
        return self._pace

    def estimate(self, progress: CellProgress) -> Estimate | None:
        r"""The estimate of a cell not started (:obj:`progress.left_h` is
        :obj:`None`), else :obj:`None`."""
        if progress.left_h is not None:
            return None
        return _estimate(progress, self._logged[_seedless(progress.cell)], self.out,
                         self.profile, self.options, pace=self._pace)

    def paced_left(self, progress: CellProgress) -> float | None:
        r"""The hours :obj:`progress.left_h` at this machine's pace: as they
        are for epochs that ran here (and for none left), times the
        :meth:`pace` for those of before."""
        left = progress.left_h
        if not left or progress.here or self._pace is None:
            return left
        return left * self._pace.factor

    def hours_left(self, cell: Cell) -> float | None:
        r"""The hours of one core :obj:`cell` has left at its cap, on the
        best of its estimates (probed only when it has no other), at this
        machine's pace; :obj:`None` when it has none (a real dataset's cell
        not started)."""
        progress = self.progress(cell)
        if progress.left_h is not None:
            return self.paced_left(progress)
        logged = self._logged[_seedless(cell)]
        seeds = _estimate(progress, logged, self.out, self.profile, self.options,
                          pace=self._pace, probe=False)
        return seeds.from_seeds if seeds.from_seeds is not None else \
            self.estimate(progress).probed


def status_lines(cells: list[Cell], out: str, profile: str,
                 options: RunOptions | None = None) -> list[str]:
    r"""One Markdown table row per cell of :obj:`cells` (state, epochs,
    epoch time, hours left at the cap, convergence: :class:`Plan`), then
    the totals: the hours measured on the cells' epochs, those estimated
    from other seeds' epochs, and those probed, with the measured ratio of
    the last two."""
    plan = Plan(cells, out, profile, options)
    lines, totals, ratios = list(HEADER), [0.0, 0.0, 0.0], []
    for progress in plan.cells:
        estimate = plan.estimate(progress)
        if estimate is not None:
            totals[1] += estimate.from_seeds or 0.0
            totals[2] += 0.0 if estimate.from_seeds is not None else estimate.probed or 0.0
            if estimate.from_seeds is not None and estimate.probed:
                ratios.append(estimate.from_seeds / estimate.probed)
        totals[0] += plan.paced_left(progress) or 0.0
        lines.append(_row(progress, estimate, plan))
    lines.append("\n" + _totals_line(*totals, ratios) + _pace_line(plan.pace()))
    return lines


def _progress(out: str, cell: Cell, profile: str, held: HeldParks,
              firsts: dict[tuple[str, str], Cell]) -> CellProgress:
    from mzattn.repro.report.convergence import convergence
    record, logged = peek_record(cell_path(out, cell)), _history(out, cell)
    resumable = (record or {}).get("status") == "ok" or osp.exists(
        osp.join(checkpoint_dir(out, cell), "last.ckpt"))
    parked = None if resumable else _parked_rows(out, cell, held)
    # the epochs it resumes from: its log's with its own checkpoint, else its park's (a fresh
    # clone's), else none, whatever a log left without a checkpoint says (it restarts); its
    # epoch time from its log, else its park
    rows = logged if resumable else parked or []
    spec = load_spec(cell.table)
    cap = spec.profile(profile).max_epochs
    times = [float(row["epoch_time_s"]) for row in logged or parked or []]
    # the median, not the mean: one epoch stalled (a suspended machine, a test run beside it)
    # must not make the cell look hours longer, which would keep the backfill from starting it
    epoch_s = statistics.median(times[-5:]) if times else None
    config, metric = cell_config(spec, cell, profile), spec.metric_of(cell.column.label)
    twin = _finished_twin(out, config, metric) if record is None else None
    first = firsts.setdefault((run_of(config), metric), cell)
    if record is not None and record.get("status") == "ok":
        state, left, conv = "done", 0.0, convergence(record).reason
    elif twin is not None:  # takes its twin's record when it runs
        state, left, conv = f"twin {twin} done", 0.0, ""
    elif first.table != cell.table and not _failed(out, first):  # the run of a cell above
        state, left, conv = f"twin of {first.table}/{first.cell_id}", 0.0, ""
    else:
        state = "running" if _held(out, cell) else (
            "failed" if record is not None else "parked" if parked is not None else "queued")
        left = None if epoch_s is None else epoch_s * (cap - len(rows)) / 3600
        restarts = not resumable and parked is None and times
        conv = f"restarts: its log's {len(times)} epochs have no checkpoint" if restarts else ""
    here = state != "done" and osp.exists(osp.join(checkpoint_dir(out, cell), "last.ckpt"))
    return CellProgress(cell, state, len(rows), cap, epoch_s, left, conv, times, here)


def _estimate(progress: CellProgress, logged: list[Logged], out: str, profile: str,
              options: RunOptions | None, *, pace: Pace | None,
              probe: bool = True) -> Estimate:
    # `logged`: the cell's run under the seeds that logged epochs; those that ran here if
    # any, else those of before at `pace`; without `probe`, the probe is left out (None)
    cell = progress.cell
    seeds = [one for one in logged if one.seed != cell.seed]
    seeds = [one for one in seeds if one.here] or seeds
    epoch_s = statistics.median(one.epoch_s for one in seeds) if seeds else None
    paced = pace if seeds and not seeds[0].here else None
    hours = None if epoch_s is None else \
        epoch_s * progress.cap / 3600 * (paced.factor if paced else 1.0)
    probed = CellRun(cell, profile, out, options or RunOptions()).cost() if probe else None
    return Estimate(from_seeds=hours, seeds=tuple(one.seed for one in seeds), epoch_s=epoch_s,
                    probed=None if probed is None else probed / 3600, pace=paced)


def _pace(cells: list[CellProgress], logged: dict[tuple, list[Logged]]) -> Pace | None:
    ratios = []
    for progress in cells:
        before = [one.epoch_s for one in logged[_seedless(progress.cell)]
                  if not one.here and one.seed != progress.cell.seed]
        if progress.here and progress.epoch_s and before:
            ratios.append(progress.epoch_s / statistics.median(before))
    return Pace(statistics.median(ratios), len(ratios)) if ratios else None


def _seedless(cell: Cell) -> tuple[str, str, str, str]:
    # the same model on the same task, split sizes and batching: one cell over its seeds
    return cell.table, cell.row.label, cell.column.label, cell.batching


def _row(progress: CellProgress, estimate: Estimate | None, plan: Plan) -> str:
    cell, epoch_s, left = progress.cell, progress.epoch_s, plan.paced_left(progress)
    shown = "—" if left is None else f"{left:.2f}"
    if left != progress.left_h:  # logged before, at this machine's pace
        shown += f" (× {plan.pace().factor:.2f})"
    if estimate is not None and estimate.from_seeds is not None:
        seeds = ", ".join(f"s{seed}" for seed in estimate.seeds)
        paced = "" if estimate.pace is None else f", × {estimate.pace.factor:.2f}"
        epoch_s, shown = estimate.epoch_s, f"{estimate.from_seeds:.2f} (as {seeds}{paced})"
    elif estimate is not None and estimate.probed is not None:
        shown = f"≈ {estimate.probed:.2f}"
    return (f"| {cell.table} | {cell.cell_id} | {progress.state} | "
            f"{progress.epochs}/{progress.cap} | {'—' if epoch_s is None else f'{epoch_s:.1f}'} "
            f"| {shown} | {progress.convergence} |")


def _totals_line(measured: float, from_seeds: float, probed: float, ratios: list[float]) -> str:
    line = (f"Time left at the cap: {measured:.1f} h of one core measured on the cells' last "
            f"epochs, {from_seeds:.1f} h for the cells not started from the epochs of their "
            f"other seeds (the median epoch of each), ≈ {probed:.1f} h more estimated for the "
            "others (the CPU time of one training step on one thread, scaled; validation not "
            "counted)")
    if not ratios:
        return line + "."
    factor = statistics.median(ratios)
    return (line + f": the cells that have both estimates ran at {factor:.1f}× the probe "
            f"(median of {len(ratios)}), which would make these ≈ {factor * probed:.1f} h.")


def _pace_line(pace: Pace | None) -> str:
    if pace is None:
        return ""
    return (f" Epochs here run at {pace.factor:.2f}× those logged before (median of "
            f"{pace.cells} cells that ran here against their other seeds): the hours from "
            "epochs of before are read at that pace.")


def _history(out: str, cell: Cell) -> list[dict[str, str]]:
    # the rows of the cell's CSV log; none, and a line that says why, when a row has no epoch
    # time (a log that something other than the run edited): a plan goes on past it
    path = log_path(out, cell)
    if not osp.exists(path):
        return []
    with open(path, newline="") as f:
        rows = list(csv.DictReader(f))
    for line, row in enumerate(rows, start=2):  # line 1 is the header
        try:
            float(row.get("epoch_time_s") or "")
        except ValueError:
            say(f"{path}, line {line}: epoch_time_s {row.get('epoch_time_s')!r} is not a "
                "number: the cell's epochs are not counted")
            return []
    return rows


def _parked_rows(out: str, cell: Cell, held: HeldParks | None) -> list[dict] | None:
    # the learning curve of the cell's park, in the work tree or else on the parks branch (a
    # fresh clone's, read, not restored); None when it has none
    if osp.exists(osp.join(parked_dir(out, cell), "last.ckpt")):
        return parked_history(out, cell)
    data = None if held is None else held.park(out, cell).get("last.ckpt")
    return None if data is None else checkpoint_history(io.BytesIO(data))


def _held(out: str, cell: Cell) -> bool:
    from filelock import FileLock, Timeout
    path = lock_path(out, cell)
    if not osp.exists(path):
        return False
    try:
        with FileLock(path, timeout=0):
            return False
    except Timeout:
        return True


def _failed(out: str, cell: Cell) -> bool:
    record = peek_record(cell_path(out, cell))
    return record is not None and record.get("status") != "ok"


def _finished_twin(out: str, config: dict, metric: str) -> str | None:
    # the file of the finished twin whose record the cell will take (twins.py), if any
    twin = find_twin(out, config, metric, peek_record)
    return None if twin is None else osp.relpath(twin[0], out)
