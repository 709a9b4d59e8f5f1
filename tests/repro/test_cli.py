import logging
import os
import os.path as osp
import subprocess
import sys
import warnings

import pytest
from mzattn.baselines import build_model
from mzattn.repro.cli import COMMANDS, main
from mzattn.repro.core.quiet import LIBRARY_WARNINGS, LIGHTNING_BANNERS, quiet_libraries
from mzattn.repro.core.registry import list_tables, load_spec, table_title
from mzattn.repro.engine.options import parse_names

from mzattn.names import did_you_mean

ROOT = osp.dirname(osp.dirname(osp.dirname(osp.abspath(__file__))))


def test_help_describes_every_command_and_lists_the_tables_with_titles(capsys):
    assert main(["--help"]) == 0
    lines = capsys.readouterr().out.splitlines()
    for name, text in COMMANDS.items():
        assert any(line.split() and line.split()[0] == name and line.endswith(text)
                   for line in lines), name
    assert any(line.split()[:1] == ["table3"] and "MEB radius prediction" in line
               for line in lines)


@pytest.mark.parametrize("key", list_tables())
def test_titles_read_without_importing_equal_the_specs(key):
    assert table_title(key) == load_spec(key).title


def test_an_unknown_table_or_model_suggests_the_nearest_names(capsys):
    assert main(["tabel3"]) == 2
    assert "did you mean 'table3'" in capsys.readouterr().err
    with pytest.raises(ValueError, match="did you mean 'table3'"):
        load_spec("tabel3")
    with pytest.raises(ValueError, match="did you mean 'standard'"):
        build_model("standrd", 8, 1)
    with pytest.raises(ValueError, match="did you mean 'mz-full'"):
        load_spec("table3").select_rows(["mz-ful"])
    assert did_you_mean("zzzz", ["table3"]) == ""


def test_an_analysis_table_named_as_a_table_says_where_it_lives(capsys):
    assert main(["table14"]) == 2
    err = capsys.readouterr().err
    assert "run 'mzattn-repro analysis table14'" in err and "table4" not in err


def test_list_aligns_the_titles(capsys):
    assert main(["list"]) == 0
    lines = capsys.readouterr().out.splitlines()
    starts = {line.index(table_title(key)) for key, line in zip(list_tables(), lines,
                                                                strict=True)}
    assert len(starts) == 1


@pytest.mark.parametrize("key, option", [("table3", "--models"), ("table6", "--models"),
                                         ("table25", "--columns")])
def test_labels_with_commas_can_be_selected(key, option):
    spec = load_spec(key)
    items = spec.rows if option == "--models" else spec.columns
    labels = [item.label for item in items if "," in item.label][:2]
    assert labels, f"{key} has no label with a comma"
    text = ",".join([*labels, items[0].label])  # what the shell hands '--models'
    select = spec.select_rows if option == "--models" else spec.select_columns
    chosen = [item.label for item in select(parse_names(text))]
    assert sorted(chosen) == sorted({*labels, items[0].label})


def test_library_warnings_and_lightning_banners_are_filtered_narrowly(monkeypatch):
    monkeypatch.setenv("PYTHONWARNINGS", "")  # restored afterwards
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        quiet_libraries()
        warnings.warn("`torch.jit.script` is deprecated. Please switch", FutureWarning,
                      stacklevel=1)
        warnings.warn("our own warning", FutureWarning, stacklevel=1)
    assert [str(w.message) for w in caught] == ["our own warning"]
    assert logging.getLogger(LIGHTNING_BANNERS).getEffectiveLevel() == logging.WARNING


@pytest.mark.parametrize("progress, level", [(False, logging.WARNING), (True, logging.NOTSET)])
def test_a_plain_log_leaves_out_lightnings_info_lines(monkeypatch, progress, level):
    monkeypatch.setenv("PYTHONWARNINGS", "")  # restored afterwards
    logger = logging.getLogger("lightning.pytorch")
    monkeypatch.setattr(logger, "level", logger.level)  # restored afterwards
    quiet_libraries(progress)
    assert logger.level == level
    assert logging.getLogger(LIGHTNING_BANNERS).getEffectiveLevel() == logging.WARNING


