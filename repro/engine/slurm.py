r"""Cells on SLURM through :obj:`submitit`: one job array per table, polled
until every cell has ended (:obj:`mzattn-repro TABLE --launcher slurm`).

A cell that reaches its time limit or is preempted gets :obj:`SIGUSR2`
from SLURM. Whatever the cell is doing then, it stops as a table run stops
on SIGTERM (:mod:`~mzattn.repro.core.faults`: between two training steps with a
checkpoint, or at once before training, never inside a write), and only
then does :obj:`submitit` requeue it (:class:`CellJob` is
:class:`~submitit.helpers.Checkpointable`); the requeued cell resumes from
its last complete :obj:`last.ckpt`. Scheduler errors are recorded per cell
in plain words (:func:`slurm_reason`).

The outcome of a cell is read from its own JSON record, never from
:obj:`submitit`'s result pickles: the :obj:`slurm/` folder travels with
the results, and unpickling a file from it could run code.
"""
import os.path as osp
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from typing import Any

import submitit
from mzattn.repro.core.faults import Interrupted, stop_on_signals
from mzattn.repro.training.layout import table_dir

from .options import SlurmOptions
from .runs import Progress, Run, say

REASONS = {
    "TIMEOUT": "SLURM stopped it at its time limit ({time} min, --slurm-time) and it could "
               "not be requeued again",
    "OUT_OF_MEMORY": "SLURM killed it for using more memory than it asked for "
                     "(--slurm-mem-gb {mem})",
    "CANCELLED": "it was cancelled (scancel, or an administrator)",
    "NODE_FAIL": "its node failed",
    "BOOT_FAIL": "its node failed to boot",
    "DEADLINE": "it reached its deadline before it could run",
    "FAILED": "its job exited with an error",
}
r"""SLURM job states → the plain-words reason a cell failed."""


class CellJob(submitit.helpers.Checkpointable):
    r"""A :class:`~mzattn.repro.engine.runs.Run` (a table's
    :class:`~mzattn.repro.engine.launch.CellRun`) as a SLURM array task: requeued
    with the same arguments on time-out or preemption (the cell's
    :obj:`last.ckpt` holds its progress).

    :obj:`submitit` requeues a job from its signal handler, wherever the
    job is. Here the preemption signal first stops the cell like SIGTERM
    (:func:`~mzattn.repro.core.faults.stop_on_signals`), and :obj:`submitit`'s
    handler runs once the cell has stopped, outside every write."""

    def __init__(self, run: Run) -> None:
        self.run = run

    def __call__(self) -> str:
        preemption = submitit.JobEnvironment._usr_sig()  # SIGUSR2 unless SUBMITIT_PREEMPT_SIGNAL
        requeue = signal.getsignal(preemption)  # submitit's checkpoint-and-requeue handler
        try:
            with stop_on_signals(extra=(preemption,)):
                return self.run()
        except Interrupted as stop:
            if stop.signum != preemption or not callable(requeue):
                raise
            print(f"[mzattn-repro] {stop}; the job is requeued", file=sys.stderr, flush=True)
        try:
            requeue(preemption, None)  # checkpoints this job, `scontrol requeue`, exits
        except subprocess.CalledProcessError as error:
            if error.returncode >= 0:
                raise
            # SLURM ends the job step as soon as it requeues the job, and `scontrol requeue`,
            # a process of that step, can end with it before it has exited
            name = signal.Signals(-error.returncode).name
            print(f"[mzattn-repro] `scontrol requeue` ended by {name} with the job step: the "
                  "job is being requeued", file=sys.stderr, flush=True)
            sys.exit(-1)  # as submitit exits after a requeue
        raise RuntimeError("submitit did not requeue the preempted job")


def slurm_reason(state: str, options: SlurmOptions, log: str | None = None) -> str:
    r"""Plain words for a cell whose job ended in SLURM state :obj:`state`
    (e.g. :obj:`"OUT_OF_MEMORY"`, :obj:`"CANCELLED by 0"`) without a result."""
    key = state.split()[0].upper() if state else "UNKNOWN"
    text = REASONS.get(key, f"SLURM ended it without a result (state {state or 'unknown'})")
    text = text.format(time=options.time_min, mem=options.mem_gb)
    return f"{text}; log: {log}" if log else text


def executor(folder: str, options: SlurmOptions, name: str) -> submitit.SlurmExecutor:
    r"""A :class:`submitit.SlurmExecutor` writing its files under
    :obj:`folder`, asking for :obj:`options` per array task."""
    if shutil.which("sbatch") is None:
        raise RuntimeError("'sbatch' was not found: SLURM is not installed on this machine "
                           "or not on its PATH")
    ex = submitit.SlurmExecutor(folder=folder)
    params = {"job_name": name, "time": options.time_min, "cpus_per_task": options.cpus,
              "array_parallelism": options.parallelism, "partition": options.partition,
              "account": options.account, "qos": options.qos,
              "gpus_per_node": options.gpus or None,
              "mem": f"{options.mem_gb}GB" if options.mem_gb else None}
    ex.update_parameters(**{k: v for k, v in params.items() if v is not None})
    return ex


