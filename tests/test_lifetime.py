import signal
import subprocess
import sys
import time

import pytest

from tests.processes import alive, needs_proc

CHILD = ("import os, signal, sys, time; from mzattn.lifetime import die_with_parent; "
         "die_with_parent(os.getppid(), signal.SIGTERM, watchdog={watchdog}); "
         "print(os.getpid(), flush=True); time.sleep(120)")
PARENT = ("import subprocess, sys; child = subprocess.Popen([sys.executable, '-c', {child!r}], "
          "stdout=subprocess.PIPE, text=True); print(child.stdout.readline().strip(), "
          "flush=True); child.wait()")


@needs_proc
@pytest.mark.parametrize("watchdog", [None, True])  # prctl on Linux; the polling fallback
def test_a_child_ends_when_its_parent_is_killed(watchdog):
    parent = subprocess.Popen(
        [sys.executable, "-c", PARENT.format(child=CHILD.format(watchdog=watchdog))],
        stdout=subprocess.PIPE, text=True)
    child = int(parent.stdout.readline())
    assert alive(child)
    parent.send_signal(signal.SIGKILL)  # no handler of the parent runs
    parent.wait()
    deadline = time.monotonic() + 5
    while alive(child) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not alive(child)
