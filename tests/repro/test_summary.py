import os.path as osp

import pytest
from mzattn.repro.cells import RECORD_VERSION, Cell, cell_config, cell_path, write_json_atomic
from mzattn.repro.summary import (
    README_BEGIN,
    README_END,
    readme_region,
    summary_rows,
    update_readme,
    verdict_table,
)
from mzattn.repro.table01_depth_separation import SPEC as TABLE1
from mzattn.repro.tables import list_tables, load_spec

ROOT = osp.dirname(osp.dirname(osp.dirname(osp.abspath(__file__))))
FOLDERS = ("results/full", "results/quick")  # the README's order: paper protocol first


def _summaries(root: str) -> dict[str, list[dict[str, str]]]:
    summaries = {}
    for out in FOLDERS:
        specs = [load_spec(key) for key in list_tables()
                 if osp.isdir(osp.join(root, out, key, "cells"))]
        summaries[out] = summary_rows(osp.join(root, out), specs)
    return summaries


def test_readme_verdict_table_is_generated_from_the_committed_results():
    with open(osp.join(ROOT, "README.md")) as f:
        region = readme_region(f.read())
    assert region is not None, "README.md lost its verdict region"
    expected = f"{README_BEGIN}\n{verdict_table(_summaries(ROOT))}\n{README_END}"
    assert region == expected, ("README.md's verdict table is stale: run `mzattn-repro report "
                                "--out results/full --out results/quick --readme README.md`")


def test_verdict_table_prefers_the_first_folder_and_skips_claims_not_run(tmp_path):
    row = {"table": "table3", "claim": "a | b", "verdict": "inconclusive", "convergence": "",
           "numbers": "x 1", "command": "mzattn-repro table3 --profile full"}
    table = verdict_table({"results/full": [row], "results/quick": [
        row | {"verdict": "reproduced"}, row | {"claim": "c", "verdict": "not run"}]})
    lines = table.splitlines()[2:]
    assert lines == ["| table3: a \\| b | **inconclusive** | — | x 1 | "
                     "`mzattn-repro table3 --profile full --out results/full` |"]
    readme = tmp_path / "README.md"
    readme.write_text(f"intro\n{README_BEGIN}\nold\n{README_END}\nrest\n")
    assert update_readme(str(readme), {"results/full": [row]})
    assert readme.read_text().startswith("intro\n") and "old" not in readme.read_text()
    assert not update_readme(str(readme), {"results/full": [row]})
    readme.write_text("no region")
    with pytest.raises(ValueError, match="no '<!-- verdicts:begin -->'"):
        update_readme(str(readme), {})


def _write(out, spec, row, column, r2, profile):
    cell = Cell(spec.key, next(r for r in spec.rows if r.label == row), spec.column(column), 0)
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
