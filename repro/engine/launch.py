r"""Dispatch of cells: one way to run a list of cells, the same for every
table, :obj:`mzattn-repro campaign` and the tests (DESIGN §10, Execution).

* :obj:`--launcher local --jobs 1` runs the cells one after another in this
  process (the historical behaviour).
* :obj:`--launcher local --jobs N` runs N cells at a time on a pool of N
  long-lived worker processes (:mod:`.pool`), with the CPU threads split
  between them; each worker imports the harness once and runs one cell
  after another, and the costliest cells start first (:mod:`.cost`). On
  a machine with GPUs each worker is pinned to one visible GPU and
  :obj:`--cells-per-gpu K` workers share one (the default :obj:`--jobs`
  is then GPUs × K).
* :obj:`--launcher slurm` submits the cells to SLURM through
  :obj:`submitit`, one job array per table (:mod:`.slurm`).

Tables and the campaign call :func:`launch`, the analysis studies'
trainings (:mod:`mzattn.repro.analysis.training`) the :func:`dispatch` underneath it:
both dispatch :class:`Run` objects the same way. For a table every path
calls :func:`~mzattn.repro.training.cells.run_cell` (:class:`CellRun`), or
with :obj:`--seeds-together` :func:`~mzattn.repro.training.together.run_seed_group`
for the seeds of a cell (:class:`GroupRun`), so a cell keeps its
semantics: one atomic JSON, finished cells skipped, a killed cell resumed
from its :obj:`last.ckpt`, a failed cell recorded while the others go on.
The dispatcher prints the progress (cells done / running / failed /
queued) as it changes and rebuilds a table's report once its cells end.
"""
import os
import os.path as osp
import signal
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import Any

from mzattn.repro.core.envinfo import environment_record
from mzattn.repro.core.faults import Interrupted, stop_on_signals
from mzattn.repro.training.cells import (
    RECORD_VERSION,
    RecordError,
    RunOptions,
    cell_config,
    is_finished,
    read_record,
    run_cell,
    write_json_atomic,
)
from mzattn.repro.training.layout import Cell, cell_path, parked_dir
from mzattn.repro.training.together import run_seed_group, seed_groups

from .cost import by_cost
from .options import LAUNCHERS, LaunchOptions
from .parks_branch import PARKS_BRANCH, restore_parks
from .pool import WorkerPool, pin
from .runs import CellName, Pick, Progress, Run, cell_key, say

TIMING_KEYS = ("wall_time_s", "finished_at", "epoch_time_s")
r"""Record fields that differ between two runs of the same cell."""


def outcome(record: dict[str, Any]) -> dict[str, Any]:
    r""":obj:`record` without its timings (:obj:`TIMING_KEYS`, also in its
    history): what every launcher must produce identically."""
    kept = {k: v for k, v in record.items() if k not in TIMING_KEYS}
    if "history" in kept:
        kept["history"] = [outcome(row) for row in kept["history"]]
    return kept


