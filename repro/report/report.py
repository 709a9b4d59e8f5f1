r"""Per-table :obj:`report.md` (our mean ± std beside the paper's value, the
difference, the parameter counts, a verdict per headline claim) and the
table's figure, rebuilt from the cell JSON files alone."""
import os
import os.path as osp
import sys

from mzattn.datasets.batching import BATCHINGS
from mzattn.repro.core.evidence import column_reading
from mzattn.repro.core.faults import atomic_write_text
from mzattn.repro.core.spec import TableSpec, Verdict
from mzattn.repro.training.layout import table_dir

from .convergence import convergence
from .figures import learning_curves
from .paper_values import paper_entry, paper_scale, paper_table_of
from .results import Results, batchings_in
from .verdicts import decide, decide_study

STUDY_WHY = "an analysis table compares readings of the task, not the paper's own setting"

METRIC_NAMES = {"r2": "R²", "mse": "MSE", "acc": "accuracy", "nll": "NLL"}


def metric_name(metric: str) -> str:
    r"""The printed name of :obj:`metric` (:obj:`METRIC_NAMES`)."""
    return METRIC_NAMES.get(metric, metric)


def _cell_text(mean: float | None, std: float | None, n: int) -> str:
    if mean is None:
        return "not run"
    return f"{mean:.4g} ± {std:.2g}" + (f" (n={n})" if n != 1 else " (1 seed)")


def _difference(mean: float | None, value) -> str:
    # Ours − paper in the paper's units (percentage points for a percentage).
    if value is None or mean is None or value.mean is None:
        return "—"
    scale = paper_scale(value)
    return f"{scale * mean - value.mean:+.3g}" + (" pp" if scale != 1.0 else "")


def _extra_metric(spec: TableSpec, column: str) -> str | None:
    # The MSE beside a column's other regression metric.
    metric, loss = spec.metric_of(column), spec.loss_of(column)
    return "mse" if metric != "mse" and loss != "cross_entropy" else None


def _value_line(spec: TableSpec, results: Results, paper, row: str, column: str,
                mixed: bool, extra: bool) -> str:
    mean, std = results.mean(row, column), results.std(row, column)
    n = len(results.values(row, column))
    value = paper_entry(spec, paper, row, column)
    metric = f" {metric_name(spec.metric_of(column))} |" if mixed else ""
    line = (f"| {row} | {column} |{metric} {_cell_text(mean, std, n)} | "
            f"{'—' if value is None else value.text} | {_difference(mean, value)} |")
    if extra:
        name = _extra_metric(spec, column)
        m = None if name is None else results.mean(row, column, name)
        line += " — |" if m is None else f" {m:.4g} |"
    return line


def _value_lines(spec: TableSpec, results: Results, paper) -> list[str]:
    # One metric: named in the header; several (Table 2): a Metric column.
    mixed = spec.mixes_metrics()
    extra = any(_extra_metric(spec, column.label) for column in spec.columns)
    if mixed:
        head = "| Model | Setting | Metric | Ours | Paper | Ours − paper |"
    else:
        metric = metric_name(spec.metric_of(spec.columns[0].label))
        head = f"| Model | Setting | Ours {metric} | Paper {metric} | Ours − paper |"
    head += " Ours MSE |" if extra else ""
    lines = [head, "|" + " --- |" * (5 + mixed + extra)]
    lines += [_value_line(spec, results, paper, row.label, column.label, mixed, extra)
              for row in spec.rows for column in spec.columns]
    return lines


def _param_lines(spec: TableSpec, results: Results, paper) -> list[str]:
    lines = ["| Model | Registry name | Params (ours) | Params (paper) |",
             "| --- | --- | --- | --- |"]
    paper_params = {} if paper is None else dict(paper.params)
    for row in spec.rows:
        ours = results.params(row.label)
        label = spec.paper_label(row.label, spec.columns[0].label)
        theirs = paper_params.get(label[0] if label else row.label)
        lines.append(f"| {row.label} | `{row.model}` | "
                     f"{'—' if ours is None else f'{ours:,}'} | "
                     f"{'—' if theirs is None else f'{theirs:,}'} |")
    return lines


