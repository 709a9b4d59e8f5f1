r"""What the process-lifetime tests read of other processes, from
:obj:`/proc` (Linux): :func:`alive`, :func:`children`, :func:`cmdline`."""
import os.path as osp

import pytest

needs_proc = pytest.mark.skipif(not osp.isdir("/proc/self/task"), reason="reads /proc (Linux)")
r"""Marks a test that reads :obj:`/proc`."""


def alive(pid: int) -> bool:
    r"""Whether process :obj:`pid` runs: a zombie (ended, not yet reaped by
    whoever adopted it) does not."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def children(pid: int) -> list[int]:
    r"""The pids of the children of process :obj:`pid`."""
    with open(f"/proc/{pid}/task/{pid}/children") as f:
        return [int(child) for child in f.read().split()]


def cmdline(pid: int) -> str:
    r"""The command line of process :obj:`pid`, :obj:`""` once it ended."""
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            return f.read().replace(b"\0", b" ").decode()
    except OSError:
        return ""
