import shutil
import subprocess
import threading

import pytest
from filelock import FileLock
from mzattn.repro.campaign import CAMPAIGNS, Entry, campaign_cells, cli
from mzattn.repro.engine.commit import ResultsRepository
from mzattn.repro.report.summary import README_END, begin_marker
from mzattn.repro.training.layout import checkpoint_dir, parked_dir
from mzattn.repro.training.parking import park

from tests.repro.training.test_parking import _fake_checkpoints


def _git(repo, *args):
    return subprocess.run(["git", *args], cwd=repo, check=True, capture_output=True,
                          text=True).stdout


@pytest.fixture()
def repo(tmp_path):
    _git(tmp_path, "init", "-q")
    _git(tmp_path, "config", "user.name", "test")
    _git(tmp_path, "config", "user.email", "test@example.com")
    # as the project's: checkpoints and locks stay out of git, parked checkpoints do not
    (tmp_path / ".gitignore").write_text("/results/smoke/\n/results/**/ckpt/\n"
                                         "/results/**/locks/\n")
    (tmp_path / "README.md").write_text("# a project\n")
    _git(tmp_path, "add", ".")
    _git(tmp_path, "commit", "-q", "-m", "start")
    return tmp_path


def test_a_campaign_commits_each_cell_as_it_finishes(repo, data_root, monkeypatch):
    monkeypatch.setitem(CAMPAIGNS, "one", (Entry("table3", ("Standard",), ("d=8",)),))
    monkeypatch.setenv("MZATTN_DATA", data_root)
    out = repo / "results" / "full"
    args = ["one", "--out", str(out), "--profile", "smoke", "--threads", "1"]
    assert cli([*args, "--seeds", "1"]) == 0  # finished, not committed
    partial = out / "table3" / "logs" / "Other__d_8__s0.csv"  # a cell still running elsewhere
    partial.write_text("epoch,train_loss\n1,0.5\n")
    (repo / "README.md").write_text("# a project, edited\n")  # work of the user's
    _git(repo, "add", "README.md")

    assert cli([*args, "--seeds", "1,2", "--commit"]) == 0
    subjects = _git(repo, "log", "--format=%s").splitlines()
    assert subjects == ["campaign one: Standard__d_8__s2",  # as it finished
                        "campaign one: Standard__d_8__s1",  # left over, committed first
                        "start"]
    files = _git(repo, "show", "--name-only", "--format=", "HEAD~1").split()
    assert {"results/full/table3/cells/Standard__d_8__s1.json",
            "results/full/table3/logs/Standard__d_8__s1.csv",
            "results/full/table3/report.md", "results/full/SUMMARY.md"} <= set(files)
    assert "results/full/table3/cells/Standard__d_8__s2.json" in _git(
        repo, "show", "--name-only", "--format=", "HEAD")
    assert _git(repo, "status", "--porcelain").splitlines() == [
        "M  README.md", "?? results/full/table3/logs/Other__d_8__s0.csv"]


def test_commit_refuses_a_folder_git_does_not_keep(repo, tmp_path_factory, monkeypatch,
                                                   capsys):
    outside = tmp_path_factory.mktemp("no-repo") / "results"
    with pytest.raises(ValueError, match="is not inside a git repository"):
        ResultsRepository(str(outside))
    with pytest.raises(ValueError, match="git ignores the cell files under"):
        ResultsRepository(str(repo / "results" / "smoke"))
    monkeypatch.setitem(CAMPAIGNS, "one", (Entry("table3", ("Standard",), ("d=8",)),))
    with pytest.raises(SystemExit):  # before any cell runs
        cli(["one", "--out", str(repo / "results" / "smoke"), "--profile", "smoke", "--commit"])
    assert "git ignores the cell files under" in capsys.readouterr().err
    assert not (repo / "results" / "smoke" / "table3").exists()


def test_a_failed_commit_leaves_the_cells_for_the_next(repo):
    out = repo / "results" / "full"
    cell = out / "other" / "cells" / "a__s0.json"  # of no table: the summary stays empty
    cell.parent.mkdir(parents=True)
    cell.write_text("{}")
    repository = ResultsRepository(str(out))
    assert repository.uncommitted_cells() == ["results/full/other/cells/a__s0.json"]
    (repo / ".git" / "index.lock").write_text("")  # another git at work
    with pytest.raises(RuntimeError, match="git add"):
        repository.commit_finished("campaign one")
    (repo / ".git" / "index.lock").unlink()
    assert repository.commit_finished("campaign one") == [
        "results/full/other/cells/a__s0.json"]
    assert repository.uncommitted_cells() == []


