r"""One summary of every reported table: each headline claim with its
verdict, the convergence of the runs behind it, our numbers beside the
paper's and the command that reproduces it; and the README's verdict table,
rendered from the summaries of the results folders its begin marker lists
(:obj:`mzattn-repro report --readme README.md`)."""
import os
import os.path as osp
import re

from mzattn.repro.core.readings import reading_of
from mzattn.repro.core.registry import list_tables, load_spec
from mzattn.repro.core.spec import TableSpec
from mzattn.repro.training.cells import write_json_atomic

from .paper_values import paper_entry, paper_scale, paper_table_of
from .report import verdicts
from .results import Results, batchings_in

README_BEGIN, README_END = "<!-- verdicts:begin -->", "<!-- verdicts:end -->"
r"""Markers of the generated region of the README. The begin marker may list
the results folders the region is built from, relative to the README, in
their order: :obj:`<!-- verdicts:begin results/full results/quick -->`."""

SHOWN_CELLS = 4
r"""Cells shown per claim in the numbers column (the report has them all)."""


def _numbers(spec: TableSpec, results: Results, cells: tuple[tuple[str, str], ...]) -> str:
    # "Standard d=8 0.929 (paper 0.025)" for the first SHOWN_CELLS cells that ran.
    paper, parts = paper_table_of(spec), []
    ran = [(row, column) for row, column in dict.fromkeys(cells)
           if results.mean(row, column) is not None]
    for row, column in ran[:SHOWN_CELLS]:
        value = paper_entry(spec, paper, row, column)
        ours = results.mean(row, column)
        theirs = "" if value is None else f" (paper {value.mean / paper_scale(value):.3g})"
        parts.append(f"{row} {column} {ours:.3g}{theirs}")
    more = len(ran) - SHOWN_CELLS
    return "; ".join(parts) + (f"; {more} more in the report" if more > 0 else "")


def basis(spec: TableSpec, batching: str, cells: tuple[tuple[str, str], ...]) -> str:
    r"""What a verdict rests on beyond the paper's text: the batching of its
    runs and, for every column of :obj:`cells` on a task the paper leaves
    open, the reading it runs as :obj:`"{group} {name}"`
    (:func:`~mzattn.repro.core.readings.reading_of`), e.g.
    :obj:`"masked batching; readings: max entries, task_f aligned-mean"`."""
    columns = {column.label: column for column in spec.columns}
    read = (reading_of(columns[label].task, columns[label].overrides)
            for label in dict.fromkeys(column for _, column in cells))
    names = dict.fromkeys(f"{r.group} {r.name}" for r in read if r is not None)
    return f"{batching} batching" + (f"; readings: {', '.join(names)}" if names else "")


def specs_in(out: str) -> list[TableSpec]:
    r"""The specs of the tables with a :obj:`cells` folder in :obj:`out`,
    in the paper's order."""
    return [load_spec(key) for key in list_tables() if osp.isdir(osp.join(out, key, "cells"))]


def summary_rows(out: str, specs: list[TableSpec]) -> list[dict[str, str]]:
    r"""One row per claim of every table in :obj:`specs`: table, claim,
    verdict, convergence, our numbers beside the paper's, the check's detail,
    profiles run, command, and how many of the table's records its report
    set aside (:attr:`Results.set_aside`). The claims of a batching other
    than :obj:`"masked"` (:func:`~mzattn.repro.report.results.batchings_in`) get
    rows of their own, their claim text and command naming the batching."""
    rows = []
    for spec in specs:
        for batching in batchings_in(out, spec.key):
            rows += _claim_rows(spec, Results.load(spec, out, batching))
    return rows


def _claim_rows(spec: TableSpec, results: Results) -> list[dict[str, str]]:
    command = f"mzattn-repro {spec.key} --profile {results.fullest_profile()}"
    named = "" if results.batching == "masked" else f" ({results.batching} batching)"
    if named:
        command += f" --batching {results.batching}"
    rows = []
    for text, result in verdicts(spec, results):
        cells = (*result.failing_cells, *result.read)  # the cells of failing conditions first
        rows.append({"table": spec.key, "claim": text + named, "verdict": result.status,
                     "convergence": result.convergence,
                     "basis": basis(spec, results.batching, cells),
                     "numbers": _numbers(spec, results, cells),
                     "detail": result.detail, "profiles": ",".join(results.profiles),
                     "command": command, "study": spec.study,
                     "set_aside": len(results.set_aside)})
    return rows


