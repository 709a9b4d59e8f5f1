import os.path as osp

import pytest
from mzattn.repro.summary import (
    README_BEGIN,
    README_END,
    readme_region,
    summary_rows,
    update_readme,
    verdict_table,
)
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
