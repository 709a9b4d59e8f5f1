import dataclasses
import json
import math
import shutil

import pytest
import torch
from mzattn.repro.cli import main
from mzattn.repro.core.spec import Column
from mzattn.repro.report.report import write_report
from mzattn.repro.report.results import Results
from mzattn.repro.report.trust import doubt
from mzattn.repro.tables.table03_meb import SPEC
from mzattn.repro.training.cells import (
    RunOptions,
    cell_data,
    column_profile,
    metrics_digest,
    run_cell,
)
from mzattn.repro.training.layout import Cell, cell_path

ROW, COLUMN = SPEC.rows[0], SPEC.column("d=8")  # Standard, d=8


def _cell(seed):
    return Cell(SPEC.key, ROW, COLUMN, seed)


@pytest.fixture(scope="module")
def smoke(tmp_path_factory, data_root):
    r"""A smoke run of one cell of Table 3, seeds 0 and 1 (read only: copy it)."""
    out = str(tmp_path_factory.mktemp("smoke"))
    options = RunOptions(accelerator="cpu", progress=False, data_root=data_root)
    for seed in (0, 1):
        assert run_cell(SPEC, _cell(seed), "smoke", out, options)["status"] == "ok"
    return out


@pytest.fixture()
def out(smoke, tmp_path):
    shutil.copytree(smoke, tmp_path / "out")
    return str(tmp_path / "out")


def _path(out, seed):
    return cell_path(out, _cell(seed))


def _edit(path, edit):
    with open(path) as f:
        record = json.load(f)
    edit(record)
    with open(path, "w") as f:
        json.dump(record, f)  # NaN is written as JSON's NaN, as json.dump does


def _set_metric(name, value, checksum=False):
    def edit(record):
        record["metrics"][name] = value
        if checksum:  # a forger who also rewrites the checksum
            record["metrics_sha256"] = metrics_digest(record)
    return edit


def _report(out):
    assert main(["report", "--out", out]) == 0
    with open(f"{out}/{SPEC.key}/report.md") as f:
        return f.read()


def test_a_new_record_stores_the_test_targets_variance_and_passes(smoke, data_root):
    results = Results.load(SPEC, smoke)
    assert results.set_aside == [] and len(results.values(ROW.label, COLUMN.label)) == 2
    with open(_path(smoke, 0)) as f:
        record = json.load(f)
    options = RunOptions(accelerator="cpu", progress=False, data_root=data_root)
    profile = column_profile(SPEC.profile("smoke"), COLUMN)
    data = cell_data(_cell(0), profile, options)
    data.setup()
    test = data.splits[2]
    targets = torch.stack([data.y.view(-1) for data in test]).double()
    assert record["test_target_var"] == pytest.approx(
        targets.var(0, unbiased=False).tolist(), rel=1e-5)
    metrics = record["metrics"]  # one target: R² = 1 - MSE / var, to float rounding
    assert 1 - metrics["mse"] / record["test_target_var"][0] == pytest.approx(metrics["r2"],
                                                                            abs=1e-5)
    assert record["metrics_sha256"] == metrics_digest(record)
    assert doubt(SPEC, record, _path(smoke, 0)) is None


def test_nan_in_one_seed_sets_that_record_aside(out, capsys):
    _edit(_path(out, 1), _set_metric("r2", math.nan, checksum=True))
    results = Results.load(SPEC, out)
    assert len(results.values(ROW.label, COLUMN.label)) == 1
    assert results.set_aside == [f"{_path(out, 1)}: metric 'r2' is nan"]
    text = _report(out)
    assert "| Standard | d=8 | " in text and "(1 seed)" in text and "nan ±" not in text
    assert "## Records set aside" in text and f"- {_path(out, 1)}: metric 'r2' is nan" in text
    assert f"not counted: {_path(out, 1)}: metric 'r2' is nan" in capsys.readouterr().err


def test_nan_in_two_seeds_leaves_the_cell_not_run_without_a_crash(out):
    for seed in (0, 1):
        _edit(_path(out, seed), _set_metric("mse", math.nan))
    results = Results.load(SPEC, out)
    assert results.mean(ROW.label, COLUMN.label) is None and len(results.set_aside) == 2
    text = _report(out)
    assert "| Standard | d=8 | not run |" in text
    assert all(f"- {_path(out, seed)}: metric 'mse' is nan" in text for seed in (0, 1))


def test_a_metric_stored_as_a_string_is_set_aside(out):
    _edit(_path(out, 0), _set_metric("r2", "0.99", checksum=True))
    assert f"- {_path(out, 0)}: metric 'r2' is '0.99', not a number" in _report(out)
    assert len(Results.load(SPEC, out).values(ROW.label, COLUMN.label)) == 1  # seed 1 alone


