r"""The parks branch: the parked checkpoints of a repository's results
folders, kept by git beside the history of the results, not in it.

A park (:mod:`~mzattn.repro.training.parking`) is a few MB per cell, and a
campaign parks its running cells at the end of every session: committed on
the results' branch, every park ever made would stay in its history (about
5 MB per MZ cell and session), although only the latest of a cell not yet
finished is ever read. So the parked folders (:obj:`{out}/{table}/parked/`)
are ignored by git, and :obj:`campaign NAME --park --commit` writes them to
the branch :obj:`PARKS_BRANCH` instead: one commit without a parent, which
replaces the one before, and holds the parks at the paths they have in the
work tree. Its earlier commits are left to git's garbage collection (the
branch keeps no reflog), and :obj:`git clone` brings the latest one along as
:obj:`origin/parks`, from which :func:`restore_parks` copies a cell's park
back into the work tree when the cell starts there without one.

A checkout that brings the results' branch alone (a copy of :obj:`main`,
as CI's clean clones and machines that start from one) never sees that
branch. There :obj:`--park-branch results` commits the parks on the results'
branch itself, as ordinary commits (:class:`ResultsBranchParks`): the
checkout then holds them in its work tree, whence the cells resume, at the
price of a history that keeps every park so committed.
"""
import os
import os.path as osp
import subprocess
import tempfile
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

from mzattn.repro.training.cells import peek_record
from mzattn.repro.training.layout import Cell, cell_path, checkpoint_dir, parked_dir
from mzattn.repro.training.parking import NAMES, write_park

PARKS_BRANCH = "parks"
r"""The branch that holds the parks."""

LOCAL, REMOTE = f"refs/heads/{PARKS_BRANCH}", f"refs/remotes/origin/{PARKS_BRANCH}"
r"""Where the parks are read from: this repository's branch, else the one
:obj:`git clone` fetched (a fresh clone has no local branch yet)."""

PARK_BRANCHES = ("parks", "results")
r"""Where :obj:`--park --commit` commits the parks (:func:`park_branch`):
the parks branch, or the results' branch that is checked out."""


class ParksBranch:
    r"""The parks branch of the git repository whose work tree is
    :obj:`root`."""

    def __init__(self, root: str) -> None:
        self.root = root

    @classmethod
    def of(cls, out: str) -> "ParksBranch | None":
        r"""The parks branch of the repository that holds folder
        :obj:`out`; :obj:`None` when :obj:`out` is not in a git work tree,
        or git is not installed (as in the Docker image)."""
        try:
            done = subprocess.run(["git", "rev-parse", "--show-toplevel"], cwd=_existing(out),
                                  capture_output=True, text=True)
        except FileNotFoundError:
            return None
        return cls(done.stdout.strip()) if done.returncode == 0 else None

    def head(self) -> str | None:
        r"""The commit that holds the parks (:obj:`LOCAL`, else
        :obj:`REMOTE`); :obj:`None` when there is none."""
        for ref in (LOCAL, REMOTE):
            done = self._run("rev-parse", "--verify", "-q", f"{ref}^{{commit}}", check=False)
            if done.returncode == 0:
                return done.stdout.strip()
        return None

    def files(self, commit: str, folder: str) -> frozenset[str]:
        r"""The files that :obj:`commit` of the branch holds under
        :obj:`folder` (paths relative to the root)."""
        listed = self._run("ls-tree", "-r", "--name-only", commit, "--", folder).stdout
        return frozenset(line for line in listed.splitlines() if line)

    def read(self, commit: str, path: str) -> bytes:
        r"""The content of file :obj:`path` in :obj:`commit` of the branch."""
        return subprocess.run(["git", "cat-file", "blob", f"{commit}:{path}"],
                              cwd=self.root, capture_output=True, check=True).stdout

    def write(self, message: str, add: Sequence[str], drop: Callable[[str], bool]) -> list[str]:
        r"""Commits, as :obj:`message`, the files the branch held, less those
        :obj:`drop` names, with the work tree's files :obj:`add` (paths
        relative to the root; ignored files too) in their place
        (:meth:`_commit`). Returns the paths that changed, sorted (none: the
        branch is as it was, and no commit is made). The caller holds the
        results folder's git lock."""
        base = self.head()
        if base is None and not add:
            return []
        with tempfile.TemporaryDirectory() as folder:
            index = {"GIT_INDEX_FILE": osp.join(folder, "index")}
            if base is not None:
                self._run("read-tree", base, env=index)
            held = self._run("ls-files", env=index).stdout.splitlines()
            gone = [path for path in held if drop(path)]
            if gone:
                self._run("update-index", "--force-remove", "--", *gone, env=index)
            if add:
                self._run("update-index", "--add", "--", *add, env=index)
            tree = self._run("write-tree", env=index).stdout.strip()
        if base is not None and tree == self._run("rev-parse", f"{base}^{{tree}}").stdout.strip():
            return []
        changed = sorted(self._run(*(("diff-tree", "-r", "--name-only", base, tree) if base else
                                     ("ls-tree", "-r", "--name-only", tree))).stdout.split())
        self._commit(tree, message, base, changed)
        return changed

    def _commit(self, tree: str, message: str, base: str | None, changed: list[str]) -> None:
        # one commit without a parent, replacing the branch's last; no reflog, so that the
        # parks it replaces are garbage
        commit = self._run("commit-tree", tree, "-m", message).stdout.strip()
        self._run("-c", "core.logAllRefUpdates=false", "update-ref", LOCAL, commit)

    def _run(self, *args: str, env: dict[str, str] | None = None,
             check: bool = True) -> subprocess.CompletedProcess:
        done = subprocess.run(["git", *args], cwd=self.root, capture_output=True, text=True,
                              env=None if env is None else {**os.environ, **env})
        if check and done.returncode != 0:
            raise RuntimeError(f"git {args[0]}: {done.stderr.strip() or done.stdout.strip()}")
        return done


