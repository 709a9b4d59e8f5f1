import argparse
import json
import os
import signal
import threading
import time
from dataclasses import dataclass, replace

import pytest
from mzattn.repro.core.faults import Interrupted
from mzattn.repro.core.registry import load_spec
from mzattn.repro.engine.launch import (
    CellRun,
    GroupRun,
    default_threads,
    gpu_slots,
    in_process,
    launch,
    outcome,
    record_failure,
    run_in_process,
    run_in_processes,
    visible_devices,
)
from mzattn.repro.engine.options import (
    LaunchOptions,
    SlurmOptions,
    add_launch_arguments,
    launch_options_from_args,
)
from mzattn.repro.engine.runner import grid, main
from mzattn.repro.engine.runs import CellName, Progress, cell_key
from mzattn.repro.training.cells import read_record, write_json_atomic
from mzattn.repro.training.layout import cell_path

TABLE = "table10"


def _cells(models=("MZAttn (centers-only Q/K)",)):
    return grid(load_spec(TABLE), "smoke", list(models))


@dataclass(frozen=True)
class _Dies(CellRun):
    r"""A cell whose worker is killed (as by the out-of-memory killer)."""

    def __call__(self) -> str:
        os.kill(os.getpid(), signal.SIGKILL)
        return "ok"


@dataclass(frozen=True)
class _Sleeps(CellRun):
    def __call__(self) -> str:
        time.sleep(600)
        return "ok"


@dataclass(frozen=True)
class _Fails(CellRun):
    def __call__(self) -> str:
        return "failed"


@dataclass(frozen=True)
class _Pid(CellRun):
    r"""A cell that writes the pid of the process that ran it to
    :obj:`{out}/{cell_id}.pid`."""

    def __call__(self) -> str:
        with open(os.path.join(self.out, f"{self.cell.cell_id}.pid"), "w") as f:
            f.write(str(os.getpid()))
        return "ok"


def _pid(out, cell):
    with open(os.path.join(out, f"{cell.cell_id}.pid")) as f:
        return int(f.read())


@pytest.mark.parametrize("jobs,per_gpu,gpus,expected", [
    (3, 1, 0, [None, None, None]),
    (4, 2, 2, ["0", "0", "1", "1"]),
    (5, 2, 2, ["0", "0", "1", "1", "0"]),
    (2, 1, 4, ["0", "1"]),
])
def test_gpu_slots(monkeypatch, jobs, per_gpu, gpus, expected):
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
    assert gpu_slots(jobs, per_gpu, visible_devices(gpus)) == expected


def test_gpu_slots_keep_the_devices_a_scheduler_gave(monkeypatch):
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "2, GPU-5f1e")
    assert gpu_slots(3, 1, visible_devices(2)) == ["2", "GPU-5f1e", "2"]


def test_default_threads_split_the_cpus():
    cpus = len(os.sched_getaffinity(0))
    assert default_threads(1) == cpus
    assert default_threads(2 * cpus) == 1


def test_in_process_only_for_one_local_job(options):
    assert in_process(LaunchOptions(jobs=1), options)
    assert in_process(LaunchOptions(jobs=0), options)  # no GPU: one job
    assert not in_process(LaunchOptions(jobs=2), options)
    assert not in_process(LaunchOptions(launcher="slurm", jobs=1), options)


def test_launch_options_from_args():
    parser = argparse.ArgumentParser()
    add_launch_arguments(parser)
    parser.add_argument("--threads", type=int)
    args = parser.parse_args(["--launcher", "slurm", "--slurm-partition", "gpu",
                              "--slurm-time", "90", "--slurm-gpus", "1", "--slurm-mem-gb", "8",
                              "--slurm-array-parallelism", "10", "--slurm-qos", "low"])
    got = launch_options_from_args(args)
    assert got.launcher == "slurm" and got.jobs == 0 and got.threads is None
    assert got.slurm == SlurmOptions(partition="gpu", time_min=90, gpus=1, mem_gb=8.0,
                                     qos="low", parallelism=10)
    with pytest.raises(SystemExit):  # a usage error (tests/repro/engine/test_options.py)
        parser.parse_args(["--cells-per-gpu", "0"])


def test_outcome_drops_timings():
    record = {"status": "ok", "wall_time_s": 3.0, "finished_at": "now",
              "history": [{"epoch": 1, "epoch_time_s": 1.0, "val_loss": 0.5}]}
    assert outcome(record) == {"status": "ok", "history": [{"epoch": 1, "val_loss": 0.5}]}


