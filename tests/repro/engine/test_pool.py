import functools
import os
import signal
import time

from mzattn.repro.engine.pool import WorkerPool


def _pinning() -> str:
    import torch
    return f"{os.environ.get('CUDA_VISIBLE_DEVICES')} {torch.get_num_threads()} {os.getpid()}"


def _killed() -> str:
    os.kill(os.getpid(), signal.SIGKILL)
    return "ok"


def test_a_worker_is_pinned_and_runs_jobs_until_closed():
    pool = WorkerPool(["3"], threads=1)  # GPU 3: only its CUDA_VISIBLE_DEVICES, no CUDA here
    statuses = []
    for _ in range(2):
        pool.submit(0, _pinning)
        [ended] = pool.wait()
        assert ended.slot == 0 and ended.job is _pinning and ended.exit_code is None
        statuses.append(ended.status)
    process = pool.workers[0].process
    pool.close()
    gpu, threads, pid = statuses[0].split()
    assert statuses[0] == statuses[1] and (gpu, threads) == ("3", "1")
    assert int(pid) == process.pid != os.getpid()
    assert process.exitcode == 0 and pool.workers == [None]


def test_a_dead_worker_is_reported_and_replaced():
    pool = WorkerPool([None], threads=1)
    pool.submit(0, _killed)
    [ended] = pool.wait()
    assert ended.status is None and ended.exit_code == -signal.SIGKILL
    pool.submit(0, _pinning)
    [ended] = pool.wait()
    pool.close()
    assert ended.status.split()[:2] == ["None", "1"]


def _deaf(started: str) -> str:
    # a job that ignores SIGTERM (a worker stuck in one long step)
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    open(started, "w").close()
    time.sleep(600)
    return "ok"


def test_a_worker_that_does_not_stop_is_killed_after_the_grace(tmp_path, capsys):
    pool, started = WorkerPool([None], threads=1), tmp_path / "started"
    pool.submit(0, functools.partial(_deaf, str(started)))
    process, deadline = pool.workers[0].process, time.monotonic() + 120
    while not started.exists():
        assert time.monotonic() < deadline
        time.sleep(0.1)
    start = time.monotonic()
    pool.stop(signal.SIGTERM, grace_s=2)
    assert time.monotonic() - start < 30 and process.exitcode == -signal.SIGKILL
    err = capsys.readouterr().err
    assert "mzattn-worker-0 did not stop within 2 s of the signal: killed" in err
