r"""Reference numbers of every table of the paper, read from data files.

Every table of "Matrix Zonotopic Attention: A Context-Adaptive Value
Projection for Set Transformers" (Tables 1--33) and the numbers quoted for
Figure 1 (right) and in the text of App. D.5.6 (negative transfer) are
transcribed exactly as printed in one YAML file per table under
:obj:`repro/report/paper/` (:obj:`DATA`): the table's caption, metric and units, and
one entry of :obj:`cells` per printed cell (``[row, column, printed text]``,
per quoted number for the text), with notes on ambiguous transcriptions as
comments. They are parsed into :class:`PaperTable` objects at import time.
Reports compare against the paper only through :func:`paper_table`,
:func:`paper_value` and :func:`column_metric`, and a spec's cell through
:func:`paper_table_of`, :func:`paper_entry` and :func:`paper_scale`.

Conventions:

* Numbers keep the paper's printed units: accuracies in percent
  (``77.5 ± 0.6%`` has ``mean=77.5``), the Task D MSE of Table 2 in units of
  :math:`10^{-2}`, ratios as the factor (``6.6×`` has ``mean=6.6``),
  parameter counts as integers (``208K`` is ``208_000``).
* Cells printed as ``–``/``—`` are omitted from :attr:`PaperTable.rows`.
* A standard deviation printed as an upper bound (``± <.001``) is stored as
  :obj:`None`; the bound stays in :attr:`PaperValue.text`. A mean printed as a
  bound (``≤ 0.025``, ``≥95%``) is stored as the bound.
* Annotations such as ``(1st)`` or ``(unstable)`` and footnote marks are kept
  in :attr:`PaperValue.text` only (footnote marks ``†``/``‡`` are dropped).
* Column labels name the metric (``'A MSE'``, ``'A R2'``) only in tables whose
  columns mix metrics; elsewhere the paper's redundant ``R^2`` is dropped
  (Table 3 has ``'d=8'``, not ``'d=8 R2'``).
* Tables whose columns mix metrics have ``metric='mixed'``; their
  :attr:`PaperTable.higher_is_better` is the direction of the table's
  headline metric and :func:`column_metric` gives each column's metric.
* :attr:`PaperTable.params` is keyed by model label: the row label, or the
  column label in tables whose models are columns (Table 27); a data file
  gives each count as printed (``208K``).
* A data file is read with :func:`yaml.safe_load` (it cannot run code), and
  a malformed one raises a :class:`ValueError` naming the file and the entry.
"""
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from mzattn.repro.core.spec import TableSpec

from mzattn.extras import require

__all__ = [
    'PaperValue',
    'PaperTable',
    'TABLES',
    'paper_table',
    'paper_value',
    'column_metric',
    'DATA',
    'paper_table_of',
    'paper_entry',
    'paper_scale',
]

#: The folder of the data files, one ``<key>.yaml`` per table.
DATA = Path(__file__).with_name('paper')


@dataclass(frozen=True)
class PaperValue:
    r"""One printed cell: its mean, its standard deviation when printed, and
    the cell as printed (e.g. ``'0.995 ± 0.002'``, ``'6.6×'``)."""
    mean: float
    std: float | None = None
    text: str = ''


@dataclass(frozen=True)
class PaperTable:
    r"""One table of the paper.

    Attributes:
        key (str): ``'table1'`` ... ``'table33'``, ``'figure1'`` or
            ``'negative_transfer'``.
        caption (str): Short caption from the paper.
        metric (str): The metric of every column, or ``'mixed'`` (see
            :func:`column_metric`).
        higher_is_better (bool): Direction of the table's headline metric.
        seeds (int, optional): Number of seeds, :obj:`None` where the paper
            gives a range or none.
        columns (tuple[str, ...]): Column labels, normalised to plain text.
        rows (dict[str, dict[str, PaperValue]]): Row label → column → value,
            missing cells omitted.
        params (dict[str, int]): Model label → parameter count, where given.
        claims (tuple[str, ...]): The table's headline claims, one sentence
            each, from its caption or the text.
        units (dict[str, str]): Column → the units of its printed values.
    """
    key: str
    caption: str
    metric: str
    higher_is_better: bool
    seeds: int | None
    columns: tuple[str, ...]
    rows: dict[str, dict[str, PaperValue]]
    params: dict[str, int]
    claims: tuple[str, ...]
    units: dict[str, str] = field(default_factory=dict)


