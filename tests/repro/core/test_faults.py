import dataclasses
import errno
import glob
import importlib.util
import json
import os
import os.path as osp
import re
import signal
import subprocess
import sys
import time

import pytest
import torch
from mzattn.repro.core import faults
from mzattn.repro.core.faults import NoSpace, atomic_write_text
from mzattn.repro.core.spec import TableSpec
from mzattn.repro.engine.runner import EXIT_BUSY, exit_status, run_table
from mzattn.repro.engine.runner import main as run_main
from mzattn.repro.report.report import write_report
from mzattn.repro.training.cells import RecordError, read_record, run_cell, write_json_atomic
from mzattn.repro.training.checkpoints import safe_load
from mzattn.repro.training.layout import Cell, cell_path, checkpoint_dir, lock_path, log_path

from tests.processes import alive, children, cmdline, needs_proc

SCRIPT = osp.join(osp.dirname(__file__), "faulty_table.py")
_spec = importlib.util.spec_from_file_location("faulty_table", SCRIPT)
faulty_table = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(faulty_table)
SPEC = faulty_table.spec()


def _cell(column: str, spec: TableSpec = SPEC) -> Cell:
    col = next(c for c in spec.columns if c.label == column)
    return Cell("tiny", spec.rows[0], col, 0)


def _start(out: str, data_root: str, columns: str, *args: str, **env: str) -> subprocess.Popen:
    command = [sys.executable, SCRIPT, "--profile", "smoke", "--out", out, "--device", "cpu",
               "--no-progress", "--data-root", data_root, "--columns", columns, *args]
    return subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env={**os.environ, "OMP_NUM_THREADS": "1", **env})


def _epochs_logged(out: str, cell: Cell) -> int:
    try:
        with open(log_path(out, cell)) as f:
            return max(0, len(f.read().splitlines()) - 1)
    except FileNotFoundError:
        return 0


def _crafted_pickle(path: str, marker: str) -> None:
    # a checkpoint whose unpickling runs a command that creates :obj:`marker`
    class Exploit:
        def __reduce__(self):
            return os.system, (f"touch {marker}",)
    torch.save({"state_dict": {}, "x": Exploit()}, path)


# ------------------------------------------------------------------ signals
@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT])
def test_a_signal_stops_cleanly_and_the_cell_resumes(tmp_path, data_root, options, signum):
    out, slow = str(tmp_path), _cell("slow")
    proc = _start(out, data_root, "fast,slow")
    deadline = time.monotonic() + 240
    while _epochs_logged(out, slow) < 2 and proc.poll() is None:
        assert time.monotonic() < deadline, "the slow cell never trained two epochs"
        time.sleep(0.2)
    proc.send_signal(signum)
    stdout, stderr = proc.communicate(timeout=120)
    assert proc.returncode == 128 + signum, stderr
    name = signal.Signals(signum).name
    assert f"{name}: stopped cell Standard__slow__s0 of tiny" in stderr
    assert "rerun the same command to resume it from" in stderr
    assert "Traceback" not in stderr
    assert read_record(cell_path(out, slow)) is None  # no partial record
    assert read_record(cell_path(out, _cell("fast")))["status"] == "ok"
    assert "1 finished cells" in (tmp_path / "tiny" / "report.md").read_text()
    last = osp.join(checkpoint_dir(out, slow), "last.ckpt")
    # saved after a step in epoch E (0-based), or at the end of epoch E: one more epoch
    # after it is epoch E + 2 (1-based) in both cases
    cap = safe_load(last)["epoch"] + 2
    assert cap >= 3
    capped = faulty_table.spec(cap)
    record = run_cell(capped, _cell("slow", capped), "smoke", out, options)
    assert record["status"] == "ok" and record["resumed"] and record["epochs"] == cap
    assert [h["epoch"] for h in record["history"]] == list(range(1, cap + 1))


def _batches_done(checkpoint: dict) -> tuple[int, int]:
    # (epoch, batches of it trained) as Lightning's loops and our loader record them
    progress = checkpoint["loops"]["fit_loop"]["epoch_loop.batch_progress"]["total"]
    (position,) = checkpoint["loops"]["fit_loop"]["state_dict"]["combined_loader"]
    assert progress["processed"] == checkpoint["global_step"]
    return position["epoch"], position["batches_done"]


