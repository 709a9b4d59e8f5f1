import csv
import dataclasses
import json
import os

import pytest
import torch
from mzattn.repro.core.spec import SMOKE, Column, Row, TableSpec
from mzattn.repro.engine.runner import run_table
from mzattn.repro.training.cells import (
    cell_config,
    cell_data,
    is_finished,
    read_record,
    run_cell,
    stale_problem,
    write_json_atomic,
)
from mzattn.repro.training.history import FIELDS
from mzattn.repro.training.layout import Cell, cell_path, checkpoint_dir, lock_path, log_path

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
    state = torch.load(last, weights_only=True)
    early = next(v for k, v in state["callbacks"].items() if k.startswith("EarlyStopping"))
    assert early["patience"] == 5 and early["best_score"] is not None
    os.remove(cell_path(out, _cell()))  # as if the run had been killed before the JSON
    three = dataclasses.replace(SPEC, profiles={**SPEC.profiles, "smoke": dataclasses.replace(
        SMOKE, max_epochs=3, patience=5)})
    record = run_cell(three, _cell(), "smoke", out, options)
    assert record["status"] == "ok" and record["resumed"] is True
    assert record["epochs"] == 3
    # the learning curve survives the interruption: epoch 1 came from the checkpoint
    assert [h["epoch"] for h in record["history"]] == [1, 2, 3]
    with open(log_path(out, _cell())) as f:
        assert [row["epoch"] for row in csv.DictReader(f)] == ["1", "2", "3"]


def test_record_keeps_history_and_csv_log(tmp_path, options):
    out = str(tmp_path)
    record = run_cell(SPEC, _cell(), "smoke", out, options)
    assert record["status"] == "ok" and record["max_epochs"] == 1 and record["patience"] == 1
    (row,) = record["history"]
    assert set(row) == set(FIELDS) and row["epoch"] == 1
    assert row["lr"] == pytest.approx(1e-4) and row["epoch_time_s"] > 0
    assert row["val_loss"] == pytest.approx(record["best_val_loss"])
    assert row["train_loss"] > 0 and row["val_metric"] is not None
    assert record["split_sizes"] == [32, 16, 16]
    with open(log_path(out, _cell())) as f:
        (logged,) = csv.DictReader(f)
    assert float(logged["val_loss"]) == pytest.approx(row["val_loss"])


def test_early_stopped_cell_keeps_its_whole_history(tmp_path, options):
    # an lr this large makes the validation loss jump: early stopping fires within 8 epochs
    wild = dataclasses.replace(SPEC, profiles={**SPEC.profiles, "smoke": dataclasses.replace(
        SMOKE, max_epochs=8, patience=1, lr=3.0, warmup_epochs=0)})
    record = run_cell(wild, _cell(), "smoke", str(tmp_path), options)
    assert record["status"] == "ok" and record["stopped_early"] and record["epochs"] < 8
    # testing restores the best checkpoint, callbacks included: the record must not
    # take the history or the early-stopping state from it
    assert [h["epoch"] for h in record["history"]] == list(range(1, record["epochs"] + 1))


def test_recorded_weight_decay_is_the_one_used(tmp_path, options, monkeypatch):
    from mzattn.repro.training import cells
    seen = []
    init = cells.SetModule.__init__
    monkeypatch.setattr(cells.SetModule, "__init__", lambda self, *a, **k: (
        seen.append(k.get("weight_decay")), init(self, *a, **k))[1])
    record = run_cell(SPEC, _cell(), "smoke", str(tmp_path), options)
    assert seen == [record["config"]["weight_decay"]]


def test_a_locked_cell_is_left_to_its_holder(tmp_path, options):
    from filelock import FileLock
    out = str(tmp_path)
    os.makedirs(os.path.dirname(lock_path(out, _cell())))
    with FileLock(lock_path(out, _cell())):  # another live run holds the cell
        record = run_cell(SPEC, _cell(), "smoke", out, options)
    assert record["status"] == "busy" and read_record(cell_path(out, _cell())) is None
    assert run_cell(SPEC, _cell(), "smoke", out, options)["status"] == "ok"


