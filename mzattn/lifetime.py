r"""Child processes that end with their parent (:obj:`docs/faults.md`).

A worker of :obj:`mzattn-repro TABLE --jobs N` or of parallel data
generation must not go on training (and holding its cell's lock) under
PID 1 when the process that started it is killed, even by SIGKILL, which
runs no handler in the parent. A child calls :func:`die_with_parent` once
at its start:

* on Linux the kernel sends it a signal when its parent ends
  (:obj:`prctl(PR_SET_PDEATHSIG)`, through :mod:`ctypes`);
* elsewhere, or where :obj:`prctl` fails, a daemon thread
  (:func:`watch_parent`) polls the parent's pid and sends the signal
  itself.

Children forked while this process handles signals (data generation)
are forked inside :func:`blocked_signals`, so that none runs a handler of
its parent before it sets its own.

Import-light (no torch): data-generation workers call it too.
"""
import contextlib
import ctypes
import os
import signal
import sys
import threading
import time
from collections.abc import Iterator

PR_SET_PDEATHSIG = 1
r"""The :obj:`prctl` option that sets the parent-death signal (linux/prctl.h)."""

WATCH_INTERVAL_S = 1.0
r"""Seconds between two looks of :func:`watch_parent` at the parent's pid."""


def die_with_parent(parent: int, signum: int = signal.SIGTERM, *,
                    watchdog: bool | None = None) -> None:
    r"""Makes this process receive :obj:`signum` when its parent (pid
    :obj:`parent`, the process that started it) ends; at once if it ended
    already.

    The kernel's parent-death signal follows the parent *thread* that
    started this process: start such children from a thread that lives as
    long as they should (the main thread).

    Args:
        parent (int): The pid of the parent, as the parent gave it (a
            child started after its parent died sees another pid).
        signum (int, optional): The signal. (default: :obj:`SIGTERM`: a
            training worker stops its cell as a table run does)
        watchdog (bool, optional): Use the polling thread
            (:func:`watch_parent`) instead of :obj:`prctl`; :obj:`None`
            uses it only where :obj:`prctl` is not available.
            (default: :obj:`None`)
    """
    if watchdog or (watchdog is None and not _set_parent_death_signal(signum)):
        threading.Thread(target=watch_parent, args=(parent, signum), daemon=True,
                         name="mzattn-parent-watchdog").start()
    if os.getppid() != parent:  # it ended before the signal was set
        os.kill(os.getpid(), signum)


def watch_parent(parent: int, signum: int, interval_s: float = WATCH_INTERVAL_S) -> None:
    r"""Sends :obj:`signum` to this process once its parent's pid is no
    longer :obj:`parent` (the parent ended and this process was adopted),
    looking every :obj:`interval_s` seconds; the portable fallback of
    :func:`die_with_parent`."""
    while os.getppid() == parent:
        time.sleep(interval_s)
    os.kill(os.getpid(), signum)


@contextlib.contextmanager
def blocked_signals(*signums: int) -> Iterator[None]:
    r"""Within the block, :obj:`signums` sent to this process wait (they are
    not lost) until the block ends, and the processes it forks start with
    them blocked. Does nothing where :func:`signal.pthread_sigmask` is not
    available."""
    if not hasattr(signal, "pthread_sigmask"):
        yield
        return
    previous = signal.pthread_sigmask(signal.SIG_BLOCK, signums)
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, previous)


def _set_parent_death_signal(signum: int) -> bool:
    # prctl(PR_SET_PDEATHSIG, signum) on Linux; False where it is not available
    if not sys.platform.startswith("linux"):
        return False
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        return libc.prctl(PR_SET_PDEATHSIG, int(signum), 0, 0, 0) == 0
    except (OSError, AttributeError):
        return False