def submit_table(runs: Sequence[Run], slurm: SlurmOptions) -> list[submitit.Job]:
    r"""Submits :obj:`runs` (of one table) as one job array; raises
    :class:`RuntimeError` with the scheduler's words if it refuses them."""
    table = runs[0].cell.table
    ex = executor(osp.join(table_dir(runs[0].out, table), "slurm"), slurm, f"mzattn-{table}")
    jobs = [CellJob(run) for run in runs]
    try:
        return ex.submit_array(jobs)
    except (submitit.core.utils.FailedJobError, subprocess.SubprocessError, OSError) as error:
        raise RuntimeError(f"sbatch refused the job array: {_last_line(str(error))}") from error


def _last_line(text: str) -> str:
    lines = [line.strip() for line in text.strip().splitlines() if line.strip()]
    return lines[-1] if lines else "no message"


def queue_states(jobs: Sequence[submitit.Job]) -> dict[str, str]:
    r"""SLURM state of every queued or running array task of :obj:`jobs`,
    by job id (e.g. :obj:`"12_3"`), from :obj:`squeue`."""
    arrays = sorted({job.job_id.split("_")[0] for job in jobs})
    result = subprocess.run(["squeue", "-h", "-r", "-o", "%i|%T", "-j", ",".join(arrays)],
                            capture_output=True, text=True, timeout=60)
    pairs = (line.split("|", 1) for line in result.stdout.splitlines() if "|" in line)
    return {job_id.strip(): state.strip() for job_id, state in pairs}


def _outcome(run: Run, job: submitit.Job, slurm: SlurmOptions) -> tuple[str, str | None]:
    # (status, reason) of an ended job, from the run's own files (never submitit's pickles);
    # reason is None when the run recorded how it ended
    status = run.outcome()
    if status is not None:
        return status, None
    if job.paths.result_pickle.exists():  # the job ended by itself, without a record
        return "failed", f"its job raised: {_last_line(_tail(job.paths.stderr))}; " \
                         f"log: {job.paths.stderr}"
    return "failed", slurm_reason(job.state, slurm, str(job.paths.stderr))


def _tail(path: Any, size: int = 4096) -> str:
    # the end of a text file, "" when it cannot be read
    try:
        with open(path, "rb") as f:
            f.seek(max(0, osp.getsize(path) - size))
            return f.read().decode("utf-8", "replace")
    except OSError:
        return ""


def _state(job: submitit.Job, queued: dict[str, str], missing: dict[str, int]) -> str:
    if job.paths.result_pickle.exists():
        return "ended"
    if job.job_id in queued:
        missing.pop(job.job_id, None)
        return "queued" if queued[job.job_id] in ("PENDING", "REQUEUED") else "running"
    missing[job.job_id] = missing.get(job.job_id, 0) + 1
    return "ended" if missing[job.job_id] > 2 else "running"  # left the queue: let it settle


def run_on_slurm(runs: Sequence[Run], slurm: SlurmOptions,
                 on_done: Callable[[Any, str], None]) -> None:
    r"""Submits one job array per table of :obj:`runs` (task :obj:`i` of
    an array is the table's :obj:`i`-th run, so SLURM starts them in their
    order) and polls them until every run has ended, printing progress and
    calling :obj:`on_done(run.cell, status)` for each."""
    progress = Progress("slurm", [run.cell for run in runs])
    pending: dict[str, tuple[Run, submitit.Job]] = {}
    for table in dict.fromkeys(run.cell.table for run in runs):
        group = [run for run in runs if run.cell.table == table]
        try:
            jobs = submit_table(group, slurm)
        except RuntimeError as error:
            for run in group:
                run.fail(str(error))
                progress.end(run.cell, "failed")
                on_done(run.cell, "failed")
            continue
        say(f"{table}: submitted job array {jobs[0].job_id.split('_')[0]} "
            f"({len(jobs)} tasks)")
        pending |= {job.job_id: (run, job) for run, job in zip(group, jobs, strict=True)}
    missing: dict[str, int] = {}
    while pending:
        queued = queue_states([job for _, job in pending.values()])
        for job_id, (run, job) in list(pending.items()):
            state = _state(job, queued, missing)
            if state != "ended":
                progress.set(run.cell, state)
                continue
            status, reason = _outcome(run, job, slurm)
            if reason is not None:
                status = run.fail(reason)
            del pending[job_id]
            progress.end(run.cell, status)
            on_done(run.cell, status)
        if pending:
            time.sleep(slurm.poll_s)
