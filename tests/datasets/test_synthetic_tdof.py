import numpy as np
import pytest
from mzattn.datasets.synthetic.tdof import (
    frobenius_orthogonal_basis,
    meta_regression_basis,
    position_weights,
    quadratic_tdof,
    task_operator,
)


@pytest.mark.parametrize("d,L", [(8, 4), (32, 32), (3, 8)])
def test_basis_is_frobenius_orthogonal(d, L):
    M = frobenius_orthogonal_basis(np.random.default_rng(L), d, L)
    gram = np.einsum("aij,bij->ab", M, M)
    np.testing.assert_allclose(gram, d * np.eye(L + 1), atol=1e-10)


def test_basis_size_limit():
    with pytest.raises(ValueError, match="'L' must be <= 3"):
        frobenius_orthogonal_basis(np.random.default_rng(0), 2, 4)


def test_quadratic_tdof_equals_eq4_evaluated_directly():
    rng = np.random.default_rng(0)
    d, L = 6, 4
    M, w, mu = frobenius_orthogonal_basis(rng, d, L), rng.standard_normal(d), rng.standard_normal(d)
    direct = 0.0
    for i in range(d):  # w^T (M_0 + sum_l mu_l M_l) mu, entry by entry
        for j in range(d):
            entry = M[0, i, j] + sum(mu[l - 1] * M[l, i, j] for l in range(1, L + 1))
            direct += w[i] * entry * mu[j]
    assert quadratic_tdof(mu, M, w) == pytest.approx(direct, rel=1e-12)
    with pytest.raises(ValueError, match="at least L=4"):
        quadratic_tdof(mu[:3], M[:, :3, :3], w[:3])


def test_position_weights_sum_to_one_and_increase():
    w = position_weights(7)
    assert w.sum() == pytest.approx(1.0)
    assert (np.diff(w) > 0).all()
    assert position_weights(1).tolist() == [1.0]


def test_meta_regression_operator():
    rng = np.random.default_rng(0)
    basis, c = meta_regression_basis(rng, 5, 3, 2), rng.standard_normal(5)
    expected = sum(c[l] * basis[l] for l in range(5))
    np.testing.assert_allclose(task_operator(c, basis), expected, atol=1e-14)
    assert basis.shape == (5, 2, 3)
