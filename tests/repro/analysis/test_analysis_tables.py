import json
import os
import subprocess
import sys

import pytest
import torch
from mzattn.repro.analysis import cli, load_checkpoint
from mzattn.repro.analysis.study import METHODS

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))


@pytest.fixture(scope="module")
def smoke_out(tmp_path_factory, data_root):
    out = str(tmp_path_factory.mktemp("analysis"))
    assert cli(["table21", "--profile", "smoke", "--out", out, "--data-root", data_root]) == 0
    return out


def test_uncertainty_tables_at_smoke(smoke_out, data_root):
    for key in ("table19", "table20"):
        assert cli([key, "--profile", "smoke", "--out", smoke_out,
                    "--data-root", data_root]) == 0
    with open(os.path.join(smoke_out, "uncertainty", "seed0.json")) as f:
        record = json.load(f)
    assert set(METHODS) <= set(record["methods"])
    assert record["methods"]["MC-Dropout"]["passes"] == 3
    assert record["methods"]["Deep Ensemble"]["models"] == 2
    assert sum(b["count"] for b in record["ihw_bins"]) == record["num_test"] == 20
    for key in ("table19", "table20", "table21"):
        text = open(os.path.join(smoke_out, key, "report.md")).read()
        assert "## Verdicts" in text and "Paper" in text
    assert os.path.getsize(os.path.join(smoke_out, "table21", "table21.png")) > 0


def test_checkpoint_round_trip_and_commands(smoke_out, data_root, tmp_path):
    path = os.path.join(smoke_out, "uncertainty", "ckpt", "mz-full_s0_m0.pt")
    model, info = load_checkpoint(path)
    assert info.model == "mz-full" and info.task == "task_b" and not model.training
    again, _ = load_checkpoint(path)
    x, batch = torch.randn(7, info.in_channels), torch.tensor([0, 0, 0, 1, 1, 1, 1])
    assert torch.equal(model(x, batch)[0], again(x, batch)[0])
    out = str(tmp_path / "ihw")
    assert cli(["ihw", path, "--out", out, "--data-root", data_root]) == 0
    with open(os.path.join(out, "ihw_summary.json")) as f:
        summary = json.load(f)["test"]
    assert len(summary["bins"]) == 5 and {"ece", "nll", "spearman"} <= set(summary)
    assert cli(["probe", path, "--out", str(tmp_path / "probe"), "--data-root",
                data_root]) == 0
    assert (tmp_path / "probe" / "figure3.png").exists()
    with pytest.raises(ValueError, match="analysis checkpoint"):
        torch.save({"x": 1}, str(tmp_path / "bad.pt"))
        load_checkpoint(str(tmp_path / "bad.pt"))


def test_probing_and_tdof_figures_at_smoke(tmp_path, data_root):
    out = str(tmp_path)
    assert cli(["figure3", "--profile", "smoke", "--out", out, "--data-root", data_root]) == 0
    with open(os.path.join(out, "figure3", "probe.json")) as f:
        record = json.load(f)
    assert [L for L, _ in record["effective_rank"]] == [2, 4]
    assert all(0 < rank <= L for L, rank in record["effective_rank"])
    for key in ("table14", "figure2"):  # no table results under out: "not run"
        assert cli([key, "--profile", "smoke", "--out", out]) == 0
        assert "not run" in open(os.path.join(out, key, "report.md")).read()
    assert cli(["tdof"]) == 0
    assert cli(["unknown"]) == 2


def test_figure3_trainings_on_two_workers_equal_those_in_process(tmp_path, data_root, capsys):
    one, two = str(tmp_path / "one"), str(tmp_path / "two")
    common = ["figure3", "--profile", "smoke", "--data-root", data_root, "--threads", "1"]
    assert cli([*common, "--out", one, "--jobs", "1"]) == 0
    assert cli([*common, "--out", two, "--jobs", "2"]) == 0
    lines = capsys.readouterr().out
    assert "cells: 2 done, 0 running, 0 failed, 0 queued (of 2)" in lines
    assert "figure3 mz-full_L4: trained" in lines
    for budget in (2, 4):
        name = os.path.join("figure3", "ckpt", f"mz-full_L{budget}.pt")
        first, second = load_checkpoint(os.path.join(one, name))[0].state_dict(), \
            load_checkpoint(os.path.join(two, name))[0].state_dict()
        assert all(torch.equal(first[key], second[key]) for key in first)
    assert cli([*common, "--out", two, "--jobs", "2"]) == 0  # trained before: no worker
    assert "2 of 2 cells finished before: skipped" in capsys.readouterr().out


@pytest.mark.slow
def test_table_script_runs_as_a_plain_script(tmp_path):
    script = os.path.join(REPO, "repro", "tables", "figure2_tdof.py")
    result = subprocess.run([sys.executable, script, "--profile", "smoke", "--out", str(tmp_path)],
                            capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    assert (tmp_path / "figure2" / "figure2.png").exists()


@pytest.mark.parametrize("batching", ["masked", "padded"])
def test_load_cell_checkpoint_of_a_harness_cell(tmp_path, options, batching):
    import dataclasses

    from mzattn.repro.analysis.checkpoint import load_cell_checkpoint
    from mzattn.repro.core.registry import load_spec
    from mzattn.repro.engine.runner import grid, run_table
    from mzattn.repro.training.layout import cell_path, checkpoint_dir
    spec = load_spec("table3")
    keep = dataclasses.replace(options, keep_checkpoints=True)
    records = run_table(spec, "smoke", models=["MZAttn-Full"], columns=["d=8"],
                        out=str(tmp_path), options=keep, batching=batching)
    assert records[0]["status"] == "ok", records[0].get("traceback")
    cell = grid(spec, "smoke", ["MZAttn-Full"], ["d=8"], batching=batching)[0]
    ckpt = os.path.join(checkpoint_dir(str(tmp_path), cell), "best.ckpt")
    model, info = load_cell_checkpoint(cell_path(str(tmp_path), cell), ckpt,
                                       root=options.data_root)
    assert info.model == "mz-full" and info.task == "meb" and info.in_channels == 8
    assert info.batching == batching and info.datamodule().batching == batching
    state = torch.load(ckpt, map_location="cpu", weights_only=True)["state_dict"]
    assert torch.equal(model.state_dict()["head.lins.0.weight"],
                       state["model.head.lins.0.weight"])
