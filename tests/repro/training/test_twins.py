"""A cell whose twin (the same run in another table) has finished is not
trained again; one whose twin is training waits for it."""
import json
import os
import subprocess
import sys

import pytest
from mzattn.repro.core.registry import load_spec
from mzattn.repro.engine.status import _finished_twin
from mzattn.repro.training.cells import cell_config, read_record, run_cell
from mzattn.repro.training.layout import Cell, cell_path, checkpoint_dir, log_path, parked_dir
from mzattn.repro.training.parking import park
from mzattn.repro.training.twins import find_twin, run_lock_path, run_of

from tests.repro.training.test_parking import _fake_checkpoints


def _egnn(table: str, column: str) -> tuple:
    spec = load_spec(table)
    row = next(row for row in spec.rows if row.label == "EGNN")
    return spec, Cell(table, row, spec.column(column), 0)


def test_run_of_ignores_the_place_only():
    spec1, cell1 = _egnn("table1", "L=4")
    spec7, cell7 = _egnn("table7", "Quadratic TDOF L=4")
    config1, config7 = cell_config(spec1, cell1, "full"), cell_config(spec7, cell7, "full")
    assert config1 != config7 and run_of(config1) == run_of(config7)
    assert run_of(config1) != run_of(cell_config(spec1, cell1, "smoke"))
    assert run_of(config1) != run_of(config1 | {"seed": 1})


def test_a_cell_with_a_finished_twin_takes_its_record(tmp_path, options, capsys):
    out = str(tmp_path)
    spec1, cell1 = _egnn("table1", "L=4")
    trained = run_cell(spec1, cell1, "smoke", out, options)
    assert trained["status"] == "ok" and "reused_from" not in trained
    spec7, cell7 = _egnn("table7", "Quadratic TDOF L=4")
    assert _finished_twin(out, cell_config(spec7, cell7, "smoke"), "r2") \
        == "table1/cells/EGNN__L_4__s0.json"  # --status
    _fake_checkpoints(out, cell7)  # its own run, begun and parked before the twin finished
    assert park(out, cell7)
    reused = run_cell(spec7, cell7, "smoke", out, options)
    assert not os.path.exists(checkpoint_dir(out, cell7))  # gone, as a finished cell's go
    assert not os.path.exists(parked_dir(out, cell7))
    assert reused["reused_from"] == "table1/cells/EGNN__L_4__s0.json"
    assert "the same run as table1/cells/EGNN__L_4__s0.json" in capsys.readouterr().err
    assert reused["config"] == cell_config(spec7, cell7, "smoke")
    assert reused["metrics"] == trained["metrics"] and reused["history"] == trained["history"]
    assert read_record(cell_path(out, cell7)) == json.loads(json.dumps(reused, default=str))
    with open(log_path(out, cell1)) as a, open(log_path(out, cell7)) as b:
        assert a.read() == b.read()
    assert run_cell(spec7, cell7, "smoke", out, options)["skipped"]  # now its own record
    # another column, or the same cell at another profile, is another run
    _, cell8 = _egnn("table7", "Quadratic TDOF L=8")
    assert find_twin(out, cell_config(spec7, cell8, "smoke"), "r2", read_record) is None
    assert find_twin(out, cell_config(spec7, cell7, "quick"), "r2", read_record) is None
    assert find_twin(out, cell_config(spec7, cell7, "smoke"), "mse", read_record) is None


@pytest.mark.parametrize("twin_finishes", [True, False])
def test_a_cell_whose_twin_is_training_waits_for_it(tmp_path, options, capsys, twin_finishes):
    out, staging = str(tmp_path / "out"), str(tmp_path / "staging")
    spec1, cell1 = _egnn("table1", "L=4")
    spec7, cell7 = _egnn("table7", "Quadratic TDOF L=4")
    run_cell(spec1, cell1, "smoke", staging, options)  # what the twin will have written
    lock = run_lock_path(out, cell_config(spec1, cell1, "smoke"), "r2")
    assert lock == run_lock_path(out, cell_config(spec7, cell7, "smoke"), "r2")
    os.makedirs(os.path.dirname(lock))
    # another process trains the twin: it holds the run's lock, then writes its record
    # (or fails, and writes none)
    finish = f"shutil.copytree({staging + '/table1'!r}, {out + '/table1'!r})" \
        if twin_finishes else "pass"
    twin = subprocess.Popen([sys.executable, "-c", f"""
import shutil, time
from filelock import FileLock
with FileLock({lock!r}):
    print("training", flush=True)
    time.sleep(2)
    {finish}
"""], stdout=subprocess.PIPE, text=True)
    assert twin.stdout.readline() == "training\n"
    record = run_cell(spec7, cell7, "smoke", out, options)
    assert twin.wait() == 0
    assert "is training in another process (twins.py); waiting for it" in \
        capsys.readouterr().err
    assert record["status"] == "ok"
    if twin_finishes:  # not trained beside its twin: the twin's record
        assert record["reused_from"] == "table1/cells/EGNN__L_4__s0.json"
    else:  # trained once the twin's process let go of the run
        assert "reused_from" not in record and record["epochs"] >= 1