# ----------------------------------------------------------------------------
# Parsing of printed cells

#: Printed cells that mean "no value".
_MISSING = ('', '–', '—')
#: Metric name → whether higher is better (:obj:`None`: descriptive column).
_DIRECTIONS: dict[str, bool | None] = {
    'r2': True,
    'mse': False,
    'mae': False,
    'accuracy': True,
    'mse_ratio': True,
    'ratio': False,
    'rank': False,
    'spearman': True,
    'pearson': True,
    'fraction_pct': True,
    'ece': False,
    'nll': False,
    'seconds': False,
    'passes': False,
    'models': False,
    'mse_change_pct': False,
    'abs_error': False,
    'ihw': None,
    'count': None,
    'params': None,
    'dimension': None,
}
_NUMBER = re.compile(r'-?\d*\.?\d+')
_NOTE = re.compile(r'\s*\([^)]*\)$')
_SCALE = {'K': 1_000, 'M': 1_000_000}
_COLUMN_METRICS: dict[str, dict[str, str]] = {}
#: Fields of a data file: the required ones, then the optional ones (``units``
#: is required unless the table is ``'mixed'``, whose columns give their own).
_REQUIRED = ('key', 'caption', 'metric', 'higher_is_better', 'seeds', 'columns', 'claims',
             'cells')
_OPTIONAL = ('units', 'params')


def _number(text: str) -> float:
    r"""The first number of :obj:`text`, scaled by a trailing ``K``/``M``."""
    match = _NUMBER.search(text)
    if match is None:
        raise ValueError(f"cell '{text}' holds no number")
    return float(match.group()) * _SCALE.get(text.rstrip()[-1], 1)


def _cell(text: str) -> PaperValue:
    r"""Parses one printed cell such as ``'-0.098 ± <.001'`` or
    ``'0.795 ± 0.001 (1st)'``."""
    mean, _, std = _NOTE.sub('', text).partition('±')
    spread = None if not std or '<' in std else _number(std)
    return PaperValue(mean=_number(mean), std=spread, text=text)


def _count(text: str) -> int:
    r"""Parses a printed parameter count such as ``'208K'`` or ``'1.3M'``."""
    return round(_number(text))


def _columns(key: str, data: dict[str, Any]) -> tuple[tuple[str, ...], dict[str, str]]:
    r"""The column labels of a data file and the units of each; records the
    metric of each column of a ``'mixed'`` table in :obj:`_COLUMN_METRICS`."""
    mixed = data['metric'] == 'mixed'
    entries = [c if mixed else {'label': c, 'metric': data['metric'], 'units': data['units']}
               for c in data['columns']]
    if any(not isinstance(c, dict) or set(c) != {'label', 'metric', 'units'}
           for c in entries):
        raise ValueError(f"{key}.yaml: 'columns' must be labels, or, in a mixed table, "
                         f"{{label, metric, units}} mappings (got {data['columns']})")
    unknown = {c['metric'] for c in entries} - set(_DIRECTIONS)
    if unknown:
        raise ValueError(f'{key}.yaml: metric names {sorted(unknown)} are not in _DIRECTIONS')
    columns = tuple(str(c['label']) for c in entries)
    if mixed:
        _COLUMN_METRICS[key] = {str(c['label']): c['metric'] for c in entries}
    return columns, {str(c['label']): c['units'] for c in entries}


def _rows(key: str, cells: list, columns: tuple[str, ...]) -> dict[str, dict[str, PaperValue]]:
    r"""Row label → column → :class:`PaperValue` of the printed cells."""
    rows: dict[str, dict[str, PaperValue]] = {}
    for index, entry in enumerate(cells):
        if not (isinstance(entry, list) and len(entry) == 3
                and all(isinstance(part, str) for part in entry)):
            raise ValueError(f'{key}.yaml: cells[{index}] must be [row, column, printed text], '
                             f'all quoted strings (got {entry!r})')
        row, column, text = entry
        if column not in columns or column in rows.get(row, {}) or text in _MISSING:
            raise ValueError(f'{key}.yaml: cells[{index}] {entry!r} names an unknown column, '
                             'repeats a cell or is blank')
        try:
            rows.setdefault(row, {})[column] = _cell(text)
        except ValueError as error:
            raise ValueError(f'{key}.yaml: cells[{index}] {entry!r}: {error}') from error
    return rows


