r"""Published verdicts: a claim's check, judged by the runs behind it.

A claim's check (:mod:`mzattn.repro.report.claims`) only compares numbers. Its
verdict also asks whether those numbers can decide the claim. A check
decides only on runs that can: every cell behind it ran under the paper's
protocol (profile :obj:`full`: the paper's split sizes, batch, optimiser
and epoch cap) and converged (:func:`mzattn.repro.report.convergence.convergence`),
for every seed, on a column whose target the paper defines or reads as the
paper's own numbers imply.

- **reproduced**: every condition holds, on cells that can decide;
- **contradicted**: a condition fails on cells that can decide. A check
  holds only if all its conditions do, so one such failure decides it,
  whatever its other conditions give: a failure on cells that cannot decide
  leaves that condition open, as a condition whose cells have not run does;
- **inconclusive**: the check passes or fails, but some cell behind it ran
  at a reduced budget, did not converge, or sits on a column whose target is
  a reading of a task the paper leaves open that the paper's own numbers do
  not imply for the claim's table (:func:`~mzattn.repro.core.evidence.column_reading`;
  a column under the reading they imply decides, and the summary names
  that reading); the reasons name the cells. Also a check that holds on
  the cells that ran while some of its cells have not run (the check's
  :obj:`"partly run"`);
- **not run**: no condition of the check could be evaluated: the cells it
  needs have no finished run;
- **pipeline check only**: every record is from the :obj:`smoke` profile,
  which checks that the pipeline runs, not what it computes (a claim whose
  cells did not run stays "not run").
"""
from collections.abc import Iterable
from dataclasses import replace
from typing import Any

from mzattn.repro.core.evidence import column_reading
from mzattn.repro.core.spec import Verdict

from .claims import NOT_REPRODUCED, NOT_RUN, PARTLY_RUN, REPRODUCED
from .convergence import convergence
from .results import Results

CONTRADICTED, INCONCLUSIVE, PIPELINE_ONLY = "contradicted", "inconclusive", \
    "pipeline check only"
VERDICTS = (REPRODUCED, CONTRADICTED, INCONCLUSIVE, NOT_RUN, PIPELINE_ONLY)
r"""Every published verdict."""

PARTLY_RUN_REASON = "the cells marked ? have not run"
r"""Why a check that holds on the cells that ran cannot decide."""

DECIDING_PROFILE = "full"
r"""The only profile whose converged cells can decide a claim."""

Cell = tuple[str, str]


def cell_state(record: dict[str, Any]) -> str | None:
    r"""Why :obj:`record` cannot decide a claim, or :obj:`None` if it can
    (profile :obj:`full` and converged)."""
    state = convergence(record)
    if record.get("profile") != DECIDING_PROFILE:
        return f"{record.get('profile')} profile; {state.reason}"
    return None if state.converged else state.reason


def _readings(results: Results, cells: Iterable[Cell]) -> list[str]:
    # "A, B: target is ... (why)" for the columns of cells whose reading the paper's numbers
    # do not imply for this table, one line per reason.
    table, columns = results.spec.paper or results.spec.key, {}
    for column in (results.spec.column(label) for label in sorted({c for _, c in cells})):
        if reason := column_reading(column, table):
            columns.setdefault(reason, []).append(column.label)
    return [f"{', '.join(labels)}: {reason}" for reason, labels in columns.items()]


def _unsettled(results: Results, cells: Iterable[Cell]) -> tuple[list[str], int]:
    # "row column [seed s]: reason" for every record that cannot decide; and the record count.
    reasons, count = [], 0
    for row, column in sorted(set(cells)):
        for record in results.records(row, column):
            count += 1
            reason = cell_state(record)
            if reason is not None:
                seed = record.get("config", {}).get("seed")
                reasons.append(f"{row} {column} (seed {seed}): {reason}")
    return reasons, count


def convergence_summary(results: Results, cells: Iterable[Cell]) -> str:
    r"""E.g. :obj:`"4/6 runs at the paper's protocol and converged"`."""
    reasons, count = _unsettled(results, cells)
    return f"{count - len(reasons)}/{count} runs at the paper's protocol and converged" \
        if count else ""


