r"""Which task did the paper run? Its own numbers say, without training.

Where the paper leaves a task open (how Max reduces a set of vectors, which
Chamfer distance Task F regresses, the quadratic TDOF's :math:`d`, ...), each
plausible reading is a task option (:mod:`mzattn.datasets.synthetic.tasks`).
The paper's printed numbers fix statistics of its test targets that do not
depend on any model:

* **variance**: a table that prints both MSE and :math:`R^2` gives
  :math:`\mathrm{Var}(y) = \mathrm{MSE} / (1 - R^2)` (:func:`implied_variance`);
* **set-size R²**: the held-out :math:`R^2` of the best predictor that knows
  only the set size :math:`n` (:func:`set_size_r2`), which the paper's
  weakest row should reach, and which a plateau of rows (every model at the
  same :math:`R^2`) should equal;
* **zero R²**: :math:`-\mathrm{mean}^2 / \mathrm{Var}`, the :math:`R^2` of a
  prediction stuck at zero, against the paper's most negative :math:`R^2`.

Each reading's statistics are computed on a few thousand seeded sets of the
reading's own generator and compared with the paper's under the tolerances
of :obj:`readings.toml <mzattn.repro.core.readings.DATA>`; a reading is
*consistent* when every check of its group passes (:func:`consistent`). Readings and checks are data
(:obj:`mzattn.repro.core.readings.DATA`); the paper's numbers are read through
:mod:`mzattn.repro.report.paper_values`. A reading is chosen by these statistics
alone, never by the verdict it gives (``docs/readings.md``).

.. code-block:: text

    mzattn-repro readings [TASK ...] [--sets 2000] [--seed 0]
    mzattn-repro readings --write      # also store the outcomes the reports read
"""
import argparse
import os.path as osp
import statistics
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import cache
from typing import Any

import numpy as np
from mzattn.repro.core.evidence import EVIDENCE, CheckEvidence, GroupEvidence, save_evidence
from mzattn.repro.core.readings import (
    Check,
    Reading,
    ReadingsData,
    Tolerance,
    load_readings,
)

from mzattn.names import did_you_mean

SIZE_DEGREE = 3
r"""Degree of the polynomial in :math:`\log n` of :func:`set_size_r2`."""


def implied_variance(mse: float, r2: float) -> float:
    r"""The target variance a printed pair implies, :math:`\mathrm{MSE} /
    (1 - R^2)` (from :math:`R^2 = 1 - \mathrm{MSE} / \mathrm{Var}(y)`)."""
    if r2 >= 1.0:
        raise ValueError(f"an R² of {r2} implies no finite target variance")
    return mse / (1.0 - r2)


def paper_numbers(check: Check) -> list[float]:
    r"""The paper's numbers behind :obj:`check`: one implied variance per
    row and (MSE, R²) pair that prints both, or the R² of every row and
    column."""
    from mzattn.repro.report.paper_values import paper_table
    table = paper_table(check.table)
    rows = [table.rows[row] for row in check.rows] if check.rows else list(table.rows.values())
    if check.statistic == "variance":
        return [implied_variance(row[mse].mean, row[r2].mean) for row in rows
                for mse, r2 in check.pairs if mse in row and r2 in row]
    return [row[column].mean for row in rows for column in check.columns if column in row]


# ------------------------------------------------------------- our side


def set_size_r2(sizes: np.ndarray, targets: np.ndarray) -> float:
    r"""Held-out :math:`R^2` of the least-squares polynomial of degree
    :obj:`SIZE_DEGREE` in :math:`\log n` (the best function of the set size
    :math:`n` within reach of a few thousand sets; the mean per size when
    there are fewer sizes than coefficients), fitted on the first half of
    the sets and scored on the second."""
    half = len(targets) // 2
    log_n = np.log(np.asarray(sizes, dtype=np.float64))
    degree = min(SIZE_DEGREE, len(np.unique(log_n[:half])) - 1)
    coef = np.polyfit(log_n[:half], targets[:half], degree) if degree > 0 else \
        np.array([targets[:half].mean()])
    return _r2(targets[half:], np.polyval(coef, log_n[half:]))


def _r2(y: np.ndarray, prediction: np.ndarray) -> float:
    return float(1.0 - ((y - prediction) ** 2).sum() / ((y - y.mean()) ** 2).sum())


def zero_r2(targets: np.ndarray) -> float:
    r""":math:`R^2` of predicting zero for every set, :math:`-\bar y^2 /
    \mathrm{Var}(y)`."""
    return float(-targets.mean() ** 2 / targets.var())


@cache
def _draw(task: str, overrides: tuple[tuple[str, Any], ...], sets: int,
          seed: int) -> tuple[np.ndarray, np.ndarray]:
    # sizes and targets of `sets` test-split sets, memoised across the checks of a group
    from mzattn.datasets.synthetic.tasks import get_config
    config = get_config(task, **dict(overrides))
    rng = np.random.default_rng(seed)
    samples = config.sample_many(rng, "test", config.shared(rng), sets)
    # the elements a model is given (both clouds of a matching task)
    sizes = np.array([len(sample.x) for sample in samples])
    return sizes, np.array([sample.y[0] for sample in samples])


