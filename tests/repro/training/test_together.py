import dataclasses
import os
import signal

import pytest
import torch
from mzattn.repro.core.faults import Interrupted
from mzattn.repro.core.spec import SMOKE, Column, Row, TableSpec
from mzattn.repro.engine.runner import run_table
from mzattn.repro.training import together
from mzattn.repro.training.cells import read_record, run_cell
from mzattn.repro.training.group_checkpoint import group_checkpoint_path, save_group
from mzattn.repro.training.layout import Cell, cell_path
from mzattn.repro.training.together import fallback_reason, run_seed_group, seed_groups

# a few epochs, so that rounding differences between the ragged and the padded path can grow
PROFILE = dataclasses.replace(SMOKE, max_epochs=4, warmup_epochs=1, lr=1e-3)
SPEC = TableSpec(
    key="tiny", title="tiny",
    # no dropout: a group draws other dropout masks than the seeds trained alone
    rows=(Row("Standard", "standard", {"dropout": 0.0}), Row("MZ", "mz-full", {"dropout": 0.0}),
          Row("Mamba", "mamba-pma")),
    columns=(Column("d=4", "meb", {"d": 4}),),
    profiles={"smoke": PROFILE, "quick": PROFILE, "full": PROFILE})
SEEDS = (0, 1, 2)

# the stacked layer follows separate training to 1e-6 in float64 (tests/stacked); here a
# group runs in float32 on the padded path, alone on the ragged one: the two differ by
# float32 rounding, which four epochs of AdamW grew to at most 4e-7 (Standard) and 7e-5
# (MZ-Full) relative in the metrics and histories; 1e-3 leaves a margin for other CPUs
RTOL = 1e-3


def _cells(row: int = 0, seeds=SEEDS) -> list[Cell]:
    return [Cell("tiny", SPEC.rows[row], SPEC.columns[0], seed) for seed in seeds]


def _alone(tmp_path_factory, options, row: int) -> list[dict]:
    out = str(tmp_path_factory.mktemp("alone"))
    return [run_cell(SPEC, cell, "smoke", out, options) for cell in _cells(row)]


@pytest.mark.parametrize("row", [0, 1])
def test_a_group_writes_the_records_of_its_seeds_trained_alone(tmp_path, tmp_path_factory,
                                                               options, row):
    alone = _alone(tmp_path_factory, options, row)
    together = run_seed_group(SPEC, _cells(row), "smoke", str(tmp_path), options)
    for cell, one, group in zip(_cells(row), alone, together, strict=True):
        assert group == read_record(cell_path(str(tmp_path), cell))
        assert group["status"] == "ok", group.get("traceback")
        assert group["seeds_together"] == 3 and group["trained_with"] == "stacked"
        assert "seeds_together" not in one
        extra = {"seeds_together", "trained_with", "group_wall_time_s"}
        assert set(group) == set(one) | extra
        for key in ("config", "epochs", "stopped_early", "split_sizes", "params", "cell_id",
                    "precision", "max_epochs", "patience", "resumed"):
            assert group[key] == one[key], key
        assert group["metrics"].keys() == one["metrics"].keys()
        for name, value in one["metrics"].items():
            assert group["metrics"][name] == pytest.approx(value, rel=RTOL, abs=1e-5), name
        # losses of 1e7 to 1e10: lr 3 amplifies the rounding differences to ~1% (measured 0.8%)
        assert group["best_val_loss"] == pytest.approx(one["best_val_loss"], rel=5e-2)
        for mine, theirs in zip(group["history"], one["history"], strict=True):
            assert mine["epoch"] == theirs["epoch"] and mine["lr"] == pytest.approx(theirs["lr"])
            assert mine["val_loss"] == pytest.approx(theirs["val_loss"], rel=RTOL)
            assert mine["train_loss"] == pytest.approx(theirs["train_loss"], rel=RTOL)
    # the seeds differ: each trained on its own data from its own initialisation
    assert len({record["metrics"]["mse"] for record in together}) == 3


