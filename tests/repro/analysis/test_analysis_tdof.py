import numpy as np
import pytest
from mzattn.repro.analysis.tdof import (
    SETTINGS,
    gains,
    mse_reduction,
    perturbation_robustness,
    spearman,
)
from mzattn.repro.core.registry import load_spec
from mzattn.repro.training.cells import RECORD_VERSION, write_json_atomic


def test_eighteen_settings_name_real_table_columns():
    assert len(SETTINGS) == 18
    assert len({(s.table, s.column) for s in SETTINGS}) == 18
    for s in SETTINGS:
        for table, column in s.sources:
            assert column in [c.label for c in load_spec(table).columns], (table, column)
        assert s.tdof >= 1 and s.why
    by_column = {s.column: s.tdof for s in SETTINGS}
    assert by_column["Mah d=8"] == 36  # Prop. 12(a)
    assert by_column["PCA d=16"] == 4 * 16 - 4 * 5 // 2  # Prop. 12(c), k = 4
    assert by_column["B"] == 3  # Prop. 14, d = 3
    assert by_column["Rot. matching d=64"] == 2016


def _record(row, model, column, mse, seed=0):
    return {"version": RECORD_VERSION, "status": "ok", "profile": "quick",
            "config": {"row": row, "model": model, "column": column,
                                       "seed": seed},
            "metrics": {"mse": mse}, "cell_id": f"{row}__{column}__s{seed}"}


def test_mse_reduction_uses_best_mz_and_best_baseline_without_egnn():
    records = [_record("MZ", "mz-full", "c", 2.0), _record("MZ", "mz-full", "c", 4.0, 1),
               _record("ST", "standard", "c", 5.0), _record("L", "st-large", "c", 4.0),
               _record("EGNN", "egnn", "c", 1.0), _record("ST", "standard", "other", 1.0)]
    assert mse_reduction(records, "c") == pytest.approx(100 * (1 - 3.0 / 4.0))
    assert mse_reduction(records, "other") is None


def test_gains_read_cell_jsons_primary_then_alternative_source(tmp_path):
    first, second = SETTINGS[0], SETTINGS[1]
    (alt_table, alt_column), = second.also
    cells = [(first.table, _record("MZAttn (ours)", "mz-full", first.column, 1.0)),
             (first.table, _record("ST-Large", "st-large", first.column, 2.0)),
             (alt_table, _record("MZAttn", "mz-full", alt_column, 3.0)),
             (alt_table, _record("Standard", "standard", alt_column, 4.0))]
    for table, rec in cells:
        write_json_atomic(rec, str(tmp_path / table / "cells" / f"{rec['cell_id']}.json"))
    rows = gains(str(tmp_path))
    assert rows[0]["reduction_pct"] == pytest.approx(50.0) and rows[0]["table"] == first.table
    assert rows[1]["reduction_pct"] == pytest.approx(25.0)
    assert (rows[1]["table"], rows[1]["column"]) == (alt_table, alt_column)
    assert all(r["reduction_pct"] is None for r in rows[2:])
    assert rows[2]["table"] == SETTINGS[2].table


def test_perturbation_robustness():
    tdof = np.array([1.0, 4.0, 16.0, 64.0, 256.0])
    reduction = np.array([0.0, 10.0, 20.0, 30.0, 40.0])
    assert spearman(tdof, reduction)[0] == pytest.approx(1.0)
    # factors in [0.5, 1.5] cannot swap TDOFs 4x apart: rho stays 1 in every trial
    for scheme in ("uniform", "log-symmetric"):
        stats = perturbation_robustness(tdof, reduction, scheme, trials=500)
        assert stats["p5"] == pytest.approx(1.0) and stats["frac_above_pct"] == 100.0
    close = np.array([1.0, 1.1, 1.2, 1.3, 1.4])
    stats = perturbation_robustness(close, reduction, "uniform", trials=2000)
    assert stats["p5"] < 0.6 < stats["p95"] and 0 < stats["frac_above_pct"] < 100
    with pytest.raises(ValueError, match="scheme"):
        perturbation_robustness(tdof, reduction, "gaussian")