def our_statistic(reading: Reading, check: Check, sets: int, seed: int = 0) -> float:
    r"""The statistic of :obj:`check` on :obj:`sets` (at most
    :obj:`check.sets`) sets of :obj:`reading`, seeded by :obj:`seed`."""
    overrides = tuple(sorted({**reading.overrides, **check.overrides}.items()))
    sizes, targets = _draw(reading.task, overrides, min(sets, check.sets or sets), seed)
    if check.statistic == "variance":
        return float(targets.var())
    if check.statistic == "set-size-r2":
        return set_size_r2(sizes, targets)
    return zero_r2(targets)


# ------------------------------------------------------- consistency rule


@dataclass(frozen=True)
class Outcome:
    r"""One reading on one check: our statistic and whether it passes."""
    value: float
    passes: bool


def paper_target(check: Check, numbers: Sequence[float], tolerance: Tolerance) -> str:
    r"""What :obj:`check` asks of a reading, in words."""
    if check.statistic == "variance":
        return (f"{_fmt(statistics.fmean(numbers))} (mean of {len(numbers)} MSE/R² pairs), "
                f"within ×{tolerance.variance_factor:g}")
    if check.statistic == "zero-r2":
        return f"{_fmt(min(numbers))}, within ×{tolerance.negative_r2_factor:g}"
    if _plateau(numbers, tolerance):
        return f"plateau {_fmt(statistics.fmean(numbers))} ± {tolerance.r2:g}"
    return f"≤ weakest {_fmt(min(numbers))} + {tolerance.r2:g}"


def _plateau(numbers: Sequence[float], tolerance: Tolerance) -> bool:
    return len(numbers) > 1 and max(numbers) - min(numbers) <= tolerance.plateau_spread


def judge(check: Check, numbers: Sequence[float], ours: float,
          tolerance: Tolerance) -> bool:
    r"""Whether :obj:`ours` is consistent with the paper's :obj:`numbers`
    for :obj:`check` (the rule of ``docs/readings.md``)."""
    if check.statistic == "variance":
        return within_factor(ours, statistics.fmean(numbers), tolerance.variance_factor)
    if check.statistic == "zero-r2":
        return within_factor(ours, min(numbers), tolerance.negative_r2_factor)
    if _plateau(numbers, tolerance):
        return abs(ours - statistics.fmean(numbers)) <= tolerance.r2
    return ours <= min(numbers) + tolerance.r2


def within_factor(ours: float, paper: float, factor: float) -> bool:
    r"""Whether :obj:`ours` and :obj:`paper` have the same sign and differ
    by at most :obj:`factor` either way."""
    return ours * paper > 0 and 1.0 / factor <= ours / paper <= factor


def consistent(outcomes: dict[str, list[Outcome]]) -> list[str]:
    r"""The readings (keys of :obj:`outcomes`) that pass every check."""
    return [name for name, results in outcomes.items() if all(o.passes for o in results)]


# ---------------------------------------------------------------- table


def _fmt(value: float) -> str:
    if value == 0 or 1e-2 <= abs(value) < 1e4:
        return f"{value:.3g}"
    return f"{value:.2e}"


@dataclass(frozen=True)
class Assessed:
    r"""One check of a group: what it asks in words (:func:`paper_target`)
    and each reading's :class:`Outcome`, by reading name."""
    check: Check
    paper: str
    outcomes: dict[str, Outcome]


def assess_group(spec: ReadingsData, group: str, sets: int, seed: int = 0,
                 statistic: Callable[..., float] = our_statistic) -> list[Assessed]:
    r"""Every check of :obj:`group`, judged for each of its readings on
    :obj:`sets` sets drawn with :obj:`seed`."""
    readings = [r for r in spec.readings if r.group == group]
    assessed = []
    for check in (c for c in spec.checks if c.group == group):
        numbers = paper_numbers(check)
        outcomes = {}
        for reading in readings:
            value = statistic(reading, check, sets, seed)
            outcomes[reading.name] = Outcome(value, judge(check, numbers, value, spec.tolerance))
        assessed.append(Assessed(check, paper_target(check, numbers, spec.tolerance), outcomes))
    return assessed


