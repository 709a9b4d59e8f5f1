import pytest
from mzattn.repro.report.convergence import (
    STALL_EPOCHS,
    best_change,
    convergence,
    live_change,
)
from mzattn.repro.report.report import verdicts, write_report
from mzattn.repro.report.results import Results, load_records
from mzattn.repro.report.verdicts import (
    CONTRADICTED,
    INCONCLUSIVE,
    NOT_RUN,
    PIPELINE_ONLY,
    REPRODUCED,
)
from mzattn.repro.tables.table03_meb import SPEC
from mzattn.repro.tables.table06_parameter_efficiency import SPEC as TABLE6
from mzattn.repro.tables.table08_matrix_generators import SPEC as TABLE8
from mzattn.repro.tables.table29_slot_attention import SPEC as TABLE29
from mzattn.repro.training.cells import RECORD_VERSION, cell_config, write_json_atomic
from mzattn.repro.training.layout import Cell, cell_path


def _history(losses):
    return [{"epoch": i + 1, "train_loss": loss, "val_loss": loss, "val_metric": 1 - loss,
             "lr": 1e-4, "epoch_time_s": 1.0} for i, loss in enumerate(losses)]


def _record(losses, cap, early=False, profile="full"):
    return {"status": "ok", "profile": profile, "epochs": len(losses), "max_epochs": cap,
            "stopped_early": early, "history": _history(losses)}


def test_early_stopping_converged():
    state = convergence(_record([1.0, 0.9, 0.95], cap=200, early=True))
    assert state.converged and "early stopping at epoch 3" in state.reason


def test_cap_reached_while_improving_is_not_converged():
    losses = [1.0 - 0.02 * i for i in range(20)]  # still falling steadily
    state = convergence(_record(losses, cap=20))
    assert not state.converged
    assert "cap of 20 epochs reached" in state.reason and "still" in state.reason
    assert f"last {STALL_EPOCHS}" in state.reason


def test_cap_reached_on_a_plateau_is_converged():
    losses = [1.0 - 0.05 * i for i in range(10)] + [0.55 - 1e-4 * i for i in range(30)]
    assert best_change(_history(losses), STALL_EPOCHS) > -0.01
    assert convergence(_record(losses, cap=40)).converged


def test_a_plateau_the_schedule_made_says_how_the_loss_moved_before_it():
    # cosine decay to zero at the cap: the loss falls 2% an epoch while the learning rate
    # lives, then stalls; the rule keeps the protocol's verdict and the reason tells the rest
    import math
    cap = 60
    rates = [1e-4 * 0.5 * (1 + math.cos(math.pi * i / cap)) for i in range(cap)]
    losses, loss = [], 1.0
    for rate in rates:
        loss *= 0.98 if rate >= 1e-5 else 1.0
        losses.append(loss)
    record = _record(losses, cap=cap)
    for row, rate in zip(record["history"], rates, strict=True):
        row["lr"] = rate
    state = convergence(record)
    assert state.converged
    assert state.reason == (f"cap of {cap} epochs reached, best val loss +0.0% over the last "
                            f"{STALL_EPOCHS} (-18.3% over the last {STALL_EPOCHS} at >= 10% "
                            "of the peak learning rate)")
    assert round(live_change(record["history"]), 3) == -0.183
    constant = _record(losses, cap=cap)  # no decay: the plateau is the model's, no note
    assert convergence(constant).reason.endswith(f"over the last {STALL_EPOCHS}")
    assert live_change(constant["history"]) is None
    del record["history"][0]["lr"]  # a history without learning rates: no note
    assert convergence(record).reason.endswith(f"over the last {STALL_EPOCHS}")


def test_a_run_whose_val_loss_diverged_is_not_converged():
    # Lightning's EarlyStopping also stops on a NaN or infinite loss: that is no convergence
    state = convergence(_record([1.0, 0.9, float("nan"), 0.8], cap=200, early=True))
    assert not state.converged and state.reason == "val loss not finite at epoch 3"
    assert not convergence(_record([1.0] * 30 + [float("inf")], cap=31)).converged


