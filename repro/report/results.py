r"""Aggregation of a table's cell JSON files into mean ± std per cell."""
import contextlib
import glob
import os.path as osp
import statistics
from collections.abc import Iterator
from typing import Any

from mzattn.datasets.batching import BATCHINGS
from mzattn.repro.core.spec import TableSpec
from mzattn.repro.training.cells import RecordError, read_record, stale_problem
from mzattn.repro.training.layout import table_dir
from mzattn.repro.training.twins import batching_of

from .trust import doubt


def load_records(out: str, table: str,
                 unreadable: list[str] | None = None) -> list[dict[str, Any]]:
    r"""Every usable cell record of :obj:`table` under :obj:`out`, sorted by
    cell id. A file that is unreadable or foreign
    (:class:`~mzattn.repro.training.cells.RecordError`) is skipped, its path and
    reason appended to :obj:`unreadable`."""
    return [record for _, record in record_files(out, table, unreadable)]


def record_files(out: str, table: str,
                 unreadable: list[str] | None = None) -> list[tuple[str, dict[str, Any]]]:
    r"""The path and record of every usable cell file of :obj:`table`
    (:func:`load_records`)."""
    files = []
    for path in sorted(glob.glob(osp.join(table_dir(out, table), "cells", "*.json"))):
        try:
            files.append((path, read_record(path)))
        except RecordError as error:
            if unreadable is not None:
                unreadable.append(str(error))
    return files


def batchings_in(out: str, table: str) -> list[str]:
    r"""The batchings that :obj:`table`'s reports cover: :obj:`"masked"`,
    the default, then every other of :obj:`mzattn.datasets.batching.BATCHINGS`
    (in its order) that has a usable cell record under :obj:`out`."""
    found = {batching_of(record["config"]) for record in load_records(out, table)}
    return [batching for batching in BATCHINGS if batching == "masked" or batching in found]


def set_aside_records(out: str, table: str) -> list[str]:
    r"""Cell files of :obj:`table` that a run set aside as unreadable or
    foreign (:obj:`cells/{cell_id}.json.{reason}-{time}`), sorted."""
    return sorted(glob.glob(osp.join(table_dir(out, table), "cells", "*.json.*")))


