r"""What a run survives (:obj:`docs/faults.md`): every file is written
atomically in its own folder, a full disk stops the run with one message,
unreadable files are set aside under a new name, and SIGTERM / SIGINT (and
a SLURM task's preemption signal) stop the run between two writes (while a
cell trains, between two training steps: :func:`hold_signals`).

A stop is a :class:`RunStopped` (a :class:`BaseException`, so that no
``except Exception`` on the way records it as a failed cell); the table
runner turns it into a message and an exit status.
"""
import contextlib
import errno
import os.path as osp
import signal
import threading
from collections.abc import Callable, Iterator, Sequence
from typing import IO

from mzattn.datasets._io import atomic_write as _atomic_write
from mzattn.datasets._io import set_aside  # noqa: F401 (the harness imports it from here)

EXIT_NO_SPACE = 1
r"""Exit status of a run stopped by a full disk."""


class RunStopped(BaseException):
    r"""The run must stop now: no record is written for the current cell,
    its checkpoints are kept, and the same command resumes it.

    Args:
        message (str): What happened and how to resume.
        exit_status (int): Status of the process.
    """
    def __init__(self, message: str, exit_status: int) -> None:
        super().__init__(message)
        self.message, self.exit_status = message, exit_status

    def __str__(self) -> str:
        return self.message


class Interrupted(RunStopped):
    r"""SIGTERM or SIGINT arrived (exit status :obj:`128 + signum`, 143 or
    130).

    Args:
        signum (int): The signal.
    """
    def __init__(self, signum: int, message: str | None = None) -> None:
        name = signal.Signals(signum).name
        super().__init__(message or f"stopped by {name}", 128 + signum)
        self.signum = signum

    def during(self, what: str) -> "Interrupted":
        r"""The same stop, its message naming :obj:`what` was interrupted."""
        name = signal.Signals(self.signum).name
        return Interrupted(self.signum, f"{name}: stopped {what}")


class NoSpace(RunStopped):
    r"""A write failed with ENOSPC: :obj:`"no space left on DIR"`.

    Args:
        folder (str): The folder that could not be written.
    """
    def __init__(self, folder: str) -> None:
        super().__init__(f"no space left on {folder}: nothing partial was kept; free some "
                         "space and rerun the same command to go on", EXIT_NO_SPACE)
        self.folder = folder


def is_no_space(error: BaseException) -> bool:
    r"""Whether :obj:`error` (or an exception it was raised from) is ENOSPC."""
    while error is not None:
        if isinstance(error, NoSpace) or (isinstance(error, OSError)
                                          and error.errno == errno.ENOSPC):
            return True
        error = error.__cause__ or error.__context__
    return False


def no_space(error: BaseException, folder: str) -> NoSpace:
    r"""The :class:`NoSpace` stop of an ENOSPC :obj:`error`, naming the
    folder of the file it names (else :obj:`folder`)."""
    while error is not None and not isinstance(error, NoSpace):
        name = getattr(error, "filename", None)
        if isinstance(error, OSError) and error.errno == errno.ENOSPC and name:
            return NoSpace(osp.dirname(osp.abspath(name)))
        error = error.__cause__ or error.__context__
    return error if isinstance(error, NoSpace) else NoSpace(folder)


def atomic_write(path: str, write: Callable[[IO], None], binary: bool = False) -> None:
    r"""Writes :obj:`path` through :obj:`write(file)` on a temporary file in
    the same folder, then :func:`os.replace`
    (:func:`mzattn.datasets._io.atomic_write`), so that readers and the
    next run never see a partial file; ENOSPC becomes :class:`NoSpace`."""
    try:
        _atomic_write(path, write, "wb" if binary else "w")
    except OSError as error:
        if is_no_space(error):
            raise no_space(error, osp.dirname(osp.abspath(path))) from None
        raise


def atomic_write_text(text: str, path: str) -> None:
    r"""Writes :obj:`text` to :obj:`path` atomically (:func:`atomic_write`)."""
    atomic_write(path, lambda f: f.write(text))


STOP_SIGNALS = (signal.SIGTERM, signal.SIGINT)
r"""The signals that stop a run in every :func:`stop_on_signals` block."""


class _Hold:
    r"""The signal state of the main thread's innermost :func:`stop_on_signals`
    block: its handler and signals, whether a signal is held
    (:func:`hold_signals`), and the signal that is stopping the run."""
    handler: Callable | None = None
    signals: tuple[int, ...] = STOP_SIGNALS
    active: bool = False
    pending: int | None = None
    received: int | None = None


@contextlib.contextmanager
def stop_on_signals(extra: Sequence[int] = ()) -> Iterator[None]:
    r"""Within the block, SIGTERM, SIGINT, the signals of the enclosing
    block and :obj:`extra` (a SLURM task adds its preemption signal:
    :class:`~mzattn.repro.engine.slurm.CellJob`) raise :class:`Interrupted` where
    the main thread is (once: a second signal while stopping is ignored),
    unless :func:`hold_signals` holds them. Outside the main thread the
    block runs unchanged."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    stopping = []

    def handler(signum: int, frame) -> None:
        if stopping:
            return
        _Hold.received = signum
        if _Hold.active and _Hold.pending is None:
            _Hold.pending = signum  # acted on between two steps; a second signal stops now
            return
        stopping.append(signum)
        raise Interrupted(signum)

    outer = (_Hold.handler, _Hold.signals, _Hold.received)
    signals = tuple(dict.fromkeys((*STOP_SIGNALS, *_Hold.signals, *extra)))
    _Hold.handler, _Hold.signals, _Hold.received = handler, signals, None
    previous = {s: signal.signal(s, handler) for s in signals}
    try:
        yield
    finally:
        release_signals()
        _Hold.handler, _Hold.signals, _Hold.received = outer
        for signum, old in previous.items():
            signal.signal(signum, old)


def stop_signal() -> int | None:
    r"""The signal that is stopping the run, if one arrived in the
    innermost :func:`stop_on_signals` block (raised or held): an error
    raised after it, say by a write it broke off, is the stop, not a
    failure of the cell."""
    return _Hold.received


def hold_signals() -> bool:
    r"""Holds the stop signals inside a :func:`stop_on_signals` block until
    :func:`release_signals`: the first one is only recorded
    (:func:`pending_signal`), so that the run stops where its caller decides
    (between two training steps); a second one stops the run at once.

    The block's handler is installed again, over any installed since
    (Lightning's own SIGTERM handler, which would stop training without a
    checkpoint). Returns :obj:`False`, holding nothing, outside such a
    block or the main thread."""
    if _Hold.handler is None or threading.current_thread() is not threading.main_thread():
        return False
    _Hold.active, _Hold.pending = True, None
    for signum in _Hold.signals:
        signal.signal(signum, _Hold.handler)
    return True


def pending_signal() -> int | None:
    r"""The signal held since :func:`hold_signals`, if any."""
    return _Hold.pending if _Hold.active else None


def release_signals() -> int | None:
    r"""Ends :func:`hold_signals`; returns the signal held meanwhile, if any
    (the caller stops the run for it)."""
    pending = pending_signal()
    _Hold.active, _Hold.pending = False, None
    return pending