def verdicts(spec: TableSpec, results: Results) -> list[tuple[str, Verdict]]:
    r"""Every headline claim of :obj:`spec` with its published verdict
    (:func:`mzattn.repro.report.verdicts.decide`; for an analysis table,
    :obj:`TableSpec.study`, :func:`mzattn.repro.report.verdicts.decide_study`)."""
    decided = []
    for claim in spec.claims:
        with results.tracking() as read:
            check = claim.check(results)
        decided.append((claim.text, decide_study(check, results.profiles, STUDY_WHY)
                        if spec.study else decide(results, check, read)))
    return decided


def _sizes(record: dict) -> str:
    sizes = record.get("split_sizes")
    if sizes:
        return " / ".join(f"{n:,}" for n in sizes)
    task = record.get("config", {}).get("task_overrides", {})
    given = [task.get(k) for k in ("num_train", "num_val", "num_test")]
    return " / ".join("task default" if n is None else f"{n:,}" for n in given)


def _ran_lines(results: Results) -> list[str]:
    # What actually ran: one row per finished record.
    lines = ["| Cell | Profile | Seed | Train / val / test sets | Epochs (cap) | Convergence |",
             "| --- | --- | --- | --- | --- | --- |"]
    for r in sorted(results.ok, key=lambda r: r.get("cell_id", "")):
        cap = r.get("max_epochs") or r["config"].get("training", {}).get("max_epochs")
        lines.append(f"| {r['config']['row']} · {r['config']['column']} | {r['profile']} | "
                     f"{r['config'].get('seed')} | {_sizes(r)} | {r.get('epochs')} ({cap}) | "
                     f"{convergence(r).reason} |")
    return lines


def _batching_line(results: Results) -> str:
    return (f"Batching: **{results.batching}**, {BATCHINGS[results.batching]} "
            "(docs/reproduction.md, *Batching*).")


def _header(spec: TableSpec, results: Results) -> list[str]:
    if not results.ok:
        return [f"No cell of {spec.key} has finished ({len(results.failed)} failed).", "",
                _batching_line(results)]
    seeds = sorted({r["config"].get("seed") for r in results.ok})
    lines = [f"Ran: profile {', '.join(results.profiles)}; {len(results.ok)} finished cells, "
             f"{len(results.failed)} failed; seeds {', '.join(map(str, seeds))}; training "
             f"time {results.training_time() / 60:.1f} min (every epoch, a resumed cell's runs "
             "included). Split sizes and epochs per cell are "
             "under *What ran*. Rebuild with `mzattn-repro report`."]
    if results.profiles == ["smoke"]:
        lines += ["", "Smoke profile: a pipeline check only, no verdict."]
    elif results.profiles != ["full"]:
        lines += ["", "Some numbers come from a reduced profile (smaller data, fewer epochs "
                      "and seeds than the paper): a failed check there is inconclusive."]
    return [*lines, "", _batching_line(results)]


def _reading_lines(spec: TableSpec) -> list[str]:
    # Columns whose target is a reading the paper's numbers do not imply for this table: a
    # check on them, passed or failed, is inconclusive.
    table = spec.paper or spec.key
    read = [(c, reason) for c in spec.columns if (reason := column_reading(c, table))]
    if not read:
        return []
    return ["Columns whose target is a reading the paper's own numbers do not imply for this "
            "table (a check on them is inconclusive, never reproduced or contradicted):", "",
            *(f"- {c.label}: {reason}." for c, reason in read), ""]