@pytest.fixture(scope="module")
def uninterrupted(tmp_path_factory, data_root) -> dict:
    r"""The record of the :obj:`slow` cell trained for 3 epochs without a stop."""
    out = str(tmp_path_factory.mktemp("uninterrupted"))
    proc = _start(out, data_root, "slow", FAULTY_EPOCHS="3")
    assert proc.wait(timeout=300) == 0, proc.communicate()[1]
    return read_record(cell_path(out, _cell("slow")))


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT])
def test_a_signal_mid_epoch_keeps_the_step_and_the_resumed_run_is_the_uninterrupted_one(
        tmp_path, data_root, uninterrupted, signum):
    slow, name = _cell("slow"), signal.Signals(signum).name
    out = str(tmp_path / "out")
    proc = _start(out, data_root, "slow", FAULTY_EPOCHS="3", FAULTY_SIGNAL=f"{name}@1:3")
    _, stderr = proc.communicate(timeout=300)
    assert proc.returncode == 128 + signum, stderr
    assert "Traceback" not in stderr and f"{name}: stopped cell Standard__slow__s0" in stderr
    last = osp.join(checkpoint_dir(out, slow), "last.ckpt")
    checkpoint = safe_load(last)
    # 8 batches an epoch: epoch 0, then batches 0-3 of epoch 1 (the step in progress kept)
    assert checkpoint["global_step"] == 8 + 4 and _batches_done(checkpoint) == (1, 4)
    assert _epochs_logged(out, slow) == 1 and read_record(cell_path(out, slow)) is None
    proc = _start(out, data_root, "slow", FAULTY_EPOCHS="3")
    _, stderr = proc.communicate(timeout=300)
    assert proc.returncode == 0, stderr
    assert "not resumable" not in stderr  # Lightning's warning for a loader that restarts
    resumed, expected = read_record(cell_path(out, slow)), uninterrupted
    assert resumed["resumed"] and resumed["epochs"] == expected["epochs"] == 3
    assert [h["epoch"] for h in resumed["history"]] == [1, 2, 3]
    for got, want in zip(resumed["history"], expected["history"], strict=True):
        for key in ("train_loss", "val_loss", "val_metric", "lr"):
            assert got[key] == pytest.approx(want[key], rel=1e-6, abs=1e-9), (key, got, want)
    assert resumed["metrics"] == pytest.approx(expected["metrics"], rel=1e-6, abs=1e-9)


def test_a_signal_in_the_epoch_where_early_stopping_fires_is_not_followed_by_another_epoch(
        tmp_path, data_root):
    # SIGINT takes the same path as SIGTERM (the tests above run both)
    signum = signal.SIGTERM
    stalls, name = _cell("stalls"), signal.Signals(signum).name
    out = str(tmp_path)
    # during the last step of epoch 1: held until the epoch's validation (where early stopping
    # fires) and its last.ckpt are done
    proc = _start(out, data_root, "stalls", FAULTY_SIGNAL=f"{name}@1:7")
    _, stderr = proc.communicate(timeout=300)
    assert proc.returncode == 128 + signum, stderr
    assert safe_load(osp.join(checkpoint_dir(out, stalls), "last.ckpt"))["epoch"] == 1
    assert read_record(cell_path(out, stalls)) is None
    proc = _start(out, data_root, "stalls")
    _, stderr = proc.communicate(timeout=300)
    assert proc.returncode == 0, stderr
    record = read_record(cell_path(out, stalls))
    assert record["resumed"] and record["stopped_early"] and record["epochs"] == 2
    assert [h["epoch"] for h in record["history"]] == [1, 2]


def test_stop_on_signals_restores_the_handlers():
    before = signal.getsignal(signal.SIGTERM)
    with pytest.raises(faults.Interrupted) as info, faults.stop_on_signals():
        os.kill(os.getpid(), signal.SIGTERM)
        time.sleep(5)
    assert info.value.exit_status == 143 and signal.getsignal(signal.SIGTERM) is before


# ------------------------------------------------------------ --jobs N
def _workers(pid: int) -> list[int]:
    # the pool workers (spawned children) of process pid
    return [child for child in children(pid) if "spawn_main" in cmdline(child)]


