import json
import shutil
import subprocess
import threading
from pathlib import Path

import pytest
from filelock import FileLock
from mzattn.repro.campaign import CAMPAIGNS, Entry, campaign_cells, cli
from mzattn.repro.engine.commit import ResultsRepository
from mzattn.repro.engine.launch import CellRun
from mzattn.repro.engine.parks_branch import PARKS_BRANCH, restore_parks
from mzattn.repro.engine.status import status_lines
from mzattn.repro.report.summary import README_END, begin_marker
from mzattn.repro.training.cells import RECORD_VERSION
from mzattn.repro.training.layout import cell_path, checkpoint_dir, parked_dir
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
    # as the project's: checkpoints, parks and locks stay out of the results' branch
    (tmp_path / ".gitignore").write_text("/results/smoke/\n/results/**/ckpt/\n"
                                         "/results/**/locks/\n/results/**/parked/\n")
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


def _parks(repo, *args):
    return _git(repo, *args, PARKS_BRANCH)


def test_parks_go_to_the_parks_branch_and_leave_with_their_finished_cell(repo, data_root,
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
    assert _git(repo, "log", "--format=%s") == "start\n"  # the results' branch: as it was
    assert _ls(repo, "results") == []
    assert _git(repo, "diff", "--cached", "--name-only") == "README.md\n"  # left staged
    assert _parks(repo, "log", "--format=%s") == f"campaign one: park {s0.cell_id}, {s1.cell_id}\n"
    parked = [f"results/full/table3/parked/{cell.cell_id}/{name}" for cell in (s0, s1)
              for name in ("best.ckpt", "last.ckpt")]
    assert _parks(repo, "ls-tree", "-r", "--name-only").split() == parked
    first = _parks(repo, "rev-parse")
    assert cli([*args, "--seeds", "0,1,2", "--park", "--commit"]) == 0  # nothing new
    assert "the parks are as committed already" in capsys.readouterr().out
    assert _parks(repo, "rev-parse") == first

    _fake_checkpoints(str(out), s1, b"last of 1, an epoch later", b"best")
    assert cli([*args, "--seeds", "1", "--park", "--commit"]) == 0
    assert f"committed the parks of {s1.cell_id}" in capsys.readouterr().out
    # one commit, replacing the last: no parent, no reflog, so the old park is garbage
    assert _parks(repo, "log", "--format=%s") == f"campaign one: park {s1.cell_id}\n"
    assert not (repo / ".git" / "logs" / "refs" / "heads" / PARKS_BRANCH).exists()
    assert _parks(repo, "ls-tree", "-r", "--name-only").split() == parked  # s0's kept
    assert _git(repo, "show", f"{PARKS_BRANCH}:{parked[3]}") == "last of 1, an epoch later"

    _fake_checkpoints(str(out), s1, b"last of 1, parked, not committed", b"best")
    assert park(str(out), s1)
    shutil.rmtree(checkpoint_dir(str(out), s0))  # a fresh clone
    assert cli([*args, "--seeds", "0", "--commit"]) == 0  # its park does not load: a restart
    assert "not a loadable checkpoint" in capsys.readouterr().err
    assert _git(repo, "log", "-2", "--format=%s").splitlines() == [
        f"campaign one: {s0.cell_id}", f"campaign one: {s2.cell_id}"]
    assert _ls(repo, "results/full/table3/parked") == []
    assert not (out / "table3" / "parked" / s0.cell_id / "last.ckpt").exists()
    assert _parks(repo, "ls-tree", "-r", "--name-only").split() == parked[2:]  # s0's dropped
    assert _git(repo, "show", f"{PARKS_BRANCH}:{parked[3]}") == "last of 1, an epoch later"


def test_parks_on_the_results_branch_travel_with_it_and_leave_with_their_cell(
        repo, data_root, monkeypatch, capsys, tmp_path_factory):
    # --park-branch results: for a checkout that brings the results' branch alone
    monkeypatch.setitem(CAMPAIGNS, "one", (Entry("table3", ("Standard",), ("d=8",)),))
    monkeypatch.setenv("MZATTN_DATA", data_root)
    out = repo / "results" / "full"
    args = ["one", "--out", str(out), "--profile", "smoke", "--threads", "1"]
    s0, s1 = campaign_cells("one", (0, 1), "smoke")
    for cell in (s0, s1):
        _fake_checkpoints(str(out), cell, f"last of {cell.seed}".encode(), b"best")
    (repo / "README.md").write_text("# a project, edited\n")  # work of the user's, staged
    _git(repo, "add", "README.md")
    park_args = ["--park", "--commit", "--park-branch", "results"]

    assert cli([*args, "--seeds", "0,1", *park_args]) == 0
    assert f"committed the parks of {s0.cell_id}, {s1.cell_id}" in capsys.readouterr().out
    assert _git(repo, "log", "--format=%s").splitlines() == [
        f"campaign one: park {s0.cell_id}, {s1.cell_id}", "start"]
    parked = [f"results/full/table3/parked/{cell.cell_id}/{name}" for cell in (s0, s1)
              for name in ("best.ckpt", "last.ckpt")]
    assert _git(repo, "show", "--name-only", "--format=", "HEAD").split() == parked
    assert _git(repo, "status", "--porcelain").splitlines() == ["M  README.md"]  # still staged
    assert _git(repo, "branch", "--list", PARKS_BRANCH) == ""
    assert cli([*args, "--seeds", "0,1", *park_args]) == 0  # nothing new: no commit
    assert "the parks are as committed already" in capsys.readouterr().out

    _fake_checkpoints(str(out), s1, b"last of 1, an epoch later", b"best")
    assert cli([*args, "--seeds", "1", *park_args]) == 0
    assert _git(repo, "show", f"HEAD:{parked[3]}") == "last of 1, an epoch later"
    assert _git(repo, "show", f"HEAD~1:{parked[3]}") == "last of 1"  # the history keeps it
    clone = tmp_path_factory.mktemp("clone") / "mzattn"
    _git(repo, "clone", "-q", "--single-branch", str(repo), str(clone))  # no parks branch
    assert (Path(parked_dir(str(clone / "results" / "full"), s0)) / "last.ckpt").read_bytes() \
        == b"last of 0"  # in the work tree, whence the cell resumes

    _fake_checkpoints(str(out), s1, b"last of 1, parked, not committed", b"best")
    assert park(str(out), s1)
    shutil.rmtree(checkpoint_dir(str(out), s0))  # a fresh clone
    assert cli([*args, "--seeds", "0", "--commit"]) == 0  # its park does not load: a restart
    assert "not a loadable checkpoint" in capsys.readouterr().err
    assert _git(repo, "log", "-1", "--format=%s") == f"campaign one: {s0.cell_id}\n"
    assert _ls(repo, "results/full/table3/parked") == parked[2:]  # s0's left with it
    assert _git(repo, "show", f"HEAD:{parked[3]}") == "last of 1, an epoch later"  # not s1's new
    assert _git(repo, "status", "--porcelain", "--", "results").splitlines() == [
        f" M {parked[3]}"]


def test_park_branch_goes_with_a_committed_park(repo, capsys):
    out = str(repo / "results" / "full")
    for extra in ([], ["--park"], ["--commit"]):
        with pytest.raises(SystemExit):
            cli(["knobs", "--out", out, "--park-branch", "results", *extra])
        assert "--park-branch goes with --commit and --park or --park-after" in \
            capsys.readouterr().err
    with pytest.raises(ValueError, match="--park-branch: 'main' is not one of parks, results"):
        ResultsRepository(out, parks_to="main")


def _record(path: Path, cell, status: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"version": RECORD_VERSION, "status": status,
                                "cell_id": cell.cell_id, "profile": "smoke", "metrics": {},
                                "config": {"row": cell.row.label, "column": cell.column.label}}))


