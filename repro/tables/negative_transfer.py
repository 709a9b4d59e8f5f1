r"""App. D.5.6, negative transfer (the paper reports it in the text, not a
table): Neural-Process image completion on MNIST and CIFAR-100, and few-shot
meta-regression on real tables, test NLL of a Gaussian likelihood head.

Image completion (:class:`mzattn.datasets.ImageCompletion`): :math:`K`
context pixels :math:`[x, y, v, 0]` and one target pixel :math:`[x, y, 0, 1]`
per set, :math:`T` sets per image (MNIST :math:`K = 50, T = 200`; CIFAR-100
in grey, :math:`K = 100, T = 300`). Tabular meta-regression
(:class:`mzattn.datasets.TabularMetaRegression`): 50 context rows
:math:`[x, y, 0]` and one query row :math:`[x, 0, 1]` per set, 50 sets per
episode, 8 features, targets standardised per table; test episodes from
held-out rows of the three training tables or from three held-out tables.

MNIST and CIFAR-100 go in ``<data root>/images/raw`` (as for Table 31), the
five OpenML CSVs in ``<data root>/openml/raw``; the smoke and quick profiles
run offline on scikit-learn's digits and diabetes data.

.. code-block:: bash

    python repro/tables/negative_transfer.py --profile quick
"""
import dataclasses
import math

from mzattn.repro.core.spec import QUICK, SMOKE, Claim, Column, TableSpec, Verdict, full
from mzattn.repro.engine.runner import main as run_main
from mzattn.repro.report.claims import NOT_REPRODUCED, NOT_RUN, REPRODUCED, verdict
from mzattn.repro.report.results import Results
from mzattn.repro.tables.transfer import MZ, ROWS

STANDARD = "Standard"
NP_MNIST, NP_CIFAR = "NP-MNIST", "NP-CIFAR-100"
HELD_OUT, SAME = "Tabular (held-out datasets)", "Tabular (same distribution)"
TABULAR = {"patience": 12}  # App. D.5.6: "10 seeds with patience 12"

COLUMNS = (
    Column(NP_MNIST, "image_completion", {"source": "mnist"}),
    Column(NP_CIFAR, "image_completion", {"source": "cifar100"}),
    Column(HELD_OUT, "tabular_meta_regression", {"split": "held-out-dataset"},
           training=TABULAR),
    Column(SAME, "tabular_meta_regression", {"split": "same-distribution"}, training=TABULAR),
)
#: Our column -> the prefix of the paper's row labels (``'MNIST Standard'``).
PAPER_PREFIX = {NP_MNIST: "MNIST", NP_CIFAR: "CIFAR-100", HELD_OUT: "held-out"}
OFFLINE = (NP_MNIST, SAME)  # runnable on the stand-ins

PROFILES = {
    "smoke": dataclasses.replace(SMOKE, rows=(STANDARD, MZ), columns=OFFLINE,
                                 data={"stand_in": True}),
    # Offline (digits K = T = 8; diabetes K = 16, T = 4): 2,000/400/800 sets,
    # 20 epochs (the NP sets sit on a mean-prediction plateau for up to ~800
    # steps), one seed, two models: 11 min on one loaded CPU core.
    "quick": dataclasses.replace(QUICK, num_train=2000, num_val=400, num_test=800,
                                 max_epochs=20, patience=6, rows=(STANDARD, MZ), columns=OFFLINE,
                                 data={"stand_in": True}),
    # 400K/40K/100K sets: 2,000/200/500 MNIST images, 1,334/134/334 CIFAR-100
    # images, 8,000/800/2,000 tabular episodes (the paper gives no sizes).
    "full": full(seeds=(0, 1, 2, 3, 4), num_train=400_000, num_val=40_000,
                 num_test=100_000, max_epochs=50),
}

NLL_MARGIN = 0.05
SAME_MSE_SHARE, SAME_NLL_GAP = 0.10, 0.1
SHIFT = 1.0  # "test NLL jumps from -0.43 at validation to +18-20"