def _pooled_slow_cells(out: str, data_root: str) -> tuple[subprocess.Popen, list[int]]:
    # a --jobs 2 run of two slow cells, once both have trained an epoch, and its workers
    proc = _start(out, data_root, "slow", "--seeds", "0,1", "--jobs", "2")
    cells = [_cell("slow"), dataclasses.replace(_cell("slow"), seed=1)]
    deadline = time.monotonic() + 300
    while min(_epochs_logged(out, cell) for cell in cells) < 1:
        assert proc.poll() is None and time.monotonic() < deadline, proc.communicate()
        time.sleep(0.5)
    workers = _workers(proc.pid)
    assert len(workers) == 2
    return proc, workers


@needs_proc
def test_kill_9_of_a_pooled_run_ends_its_workers(tmp_path, data_root):
    out = str(tmp_path)
    proc, workers = _pooled_slow_cells(out, data_root)
    proc.kill()
    _, stderr = proc.communicate(timeout=60)  # EOF: the workers, which share the pipe, ended
    deadline = time.monotonic() + 10
    while any(map(alive, workers)) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert not any(map(alive, workers)), [cmdline(pid) for pid in workers]
    assert "Traceback" not in stderr, stderr
    for seed in (0, 1):  # each worker stopped its cell as a table run does
        assert f"SIGTERM: stopped cell Standard__slow__s{seed} of tiny" in stderr
        assert osp.exists(osp.join(out, "tiny", "ckpt", f"Standard__slow__s{seed}", "last.ckpt"))


@needs_proc
def test_sigterm_stops_a_pooled_run_cleanly(tmp_path, data_root):
    out = str(tmp_path)
    proc, workers = _pooled_slow_cells(out, data_root)
    start = time.monotonic()
    proc.send_signal(signal.SIGTERM)
    _, stderr = proc.communicate(timeout=120)
    assert proc.returncode == 143 and time.monotonic() - start < 60
    assert "Traceback" not in stderr and "Error" not in stderr, stderr
    assert not any(map(alive, workers))
    assert stderr.strip().endswith("[mzattn-repro] stopped by SIGTERM")
    for seed in (0, 1):
        assert f"SIGTERM: stopped cell Standard__slow__s{seed} of tiny" in stderr


def _hold_locks(out: str, cells: list[Cell]) -> subprocess.Popen:
    # another run: a live process that holds the locks of cells
    paths = [lock_path(out, cell) for cell in cells]
    for path in paths:
        os.makedirs(osp.dirname(path), exist_ok=True)
    holder = subprocess.Popen([sys.executable, "-c", (
        "import time; from filelock import FileLock; "
        f"locks = [FileLock(p) for p in {paths!r}]; [lock.acquire() for lock in locks]; "
        "print('held', flush=True); time.sleep(600)")], stdout=subprocess.PIPE, text=True)
    assert holder.stdout.readline().strip() == "held"
    return holder


@pytest.mark.parametrize("jobs", ["1", "2"])
def test_a_rerun_that_finds_its_cells_busy_does_not_exit_0(tmp_path, data_root, jobs):
    out = str(tmp_path)
    cells = [_cell("fast"), dataclasses.replace(_cell("fast"), seed=1)]
    holder = _hold_locks(out, cells)
    try:
        proc = _start(out, data_root, "fast", "--seeds", "0,1", "--jobs", jobs)
        _, stderr = proc.communicate(timeout=300)
    finally:
        holder.kill()
        holder.wait()
    assert proc.returncode == EXIT_BUSY, stderr
    busy = [line for line in stderr.splitlines() if "not run" in line]
    assert busy == ["[mzattn-repro] 2 of 2 cells not run: another run holds their locks "
                    "(tiny/Standard__fast__s0, tiny/Standard__fast__s1); wait for it to end, "
                    "or stop it, then rerun the same command"]
    assert all(read_record(cell_path(out, cell)) is None for cell in cells)


