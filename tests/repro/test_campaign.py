import os
import os.path as osp

import pytest
from mzattn.repro import campaign as campaign_module
from mzattn.repro.campaign import CAMPAIGNS, Entry, campaign_cells, cli
from mzattn.repro.core.registry import load_spec
from mzattn.repro.training.cells import cell_config, peek_record


def test_every_campaign_names_existing_rows_and_columns():
    for name in CAMPAIGNS:
        assert campaign_cells(name)


def test_meb_corner_runs_the_corner_at_the_papers_protocol():
    cells = campaign_cells("meb-corner")
    assert [c.row.label for c in cells] == ["Standard", "Standard (mean-pool head)",
                                            "MZAttn-Full"]
    config = cell_config(load_spec("table3-sensitivity"), cells[0], "full")
    assert config["task_overrides"] == {"d": 8, "max_clusters": 1, "spread_min": 1.0,
                                        "spread_max": 1.0}
    assert config["training"]["max_epochs"] == 200 and config["training"]["patience"] == 20
    batch = [c for c in campaign_cells("paper-protocol") if c.table == "table3-sensitivity"]
    assert {c.column.label for c in batch} == {"batch 256"}  # no reading of the distribution
    config = cell_config(load_spec("table3-sensitivity"), batch[0], "full")
    assert config["task_overrides"] == {"d": 8} and config["training"]["batch_size"] == 256
    assert config["training"]["max_epochs"] == 200 and config["training"]["lr"] == 1e-4


def test_paper_protocol_lists_the_issues_cells_then_mamba_and_egnn():
    cells = campaign_cells("paper-protocol")
    assert len(cells) == 74
    table1 = {c.column.label for c in cells if c.table == "table1"}
    from mzattn.repro.tables.table01_depth_separation import PAPER_COLUMNS
    assert table1 == set(PAPER_COLUMNS)  # every L of its claims
    from mzattn.repro.tables.table03_meb import PMA_BASELINES
    d32 = {c.row.label for c in cells if c.table == "table3" and c.column.label == "d=32"}
    assert d32 >= {*PMA_BASELINES, "MZAttn-Full", "Mamba + PMA"}  # Table 3's claims at d=32
    order = [(c.table, c.column.label) for c in cells]  # what decides a claim soonest first
    assert order.index(("table1", "L=16")) < order.index(("table3", "d=32")) \
        < order.index(("table3-sensitivity", "batch 256")) < order.index(("table1", "L=32")) \
        < order.index(("table1", "L=24"))
    table7 = [(c.row.label, c.column.label) for c in cells[54:60]]  # after Table 1 at L=24
    assert table7 == [(row, f"Quadratic TDOF L={L}") for L in (4, 8, 16)
                      for row in ("ST-Large", "MZAttn (ours)")]
    assert [(c.table, c.row.label, c.column.label) for c in cells[60:]] == [
        ("table3", "Mamba + PMA", "d=8"), ("table3", "Mamba + PMA", "d=32"),
        ("table7", "EGNN", "Quadratic TDOF L=4"), ("table7", "EGNN", "Quadratic TDOF L=8"),
        ("table7", "EGNN", "Quadratic TDOF L=16"), ("table1", "EGNN", "L=24"),
        ("table1", "EGNN", "L=32"),
        *(("table3", row, "d=32") for row in ("HyperNet (r=8)", "HyperNet (r=64, full key-rank)",
                                             "Perceiver", "LA-ST (Linear Attn.)")),
        *(("table1", "EGNN", f"L={L}") for L in (4, 8, 16))]  # decided claims, then the twins


def test_table7_invariant_runs_the_claim_that_paper_protocol_leaves_undecided():
    from mzattn.repro.tables.egnn_comparison import INVARIANT
    cells = campaign_cells("table7-invariant")
    assert {(c.row.label, c.column.label) for c in cells} == {
        (row, column.label) for row in ("EGNN", "MZAttn (ours)") for column in INVARIANT}
    assert len(cells) == 20 and all(c.table == "table7" for c in cells)
    protocol = {(c.table, c.row.label, c.column.label) for c in campaign_cells("paper-protocol")}
    assert not protocol & {(c.table, c.row.label, c.column.label) for c in cells}


def test_a_campaign_runs_the_seeds_it_is_given(tmp_path, data_root, monkeypatch, capsys):
    monkeypatch.setitem(CAMPAIGNS, "one", (Entry("table3", ("Standard",), ("d=8",)),))
    monkeypatch.setenv("MZATTN_DATA", data_root)
    args = ["one", "--out", str(tmp_path), "--profile", "smoke", "--seeds", "1,2"]
    assert cli([*args, "--status"]) == 0
    rows = [line for line in capsys.readouterr().out.splitlines() if line.startswith("| table3")]
    assert [row.split(" | ")[1] for row in rows] == ["Standard__d_8__s1", "Standard__d_8__s2"]
    assert cli([*args, "--threads", "1"]) == 0
    cells = sorted(p.name for p in (tmp_path / "table3" / "cells").iterdir())
    assert cells == ["Standard__d_8__s1.json", "Standard__d_8__s2.json"]
    with pytest.raises(SystemExit):
        cli([*args[:-1], "1,two"])
    assert "argument --seeds: must be integers (got '1,two')" in capsys.readouterr().err