def test_progress_prints_when_counts_change(capsys):
    first, second = _cells(("MZAttn (centers-only Q/K)", "MZ-GenQK (gen info in Q/K)"))[:2]
    progress = Progress("cells", [first, second])
    progress.set(first, "running")
    progress.set(first, "running")
    progress.end(first, "ok")
    lines = capsys.readouterr().out.splitlines()
    assert lines == ["[mzattn-repro] cells: 0 done, 1 running, 0 failed, 1 queued (of 2)",
                     f"[mzattn-repro] {TABLE} {first.cell_id}: ok (0 s)",
                     "[mzattn-repro] cells: 1 done, 0 running, 0 failed, 1 queued (of 2)"]


def test_record_failure_keeps_a_finished_cell(tmp_path):
    cell, out = _cells()[0], str(tmp_path)
    record = record_failure(cell, "smoke", out, "its node failed")
    assert read_record(cell_path(out, cell)) == json.loads(json.dumps(record))
    assert record["status"] == "failed" and record["error"] == "its node failed"
    write_json_atomic(record | {"status": "ok", "profile": "smoke", "metrics": {}},
                      cell_path(out, cell))
    assert record_failure(cell, "smoke", out, "again")["status"] == "ok"
    write_json_atomic({"status": "ok"}, cell_path(out, cell))  # foreign: replaced
    assert record_failure(cell, "smoke", out, "again")["status"] == "failed"


def test_a_killed_worker_fails_its_cell_only(tmp_path, options, capsys):
    killed, failed = _cells()
    out, done = str(tmp_path), {}
    runs = [_Dies(killed, "smoke", out, options), _Fails(failed, "smoke", out, options)]
    run_in_processes(runs, [None, None], lambda cell, status: done.update({cell_key(cell): status}))
    assert done == {cell_key(killed): "failed", cell_key(failed): "failed"}
    assert "killed by SIGKILL" in read_record(cell_path(out, killed))["error"]
    assert read_record(cell_path(out, failed)) is None  # a cell writes its own record
    assert f"{TABLE} {killed.cell_id}: failed: its worker process was killed by SIGKILL" \
        in capsys.readouterr().out


def test_sigterm_is_passed_on_to_the_workers(tmp_path, options):
    runs = [_Sleeps(cell, "smoke", str(tmp_path), options) for cell in _cells()]
    threading.Timer(2.0, os.kill, (os.getpid(), signal.SIGTERM)).start()
    start = time.monotonic()
    with pytest.raises(Interrupted):
        run_in_processes(runs, [None, None], lambda cell, status: None)
    assert time.monotonic() - start < 300  # the workers ended long before their 600 s


def test_a_pool_worker_runs_many_cells(tmp_path, options):
    cells = _cells(("MZAttn (centers-only Q/K)", "MZ-GenQK (gen info in Q/K)"))
    out, done = str(tmp_path), {}
    runs = [_Pid(cell, "smoke", out, options) for cell in cells]
    run_in_processes(runs, [None], lambda cell, status: done.update({cell_key(cell): status}))
    assert done == {cell_key(cell): "ok" for cell in cells} and len(cells) >= 3
    pids = {_pid(out, cell) for cell in cells}
    assert len(pids) == 1 and os.getpid() not in pids  # one worker, not this process


def test_a_killed_worker_is_replaced_and_the_rest_finish(tmp_path, options, capsys):
    killed, *rest = _cells(("MZAttn (centers-only Q/K)", "MZ-GenQK (gen info in Q/K)"))
    out, done = str(tmp_path), {}
    runs = [_Dies(killed, "smoke", out, options)] + [_Pid(c, "smoke", out, options) for c in rest]
    run_in_processes(runs, [None], lambda cell, status: done.update({cell_key(cell): status}))
    assert done == {cell_key(killed): "failed"} | {cell_key(cell): "ok" for cell in rest}
    assert "killed by SIGKILL" in read_record(cell_path(out, killed))["error"]
    assert len({_pid(out, cell) for cell in rest}) == 1  # the fresh worker ran them all


