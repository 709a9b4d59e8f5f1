import os
import subprocess
import sys

import pytest
from mzattn.baselines import build_model
from mzattn.datasets.synthetic import get_config
from mzattn.repro.core.registry import TABLE_MODULES, list_tables, load_spec
from mzattn.repro.core.spec import PROFILES
from mzattn.repro.engine.runner import grid, run_table
from mzattn.repro.report.paper_values import TABLES
from mzattn.repro.training.cells import read_record
from mzattn.repro.training.layout import cell_path
from mzattn.repro.training.lightning_module import output_channels
from mzattn.repro.training.real_data import is_real

KEYS = list(TABLE_MODULES)
# Tables on real datasets, and the real columns of Table 2: their specs are
# checked in test_real_tables.py.
SYNTHETIC_KEYS = [key for key in KEYS
                  if not all(is_real(column.task) for column in load_spec(key).columns)]
REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))


def test_every_table_has_a_script():
    assert list_tables() == KEYS
    assert os.path.exists(os.path.join(REPO, "repro", "tables", "egnn_comparison.py"))
    assert TABLE_MODULES["table7"] == "egnn_comparison"


@pytest.mark.parametrize("key", SYNTHETIC_KEYS)
def test_spec_is_consistent_with_registry_tasks_and_paper(key):
    spec = load_spec(key)
    assert spec.key == key and set(spec.profiles) == set(PROFILES)
    for profile in PROFILES:
        assert grid(spec, profile)  # profile row/column subsets exist
    paper = TABLES[spec.paper]
    matched = 0
    for row in spec.rows:
        for column in (c for c in spec.columns if not is_real(c.task)):
            config = get_config(column.task, **column.overrides)
            out = output_channels(spec.loss_of(column.label), config.target_dim)
            model = build_model(row.model, config.num_features, out,
                                **column.overrides_for(row))
            assert sum(p.numel() for p in model.parameters()) > 0
            label = spec.paper_label(row.label, column.label)
            matched += label is not None and label[1] in paper.rows.get(label[0], {})
    assert matched > 0, f"no cell of {key} maps to a paper value"
    assert spec.claims


@pytest.mark.parametrize("key", KEYS)
def test_table_smoke_first_cell(key, tmp_path, options):
    spec = load_spec(key)
    records = run_table(spec, "smoke", models=[spec.rows[0].label],
                        columns=[spec.columns[0].label], out=str(tmp_path), options=options)
    assert [r["status"] for r in records] == ["ok"], records[0].get("traceback")
    assert (tmp_path / key / "report.md").exists()


@pytest.mark.slow
@pytest.mark.parametrize("key", KEYS)
def test_table_smoke_full_grid(key, tmp_path, options):
    records = run_table(load_spec(key), "smoke", out=str(tmp_path), options=options)
    failed = [r["cell_id"] + ": " + r.get("error", "") for r in records if r["status"] != "ok"]
    assert not failed


def test_egnn_comparison_runs_as_a_plain_script(tmp_path, data_root):
    script = os.path.join(REPO, "repro", "egnn_comparison.py")  # the path the project promises
    command = [sys.executable, script, "--profile", "smoke", "--models", "mz-full",
               "--columns", "Quadratic TDOF L=4", "--out", str(tmp_path), "--device", "cpu",
               "--data-root", data_root, "--no-progress"]
    env = {k: v for k, v in os.environ.items() if k != "PYTHONWARNINGS"}
    done = subprocess.run(command, capture_output=True, text=True, timeout=300, env=env)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "Warning" not in done.stderr, done.stderr  # PyG's torch.jit.script one included
    spec = load_spec("table7")
    cell = grid(spec, "smoke", ["mz-full"], ["Quadratic TDOF L=4"])[0]
    assert read_record(cell_path(str(tmp_path), cell))["status"] == "ok"


def test_reading_variant_names_the_reading_and_keeps_the_papers_numbers():
    from mzattn.repro.core.readings import find_reading
    from mzattn.repro.core.spec import Column, reading_variant
    column = Column("RotMatch", "task_f", {"d": 8})
    variant = reading_variant(column, find_reading("task_f", "unaligned-sum"))
    assert variant.label == "RotMatch [unaligned-sum]" and variant.variant_of == "RotMatch"
    assert variant.overrides == {"d": 8, "chamfer": "unaligned", "chamfer_reduction": "sum"}
    assert "docs/readings.md" in variant.reading
    with pytest.raises(ValueError, match="is of task 'set_max', not of column 'RotMatch'"):
        reading_variant(column, find_reading("max", "per-dim-sum"))
    with pytest.raises(ValueError, match="no reading 'median' of 'max'"):
        find_reading("max", "median")


def test_a_plain_script_help_names_it_and_gives_profile_cells_and_folder():
    script = os.path.join(REPO, "repro", "tables", "egnn_comparison.py")
    env = {k: v for k, v in os.environ.items() if k != "PYTHONWARNINGS"}
    done = subprocess.run([sys.executable, script, "--help"], capture_output=True, text=True,
                          timeout=300, env=env)
    assert done.returncode == 0 and done.stderr == "", done.stderr
    assert done.stdout.startswith("usage: egnn_comparison.py ")
    text = " ".join(done.stdout.split())
    cells = len(grid(load_spec("table7"), "quick"))
    assert f"By default this runs profile quick: {cells} cells" in text
    assert "results in results/runs/table7/" in text