def group_table(spec: ReadingsData, group: str, sets: int, seed: int = 0,
                statistic: Callable[..., float] = our_statistic,
                assessed: list[Assessed] | None = None) -> list[str]:
    r"""The Markdown table of :obj:`group`: one row per check (the paper's
    number and rule, then each reading's statistic, ✓ or ✗), a row of the
    readings' definitions, and the summary line (from :obj:`assessed`
    when given, else computed by :func:`assess_group`)."""
    readings = [r for r in spec.readings if r.group == group]
    if assessed is None:
        assessed = assess_group(spec, group, sets, seed, statistic)
    lines = [f"### {group}", "",
             "| check | paper | " + " | ".join(r.name for r in readings) + " |",
             "| --- | --- |" + " --- |" * len(readings)]
    for item in assessed:
        cells = (f"{_fmt(o.value)} {'✓' if o.passes else '✗'}" for o in item.outcomes.values())
        lines.append(f"| {item.check.label} | {item.paper} | " + " | ".join(cells) + " |")
    lines.append("| reading | | " + " | ".join(r.text for r in readings) + " |")
    outcomes = {r.name: [item.outcomes[r.name] for item in assessed] for r in readings}
    return [*lines, "", summary_line(group, outcomes, [item.check for item in assessed])]


def summary_line(group: str, outcomes: dict[str, list[Outcome]],
                 checks: Sequence[Check]) -> str:
    r"""One line: the readings consistent with every check of :obj:`group`,
    else those that pass the most checks and, per paper table, the readings
    consistent with its checks."""
    every = consistent(outcomes)
    if every:
        return f"**{group}**: consistent: {', '.join(every)}."
    tables = dict.fromkeys(check.table for check in checks)
    parts = []
    for table in tables:
        index = [i for i, check in enumerate(checks) if check.table == table]
        names = consistent({name: [results[i] for i in index]
                            for name, results in outcomes.items()})
        parts.append(f"{table}: {', '.join(names) or 'none'}")
    passed = {name: sum(o.passes for o in results) for name, results in outcomes.items()}
    most = max(passed.values())
    closest = ", ".join(name for name, count in passed.items() if count == most)
    best = f"most checks passed ({most} of {len(checks)}): {closest}" if most else \
        "no reading passes any check"
    return (f"**{group}**: no reading is consistent with every check; {best}; by table: "
            f"{'; '.join(parts)}.")


def evidence_of(group: str, assessed: list[Assessed]) -> GroupEvidence:
    r"""The :class:`~mzattn.repro.core.evidence.GroupEvidence` of
    :obj:`group`'s :obj:`assessed` checks, as reports read it."""
    readings = tuple(assessed[0].outcomes) if assessed else ()
    return GroupEvidence(group, readings, tuple(CheckEvidence(
        item.check.label, item.check.table, item.paper,
        values={name: o.value for name, o in item.outcomes.items()},
        passes={name: o.passes for name, o in item.outcomes.items()}) for item in assessed))


def readings_report(groups: Sequence[str] | None = None, sets: int = 2000, seed: int = 0,
                    spec: ReadingsData | None = None, write: str | None = None) -> str:
    r"""The tables of :obj:`groups` (all when :obj:`None`), as printed by
    :obj:`mzattn-repro readings`; with :obj:`write`, every group's outcome
    is also stored there (:func:`~mzattn.repro.core.evidence.save_evidence`)."""
    spec = spec or load_readings()
    lines, evidence = [], []
    for group in groups or spec.groups:
        assessed = assess_group(spec, group, sets, seed)
        evidence.append(evidence_of(group, assessed))
        lines += [*group_table(spec, group, sets, seed, assessed=assessed), ""]
    if write:
        save_evidence(evidence, sets=sets, seed=seed, path=write)
    return "\n".join(lines).rstrip() + "\n"


def cli(argv: list[str] | None = None) -> int:
    r""":obj:`mzattn-repro readings [TASK ...] [--sets N] [--seed S] [--write [PATH]]`."""
    spec = load_readings()
    parser = argparse.ArgumentParser(
        prog="mzattn-repro readings",
        description="per under-specified task, the statistics the paper's own numbers fix, "
                    "for each reading (no training)")
    parser.add_argument("groups", nargs="*", metavar="TASK",
                        help=f"tasks to print (default: all): {', '.join(spec.groups)}")
    parser.add_argument("--sets", type=int, default=2000,
                        help="sets drawn per reading and check (default: 2000; half fit, "
                             "half score the set-size predictor)")
    parser.add_argument("--seed", type=int, default=0, help="data seed (default: 0)")
    parser.add_argument("--write", nargs="?", const=EVIDENCE, default=None, metavar="PATH",
                        help="also store every task's outcome, which the reports' verdicts "
                             f"read (default PATH: {osp.relpath(EVIDENCE)}; all tasks only)")
    args = parser.parse_args(sys.argv[1:] if argv is None else argv)
    unknown = [g for g in args.groups if g not in spec.groups]
    if unknown:
        hint = "".join(did_you_mean(g, spec.groups) for g in unknown)
        parser.error(f"unknown task {unknown}{hint} (choose from {', '.join(spec.groups)})")
    if args.sets < 20:
        parser.error(f"--sets must be at least 20 (got {args.sets})")
    if args.write and args.groups:
        parser.error("--write stores every task: name none")
    print(readings_report(args.groups or None, args.sets, args.seed, spec, args.write), end="")
    return 0