def test_early_stopping_and_the_best_epoch_are_per_seed(tmp_path, tmp_path_factory, options):
    # an lr this large makes the validation loss jump: early stopping fires within 8 epochs
    wild = dataclasses.replace(SPEC, profiles={**SPEC.profiles, "smoke": dataclasses.replace(
        PROFILE, max_epochs=8, patience=1, lr=3.0, warmup_epochs=0)})
    out = str(tmp_path_factory.mktemp("alone"))
    alone = [run_cell(wild, cell, "smoke", out, options) for cell in _cells()]
    together = run_seed_group(wild, _cells(), "smoke", str(tmp_path), options)
    assert any(record["stopped_early"] for record in alone)
    for one, group in zip(alone, together, strict=True):
        assert (group["epochs"], group["stopped_early"]) == (one["epochs"], one["stopped_early"])
        assert len(group["history"]) == group["epochs"]
        assert group["best_val_loss"] == min(row["val_loss"] for row in group["history"])
        # losses of 1e7 to 1e10: lr 3 amplifies the rounding differences to ~1% (measured 0.8%)
        assert group["best_val_loss"] == pytest.approx(one["best_val_loss"], rel=5e-2)


def test_finished_seeds_are_not_trained_again(tmp_path, options):
    out = str(tmp_path)
    first = run_cell(SPEC, _cells()[1], "smoke", out, options)
    records = run_seed_group(SPEC, _cells(), "smoke", out, options)
    assert records[1]["skipped"] and records[1]["metrics"] == first["metrics"]
    assert "seeds_together" not in records[1]
    assert [r["seeds_together"] for r in (records[0], records[2])] == [2, 2]
    again = run_seed_group(SPEC, _cells(), "smoke", out, options)
    assert all(record["skipped"] for record in again)


@pytest.mark.parametrize("change, reason", [
    ({"compile": True}, "--compile"),
    ({"precision": "bf16-mixed"}, "precision bf16-mixed"),
    ({"devices": 2}, "one device"),
    ({"strategy": "ddp"}, "one device"),
])
def test_options_a_group_cannot_train_with_fall_back(options, change, reason):
    assert reason in fallback_reason(_cells(), dataclasses.replace(options, **change))
    assert fallback_reason(_cells(), options) is None
    assert "1 seed" in fallback_reason(_cells(seeds=(0,)), options)


def test_an_unstackable_model_trains_its_seeds_one_after_another(tmp_path, options, capfd):
    records = run_seed_group(SPEC, _cells(row=2, seeds=(0, 1)), "smoke", str(tmp_path), options)
    assert [r["status"] for r in records] == ["ok", "ok"], records[0].get("traceback")
    assert not any("seeds_together" in record for record in records)
    err = capfd.readouterr().err
    assert "trained one after another, not together" in err and "MambaPMA" in err


def test_a_table_run_groups_each_cells_seeds(tmp_path, options):
    grouped = dataclasses.replace(options, seeds_together=True)
    records = run_table(SPEC, "smoke", models=["Standard", "MZ"], seeds=[0, 1],
                        out=str(tmp_path), options=grouped)
    assert [r["cell_id"] for r in records] == [
        "Standard__d_4__s0", "Standard__d_4__s1", "MZ__d_4__s0", "MZ__d_4__s1"]
    assert all(r["status"] == "ok" and r["seeds_together"] == 2 for r in records)
    assert [[c.seed for c in g] for g in seed_groups(_cells())] == [[0, 1, 2]]


def test_a_single_seed_trains_alone_and_says_why(tmp_path, options, capfd):
    grouped = dataclasses.replace(options, seeds_together=True)
    (record,) = run_table(SPEC, "smoke", models=["Standard"], seeds=[0], out=str(tmp_path),
                          options=grouped)
    assert record["status"] == "ok" and "seeds_together" not in record
    assert "not together: 1 seed to train" in capfd.readouterr().err


def _stop_in_second_epoch(monkeypatch, error: Exception) -> None:
    epoch = together._epoch

    def stopping(*args, **kwargs):
        if kwargs["epoch"] == 1:
            raise error
        epoch(*args, **kwargs)
    monkeypatch.setattr(together, "_epoch", stopping)


def _epochs_run(monkeypatch) -> list[int]:
    # the epochs that the group trains from now on
    epochs, epoch = [], together._epoch

    def counting(*args, **kwargs):
        epochs.append(kwargs["epoch"])
        epoch(*args, **kwargs)
    monkeypatch.setattr(together, "_epoch", counting)
    return epochs


def _without_timings(record: dict) -> dict:
    return {k: v for k, v in record.items() if "time" not in k and k not in (
        "finished_at", "resumed", "runs", "history")} | {
        "history": [{k: v for k, v in row.items() if k != "epoch_time_s"}
                    for row in record["history"]]}


