r"""Commit finished cells to the git repository that holds their results
folder, as they finish (:obj:`mzattn-repro campaign NAME --commit`).

A campaign takes many sessions, and a session can end at any moment. With
:obj:`--commit`, every finished cell is in the repository's history minutes
after it finishes, however the run ends: after each cell,
:meth:`ResultsRepository.commit_finished` rebuilds the folder's
:obj:`SUMMARY.md` and commits every finished cell file that git does not
track yet (this cell's, and any that an earlier run or a failed commit left
behind) with its CSV log, and the folder's tracked files that changed (the
rebuilt reports and figures). The partial logs of cells still running stay
untracked, to be committed with their cell; nothing outside the folder is
committed, so other changes of the repository, staged or not, stay as they
are. The one exception is a README named by :obj:`--readme`: its verdict
table is rebuilt from the folders its marker lists and committed with the
cell, so that every commit's README agrees with its results, unless the
README has changes of the user's, which are never committed.

Checkpoints are not kept by git, so that a cell that needs more than one
session resumes in a later one only from a park
(:mod:`~mzattn.repro.training.parking`, :obj:`mzattn-repro campaign NAME
--park --commit`): :meth:`ResultsRepository.commit_parked` commits the
parked checkpoints of the cells it is given to the repository's parks branch
(:mod:`.parks_branch`), by default, since the results' branch's history
would keep every park ever made; with :obj:`--park-branch results`, for a
checkout that brings the results' branch alone, to that branch. A finished
cell's commit drops that cell's park from the parks branch, and carries the
removal of its park from the results' branch; it never commits a park. Both
hold the folder's git lock
(:obj:`{out}/locks/git.lock`), so that a park committed beside a running
campaign never meets its commits.
"""
import os
import os.path as osp
import subprocess
from collections.abc import Sequence

from filelock import FileLock
from mzattn.repro.report.summary import (
    folder_summaries,
    readme_folders,
    specs_in,
    summary_rows,
    update_readme,
    write_summary,
)
from mzattn.repro.training.layout import Cell, parked_dir, record_of
from mzattn.repro.training.parking import NAMES

from .parks_branch import ParksBranch, finished_ok, park_branch


