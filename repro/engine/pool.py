r"""A pool of long-lived worker processes, one per slot, for
:obj:`--jobs N` (:mod:`.launch`).

Each worker is started once (:obj:`spawn`), pinned to its slot's GPU
(:obj:`CUDA_VISIBLE_DEVICES`, set before CUDA starts) and its torch thread
count, imports torch, PyG, Lightning and the harness once, and then runs
one job after another: a picklable callable (a
:class:`~mzattn.repro.engine.launch.CellRun`) received over a pipe, whose status
string goes back over the same pipe. A cell thus pays the imports once per
slot, not once per cell.

A worker that dies (killed, out of memory) is reported with its exit code
and the job it was running; the next job of its slot gets a fresh worker.
SIGTERM / SIGINT to a worker while it runs a job stop that job as a table
run does (:mod:`mzattn.repro.core.faults`): the worker prints why and exits with
:obj:`128 + signum`.

A worker lives in its own process group, so that a terminal's Ctrl-C
reaches the dispatcher only, which passes it on once
(:meth:`WorkerPool.stop`); and it gets SIGTERM when the dispatcher ends,
even by SIGKILL (:func:`mzattn.lifetime.die_with_parent`), so that no
worker goes on training under PID 1.
"""
import contextlib
import gc
import multiprocessing as mp
import os
import signal
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from multiprocessing.connection import Connection, wait
from typing import Any

from mzattn.repro.core.faults import RunStopped, stop_on_signals

from mzattn.lifetime import die_with_parent

WARM_MODULES = ("torch", "torch_geometric", "lightning.pytorch", "mzattn.baselines",
                "mzattn.repro.training.cells", "mzattn.repro.core.registry")
r"""What a worker imports when it starts, before its first job."""

STOP_GRACE_S = 60.0
r"""Seconds :meth:`WorkerPool.stop` waits for the workers to stop their
cells (end the training step, write the checkpoint) before it kills them."""


def pin(gpu: str | None, threads: int | None) -> None:
    r"""Pins this process to GPU :obj:`gpu`, an entry of
    :obj:`CUDA_VISIBLE_DEVICES` (it sees that one only; call before CUDA
    starts) and :obj:`threads` torch threads; :obj:`None`
    leaves either as it is."""
    if gpu is not None:
        os.environ["CUDA_VISIBLE_DEVICES"] = gpu
    if threads is not None:
        import torch
        torch.set_num_threads(threads)


def _serve(conn: Connection, gpu: str | None, threads: int | None, parent: int) -> None:
    # The main function of a worker: pinned and warmed once, then one job per message until
    # None. A stop (SIGTERM / SIGINT, a full disk) ends the worker with its exit status; a
    # job's stop says which cell stopped and how to resume it. The dispatcher's end (pid
    # parent) is such a stop.
    os.setpgid(0, 0)  # terminal signals reach the dispatcher only, which passes them on once
    try:
        with stop_on_signals():
            die_with_parent(parent)
            pin(gpu, threads)
            for name in WARM_MODULES:
                __import__(name)
            while (job := conn.recv()) is not None:
                try:
                    status = job()
                except RunStopped as stop:
                    _ignore_signals()
                    print(f"[mzattn-repro] {stop}", file=sys.stderr, flush=True)
                    raise
                conn.send(status)
                _release_memory()
    except RunStopped as stop:
        _ignore_signals()
        sys.exit(stop.exit_status)
    except EOFError:  # the dispatcher is gone: nothing left to run
        return


def _ignore_signals() -> None:
    # A second SIGTERM / SIGINT (the terminal's and the dispatcher's) while a worker ends.
    for signum in (signal.SIGTERM, signal.SIGINT):
        signal.signal(signum, signal.SIG_IGN)


def _release_memory() -> None:
    # What a finished job left behind, so that cells sharing a GPU keep their room.
    gc.collect()
    torch = sys.modules["torch"]
    if torch.cuda.is_initialized():
        torch.cuda.empty_cache()


@dataclass(frozen=True)
class Ended:
    r"""A job that ended on slot :obj:`slot`: its :obj:`status` (what the
    job returned), or :obj:`None` and the :obj:`exit_code` of its worker
    when the worker died first (negative: killed by signal
    :obj:`-exit_code`)."""
    slot: int
    job: Any
    status: str | None
    exit_code: int | None = None


class _Worker:
    def __init__(self, context: Any, gpu: str | None, threads: int | None, name: str) -> None:
        self.conn, child = context.Pipe()
        self.process = context.Process(target=_serve, args=(child, gpu, threads, os.getpid()),
                                       name=name)
        self.process.start()
        child.close()
        self.job: Any = None


