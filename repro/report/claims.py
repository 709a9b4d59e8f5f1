r"""Building blocks of the headline-claim checks of the table specs.

A check compares aggregated cells (:class:`~mzattn.repro.report.results.Results`)
and returns a :class:`~mzattn.repro.core.spec.Verdict` with the numbers:
:obj:`"not reproduced"` when a condition fails on cells that ran, else
:obj:`"partly run"` when some conditions hold and the others need a cell
with no finished seed, else :obj:`"not run"` if no condition could be
evaluated, else :obj:`"reproduced"`. This is the outcome of the check on the
numbers alone; :func:`mzattn.repro.report.verdicts.decide` turns a failed check into
"contradicted" or "inconclusive" from the convergence of the cells behind it,
and a partly run one into "inconclusive".

A condition is :obj:`(ok, text)` or :obj:`(ok, text, cells)`, where
:obj:`cells` are the :obj:`(row, column)` cells it was decided on
(:func:`compare`, :func:`within`, :func:`ratio` and :func:`at_least` name
them; for a condition without them, every cell the check read counts).
"""
import operator
from collections.abc import Callable

from mzattn.repro.core.spec import Verdict

from .results import Results

REPRODUCED, NOT_REPRODUCED, NOT_RUN = "reproduced", "not reproduced", "not run"
PARTLY_RUN = "partly run"

TIE = 1e-9
r"""Slack of the non-strict comparisons (:obj:`>=`, :obj:`<=`, :func:`within`):
a bound met exactly (the paper prints three decimals) holds despite float
rounding, e.g. :math:`0.796 - 0.794 \le 0.002`."""

_OPS: dict[str, Callable[[float, float], bool]] = {
    ">": operator.gt, ">=": lambda a, b: a >= b - TIE, "<": operator.lt,
    "<=": lambda a, b: a <= b + TIE}

Cell = tuple[str, str]  # (row label, column label)
Condition = tuple[bool | None, str] | tuple[bool | None, str, tuple[Cell, ...]]


def _fmt(value: float) -> str:
    return f"{value:.4g}"


def compare(results: Results, cell: Cell, op: str, other: Cell | float,
            metric: str | None = None, factor: float = 1.0, offset: float = 0.0) -> Condition:
    r"""Condition :math:`m(\text{cell})\ op\ \text{factor} \cdot
    m(\text{other}) + \text{offset}` on the seed means of :obj:`metric`
    (default: the metric of :obj:`cell`'s column; :obj:`other` may be a
    number). Both cells are named as the cells the condition was decided
    on, so a margin around another cell (:obj:`offset`) checks that cell's
    convergence too."""
    if op not in _OPS:
        raise ValueError(f"'op' must be one of {sorted(_OPS)} (got {op!r})")
    metric = metric or results.spec.metric_of(cell[1])
    lhs = results.mean(*cell, metric)
    rhs = other if isinstance(other, float | int) else results.mean(*other, metric)
    if lhs is None or rhs is None:
        missing = cell if lhs is None else other
        return None, f"{missing[0]} {missing[1]} not run"
    cells = (cell,) if isinstance(other, float | int) else (cell, other)
    rhs_name = _fmt(rhs) if isinstance(other, float | int) else f"{other[0]} {other[1]} {_fmt(rhs)}"
    shift = "" if offset == 0.0 else f" {'+' if offset > 0 else '-'} {abs(offset):g}"
    text = f"{cell[0]} {cell[1]} {metric}={_fmt(lhs)} {op} " \
           f"{'' if factor == 1.0 else f'{factor:g}x '}{rhs_name}{shift}"
    return _OPS[op](lhs, factor * rhs + offset), text, cells


def within(results: Results, cells: list[Cell], tolerance: float,
           metric: str | None = None) -> Condition:
    r"""Condition "the seed means of :obj:`metric` (default: each column's)
    of :obj:`cells` are within :obj:`tolerance` of each other": their
    spread, :math:`\max - \min`, is at most :obj:`tolerance`, so every
    pair is checked. Not run while one of them has not run."""
    means = [results.mean(*cell, metric) for cell in cells]
    missing = [cell for cell, mean in zip(cells, means, strict=True) if mean is None]
    if missing:
        return None, f"{missing[0][0]} {missing[0][1]} not run"
    spread = max(means) - min(means)
    names = ", ".join(f"{row} {column} {_fmt(mean)}"
                      for (row, column), mean in zip(cells, means, strict=True))
    return spread <= tolerance + TIE, f"spread of {names} = {_fmt(spread)} <= {tolerance:g}", \
        tuple(cells)


