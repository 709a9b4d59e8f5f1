import os
import os.path as osp
import signal
import subprocess
import time

import pytest
from mzattn.repro.core import faults
from mzattn.repro.training import cells
from mzattn.repro.training.cells import read_record, run_cell
from mzattn.repro.training.checkpoints import safe_load
from mzattn.repro.training.layout import cell_path, checkpoint_dir
from mzattn.repro.training.stages import STAGES, reach

from tests.repro.core.test_faults import SPEC, _cell, _start

# Every stage of a cell, in the order one run reaches them; a cell of column "c3" trains three
# epochs, so that a run stopped at "training" or "checkpoint" still has epochs to train.
IN_ORDER = STAGES


def _wait_for_line(proc: subprocess.Popen, text: str, timeout: float = 240) -> str:
    # stderr read line by line until one holds `text`; everything read so far
    seen, deadline = [], time.monotonic() + timeout
    while time.monotonic() < deadline:
        line = proc.stderr.readline()
        if not line and proc.poll() is not None:
            break
        seen.append(line)
        if text in line:
            return "".join(seen)
    raise AssertionError(f"never said {text!r}; stderr:\n{''.join(seen)}")


def test_a_cell_stopped_at_each_stage_on_purpose_resumes_and_finishes(tmp_path, data_root):
    # One stop per stage, in order: each run pauses at the first stage not yet paused at
    # (MZATTN_PAUSE_DIR remembers them) and is stopped there by SIGTERM, by what the cell says,
    # not by timing. Each stop leaves no record and no traceback; the last run finishes.
    out, cell = str(tmp_path / "out"), _cell("c3")
    env = {"MZATTN_PAUSE_AT": ",".join(IN_ORDER), "MZATTN_PAUSE_DIR": str(tmp_path / "pauses"),
           "MZATTN_PAUSE_S": "120"}
    for stage in IN_ORDER:
        proc = _start(out, data_root, "c3", **env)
        said = _wait_for_line(proc, f"paused at {stage} ")
        proc.send_signal(signal.SIGTERM)
        _, stderr = proc.communicate(timeout=120)
        assert proc.returncode == 143, said + stderr
        assert "Traceback" not in said + stderr and "failed" not in said + stderr
        assert read_record(cell_path(out, cell)) is None, stage
        last = osp.join(checkpoint_dir(out, cell), "last.ckpt")
        if stage in ("training", "checkpoint", "test"):
            safe_load(last)  # a complete checkpoint, whatever the stop interrupted
        assert not [f for f in os.listdir(osp.dirname(last)) if f.startswith(".tmp-")] \
            if osp.isdir(osp.dirname(last)) else True
    proc = _start(out, data_root, "c3", **env)
    _, stderr = proc.communicate(timeout=240)
    assert proc.returncode == 0, stderr
    record = read_record(cell_path(out, cell))
    assert record["status"] == "ok" and record["resumed"] and record["epochs"] == 3
    assert [h["epoch"] for h in record["history"]] == [1, 2, 3]


def test_the_stages_are_said_in_order(tmp_path, options, capsys):
    run_cell(SPEC, _cell("fast"), "smoke", str(tmp_path), options)
    err = capsys.readouterr().err
    said = [err.index(f"tiny Standard__fast__s0: {words}") for words in
            ("preparing its data", "building its model", "training", "testing its best")]
    assert said == sorted(said)


def test_a_preemption_signal_stops_a_block_that_adds_it_and_the_blocks_inside():
    before = signal.getsignal(signal.SIGUSR2)
    with pytest.raises(faults.Interrupted) as info, faults.stop_on_signals(extra=[signal.SIGUSR2]):
        with faults.stop_on_signals():  # a cell's own block, inside a SLURM task's
            os.kill(os.getpid(), signal.SIGUSR2)
            time.sleep(5)
    assert info.value.signum == signal.SIGUSR2 and signal.getsignal(signal.SIGUSR2) is before


def test_a_held_preemption_signal_is_pending_and_named():
    with faults.stop_on_signals(extra=[signal.SIGUSR2]):
        assert faults.hold_signals() and faults.stop_signal() is None
        os.kill(os.getpid(), signal.SIGUSR2)
        time.sleep(0.1)
        assert faults.pending_signal() == signal.SIGUSR2 == faults.stop_signal()
        assert faults.release_signals() == signal.SIGUSR2
    assert faults.stop_signal() is None


def test_an_error_raised_by_a_write_the_stop_broke_off_is_the_stop(tmp_path, options,
                                                                  monkeypatch):
    # A signal handled inside torch.save's write callback can come back from C++ as an
    # unrelated RuntimeError ("unexpected pos ..."): the cell is stopped, not failed.
    def broken_save(*args, **kwargs):
        try:
            os.kill(os.getpid(), signal.SIGTERM)
            time.sleep(5)
        except faults.Interrupted:
            raise RuntimeError("[enforce fail at inline_container.cc:672]") from None
    monkeypatch.setattr(cells, "train_cell", broken_save)
    with pytest.raises(faults.Interrupted) as info:
        run_cell(SPEC, _cell("fast"), "smoke", str(tmp_path), options)
    assert info.value.exit_status == 143
    assert read_record(cell_path(str(tmp_path), _cell("fast"))) is None


def test_a_stage_pauses_once_until_a_stop_signal(tmp_path, monkeypatch):
    monkeypatch.setenv("MZATTN_PAUSE_AT", "data")
    monkeypatch.setenv("MZATTN_PAUSE_DIR", str(tmp_path))
    monkeypatch.setenv("MZATTN_PAUSE_S", "0.2")
    start = time.monotonic()
    reach("model", "t c")  # not named: no pause
    assert time.monotonic() - start < 0.1 and not (tmp_path / "model").exists()
    reach("data", "t c")
    assert time.monotonic() - start >= 0.2 and (tmp_path / "data").exists()
    start = time.monotonic()
    reach("data", "t c")  # once only
    assert time.monotonic() - start < 0.1
