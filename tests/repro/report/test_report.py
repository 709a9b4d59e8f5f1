import dataclasses

import pytest
from mzattn.repro.cli import main
from mzattn.repro.core.spec import Column
from mzattn.repro.report.claims import (
    NOT_REPRODUCED,
    NOT_RUN,
    PARTLY_RUN,
    REPRODUCED,
    at_least,
    compare,
    ratio,
    verdict,
    within,
)
from mzattn.repro.report.report import write_report
from mzattn.repro.report.results import Results, batchings_in, load_records
from mzattn.repro.tables.table03_meb import SPEC
from mzattn.repro.training.cells import (
    RECORD_VERSION,
    cell_config,
    read_record,
    stale_problem,
    write_json_atomic,
)
from mzattn.repro.training.layout import Cell, cell_path


def _write(out, row, column, seed, r2, mse=1.0, status="ok", batching="masked"):
    spec_row = next(r for r in SPEC.rows if r.label == row)
    spec_col = next(c for c in SPEC.columns if c.label == column)
    cell = Cell(SPEC.key, spec_row, spec_col, seed, batching)
    record = {"version": RECORD_VERSION, "status": status, "profile": "quick",
              "cell_id": cell.cell_id,
              "config": cell_config(SPEC, cell, "quick"),
              "metrics": {"r2": r2, "mse": mse}, "params": 1234, "wall_time_s": 60.0}
    if status != "ok":
        record = {k: v for k, v in record.items() if k != "metrics"} | {"error": "boom"}
    write_json_atomic(record, cell_path(out, cell))


@pytest.fixture()
def out(tmp_path):
    out = str(tmp_path)
    _write(out, "MZAttn-Full", "d=8", 0, 0.70, mse=0.5)
    _write(out, "MZAttn-Full", "d=8", 1, 0.60, mse=0.7)
    _write(out, "Standard", "d=8", 0, 0.02, mse=2.0)
    _write(out, "ST-Large", "d=8", 0, 0.9, status="failed")
    return out


def test_results_aggregate_seeds(out):
    results = Results(SPEC, load_records(out, SPEC.key))
    assert results.values("MZAttn-Full", "d=8") == [0.70, 0.60]
    assert results.mean("MZAttn-Full", "d=8") == pytest.approx(0.65)
    assert results.std("MZAttn-Full", "d=8") == pytest.approx(0.0707107, rel=1e-5)
    assert results.std("Standard", "d=8") == 0.0
    assert results.mean("ST-Large", "d=8") is None  # failed cells are not results
    assert len(results.failed) == 1 and results.params("Standard") == 1234