def _runs(row: dict[str, str]) -> str:
    # "8/8 runs at the paper's protocol and converged; masked batching; Max read as entries"
    return _cell("; ".join(part for part in (row["convergence"], row.get("basis")) if part)
                 or "—")


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def write_summary(out: str, rows: list[dict[str, str]]) -> str:
    r"""Writes :obj:`{out}/SUMMARY.md` and :obj:`{out}/summary.json` from
    :func:`summary_rows`; returns the markdown path."""
    os.makedirs(out, exist_ok=True)
    write_json_atomic(rows, osp.join(out, "summary.json"))
    lines = ["# Reproduction summary", "",
             "| Table | Claim | Verdict | Runs | Our numbers (paper) | Check | Command |",
             "| --- | --- | --- | --- | --- | --- | --- |"]
    lines += [f"| {r['table']} | {_cell(r['claim'])} | **{r['verdict']}** | "
              f"{_runs(r)} | {_cell(r['numbers']) or '—'} | "
              f"{_cell(r['detail'])} | `{r['command']}` |" for r in rows]
    aside = {r["table"]: r["set_aside"] for r in rows if r.get("set_aside")}
    if aside:
        lines += ["", "Records set aside, not counted (each table's report names the files and "
                  "why): " + ", ".join(f"{table} {count}" for table, count in aside.items()) + "."]
    path = osp.join(out, "SUMMARY.md")
    with open(path + ".tmp", "w") as f:
        f.write("\n".join(lines) + "\n")
    os.replace(path + ".tmp", path)
    return path


def verdict_table(summaries: dict[str, list[dict[str, str]]]) -> str:
    r"""The README's verdict table: one row per claim that ran, taken from
    the first folder of :obj:`summaries` (folder → :func:`summary_rows`,
    the paper-protocol folder first) where it ran. Claims of analysis tables
    (:obj:`TableSpec.study`, e.g. Table 3's sensitivity study) are left to
    their reports and :obj:`SUMMARY.md`: they are not claims of the paper."""
    lines = ["| Claim | Verdict | Runs behind it | Ours (paper) | Command |",
             "| --- | --- | --- | --- | --- |"]
    seen = set()
    for out, rows in summaries.items():
        for r in rows:
            key = (r["table"], r["claim"])
            if r["verdict"] == "not run" or r.get("study") or key in seen:
                continue
            seen.add(key)
            lines.append(f"| {r['table']}: {_cell(r['claim'])} | **{r['verdict']}** | "
                         f"{_runs(r)} | {_cell(r['numbers']) or '—'} | "
                         f"`{r['command']} --out {out}` |")
    return "\n".join(lines)


def readme_region(text: str) -> str | None:
    r"""The generated region of a README's :obj:`text` (markers included),
    or :obj:`None`."""
    match = _REGION.search(text)
    return None if match is None else match.group(0)


def begin_marker(folders: list[str]) -> str:
    r"""The begin marker of a region built from :obj:`folders`."""
    return " ".join([README_BEGIN.removesuffix(" -->"), *folders, "-->"])


_REGION = re.compile(re.escape(README_BEGIN.removesuffix(" -->"))
                     + r"(?P<folders>( [^ >]+)*) -->.*?" + re.escape(README_END), re.S)


def readme_folders(path: str) -> list[str]:
    r"""The results folders that the verdict region of README :obj:`path`
    lists in its begin marker, as paths relative to the working directory,
    in their order. Raises :class:`ValueError` naming the file when it has no
    region or the region lists no folder."""
    match = _REGION.search(_read(path))
    if match is None:
        raise ValueError(f"{path} has no '{README_BEGIN}' ... '{README_END}' region")
    folders = match.group("folders").split()
    if not folders:
        raise ValueError(f"{path}: its '{README_BEGIN}' marker lists no results folder; "
                         "name them once with `mzattn-repro report --out DIR ... "
                         f"--readme {path}`")
    base = osp.dirname(path)
    return [osp.normpath(osp.join(base, folder)) for folder in folders]


def folder_summaries(folders: list[str]) -> dict[str, list[dict[str, str]]]:
    r""":func:`summary_rows` of every table reported in each of
    :obj:`folders`, by folder, in their order."""
    return {out: summary_rows(out, specs_in(out)) for out in folders}


def update_readme(path: str, summaries: dict[str, list[dict[str, str]]]) -> bool:
    r"""Replaces the region between :obj:`README_BEGIN` and
    :obj:`README_END` of :obj:`path` by :func:`verdict_table` of
    :obj:`summaries` (folder → :func:`summary_rows`), its marker listing the
    folders, both relative to the README so that the commands it shows run
    from the README's folder; returns whether the file changed."""
    text = _read(path)
    if readme_region(text) is None:
        raise ValueError(f"{path} has no '{README_BEGIN}' ... '{README_END}' region")
    base = osp.dirname(osp.abspath(path))
    relative = {osp.relpath(osp.abspath(out), base): rows for out, rows in summaries.items()}
    region = f"{begin_marker(list(relative))}\n{verdict_table(relative)}\n{README_END}"
    new = _REGION.sub(lambda _: region, text)
    if new != text:
        with open(path + ".tmp", "w") as f:
            f.write(new)
        os.replace(path + ".tmp", path)
    return new != text


def _read(path: str) -> str:
    with open(path) as f:
        return f.read()
