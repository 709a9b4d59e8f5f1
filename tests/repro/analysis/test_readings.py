import numpy as np
import pytest
from mzattn.repro.analysis import readings
from mzattn.repro.analysis.readings import (
    Outcome,
    consistent,
    group_table,
    implied_variance,
    judge,
    paper_numbers,
    set_size_r2,
    summary_line,
    zero_r2,
)
from mzattn.repro.cli import main
from mzattn.repro.core.readings import (
    Check,
    Reading,
    ReadingsData,
    Tolerance,
    load_readings,
    reading_of,
)

TOL = Tolerance(variance_factor=2.0, r2=0.05, plateau_spread=0.02, negative_r2_factor=10.0)


def test_implied_variance_arithmetic():
    assert implied_variance(3.43, 0.811) == pytest.approx(3.43 / 0.189)
    assert implied_variance(2.0, -1.0) == pytest.approx(1.0)  # R² = 1 - MSE / Var
    with pytest.raises(ValueError, match="no finite target variance"):
        implied_variance(1.0, 1.0)


def test_paper_numbers_read_the_paper_tables():
    check = Check("task_a", "variance", "table2", pairs=(("A MSE", "A R2"),))
    numbers = paper_numbers(check)
    assert len(numbers) == 6  # every row that prints both (not Deep Sets)
    assert numbers[0] == pytest.approx(3.43 / (1 - 0.811))
    rows = paper_numbers(Check("tdof", "set-size-r2", "table1", rows=("4",),
                               columns=("MZAttn-1L R2", "ST-4L R2")))
    assert rows == [0.995, 0.97]


@pytest.mark.parametrize(("statistic", "numbers", "ours", "passes"), [
    ("variance", [100.0, 110.0], 60.0, True),       # within a factor 2 of the mean, 105
    ("variance", [100.0, 110.0], 50.0, False),
    ("variance", [100.0], 1e-4, False),
    ("set-size-r2", [0.2, 0.8], 0.24, True),        # bound: weakest 0.2 + 0.05
    ("set-size-r2", [0.2, 0.8], 0.26, False),
    ("set-size-r2", [0.744, 0.745], 0.70, True),    # plateau: within 0.05 of 0.7445
    ("set-size-r2", [0.744, 0.745], 0.04, False),   # far below a plateau fails
    ("zero-r2", [-60.0, -0.1], -10.0, True),        # within a factor 10 of -60
    ("zero-r2", [-60.0, -0.1], -2000.0, False),
    ("zero-r2", [-60.0], 5.0, False),               # opposite signs
])
def test_consistency_rule(statistic, numbers, ours, passes):
    assert judge(Check("g", statistic, "t"), numbers, ours, TOL) is passes


def test_set_size_r2_finds_a_function_of_n():
    rng = np.random.default_rng(0)
    n = rng.integers(10, 51, 2000)
    assert set_size_r2(n, np.sqrt(np.log(n))) == pytest.approx(1.0, abs=1e-6)
    assert set_size_r2(n, rng.standard_normal(2000)) == pytest.approx(0.0, abs=0.02)
    assert zero_r2(np.array([1.0, 3.0])) == pytest.approx(-4.0)


def test_consistent_and_summary_name_readings():
    outcomes = {"a": [Outcome(1.0, True), Outcome(1.0, False)],
                "b": [Outcome(1.0, True), Outcome(1.0, True)]}
    assert consistent(outcomes) == ["b"]
    checks = [Check("g", "variance", "table2"), Check("g", "variance", "table4")]
    assert summary_line("g", outcomes, checks) == "**g**: consistent: b."
    outcomes["b"][1] = Outcome(1.0, False)
    line = summary_line("g", outcomes, checks)
    assert "most checks passed (1 of 2): a, b" in line and "table4: none" in line
    outcomes = {"a": [Outcome(1.0, False)] * 2, "b": [Outcome(1.0, False)] * 2}
    assert "no reading passes any check" in summary_line("g", outcomes, checks)