def test_claim_building_blocks(out):
    results = Results(SPEC, load_records(out, SPEC.key))
    mz, std = ("MZAttn-Full", "d=8"), ("Standard", "d=8")
    assert verdict(compare(results, mz, ">", std)).status == REPRODUCED
    assert verdict(compare(results, mz, "<", std)).status == NOT_REPRODUCED
    assert verdict(compare(results, mz, ">", ("ST-Large", "d=8"))).status == NOT_RUN
    missing_and_failed = (compare(results, mz, ">", ("ST-Large", "d=8")),
                          compare(results, mz, "<", std))
    assert verdict(*missing_and_failed).status == NOT_REPRODUCED  # a failure decides
    missing_and_holding = (compare(results, mz, ">", ("ST-Large", "d=8")),
                           compare(results, mz, ">", std))
    assert verdict(*missing_and_holding).status == PARTLY_RUN
    assert verdict(*missing_and_holding).not_run == (1, 2)
    assert verdict(*missing_and_failed, *missing_and_holding).not_run == (1, 3)  # distinct lines
    few = verdict(compare(results, mz, ">", std), compare(results, mz, "<", std)).detail
    assert few == ("✓ MZAttn-Full d=8 r2=0.65 > Standard d=8 0.02; "
                   "✗ MZAttn-Full d=8 r2=0.65 < Standard d=8 0.02")
    many = verdict(*missing_and_failed, compare(results, mz, ">", std),
                   compare(results, mz, "<=", std)).detail
    assert many == ("✗ 2 of 4: MZAttn-Full d=8 r2=0.65 < Standard d=8 0.02; "
                    "MZAttn-Full d=8 r2=0.65 <= Standard d=8 0.02 — "
                    "? 1 of 4: ST-Large d=8 not run — "
                    "✓ 1 of 4: MZAttn-Full d=8 r2=0.65 > Standard d=8 0.02")
    large = ("ST-Large", "d=8")  # |R²| <= 0.05 is two conditions; not run, one line
    near_zero = (compare(results, large, ">=", -0.05), compare(results, large, "<=", 0.05))
    assert verdict(*near_zero).detail == "? ST-Large d=8 not run"
    assert verdict(*near_zero, *missing_and_failed, compare(results, mz, ">", std),
                   compare(results, mz, "<=", std)).detail == many
    assert ratio(results, std, mz, 3.0)[0] is True  # 2.0 / 0.6
    assert ratio(results, std, mz, 4.0)[0] is False
    assert compare(results, mz, ">=", std, factor=30.0)[0] is True  # 0.65 >= 0.6
    with pytest.raises(ValueError, match="'op'"):
        compare(results, mz, "!=", std)
    margin = compare(results, std, ">=", mz, offset=-0.64)  # 0.02 >= 0.65 - 0.64
    assert margin == (True, "Standard d=8 r2=0.02 >= MZAttn-Full d=8 0.65 - 0.64", (std, mz))
    assert compare(results, std, ">=", mz, offset=-0.62)[0] is False
    spread = within(results, [mz, std], 0.64)  # both cells named: their convergence decides
    assert spread == (True, "spread of MZAttn-Full d=8 0.65, Standard d=8 0.02 = 0.63 <= 0.64",
                      (mz, std))
    assert within(results, [mz, std], 0.62)[0] is False
    assert within(results, [mz, ("ST-Large", "d=8")], 1.0) == (None, "ST-Large d=8 not run")
    one_holds = [compare(results, mz, "<", std), compare(results, mz, ">", std)]
    assert at_least(1, one_holds, "MZ vs. Standard") == (
        True, "MZ vs. Standard: 1 of 2 hold, 1 needed (✗ MZAttn-Full d=8 r2=0.65 < Standard d=8 "
              "0.02; ✓ MZAttn-Full d=8 r2=0.65 > Standard d=8 0.02)", (mz, std))
    assert at_least(2, one_holds, "x")[0] is False  # the second cannot hold
    assert at_least(2, [one_holds[1], compare(results, mz, ">", ("ST-Large", "d=8"))],
                    "x")[0] is None  # it could, once ST-Large has run


def test_report_beside_paper(out):
    path = write_report(SPEC, out)
    text = open(path).read()
    assert "| MZAttn-Full | d=8 | 0.65 ± 0.071 (n=2) | 0.691 ± 0.012 | -0.041 |" in text
    assert "| Standard | d=8 | 0.02 ± 0 (1 seed) | 0.025 ± 0.009 | -0.005 |" in text
    assert "| Standard | `standard` | 1,234 | 208,000 |" in text
    assert "**not run**" in text  # claims needing unrun rows
    assert "`ST-Large__d_8__s0`: boom" in text
    assert (open(path).read() == text)


def test_cli_report_rebuilds_from_json(out, capsys):
    assert main(["report", "--out", out]) == 0
    printed = capsys.readouterr().out
    assert "table3/report.md" in printed and "SUMMARY.md" in printed
    summary = open(f"{out}/SUMMARY.md").read()
    assert "| table3 |" in summary and "mzattn-repro table3 --profile quick" in summary


def _age(out, row, seed=0, **training):
    # the record of (row, d=8) as if it had run before the quick profile became what it is
    cell = Cell(SPEC.key, next(r for r in SPEC.rows if r.label == row), SPEC.column("d=8"), seed)
    record = read_record(cell_path(out, cell))
    record["config"]["training"] |= training
    write_json_atomic(record, cell_path(out, cell))


