r"""The six real regression tables of the paper's tabular meta-regression
(App. D.5.6): scikit-learn's bundled diabetes data and five OpenML datasets
read from CSV files the user downloads (never downloaded here)."""
import csv
import os.path as osp
import re
from dataclasses import dataclass

import numpy as np

from mzattn.extras import require

from ._io import missing_files_error

NUM_FEATURES = 8
r"""Features per row: the paper restricts or pads every table to 8."""

MISSING_VALUES = frozenset({"", "?", "nan", "NaN", "NA"})
r"""CSV cells read as missing values (their rows are dropped)."""


@dataclass(frozen=True)
class TableSource:
    r"""Where a table comes from.

    Args:
        openml_id (int, optional): OpenML dataset ID, :obj:`None` for the
            table bundled with scikit-learn.
        targets (tuple[str, ...], optional): Accepted names of the target
            column (compared in lower case without punctuation; ``target``
            is always accepted). (default: :obj:`()`)
        drop (tuple[str, ...], optional): Columns that are not features
            (a second target). (default: :obj:`()`)
    """
    openml_id: int | None
    targets: tuple[str, ...] = ()
    drop: tuple[str, ...] = ()

    @property
    def url(self) -> str:
        r"""The dataset's OpenML page."""
        return f"https://www.openml.org/d/{self.openml_id}"


#: The six tables of App. D.5.6 in the paper's order (the OpenML-CTR23
#: versions where the suite has one; Boston Housing is OpenML 531).
TABLE_SOURCES: dict[str, TableSource] = {
    "california_housing": TableSource(44977, ("median_house_value", "MedHouseVal")),
    "diabetes": TableSource(None),
    "energy_efficiency": TableSource(44960, ("heating_load", "Y1"), drop=("cooling_load", "Y2")),
    "abalone": TableSource(44956, ("Class_number_of_rings", "rings")),
    "airfoil_self_noise": TableSource(44957, ("scaled_sound_pressure",)),
    "boston": TableSource(531, ("MEDV",)),
}


def _key(name: str) -> str:
    return re.sub(r"[^a-z0-9]", "", name.lower())


def csv_path(raw_dir: str, name: str) -> str:
    r"""The expected CSV file of table :obj:`name`: ``raw_dir/{name}.csv``."""
    return osp.join(raw_dir, f"{name}.csv")


def missing_tables_error(raw_dir: str, names: list[str]) -> FileNotFoundError:
    r"""A :class:`FileNotFoundError` naming the missing CSV files, their
    OpenML pages and a command that writes each one."""
    paths = [csv_path(raw_dir, name) for name in names]
    pages = ", ".join(f"{name}: {TABLE_SOURCES[name].url}" for name in names)
    commands = "; ".join(
        f"fetch_openml(data_id={TABLE_SOURCES[name].openml_id}, as_frame=True).frame"
        f".to_csv('{path}', index=False)" for name, path in zip(names, paths, strict=True))
    return missing_files_error(
        "OpenML tables of the tabular meta-regression", paths, f"OpenML ({pages})",
        f"save each as a CSV with a header row at that path, e.g. in Python "
        f"`from sklearn.datasets import fetch_openml; {commands}`")


def read_table_csv(path: str, source: TableSource) -> tuple[np.ndarray, np.ndarray]:
    r"""Reads a table from a CSV file with a header row: the target is the
    column named by :obj:`source` (or ``target``), the features are the other
    numeric columns in file order (non-numeric columns such as abalone's sex
    and the :obj:`source.drop` columns are skipped); rows with a missing
    value are dropped. Returns features :math:`(n, F)` and targets
    :math:`(n)` (float64)."""
    with open(path, newline="") as f:
        header, *rows = list(csv.reader(f))
    names = {_key(name) for name in (*source.targets, "target")}
    found = [i for i, column in enumerate(header) if _key(column) in names]
    if len(found) != 1:
        raise ValueError(f"{path}: expected one target column named one of "
                         f"{sorted(names)} (case and punctuation ignored), found columns "
                         f"{header}; rename the target column to 'target'")
    rows = [row for row in rows if row and not MISSING_VALUES & set(row)]
    dropped = {_key(name) for name in source.drop}
    columns = [i for i, column in enumerate(header)
               if i != found[0] and _key(column) not in dropped and _numeric(rows, i)]
    table = np.array([[float(row[i]) for i in (*columns, found[0])] for row in rows])
    if len(table) == 0:
        raise ValueError(f"{path}: no complete row")
    return table[:, :-1], table[:, -1]


def _numeric(rows: list[list[str]], column: int) -> bool:
    try:
        for row in rows:
            float(row[column])
    except ValueError:
        return False
    return True


def fit_width(features: np.ndarray, width: int = NUM_FEATURES) -> np.ndarray:
    r"""The first :obj:`width` feature columns, zero-padded when fewer."""
    out = np.zeros((len(features), width))
    kept = features[:, :width]
    out[:, :kept.shape[1]] = kept
    return out


def load_table(name: str, raw_dir: str) -> tuple[np.ndarray, np.ndarray]:
    r"""Features :math:`(n, 8)` (:func:`fit_width`) and targets :math:`(n)`
    of table :obj:`name`: ``diabetes`` is scikit-learn's bundled copy
    (unscaled, 442 rows; its first 8 of 10 features: age, sex, bmi, bp,
    s1-s4), the others are read from ``raw_dir/{name}.csv``
    (:func:`read_table_csv`)."""
    if name not in TABLE_SOURCES:
        raise ValueError(f"'name' must be one of {sorted(TABLE_SOURCES)} (got {name!r})")
    source = TABLE_SOURCES[name]
    if source.openml_id is None:
        load_diabetes = require('sklearn.datasets', 'data').load_diabetes

        features, target = load_diabetes(return_X_y=True, scaled=False)
    else:
        path = csv_path(raw_dir, name)
        if not osp.exists(path):
            raise missing_tables_error(raw_dir, [name])
        features, target = read_table_csv(path, source)
    return fit_width(features), np.asarray(target, dtype=np.float64)
