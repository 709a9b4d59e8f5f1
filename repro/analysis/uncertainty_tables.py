r"""Reports of Tables 19-21 (App. D.3) from the uncertainty-study records
(:mod:`mzattn.repro.analysis.study`): our numbers beside the paper's, a
verdict per headline claim, and the reliability diagram of Table 21."""
import os.path as osp
from collections.abc import Callable
from typing import Any

from mzattn.repro.core.spec import Verdict
from mzattn.repro.report.claims import NOT_REPRODUCED, NOT_RUN, REPRODUCED
from mzattn.repro.report.paper_values import paper_table
from mzattn.repro.report.verdicts import decide_study

from .output import fmt, markdown_table, mean_std, write_text
from .plots import reliability_plot
from .study import ENSEMBLE, MC, METHODS, MZ

Records = list[dict[str, Any]]
TABLE20_ROWS = {MZ: MZ, MC: "MC-Dropout (Table 20)", ENSEMBLE: ENSEMBLE}
r"""Paper row of Table 20 → our method record (MC-Dropout with its Table 20
pass count)."""

# Thresholds of the verdicts (our reading of the paper's words).
MIN_BIN_RATIO = 2.0  # Table 19: highest-IHW bin error >= 2x the lowest (paper: 6x)
SPEARMAN_SLACK = 0.05  # Table 20: "competitive" = within 0.05 of the weaker baseline
ECE_SLACK = 0.03  # Table 21: "matches the ensemble on ECE" = at most 0.03 above it


def _metric(method: str, name: str, kind: str | None = None):
    r"""Getter of :obj:`name` from a method's :obj:`kind` scores
    (:obj:`"calibrated"`, :obj:`"raw"`, :obj:`"constant"`; default: the
    method's own spread when it has one, else the calibrated IHW)."""
    def get(record: dict[str, Any]) -> float:
        entry = record["methods"][method]
        return entry[kind or ("raw" if "raw" in entry else "calibrated")][name]
    return get


def _seconds_ratio(method: str) -> Callable[[dict[str, Any]], float]:
    return lambda r: r["methods"][method]["seconds"] / r["methods"][MZ]["seconds"]


def _verdict(ok: bool, detail: str) -> Verdict:
    return Verdict(REPRODUCED if ok else NOT_REPRODUCED, detail)


def _header(key: str, title: str, records: Records, folder: str) -> list[str]:
    profiles = sorted({r["profile"] for r in records}) or ["none"]
    lines = [f"# {key}: {title}", ""]
    if not records:
        return lines + ["No uncertainty-study record found: run "
                        f"`mzattn-repro analysis {key} --profile quick --out "
                        f"{osp.dirname(folder)}`.", ""]
    minutes = sum(r["training_wall_time_s"] for r in records) / 60
    lines += [f"Profile: {', '.join(profiles)}; seeds: {[r['seed'] for r in records]}; "
              f"set matching (Task B), {records[0]['num_test']} test sets; training time "
              f"{minutes:.1f} min (all models). Rebuild with "
              f"`mzattn-repro analysis {key} --profile {profiles[0]} --out "
              f"{osp.dirname(folder)}`.", ""]
    if profiles != ["full"]:
        lines += ["Our numbers come from a reduced profile (smaller data, fewer epochs and "
                  "seeds than the paper); compare the contrast, not the last digit.", ""]
    return lines


def _verdict_lines(claims: list[tuple[str, Verdict]], records: Records) -> list[str]:
    profiles = sorted({r["profile"] for r in records})
    decided = [(text, decide_study(v, profiles)) for text, v in claims]
    return ["## Verdicts", ""] + [f"- **{v.status}** — {text} ({v.detail})"
                                  for text, v in decided] + [""]


def _not_run(texts: tuple[str, ...]) -> list[tuple[str, Verdict]]:
    return [(text, Verdict(NOT_RUN, "no record")) for text in texts]


# ------------------------------------------------------------------ Table 19
def table19_claims(records: Records) -> list[tuple[str, Verdict]]:
    text = paper_table("table19").claims[0]
    if not records:
        return _not_run((text,))
    rho, _ = mean_std(records, _metric(MZ, "spearman"))
    p, _ = mean_std(records, _metric(MZ, "spearman_p"))
    low, _ = mean_std(records, lambda r: r["ihw_bins"][0]["abs_error"])
    high, _ = mean_std(records, lambda r: r["ihw_bins"][-1]["abs_error"])
    ok = rho > 0 and p < 0.01 and high >= MIN_BIN_RATIO * low
    return [(text, _verdict(ok, f"Spearman {rho:.3f} (p={p:.2g}, we test > 0 at p < 0.01); "
                                f"highest/lowest IHW bin |error| = {high:.3g}/{low:.3g} = "
                                f"{high / low:.2f}x (we test >= {MIN_BIN_RATIO:g}x)"))]