def test_a_record_of_a_cell_whose_spec_changed_is_stale():
    cell = Cell(SPEC.key, SPEC.rows[0], SPEC.column("d=8"), 0)
    config = cell_config(SPEC, cell, "quick")
    record = {"profile": "quick", "config": config}
    assert stale_problem(SPEC, record) is None
    assert stale_problem(SPEC, {**record, "config": config | {"table": "demo"}}) is None
    changed = config | {"training": config["training"] | {"max_epochs": 15},
                        "task_overrides": config["task_overrides"] | {"d": 9}}
    assert stale_problem(SPEC, {**record, "config": changed}) == (
        "stale: task_overrides.d 9 (now 8); training.max_epochs 15 (now 20)")
    assert stale_problem(SPEC, {"profile": "tiny", "config": config}) == (
        "profile 'tiny' is not one of ['full', 'quick', 'smoke']")
    # a view of the table without the row (the demo's) does not judge its records
    view = dataclasses.replace(SPEC, rows=SPEC.rows[1:])
    assert stale_problem(view, {**record, "config": changed}) is None


def test_reports_leave_stale_records_out_and_name_them(out, capsys):
    _age(out, "Standard", max_epochs=15)
    results = Results.load(SPEC, out)
    assert results.mean("Standard", "d=8") is None and results.mean("MZAttn-Full", "d=8")
    assert results.stale == ["Standard__d_8__s0 (quick profile): stale: "
                             "training.max_epochs 15 (now 20)"]
    text = open(write_report(SPEC, out)).read()
    assert "## Stale records" in text and "- Standard__d_8__s0 (quick profile)" in text
    assert "| Standard | d=8 | not run |" in text
    assert "table3: not counted: Standard__d_8__s0" in capsys.readouterr().err


def test_cli_commands(capsys):
    assert main(["list"]) == 0
    listed = capsys.readouterr().out
    assert "table3" in listed and "table29" in listed and "table7 " in listed
    assert main(["no-such-table"]) == 2
    assert main([]) == 2
    assert main(["--help"]) == 0


def test_cli_delegate_without_module_is_a_clear_error(capsys, monkeypatch):
    from mzattn.repro import cli
    monkeypatch.setitem(cli._DELEGATED, "bench", ("mzattn.no_such_bench", "cli"))
    assert main(["bench"]) == 2
    assert "mzattn.no_such_bench" in capsys.readouterr().err


def test_selection_errors_name_the_argument():
    with pytest.raises(ValueError, match="'models'"):
        SPEC.select_rows(["nope"])
    with pytest.raises(ValueError, match="'columns'"):
        SPEC.select_columns(["d=7"])
    with pytest.raises(ValueError, match="'profile'"):
        SPEC.profile("huge")
    with pytest.raises(ValueError, match="'profiles'"):
        dataclasses.replace(SPEC, profiles={"smoke": SPEC.profiles["smoke"]})


def test_a_column_may_set_its_own_metric_and_loss():
    accuracy = Column("C", "modelnet40", loss="cross_entropy", metric="acc")
    mixed = dataclasses.replace(SPEC, columns=(*SPEC.columns, accuracy))
    assert (mixed.metric_of("d=8"), mixed.loss_of("d=8")) == ("r2", "mse")
    assert (mixed.metric_of("C"), mixed.loss_of("C")) == ("acc", "cross_entropy")
    assert mixed.mixes_metrics() and not SPEC.mixes_metrics()
    records = [{"status": "ok", "profile": "quick", "config": {"row": "Standard", "column": c},
                "metrics": {"r2": 0.1, "acc": 0.8}} for c in ("d=8", "C")]
    results = Results(mixed, records)
    assert results.mean("Standard", "d=8") == 0.1 and results.mean("Standard", "C") == 0.8
    assert compare(results, ("Standard", "C"), ">", 0.5) == (
        True, "Standard C acc=0.8 > 0.5", (("Standard", "C"),))
    with pytest.raises(ValueError, match="'column'"):
        mixed.metric_of("E")


