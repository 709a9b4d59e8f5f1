import dataclasses
import json
import os

import pytest
import torch
from mzattn.repro.cells import (
    Cell,
    cell_path,
    checkpoint_dir,
    read_record,
    run_cell,
    write_json_atomic,
)
from mzattn.repro.runner import run_table
from mzattn.repro.spec import SMOKE, Column, Row, TableSpec

SPEC = TableSpec(
    key="tiny", title="tiny", rows=(Row("Standard", "standard"), Row("Broken", "no-such-model")),
    columns=(Column("d=4", "meb", {"d": 4}),),
    profiles={"smoke": SMOKE, "quick": SMOKE, "full": SMOKE})


def _cell(row=0, seed=0):
    return Cell("tiny", SPEC.rows[row], SPEC.columns[0], seed)


def test_write_json_atomic_leaves_no_temporary(tmp_path):
    path = tmp_path / "a" / "b.json"
    write_json_atomic({"x": 1}, str(path))
    write_json_atomic({"x": 2}, str(path))
    assert json.loads(path.read_text()) == {"x": 2}
    assert os.listdir(path.parent) == ["b.json"]


def test_cell_record_and_skip(tmp_path, options):
    out = str(tmp_path)
    record = run_cell(SPEC, _cell(), "smoke", out, options)
    assert record["status"] == "ok", record.get("traceback")
    saved = read_record(cell_path(out, _cell()))
    for key in ("config", "metrics", "params", "wall_time_s", "device", "versions",
                "git_commit", "epochs"):
        assert key in saved
    assert saved["config"]["task_overrides"] == {"num_train": 32, "num_val": 16,
                                                 "num_test": 16, "d": 4}
    assert saved["params"] == sum(p.numel() for p in __import__(
        "mzattn.baselines", fromlist=["x"]).build_model("standard", 4, 1).parameters())
    assert {"mse", "r2", "loss"} <= set(saved["metrics"])
    assert not os.path.exists(os.path.dirname(checkpoint_dir(out, _cell())))  # removed
    again = run_cell(SPEC, _cell(), "smoke", out, options)
    assert again["skipped"] and again["metrics"] == saved["metrics"]


def test_failed_cell_is_recorded_and_table_continues(tmp_path, options):
    records = run_table(SPEC, "smoke", out=str(tmp_path), options=options)
    assert [r["status"] for r in records] == ["ok", "failed"]
    failed = read_record(cell_path(str(tmp_path), _cell(1)))
    assert "no-such-model" in failed["error"] and "Traceback" in failed["traceback"]
    report = (tmp_path / "tiny" / "report.md").read_text()
    assert "## Failed cells" in report and "Broken__d_4__s0" in report


def test_killed_run_resumes_with_early_stopping_state(tmp_path, options):
    out = str(tmp_path)
    one = dataclasses.replace(SPEC, profiles={**SPEC.profiles, "smoke": dataclasses.replace(
        SMOKE, max_epochs=1, patience=5)})
    keep = dataclasses.replace(options, keep_checkpoints=True)
    run_cell(one, _cell(), "smoke", out, keep)
    last = os.path.join(checkpoint_dir(out, _cell()), "last.ckpt")
    state = torch.load(last, weights_only=False)
    early = next(v for k, v in state["callbacks"].items() if k.startswith("EarlyStopping"))
    assert early["patience"] == 5 and early["best_score"] is not None
    os.remove(cell_path(out, _cell()))  # as if the run had been killed before the JSON
    three = dataclasses.replace(SPEC, profiles={**SPEC.profiles, "smoke": dataclasses.replace(
        SMOKE, max_epochs=3, patience=5)})
    record = run_cell(three, _cell(), "smoke", out, options)
    assert record["status"] == "ok" and record["resumed"] is True
    assert record["epochs"] == 3


def test_seeded_cells_are_reproducible(tmp_path, options):
    det = dataclasses.replace(options, deterministic=True)
    a = run_cell(SPEC, _cell(), "smoke", str(tmp_path / "a"), det)
    b = run_cell(SPEC, _cell(), "smoke", str(tmp_path / "b"), det)
    assert a["metrics"] == pytest.approx(b["metrics"], rel=1e-6)
