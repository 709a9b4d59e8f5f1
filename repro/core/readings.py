r"""The readings of the tasks the paper leaves open, as data: which task
options each plausible reading sets (:obj:`readings.toml <DATA>`), the checks
of the paper's own numbers that decide between them and their tolerances,
and the reading a column of a table runs (:func:`reading_of`). The checks
themselves are computed by :mod:`mzattn.repro.analysis.readings`
(:obj:`mzattn-repro readings`)."""
import os.path as osp
from dataclasses import dataclass, field
from functools import cache
from typing import Any

import tomllib

DATA = osp.join(osp.dirname(__file__), "readings.toml")
r"""The readings, checks and tolerances."""

STATISTICS = ("variance", "set-size-r2", "zero-r2")
@dataclass(frozen=True)
class Reading:
    r"""One reading of a group: task :obj:`task` with :obj:`overrides`;
    :obj:`built` when it is what the task's defaults run."""
    group: str
    name: str
    task: str
    text: str
    overrides: dict[str, Any] = field(default_factory=dict)
    built: bool = False


@dataclass(frozen=True)
class Check:
    r"""One statistic of the paper's table :obj:`table` (its :obj:`rows`,
    all when empty; its R² :obj:`columns`, or its (MSE, R²) column
    :obj:`pairs`), compared on sets drawn with :obj:`overrides`."""
    group: str
    statistic: str
    table: str
    rows: tuple[str, ...] = ()
    columns: tuple[str, ...] = ()
    pairs: tuple[tuple[str, str], ...] = ()
    overrides: dict[str, Any] = field(default_factory=dict)
    sets: int | None = None

    @property
    def label(self) -> str:
        where = ", ".join(self.columns or (pair[0].removesuffix(" MSE") for pair in self.pairs))
        rows = f" [{', '.join(self.rows)}]" if self.rows else ""
        return f"{self.statistic} · {self.table} {where}{rows}"


@dataclass(frozen=True)
class Tolerance:
    r"""The consistency rule's tolerances (:obj:`[tolerance]` of :obj:`DATA`)."""
    variance_factor: float
    r2: float
    plateau_spread: float
    negative_r2_factor: float


@dataclass(frozen=True)
class ReadingsData:
    r"""Everything :obj:`DATA` holds."""
    readings: tuple[Reading, ...]
    checks: tuple[Check, ...]
    tolerance: Tolerance

    @property
    def groups(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys(reading.group for reading in self.readings))


def load_readings(path: str = DATA) -> ReadingsData:
    r"""Parses :obj:`path`; a malformed file, an entry with unknown or
    missing fields, or a check of an unknown group or statistic raises a
    :class:`ValueError` naming the file and the entry."""
    with open(path, "rb") as f:
        try:
            data = tomllib.load(f)
        except tomllib.TOMLDecodeError as error:
            raise ValueError(f"{path}: not valid TOML: {error}") from None
    readings = tuple(_entry(Reading, path, "reading", index, entry)
                     for index, entry in enumerate(data.get("reading", [])))
    groups = {reading.group for reading in readings}
    for group in sorted(groups):
        built = [r.name for r in readings if r.group == group and r.built]
        if len(built) != 1:
            raise ValueError(f"{path}: group {group!r} marks {len(built)} readings as built "
                             f"({built}); mark exactly one")
    checks = []
    for index, entry in enumerate(data.get("check", [])):
        fields = {key: tuple(map(_tuple, entry[key])) for key in ("rows", "columns", "pairs")
                  if key in entry}
        check = _entry(Check, path, "check", index, {**entry, **fields})
        if check.group not in groups or check.statistic not in STATISTICS:
            raise ValueError(f"{path}: check {index} ({entry}) names an unknown group or "
                             f"statistic (groups: {sorted(groups)}; statistics: {STATISTICS})")
        checks.append(check)
    tolerance = _entry(Tolerance, path, "tolerance", 0, data.get("tolerance", {}))
    return ReadingsData(readings, tuple(checks), tolerance)


def _entry(cls: type, path: str, kind: str, index: int, entry: dict[str, Any]) -> Any:
    try:
        return cls(**entry)
    except TypeError as error:  # an unknown or a missing field
        raise ValueError(f"{path}: {kind} {index} ({entry}): {error}") from None


def find_reading(group: str, name: str, path: str = DATA) -> Reading:
    r"""The reading :obj:`name` of :obj:`group` in :obj:`path`."""
    for reading in load_readings(path).readings:
        if (reading.group, reading.name) == (group, name):
            return reading
    raise ValueError(f"{path}: no reading {name!r} of {group!r}")


def reading_of(task: str, overrides: dict[str, Any], path: str = DATA) -> Reading | None:
    r"""The reading a column of :obj:`task` with :obj:`overrides` runs: the
    one whose overrides it sets (the most specific), else the :obj:`built`
    reading of :obj:`task`; :obj:`None` for a task the paper leaves no
    doubt about (no reading of it in :obj:`path`)."""
    readings = [r for r in _cached_readings(path) if r.task == task]
    chosen = [r for r in readings
              if r.overrides and r.overrides.items() <= overrides.items()]
    if chosen:
        return max(chosen, key=lambda r: len(r.overrides))
    return next((r for r in readings if r.built), None)


@cache
def _cached_readings(path: str) -> tuple[Reading, ...]:
    return load_readings(path).readings


def _tuple(value: Any) -> Any:
    return tuple(value) if isinstance(value, list) else value


# ------------------------------------------------------------ paper side