def _table2_results(accuracies, mz_a=(0.85, 2.5)):
    from mzattn.repro.tables.table02_main import SPEC as TABLE2
    def record(row, column, metrics):
        return {"status": "ok", "profile": "full", "params": 1000, "metrics": metrics,
                "config": {"row": row, "column": column}}
    records = [record("MZAttn (ours)", "A", {"r2": mz_a[0], "mse": mz_a[1]})]
    records += [record(*cell, {"acc": acc, "loss": 1.0}) for cell, acc in accuracies.items()]
    return Results(TABLE2, records)


def test_table2_report_mixes_r2_and_accuracy_in_the_papers_units():
    from mzattn.repro.report.report import render
    accuracies = {("MZAttn (ours)", "C"): 0.8, ("ST-Large", "C"): 0.82,
                  ("MZAttn (ours)", "E"): 0.7, ("ST-Large", "E"): 0.72}
    results = _table2_results(accuracies)
    text = render(results.spec, results)
    assert "| Model | Setting | Metric | Ours | Paper | Ours − paper | Ours MSE |" in text
    assert "| MZAttn (ours) | A | R² | 0.85 ± 0 (1 seed) | 0.839 ± 0.005 | +0.011 | 2.5 |" in text
    assert ("| MZAttn (ours) | C | accuracy | 0.8 ± 0 (1 seed) | 78.1 ± 0.7% | +1.9 pp | — |"
            in text)
    assert "| ST-Large | E | accuracy | 0.72 ± 0 (1 seed) | 72.9 ± 2.4% | -0.9 pp | — |" in text
    claim = next(c for c in results.spec.claims if "point-cloud" in c.text)
    assert claim.check(results).status == REPRODUCED
    for changed in ({("MZAttn (ours)", "E"): 0.68},  # 4 pp behind ST-Large
                    {("Deep Sets", "C"): 0.83}):  # a model run beats ST-Large
        assert claim.check(_table2_results(accuracies | changed)).status == NOT_REPRODUCED
    del accuracies[("ST-Large", "E")]
    assert claim.check(_table2_results(accuracies)).status == PARTLY_RUN


def test_table3_figure_draws_the_across_d_panel_only_when_two_columns_ran(out, monkeypatch):
    from mzattn.repro.report import figures
    drawn = []
    monkeypatch.setattr(figures, "_save", lambda fig, path: drawn.append(len(fig.axes)))
    SPEC.figure(Results(SPEC, load_records(out, SPEC.key)), "unused.png")
    _write(out, "Standard", "d=16", 0, 0.1)
    SPEC.figure(Results(SPEC, load_records(out, SPEC.key)), "unused.png")
    assert drawn == [1, 2]


def test_each_batching_gets_its_own_report_and_they_never_mix(out):
    _write(out, "MZAttn-Full", "d=8", 0, 0.99, batching="padded")
    assert Results.load(SPEC, out).values("MZAttn-Full", "d=8") == [0.70, 0.60]
    padded = Results.load(SPEC, out, "padded")
    assert padded.batching == "padded" and padded.values("MZAttn-Full", "d=8") == [0.99]
    assert not padded.stale and len(padded.ok) == 1
    assert batchings_in(out, SPEC.key) == ["masked", "padded"]
    path = write_report(SPEC, out)
    assert path.endswith("table3/report.md")
    masked_text = open(path).read()
    assert "Batching: **masked**, ragged sets" in masked_text and "0.99" not in masked_text
    assert write_report(SPEC, out, "padded") == path.replace("report.md", "report-padded.md")
    padded_text = open(path.replace("report.md", "report-padded.md")).read()
    assert "Batching: **padded**, every set zero-padded to its batch's largest set" in padded_text
    assert "0.99" in padded_text and "0.65" not in padded_text


def test_a_folder_without_records_reports_the_masked_batching(tmp_path):
    assert batchings_in(str(tmp_path), SPEC.key) == ["masked"]
    text = open(write_report(SPEC, str(tmp_path))).read()
    assert "No cell of table3 has finished" in text and "Batching: **masked**" in text