def test_two_jobs_give_the_cells_of_one(tmp_path, options):
    cells = _cells()
    one, two = str(tmp_path / "one"), str(tmp_path / "two")
    assert set(launch(cells, "smoke", one, options, LaunchOptions(jobs=1, threads=1)).values()) \
        == {"ok"}
    statuses = launch(cells, "smoke", two, options, LaunchOptions(jobs=2, threads=1))
    assert statuses == {cell_key(cell): "ok" for cell in cells}
    for cell in cells:
        assert outcome(read_record(cell_path(two, cell))) == \
            outcome(read_record(cell_path(one, cell)))
    assert os.path.exists(os.path.join(two, TABLE, "report.md"))
    again = launch(cells, "smoke", two, options, LaunchOptions(jobs=2, threads=1))
    assert set(again.values()) == {"skipped"}  # no worker process, no rerun


def _seed_cells():
    # two seeds of one cell (a row on a column)
    cells = grid(load_spec(TABLE), "smoke", ["MZAttn (centers-only Q/K)"], seeds=[0, 1])
    return [cell for cell in cells if cell.column == cells[0].column]


def test_a_group_run_is_named_by_its_seeds(options):
    cells = _seed_cells()
    padded = [replace(cell, batching="padded") for cell in cells]
    assert GroupRun(tuple(cells), "smoke", "out", options).cell == \
        CellName(TABLE, cells[0].cell_id.replace("__s0", "__s0+1"))
    assert GroupRun(tuple(padded), "smoke", "out", options).cell.cell_id.endswith(
        "__s0+1__padded")


def test_seeds_together_on_two_workers_give_the_groups_of_one_process(tmp_path, options):
    grouped = replace(options, seeds_together=True)
    cells = _seed_cells()
    one, two = str(tmp_path / "one"), str(tmp_path / "two")
    launch(cells, "smoke", one, grouped, LaunchOptions(jobs=1, threads=1))
    statuses = launch(cells, "smoke", two, grouped, LaunchOptions(jobs=2, threads=1))
    assert statuses == {cell_key(cell): "ok" for cell in cells}  # one per seed
    for cell in cells:
        alone, pooled = (read_record(cell_path(out, cell)) for out in (one, two))
        assert pooled["seeds_together"] == 2 and pooled["trained_with"] == "stacked"
        assert pooled["metrics"] == pytest.approx(alone["metrics"], rel=1e-6)
    again = launch(cells, "smoke", two, grouped, LaunchOptions(jobs=2, threads=1))
    assert again == {cell_key(cell): "skipped" for cell in cells}


@dataclass(frozen=True)
class _GroupDies(GroupRun):
    def __call__(self) -> str:
        os.kill(os.getpid(), signal.SIGKILL)
        return "ok"


def test_a_killed_group_fails_each_of_its_seeds(tmp_path, options):
    cells, out, done = _seed_cells(), str(tmp_path), {}
    group = _GroupDies(tuple(cells), "smoke", out, options)
    run_in_processes([group], [None], lambda cell, status: done.update({cell_key(cell): status}))
    assert done == {cell_key(group.cell): "failed"}
    for cell in cells:
        assert "killed by SIGKILL" in read_record(cell_path(out, cell))["error"]


def test_the_table_command_runs_seed_groups_on_workers(tmp_path, capsys, options):
    cell = _seed_cells()[0]
    status = main(load_spec(TABLE), [
        "--profile", "smoke", "--device", "cpu", "--no-progress", "--out", str(tmp_path),
        "--models", cell.row.label, "--columns", cell.column.label, "--seeds", "0,1",
        "--seeds-together", "--jobs", "2", "--threads", "1"])
    assert status == 0
    assert f"{TABLE} {GroupRun(tuple(_seed_cells()), 'smoke', '', options).cell.cell_id}: ok" \
        in capsys.readouterr().out
    for cell in _seed_cells():
        assert read_record(cell_path(str(tmp_path), cell))["seeds_together"] == 2


@dataclass(frozen=True)
class _Runs(CellRun):
    r"""A cell that does nothing."""

    def __call__(self) -> str:
        return "ok"


def test_the_next_cell_is_the_one_pick_chooses(tmp_path, options):
    cells = _cells(("MZAttn (centers-only Q/K)", "MZ-GenQK (gen info in Q/K)"))
    last = lambda queue: len(queue) - 1  # noqa: E731
    for run_all in (run_in_process, lambda runs, on_done, pick: run_in_processes(
            runs, [None], on_done, pick=pick)):
        done: list = []
        run_all([_Runs(cell, "smoke", str(tmp_path), options) for cell in cells],
                lambda cell, status, done=done: done.append(cell), pick=last)
        assert done == cells[::-1]