def test_knobs_runs_the_choices_the_verdicts_lean_on():
    cells = campaign_cells("knobs")  # --seeds 0 by default: the Table 7 entry keeps its own
    table7 = [c for c in cells if c.table == "table7"]
    assert {c.seed for c in table7} == {0, 1, 2} and len(table7) == 3 * 3 * 3
    assert {c.column.label for c in table7} == {f"Quadratic TDOF L={L}" for L in (4, 8, 16)}
    table1 = {(c.row.label, c.column.label) for c in cells if c.table == "table1"}
    assert table1 == {(row, column) for row in ("ST-4L", "MZAttn-1L")
                      for column in ("L=16, d=64", "L=32, d=64", "L=4, d=64",
                                     "L=4, 5K train", "L=32, 5K train")}
    spec = load_spec("table1")
    d64 = next(c for c in cells if c.column.label == "L=32, d=64")
    assert cell_config(spec, d64, "full")["task_overrides"] == {"L": 32, "d": 64}
    small = next(c for c in cells if c.column.label == "L=4, 5K train")
    assert cell_config(spec, small, "full")["task_overrides"] == {"L": 4, "num_train": 5000}
    assert spec.paper_label("ST-4L", "L=32, d=64") == ("32", "ST-4L R2")  # beside the paper's
    assert {c.column.label for c in cells if c.table == "table3"} == {"d=16"}
    sensitivity = {c.column.label for c in cells if c.table == "table3-sensitivity"}
    assert sensitivity == {"corner", "unit sets"}
    assert {c.cell_id for c in campaign_cells("meb-corner")} <= {c.cell_id for c in cells}


def test_table1_profiles_leave_the_knobs_out():
    from mzattn.repro.engine.runner import grid
    spec = load_spec("table1")
    for profile in ("smoke", "full"):
        assert {c.column.label for c in grid(spec, profile)} <= {f"L={L}" for L in
                                                                  (4, 8, 16, 24, 32)}


def test_readings_runs_the_claims_under_the_readings_the_paper_fixes():
    cells = campaign_cells("readings")
    columns = {(c.table, c.column.label) for c in cells}
    assert columns == {("table6", "Max [per-dim-sum]"), ("table6", "RotMatch [unaligned-sum]"),
                       ("table29", "Max [per-dim-sum]"), ("table2", "F [unaligned-sum]"),
                       ("table2", "A"), ("table2", "G"), ("table6", "MST"), ("table29", "Sum"),
                       ("table29", "Median"), ("table29", "Range")}
    assert all("[" not in c.column.label or "per-dim-sum" in c.cell_id
               or "unaligned-sum" in c.cell_id for c in cells)  # the id names the reading
    table6 = load_spec("table6")
    rot = next(c for c in cells if c.column.label == "RotMatch [unaligned-sum]")
    assert cell_config(table6, rot, "full")["task_overrides"] == {
        "d": 8, "chamfer": "unaligned", "chamfer_reduction": "sum"}
    assert table6.paper_label("Standard", "RotMatch [unaligned-sum]") == ("Standard", "RotMatch")
    assert "reading 'unaligned-sum'" in rot.column.reading
    table2 = load_spec("table2")
    assert table2.paper_label("HyperNet", "F [unaligned-sum]") == ("HyperNet", "F R2")
    # the reading columns are new cells; the columns kept for padded batching (Table 6's MST,
    # Table 29's Sum, Median and Range) are, masked, paper-protocol's own, and padded, cells of
    # their own
    protocol = {(c.table, c.cell_id) for c in campaign_cells("paper-protocol")}
    shared = protocol & {(c.table, c.cell_id) for c in cells}
    kept = {("table6", "MST"), ("table29", "Sum"), ("table29", "Median"), ("table29", "Range")}
    assert shared == {(c.table, c.cell_id) for c in cells if (c.table, c.column.label) in kept}
    assert len(shared) == 16
    assert [c.column.label for c in cells[-12:]] == ["MST"] * 4 + ["Median"] * 4 + ["Range"] * 4
    padded = campaign_cells("readings", batching="padded")
    assert not protocol & {(c.table, c.cell_id) for c in padded}


