r"""One summary of every reported table: each headline claim with its
verdict and the command that reproduces it."""
import os
import os.path as osp

from .cells import write_json_atomic
from .report import verdicts
from .results import Results, load_records
from .spec import TableSpec


def summary_rows(out: str, specs: list[TableSpec]) -> list[dict[str, str]]:
    r"""One row per claim of every table in :obj:`specs`: table, claim,
    verdict, the numbers it was decided on, profiles run and command."""
    rows = []
    for spec in specs:
        results = Results(spec, load_records(out, spec.key))
        profile = results.profiles[-1] if results.profiles else "quick"
        command = f"mzattn-repro {spec.key} --profile {profile}"
        for text, result in verdicts(spec, results):
            rows.append({"table": spec.key, "claim": text, "verdict": result.status,
                         "detail": result.detail, "profiles": ",".join(results.profiles),
                         "command": command})
    return rows


def write_summary(out: str, specs: list[TableSpec]) -> str:
    r"""Writes :obj:`{out}/SUMMARY.md` and :obj:`{out}/summary.json`;
    returns the markdown path."""
    os.makedirs(out, exist_ok=True)
    rows = summary_rows(out, specs)
    write_json_atomic(rows, osp.join(out, "summary.json"))
    lines = ["# Reproduction summary", "",
             "| Table | Claim | Verdict | Our numbers | Command |",
             "| --- | --- | --- | --- | --- |"]
    lines += [f"| {r['table']} | {r['claim']} | **{r['verdict']}** | {r['detail']} | "
              f"`{r['command']}` |" for r in rows]
    path = osp.join(out, "SUMMARY.md")
    with open(path + ".tmp", "w") as f:
        f.write("\n".join(lines) + "\n")
    os.replace(path + ".tmp", path)
    return path