def _ran(results: Results, column: str, *rows: str) -> bool:
    return all(results.mean(row, column) is not None for row in rows)


def _not_run(what: str) -> Verdict:
    return Verdict(NOT_RUN, f"{what} not run")


def _no_np_gain(results: Results) -> Verdict:
    conditions = []
    for column in (NP_MNIST, NP_CIFAR):
        if _ran(results, column, STANDARD, MZ):
            mz, standard = results.mean(MZ, column), results.mean(STANDARD, column)
            conditions.append((mz >= standard - NLL_MARGIN,
                               f"{column}: {MZ} NLL {mz:.4g} vs. {STANDARD} {standard:.4g}"))
    return verdict(*conditions) if conditions else _not_run(f"{MZ} and {STANDARD} on NP")


def _best_is_not_mz(results: Results) -> Verdict:
    means = {row.label: results.mean(row.label, NP_MNIST) for row in ROWS}
    means = {label: mean for label, mean in means.items() if mean is not None}
    mz = {label for label in means if label.startswith("MZAttn")}
    if not mz or not set(means) - mz:
        return _not_run("an MZAttn model and another model on NP-MNIST")
    best = min(means, key=means.get)
    detail = ", ".join(f"{label} {mean:.4g}" for label, mean in sorted(means.items(),
                                                                     key=lambda kv: kv[1]))
    return Verdict(NOT_REPRODUCED if best in mz else REPRODUCED, f"NP-MNIST NLL: {detail}")


def _val_nll(results: Results, row: str, column: str) -> float | None:
    values = [r["best_val_loss"] for r in results.records(row, column)
              if r.get("best_val_loss") is not None]
    return sum(values) / len(values) if values else None


def _shift(results: Results) -> Verdict:
    conditions = []
    for row in (STANDARD, MZ):
        test, val = results.mean(row, HELD_OUT), _val_nll(results, row, HELD_OUT)
        if test is not None and val is not None:
            conditions.append((test - val > SHIFT,
                               f"{row}: validation NLL {val:.4g}, test NLL {test:.4g}"))
    return verdict(*conditions) if conditions else _not_run(f"{STANDARD} or {MZ} on {HELD_OUT}")


def _within_seed_variance(results: Results) -> Verdict:
    if not _ran(results, HELD_OUT, STANDARD, MZ):
        return _not_run(f"{MZ} and {STANDARD} on {HELD_OUT}")
    if min(len(results.values(row, HELD_OUT)) for row in (STANDARD, MZ)) < 2:
        return _not_run(f"a second seed of {MZ} and {STANDARD} on {HELD_OUT}")
    gap = results.mean(MZ, HELD_OUT) - results.mean(STANDARD, HELD_OUT)
    pooled = math.sqrt((results.std(MZ, HELD_OUT) ** 2 + results.std(STANDARD, HELD_OUT) ** 2)
                       / 2)
    return verdict((abs(gap) <= pooled, f"NLL gap {MZ} - {STANDARD} {gap:+.4g}, "
                                        f"pooled std {pooled:.4g}"))


def _no_dominance(results: Results) -> Verdict:
    if not _ran(results, SAME, STANDARD, MZ):
        return _not_run(f"{MZ} and {STANDARD} on {SAME}")
    mse = {row: results.mean(row, SAME, "mse") for row in (STANDARD, MZ)}
    nll = {row: results.mean(row, SAME) for row in (STANDARD, MZ)}
    share = mse[MZ] / mse[STANDARD] - 1.0
    gap = nll[MZ] - nll[STANDARD]
    return verdict((abs(share) <= SAME_MSE_SHARE, f"MSE {MZ} vs. {STANDARD}: {share:+.1%}"),
                   (abs(gap) <= SAME_NLL_GAP, f"NLL {MZ} - {STANDARD}: {gap:+.4g}"))