class WorkerPool:
    r"""Long-lived worker processes, one per slot (module docstring).

    Args:
        slots (Sequence[str | None]): The GPU of each slot (:obj:`None`:
            no GPU), as :func:`~mzattn.repro.engine.launch.gpu_slots` gives them.
        threads (int, optional): Torch threads of every worker; torch's
            default if :obj:`None`. (default: :obj:`None`)
        context (str, optional): The :mod:`multiprocessing` start method.
            (default: :obj:`"spawn"`, a clean process that may use CUDA)
    """
    def __init__(self, slots: Sequence[str | None], threads: int | None = None,
                 context: str = "spawn") -> None:
        self.slots = list(slots)
        self.threads = threads
        self.context = mp.get_context(context)
        self.workers: list[_Worker | None] = [None] * len(self.slots)

    def start(self, count: int | None = None) -> None:
        r"""Starts the workers of the first :obj:`count` slots (all if
        :obj:`None`) that have none, so that they warm up together."""
        for slot in range(len(self.slots) if count is None else min(count, len(self.slots))):
            self._worker(slot)

    def idle(self) -> list[int]:
        r"""The slots without a job, in order."""
        return [slot for slot, worker in enumerate(self.workers)
                if worker is None or worker.job is None]

    def running(self) -> int:
        r"""How many jobs run now."""
        return len(self.slots) - len(self.idle())

    def submit(self, slot: int, job: Callable[[], str]) -> None:
        r"""Sends :obj:`job` to the worker of the idle :obj:`slot`, started
        first if the slot has none."""
        worker = self._worker(slot)
        worker.job = job
        with contextlib.suppress(OSError):  # it died just now: wait() reports it
            worker.conn.send(job)

    def wait(self, timeout: float | None = None) -> list[Ended]:
        r"""Waits up to :obj:`timeout` seconds (forever if :obj:`None`) for
        running jobs to end and returns those that did."""
        busy = {slot: w for slot, w in enumerate(self.workers) if w is not None and w.job}
        ready = set(wait([w.conn for w in busy.values()]
                         + [w.process.sentinel for w in busy.values()], timeout))
        ended = []
        for slot, worker in busy.items():
            if worker.conn in ready or worker.process.sentinel in ready:
                ended.append(self._collect(slot, worker))
        return ended

    def _collect(self, slot: int, worker: _Worker) -> Ended:
        job, worker.job = worker.job, None
        with contextlib.suppress(EOFError, OSError):  # no status: the worker died
            if worker.conn.poll():
                return Ended(slot, job, worker.conn.recv())
        worker.process.join()
        worker.conn.close()
        self.workers[slot] = None
        return Ended(slot, job, None, worker.process.exitcode)

    def stop(self, signum: int, grace_s: float = STOP_GRACE_S) -> None:
        r"""Sends :obj:`signum` to every live worker (a running job stops as
        a table run does and keeps its checkpoints), waits up to
        :obj:`grace_s` seconds for them to end, and kills (SIGKILL) those
        that have not, saying so."""
        live = self._live()
        for worker in live:
            with contextlib.suppress(OSError):  # it ended meanwhile
                os.kill(worker.process.pid, signum)
        deadline = time.monotonic() + grace_s
        for worker in live:
            worker.process.join(max(0.0, deadline - time.monotonic()))
        for worker in self._live():
            print(f"[mzattn-repro] {worker.process.name} did not stop within {grace_s:.0f} s "
                  "of the signal: killed; its cell resumes from its last checkpoint",
                  file=sys.stderr, flush=True)
            worker.process.kill()
        self._join(live)

    def close(self, timeout: float = 60.0) -> None:
        r"""Asks every worker to exit once its job (if any) has ended, waits
        up to :obj:`timeout` seconds, then stops those still alive with
        SIGTERM (:meth:`stop`)."""
        for worker in self._live():
            with contextlib.suppress(OSError):
                worker.conn.send(None)
        for worker in self._live():
            worker.process.join(timeout)
        self.stop(signal.SIGTERM)

    def _live(self) -> list[_Worker]:
        return [w for w in self.workers if w is not None and w.process.is_alive()]

    def _join(self, workers: list[_Worker]) -> None:
        for worker in workers:
            worker.process.join()
        for worker in self.workers:
            if worker is not None:
                worker.conn.close()
        self.workers = [None] * len(self.slots)

    def _worker(self, slot: int) -> _Worker:
        worker = self.workers[slot]
        if worker is not None and worker.job is None and not worker.process.is_alive():
            worker.conn.close()  # it died idle: a fresh one takes the next job
            worker.process.join()
            self.workers[slot] = None
        if self.workers[slot] is None:
            self.workers[slot] = _Worker(self.context, self.slots[slot], self.threads,
                                         f"mzattn-worker-{slot}")
        return self.workers[slot]

