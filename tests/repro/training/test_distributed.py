import dataclasses
import os
import subprocess
import sys

import pytest
from mzattn.repro.tables.table03_meb import SPEC
from mzattn.repro.training.cells import read_record, run_cell
from mzattn.repro.training.layout import Cell, cell_path


def _cell():
    return Cell(SPEC.key, SPEC.rows[0], SPEC.columns[0], 0)


def test_bf16_mixed_precision_cell(tmp_path, options):
    bf16 = dataclasses.replace(options, precision="bf16-mixed")
    record = run_cell(SPEC, _cell(), "smoke", str(tmp_path), bf16)
    assert record["status"] == "ok", record.get("traceback")
    assert record["precision"] == "bf16-mixed"
    assert all(value == value for value in record["metrics"].values())  # finite, not NaN


@pytest.mark.slow
def test_ddp_two_cpu_processes_over_gloo(tmp_path, data_root):
    command = [sys.executable, "-m", "mzattn.repro", "table3", "--profile", "smoke",
               "--models", "standard", "--columns", "d=8", "--device", "cpu",
               "--devices", "2", "--strategy", "ddp", "--out", str(tmp_path),
               "--data-root", data_root, "--no-progress"]
    env = {**os.environ, "PYTHONWARNINGS": "ignore"}
    done = subprocess.run(command, capture_output=True, text=True, timeout=600, env=env)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "GLOBAL_RANK: 1" in done.stdout + done.stderr
    record = read_record(cell_path(str(tmp_path), _cell()))
    assert record["status"] == "ok" and record["world_size"] == 2