class Results:
    r"""The finished cells of one table, indexed by (row, column) label.

    Args:
        spec (TableSpec): The table.
        records (list[dict]): Cell records (:func:`load_records`).
        stale (list[str], optional): Records left out as stale, one line
            each (:meth:`load`). (default: :obj:`()`)
        unreadable (list[str], optional): Cell files that could not be
            used, one line each (:meth:`load`). (default: :obj:`()`)
        set_aside (list[str], optional): Readable records left out because
            they failed their identity or consistency checks, one line each
            naming the file and the reason (:meth:`load`). (default: :obj:`()`)
        batching (str, optional): The batching of the records
            (:obj:`mzattn.datasets.batching.BATCHINGS`). (default: :obj:`"masked"`)
    """
    def __init__(self, spec: TableSpec, records: list[dict[str, Any]], *,
                 stale: list[str] = (), unreadable: list[str] = (),
                 set_aside: list[str] = (), batching: str = "masked") -> None:
        self.spec, self.batching = spec, batching
        self.stale, self.unreadable = list(stale), list(unreadable)
        self.set_aside = list(set_aside)
        self.ok = [r for r in records if r.get("status") == "ok"]
        self.failed = [r for r in records if r.get("status") != "ok"]
        self.profiles = sorted({r["profile"] for r in self.ok})
        self._read: set[tuple[str, str]] | None = None

    @classmethod
    def load(cls, spec: TableSpec, out: str, batching: str = "masked") -> "Results":
        r"""The records of :obj:`spec`'s table under :obj:`out` whose sets
        were batched as :obj:`batching` says (a record without the field is
        a :obj:`"masked"` one): the runs of two batchings never mix. A record
        that fails its identity or consistency checks
        (:func:`~mzattn.repro.report.trust.doubt`) is left out and named, with its
        file, in :obj:`set_aside`; one that is no longer a run of its cell
        (:func:`~mzattn.repro.training.cells.stale_problem`) in :obj:`stale`; a file
        that cannot be used (:func:`load_records`), or that a run set aside,
        in :obj:`unreadable`."""
        unreadable: list[str] = []
        records, stale, doubted = [], [], []
        for path, record in record_files(out, spec.key, unreadable):
            if batching_of(record["config"]) != batching:
                continue
            if (problem := doubt(spec, record, path)) is not None:
                doubted.append(f"{path}: {problem}")
            elif (problem := stale_problem(spec, record)) is not None:
                stale.append(f"{record['cell_id']} ({record['profile']} profile): {problem}")
            else:
                records.append(record)
        unreadable += [f"{path}: set aside by a run, which reran its cell"
                       for path in set_aside_records(out, spec.key)]
        return cls(spec, records, stale=stale, unreadable=unreadable, set_aside=doubted,
                   batching=batching)

    def fullest_profile(self, default: str = "quick") -> str:
        r"""The most complete profile with a finished cell (the spec lists
        its profiles from smoke to full), or :obj:`default` when none has."""
        return next((name for name in reversed(list(self.spec.profiles))
                     if name in self.profiles), default)

    @contextlib.contextmanager
    def tracking(self) -> Iterator[set[tuple[str, str]]]:
        r"""Collects, into the yielded set, every :obj:`(row, column)` cell
        read inside the block (the cells a claim's check was decided on)."""
        self._read = read = set()
        try:
            yield read
        finally:
            self._read = None

    def records(self, row: str, column: str) -> list[dict[str, Any]]:
        r"""Successful records of one cell, all seeds."""
        if self._read is not None:
            self._read.add((row, column))
        return [r for r in self.ok
                if r["config"]["row"] == row and r["config"]["column"] == column]

    def values(self, row: str, column: str, metric: str | None = None) -> list[float]:
        r"""Test :obj:`metric` (default: the column's,
        :meth:`~mzattn.repro.core.spec.TableSpec.metric_of`) of every seed."""
        metric = metric or self.spec.metric_of(column)
        return [r["metrics"][metric] for r in self.records(row, column)
                if metric in r["metrics"]]

    def mean(self, row: str, column: str, metric: str | None = None) -> float | None:
        r"""Mean over seeds, :obj:`None` if the cell has not run."""
        values = self.values(row, column, metric)
        return statistics.fmean(values) if values else None

    def std(self, row: str, column: str, metric: str | None = None) -> float | None:
        r"""Sample standard deviation over seeds (0 for one seed)."""
        values = self.values(row, column, metric)
        if not values:
            return None
        return statistics.stdev(values) if len(values) > 1 else 0.0

    def params(self, row: str) -> int | None:
        r"""Trainable parameters of a row's model on its first finished
        column (counts depend on the input width)."""
        for column in self.spec.columns:
            records = self.records(row, column.label)
            if records:
                return records[0]["params"]
        return None

    def training_time(self) -> float:
        r"""Seconds of training behind all finished cells
        (:func:`training_time`)."""
        return sum(map(training_time, self.ok))


def training_time(record: dict[str, Any]) -> float:
    r"""Seconds of training and validation behind :obj:`record`: the sum of
    its history's epoch times, which a resumed cell's history carries across
    its runs (its :obj:`wall_time_s` is its last run's alone).  A seed
    trained stacked counts its share of the group's epochs; a record without
    a history, its :obj:`wall_time_s`."""
    history = record.get("history") or []
    if not history:
        return record.get("wall_time_s", 0.0)
    seconds = sum(row.get("epoch_time_s") or 0.0 for row in history)
    return seconds / record.get("seeds_together", 1)
