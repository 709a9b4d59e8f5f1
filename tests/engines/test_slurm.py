r"""A smoke table through :obj:`--launcher slurm` on a real SLURM cluster
gives the cells and report of a local run (:obj:`make slurm-test` starts a
single-node cluster and runs this file; any cluster whose :obj:`sbatch` is
on the PATH will do)."""
import glob
import json
import os
import os.path as osp
import pickle
import re
import shutil
import subprocess
import sys
import time

import pytest
from mzattn.repro.engine.launch import outcome

pytestmark = [
    pytest.mark.slurm_engine,
    pytest.mark.skipif(shutil.which("sbatch") is None, reason="no sbatch: SLURM is not here"),
]

TABLE = "table10"
LOCAL = ("--threads", "1")
SLURM = ("--launcher", "slurm", "--slurm-cpus", "1", "--slurm-time", "30")


def _command(out: str, *extra: str) -> list[str]:
    return [sys.executable, "-m", "mzattn.repro", TABLE, "--profile", "smoke", "--device", "cpu",
            "--no-progress", "--out", out, *extra]


def _run(out: str, *extra: str) -> subprocess.CompletedProcess:
    result = subprocess.run(_command(out, *extra), capture_output=True, text=True, timeout=1800)
    print(result.stdout[-4000:], result.stderr[-4000:])
    return result


def _wait_for(pattern: str, timeout: float = 600) -> str:
    # the first path matching `pattern`, once there is one
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if paths := sorted(glob.glob(pattern)):
            return paths[0]
        time.sleep(1)
    raise TimeoutError(f"nothing matches {pattern}")


def _cell_paths(out: str) -> list[str]:
    return sorted(glob.glob(osp.join(out, TABLE, "cells", "*.json")))


def _cells(out: str) -> dict[str, dict]:
    return {osp.basename(p): outcome(json.load(open(p))) for p in _cell_paths(out)}


def _report(out: str) -> str:
    with open(osp.join(out, TABLE, "report.md")) as f:
        return re.sub(r"training time [0-9.]+ min", "training time T min", f.read())


def test_slurm_cells_and_report_equal_a_local_run(tmp_path):
    local, slurm = str(tmp_path / "local"), str(tmp_path / "slurm")
    assert _run(local, *LOCAL).returncode == 0
    result = _run(slurm, *SLURM)
    assert result.returncode == 0
    assert "submitted job array" in result.stdout
    assert re.search(r"slurm: 4 done, 0 running, 0 failed, 0 queued", result.stdout)
    cells = _cells(local)
    assert len(cells) == 4 and all(c["status"] == "ok" for c in cells.values())
    assert _cells(slurm) == cells
    assert _report(slurm) == _report(local)


def _array_order(out: str) -> list[str]:
    # the cells of the table's job array by task index, from submitit's pickles
    paths = glob.glob(osp.join(out, TABLE, "slurm", "*_*_submitted.pkl"))  # {job}_{task}_…
    cells = []
    for path in sorted(paths, key=lambda p: int(osp.basename(p).split("_")[1])):
        with open(path, "rb") as f:  # our own pickles, written by this test's run
            cells.append(pickle.load(f).function.run.cell.cell_id)
    return cells


def test_a_capped_array_starts_its_cells_in_index_order(tmp_path):
    # One task at a time (%1): SLURM runs them in index order, which the launcher made the
    # costliest first (tests/repro/engine/test_cost.py checks that order).
    out = str(tmp_path / "capped")
    assert _run(out, *SLURM, "--slurm-array-parallelism", "1").returncode == 0
    order = _array_order(out)
    assert len(order) == 4
    records = [json.load(open(path)) for path in _cell_paths(out)]
    finished = {record["cell_id"]: record["finished_at"] for record in records}
    assert sorted(order, key=finished.get) == order