class ResultsBranchParks(ParksBranch):
    r"""The parks committed on the results' branch, the one checked out in
    the work tree at :obj:`root` (:obj:`--park-branch results`), as ordinary
    commits: a checkout of that branch alone holds them in its work tree.
    Each commit keeps its parks in the branch's history for good (about
    6 MB per MZ cell and park)."""

    def head(self) -> str | None:
        r"""The commit checked out; :obj:`None` before the first."""
        done = self._run("rev-parse", "--verify", "-q", "HEAD^{commit}", check=False)
        return done.stdout.strip() if done.returncode == 0 else None

    def _commit(self, tree: str, message: str, base: str | None, changed: list[str]) -> None:
        # a child of the commit checked out, which the branch then names (refused if it moved);
        # the index takes the changed paths from it and keeps what the user staged elsewhere
        parent = () if base is None else ("-p", base)
        commit = self._run("commit-tree", tree, *parent, "-m", message).stdout.strip()
        self._run("update-ref", "-m", f"commit: {message}", "HEAD", commit,
                  *(() if base is None else (base,)))
        self._run("reset", "-q", "--", *changed)


def park_branch(root: str, name: str) -> ParksBranch:
    r"""The parks of the repository at :obj:`root` that :obj:`--park-branch
    {name}` commits (:obj:`PARK_BRANCHES`)."""
    if name not in PARK_BRANCHES:
        raise ValueError(f"--park-branch: {name!r} is not one of {', '.join(PARK_BRANCHES)}")
    return ParksBranch(root) if name == "parks" else ResultsBranchParks(root)


@dataclass(frozen=True)
class HeldParks:
    r"""The parks that the parks branch holds under one results folder,
    listed once (:meth:`of`): :obj:`files`, relative to the repository's
    root, in :obj:`commit` of :obj:`branch`."""
    branch: ParksBranch
    commit: str
    files: frozenset[str]

    @classmethod
    def of(cls, out: str) -> "HeldParks | None":
        r"""The parks held under results folder :obj:`out`; :obj:`None`
        when it is not in a git work tree (or there is no git), or the
        repository has no parks branch."""
        branch = ParksBranch.of(out)
        commit = None if branch is None else branch.head()
        if commit is None:
            return None
        return cls(branch, commit, branch.files(commit, osp.relpath(osp.realpath(out),
                                                                    branch.root)))

    def park(self, out: str, cell: Cell) -> dict[str, bytes]:
        r"""The files of :obj:`cell`'s park (:obj:`NAMES` alone) by name;
        empty when the branch holds none."""
        folder = osp.relpath(osp.realpath(parked_dir(out, cell)), self.branch.root)
        return {name: self.branch.read(self.commit, f"{folder}/{name}") for name in NAMES
                if f"{folder}/{name}" in self.files}


def restore_parks(out: str, cells: Iterable[Cell]) -> list[Cell]:
    r"""Copies, from the parks branch of the repository that holds
    :obj:`out` (:class:`HeldParks`), the park of each of :obj:`cells` that
    has neither finished (:func:`finished_ok`), nor a :obj:`last.ckpt`, nor
    a park in the work tree, into its parked folder
    (:func:`~mzattn.repro.training.parking.write_park`), whence the cell
    resumes (:func:`~mzattn.repro.training.parking.unpark`). Only the files
    :obj:`NAMES` of that folder are read from the branch, and written to
    that folder alone. Returns the cells restored; none when :obj:`out` is
    not in a git work tree or the repository has no parks branch."""
    held = HeldParks.of(out)
    if held is None:
        return []
    restored = []
    for cell in cells:
        folder = parked_dir(out, cell)
        held_here = (osp.join(path, "last.ckpt") for path in (folder, checkpoint_dir(out, cell)))
        if finished_ok(cell_path(out, cell)) or any(osp.exists(path) for path in held_here):
            continue
        files = held.park(out, cell)
        if "last.ckpt" in files:
            write_park(folder, {name: files.get(name) for name in NAMES})
            restored.append(cell)
    return restored


def finished_ok(record: str) -> bool:
    r"""Whether cell record :obj:`record` (a path) says the cell finished;
    a failed cell keeps its park, to resume from it when it runs again."""
    found = peek_record(record)
    return found is not None and found.get("status") == "ok"


def _existing(folder: str) -> str:
    # the nearest existing folder at or above `folder`, for git to start from
    folder = osp.abspath(folder)
    while not osp.isdir(folder):
        folder = osp.dirname(folder)
    return folder
