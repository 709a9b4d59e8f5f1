import os.path as osp

import pytest
from mzattn.repro.cli import main
from mzattn.repro.report.summary import (
    README_BEGIN,
    README_END,
    basis,
    begin_marker,
    folder_summaries,
    readme_folders,
    readme_region,
    summary_rows,
    update_readme,
    verdict_table,
)
from mzattn.repro.tables.table01_depth_separation import SPEC as TABLE1
from mzattn.repro.tables.table29_slot_attention import SPEC as TABLE29
from mzattn.repro.training.cells import RECORD_VERSION, cell_config, write_json_atomic
from mzattn.repro.training.layout import Cell, cell_path

ROOT = osp.dirname(osp.dirname(osp.dirname(osp.dirname(osp.abspath(__file__)))))
README = osp.join(ROOT, "README.md")


def test_readme_verdict_table_is_generated_from_the_committed_results():
    summaries = {osp.relpath(out, ROOT): rows
                 for out, rows in folder_summaries(readme_folders(README)).items()}
    assert list(summaries) == ["results/full", "results/quick"]  # the paper's protocol first
    with open(README) as f:
        region = readme_region(f.read())
    expected = f"{begin_marker(list(summaries))}\n{verdict_table(summaries)}\n{README_END}"
    assert region == expected, ("README.md's verdict table is stale: run `mzattn-repro report "
                                "--readme README.md`")


def test_verdict_table_prefers_the_first_folder_and_skips_claims_not_run(tmp_path):
    row = {"table": "table3", "claim": "a | b", "verdict": "inconclusive", "convergence": "",
           "numbers": "x 1", "command": "mzattn-repro table3 --profile full"}
    table = verdict_table({"results/full": [row], "results/quick": [
        row | {"verdict": "reproduced"}, row | {"claim": "c", "verdict": "not run"}]})
    lines = table.splitlines()[2:]
    assert lines == ["| table3: a \\| b | **inconclusive** | — | x 1 | "
                     "`mzattn-repro table3 --profile full --out results/full` |"]


def test_the_readme_region_lists_its_folders_relative_to_the_readme(tmp_path, monkeypatch):
    row = {"table": "table3", "claim": "a", "verdict": "reproduced", "convergence": "",
           "numbers": "x 1", "command": "mzattn-repro table3 --profile full"}
    readme = tmp_path / "README.md"
    readme.write_text(f"intro\n{README_BEGIN}\nold\n{README_END}\nrest\n")
    with pytest.raises(ValueError, match="marker lists no results folder"):
        readme_folders(str(readme))
    full = str(tmp_path / "results" / "full")  # as a campaign with an absolute --out gives it
    assert update_readme(str(readme), {full: [row]})
    text = readme.read_text()
    assert text.startswith("intro\n<!-- verdicts:begin results/full -->\n")
    assert text.endswith(f"{README_END}\nrest\n") and "old" not in text
    assert "`mzattn-repro table3 --profile full --out results/full` |" in text
    assert readme_folders(str(readme)) == [full]
    monkeypatch.chdir(tmp_path)
    assert readme_folders("README.md") == ["results/full"]
    assert not update_readme("README.md", {"results/full": [row]})
    readme.write_text("no region")
    with pytest.raises(ValueError, match="no '<!-- verdicts:begin -->'"):
        update_readme(str(readme), {})


def test_report_rebuilds_the_readme_from_the_folders_it_lists(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    _write("results/full", TABLE1, "MZAttn-1L", "L=4", 0.95, "full")
    readme = tmp_path / "README.md"
    readme.write_text(f"{README_BEGIN}\n{README_END}\n")
    with pytest.raises(SystemExit):  # no folder given or listed
        main(["report", "--readme", "README.md"])
    assert "marker lists no results folder" in capsys.readouterr().err
    assert main(["report", "--out", "results/full", "--readme", "README.md"]) == 0
    text = readme.read_text()
    assert text.startswith("<!-- verdicts:begin results/full -->\n") and "0.95" in text
    _write("results/full", TABLE1, "MZAttn-1L", "L=8", 0.5, "full")
    assert main(["report", "--readme", "README.md"]) == 0  # the folders it lists
    assert "README.md: verdict table updated" in capsys.readouterr().out
    assert "**contradicted**" in readme.read_text()
    assert osp.exists("results/full/table1/report.md")
    readme.write_text("no region\n")
    with pytest.raises(SystemExit):
        main(["report", "--out", "results/full", "--readme", "README.md"])
    assert "README.md has no '<!-- verdicts:begin -->'" in capsys.readouterr().err


def _write(out, spec, row, column, r2, profile, batching="masked"):
    cell = Cell(spec.key, next(r for r in spec.rows if r.label == row), spec.column(column), 0,
                batching)
    write_json_atomic({"version": RECORD_VERSION, "status": "ok", "profile": profile,
                       "cell_id": cell.cell_id, "metrics": {"r2": r2},
                       "config": cell_config(spec, cell, profile),
                       "epochs": 3, "stopped_early": True, "params": 1, "wall_time_s": 1.0},
                      cell_path(out, cell))


def test_a_summary_row_leads_with_the_failing_cells_and_names_the_fullest_profile(tmp_path):
    # Table 1: MZAttn-1L holds R² >= 0.90 at L=4 (read first) but not at L=8
    out = str(tmp_path)
    _write(out, TABLE1, "MZAttn-1L", "L=4", 0.95, "quick")
    _write(out, TABLE1, "MZAttn-1L", "L=8", 0.5, "full")
    row = summary_rows(out, [TABLE1])[0]
    assert row["verdict"] == "contradicted", row["detail"]
    assert row["numbers"] == "MZAttn-1L L=8 0.5 (paper 0.988); MZAttn-1L L=4 0.95 (paper 0.995)"
    assert row["command"] == "mzattn-repro table1 --profile full"  # not "quick", sorted last


def test_the_claims_of_a_padded_run_get_rows_of_their_own_naming_the_batching(tmp_path):
    out = str(tmp_path)
    _write(out, TABLE1, "MZAttn-1L", "L=4", 0.95, "full")
    _write(out, TABLE1, "MZAttn-1L", "L=4", 0.10, "full", batching="padded")
    rows = summary_rows(out, [TABLE1])
    masked = [r for r in rows if "batching)" not in r["claim"]]
    padded = [r for r in rows if r["claim"].endswith(" (padded batching)")]
    assert len(masked) == len(padded) == len(TABLE1.claims)
    assert masked[0]["numbers"].startswith("MZAttn-1L L=4 0.95")
    assert padded[0]["numbers"].startswith("MZAttn-1L L=4 0.1 ")
    assert padded[0]["command"] == "mzattn-repro table1 --profile full --batching padded"


def test_every_verdict_names_its_batching_and_the_readings_of_open_tasks():
    assert basis(TABLE29, "masked", (("Set Transformer", "Max"), ("Deep Sets", "Sum"))) == \
        "masked batching; readings: max entries, sum entries"
    assert basis(TABLE29, "padded", (("Deep Sets", "Max [per-dim-sum]"),)) == \
        "padded batching; readings: max per-dim-sum"
    rows = summary_rows(osp.join(ROOT, "results", "full"), [TABLE1, TABLE29])
    assert rows and any(row["basis"].startswith("masked batching; ") for row in rows)
    for row in rows:  # the campaign adds padded cells as it runs: each row names its own
        batching = "padded" if row["claim"].endswith(" (padded batching)") else "masked"
        assert row["basis"].startswith(f"{batching} batching; readings: "), row
    table = verdict_table({"results/full": rows})
    assert "converged; masked batching; readings: quadratic_tdof d=32 |" in table