def table19_report(records: Records, folder: str) -> str:
    r"""Writes :obj:`{folder}/report.md` of Table 19 and returns its path."""
    lines = _header("table19", "uncertainty calibration on set matching, samples binned "
                    "by IHW", records, folder) + _verdict_lines(table19_claims(records), records)
    if records:
        paper = list(paper_table("table19").rows.values())
        rows = []
        for index, theirs in enumerate(paper):
            ours = [mean_std(records, lambda r, i=index, k=k: r["ihw_bins"][i][k])
                    for k in ("score", "abs_error", "count")]
            rows.append([str(index + 1), fmt(*ours[0]), fmt(*ours[1]), f"{ours[2][0]:.0f}",
                         theirs["IHW (mean)"].text, theirs["Mean |error|"].text,
                         theirs["Count"].text])
        lines += ["## Results (test split)", ""] + markdown_table(
            ["Bin (low → high IHW)", "Ours IHW", "Ours mean |error|", "Ours count",
             "Paper IHW", "Paper mean |error|", "Paper count"], rows)
        follows = {k: mean_std(records, lambda r, k=k: r["ihw_spearman"][k])[0]
                   for k in ("prediction", "target")}
        lines += ["", "IHW is the Thm. 4 width of the pooled output zonotope, "
                  r"$\sum_g \|G_g\|_1$ (the sum over channels of the readout's "
                  r"$\delta = \sum_g |G_g|$); bins hold equal counts. Diagnostic: "
                  f"Spearman of the IHW with MZAttn's prediction {follows['prediction']:.3f}, "
                  f"with the target {follows['target']:.3f} (the IHW is an input of the "
                  "readout head)."]
    return write_text("\n".join(lines) + "\n", osp.join(folder, "report.md"))


# ------------------------------------------------------------------ Table 20
def table20_claims(records: Records) -> list[tuple[str, Verdict]]:
    text = paper_table("table20").claims[0]
    if not records:
        return _not_run((text,))
    rho = {m: mean_std(records, _metric(r, "spearman"))[0] for m, r in TABLE20_ROWS.items()}
    cost = {m: mean_std(records, _seconds_ratio(r))[0] for m, r in TABLE20_ROWS.items()}
    p = mean_std(records, _metric(MZ, "spearman_p"))[0]
    weaker = min(rho[MC], rho[ENSEMBLE])
    competitive = rho[MZ] >= weaker - SPEARMAN_SLACK and rho[MZ] > 0 and p < 0.01
    cheaper = min(cost[MC], cost[ENSEMBLE]) > 1.0
    return [(text, _verdict(competitive and cheaper,
                            f"Spearman MZ {rho[MZ]:.3f} (p={p:.2g}) vs MC-Dropout "
                            f"{rho[MC]:.3f}, Ensemble {rho[ENSEMBLE]:.3f} (we test > 0 at "
                            f"p < 0.01 and >= weaker baseline - {SPEARMAN_SLACK}); inference "
                            f"cost vs MZ: MC-Dropout {cost[MC]:.2f}x, Ensemble "
                            f"{cost[ENSEMBLE]:.2f}x (we test > 1x)"))]


def table20_report(records: Records, folder: str) -> str:
    r"""Writes :obj:`{folder}/report.md` of Table 20 and returns its path."""
    lines = _header("table20", "uncertainty quality on set matching (Spearman / Pearson "
                    "with |error|, inference cost)", records, folder)
    lines += _verdict_lines(table20_claims(records), records)
    if records:
        paper = paper_table("table20").rows
        rows = []
        for method, key in TABLE20_ROWS.items():
            theirs = paper[method]
            seconds = mean_std(records, lambda r, k=key: r["methods"][k]["seconds"])
            rows.append([method, fmt(*mean_std(records, _metric(key, "spearman"))),
                         theirs["Spearman"].text,
                         fmt(*mean_std(records, _metric(key, "pearson"))),
                         theirs["Pearson"].text, f"{seconds[0]:.3g}s",
                         f"{mean_std(records, _seconds_ratio(key))[0]:.2f}x",
                         theirs["Inference"].text,
                         str(records[0]["methods"][key]["passes"]
                             * records[0]["methods"][key]["models"]),
                         theirs["Passes"].text])
        lines += ["## Results (test split)", ""] + markdown_table(
            ["Method", "Ours Spearman", "Paper Spearman", "Ours Pearson", "Paper Pearson",
             "Ours inference", "Cost vs MZ", "Paper inference", "Ours passes",
             "Paper passes"], rows)
        lines += ["", "Uncertainty scores: the IHW for MZAttn, the std over passes "
                  "(MC-Dropout) or members (Deep Ensemble); correlation with the per-set "
                  "absolute error. Inference: wall time of all passes over the test split "
                  "on one CPU thread (MC-Dropout's 10-pass time is 10/30 of the measured "
                  "30-pass time)."]
    return write_text("\n".join(lines) + "\n", osp.join(folder, "report.md"))