def test_an_edited_r2_is_caught_by_the_checksum_and_by_its_mse(out):
    _edit(_path(out, 0), _set_metric("r2", 0.99))
    (line,) = Results.load(SPEC, out).set_aside
    assert line == (f"{_path(out, 0)}: its metrics do not match the checksum written with "
                    "them (metrics_sha256): edited after the run")
    _edit(_path(out, 0), _set_metric("r2", 0.99, checksum=True))  # the checksum forged too
    (line,) = Results.load(SPEC, out).set_aside
    assert line.startswith(f"{_path(out, 0)}: R² 0.99 contradicts its MSE ")
    assert "and the test targets' variance" in line and "(1 − MSE/var = " in line
    assert "contradicts its MSE" in _report(out)


def test_a_record_written_before_the_checks_still_counts(out):
    def legacy(record):
        del record["test_target_var"], record["metrics_sha256"]
    _edit(_path(out, 0), legacy)
    assert Results.load(SPEC, out).set_aside == []
    _edit(_path(out, 0), _set_metric("r2", 1.5))  # out of range needs no stored field
    assert Results.load(SPEC, out).set_aside == [
        f"{_path(out, 0)}: metric 'r2' is 1.5, outside [-inf, 1.0]"]


def test_a_record_of_another_cell_copied_in_is_set_aside(out):
    shutil.copy(_path(out, 0), cell_path(out, Cell(SPEC.key, SPEC.rows[1], COLUMN, 0)))
    results = Results.load(SPEC, out)
    assert results.set_aside == [
        f"{cell_path(out, Cell(SPEC.key, SPEC.rows[1], COLUMN, 0))}: a record of cell "
        f"'Standard__d_8__s0' under the name '{SPEC.rows[1].label}__d_8__s0'"]
    assert results.mean(SPEC.rows[1].label, COLUMN.label) is None

    def rename(record):  # the cell id edited to match: the configuration still tells
        record["cell_id"] = f"{SPEC.rows[1].label}__d_8__s0"
    _edit(cell_path(out, Cell(SPEC.key, SPEC.rows[1], COLUMN, 0)), rename)
    (line,) = Results.load(SPEC, out).set_aside
    assert line.endswith("its row, column, seed and batching are cell 'Standard__d_8__s0''s, "
                         f"not '{SPEC.rows[1].label}__d_8__s0''s")


def test_a_record_of_another_table_copied_in_is_set_aside(out):
    other = dataclasses.replace(SPEC, key="other", columns=(Column("d=8", "meb", {"d": 9}),),
                                sections=None, claims=())
    copy = cell_path(out, Cell("other", ROW, other.columns[0], 0))
    shutil.os.makedirs(shutil.os.path.dirname(copy))
    shutil.copy(_path(out, 0), copy)
    results = Results.load(other, out)
    assert results.ok == [] and results.stale == []
    assert results.set_aside == [
        f"{copy}: a record of table 'table3', not a run of this cell: stale: "
        "task_overrides.d 8 (now 9)"]
    with open(write_report(other, out)) as f:
        assert "## Records set aside" in f.read() and results.profiles == []
    unknown = dataclasses.replace(other, rows=SPEC.rows[1:])  # no such row at all
    assert Results.load(unknown, out).set_aside == [
        f"{copy}: other has no cell with row 'Standard' and column 'd=8' "
        "(a record of table 'table3')"]
    # the same run under another table's name (a twin, the demo's records) counts
    mirror = dataclasses.replace(SPEC, key="mirror")
    shutil.copytree(f"{out}/{SPEC.key}", f"{out}/mirror")
    assert len(Results.load(mirror, out).values(ROW.label, COLUMN.label)) == 2


def test_summary_counts_the_records_set_aside(out):
    _edit(_path(out, 0), _set_metric("r2", "high"))
    _report(out)
    with open(f"{out}/SUMMARY.md") as f:
        assert "Records set aside, not counted (each table's report names the files and " \
               "why): table3 1." in f.read()


@pytest.mark.parametrize("field, value", [("params", "1k"), ("epochs", "2"),
                                          ("split_sizes", "32/16/16"),
                                          ("history", [{"val_loss": "low"}]),
                                          ("history", [{"val_loss": 1.0,
                                                        "epoch_time_s": "2 s"}])])
def test_any_number_the_report_reads_stored_as_text_is_set_aside(out, field, value):
    _edit(_path(out, 0), lambda record: record.update({field: value}))
    (line,) = Results.load(SPEC, out).set_aside
    assert line.startswith(f"{_path(out, 0)}: ") and f"'{field}'" in line
    assert "| Standard | d=8 | " in _report(out)  # no traceback, seed 1 still shown


def test_the_training_time_counts_every_run_of_a_resumed_cell(out):
    # a resumed cell's wall_time_s is its last run's; its history carries
    # every epoch, and the report's training time sums those
    def resumed(record):
        record["history"] = [{"epoch": e, "val_loss": 1.0, "epoch_time_s": 30.0}
                             for e in (1, 2)]
        record |= {"resumed": True, "wall_time_s": 5.0}

    for seed in (0, 1):
        _edit(_path(out, seed), resumed)
    assert Results.load(SPEC, out).training_time() == 120.0
    assert "training time 2.0 min (every epoch" in _report(out)
