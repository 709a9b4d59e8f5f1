import re

import numpy as np
import pytest
import torch
from mzattn.baselines import build_model, list_models
from mzattn.datasets.openml_tables import TABLE_SOURCES
from mzattn.datasets.tabular_meta_regression import TEST_TABLES, TRAIN_TABLES
from mzattn.repro import cli
from mzattn.repro.core.registry import TABLE_MODULES, load_spec
from mzattn.repro.engine.runner import grid, run_table
from mzattn.repro.report.claims import NOT_REPRODUCED, NOT_RUN, REPRODUCED
from mzattn.repro.report.paper_values import PaperValue, paper_value
from mzattn.repro.report.results import Results
from mzattn.repro.tables.negative_transfer import HELD_OUT, NP_MNIST, OFFLINE, SAME, SPEC

from tests.datasets.test_openml_tables import write_table_csv

SIZES = {"num_train": 20, "num_val": 10, "num_test": 9}


def _load(task, **options):
    from mzattn.repro.training.real_data import load_real_splits
    return load_real_splits(task, **options)


# ---------------------------------------------------------------- providers


def test_image_completion_provider_holds_out_validation_images():
    train, val, test = _load("image_completion", stand_in=True, **SIZES)
    assert [len(split) for split in (train, val, test)] == [20, 10, 9]
    assert (train.num_features, train.target_dim) == (4, 1)
    assert train.target_mean.tolist() == [0.0] and train.target_std.tolist() == [1.0]
    assert len(train.items.images) == 3 and len(val.items.images) == 2  # 8 targets per image
    assert not set(train.items.images.tolist()) & set(val.items.images.tolist())
    assert test.items.train is False and test.items.images.tolist() == [0, 1]
    with pytest.raises(ValueError, match="'normalize' must be False for image_completion"):
        _load("image_completion", stand_in=True, normalize=True, **SIZES)


def test_tabular_provider_stand_in_is_diabetes_alone():
    train, val, test = _load("tabular_meta_regression", stand_in=True, **SIZES)
    assert [len(split) for split in (train, val, test)] == [20, 10, 9]
    assert train.num_features == 10 and train[0].x.shape == (17, 10)  # K = 16, T = 4
    assert [split.items.part for split in (train, val, test)] == ["train", "val", "test"]
    assert all(split.items.tables == ("diabetes",) for split in (train, val, test))
    with pytest.raises(ValueError, match="'split' must be 'same-distribution' with"):
        _load("tabular_meta_regression", stand_in=True, split="held-out-dataset", **SIZES)
    with pytest.raises(ValueError, match="'split' must be one of"):
        _load("tabular_meta_regression", split="random", **SIZES)


def test_tabular_provider_reads_the_openml_csvs(tmp_path):
    with pytest.raises(FileNotFoundError, match="california_housing.csv"):
        _load("tabular_meta_regression", root=str(tmp_path), **SIZES)
    rng = np.random.default_rng(0)
    for name, source in TABLE_SOURCES.items():
        if source.openml_id is not None:
            write_table_csv(str(tmp_path / "openml" / "raw" / f"{name}.csv"),
                            ["a", "b", "c", "target"], rng.normal(size=(60, 4)))
    options = {"root": str(tmp_path), "num_context": 5, "num_targets": 2, **SIZES}
    train, val, test = _load("tabular_meta_regression", split="held-out-dataset", **options)
    assert train.items.tables == val.items.tables == TRAIN_TABLES
    assert test.items.tables == TEST_TABLES and test[0].x.shape == (6, 10)
    same = _load("tabular_meta_regression", **options)[2]
    assert same.items.tables == TRAIN_TABLES and same.items.part == "test"


# --------------------------------------------------------------------- spec


