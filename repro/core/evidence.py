r"""What the paper's own numbers say about each reading, and what a verdict
may therefore rest on.

:obj:`mzattn-repro readings --write` judges every reading of
:obj:`readings.toml <mzattn.repro.core.readings.DATA>` on every check of its
group (:mod:`mzattn.repro.analysis.readings`) and stores the outcome here, in
:obj:`EVIDENCE`, with the digest of the data file it was computed from, so
that reports read it without drawing a set. The rule that turns it into a
decision (``docs/readings.md``, "Which readings decide a claim"):

* the readings of a group that pass the most of its checks (at least one)
  are the ones the paper's numbers favour;
* of those, a table's claims may rest on the ones consistent with every
  check of that table (:func:`implied`);
* a column whose target is another reading cannot decide a claim of that
  table (:func:`column_reading` says why); a column on a task the paper
  defines (no reading in the data file) can.

The rule is fixed before any cell runs and reads only the checks, never a
verdict.
"""
import hashlib
import json
import os.path as osp
from dataclasses import dataclass
from functools import cache
from typing import Any

from .faults import atomic_write_text
from .readings import DATA, reading_of

EVIDENCE = osp.join(osp.dirname(__file__), "readings_evidence.json")
r"""The stored outcome of every check (:func:`save_evidence`)."""

REFRESH = "mzattn-repro readings --write"
r"""The command that recomputes :obj:`EVIDENCE`."""


@dataclass(frozen=True)
class CheckEvidence:
    r"""One check of a group: its :obj:`label`, the paper's :obj:`table` it
    reads, what it asks (:obj:`paper`, in words), and per reading name our
    statistic (:obj:`values`) and whether it passes (:obj:`passes`)."""
    label: str
    table: str
    paper: str
    values: dict[str, float]
    passes: dict[str, bool]


@dataclass(frozen=True)
class GroupEvidence:
    r"""The checks of one group of readings (e.g. :obj:`"max"`), in the
    data file's order."""
    group: str
    readings: tuple[str, ...]
    checks: tuple[CheckEvidence, ...]

    def passed(self, name: str) -> int:
        r"""How many checks reading :obj:`name` passes."""
        return sum(check.passes[name] for check in self.checks)

    def favoured(self) -> tuple[str, ...]:
        r"""The readings that pass the most checks; none when no reading
        passes any."""
        most = max((self.passed(name) for name in self.readings), default=0)
        return tuple(name for name in self.readings if most and self.passed(name) == most)

    def implied(self, table: str) -> tuple[str, ...]:
        r"""The favoured readings that pass every check of the paper's
        :obj:`table` (all favoured ones where it has no check)."""
        return tuple(name for name in self.favoured()
                     if all(check.passes[name] for check in self.checks
                            if check.table == table))

    def failed(self, name: str) -> tuple[CheckEvidence, ...]:
        r"""The checks reading :obj:`name` fails."""
        return tuple(check for check in self.checks if not check.passes[name])


def digest(path: str = DATA) -> str:
    r"""SHA-256 of the data file :obj:`path`."""
    with open(path, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


def save_evidence(groups: list[GroupEvidence], *, sets: int, seed: int,
                  path: str = EVIDENCE, data: str = DATA) -> None:
    r"""Writes :obj:`groups` to :obj:`path` atomically, with the digest of
    :obj:`data` and the draw (:obj:`sets`, :obj:`seed`) they come from."""
    record = {"command": REFRESH, "data_sha256": digest(data), "sets": sets, "seed": seed,
              "groups": {g.group: {"readings": list(g.readings), "checks": [
                  {"label": c.label, "table": c.table, "paper": c.paper,
                   "outcomes": {name: {"value": c.values[name], "passes": c.passes[name]}
                                for name in g.readings}} for c in g.checks]}
                         for g in groups}}
    atomic_write_text(json.dumps(record, indent=1, ensure_ascii=False) + "\n", path)


def load_evidence(path: str = EVIDENCE, data: str = DATA) -> dict[str, GroupEvidence]:
    r"""The groups stored in :obj:`path`, by name. A missing file, one
    computed from another version of :obj:`data`, or a malformed one raises
    a :class:`ValueError` that names :obj:`path` and the command that
    rebuilds it."""
    try:
        with open(path, encoding="utf-8") as f:
            record = json.load(f)
    except (OSError, ValueError) as error:
        raise ValueError(f"{path}: no readable evidence ({error}); run `{REFRESH}`") from None
    if not isinstance(record, dict) or record.get("data_sha256") != digest(data):
        raise ValueError(f"{path}: computed from another version of {data}; run `{REFRESH}`")
    try:
        return {name: _group(name, entry) for name, entry in record["groups"].items()}
    except (KeyError, TypeError, AttributeError) as error:
        raise ValueError(f"{path}: malformed evidence ({type(error).__name__}: {error}); "
                         f"run `{REFRESH}`") from None


def _group(name: str, entry: dict[str, Any]) -> GroupEvidence:
    readings = tuple(entry["readings"])
    checks = tuple(CheckEvidence(
        c["label"], c["table"], c["paper"],
        values={r: float(c["outcomes"][r]["value"]) for r in readings},
        passes={r: bool(c["outcomes"][r]["passes"]) for r in readings})
        for c in entry["checks"])
    return GroupEvidence(name, readings, checks)


@cache
def _stored() -> dict[str, GroupEvidence]:
    return load_evidence()


def column_reading(column: Any, table: str) -> str:
    r"""Why the target of :obj:`column` (a
    :class:`~mzattn.repro.core.spec.Column`) cannot decide a claim of the
    paper's :obj:`table`, or :obj:`""` when it can: its task is one the
    paper defines, or it runs a reading the paper's numbers imply for that
    table (:meth:`GroupEvidence.implied`). A column on a task without
    readings keeps its own :obj:`Column.reading`, if any."""
    reading = reading_of(column.task, column.overrides)
    if reading is None:
        return column.reading
    evidence = _stored()[reading.group]
    implied = evidence.implied(table)
    if reading.name in implied:
        return ""
    if implied:
        why = f"the paper's numbers imply {' or '.join(implied)}"
    elif evidence.favoured():
        why = (f"the readings the paper's numbers favour ({', '.join(evidence.favoured())}) "
               f"fail {table}'s own checks")
    else:
        why = "no reading of it passes any check of the paper's numbers"
    fails = "; ".join(f"{c.label}: {c.values[reading.name]:.3g}, paper {c.paper}"
                      for c in evidence.failed(reading.name)[:2])
    return (f"{reading.group} read as {reading.name} ({reading.text}); {why}"
            + (f" (it fails {fails})" if fails else "") + "; docs/readings.md")