@pytest.mark.parametrize("statuses, code", [
    ({"t/a": "busy", "t/b": "skipped"}, EXIT_BUSY),  # trained nothing
    ({"t/a": "busy", "t/b": "ok"}, 0),  # trained b; a is the other run's
    ({"t/a": "busy", "t/b": "failed"}, 1),
    ({"t/a": "ok", "t/b": "skipped"}, 0),
])
def test_the_exit_status_of_a_run_with_busy_cells(capsys, statuses, code):
    assert exit_status(statuses) == code
    busy = "1 of 2 cells not run: another run holds their locks (t/a)"
    assert (busy in capsys.readouterr().err) == ("busy" in statuses.values())


# ------------------------------------------------------- two runs, one --out
def test_two_processes_on_one_out_run_each_cell_once(tmp_path, data_root):
    out = str(tmp_path)
    procs = [_start(out, data_root, "fast,c3,c4") for _ in range(2)]
    outputs = [proc.communicate(timeout=600) for proc in procs]
    for proc, (stdout, stderr) in zip(procs, outputs, strict=True):
        # 75: it trained nothing, the other held the cells it had not finished
        assert proc.returncode == 0 or (proc.returncode == EXIT_BUSY and ": ok" not in stdout
                                        and "cells not run" in stderr), stderr
    for column in ("fast", "c3", "c4"):
        record = read_record(cell_path(out, _cell(column)))
        assert record["status"] == "ok", record.get("traceback")
        trained = sum(f"{_cell(column).cell_id}: ok" in stdout for stdout, _ in outputs)
        assert trained == 1, [stdout for stdout, _ in outputs]  # the other skipped it
    assert not osp.exists(osp.join(out, "tiny", "ckpt"))


def test_the_lock_of_a_dead_owner_is_reclaimed(tmp_path, options):
    out, cell = str(tmp_path), _cell("fast")
    os.makedirs(osp.dirname(lock_path(out, cell)))
    holder = subprocess.Popen([sys.executable, "-c", (
        "import sys, time; from filelock import FileLock; "
        f"lock = FileLock({lock_path(out, cell)!r}); lock.acquire(); print('held', flush=True); "
        "time.sleep(600)")], stdout=subprocess.PIPE, text=True)
    assert holder.stdout.readline().strip() == "held"
    assert run_cell(SPEC, cell, "smoke", out, options)["status"] == "busy"
    holder.kill()  # kill -9: the OS releases its lock
    holder.wait()
    assert run_cell(SPEC, cell, "smoke", out, options)["status"] == "ok"


# ------------------------------------------------------ corrupt or foreign
def test_a_truncated_last_checkpoint_is_set_aside_and_the_cell_restarts(
        tmp_path, options, capsys):
    out, cell = str(tmp_path), _cell("fast")
    last = osp.join(checkpoint_dir(out, cell), "last.ckpt")
    os.makedirs(osp.dirname(last))
    with open(last, "wb") as f:
        f.write(b"PK\x03\x04 truncated by a full disk")
    record = run_cell(SPEC, cell, "smoke", out, options)
    assert record["status"] == "ok" and record["resumed"] is False
    stderr = capsys.readouterr().err
    assert f"{last}: not a loadable checkpoint" in stderr and "the cell restarts" in stderr


@pytest.mark.parametrize("text,problem", [
    ('{"status": "ok", "metr', "unreadable"),
    ("[1, 2]", "not a cell record (a JSON list)"),
    ('{"version": 0, "status": "ok", "cell_id": "x", "config": {}}', "record version 0"),
    ('{"version": 1, "status": "ok", "cell_id": "x", "profile": "smoke", '
     '"config": {"row": "Standard", "column": "fast"}}', "ok record without 'metrics'"),
    ('{"version": 1, "status": "failed", "cell_id": "x", "config": {"row": "Standard", '
     '"column": "fast", "batching": "pad"}}', "batching 'pad' is not one of masked, padded"),
])
def test_unusable_records_are_named_set_aside_and_rerun(tmp_path, options, capsys, text,
                                                        problem):
    out, cell = str(tmp_path), _cell("fast")
    path = cell_path(out, cell)
    os.makedirs(osp.dirname(path))
    with open(path, "w") as f:
        f.write(text)
    with pytest.raises(RecordError, match=re.escape(problem)) as info:
        read_record(path)
    assert path in str(info.value)
    write_report(SPEC, out)  # the report names it and goes on
    assert f"{path}: {problem}" in capsys.readouterr().err
    assert problem in (tmp_path / "tiny" / "report.md").read_text()
    records = run_table(SPEC, "smoke", columns=["fast"], out=out, options=options)
    assert [r["status"] for r in records] == ["ok"]
    (aside,) = glob.glob(f"{path}.unreadable-*")
    assert open(aside).read() == text and f"moved to {aside}" in capsys.readouterr().err
    report = (tmp_path / "tiny" / "report.md").read_text()
    assert "1 finished cells" in report and f"{aside}: set aside" in report