def test_processes_started_after_quieting_filter_the_library_warnings(monkeypatch):
    monkeypatch.setenv("PYTHONWARNINGS", "")  # restored afterwards
    quiet_libraries()
    quiet_libraries()  # idempotent: each option once
    assert len(os.environ["PYTHONWARNINGS"].split(",")) == len(LIBRARY_WARNINGS)
    code = ("import warnings; warnings.warn('`torch.jit.script` is deprecated. Please', "
            "FutureWarning); warnings.warn('ours', FutureWarning)")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert "jit" not in done.stderr and "ours" in done.stderr, done.stderr


def test_list_prints_no_library_warning_and_imports_no_torch():
    code = ("import sys; from mzattn.repro.cli import main; main(['list']); "
            "assert 'torch' not in sys.modules")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert done.stderr == "" and "table3" in done.stdout


def test_table_help_imports_no_torch_and_gives_the_options_of_a_run():
    code = ("import sys; from mzattn.repro.cli import main; status = main(['table3', '--help']); "
            "assert 'torch' not in sys.modules and 'lightning' not in sys.modules; "
            "sys.exit(status)")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert table_title("table3") in done.stdout
    for option in ("--profile", "--columns", "--jobs", "--launcher", "--slurm-partition"):
        assert option in done.stdout
    assert "runs profile quick, results in results/runs/table3/" in " ".join(done.stdout.split())


def _region(path: str, begin: str, end: str) -> str:
    with open(path, encoding="utf-8") as f:
        text = f.read()
    return text.split(begin, 1)[1].split(end, 1)[0].strip("\n")


def test_committed_parameter_table_is_generated_from_the_registry():
    from mzattn.baselines.registry import models_table
    from mzattn.repro.cli import MODELS_BEGIN, MODELS_END
    page = osp.join(ROOT, "docs", "baselines.md")
    assert _region(page, MODELS_BEGIN, MODELS_END) == models_table(), (
        "docs/baselines.md's parameter table is stale: run "
        "`mzattn-repro models --docs docs/baselines.md`")


def test_models_docs_splices_the_table(tmp_path, capsys):
    from mzattn.repro.cli import MODELS_BEGIN, MODELS_END
    page = tmp_path / "page.md"
    page.write_text(f"head\n{MODELS_BEGIN}\nold\n{MODELS_END}\ntail\n")
    assert main(["models", "--docs", str(page)]) == 0
    text = page.read_text()
    assert text.startswith("head\n") and text.endswith("tail\n") and "old" not in text
    assert "| `mz-full` | MZAttn-Full |" in text and "| `mz-full` |" in capsys.readouterr().out


def test_cuda_without_a_gpu_fails_before_any_work(monkeypatch, tmp_path, capsys):
    import torch
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    with pytest.raises(SystemExit) as stop:
        main(["table3", "--profile", "smoke", "--device", "cuda", "--out", str(tmp_path)])
    assert stop.value.code == 2
    err = capsys.readouterr().err
    assert "'--device cpu'" in err and err.startswith("usage: mzattn-repro table3 ")
    assert not list(tmp_path.iterdir())


@pytest.mark.parametrize("argv, batching", [([], "masked"), (["--batching", "padded"], "padded"),
                                            (["--batching", "padded-dataset"], "padded-dataset")])
def test_batching_round_trips_from_the_command_line_to_the_cells(monkeypatch, tmp_path, argv,
                                                                  batching):
    from mzattn.repro.engine import runner
    ran = {}

    def run_table(spec, profile, models, columns, seeds, out, options, batching):
        ran["cells"] = runner.grid(spec, profile, models, columns, seeds, batching)
        return []
    monkeypatch.setattr(runner, "run_table", run_table)
    assert main(["table3", "--profile", "smoke", "--out", str(tmp_path), *argv]) == 0
    assert {cell.batching for cell in ran["cells"]} == {batching}


def test_an_unknown_batching_is_refused_before_any_work(tmp_path, capsys):
    with pytest.raises(SystemExit):
        main(["table3", "--profile", "smoke", "--batching", "pad", "--out", str(tmp_path)])
    assert "invalid choice: 'pad'" in capsys.readouterr().err and not list(tmp_path.iterdir())
