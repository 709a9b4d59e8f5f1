r"""Spec pieces shared by the transfer-study tables on real point clouds
(Tables 26, 31, 32 and 33, App. D.4.7 and D.5.6): the seven
parameter-comparable models, ResNet-feature columns, run profiles and a rank
claim.

The real data (MNIST, Fashion-MNIST, CIFAR-100, ImageNet ResNet weights)
must be downloaded by hand: the quick and full profiles stop with a
:class:`FileNotFoundError` naming the missing files and their URL. The smoke
profiles run offline on stand-in data (:obj:`stand_in=True` of
:mod:`mzattn.repro.training.real_data`: scikit-learn's digits, random-weight ResNets).
"""
import dataclasses
from collections.abc import Callable

from mzattn.repro.core.spec import QUICK, SMOKE, Column, Profile, Row, Verdict, full
from mzattn.repro.report.claims import NOT_REPRODUCED, NOT_RUN, REPRODUCED
from mzattn.repro.report.results import Results

ROWS = (
    Row("Standard", "standard"),
    Row("ST-Large", "st-large"),
    Row("HyperNet", "hypernet-r8"),
    Row("Perceiver", "perceiver"),
    Row("LinearAttn", "la-st"),
    Row("MZAttn-Large", "mz-large"),
    Row("MZAttn-Full", "mz-full"),
)
r"""The 7-way comparison of App. D.5.6 (paper labels; LinearAttn is LA-ST)."""

MZ = "MZAttn-Full"

MAX_EPOCHS = 80
r"""Training epochs of the ResNet-feature runs (App. D.4.7: "at 80 training
epochs"); the paper states no other budget for Tables 31-33."""


def resnet_column(label: str, backbone: str, target: str, **training) -> Column:
    r"""A column of ResNet layer-3 point clouds of CIFAR-100 with one
    geometric target (standardised for training), optionally with
    :class:`~mzattn.repro.core.spec.Profile` fields of its own (e.g. patience)."""
    return Column(label, "resnet_features", {"backbone": backbone, "targets": target},
                  normalize=True, training=training)


def profiles(smoke_rows: tuple[str, ...], quick_rows: tuple[str, ...],
             quick_columns: tuple[str, ...] | None, full_seeds: tuple[int, ...],
             smoke_columns: tuple[str, ...] | None = None) -> dict[str, Profile]:
    r"""The three profiles of a transfer table: smoke on the offline stand-in
    data, quick on 1K/250/500 sets for 15 epochs (needs the downloads), full
    with every set, :obj:`MAX_EPOCHS` epochs and :obj:`full_seeds`."""
    return {
        "smoke": dataclasses.replace(SMOKE, rows=smoke_rows, columns=smoke_columns,
                                     data={"stand_in": True}),
        "quick": dataclasses.replace(QUICK, rows=quick_rows,
                                     columns=quick_columns),
        "full": full(seeds=full_seeds, max_epochs=MAX_EPOCHS),
    }


def rank(results: Results, column: str, row: str = MZ) -> tuple[int, int] | None:
    r"""Rank of :obj:`row` by mean :math:`R^2` among the rows run on
    :obj:`column` (1 = best) and the number of rows run; :obj:`None` if
    :obj:`row` or no other row ran."""
    means = {r.label: results.mean(r.label, column) for r in results.spec.rows}
    means = {label: mean for label, mean in means.items() if mean is not None}
    if row not in means or len(means) < 2:
        return None
    return 1 + sum(mean > means[row] for mean in means.values()), len(means)


def rank_claim(columns: tuple[str, ...], holds: Callable[[list[tuple[int, int]]], bool],
               what: str) -> Callable[[Results], Verdict]:
    r"""A check on MZAttn-Full's ranks over :obj:`columns` (the columns run):
    :obj:`holds(ranks)` decides, :obj:`what` names the rows in the detail."""
    def check(results: Results) -> Verdict:
        ranks = {column: rank(results, column) for column in columns}
        ranks = {column: value for column, value in ranks.items() if value is not None}
        if not ranks:
            return Verdict(NOT_RUN, f"{MZ} and another model not run on {what}")
        detail = "; ".join(f"{column}: {r}/{k}" for column, (r, k) in ranks.items())
        status = REPRODUCED if holds(list(ranks.values())) else NOT_REPRODUCED
        return Verdict(status, f"{MZ} rank on {what}: {detail}")
    return check


def mean_relative_rank(ranks: list[tuple[int, int]]) -> float:
    r"""Mean of :math:`(r - 1) / (k - 1)`: 0 when always first, 1 when always
    last, 0.5 expected when no model has an advantage."""
    return sum((r - 1) / (k - 1) for r, k in ranks) / len(ranks)