def test_table_names_each_reading_with_a_fake_statistic():
    spec = ReadingsData(readings=(Reading("g", "first", "set_max", "the first"),
                          Reading("g", "second", "set_max", "the second")),
                checks=(Check("g", "variance", "table2", pairs=(("A MSE", "A R2"),)),),
                tolerance=TOL)
    values = {"first": 18.0, "second": 2000.0}
    lines = group_table(spec, "g", 10, statistic=lambda r, c, s, seed: values[r.name])
    assert "| check | paper | first | second |" in lines
    assert any("18 ✓" in line and "2e+03 ✗" in line for line in lines)
    assert "| reading | | the first | the second |" in lines
    assert lines[-1] == "**g**: consistent: first."


def test_data_file_is_complete():
    spec = load_readings()
    assert {"max", "sum", "median", "range", "task_a", "task_b", "task_f", "task_g", "meb",
            "quadratic_tdof"} <= set(spec.groups)
    for check in spec.checks:
        assert paper_numbers(check), check  # every check finds its numbers in the paper
    names = [(r.group, r.name) for r in spec.readings]
    assert len(names) == len(set(names))


def test_bad_data_file_names_the_entry(tmp_path):
    path = tmp_path / "readings.toml"
    path.write_text('[tolerance]\nvariance_factor = 2.0\nr2 = 0.05\nplateau_spread = 0.02\n'
                    'negative_r2_factor = 10.0\n[[reading]]\ngroup = "g"\nname = "a"\n'
                    'built = true\ntask = "set_max"\ntext = "t"\n[[check]]\ngroup = "g"\n'
                    'statistic = "mean"\ntable = "table2"\n')
    with pytest.raises(ValueError, match=r"readings.toml: check 0 .* unknown group or statistic"):
        load_readings(str(path))


def test_command_prints_one_task_quickly(capsys):
    assert main(["readings", "task_a", "--sets", "200"]) == 0
    out = capsys.readouterr().out
    assert "### task_a" in out and "| check | paper | dimension-maxima | element-maxima |" in out
    assert "variance · table2 A" in out and out.strip().splitlines()[-1].startswith("**task_a**")


def test_command_rejects_an_unknown_task(capsys):
    with pytest.raises(SystemExit):
        readings.cli(["task_x"])
    assert "unknown task ['task_x']" in capsys.readouterr().err


def test_malformed_entries_name_the_file_and_entry(tmp_path):
    path = tmp_path / "readings.toml"
    path.write_text('[[reading]]\ngroup = "g"\nname = "a"\ntask = "set_max"\n')
    with pytest.raises(ValueError, match=r"readings.toml: reading 0 .*'text'"):
        load_readings(str(path))
    path.write_text('[[reading]\n')
    with pytest.raises(ValueError, match="readings.toml: not valid TOML"):
        load_readings(str(path))


def test_a_column_runs_the_most_specific_reading_else_the_built_one():
    assert reading_of("set_max", {}).name == "entries"
    assert reading_of("set_max", {"reduction": "per-dim-sum", "d": 8}).name == "per-dim-sum"
    assert reading_of("set_max", {"reduction": "per-element-sum", "n_max": 100}).group == "task_a"
    assert reading_of("task_f", {"chamfer": "unaligned", "chamfer_reduction": "sum"}).name == \
        "unaligned-sum"
    assert reading_of("task_f", {"chamfer": "unaligned"}).name == "aligned-mean"  # not a reading
    assert reading_of("set_matching", {}) is None  # a task the paper leaves no doubt about


def test_each_group_marks_exactly_one_reading_as_built(tmp_path):
    path = tmp_path / "readings.toml"
    entry = '[[reading]]\ngroup = "g"\nname = "{}"\ntask = "set_max"\ntext = "t"\n'
    path.write_text(entry.format("a") + entry.format("b"))
    with pytest.raises(ValueError, match="group 'g' marks 0 readings as built"):
        load_readings(str(path))