class ResultsRepository:
    r"""The git repository that holds results folder :obj:`out`, and
    optionally the README whose verdict table is built from it.

    Raises :class:`ValueError` naming the folder when it is not inside a
    git work tree, or when git ignores the cell files under it (as
    :obj:`results/smoke/`); naming :obj:`readme` when git does not track it
    in this repository or its verdict region does not list :obj:`out`, and
    the branch :obj:`parks_to` when it is not one of
    :obj:`~.parks_branch.PARK_BRANCHES`.

    Attributes:
        parks (ParksBranch): Where :meth:`commit_parked` commits parks:
            the parks branch, or with :obj:`parks_to="results"` the results'
            branch (:func:`~.parks_branch.park_branch`).
    """

    def __init__(self, out: str, readme: str | None = None, parks_to: str = "parks") -> None:
        os.makedirs(out, exist_ok=True)
        self.out = osp.abspath(out)
        try:
            self.root = self._git("rev-parse", "--show-toplevel", cwd=self.out).strip()
        except RuntimeError as error:
            raise ValueError(f"--commit: {out} is not inside a git repository "
                             f"({error})") from None
        probe = osp.join(self.out, "table", "cells", "cell.json")
        if subprocess.run(["git", "check-ignore", "-q", probe], cwd=self.root).returncode == 0:
            raise ValueError(f"--commit: git ignores the cell files under {out} "
                             f"(see `git check-ignore -v {probe}`)")
        self.readme = None if readme is None else self._check_readme(readme)
        self.parks = park_branch(self.root, parks_to)

    def _check_readme(self, readme: str) -> str:
        path = osp.abspath(readme)
        try:
            self._git("ls-files", "--error-unmatch", "--", path)
        except RuntimeError:
            raise ValueError(f"--readme: git does not track {readme} in the repository "
                             f"of {self.root}") from None
        folders = [osp.realpath(folder) for folder in readme_folders(path)]
        if osp.realpath(self.out) not in folders:
            raise ValueError(f"--readme: the verdict table of {readme} is built from "
                             f"{', '.join(folders)}, not from {self.out}")
        return path

    def uncommitted_cells(self) -> list[str]:
        r"""Finished cell files under the folder that git does not track,
        sorted, relative to the repository's root."""
        return [path for path in self._untracked() if _kind(path) == "cells"]

    def commit_finished(self, subject: str) -> list[str]:
        r"""Rebuilds the folder's summary and commits the cells of
        :meth:`uncommitted_cells` with the folder's other new or changed
        files (their logs, reports, figures; not the logs of cells still
        running), as one commit :obj:`"{subject}: {cell ids}"`. Returns the
        cells committed (none: no commit)."""
        with self._lock():
            if not self.uncommitted_cells():
                return []
            self._write_summary()
            untracked = self._untracked()
            cells = [path for path in untracked if _kind(path) == "cells"]
            self._git("add", "--", *(path for path in untracked if not _parked(path) and (
                _kind(path) != "logs" or osp.exists(osp.join(self.root, record_of(path))))))
            names = ", ".join(osp.splitext(osp.basename(cell))[0] for cell in cells)
            # first, so that an error of either leaves the cells to the next commit
            ParksBranch(self.root).write(f"{subject}: drop the parks of {names}", (),
                                         self._dropped)
            self._git("commit", "-q", "-m", f"{subject}: {names}", "--",
                      osp.relpath(self.out, self.root), *self._parks_on_disk(),
                      *self._rebuilt_readme())
            return cells

    def commit_parked(self, subject: str, cells: Sequence[Cell]) -> list[str]:
        r"""Commits the parked checkpoints of :obj:`cells`
        (:func:`~mzattn.repro.training.parking.park`) to :attr:`parks`, as one
        commit :obj:`"{subject}: park {cell ids}"` that drops the parks of
        cells finished since: on the parks branch, one that replaces the
        branch's last, with the parks it held of other cells not finished;
        on the results' branch, a child of its last that changes nothing
        else (what the user staged stays staged). Returns the ids of the
        cells whose park changed (none: no commit)."""
        with self._lock():
            folders = [osp.relpath(parked_dir(self.out, cell), self.root) for cell in cells
                       if osp.isdir(parked_dir(self.out, cell))]
            if not folders:
                return []
            files = [path for folder in folders for path in
                     (osp.join(folder, name) for name in NAMES)  # never a park's temporary file
                     if osp.exists(osp.join(self.root, path))]
            ids = [osp.basename(folder) for folder in folders]
            changed = self.parks.write(f"{subject}: park {', '.join(ids)}", files, self._dropped)
            return [osp.basename(folder) for folder in folders
                    if any(path.startswith(folder + "/") for path in changed)]

    def _parks_on_disk(self) -> list[str]:
        # pathspecs that leave out of a finished cell's commit every park the results' branch
        # holds that is still on disk (a park made since is commit_parked's to commit); the
        # parks removed with their finished cell go with it
        tracked = self._git("ls-files", "--", osp.relpath(self.out, self.root)).splitlines()
        return [f":(exclude,literal){path}" for path in tracked
                if _parked(path) and osp.exists(osp.join(self.root, path))]

    def _dropped(self, path: str) -> bool:
        # whether the parks drop their file `path`: a file of a park under this folder
        # whose cell has finished (a failed cell keeps its park, as on disk), or whose parked
        # folder here lacks it (a best.ckpt no longer parked); the parks of other folders, and
        # of cells not parked in this work tree (a fresh clone's), stay
        folder = osp.relpath(self.out, self.root)
        if not path.startswith(folder + "/") or not _parked(path):
            return False
        parked = osp.join(self.root, osp.dirname(path))
        return finished_ok(record_of(parked)) or (
            osp.isdir(parked) and not osp.exists(osp.join(self.root, path)))

    def readme_edited(self) -> bool:
        r"""Whether the README has changes, staged or not, that are not
        committed: then it is left as it is, for the user to commit."""
        return self.readme is not None and bool(
            self._git("status", "--porcelain", "--", self.readme).strip())

    def _rebuilt_readme(self) -> list[str]:
        # the README's path when its verdict table goes into this commit
        if self.readme is None or self.readme_edited():
            return []
        update_readme(self.readme, folder_summaries(readme_folders(self.readme)))
        return [osp.relpath(self.readme, self.root)]

    def _untracked(self) -> list[str]:
        listed = self._git("ls-files", "--others", "--exclude-standard", "--",
                           osp.relpath(self.out, self.root))
        return sorted(line for line in listed.splitlines() if line)

    def _lock(self) -> FileLock:
        os.makedirs(osp.join(self.out, "locks"), exist_ok=True)
        return FileLock(osp.join(self.out, "locks", "git.lock"))

    def _write_summary(self) -> None:
        write_summary(self.out, summary_rows(self.out, specs_in(self.out)))

    def _git(self, *args: str, cwd: str | None = None) -> str:
        done = subprocess.run(["git", *args], cwd=cwd or self.root, capture_output=True,
                              text=True)
        if done.returncode != 0:
            raise RuntimeError(f"git {args[0]}: {done.stderr.strip() or done.stdout.strip()}")
        return done.stdout


def _kind(path: str) -> str:
    # "cells" for {table}/cells/{id}.json, "logs" for {table}/logs/{id}.csv (layout.py)
    folder = osp.basename(osp.dirname(path))
    return folder if (folder, osp.splitext(path)[1]) in (("cells", ".json"),
                                                          ("logs", ".csv")) else ""


def _parked(path: str) -> bool:
    # whether `path` is a file of {table}/parked/{id}/ (layout.py)
    return osp.basename(osp.dirname(osp.dirname(path))) == "parked"