@dataclass(frozen=True)
class CellRun:
    r"""One cell to run (a :class:`Run`), picklable: calling it in any
    process runs :func:`~mzattn.repro.training.cells.run_cell` with :obj:`threads`
    torch threads on GPU :obj:`gpu` (if given) and returns the cell's
    status: :obj:`"ok"`, :obj:`"failed"`, :obj:`"skipped"` (finished
    before) or :obj:`"busy"` (another process holds it)."""
    cell: Cell
    profile: str
    out: str
    options: RunOptions
    threads: int | None = None
    gpu: str | None = None

    def __call__(self) -> str:
        from mzattn.repro.core.quiet import quiet_libraries
        from mzattn.repro.core.registry import load_spec
        quiet_libraries(self.options.progress)
        pin(self.gpu, self.threads)  # before CUDA starts: this process sees one GPU
        record = run_cell(load_spec(self.cell.table), self.cell, self.profile, self.out,
                          self.options)
        return "skipped" if record.get("skipped") else record["status"]

    def finished(self) -> bool:
        r"""Whether the cell's JSON holds a finished run of its configuration."""
        from mzattn.repro.core.registry import load_spec
        config = cell_config(load_spec(self.cell.table), self.cell, self.profile)
        return is_finished(readable_record(self.cell, self.out), config)

    def fail(self, reason: str) -> str:
        r"""Records the cell as failed for :obj:`reason`
        (:func:`record_failure`) and returns its status."""
        return record_failure(self.cell, self.profile, self.out, reason)["status"]

    def outcome(self) -> str | None:
        r""":obj:`"ok"` when the cell's JSON holds a finished run of its
        configuration, :obj:`"failed"` when it records a failure of it."""
        if self.finished():
            return "ok"
        record = readable_record(self.cell, self.out)
        failed = record is not None and record.get("status") == "failed"
        return "failed" if failed else None

    def cost(self) -> float | None:
        r"""Estimated seconds to train the cell to its epoch cap
        (:func:`~mzattn.repro.engine.cost.training_cost`)."""
        from mzattn.repro.core.registry import load_spec

        from .cost import training_cost
        config = cell_config(load_spec(self.cell.table), self.cell, self.profile)
        training = config["training"]
        return training_cost(model=config["model"], overrides=config["model_overrides"],
                             task=config["task"], task_overrides=config["task_overrides"],
                             max_epochs=training["max_epochs"],
                             store_activations=self.options.store_activations,
                             batching=self.cell.batching)


@dataclass(frozen=True)
class GroupRun:
    r"""The seeds :obj:`cells` of one cell (a row on a column) trained as
    one group (a :class:`Run`, picklable; :obj:`--seeds-together`): calling
    it in any process runs
    :func:`~mzattn.repro.training.together.run_seed_group` with
    :obj:`threads` torch threads on GPU :obj:`gpu` (if given) and returns
    the group's status: :obj:`"failed"` when a seed failed, else
    :obj:`"ok"` when one trained, else :obj:`"busy"` or :obj:`"skipped"`.
    The dispatcher names it :obj:`cell` in its progress lines;
    :func:`launch` reports each seed's own status (:meth:`member_status`)."""
    cells: tuple[Cell, ...]
    profile: str
    out: str
    options: RunOptions
    threads: int | None = None
    gpu: str | None = None

    @property
    def cell(self) -> CellName:
        r"""The group's name: its table, and its first seed's cell id with
        every seed, e.g. :obj:`Standard__d_8__s0+1+2`."""
        parts = self.cells[0].cell_id.split("__")  # row, column, s<seed>[, batching]
        parts[2] = "s" + "+".join(str(cell.seed) for cell in self.cells)
        return CellName(self.cells[0].table, "__".join(parts))

    def members(self) -> list[CellRun]:
        r"""The run of each seed alone (what the group's files are read with)."""
        return [CellRun(cell, self.profile, self.out, self.options, self.threads, self.gpu)
                for cell in self.cells]

    def __call__(self) -> str:
        from mzattn.repro.core.quiet import quiet_libraries
        from mzattn.repro.core.registry import load_spec
        quiet_libraries(self.options.progress)
        pin(self.gpu, self.threads)  # before CUDA starts: this process sees one GPU
        records = run_seed_group(load_spec(self.cells[0].table), self.cells, self.profile,
                                 self.out, self.options)
        statuses = {"skipped" if r.get("skipped") else r["status"] for r in records}
        return next(s for s in ("failed", "ok", "busy", "skipped") if s in statuses)

    def finished(self) -> bool:
        return all(member.finished() for member in self.members())

    def fail(self, reason: str) -> str:
        return "failed" if "failed" in [m.fail(reason) for m in self.members()] else "ok"

    def outcome(self) -> str | None:
        outcomes = {member.outcome() for member in self.members()}
        return "failed" if "failed" in outcomes else "ok" if outcomes == {"ok"} else None

    def cost(self) -> float | None:
        costs = [member.cost() for member in self.members()]
        return None if None in costs else sum(costs)

    def member_status(self, member: CellRun, status: str) -> str:
        r"""How the seed :obj:`member` ended when its group ended as
        :obj:`status`: skipped with a group finished before, else as its own
        record says (:meth:`CellRun.outcome`), else as the group did."""
        return status if status == "skipped" else member.outcome() or status