def _load(path: Path) -> PaperTable:
    r"""The :class:`PaperTable` of one data file."""
    data = require('yaml', 'repro').safe_load(path.read_text(encoding='utf-8'))
    key = path.stem
    required = _REQUIRED if isinstance(data, dict) and data.get('metric') == 'mixed' \
        else (*_REQUIRED, 'units')
    if not isinstance(data, dict) or data.get('key') != key \
            or not set(required) <= set(data) <= {*_REQUIRED, *_OPTIONAL}:
        raise ValueError(f"{path}: a table has the fields {list(required)} (and optionally "
                         f"{list(_OPTIONAL)}), with 'key: {key}'")
    columns, units = _columns(key, data)
    return PaperTable(
        key=key, caption=data['caption'], metric=data['metric'],
        higher_is_better=data['higher_is_better'], seeds=data['seeds'], columns=columns,
        rows=_rows(key, data['cells'], columns),
        params={str(label): _count(text) for label, text in (data.get('params') or {}).items()},
        claims=tuple(data['claims']), units=units)


def _order(path: Path) -> tuple[int, int, str]:
    # table1 ... table33 by number, then figure1 and negative_transfer
    number = path.stem.removeprefix('table')
    return (0, int(number), '') if number.isdigit() else (1, 0, path.stem)


# ----------------------------------------------------------------------------
# Lookup

TABLES: dict[str, PaperTable] = {
    path.stem: _load(path) for path in sorted(DATA.glob('*.yaml'), key=_order)
}


def paper_table(key: str) -> PaperTable:
    r"""Returns the table :obj:`key` (``'table1'`` ... ``'table33'``,
    ``'figure1'``, ``'negative_transfer'``).

    Raises:
        ValueError: If :obj:`key` names no table.
    """
    if key not in TABLES:
        raise ValueError(f"key must be one of {sorted(TABLES)} (got '{key}')")
    return TABLES[key]


def paper_value(key: str, row: str, column: str) -> PaperValue:
    r"""Returns the printed cell (:obj:`row`, :obj:`column`) of table
    :obj:`key`.

    Raises:
        ValueError: If the table, the row or the column does not exist, or the
            paper leaves the cell blank.
    """
    table = paper_table(key)
    if row not in table.rows:
        raise ValueError(f"row must be one of {list(table.rows)} for {key} (got '{row}')")
    if column not in table.columns:
        raise ValueError(f"column must be one of {list(table.columns)} for {key} "
                         f"(got '{column}')")
    if column not in table.rows[row]:
        raise ValueError(f"{key} leaves the cell (row '{row}', column '{column}') blank; "
                         f"its row has {list(table.rows[row])}")
    return table.rows[row][column]


def column_metric(key: str, column: str) -> tuple[str, bool | None]:
    r"""Returns the metric of :obj:`column` in table :obj:`key` and whether
    higher is better (:obj:`None` for descriptive columns such as counts).

    Raises:
        ValueError: If the table or the column does not exist.
    """
    table = paper_table(key)
    if column not in table.columns:
        raise ValueError(f"column must be one of {list(table.columns)} for {key} "
                         f"(got '{column}')")
    metric = _COLUMN_METRICS[key][column] if table.metric == 'mixed' else table.metric
    return metric, _DIRECTIONS[metric]


def paper_table_of(spec: TableSpec):
    r"""The paper's :obj:`PaperTable` of :obj:`spec`, or :obj:`None`."""
    if spec.paper is None:
        return None
    return paper_table(spec.paper)


def paper_entry(spec: TableSpec, paper, row: str, column: str):
    r"""The paper's :obj:`PaperValue` of our cell, or :obj:`None`."""
    label = spec.paper_label(row, column)
    if paper is None or label is None:
        return None
    return paper.rows.get(label[0], {}).get(label[1])


def paper_scale(value) -> float:
    r"""Factor from our units to those of the paper's :obj:`PaperValue`:
    :obj:`100` for a value printed in percent (our accuracies are fractions),
    else :obj:`1`."""
    return 100.0 if value.text.endswith("%") else 1.0