def ratio(results: Results, numerator: Cell, denominator: Cell, minimum: float,
          metric: str = "mse") -> Condition:
    r"""Condition :math:`m(\text{numerator}) / m(\text{denominator}) \ge
    \text{minimum}` (e.g. an MSE ratio)."""
    top, bottom = results.mean(*numerator, metric), results.mean(*denominator, metric)
    if top is None or bottom is None:
        missing = numerator if top is None else denominator
        return None, f"{missing[0]} {missing[1]} not run"
    value = top / bottom if bottom > 0 else float("inf")
    return value >= minimum, (f"{metric} ratio {numerator[0]} / {denominator[0]} "
                              f"({numerator[1]}) = {value:.3g} >= {minimum:g}"), \
        (numerator, denominator)


def at_least(minimum: int, conditions: list[Condition], what: str) -> Condition:
    r"""Condition "at least :obj:`minimum` of :obj:`conditions` hold" (e.g.
    "a baseline overtakes MZAttn on 3 of 4 tasks"), described as
    :obj:`what`: it holds once :obj:`minimum` hold, fails once too few can,
    and is not run in between. It is decided on the cells of every
    condition."""
    held = sum(c[0] is True for c in conditions)
    open_ = sum(c[0] is None for c in conditions)
    ok = True if held >= minimum else None if held + open_ >= minimum else False
    cells = tuple(dict.fromkeys(cell for c in conditions if len(c) > 2 for cell in c[2]))
    parts = "; ".join(f"{_MARKS[c[0]]} {c[1]}" for c in conditions)
    return ok, f"{what}: {held} of {len(conditions)} hold, {minimum} needed ({parts})", cells


def verdict(*conditions: Condition) -> Verdict:
    r"""Combines conditions: :obj:`"not reproduced"` if one that could be
    evaluated fails, else :obj:`"not run"` if none could be evaluated,
    :obj:`"partly run"` if only some could, else :obj:`"reproduced"`. The
    detail marks each condition ✓ (holds), ✗ (fails) or ? (not run), each
    distinct line once; from :obj:`GROUPED` lines on, grouped by mark,
    failing first."""
    # Two conditions on a cell that did not run read the same ("X not run"):
    # each line is listed, and counted, once.
    lines = list(dict.fromkeys((c[0], c[1]) for c in conditions))
    details = _details(lines)
    not_run = (sum(ok is None for ok, _ in lines), len(lines))
    failing = [c for c in conditions if c[0] is False]
    if failing:  # a cell that ran already fails the claim
        named = all(len(c) > 2 for c in failing)
        cells = tuple(tuple(c[2]) for c in failing) if named else None
        return Verdict(NOT_REPRODUCED, details, cells, not_run=not_run)
    missing, total = not_run
    status = REPRODUCED if not missing else NOT_RUN if missing == total else PARTLY_RUN
    return Verdict(status, details, not_run=not_run)


GROUPED = 4
r"""From this many distinct lines on, :func:`verdict` lists them grouped:
failing first, then not run, then holding, each group with its count."""

_MARKS = {False: "✗", None: "?", True: "✓"}


def _details(lines: list[tuple[bool | None, str]]) -> str:
    if len(lines) < GROUPED:
        return "; ".join(f"{_MARKS[ok]} {text}" for ok, text in lines)
    groups = []
    for ok, mark in _MARKS.items():
        texts = [text for line_ok, text in lines if line_ok is ok]
        if texts:
            groups.append(f"{mark} {len(texts)} of {len(lines)}: {'; '.join(texts)}")
    return " — ".join(groups)


def all_compare(results: Results, cell: Cell, op: str, others: list[Cell],
                metric: str | None = None, factor: float = 1.0) -> Verdict:
    r"""Verdict of :func:`compare` of :obj:`cell` against every cell of
    :obj:`others`."""
    return verdict(*(compare(results, cell, op, other, metric, factor) for other in others))
