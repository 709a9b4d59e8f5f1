r"""How much of a set statistic the set size alone explains.

Tables 6, 25 and 29 regress the max, sum, median or range of all entries of
a set of :math:`\mathcal{N}(0, I_d)` vectors (our reading,
:func:`~mzattn.datasets.synthetic.statistics.set_reduction`). The max and the
range grow with the set size :math:`n`, so part of their variance is
explained by :math:`n` alone. This module scores the predictor that knows
only :math:`n`: the mean training target per set size, scored by
:math:`R^2` on the test split. It reads the very splits a harness cell of
seed :obj:`seed` trains and is tested on, so its number sits beside the
models' test :math:`R^2` in the table reports. A model below it predicts
worse than the set size alone would let it. Attention pooling does not
count elements (its softmax weights sum to one, so it averages); sum
pooling does.

.. code-block:: text

    python -m mzattn.repro.analysis.set_size_baseline [--tasks set_max,set_range] [--seed 0]
"""
import argparse
from collections.abc import Sequence

import torch
from mzattn.repro.engine.options import parse_names
from torch_geometric.data import Data
from torchmetrics.functional import r2_score

TASKS = ("set_max", "set_sum", "set_median", "set_range")
r"""The reductions of Table 29 (and of Table 6's max column), at their defaults."""


def _sizes_and_targets(sets: Sequence[Data]) -> tuple[torch.Tensor, torch.Tensor]:
    sizes = torch.tensor([data.num_nodes for data in sets])
    targets = torch.stack([data.y.reshape(-1)[0] for data in sets]).double()
    return sizes, targets


def set_size_r2(train: Sequence[Data], test: Sequence[Data]) -> float:
    r""":math:`R^2` on :obj:`test` of the mean target of the :obj:`train`
    sets of each size (the overall train mean for a size :obj:`train` lacks).

    Args:
        train (Sequence[Data]): Sets with :obj:`x [n, d]` and a scalar
            :obj:`y`.
        test (Sequence[Data]): Sets as :obj:`train`.
    """
    train_sizes, train_targets = _sizes_and_targets(train)
    test_sizes, test_targets = _sizes_and_targets(test)
    means = {int(n): train_targets[train_sizes == n].mean() for n in train_sizes.unique()}
    fallback = train_targets.mean()
    prediction = torch.stack([means.get(int(n), fallback) for n in test_sizes])
    return float(r2_score(prediction, test_targets))


def baseline_scores(tasks: Sequence[str] = TASKS, seed: int = 0, root: str | None = None,
                    **overrides) -> dict[str, float]:
    r"""Test :math:`R^2` of :func:`set_size_r2` on each task's splits of
    seed :obj:`seed` (:func:`~mzattn.datasets.synthetic.load_splits`, with
    :obj:`overrides` such as :obj:`num_train`)."""
    from mzattn.datasets.synthetic import load_splits
    scores = {}
    for task in tasks:
        train, _, test = load_splits(task, seed=seed, root=root, log=False, **overrides)
        scores[task] = set_size_r2(train, test)
    return scores


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m mzattn.repro.analysis.set_size_baseline",
                                     description=__doc__.split("\n\n")[0])
    parser.add_argument("--tasks", type=parse_names, default=list(TASKS),
                        help=f"comma-separated synthetic tasks (default: {','.join(TASKS)})")
    parser.add_argument("--seed", type=int, default=0, help="data seed, as a cell's seed")
    parser.add_argument("--data-root", default=None, help="dataset cache root")
    args = parser.parse_args(argv)
    for task, score in baseline_scores(args.tasks, args.seed, args.data_root).items():
        print(f"{task:<12} test R² of the mean target per set size: {score:.3f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