def record_failure(cell: Cell, profile: str, out: str, reason: str) -> dict[str, Any]:
    r"""Records :obj:`cell` as failed for :obj:`reason` (a scheduler error,
    a killed worker) unless its JSON already holds a finished run, prints
    the reason and returns the record."""
    from mzattn.repro.core.registry import load_spec
    previous = readable_record(cell, out)
    if previous is not None and previous.get("status") == "ok":
        return previous
    say(f"{cell.table} {cell.cell_id}: failed: {reason}")
    record = {"version": RECORD_VERSION, "profile": profile, "cell_id": cell.cell_id,
              "status": "failed", "config": cell_config(load_spec(cell.table), cell, profile),
              "error": reason} | environment_record()
    write_json_atomic(record, cell_path(out, cell))
    return record


def readable_record(cell: Cell, out: str) -> dict[str, Any] | None:
    r"""The record of :obj:`cell`, or :obj:`None` when it has none or an
    unreadable one (which :func:`~mzattn.repro.training.cells.run_cell` sets aside)."""
    try:
        return read_record(cell_path(out, cell))
    except RecordError:
        return None


def default_threads(jobs: int) -> int:
    r"""Torch threads of one of :obj:`jobs` cells running at once: this
    machine's CPUs (those this process may use) split evenly, at least one."""
    cpus = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    return max(1, (cpus or 1) // jobs)


def gpu_slots(jobs: int, cells_per_gpu: int, devices: Sequence[str]) -> list[str | None]:
    r"""The GPU of each of :obj:`jobs` local slots, as an entry of
    :obj:`CUDA_VISIBLE_DEVICES`: slot :obj:`i` uses :obj:`devices[i //
    cells_per_gpu]` (round robin past the last), or :obj:`None` for every
    slot when :obj:`devices` is empty."""
    if not devices:
        return [None] * jobs
    return [devices[(slot // cells_per_gpu) % len(devices)] for slot in range(jobs)]


def visible_devices(count: int) -> list[str]:
    r"""The :obj:`count` GPUs this process sees, each as the entry of
    :obj:`CUDA_VISIBLE_DEVICES` that names it to a child process: the
    entries already set (by a scheduler, say :obj:`"2,3"`), else
    :obj:`"0"` to :obj:`count - 1`."""
    given = [d.strip() for d in os.environ.get("CUDA_VISIBLE_DEVICES", "").split(",") if d.strip()]
    return given[:count] if len(given) >= count else [str(i) for i in range(count)]


def _visible_gpus(options: RunOptions) -> int:
    if options.accelerator == "cpu":
        return 0
    import torch
    return torch.cuda.device_count()


def _exit_reason(code: int) -> str:
    if code < 0:
        name = signal.Signals(-code).name
        hint = " (out of memory?)" if -code == signal.SIGKILL else ""
        return f"its worker process was killed by {name}{hint}"
    return f"its worker process exited with status {code}"


def first(queue: Sequence[Run]) -> int:
    r"""The run that starts next: the first queued."""
    return 0


def run_in_process(runs: Sequence[Run], on_done: Callable[[Any, str], None],
                   pick: Pick = first) -> None:
    r"""Runs :obj:`runs` one after another in this process, the queued run
    that :obj:`pick` chooses next."""
    queue = list(runs)
    progress = Progress("cells", [run.cell for run in queue])
    while queue:
        run = queue.pop(pick(queue))
        progress.set(run.cell, "running")
        status = run()
        progress.end(run.cell, status)
        on_done(run.cell, status)


def run_in_processes(runs: Sequence[Run], slots: Sequence[str | None],
                     on_done: Callable[[Any, str], None], threads: int | None = None,
                     pick: Pick = first) -> None:
    r"""Runs :obj:`runs` on a :class:`~mzattn.repro.engine.pool.WorkerPool`: one
    long-lived worker process per slot, pinned to the slot's GPU (if any)
    and to :obj:`threads` torch threads, which imports the harness once and
    runs one cell after another, the queued run that :obj:`pick` chooses
    next. A worker that dies (killed, out of
    memory) fails its cell only (:meth:`Run.fail`) and its slot gets a
    fresh worker. SIGTERM or SIGINT here is passed on to every worker,
    which stops its cell as a table run does
    (:mod:`~mzattn.repro.core.faults`), and raises
    :class:`~mzattn.repro.core.faults.Interrupted` once they have ended (a
    second signal meanwhile is ignored; a worker that does not stop within
    :obj:`~mzattn.repro.engine.pool.STOP_GRACE_S` is killed). The workers also
    end when this process is killed (SIGKILL included)."""
    queue = list(runs)
    progress = Progress("cells", [run.cell for run in queue])
    pool = WorkerPool(slots, threads)
    with stop_on_signals():
        try:
            pool.start(len(queue))  # the workers warm up together
            while queue or pool.running():
                for slot in pool.idle()[:len(queue)]:
                    run = replace(queue.pop(pick(queue)), gpu=pool.slots[slot])
                    pool.submit(slot, run)
                    progress.set(run.cell, "running")
                for ended in pool.wait():
                    status = ended.status if ended.status is not None else \
                        ended.job.fail(_exit_reason(ended.exit_code))
                    progress.end(ended.job.cell, status)
                    on_done(ended.job.cell, status)
            pool.close()
        except BaseException as stop:  # Interrupted, or an error here: stop the cells
            pool.stop(stop.signum if isinstance(stop, Interrupted) else signal.SIGTERM)
            raise


def in_process(launch_options: LaunchOptions, options: RunOptions) -> bool:
    r"""Whether :obj:`launch_options` run the cells in this process: the
    local launcher, one job, at most one GPU."""
    return launch_options.launcher == "local" and launch_options.jobs <= 1 \
        and (launch_options.jobs == 1 or _visible_gpus(options) <= 1)


def launch(cells: Sequence[Cell], profile: str, out: str, options: RunOptions | None = None,
           launch_options: LaunchOptions | None = None, *,
           report_each_cell: bool = False, keep_order: bool = False,
           after_cell: Callable[[Cell, str], None] | None = None,
           pick: Pick = first) -> dict[str, str]:
    r"""Runs :obj:`cells` as :obj:`launch_options` says (:func:`dispatch`;
    in their order if :obj:`keep_order`), rebuilds the report of each table
    once its last cell has ended (after each of its cells if
    :obj:`report_each_cell`), calls :obj:`after_cell(cell, status)` after
    that, and returns every cell's status by :func:`cell_key`
    (:class:`CellRun`). With :obj:`options.seeds_together` the unfinished
    seeds of each cell run as one :class:`GroupRun` (one worker, one SLURM
    array task), and each seed is reported on its own. Locally, a slot
    that frees starts the queued run that :obj:`pick` chooses
    (:mod:`.backfill`)."""
    options = options or RunOptions()
    launch_options = launch_options or LaunchOptions()
    for cell in restore_parks(out, cells):  # a fresh clone's, from the parks branch
        say(f"{cell.table} {cell.cell_id}: its park copied from the git branch "
            f"'{PARKS_BRANCH}' to {parked_dir(out, cell)}")
    statuses: dict[str, str] = {}
    left = {table: sum(c.table == table for c in cells) for table in {c.table for c in cells}}

    def on_done(cell: Cell, status: str) -> None:
        statuses[cell_key(cell)] = status
        left[cell.table] -= 1
        if left[cell.table] == 0 or (report_each_cell and status in ("ok", "failed")):
            _write_report(cell.table, out, cell.batching)
        if after_cell is not None:
            after_cell(cell, status)

    runs: list[Run] = [CellRun(cell, profile, out, options) for cell in cells]
    if options.seeds_together:
        todo = [run.cell for run in _unfinished(runs, on_done)]
        runs = _seed_groups(todo, profile, out, options)
    groups = {cell_key(run.cell): run for run in runs if isinstance(run, GroupRun)}

    def on_run_done(name: Cell | CellName, status: str) -> None:
        group = groups.get(cell_key(name))
        if group is None:
            on_done(name, status)
            return
        for member in group.members():
            on_done(member.cell, group.member_status(member, status))

    dispatch(runs, options, launch_options, on_run_done, keep_order=keep_order, pick=pick)
    return statuses


def _seed_groups(cells: Sequence[Cell], profile: str, out: str,
                 options: RunOptions) -> list[Run]:
    # one GroupRun per cell's seeds (a group that cannot train together trains them one
    # after another, and says why: run_seed_group); a lone seed is a CellRun
    return [GroupRun(tuple(group), profile, out, options) if len(group) > 1
            else CellRun(group[0], profile, out, options) for group in seed_groups(cells)]


def dispatch(runs: Sequence[Run], options: RunOptions, launch_options: LaunchOptions,
             on_done: Callable[[Any, str], None], *, keep_order: bool = False,
             pick: Pick = first) -> None:
    r"""Runs :obj:`runs` (:class:`Run`: table cells, analysis trainings)
    as :obj:`launch_options` says, on the devices of :obj:`options`, and
    calls :obj:`on_done(run.cell, status)` as each ends; those that
    finished before end at once as :obj:`"skipped"`. A pool of N workers
    starts the costliest runs first (:func:`~mzattn.repro.engine.cost.by_cost`)
    unless :obj:`keep_order` (a campaign's priorities), and so does a SLURM
    job array that holds more runs than its :obj:`--slurm-array-parallelism`
    (SLURM starts the waiting tasks of an array in index order). Locally,
    a slot that frees starts the queued run that :obj:`pick` chooses (the
    first by default); SLURM's own scheduler chooses for an array."""
    runs = _unfinished(runs, on_done)
    if launch_options.launcher == "slurm":
        try:
            from .slurm import run_on_slurm
        except ModuleNotFoundError as error:
            raise ValueError("'--launcher slurm' needs submitit: pip install "
                             "'mzattn[repro]'") from error
        slurm = launch_options.slurm  # the nodes see the results folder by its absolute path
        runs = _costliest_first(runs, slurm.parallelism, keep_order)
        run_on_slurm([replace(run, out=osp.abspath(run.out), threads=slurm.cpus)
                      for run in runs], slurm, on_done)
        return
    if launch_options.launcher != "local":
        raise ValueError(f"unknown launcher {launch_options.launcher!r}; "
                         f"choose from {', '.join(LAUNCHERS)}")
    if in_process(launch_options, options):
        run_in_process([replace(run, threads=launch_options.threads) for run in runs], on_done,
                       pick)
        return
    gpus = _visible_gpus(options)
    jobs = launch_options.jobs or max(1, gpus * launch_options.cells_per_gpu)
    threads = launch_options.threads or default_threads(jobs)
    slots = gpu_slots(jobs, launch_options.cells_per_gpu, visible_devices(gpus))
    runs = _costliest_first(runs, jobs, keep_order)
    run_in_processes([replace(run, threads=threads) for run in runs], slots, on_done, threads,
                     pick)


def _costliest_first(runs: list[Run], at_once: int, keep_order: bool) -> list[Run]:
    # When more runs wait than run at once, the costliest start first, so that no costly run
    # starts last and ends the sweep alone (longest-processing-time-first).
    if keep_order or len(runs) <= at_once:
        return runs
    return by_cost(runs)


def _unfinished(runs: Sequence[Run], on_done: Callable[[Any, str], None]) -> list[Run]:
    # finished runs end here as "skipped": no process, no array task
    todo = []
    for run in runs:
        if run.finished():
            on_done(run.cell, "skipped")
        else:
            todo.append(run)
    if len(todo) < len(runs):
        say(f"{len(runs) - len(todo)} of {len(runs)} cells finished before: skipped")
    return todo


def _write_report(table: str, out: str, batching: str) -> None:
    from mzattn.repro.core.registry import load_spec
    from mzattn.repro.report.report import write_report
    say(f"report: {write_report(load_spec(table), out, batching)}")