CLAIMS = (
    Claim(f"NP image completion: {MZ} does not beat the Standard Set Transformer by more "
          f"than {NLL_MARGIN} NLL (paper, CIFAR-100: -1.140 vs. -1.147; MNIST: MZAttn-Large "
          f"-1.599 vs. Standard -1.617)", _no_np_gain),
    Claim("NP-MNIST: the best NLL belongs to a model without MZ attention (paper: ST-Large "
          "-1.657)", _best_is_not_mz),
    Claim(f"Tabular, held-out datasets: the test NLL of {STANDARD} and {MZ} lies more than "
          f"{SHIFT:g} above their validation NLL (paper: -0.43 at validation, +18 to +20 at "
          "test)", _shift),
    Claim(f"Tabular, held-out datasets: {MZ} and {STANDARD} are within seed variance on NLL "
          "(paper: +20.02 vs. +18.66, pooled std 5.76, 10 seeds; needs 2 seeds or more)",
          _within_seed_variance),
    Claim(f"Tabular, same distribution: neither model dominates; {MZ}'s test MSE is within "
          f"{SAME_MSE_SHARE:.0%} of {STANDARD}'s and its NLL within {SAME_NLL_GAP:g} (paper: "
          "5.5% lower MSE, 1.4% higher NLL)", _no_dominance),
)


def paper_cell(row: str, column: str) -> tuple[str, str] | None:
    r"""The paper's quoted number of our cell: row ``'{setting} {model}'``,
    column ``'NLL'`` (the same-distribution split has relative numbers only)."""
    return (f"{PAPER_PREFIX[column]} {row}", "NLL") if column in PAPER_PREFIX else None


SPEC = TableSpec(
    key="negative_transfer",
    title="Negative transfer (App. D.5.6): Neural-Process image completion and tabular "
          "meta-regression (test NLL)",
    rows=ROWS, columns=COLUMNS, profiles=PROFILES, metric="nll", loss="gaussian_nll",
    paper="negative_transfer", paper_cell=paper_cell, claims=CLAIMS,
    notes="In the smoke and quick profiles the NP-MNIST column runs on scikit-learn's 8x8 "
          "digits and the same-distribution column on its diabetes table alone: beside "
          "MNIST's paper numbers, 'Ours − paper' is then no comparison. "
          "The paper quotes these numbers in the text (App. D.5.6); params there: Standard "
          "144K, MZAttn-Full 332K on CIFAR-100. NLL of a Gaussian head (mean, softplus "
          "variance) per target, MSE beside it. One target per set: the harness predicts one "
          "value per set, so an image (episode) gives T sets sharing its K context tokens; the "
          "mean loss over them is the Neural-Process loss. Choices where the paper is silent: "
          "CIFAR-100 in grey (luma), pixel coordinates in [-1, 1], pixel intensities in [0, 1] "
          "(not normalised), context and targets distinct pixels fixed per image; tables cut "
          "50/25/25% into train/val/test rows, features and target standardised with each "
          "table's train rows (also for the held-out tables), first 8 features (diabetes: "
          "age, sex, bmi, bp, s1-s4), fewer zero-padded, non-numeric columns dropped; "
          "meta-train tables California Housing, Diabetes, Energy Efficiency, held-out "
          "Abalone, Airfoil, Boston; episodes cycle through the tables. Models are the "
          "registry's (2 encoder blocks), not the paper's 4 layers. Full profile: 400K/40K/100K "
          "sets, 50 epochs, 5 seeds (the paper: 5 seeds on MNIST, 3-5 on CIFAR-100, 10 on the "
          "tabular task: add --seeds 0,...,9). Quick profile: offline stand-ins only, "
          "scikit-learn's digits (8x8, K=T=8) for NP-MNIST and its diabetes table (K=16, T=4) "
          "for the same-distribution split, 2,000/400/800 sets, 20 epochs, one seed, "
          "Standard and MZAttn-Full. The NP sets start on a plateau (the mean intensity) "
          "that the models leave after a few hundred to over 1,000 steps, at a seed-dependent "
          "time: with one seed, an NP gap can be a training-dynamics gap.",
)

if __name__ == "__main__":
    raise SystemExit(run_main(SPEC))
