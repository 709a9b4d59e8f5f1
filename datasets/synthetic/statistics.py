r"""Statistical set targets of Table 7 (covariance Frobenius norm,
Mahalanobis distance, PCA reconstruction error) and the set reductions of
Task A and Tables 25 / 29 (max, sum, median, range).

All covariances are the biased sample covariance
:math:`\hat\Sigma = \frac{1}{n} \sum_i (x_i - \mu)(x_i - \mu)^\top` of
App. B.3 (Proposition 12).
"""
import numpy as np

from ._validate import as_points, check_float, check_int

REDUCTIONS = ("sum_of_dimension_maxima", "max", "sum", "median", "range")


def sample_covariance(P) -> np.ndarray:
    r"""Biased sample covariance of :obj:`P` [n, d], shape :obj:`[d, d]`."""
    P = as_points(P)
    Z = P - P.mean(0)
    return Z.T @ Z / len(P)


def cov_frobenius(P) -> float:
    r"""Frobenius norm :math:`\|\hat\Sigma(P)\|_F` of the sample covariance
    of :obj:`P` [n, d]."""
    return float(np.linalg.norm(sample_covariance(P)))


def mahalanobis_distance(P, q, *, ridge: float = 1e-2) -> float:
    r"""Mahalanobis distance of a query point from a set,

    .. math::
        \sqrt{(q - \mu)^\top (\hat\Sigma + \lambda I)^{-1} (q - \mu)},

    with :math:`\mu, \hat\Sigma` the mean and sample covariance of :obj:`P`
    and the ridge :math:`\lambda` of Proposition 12 (keeps small sets
    invertible).

    Args:
        P (numpy.ndarray): Context points of shape :obj:`[n, d]`.
        q (numpy.ndarray): Query point of shape :obj:`[d]`.
        ridge (float, optional): Regulariser :math:`\lambda > 0`. (default: :obj:`1e-2`)
    """
    P = as_points(P)
    q = as_points(np.reshape(q, (1, -1)), "q")[0]
    if q.shape[0] != P.shape[1]:
        raise ValueError(f"'q' must have the dimension of 'P' ({P.shape[1]}, got {q.shape[0]})")
    ridge = check_float("ridge", ridge, positive=True)
    diff = q - P.mean(0)
    cov = sample_covariance(P) + ridge * np.eye(P.shape[1])
    return float(np.sqrt(diff @ np.linalg.solve(cov, diff)))


def pca_reconstruction_error(P, k: int) -> float:
    r"""Mean squared error of reconstructing the centred points of :obj:`P`
    from their top-:obj:`k` principal components,
    :math:`\frac{1}{n} \sum_i \|(I - V_k V_k^\top)(x_i - \mu)\|^2`, which
    equals the sum of the :math:`d - k` smallest eigenvalues of
    :math:`\hat\Sigma`.

    Args:
        P (numpy.ndarray): Points of shape :obj:`[n, d]`.
        k (int): Number of kept components, :obj:`1 <= k < d`.
    """
    P = as_points(P)
    k = check_int("k", k, minimum=1, maximum=P.shape[1] - 1,
                  reason=f"keeping all d={P.shape[1]} components leaves no error")
    eigenvalues = np.linalg.eigvalsh(sample_covariance(P))  # ascending
    return float(np.clip(eigenvalues[: P.shape[1] - k], 0.0, None).sum())


def sum_of_dimension_maxima(X) -> float:
    r"""Task A target (App. A.2), "the sum of dimension-wise maxima":
    :math:`y = \sum_j \max_i x_{ij}`, the largest value of each coordinate
    over the set, summed over the coordinates.

    App. A.2 also writes :math:`y = \sum_i [\max_{\text{dim}} x_i]`, the sum
    over the elements of their largest coordinate. Its own Table 2 decides
    between the two: MSE / (1 - R²) of every row puts the variance of its
    test targets at 18.1; this reading gives 19.9, the formula's 2,195
    (:mod:`mzattn.repro.analysis.target_variance`).

    Args:
        X (numpy.ndarray): Set of shape :obj:`[n, d]`.
    """
    return float(as_points(X, "X").max(0).sum())


REDUCTION_AXES = ("entries", "per-dim-sum", "per-element-sum")
r"""How :func:`set_reduction` reduces a set :math:`X \in \mathbb{R}^{n \times d}`
to one number (the paper does not say; each is a reading, see
``docs/readings.md``):

* :obj:`"entries"`: over all :math:`n \cdot d` entries, :math:`\mathrm{red}_{i,j}
  x_{ij}` (our first reading);
* :obj:`"per-dim-sum"`: per coordinate over the elements, then summed,
  :math:`\sum_j \mathrm{red}_i x_{ij}` (Task A's "sum of dimension-wise maxima");
* :obj:`"per-element-sum"`: per element over the coordinates, then summed,
  :math:`\sum_i \mathrm{red}_j x_{ij}` (Task A's formula as printed).
"""

_REDUCERS = {
    "max": lambda X, axis: X.max(axis),
    "sum": lambda X, axis: X.sum(axis),
    "median": lambda X, axis: np.median(X, axis),
    "range": lambda X, axis: X.max(axis) - X.min(axis),
}


def set_reduction(X, reduction: str, axes: str = "entries") -> float:
    r"""A scalar reduction of a set: :obj:`"sum_of_dimension_maxima"` (Task A,
    see :func:`sum_of_dimension_maxima`), or (Tables 6, 25 and 29)
    :obj:`"max"`, :obj:`"sum"`, :obj:`"median"` or :obj:`"range"` (max minus
    min), reduced as :obj:`axes` says.

    Args:
        X (numpy.ndarray): Set of shape :obj:`[n, d]`.
        reduction (str): One of :obj:`REDUCTIONS`.
        axes (str, optional): One of :obj:`REDUCTION_AXES`; Task A's target
            takes only :obj:`"entries"` (it is already a per-coordinate sum).
            (default: :obj:`"entries"`)
    """
    X = as_points(X, "X")
    if axes not in REDUCTION_AXES:
        raise ValueError(f"'axes' must be one of {REDUCTION_AXES} (got {axes!r})")
    if reduction == "sum_of_dimension_maxima":
        if axes != "entries":
            raise ValueError(f"'sum_of_dimension_maxima' is already reduced per coordinate; "
                             f"'axes' must be 'entries' (got {axes!r})")
        return sum_of_dimension_maxima(X)
    if reduction not in _REDUCERS:
        raise ValueError(f"'reduction' must be one of {REDUCTIONS} (got {reduction!r})")
    reduce = _REDUCERS[reduction]
    if axes == "entries":
        return float(reduce(X.reshape(-1), 0))
    return float(reduce(X, 0 if axes == "per-dim-sum" else 1).sum())