def test_old_records_without_history_are_marked():
    state = convergence({"status": "ok", "epochs": 20, "stopped_early": False})
    assert not state.converged and state.reason == "no history (20 epochs)"


def _write(out, row, r2, record, spec=SPEC, column=None):
    column = column or spec.columns[0]
    cell = Cell(spec.key, next(r for r in spec.rows if r.label == row), column, 0)
    write_json_atomic(record | {"version": RECORD_VERSION, "cell_id": cell.cell_id,
                                "metrics": {"r2": r2, "mse": 1.0},
                                "config": cell_config(spec, cell, record["profile"]),
                                "params": 1, "wall_time_s": 1.0}, cell_path(out, cell))


PLATEAU = [1.0 - 0.05 * i for i in range(10)] + [0.5] * 30
CLIMBING = [1.0 - 0.02 * i for i in range(40)]


def _headline(out):
    results = Results(SPEC, load_records(out, SPEC.key))
    return dict(verdicts(SPEC, results))[SPEC.claims[0].text]


def test_failing_claim_on_converged_full_cells_is_contradicted(tmp_path):
    out = str(tmp_path)
    for row in ("Standard", "MZAttn-Full"):
        _write(out, row, 0.9 if row == "Standard" else 0.7, _record(PLATEAU, cap=40))
    verdict = _headline(out)
    assert verdict.status == CONTRADICTED, verdict.detail  # decided on the cells that ran
    assert verdict.convergence == \
        "2/2 runs at the paper's protocol and converged; 5 of 7 conditions not run"


def test_failing_claim_names_the_unconverged_cell(tmp_path):
    out = str(tmp_path)
    _write(out, "Standard", 0.9, _record(CLIMBING, cap=40))
    _write(out, "MZAttn-Full", 0.7, _record(PLATEAU, cap=40))
    verdict = _headline(out)
    assert verdict.status == INCONCLUSIVE
    assert "Standard d=8 (seed 0): cap of 40 epochs reached, best val loss still" \
        in verdict.detail


def test_a_margin_around_another_cell_rests_on_that_cell_too(tmp_path):
    # Table 8: "more generators change R² by at most 0.03": L=1 is the reference, so a
    # quick-profile L=1 cannot let a converged L=2 contradict
    out, column = str(tmp_path), TABLE8.column("L=16")
    claim = TABLE8.claims[1].text
    _write(out, "2", 0.99, _record(PLATEAU, cap=40), spec=TABLE8, column=column)
    _write(out, "1", 0.90, _record(PLATEAU, cap=40, profile="quick"), spec=TABLE8, column=column)
    verdict = dict(verdicts(TABLE8, Results(TABLE8, load_records(out, TABLE8.key))))[claim]
    assert verdict.status == INCONCLUSIVE, verdict.detail
    assert "✗ 1 of 5: 2 L=16 r2=0.99 <= 1 L=16 0.9 + 0.03" in verdict.detail
    assert "1 L=16 (seed 0): quick profile" in verdict.detail
    _write(out, "1", 0.90, _record(PLATEAU, cap=40), spec=TABLE8, column=column)
    verdict = dict(verdicts(TABLE8, Results(TABLE8, load_records(out, TABLE8.key))))[claim]
    assert verdict.status == CONTRADICTED, verdict.detail


def test_a_reading_the_papers_numbers_imply_decides(tmp_path):
    # Table 6's MST is Task G as built (the mixture), the reading every check of the paper's
    # numbers supports: MZ-Slim below the Standard there contradicts the claim
    out, mst = str(tmp_path), TABLE6.column("MST")
    _write(out, "MZ-Slim (n_g=2, L=1)", 0.1, _record(PLATEAU, cap=40), spec=TABLE6, column=mst)
    _write(out, "Standard", 0.4, _record(PLATEAU, cap=40), spec=TABLE6, column=mst)
    verdict = dict(verdicts(TABLE6, Results(TABLE6, load_records(out, TABLE6.key))))[
        TABLE6.claims[0].text]
    assert verdict.status == CONTRADICTED, verdict.detail


