import os
import signal

from mzattn.repro.pool import WorkerPool


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