def test_report_command_goes_on_past_a_bad_record(tmp_path, capsys):
    from mzattn.repro.cli import main as cli
    bad = tmp_path / "table3" / "cells" / "x.json"
    bad.parent.mkdir(parents=True)
    bad.write_text('{"version": 1, "status": "ok", "con')
    assert cli(["report", "--out", str(tmp_path)]) == 0
    assert f"{bad}: unreadable" in capsys.readouterr().err


# ---------------------------------------------------------------- full disk
def _full_disk(monkeypatch):
    def no_space(fd):
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
    monkeypatch.setattr(os, "fsync", no_space)


def test_atomic_write_on_a_full_disk_leaves_nothing(tmp_path, monkeypatch):
    path = tmp_path / "a.json"
    write_json_atomic({"x": 1}, str(path))
    _full_disk(monkeypatch)
    with pytest.raises(NoSpace, match=f"no space left on {tmp_path}"):
        write_json_atomic({"x": 2}, str(path))
    with pytest.raises(NoSpace):
        atomic_write_text("text", str(tmp_path / "b.md"))
    assert os.listdir(tmp_path) == ["a.json"] and json.loads(path.read_text()) == {"x": 1}


def test_a_full_disk_stops_the_table_with_one_message(tmp_path, data_root, monkeypatch,
                                                      capsys):
    out = str(tmp_path / "out")
    argv = ["--profile", "smoke", "--out", out, "--device", "cpu", "--no-progress",
            "--data-root", data_root, "--columns", "fast,c3"]
    with monkeypatch.context() as patch:
        _full_disk(patch)
        assert run_main(SPEC, argv) == faults.EXIT_NO_SPACE
    stderr = capsys.readouterr().err
    assert stderr.count("no space left on") == 1 and "Traceback" not in stderr
    assert not glob.glob(osp.join(out, "**", ".tmp-*"), recursive=True)
    assert not glob.glob(osp.join(out, "tiny", "cells", "*"))  # no failed record either
    assert run_main(SPEC, argv) == 0  # space again: no manual cleanup
    assert read_record(cell_path(out, _cell("c3")))["status"] == "ok"


# --------------------------------------------------------- untrusted pickles
def test_a_crafted_checkpoint_does_not_run_code(tmp_path):
    path, marker = str(tmp_path / "evil.ckpt"), str(tmp_path / "ran")
    _crafted_pickle(path, marker)
    with pytest.raises(ValueError, match="not a loadable checkpoint"):
        safe_load(path)
    assert not osp.exists(marker)


def test_a_crafted_last_checkpoint_is_set_aside_not_run(tmp_path, options):
    out, cell, marker = str(tmp_path), _cell("fast"), str(tmp_path / "ran")
    os.makedirs(checkpoint_dir(out, cell))
    _crafted_pickle(osp.join(checkpoint_dir(out, cell), "last.ckpt"), marker)
    record = run_cell(SPEC, cell, "smoke", out, options)
    assert record["status"] == "ok" and not record["resumed"] and not osp.exists(marker)


def test_load_cell_checkpoint_does_not_run_code(tmp_path):
    from mzattn.repro.analysis.checkpoint import load_cell_checkpoint, load_checkpoint
    record, path, marker = tmp_path / "cell.json", str(tmp_path / "c.ckpt"), tmp_path / "ran"
    record.write_text(json.dumps({"config": {}}))
    _crafted_pickle(path, str(marker))
    with pytest.raises(ValueError, match="c.ckpt"):
        load_cell_checkpoint(str(record), path)
    with pytest.raises(ValueError, match="c.ckpt"):
        load_checkpoint(path)
    assert not marker.exists()