def test_a_reading_the_papers_numbers_rule_out_never_decides(tmp_path):
    # Table 29's Max as built reduces over all n·d entries; the paper's numbers imply
    # Σ_j max_i x_ij (per-dim-sum), whose column decides the same claim
    out = str(tmp_path)
    for row, r2 in (("MZAttn (ours)", 0.02), ("Slot Attention", 0.05), ("Deep Sets", 0.05),
                    ("Set Transformer", 0.03)):
        _write(out, row, r2, _record(PLATEAU, cap=40), spec=TABLE29)
        _write(out, row, r2, _record(PLATEAU, cap=40), spec=TABLE29,
               column=TABLE29.column("Max [per-dim-sum]"))
    results = Results(TABLE29, load_records(out, TABLE29.key))
    decided = dict(verdicts(TABLE29, results))
    verdict = decided[TABLE29.claims[1].text]
    assert verdict.status == INCONCLUSIVE, verdict.detail
    assert "Max: max read as entries (max over all n·d entries" in verdict.detail
    assert "the paper's numbers imply per-dim-sum" in verdict.detail
    assert verdict.convergence == "4/4 runs at the paper's protocol and converged"
    under = next(v for text, v in decided.items() if "[per-dim-sum]" in text
                 and "MZAttn is best" in text)
    assert under.status == CONTRADICTED, under.detail
    report = open(write_report(TABLE29, out)).read()
    assert "- Max: max read as entries" in report and "- Max [per-dim-sum]" not in report


def _table29_claim(out, r2, claim=0):
    # Table 29's first claim (Slot Attention lags the attention models on all four tasks)
    # with every cell converged at the paper's protocol, r2[(row, column)] or 0.5
    for column in TABLE29.columns:
        for row in TABLE29.rows:
            _write(out, row.label, r2.get((row.label, column.label), 0.5),
                   _record(PLATEAU, cap=40), spec=TABLE29, column=column)
    results = Results(TABLE29, load_records(out, TABLE29.key))
    return dict(verdicts(TABLE29, results))[TABLE29.claims[claim].text]


def test_columns_that_share_a_reason_are_named_once(tmp_path):
    # it fails on Max and Median only: Max as built is not the reading the paper's numbers
    # imply, and no reading of Median passes any check, so neither failure decides
    lags = {("Slot Attention", column): 0.4 for column in ("Sum", "Range")}
    verdict = _table29_claim(str(tmp_path), lags)
    assert verdict.status == INCONCLUSIVE, verdict.detail
    assert verdict.detail.count("max read as entries") == 1
    assert "Median: median read as entries" in verdict.detail
    assert "no reading of it passes any check" in verdict.detail
    assert "Sum:" not in verdict.detail and "Range:" not in verdict.detail


def test_one_failing_condition_on_cells_that_decide_contradicts(tmp_path):
    # the check needs every condition to hold: Slot Attention above the Set Transformer on
    # Range, a reading the paper's numbers imply, on converged cells, decides it whatever
    # Max and Median (which cannot decide) give, as a condition not run would not stop it
    lags = {("Slot Attention", "Sum"): 0.4, ("Slot Attention", "Range"): 0.4,
            ("Set Transformer", "Range"): 0.3}
    verdict = _table29_claim(str(tmp_path), lags)
    assert verdict.status == CONTRADICTED, verdict.detail
    assert "Slot Attention Range r2=0.4 < Set Transformer Range 0.3" in verdict.detail
    assert "— decided on Range; the other failures cannot decide: Max: max read as entries" \
        in verdict.detail and "Median: median read as entries" in verdict.detail
    # the same failure on a run that did not converge decides nothing
    _write(str(tmp_path), "Set Transformer", 0.3, _record(CLIMBING, cap=40), spec=TABLE29,
           column=TABLE29.column("Range"))
    results = Results(TABLE29, load_records(str(tmp_path), TABLE29.key))
    verdict = dict(verdicts(TABLE29, results))[TABLE29.claims[0].text]
    assert verdict.status == INCONCLUSIVE, verdict.detail
    assert "Set Transformer Range (seed 0): cap of 40 epochs reached" in verdict.detail