def test_a_stopped_group_resumes_from_its_last_epoch(tmp_path, tmp_path_factory, options,
                                                     monkeypatch, capfd):
    out, cells = str(tmp_path), _cells()
    whole = run_seed_group(SPEC, cells, "smoke", str(tmp_path_factory.mktemp("whole")), options)
    with monkeypatch.context() as patch:
        _stop_in_second_epoch(patch, Interrupted(signal.SIGTERM))
        with pytest.raises(Interrupted, match="resume the group from its last finished epoch"):
            run_seed_group(SPEC, cells, "smoke", out, options)
    assert not any(os.path.exists(cell_path(out, cell)) for cell in cells)
    assert os.path.exists(group_checkpoint_path(out, cells))
    epochs = _epochs_run(monkeypatch)
    records = run_seed_group(SPEC, cells, "smoke", out, options)
    assert epochs == list(range(1, PROFILE.max_epochs))  # epoch 0 is not trained again
    assert "resumed after epoch 1" in capfd.readouterr().err
    for resumed, alone in zip(records, whole, strict=True):
        assert resumed["status"] == "ok" and resumed["resumed"] and not alone["resumed"]
        assert resumed["runs"] == [{"epoch": 1}, {"epoch": 2}] and alone["runs"] == [{"epoch": 1}]
        assert _without_timings(resumed) == _without_timings(alone)  # same steps, same numbers
    assert not os.path.exists(group_checkpoint_path(out, cells))  # gone with the records


def test_a_group_state_from_before_runs_were_kept_says_what_is_not_known():
    from mzattn.baselines import build_model
    model = build_model("mz-slim", 4, 1)
    assert together._runs(None, model) == []
    assert together._runs({"epochs": 3}, model) == [{"epoch": 1, "activations": "not recorded"}]
    kept = [{"epoch": 1, "activations": "recomputed"}]
    assert together._runs({"epochs": 3, "runs": kept}, model) == kept


class _Exploit:
    def __init__(self, marker: str) -> None:
        self.marker = marker

    def __reduce__(self):
        return os.system, (f"touch {self.marker}",)


def test_a_crafted_group_checkpoint_runs_no_code(tmp_path, options, capfd):
    out, cells = str(tmp_path / "out"), _cells()
    path, marker = group_checkpoint_path(out, cells), tmp_path / "ran"
    os.makedirs(os.path.dirname(path))
    torch.save({"version": 1, "configs": _Exploit(str(marker))}, path)
    records = run_seed_group(SPEC, cells, "smoke", out, options)
    assert not marker.exists()  # read with weights_only: the pickle's call never ran
    assert all(r["status"] == "ok" and not r["resumed"] for r in records)
    assert "not a loadable checkpoint" in capfd.readouterr().err


@pytest.mark.parametrize("content", [b"not a checkpoint", None])
def test_an_unusable_group_checkpoint_is_set_aside(tmp_path, options, monkeypatch, capfd,
                                                   content):
    out, cells = str(tmp_path), _cells()
    path = group_checkpoint_path(out, cells)
    os.makedirs(os.path.dirname(path))
    if content is None:  # a checkpoint of the same seeds under another configuration
        save_group(path, {"configs": [], "epochs": 1})
    else:
        with open(path, "wb") as f:
            f.write(content)
    epochs = _epochs_run(monkeypatch)
    records = run_seed_group(SPEC, cells, "smoke", out, options)
    assert epochs == list(range(PROFILE.max_epochs))
    assert all(r["status"] == "ok" and not r["resumed"] for r in records)
    err = capfd.readouterr().err
    assert "moved to" in err and "the group starts from scratch" in err
    assert ("not a loadable checkpoint" if content else "other configurations") in err


def test_a_failed_group_records_the_failure_for_every_seed(tmp_path, options, monkeypatch):
    _stop_in_second_epoch(monkeypatch, RuntimeError("boom"))
    records = run_seed_group(SPEC, _cells(), "smoke", str(tmp_path), options)
    for cell, record in zip(_cells(), records, strict=True):
        assert record["status"] == "failed" and record["error"] == "RuntimeError: boom"
        assert read_record(cell_path(str(tmp_path), cell))["seeds_together"] == 3
