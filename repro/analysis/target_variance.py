r"""Are our synthetic tasks the paper's? Their target variance says.

Table 2 of the paper prints the test MSE and the test :math:`R^2` of every
model on Tasks A, B, F and G. Since :math:`R^2 = 1 - \mathrm{MSE} /
\mathrm{Var}(y)`, each row gives the variance of the paper's test targets,
:math:`\mathrm{MSE} / (1 - R^2)`, and the rows agree to within 1%. This
module sets it beside the variance of our test targets for the same task,
as App. A.2's text reads, on the test split that a cell of seed
:obj:`seed` is scored on. A task whose variance is off by more than the
readings' factor (:func:`same_scale`) is not the one the paper's numbers
come from; ``mzattn-repro readings`` weighs this check with the others, and
decides which claims may rest on each task
(:func:`mzattn.repro.core.evidence.column_reading`).

.. code-block:: text

    python -m mzattn.repro.analysis.target_variance [--seed 0]
"""
import argparse
import statistics

import torch
from mzattn.repro.core.readings import load_readings

from .readings import within_factor

COLUMNS = ("A", "B", "F", "G")
r"""Table 2's synthetic regression columns that print both MSE and :math:`R^2`."""

def paper_variances(column: str) -> list[float]:
    r""":math:`\mathrm{MSE} / (1 - R^2)` of every row of the paper's Table 2
    that prints both for :obj:`column`."""
    from mzattn.repro.report.paper_values import paper_table
    rows = paper_table("table2").rows.values()
    return [row[f"{column} MSE"].mean / (1.0 - row[f"{column} R2"].mean) for row in rows
            if f"{column} MSE" in row and f"{column} R2" in row]


def our_variance(column: str, seed: int = 0, root: str | None = None) -> float:
    r"""Variance of our test targets of Table 2's :obj:`column` (its task and
    overrides at the paper's split sizes, the split of seed :obj:`seed`)."""
    from mzattn.datasets.synthetic import load_splits
    from mzattn.repro.core.registry import load_spec
    task = load_spec("table2").column(column)
    _, _, test = load_splits(task.task, seed=seed, root=root, log=False, **task.overrides)
    return float(torch.cat([data.y.reshape(-1) for data in test]).double().var())


def same_scale(paper: float, ours: float) -> bool:
    r"""Whether :obj:`ours` is within the variance factor of the readings'
    consistency rule (:obj:`variance_factor` in :obj:`readings.toml
    <mzattn.repro.core.readings.DATA>`) of :obj:`paper`, either way."""
    return within_factor(ours, paper, load_readings().tolerance.variance_factor)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m mzattn.repro.analysis.target_variance",
                                     description=__doc__.split("\n\n")[0])
    parser.add_argument("--seed", type=int, default=0, help="data seed, as a cell's seed")
    parser.add_argument("--data-root", default=None, help="dataset cache root")
    args = parser.parse_args(argv)
    print("| Table 2 task | paper: MSE / (1 - R²), mean (range) over rows | ours | ratio |")
    print("| --- | --- | --- | --- |")
    for column in COLUMNS:
        paper = paper_variances(column)
        ours = our_variance(column, args.seed, args.data_root)
        mean = statistics.fmean(paper)
        verdict = "" if same_scale(mean, ours) else " (not the paper's task)"
        print(f"| {column} | {mean:.4g} ({min(paper):.4g}-{max(paper):.4g}) | {ours:.4g} | "
              f"{ours / mean:.3g}{verdict} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