def test_spec_is_registered_in_paper_order(capsys):
    keys = list(TABLE_MODULES)
    assert keys.index("negative_transfer") == keys.index("table29") + 1  # after Table 30
    assert keys.index("negative_transfer") == keys.index("table31") - 1
    assert load_spec("negative_transfer") is SPEC
    assert cli.main(["list"]) == 0
    assert re.search(r"^negative_transfer +Negative transfer \(App\. D\.5\.6\)",
                     capsys.readouterr().out, re.M)


def test_spec_rows_columns_profiles_and_paper_values():
    assert [row.model for row in SPEC.rows] == [
        "standard", "st-large", "hypernet-r8", "perceiver", "la-st", "mz-large", "mz-full"]
    assert {row.model for row in SPEC.rows} <= set(list_models())
    assert SPEC.loss == "gaussian_nll" and SPEC.metric == "nll"
    for row in SPEC.rows:
        for width in (4, 10):  # NP and tabular tokens
            out = build_model(row.model, width, 2)(torch.randn(5, width), torch.zeros(5).long())
            assert (out[0] if isinstance(out, tuple) else out).shape == (1, 2)
    for profile in ("smoke", "quick"):
        assert {c.column.label for c in grid(SPEC, profile)} == set(OFFLINE)
        assert SPEC.profile(profile).data == {"stand_in": True}
    assert len(grid(SPEC, "full")) == 7 * 4 * 5 and SPEC.profile("full").data == {}
    assert SPEC.paper_label("MZAttn-Large", NP_MNIST) == ("MNIST MZAttn-Large", "NLL")
    assert SPEC.paper_label("Standard", SAME) is None
    assert paper_value("negative_transfer", "held-out Standard", "NLL") == PaperValue(
        18.66, None, "+18.66")
    assert paper_value("negative_transfer", "MNIST ST-Large", "NLL").mean == -1.657


def _record(row, column, nll, mse, val=None, seed=0):
    return {"status": "ok", "profile": "quick", "params": 1,
            "config": {"row": row, "column": column, "seed": seed},
            "metrics": {"nll": nll, "mse": mse}, "best_val_loss": val}


def test_claims_decide_on_the_numbers():
    records = [_record("Standard", NP_MNIST, -1.60, 0.1),
               _record("MZAttn-Full", NP_MNIST, -1.58, 0.1),
               _record("Standard", HELD_OUT, 18.0, 1.6, val=-0.4),
               _record("MZAttn-Full", HELD_OUT, 21.0, 1.5, val=-0.5),
               _record("Standard", SAME, 0.50, 1.00), _record("MZAttn-Full", SAME, 0.52, 0.95)]
    results = Results(SPEC, records)
    statuses = [claim.check(results).status for claim in SPEC.claims]
    assert statuses == [REPRODUCED, REPRODUCED, REPRODUCED, NOT_RUN, REPRODUCED]
    records += [_record("Standard", HELD_OUT, 19.0, 1.6, val=-0.4, seed=1),
                _record("MZAttn-Full", HELD_OUT, 30.0, 1.5, val=-0.5, seed=1),
                _record("MZAttn-Large", NP_MNIST, -1.70, 0.1)]
    statuses = [claim.check(Results(SPEC, records)).status for claim in SPEC.claims]
    assert statuses == [REPRODUCED, NOT_REPRODUCED, REPRODUCED, NOT_REPRODUCED, REPRODUCED]
    assert all(claim.check(Results(SPEC, [])).status == NOT_RUN for claim in SPEC.claims)


def test_smoke_profile_end_to_end(tmp_path, options):
    records = run_table(SPEC, "smoke", out=str(tmp_path), options=options)
    assert [r["status"] for r in records] == ["ok"] * 4, records[0].get("traceback")
    assert all(np.isfinite(r["metrics"]["nll"]) and "mse" in r["metrics"] for r in records)
    report = (tmp_path / "negative_transfer" / "report.md").read_text()
    assert "| Standard | NP-MNIST |" in report and "| -1.617 |" in report
    assert "Ours MSE" in report and report.count("**not run**") >= 2  # held-out claims
