r"""How much of a set target simple set statistics explain: the target's
spread and the :math:`R^2` of a least-squares linear fit of it on the set
mean, the covariance trace (and its square root) and the set size.

A target that such a fit already explains is easy for any pooled model (a
mean-pool head, a PMA); the paper's MEB argument needs a target that depends
on the few extremal points instead. Used by
:obj:`mzattn-repro table3-sensitivity` (Table 3's distribution axis).

.. code-block:: python

    from mzattn.repro.analysis.target_statistics import split_statistics
    split_statistics("meb", d=8, max_clusters=1, spread_min=1.0, spread_max=1.0)
"""
from typing import Any

import numpy as np
from torch import Tensor

FEATURES = ("mean", "trace", "sqrt_trace", "n")
r"""The per-set statistics of :func:`set_features`: the set mean (:obj:`d`
columns), the trace of the biased covariance, its square root and the set
size."""

MOMENTS = ("trace", "sqrt_trace", "n")
r"""The statistics of the fit without the set mean."""


def set_features(x: Tensor | np.ndarray, ptr: Tensor | np.ndarray) -> dict[str, np.ndarray]:
    r"""The statistics :obj:`FEATURES` of every set of a batch in CSR form
    (points :obj:`x` of shape :obj:`[N, d]`, set :obj:`i` is
    :obj:`x[ptr[i]:ptr[i + 1]]`), each of shape :obj:`[B, k]`."""
    x, ptr = np.asarray(x, dtype=np.float64), np.asarray(ptr, dtype=np.int64)
    sizes = np.diff(ptr)
    sets = np.repeat(np.arange(len(sizes)), sizes)
    mean = np.zeros((len(sizes), x.shape[1]))
    np.add.at(mean, sets, x)
    mean /= sizes[:, None]
    trace = np.zeros(len(sizes))
    np.add.at(trace, sets, ((x - mean[sets]) ** 2).sum(1))
    trace /= sizes
    return {"mean": mean, "trace": trace[:, None], "sqrt_trace": np.sqrt(trace)[:, None],
            "n": sizes[:, None].astype(np.float64)}


def design(features: dict[str, np.ndarray], names: tuple[str, ...] = FEATURES) -> np.ndarray:
    r"""The design matrix :obj:`[B, 1 + k]` of :obj:`names` with an
    intercept column."""
    columns = [features[name] for name in names]
    return np.concatenate([np.ones((len(columns[0]), 1)), *columns], axis=1)


def r2_score(y: np.ndarray, pred: np.ndarray) -> float:
    r""":math:`1 - \sum (y - \hat y)^2 / \sum (y - \bar y)^2`; :obj:`nan` for
    a constant :obj:`y`."""
    y, pred = np.asarray(y, dtype=np.float64).ravel(), np.asarray(pred).ravel()
    total = float(((y - y.mean()) ** 2).sum())
    return float("nan") if total == 0 else 1.0 - float(((y - pred) ** 2).sum()) / total


def linear_fit_r2(train: tuple[np.ndarray, np.ndarray], test: tuple[np.ndarray, np.ndarray]
                  ) -> float:
    r"""Test :math:`R^2` of the least-squares fit of :obj:`train = (X, y)`,
    evaluated on :obj:`test = (X, y)`."""
    coef, *_ = np.linalg.lstsq(train[0], np.asarray(train[1]).ravel(), rcond=None)
    return r2_score(test[1], test[0] @ coef)


def dataset_arrays(dataset) -> tuple[dict[str, np.ndarray], np.ndarray]:
    r"""The :func:`set_features` and the raw targets :obj:`[B]` of a
    :class:`~mzattn.datasets.synthetic.SyntheticSetDataset` (its first
    target column)."""
    data, slices = dataset._data, dataset.slices
    return set_features(data.x, slices["x"]), data.y[:, 0].double().numpy()


def target_statistics(train, test) -> dict[str, float]:
    r"""Spread of the test targets and the test :math:`R^2` of linear fits
    on the training split: on the moments (trace, its square root, n) and on
    all of :obj:`FEATURES`. Targets are the raw ones: an affine target
    normalisation changes no :math:`R^2`."""
    (f_train, y_train), (f_test, y_test) = dataset_arrays(train), dataset_arrays(test)
    return {
        "target_mean": float(y_test.mean()), "target_std": float(y_test.std()),
        "target_cv": float(y_test.std() / abs(y_test.mean())) if y_test.mean() else float("nan"),
        "fit_r2_moments": linear_fit_r2((design(f_train, MOMENTS), y_train),
                                        (design(f_test, MOMENTS), y_test)),
        "fit_r2": linear_fit_r2((design(f_train), y_train), (design(f_test), y_test)),
        "num_train": len(y_train), "num_test": len(y_test),
    }


def split_statistics(task: str, *, seed: int = 0, root: str | None = None,
                     **overrides: Any) -> dict[str, float]:
    r""":func:`target_statistics` of a synthetic task's train and test
    splits (generated and cached as for training)."""
    from mzattn.datasets.synthetic import load_task
    train, test = (load_task(task, split=split, seed=seed, root=root, log=False, **overrides)
                   for split in ("train", "test"))
    return target_statistics(train, test)
