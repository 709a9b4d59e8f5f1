import os

from mzattn.repro.cli import main
from mzattn.repro.core.spec import SMOKE, Column, Row, TableSpec
from mzattn.repro.engine.datagen import synthetic_tables, time_table
from mzattn.repro.tables.table03_meb import SPEC as TABLE3

SPEC = TableSpec(
    key="tiny", title="tiny", rows=(Row("Standard", "standard"), Row("Deep Sets", "deep-sets")),
    columns=(Column("n=10-30", "meb", {"d": 4}),
             Column("n=40-50", "meb", {"d": 4, "test_n_min": 40, "test_n_max": 50}),
             Column("QM9", "qm9", {"targets": "mu"})),
    profiles={"smoke": SMOKE, "quick": SMOKE, "full": SMOKE})


def _rows(text, table):
    # the cells of the Markdown lines of `table`
    return [[cell.strip() for cell in line.strip("|").split("|")]
            for line in text.splitlines() if line.startswith(f"| {table} |")]


def test_cli_generates_every_column_then_reads_the_cache(tmp_path, capsys):
    root = str(tmp_path)
    labels = [column.label for column in TABLE3.select_columns(None, "smoke")]
    assert main(["datagen", "table3", "--profile", "smoke", "--root", root]) == 0
    first = capsys.readouterr().out
    *columns, total = _rows(first, "table3")
    assert [row[1] for row in columns] == labels == ["d=8", "d=16", "d=32"]
    assert [row[4] for row in columns] == ["64"] * 3  # 32 + 16 + 16 sets, one seed
    assert total[1:3] == [", ".join(labels), "192"]
    splits = [f for f in os.listdir(tmp_path / "meb" / "processed")
              if f.startswith(("train_", "val_", "test_"))]
    assert len(splits) == 9  # 3 columns x 3 splits
    assert "load average" in first
    assert main(["datagen", "table3", "--profile", "smoke", "--root", root]) == 0
    *columns, total = _rows(capsys.readouterr().out, "table3")
    assert [row[4] for row in columns] == ["0"] * 3 and total[2] == "0"


def test_time_table_skips_real_data_and_counts_shared_splits(tmp_path):
    result = time_table(SPEC, "smoke", str(tmp_path))
    assert result["skipped"] == ["QM9"]
    assert [c["column"] for c in result["columns"]] == ["n=10-30", "n=40-50"]
    # the second column differs in its test sets only: train and val come from the cache
    assert [c["generated"] for c in result["columns"]] == [64, 16]
    assert [c["sets"] for c in result["columns"]] == [64, 64]
    assert [c["regenerated"] for c in result["columns"]] == [0, 0]
    assert result["generated"] == 80 and result["generate_s"] > 0


def test_default_tables_have_a_synthetic_column():
    tables = synthetic_tables("quick")
    assert {"table3", "table22", "table31"} & set(tables) == {"table3", "table22"}
    assert "table28" not in tables  # QM9 only


def test_cli_unknown_table_is_an_error(capsys):
    assert main(["datagen", "table99", "--profile", "smoke"]) == 2
    assert "table99" in capsys.readouterr().err
