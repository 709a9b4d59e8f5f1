from mzattn.repro.cli import main
from mzattn.repro.demo import DEMO, PROFILE, demo_spec


def test_the_demo_spec_is_table3_at_d8_with_a_demo_profile_first():
    spec = demo_spec()
    assert [row.model for row in spec.rows] == ["standard", "mz-full"]
    assert [column.label for column in spec.columns] == ["d=8"] and spec.key == "table3"
    assert "d=8" in spec.title and "16" not in spec.title  # names what runs
    assert list(spec.profiles)[0] == PROFILE and spec.profile(PROFILE) == DEMO
    assert (DEMO.num_train, DEMO.max_epochs, DEMO.seeds) == (500, 10, (0,))


def test_the_demo_says_what_runs_names_each_cell_and_ends_with_verdict_and_paths(
        tmp_path, data_root, capsys):
    status = main(["demo", "--profile", "smoke", "--out", str(tmp_path), "--device", "cpu",
                   "--data-root", data_root, "--no-progress"])
    lines = capsys.readouterr().out.splitlines()
    assert status == 0
    folder = tmp_path / "table3"
    assert lines[0].startswith("demo: trains Standard and MZAttn-Full on MEB radius at d=8")
    assert lines[0].endswith(f"go to {folder}/.")
    epochs = [line for line in lines if " epoch " in line]
    assert epochs and all(line.startswith(("[Standard d=8 seed 0] epoch",
                                           "[MZAttn-Full d=8 seed 0] epoch"))
                          and line.endswith(" left") for line in epochs)
    assert any(line.startswith("| MZAttn-Full | d=8 |") and "0.691 ± 0.012" in line
               for line in lines)
    assert lines[-3].startswith("verdict: **")
    assert lines[-2:] == [f"report: {folder / 'report.md'}",
                          f"figures: {folder / 'curves.png'}, {folder / 'table3.png'}"]
    assert not any(line.startswith("![") for line in lines)