def test_unknown_partition_fails_each_cell_in_plain_words(tmp_path):
    out = str(tmp_path / "bad")
    result = _run(out, *SLURM, "--slurm-partition", "no-such-partition", "--models",
                  "MZAttn (centers-only Q/K)")
    assert result.returncode == 1
    records = list(_cells(out).values())
    assert records and all(r["status"] == "failed" for r in records)
    assert all("sbatch refused the job array" in r["error"] and "partition" in r["error"]
               for r in records)


def _job_logs(out: str, kind: str = "*") -> str:
    # the job's logs: stdout (`out`: submitit's log, every level), stderr (`err`: ours, and
    # submitit's warnings again), or both
    return "".join(open(p, errors="replace").read()
                   for p in sorted(glob.glob(osp.join(out, TABLE, "slurm", f"*_log.{kind}"))))


def _wait_for_text(out: str, text: str, count: int = 1, timeout: float = 900) -> None:
    # until the job's logs hold `text` `count` times: a stage the cell says, a requeue
    deadline = time.monotonic() + timeout
    while _job_logs(out).count(text) < count:
        if time.monotonic() > deadline:
            raise TimeoutError(f"the job's logs never said {text!r} {count} times:\n"
                               f"{_job_logs(out)[-4000:]}")
        time.sleep(1)


def test_a_cell_preempted_at_every_stage_is_requeued_and_finishes(tmp_path):
    # One SLURM preemption (SIGUSR2, what submitit asks SLURM to send before a time limit, and
    # what `scancel --signal=USR2` sends) at each stage of a cell, in order: before its lock,
    # while its data and model are made, in training, inside a checkpoint's torch.save, and
    # while the best checkpoint is tested. Each run pauses at the next stage (MZATTN_PAUSE_AT,
    # repro/training/stages.py) and is preempted once its log says so: nothing depends on
    # timing. Each preemption goes through submitit's requeue; the last run finishes from the
    # checkpoints.
    out, stages = str(tmp_path / "preempted"), ("start", "data", "model", "training",
                                                "checkpoint", "test")
    env = os.environ | {"MZATTN_PAUSE_AT": ",".join(stages),
                        "MZATTN_PAUSE_DIR": str(tmp_path / "pauses")}
    process = subprocess.Popen(_command(out, *SLURM, "--models", "MZAttn (centers-only Q/K)",
                                        "--columns", "A"), stdout=subprocess.PIPE, text=True,
                               env=env)
    for count, stage in enumerate(stages, start=1):
        _wait_for_text(out, f"paused at {stage} ")
        job = osp.basename(glob.glob(osp.join(out, TABLE, "slurm", "*_0_log.err"))[0])
        job = job.split("_")[0]
        subprocess.run(["scancel", "--signal=USR2", job], check=True)
        _wait_for_text(out, "the job is requeued", count)  # the next stage is in the next run
    stdout, _ = process.communicate(timeout=1800)
    print(stdout[-4000:])
    assert process.returncode == 0
    assert _job_logs(out, "out").count("this job is preempted") == len(stages)
    logs = _job_logs(out)
    assert "Traceback" not in logs and "failed" not in logs
    [record] = _cells(out).values()
    assert record["status"] == "ok" and record["resumed"]


def test_a_seed_group_is_one_array_task_and_equals_a_local_group(tmp_path):
    # --seeds-together: the two seeds of a cell train as one group in one array task, and
    # give the records of the same group trained in this machine's process
    local, slurm = str(tmp_path / "local"), str(tmp_path / "slurm")
    group = ("--models", "MZAttn (centers-only Q/K)", "--columns", "A", "--seeds", "0,1",
             "--seeds-together")
    assert _run(local, *LOCAL, *group).returncode == 0
    result = _run(slurm, *SLURM, *group)
    assert result.returncode == 0
    assert re.search(r"submitted job array \d+ \(1 tasks\)", result.stdout)
    assert re.search(r"__s0\+1: ok", result.stdout)
    cells = _cells(local)
    assert len(cells) == 2 and all(c["seeds_together"] == 2 for c in cells.values())
    slurm_cells = _cells(slurm)
    for name, cell in cells.items():
        assert slurm_cells[name]["metrics"] == pytest.approx(cell["metrics"], rel=1e-6)