def test_a_fresh_clone_resumes_from_the_parks_branch(repo, tmp_path_factory, monkeypatch):
    out = repo / "results" / "full"
    first, second, third, fourth = campaign_cells("paper-protocol", (0,), "smoke")[:4]
    for cell in (first, second, fourth):
        _fake_checkpoints(str(out), cell, f"last of {cell.cell_id}".encode(), b"best")
        assert park(str(out), cell)
    ResultsRepository(str(out)).commit_parked("campaign x", [first, second, fourth])
    clone = tmp_path_factory.mktemp("clone") / "mzattn"
    _git(repo, "clone", "-q", str(repo), str(clone))  # the parks come along as origin/parks
    cloned = clone / "results" / "full"
    monkeypatch.setitem(CAMPAIGNS, "one", (Entry("table3", ("Standard",), ("d=8",)),))
    monkeypatch.setattr(CellRun, "cost", lambda self: None)
    assert campaign_cells("one", (0,), "smoke") == [first]
    lines = status_lines(campaign_cells("one", profile="smoke"), str(cloned), "smoke")
    (line,) = [line for line in lines if first.cell_id in line]
    assert "| parked |" in line  # on the branch: read, not restored
    assert not Path(parked_dir(str(cloned), first)).exists()
    _record(Path(cell_path(str(cloned), second)), second, "ok")  # finished since
    _record(Path(cell_path(str(cloned), fourth)), fourth, "failed")  # to run again: resumes
    assert restore_parks(str(cloned), [first, second, third, fourth]) == [first, fourth]
    assert (Path(parked_dir(str(cloned), first)) / "last.ckpt").read_bytes() == \
        f"last of {first.cell_id}".encode()
    assert restore_parks(str(cloned), [first]) == []  # there already
    shutil.rmtree(parked_dir(str(cloned), fourth))  # not restored here, yet kept below

    _fake_checkpoints(str(cloned), third, b"last of the third", None)
    assert park(str(cloned), third)
    repository = ResultsRepository(str(cloned))
    assert repository.commit_parked("campaign x", [third]) == [third.cell_id]
    held = _parks(clone, "ls-tree", "-r", "--name-only").split()
    assert held == sorted(f"results/full/{cell.table}/parked/{cell.cell_id}/{name}"
                          for cell in (first, third, fourth) for name in ("best.ckpt", "last.ckpt")
                          if (cell, name) != (third, "best.ckpt"))  # the finished one's gone


def test_restore_parks_outside_a_git_repository_or_without_git_does_nothing(
        repo, tmp_path_factory, monkeypatch):
    (cell,) = campaign_cells("paper-protocol", (0,), "smoke")[:1]
    assert restore_parks(str(tmp_path_factory.mktemp("plain") / "results"), [cell]) == []
    out = repo / "results" / "full"
    _fake_checkpoints(str(out), cell)
    assert park(str(out), cell)
    ResultsRepository(str(out)).commit_parked("campaign x", [cell])
    shutil.rmtree(parked_dir(str(out), cell))
    shutil.rmtree(checkpoint_dir(str(out), cell))
    monkeypatch.setenv("PATH", str(tmp_path_factory.mktemp("bin")))  # no git, as in Docker
    assert restore_parks(str(out), [cell]) == []
    monkeypatch.undo()
    assert restore_parks(str(out), [cell]) == [cell]


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
    assert _parks(repo, "ls-tree", "-r", "--name-only").split() == [
        f"results/full/{cell.table}/parked/{cell.cell_id}/{name}"
        for name in ("best.ckpt", "last.ckpt")]