# ------------------------------------------------------------------ Table 21
def table21_claims(records: Records) -> list[tuple[str, Verdict]]:
    texts = paper_table("table21").claims
    if not records:
        return _not_run(texts)
    value = {(m, k): mean_std(records, _metric(m, k))[0] for m in METHODS
             for k in ("ece", "nll")}
    constant = mean_std(records, _metric(MZ, "nll", "constant"))[0]
    cost = mean_std(records, _seconds_ratio(ENSEMBLE))[0]
    first = value[MZ, "ece"] <= value[ENSEMBLE, "ece"] + ECE_SLACK \
        and value[MZ, "nll"] < value[ENSEMBLE, "nll"] and value[MZ, "nll"] < constant
    second = all(value[MC, k] <= value[m, k] for m in (MZ, ENSEMBLE) for k in ("ece", "nll"))
    return [
        (texts[0], _verdict(first, f"ECE MZ {value[MZ, 'ece']:.3f} vs Ensemble "
                                   f"{value[ENSEMBLE, 'ece']:.3f} (we test <= +{ECE_SLACK}); "
                                   f"NLL MZ {value[MZ, 'nll']:.3g} vs Ensemble "
                                   f"{value[ENSEMBLE, 'nll']:.3g} (we test <); and the IHW "
                                   f"must be informative: NLL {value[MZ, 'nll']:.4g} < "
                                   f"{constant:.4g} of a constant std (the validation RMSE); "
                                   f"Ensemble inference cost {cost:.2f}x MZ's")),
        (texts[1], _verdict(second, f"ECE MC-Dropout {value[MC, 'ece']:.3f}, NLL "
                                    f"{value[MC, 'nll']:.3g} (we test lowest of the three)")),
    ]


def _table21_row(records: Records, method: str, label: str, kind: str | None,
                 paper: dict | None) -> list[str]:
    entry = records[0]["methods"][method]
    cells = [label] + [fmt(*mean_std(records, _metric(method, k, kind)))
                       for k in ("mse", "ece", "nll")]
    cells += [str(entry["passes"]), str(entry["models"]),
              f"{mean_std(records, _seconds_ratio(method))[0]:.2f}x"]
    theirs = ["—"] * 3 if paper is None else [paper[k].text for k in ("MSE", "ECE", "NLL")]
    return cells + theirs


def table21_report(records: Records, folder: str) -> str:
    r"""Writes :obj:`{folder}/report.md` and :obj:`{folder}/table21.png`
    (reliability diagram) of Table 21 and returns the report's path."""
    lines = _header("table21", "uncertainty calibration on set matching (ECE, Gaussian "
                    "NLL)", records, folder) + _verdict_lines(table21_claims(records), records)
    if records:
        paper = paper_table("table21").rows
        rows = [_table21_row(records, m, m, None, paper[m]) for m in METHODS]
        rows += [_table21_row(records, m, f"{m} (val-fitted std map)", "calibrated", None)
                 for m in (MC, ENSEMBLE)]
        rows += [_table21_row(records, m, f"{m} mean, constant std (no uncertainty)",
                              "constant", None) for m in METHODS]
        lines += ["## Results (test split)", ""] + markdown_table(
            ["Method", "Ours MSE", "Ours ECE", "Ours NLL", "Passes", "Models",
             "Inference cost vs MZ", "Paper MSE", "Paper ECE", "Paper NLL"], rows)
        reliability_diagram(records, osp.join(folder, "table21.png"))
        lines += ["", "MZAttn's predictive std is the affine map "
                  r"$\sigma = a\,\mathrm{IHW} + b$ ($a, b \ge 0$) fitted by Gaussian NLL on "
                  "the validation split; MC-Dropout and the Deep Ensemble use "
                  "their own spread, as in the paper (the extra rows apply the same "
                  "validation-fitted map to their spread; the constant-std rows use the "
                  "validation RMSE for every set, the reference an informative uncertainty "
                  "has to beat). ECE: the regression quantile calibration error (Kuleshov "
                  "et al., 2018) over the levels 0.05, ..., 0.95 (the paper does not define "
                  "it); NLL on the raw target scale.",
                  "", "![reliability diagram](table21.png)"]
    return write_text("\n".join(lines) + "\n", osp.join(folder, "report.md"))


def reliability_diagram(records: Records, path: str) -> str:
    r"""Reliability diagram of Table 21 (first seed): MZAttn with its
    validation-fitted std map, the baselines with their own spread."""
    methods = records[0]["methods"]
    curves = {m: methods[m]["reliability" if m == MZ else "raw_reliability"] for m in METHODS}
    return reliability_plot(curves, path, "Table 21: reliability diagram (set matching)")