@pytest.mark.parametrize("table", ["table2", "table6", "table29"])
def test_reading_columns_stay_out_of_the_profiles(table):
    from mzattn.repro.engine.runner import grid
    spec = load_spec(table)
    for profile in ("smoke", "quick", "full"):
        assert not [c for c in grid(spec, profile) if c.column.variant_of]


def test_a_campaign_runs_the_batching_it_is_given(tmp_path, monkeypatch, capsys):
    monkeypatch.setitem(CAMPAIGNS, "one", (Entry("table3", ("Standard",), ("d=8",)),))
    assert [cell.cell_id for cell in campaign_cells("one", batching="padded-dataset")] == [
        "Standard__d_8__s0__padded-dataset"]
    assert cli(["one", "--out", str(tmp_path), "--profile", "smoke", "--batching", "padded",
                "--status"]) == 0
    rows = [line for line in capsys.readouterr().out.splitlines() if line.startswith("| table3")]
    assert [row.split(" | ")[1] for row in rows] == ["Standard__d_8__s0__padded"]


def test_a_campaign_runs_several_batchings_in_turn(tmp_path, data_root, monkeypatch, capsys):
    monkeypatch.setitem(CAMPAIGNS, "one", (Entry("table3", ("Standard",), ("d=8", "d=32")),))
    monkeypatch.setenv("MZATTN_DATA", data_root)
    assert [cell.cell_id for cell in campaign_cells("one", batching=("masked", "padded"))] == [
        "Standard__d_8__s0", "Standard__d_32__s0",
        "Standard__d_8__s0__padded", "Standard__d_32__s0__padded"]
    args = ["one", "--out", str(tmp_path), "--profile", "smoke", "--threads", "1",
            "--batching"]
    assert cli([*args, "padded,masked"]) == 0
    cells = sorted(os.listdir(osp.join(tmp_path, "table3", "cells")))
    assert cells == ["Standard__d_32__s0.json", "Standard__d_32__s0__padded.json",
                     "Standard__d_8__s0.json", "Standard__d_8__s0__padded.json"]
    assert {peek_record(osp.join(tmp_path, "table3", "cells", cell))["config"]["batching"]
            for cell in cells} == {"masked", "padded"}
    for bad in ("padded,padded", "masked,ragged", ","):
        with pytest.raises(SystemExit):
            cli([*args, bad, "--status"])
        assert "--batching: must be distinct batchings" in capsys.readouterr().err


def test_a_campaign_stores_activations_when_asked(tmp_path, data_root, monkeypatch):
    # the cells' MZ attention stores its activations (faster, same function), and the
    # record says so; a cell that ran the default says "recomputed"
    monkeypatch.setitem(CAMPAIGNS, "one", (Entry("table3", ("MZAttn-Full",), ("d=8",)),))
    monkeypatch.setenv("MZATTN_DATA", data_root)
    args = ["one", "--out", str(tmp_path), "--profile", "smoke", "--threads", "1"]
    assert cli([*args, "--store-activations"]) == 0
    assert cli([*args, "--seeds", "1"]) == 0
    records = {seed: peek_record(osp.join(tmp_path, "table3", "cells",
                                          f"MZAttn-Full__d_8__s{seed}.json"))
               for seed in (0, 1)}
    assert {seed: record["activations"] for seed, record in records.items()} == {
        0: "stored", 1: "recomputed"}


@pytest.mark.parametrize("statuses,code", [
    ({"table3/a": "busy"}, 75),  # ran nothing: another run holds its cells
    ({"table3/a": "busy", "table3/b": "ok"}, 0),
    ({"table3/a": "skipped"}, 0),
    ({"table3/a": "failed", "table3/b": "busy"}, 1),
])
def test_a_campaign_that_ran_nothing_for_busy_cells_does_not_exit_0(tmp_path, monkeypatch,
                                                                    capsys, statuses, code):
    monkeypatch.setitem(CAMPAIGNS, "one", (Entry("table3", ("Standard",), ("d=8",)),))
    monkeypatch.setattr(campaign_module, "launch", lambda *args, **kwargs: statuses)
    assert cli(["one", "--out", str(tmp_path), "--profile", "smoke"]) == code
    assert ("another run holds their locks" in capsys.readouterr().err) == \
        ("busy" in statuses.values())