def test_a_failed_record_never_replaces_an_ok_one(tmp_path, options, monkeypatch):
    from mzattn.repro.training import cells
    out = str(tmp_path)
    ok = run_cell(SPEC, _cell(), "smoke", out, options)
    monkeypatch.setattr(cells, "is_finished", lambda record, config: False)
    monkeypatch.setattr(cells, "train_cell", lambda *a: 1 / 0)
    assert run_cell(SPEC, _cell(), "smoke", out, options)["status"] == "failed"
    assert read_record(cell_path(out, _cell()))["metrics"] == ok["metrics"]


def test_seeded_cells_are_reproducible(tmp_path, options):
    det = dataclasses.replace(options, deterministic=True)
    a = run_cell(SPEC, _cell(), "smoke", str(tmp_path / "a"), det)
    b = run_cell(SPEC, _cell(), "smoke", str(tmp_path / "b"), det)
    assert a["metrics"] == pytest.approx(b["metrics"], rel=1e-6)


@pytest.mark.parametrize("labels", [("A B", "A/B"), ("A B", "A_B"), ("x (y)", "x y")])
def test_labels_whose_cell_ids_collide_are_refused(labels):
    rows = tuple(Row(label, "standard") for label in labels)
    with pytest.raises(ValueError, match="give the same cell id part 'A_B'|'x_y'"):
        dataclasses.replace(SPEC, rows=rows)
    columns = tuple(Column(label, "meb", {"d": 4}) for label in labels)
    with pytest.raises(ValueError, match="rename one of them"):
        dataclasses.replace(SPEC, columns=columns)


def test_a_padded_cell_runs_under_its_own_id_and_records_its_batching(tmp_path, options):
    out = str(tmp_path)
    masked, padded = _cell(), dataclasses.replace(_cell(), batching="padded")
    assert padded.cell_id == "Standard__d_4__s0__padded" and masked.cell_id == "Standard__d_4__s0"
    assert cell_data(padded, SMOKE, options).batching == "padded"
    record = run_cell(SPEC, padded, "smoke", out, options)
    assert record["status"] == "ok", record.get("traceback")
    saved = read_record(cell_path(out, padded))
    assert saved["config"]["batching"] == "padded"
    assert not os.path.exists(cell_path(out, masked))  # the masked cell's file is untouched
    # a padded record is no masked run, nor the reverse; a record written before the
    # field existed is a masked run and stays finished
    masked_config = cell_config(SPEC, masked, "smoke")
    assert masked_config["batching"] == "masked"
    assert is_finished(saved, cell_config(SPEC, padded, "smoke"))
    assert not is_finished(saved, masked_config)
    old = {**saved, "config": {k: v for k, v in masked_config.items() if k != "batching"}}
    assert is_finished(old, masked_config)
    assert not is_finished(old, cell_config(SPEC, padded, "smoke"))
    assert stale_problem(SPEC, old) is None and stale_problem(SPEC, saved) is None


def test_an_unknown_batching_is_refused():
    with pytest.raises(ValueError, match="'batching' must be one of masked, padded"):
        dataclasses.replace(_cell(), batching="pad")


def test_stored_activations_are_an_option_and_recorded(tmp_path, options):
    from mzattn.repro.engine.options import table_parser
    from mzattn.repro.engine.runner import options_from_args
    assert options_from_args(table_parser("t", "t").parse_args(
        ["--store-activations"])).store_activations
    assert not options_from_args(table_parser("t", "t").parse_args([])).store_activations
    spec = dataclasses.replace(SPEC, rows=(Row("MZ", "mz-1l"),))
    cell = Cell("tiny", spec.rows[0], spec.columns[0], 0)
    stored = dataclasses.replace(options, store_activations=True)
    for name, opts, expected in (("stored", stored, "stored"),
                                 ("default", options, "recomputed")):
        out = str(tmp_path / name)
        record = run_cell(spec, cell, "smoke", out, opts)
        assert record["status"] == "ok", record.get("traceback")
        assert read_record(cell_path(out, cell))["activations"] == expected
    out = str(tmp_path / "standard")  # no MZ attention: no field
    assert run_cell(SPEC, _cell(), "smoke", out, options)["status"] == "ok"
    assert "activations" not in read_record(cell_path(out, _cell()))
