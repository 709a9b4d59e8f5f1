import pytest
from filelock import FileLock
from mzattn.repro.campaign import CAMPAIGNS, Entry, campaign_cells
from mzattn.repro.core.registry import load_spec
from mzattn.repro.engine import status
from mzattn.repro.engine.backfill import backfill
from mzattn.repro.engine.launch import CellRun
from mzattn.repro.training.cells import RunOptions
from mzattn.repro.training.history import FIELDS, write_csv_atomic
from mzattn.repro.training.layout import lock_path, log_path

HOURS = {"Standard": 3.0, "ST-Large": 2.0, "Perceiver": 0.5}
r"""The probed hours of each cell at its cap."""


@pytest.fixture
def cells(monkeypatch):
    monkeypatch.setitem(CAMPAIGNS, "one", (Entry("table3", tuple(HOURS), ("d=8",)),))
    monkeypatch.setattr(status.CellRun, "cost", lambda run: 3600 * HOURS[run.cell.row.label])
    return campaign_cells("one")


def _queue(cells, out):
    return [CellRun(cell, "full", out, RunOptions()) for cell in cells]


def test_the_first_cell_that_ends_in_time_starts(tmp_path, cells, capsys):
    out = str(tmp_path)
    queue = _queue(cells, out)
    assert backfill(cells, out, "full", 10 * 3600)(queue) == 0  # time for all: in order
    assert capsys.readouterr().out == ""
    assert backfill(cells, out, "full", 2.5 * 3600)(queue) == 1  # ST-Large's 2 h fit
    assert "--time-limit: table3 ST-Large__d_8__s0 starts before 1 queued that may not " \
           "end in the 2.50 h left (it has ≤ 2.00 h)" in capsys.readouterr().out
    assert backfill(cells, out, "full", 3600)(queue) == 2
    assert backfill(cells, out, "full", 3600)(queue[:2]) == 1  # none fits: the shortest
    assert "no queued cell ends by its cap in the 1.00 h left: the shortest, table3 " \
           "ST-Large__d_8__s0 (≤ 2.00 h), starts" in capsys.readouterr().out


def test_the_time_left_shrinks_as_the_run_goes_on(tmp_path, cells, monkeypatch):
    from mzattn.repro.engine import backfill as module
    now = [1000.0]
    monkeypatch.setattr(module.time, "monotonic", lambda: now[0])
    out = str(tmp_path)
    pick, queue = backfill(cells, out, "full", 3.5 * 3600), _queue(cells, out)
    assert pick(queue) == 0
    now[0] += 1.0 * 3600  # 2.5 h left
    assert pick(queue) == 1


def test_a_cell_with_epochs_is_timed_on_them(tmp_path, cells):
    out = str(tmp_path)
    cap = load_spec("table3").profile("full").max_epochs
    write_csv_atomic([dict.fromkeys(FIELDS, 1.0) | {"epoch": epoch, "epoch_time_s": 10.0}
                      for epoch in range(1, cap - 9)], log_path(out, cells[0]))
    assert backfill(cells, out, "full", 3600)(_queue(cells, out)) == 0  # 10 epochs of 10 s


def test_cells_without_an_estimate_start_in_order_when_no_other_has_one(tmp_path, cells,
                                                                         monkeypatch):
    out = str(tmp_path)
    monkeypatch.setattr(status.CellRun, "cost", lambda run: None)  # a real dataset's
    assert backfill(cells, out, "full", 3600)(_queue(cells, out)[1:]) == 0


def test_a_cell_another_process_runs_is_passed_over(tmp_path, cells):
    out = str(tmp_path)
    path = tmp_path / lock_path(out, cells[2])
    path.parent.mkdir(parents=True, exist_ok=True)
    with FileLock(str(path)):  # as run_cell holds it
        assert backfill(cells, out, "full", 3600)(_queue(cells, out)) == 1  # the shortest free
        assert backfill(cells, out, "full", 3600)(_queue(cells, out)[2:]) == 0  # none free
    assert backfill(cells, out, "full", 3600)(_queue(cells, out)) == 2


def test_a_seed_group_fits_when_all_its_seeds_do(tmp_path, monkeypatch):
    from mzattn.repro.engine.launch import GroupRun
    monkeypatch.setitem(CAMPAIGNS, "one", (Entry("table3", ("Perceiver",), ("d=8",)),))
    monkeypatch.setattr(status.CellRun, "cost", lambda run: 1800.0)
    out, cells = str(tmp_path), campaign_cells("one", seeds=(0, 1))
    queue = [GroupRun(tuple(cells), "full", out, RunOptions()), *_queue(cells[:1], out)]
    assert backfill(cells, out, "full", 0.9 * 3600)(queue) == 1  # the group has 1 h
    assert backfill(cells, out, "full", 1.1 * 3600)(queue) == 0