def test_several_campaigns_run_as_one_in_the_order_named(tmp_path, monkeypatch, capsys):
    # the workers that one campaign's last long cells leave idle take the next one's cells
    monkeypatch.setitem(CAMPAIGNS, "one", (Entry("table3", ("Standard", "ST-Large"), ("d=8",)),))
    monkeypatch.setitem(CAMPAIGNS, "two", (Entry("table3", ("ST-Large", "Perceiver"), ("d=8",)),))
    ids = ["Standard__d_8__s0", "ST-Large__d_8__s0", "Perceiver__d_8__s0"]  # ST-Large once
    assert [cell.cell_id for cell in campaign_cells(("one", "two"))] == ids
    assert [cell.cell_id for cell in campaign_cells(["two", "one"])] == [ids[1], ids[2], ids[0]]
    with pytest.raises(ValueError, match="unknown campaign 'three'"):
        campaign_cells(("one", "three"))
    launched = []
    monkeypatch.setattr(campaign_module, "launch", lambda cells, *args, **kwargs: launched.extend(
        cell.cell_id for cell in cells) or {})
    assert cli(["one", "two", "--out", str(tmp_path), "--profile", "smoke"]) == 0
    assert launched == ids
    assert cli(["one", "two", "--out", str(tmp_path), "--profile", "smoke", "--status"]) == 0
    rows = [line for line in capsys.readouterr().out.splitlines() if line.startswith("| table3")]
    assert [row.split(" | ")[1] for row in rows] == ids
    with pytest.raises(SystemExit):
        cli(["one", "three", "--status"])
    assert campaign_module.subject(("one", "two")) == "campaign one+two"  # commits' subject
    assert campaign_module.subject("one") == "campaign one"


@pytest.mark.parametrize("text,seconds", [("2h45m", 9900.0), ("90m", 5400.0), ("1h", 3600.0),
                                          ("30s", 30.0), ("5400", 5400.0), ("0.5m", 30.0)])
def test_durations_read_as_a_user_writes_them(text, seconds):
    from mzattn.repro.engine.options import parse_duration
    assert parse_duration(text) == seconds


@pytest.mark.parametrize("text", ["", "0", "0m", "h", "2x", "-5m", "1m2h"])
def test_a_duration_that_is_not_one_says_so(text):
    import argparse

    from mzattn.repro.engine.options import parse_duration
    with pytest.raises(argparse.ArgumentTypeError, match="must be"):
        parse_duration(text)


def test_park_after_parks_the_running_cells_once_and_goes_on(tmp_path, monkeypatch, capsys):
    # the end of a session or a job's time limit will kill the run: it parks before, once
    import threading
    import time

    from mzattn.repro.training.layout import parked_dir

    from tests.repro.training.test_parking import _fake_checkpoints
    monkeypatch.setitem(CAMPAIGNS, "one", (Entry("table3", ("Standard", "ST-Large"), ("d=8",)),))
    out = str(tmp_path)
    cells = campaign_cells("one", profile="smoke")
    parks = []

    def training(cells, *args, **kwargs):  # two cells that train past the park's time
        for cell in cells:
            _fake_checkpoints(out, cell, f"last of {cell.cell_id}".encode(), b"best")
        deadline = time.monotonic() + 10
        while not all(osp.exists(parked_dir(out, cell)) for cell in cells) \
                and time.monotonic() < deadline:
            time.sleep(0.02)
        parks.append(sorted(os.listdir(osp.dirname(parked_dir(out, cells[0])))))
        time.sleep(0.3)  # goes on training after the park
        return {f"{cell.table}/{cell.cell_id}": "ok" for cell in cells}
    monkeypatch.setattr(campaign_module, "launch", training)
    threads = threading.active_count()
    assert cli(["one", "--out", out, "--profile", "smoke", "--park-after", "0.1s"]) == 0
    assert parks == [sorted(cell.cell_id for cell in cells)]
    said = capsys.readouterr().out
    assert said.count("--park-after: parking the cells not finished of campaign one") == 1
    assert all(f"parked table3/{cell.cell_id}" in said for cell in cells)
    assert threading.active_count() == threads  # the timer ended with the run
    monkeypatch.setattr(campaign_module, "launch", lambda *args, **kwargs: {})
    assert cli(["one", "--out", out, "--profile", "smoke", "--park-after", "1h"]) == 0
    assert threading.active_count() == threads  # a run that ends first cancels its park
    with pytest.raises(SystemExit):
        cli(["one", "--out", out, "--park", "--park-after", "1h"])


def test_time_limit_backfills_the_cells_of_a_local_run(tmp_path, monkeypatch):
    from mzattn.repro.engine.launch import first
    monkeypatch.setitem(CAMPAIGNS, "one", (Entry("table3", ("Standard",), ("d=8",)),))
    picks = []
    monkeypatch.setattr(campaign_module, "launch",
                        lambda *args, pick, **kwargs: picks.append(pick) or {})
    out = str(tmp_path)
    assert cli(["one", "--out", out, "--profile", "smoke"]) == 0
    assert cli(["one", "--out", out, "--profile", "smoke", "--time-limit", "2h55m"]) == 0
    assert picks[0] is first and picks[1] is not first  # the backfill's
    for other in (["--park"], ["--launcher", "slurm"]):
        with pytest.raises(SystemExit):
            cli(["one", "--out", out, "--time-limit", "1h", *other])