@pytest.mark.parametrize("profile,status", [("quick", INCONCLUSIVE), ("smoke", PIPELINE_ONLY)])
def test_reduced_profiles_never_contradict(tmp_path, profile, status):
    out = str(tmp_path)
    _write(out, "Standard", 0.9, _record(PLATEAU, cap=40, profile=profile))
    _write(out, "MZAttn-Full", 0.7, _record(PLATEAU, cap=40, profile=profile))
    assert _headline(out).status == status


def _passing(out, record):
    _write(out, "MZAttn-Full", 0.7, record)
    for row in ("Standard", "ST-Large", "HyperNet (r=8)", "HyperNet (r=64, full key-rank)",
                "Perceiver", "LA-ST (Linear Attn.)"):
        _write(out, row, 0.01, record)
    return _headline(out)


def test_a_claim_that_holds_on_the_cells_that_ran_waits_for_the_others(tmp_path):
    out = str(tmp_path)
    assert _headline(out).status == NOT_RUN
    _write(out, "MZAttn-Full", 0.7, _record(PLATEAU, cap=40))
    _write(out, "Standard", 0.01, _record(CLIMBING, cap=40))
    verdict = _headline(out)
    assert verdict.status == INCONCLUSIVE, verdict.detail
    assert verdict.detail.startswith("? 5 of 7: ST-Large d=8 not run;")
    assert "✓ 2 of 7: MZAttn-Full d=8 r2=0.7 >= 0.3; Standard d=8 r2=0.01 <= 0.05 — " \
        in verdict.detail
    assert "the check holds on the cells that ran, but cannot decide: the cells marked ? have " \
           "not run; Standard d=8 (seed 0): cap of 40 epochs reached" in verdict.detail
    assert verdict.convergence == \
        "1/2 runs at the paper's protocol and converged; 5 of 7 conditions not run"
    _write(out, "ST-Large", 0.9, _record(PLATEAU, cap=40))
    assert _headline(out).status == CONTRADICTED  # a failure on converged cells decides


def test_a_passing_claim_on_converged_full_cells_is_reproduced(tmp_path):
    verdict = _passing(str(tmp_path), _record(PLATEAU, cap=40))
    assert verdict.status == REPRODUCED, verdict.detail


@pytest.mark.parametrize("profile,cap,reason", [
    ("quick", 40, "quick profile; "),
    ("full", 40, "cap of 40 epochs reached, best val loss still"),
])
def test_a_passing_claim_on_runs_that_cannot_decide_is_inconclusive(tmp_path, profile, cap,
                                                                    reason):
    verdict = _passing(str(tmp_path), _record(CLIMBING, cap=cap, profile=profile))
    assert verdict.status == INCONCLUSIVE
    assert "the check passes, but cannot decide: " in verdict.detail and reason in verdict.detail


def test_report_names_what_ran_and_draws_curves(tmp_path):
    out = str(tmp_path)
    _write(out, "Standard", 0.9, _record(CLIMBING, cap=40))
    _write(out, "MZAttn-Full", 0.7, {"status": "ok", "profile": "full", "epochs": 12})
    report = open(write_report(SPEC, out)).read()
    assert "## What ran" in report and "| Standard · d=8 | full | 0 |" in report
    assert "no history (12 epochs)" in report and "(40) |" in report
    assert "![validation curves](curves.png)" in report
    assert (tmp_path / "table3" / "curves.png").stat().st_size > 1000
