import numpy as np
import pytest
from mzattn.datasets.synthetic.statistics import (
    REDUCTION_AXES,
    REDUCTIONS,
    cov_frobenius,
    mahalanobis_distance,
    pca_reconstruction_error,
    set_reduction,
    sum_of_dimension_maxima,
)
from scipy.spatial.distance import mahalanobis


def _points(n=20, d=6, seed=0):
    rng = np.random.default_rng(seed)
    return rng.standard_normal((n, d)) @ rng.standard_normal((d, d)) + rng.standard_normal(d)


def test_cov_frobenius_matches_numpy():
    P = _points()
    assert cov_frobenius(P) == pytest.approx(np.linalg.norm(np.cov(P.T, bias=True)), rel=1e-12)


def test_mahalanobis_matches_scipy():
    P, q = _points(), np.random.default_rng(1).standard_normal(6)
    VI = np.linalg.inv(np.cov(P.T, bias=True) + 0.5 * np.eye(6))
    expected = mahalanobis(q, P.mean(0), VI)
    assert mahalanobis_distance(P, q, ridge=0.5) == pytest.approx(expected, rel=1e-10)
    with pytest.raises(ValueError, match="'ridge' must be > 0"):
        mahalanobis_distance(P, q, ridge=0.0)
    with pytest.raises(ValueError, match="'q' must have the dimension"):
        mahalanobis_distance(P, q[:3])


@pytest.mark.parametrize("k", [1, 3, 5])
def test_pca_reconstruction_matches_explicit_projection(k):
    P = _points(seed=k)
    Z = P - P.mean(0)
    V = np.linalg.svd(Z, full_matrices=False)[2][:k].T  # top-k directions [d, k]
    expected = ((Z - Z @ V @ V.T) ** 2).sum(1).mean()
    assert pca_reconstruction_error(P, k) == pytest.approx(expected, rel=1e-9)
    with pytest.raises(ValueError, match="'k' must be <= 5"):
        pca_reconstruction_error(P, 6)


def test_set_reductions_match_numpy():
    X = _points(n=9, d=4)
    expected = {"sum_of_dimension_maxima": sum(max(column) for column in X.T), "max": X.max(),
                "sum": X.sum(),
                "median": np.median(X.ravel()), "range": X.max() - X.min()}
    assert set(expected) == set(REDUCTIONS)
    for name, value in expected.items():
        assert set_reduction(X, name) == pytest.approx(value, rel=1e-12)
    assert sum_of_dimension_maxima(X) == pytest.approx(expected["sum_of_dimension_maxima"])
    assert sum_of_dimension_maxima([[1.0, 5.0], [3.0, 2.0]]) == 8.0  # max 3 of x_1, 5 of x_2
    with pytest.raises(ValueError, match="'reduction' must be one of"):
        set_reduction(X, "mean")


def _brute_force(X, reduction, axes):
    # plain Python over the entries, independent of set_reduction's numpy axes
    reduce = {"max": max, "sum": sum, "median": lambda v: float(np.median(v)),
              "range": lambda v: max(v) - min(v)}[reduction]
    rows = [list(map(float, row)) for row in X]
    if axes == "entries":
        return reduce([v for row in rows for v in row])
    if axes == "per-dim-sum":
        return sum(reduce([row[j] for row in rows]) for j in range(len(rows[0])))
    return sum(reduce(row) for row in rows)


@pytest.mark.parametrize("axes", REDUCTION_AXES)
@pytest.mark.parametrize("reduction", ["max", "sum", "median", "range"])
def test_reduction_readings_match_brute_force(reduction, axes):
    X = np.random.default_rng(3).standard_normal((7, 4))
    assert set_reduction(X, reduction, axes) == pytest.approx(_brute_force(X, reduction, axes),
                                                              rel=1e-12)


def test_per_dim_sum_of_max_is_task_a_and_task_a_takes_no_other_axes():
    X = np.random.default_rng(4).standard_normal((9, 5))
    assert set_reduction(X, "max", "per-dim-sum") == sum_of_dimension_maxima(X)
    with pytest.raises(ValueError, match="'axes' must be 'entries'"):
        set_reduction(X, "sum_of_dimension_maxima", "per-dim-sum")
    with pytest.raises(ValueError, match="'axes' must be one of"):
        set_reduction(X, "max", "per-row")