def test_commit_keeps_the_readme_verdict_table_with_the_cells(repo, data_root, monkeypatch,
                                                               capsys):
    monkeypatch.setitem(CAMPAIGNS, "one", (Entry("table3", ("Standard",), ("d=8",)),))
    monkeypatch.setenv("MZATTN_DATA", data_root)
    readme = repo / "README.md"
    readme.write_text(f"# a project\n{begin_marker(['results/full'])}\n{README_END}\n")
    _git(repo, "commit", "-q", "-am", "a verdict table")
    out = repo / "results" / "full"
    args = ["one", "--out", str(out), "--profile", "smoke", "--threads", "1", "--commit",
            "--readme", str(readme)]
    with pytest.raises(SystemExit):  # the README's table is not built from this folder
        cli([*args[:2], str(repo / "results" / "other"), *args[3:]])
    assert "not from" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        cli(["one", "--out", str(out), "--readme", str(readme)])
    assert "--readme goes with --commit" in capsys.readouterr().err

    assert cli([*args, "--seeds", "1"]) == 0
    assert _git(repo, "status", "--porcelain") == ""  # the README went with the cell
    committed = _git(repo, "show", "HEAD:README.md")
    assert "| table3: " in committed and "--out results/full` |" in committed

    readme.write_text(readme.read_text() + "an edit of the user's\n")
    assert cli([*args, "--seeds", "2"]) == 0
    assert _git(repo, "show", "HEAD:README.md") == committed  # not rebuilt, not committed
    assert _git(repo, "status", "--porcelain").splitlines() == [" M README.md"]
    assert "README.md has uncommitted changes" in capsys.readouterr().out


def _ls(repo, folder):
    return _git(repo, "ls-files", "--", folder).split()


def test_parks_are_committed_alone_and_leave_with_their_finished_cell(repo, data_root,
                                                                      monkeypatch, capsys):
    monkeypatch.setitem(CAMPAIGNS, "one", (Entry("table3", ("Standard",), ("d=8",)),))
    monkeypatch.setenv("MZATTN_DATA", data_root)
    out = repo / "results" / "full"
    args = ["one", "--out", str(out), "--profile", "smoke", "--threads", "1"]
    assert cli([*args, "--seeds", "2"]) == 0  # finished, not committed
    capsys.readouterr()
    s0, s1, s2 = campaign_cells("one", (0, 1, 2), "smoke")
    for cell in (s0, s1, s2):  # two cells training, and the finished one's leftovers
        _fake_checkpoints(str(out), cell, f"last of {cell.seed}".encode(), b"best")
    (repo / "README.md").write_text("# a project, edited\n")  # work of the user's
    _git(repo, "add", "README.md")
    stray = out / "table3" / "parked" / s0.cell_id / ".tmp-x-last.ckpt"  # a killed park's
    stray.parent.mkdir(parents=True)
    stray.write_text("partial")

    assert cli([*args, "--seeds", "0,1,2", "--park", "--commit"]) == 0
    said = capsys.readouterr().out
    assert f"parked table3/{s0.cell_id} (0 epochs done)" in said and s2.cell_id not in said
    assert _git(repo, "log", "-1", "--format=%s") == \
        f"campaign one: park {s0.cell_id}, {s1.cell_id}\n"
    parked = [f"results/full/table3/parked/{cell.cell_id}/{name}" for cell in (s0, s1)
              for name in ("best.ckpt", "last.ckpt")]
    assert _ls(repo, "results") == parked
    assert _git(repo, "diff", "--cached", "--name-only") == "README.md\n"  # left staged
    assert cli([*args, "--seeds", "0,1,2", "--park", "--commit"]) == 0  # nothing new
    assert "the parks are as committed already" in capsys.readouterr().out
    assert _ls(repo, "results") == parked

    _fake_checkpoints(str(out), s1, b"last of 1, an epoch later", b"best")
    assert park(str(out), s1)  # parked, not committed
    shutil.rmtree(checkpoint_dir(str(out), s0))  # a fresh clone
    assert cli([*args, "--seeds", "0", "--commit"]) == 0  # its park does not load: a restart
    assert "not a loadable checkpoint" in capsys.readouterr().err
    assert _git(repo, "log", "-2", "--format=%s").splitlines() == [
        f"campaign one: {s0.cell_id}", f"campaign one: {s2.cell_id}"]
    removed = _git(repo, "show", "--name-status", "--format=", "HEAD").splitlines()
    assert {f"D\t{path}" for path in parked[:2]} <= set(removed)
    assert _ls(repo, "results/full/table3/parked") == parked[2:]
    assert not (out / "table3" / "parked" / s0.cell_id / "last.ckpt").exists()
    assert _git(repo, "status", "--porcelain", "--", "results/full/table3/parked") == \
        f" M results/full/table3/parked/{s1.cell_id}/last.ckpt\n"  # its park, not committed


def test_a_park_commit_waits_for_the_git_lock(repo):
    out = repo / "results" / "full"
    (cell, _) = campaign_cells("paper-protocol", (0, 1), "smoke")[:2]
    _fake_checkpoints(str(out), cell)
    assert park(str(out), cell)
    repository, committed = ResultsRepository(str(out)), []
    with FileLock(str(out / "locks" / "git.lock")):  # a campaign's commit in another process
        thread = threading.Thread(
            target=lambda: committed.append(repository.commit_parked("campaign x", [cell])))
        thread.start()
        thread.join(0.5)
        assert thread.is_alive() and committed == []
    thread.join(10)
    assert committed == [[cell.cell_id]]
    assert _ls(repo, parked_dir(str(out), cell)) == [
        f"results/full/{cell.table}/parked/{cell.cell_id}/{name}"
        for name in ("best.ckpt", "last.ckpt")]