def decide(results: Results, check: Verdict, read: set[Cell]) -> Verdict:
    r"""The published verdict of a claim whose check returned :obj:`check`
    after reading the cells :obj:`read` (:meth:`Results.tracking`): a pass
    rests on every cell read, a failure on the cells of any one failing
    condition (:obj:`check.cells`, one tuple per condition) that can all
    decide."""
    summary, (missing, total) = convergence_summary(results, read), check.not_run
    if summary and missing:  # a check decided, or waiting, while some of it has not run
        summary += f"; {missing} of {total} conditions not run"
    check = replace(check, read=tuple(sorted(read)), convergence=summary)
    if results.profiles == ["smoke"] and check.status != NOT_RUN:
        return replace(check, status=PIPELINE_ONLY)
    if check.status not in (REPRODUCED, NOT_REPRODUCED, PARTLY_RUN):
        return check
    passed = check.status != NOT_REPRODUCED  # a partly run check holds on what ran
    groups = (read,) if passed or check.cells is None else check.cells
    deciding = [] if passed else [cells for cells in groups if not _reasons(results, cells)]
    if deciding:  # one failing condition decides
        return replace(check, status=CONTRADICTED,
                       detail=_decided_on(results, check.detail, groups, deciding))
    behind = [cell for cells in groups for cell in cells]
    reasons = [PARTLY_RUN_REASON] * (check.status == PARTLY_RUN) + _reasons(results, behind)
    return replace(check, status=REPRODUCED) if not reasons else _inconclusive(check, reasons)


def _reasons(results: Results, cells: Iterable[Cell]) -> list[str]:
    # Why the cells cannot decide: their columns' readings, then their runs; [] if they can.
    cells = list(cells)
    return _readings(results, cells) + _unsettled(results, cells)[0]


def decide_study(check: Verdict, profiles: list[str], why: str | None = None) -> Verdict:
    r"""The published verdict of an analysis claim (Tables 19-21, the TDOF
    probes, Table 3's sensitivity study), checked on study records whose
    models keep no learning curve, or whose claim is about the study rather
    than the paper: it is never decided, whether the check passes or fails
    (:obj:`why` says why at the paper's protocol)."""
    if profiles == ["smoke"] and check.status != NOT_RUN:
        return replace(check, status=PIPELINE_ONLY)
    if check.status not in (REPRODUCED, NOT_REPRODUCED, PARTLY_RUN):
        return check
    why = "reduced profile" if profiles != [DECIDING_PROFILE] else \
        why or "the study's models keep no learning curve to judge convergence"
    return _inconclusive(check, [PARTLY_RUN_REASON] * (check.status == PARTLY_RUN) + [why])


def _decided_on(results: Results, detail: str, groups: tuple, deciding: list) -> str:
    # A contradiction's detail: where some failures cannot decide, the columns of those that do
    # and why the others cannot.
    if len(deciding) == len(groups):
        return detail
    columns = ", ".join(dict.fromkeys(column for cells in deciding for _, column in cells))
    others = _reasons(results, (cell for cells in groups if cells not in deciding
                                for cell in cells))
    return f"{detail} — decided on {columns}; the other failures cannot decide: {_shown(others)}"


def _shown(reasons: list[str]) -> str:
    # The first four reasons, and how many more.
    return "; ".join(reasons[:4]) + (f"; and {len(reasons) - 4} more" if len(reasons) > 4
                                     else "")


def _inconclusive(check: Verdict, reasons: list[str]) -> Verdict:
    # The check's outcome, and why the runs behind it cannot decide (the first four reasons).
    outcome = {REPRODUCED: "the check passes", PARTLY_RUN: "the check holds on the cells that ran"
               }.get(check.status, "the check fails")
    detail = f"{check.detail} — {outcome}" if check.detail else outcome.capitalize()
    return replace(check, status=INCONCLUSIVE,
                   detail=f"{detail}, but cannot decide: {_shown(reasons)}")
