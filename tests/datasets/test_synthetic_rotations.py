import itertools

import numpy as np
import pytest
from mzattn.datasets.synthetic.rotations import (
    apply_rotation,
    givens_planes,
    givens_rounds,
    post_alignment_chamfer,
    rotation_matrix,
)


def _angles(d, seed=0):
    return np.random.default_rng(seed).uniform(-np.pi, np.pi, d * (d - 1) // 2)


def _givens(d, i, j, theta):
    G = np.eye(d)
    G[i, i] = G[j, j] = np.cos(theta)
    G[i, j], G[j, i] = -np.sin(theta), np.sin(theta)
    return G


@pytest.mark.parametrize("d", [2, 3, 4, 7, 8, 33])
def test_rounds_cover_every_plane_once_and_are_disjoint(d):
    rounds = givens_rounds(d)
    planes = [tuple(p) for p in givens_planes(d)]
    assert sorted(planes) == list(itertools.combinations(range(d), 2))
    for pairs in rounds:
        assert len(np.unique(pairs)) == pairs.size  # no axis twice in a round
    assert len(rounds) == d - 1 + d % 2


@pytest.mark.parametrize("d", [2, 3, 5, 8, 16, 64])
def test_rotation_is_orthogonal_with_det_one(d):
    R = rotation_matrix(_angles(d, d), d)
    np.testing.assert_allclose(R @ R.T, np.eye(d), atol=1e-12)
    assert np.linalg.det(R) == pytest.approx(1.0, abs=1e-10)


@pytest.mark.parametrize("d", [3, 5, 6])
def test_rotation_equals_naive_product_of_givens_matrices(d):
    angles = _angles(d, 1)
    R = np.eye(d)
    for (i, j), theta in zip(givens_planes(d), angles, strict=True):
        R = R @ _givens(d, i, j, theta)
    np.testing.assert_allclose(rotation_matrix(angles, d), R, atol=1e-12)


def test_apply_rotation_rows_transpose_and_batch():
    d, rng = 6, np.random.default_rng(2)
    angles = rng.uniform(-3, 3, (4, d * (d - 1) // 2))
    X = rng.standard_normal((4, 5, d))
    Y = apply_rotation(X, angles)
    for b in range(4):
        np.testing.assert_allclose(Y[b], X[b] @ rotation_matrix(angles[b], d).T, atol=1e-12)
    np.testing.assert_allclose(apply_rotation(Y, angles, transpose=True), X, atol=1e-12)
    with pytest.raises(ValueError, match="'angles' must have"):
        apply_rotation(X, angles[:, :3])


@pytest.mark.parametrize("d", [2, 8, 32])
def test_post_alignment_target_vanishes_without_noise(d):
    rng = np.random.default_rng(d)
    A, angles = rng.standard_normal((20, d)), _angles(d, d)
    B = apply_rotation(A, angles)
    assert post_alignment_chamfer(A, B, angles) == pytest.approx(0.0, abs=1e-20)
    noisy = B + 0.1 * rng.standard_normal(B.shape)
    assert post_alignment_chamfer(A, noisy, angles) > 0.0


def test_givens_rounds_needs_two_axes():
    with pytest.raises(ValueError, match="'d' must be >= 2"):
        givens_rounds(1)