def render(spec: TableSpec, results: Results, figure: str | None = None,
           curves: str | None = None, folder: str | None = None) -> str:
    r"""The markdown report of one table, naming the records it left out
    (:obj:`results.set_aside`, :obj:`results.stale`, :obj:`results.unreadable`); :obj:`folder` is
    where a table with :obj:`TableSpec.sections` keeps what they need."""
    paper = paper_table_of(spec)
    lines = [f"# {spec.key}: {spec.title}", "", *_header(spec, results), ""]
    if spec.notes:
        lines += [spec.notes, ""]
    lines += _reading_lines(spec)
    lines += ["## Verdicts", ""]
    lines += [f"- **{v.status}** — {text} ({v.detail})"
              + (f" [{v.convergence}]" if v.convergence else "")
              for text, v in verdicts(spec, results)]
    if spec.sections is not None and folder is not None:
        lines += ["", *spec.sections(results, folder)]
    lines += ["", "## Results (test split, model selected on validation loss)", ""]
    lines += _value_lines(spec, results, paper)
    lines += ["", "## Parameters", ""] + _param_lines(spec, results, paper)
    if results.failed:
        lines += ["", "## Failed cells", ""]
        lines += [f"- `{r['cell_id']}`: {r.get('error', 'unknown error')}"
                  for r in results.failed]
    if results.stale:
        lines += ["", "## Stale records (not counted: the table's spec changed since they ran; "
                  "their cells run again)", ""]
        lines += [f"- {problem}" for problem in results.stale]
    if results.set_aside:
        lines += ["", "## Records set aside (not counted: a record of another cell or table, "
                  "or numbers that are not a result or contradict each other; "
                  "see docs/faults.md)", ""]
        lines += [f"- {problem}" for problem in results.set_aside]
    if results.unreadable:
        lines += ["", "## Unreadable cell files (not counted; their cells run again)", ""]
        lines += [f"- {problem}" for problem in results.unreadable]
    if results.ok:
        lines += ["", "## What ran", "", *_ran_lines(results)]
    if curves:
        lines += ["", "## Learning curves", "", f"![validation curves]({osp.basename(curves)})"]
    if figure:
        lines += ["", f"![{spec.key}]({osp.basename(figure)})"]
    return "\n".join(lines) + "\n"


def report_name(batching: str, name: str, extension: str) -> str:
    r"""The file of a report (or of its figures) for :obj:`batching`:
    :obj:`{name}.{extension}` for :obj:`"masked"`, else
    :obj:`{name}-{batching}.{extension}`."""
    return f"{name}.{extension}" if batching == "masked" else f"{name}-{batching}.{extension}"


def write_report(spec: TableSpec, out: str, batching: str = "masked") -> str:
    r"""Writes :obj:`{out}/{table}/report.md`, the report of the masked
    cells (and the figure, if the table has one and any cell finished), and
    one :obj:`report-{batching}.md` for every other batching that has
    records (:func:`report_name`), so that the runs of two batchings never
    mix; returns the path of :obj:`batching`'s report. Cell files that
    cannot be used and stale records are named on stderr and listed in the
    report, never fatal."""
    folder = table_dir(out, spec.key)
    os.makedirs(folder, exist_ok=True)
    for each in batchings_in(out, spec.key):
        _write_report(spec, out, folder, each)
    return osp.join(folder, report_name(batching, "report", "md"))


def _write_report(spec: TableSpec, out: str, folder: str, batching: str) -> str:
    results = Results.load(spec, out, batching)
    for problem in results.set_aside + results.stale + results.unreadable:
        print(f"[mzattn-repro] {spec.key}: not counted: {problem}", file=sys.stderr, flush=True)
    figure = None
    if spec.figure is not None and results.ok:
        figure = osp.join(folder, report_name(batching, spec.key, "png"))
        spec.figure(results, figure)
    curves = osp.join(folder, report_name(batching, "curves", "png"))
    if not learning_curves(results, curves):
        curves = None
    path = osp.join(folder, report_name(batching, "report", "md"))
    atomic_write_text(render(spec, results, figure, curves, folder), path)
    return path
