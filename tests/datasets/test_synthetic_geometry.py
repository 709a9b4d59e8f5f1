import itertools
import math

import networkx as nx
import numpy as np
import pytest
from mzattn.datasets.synthetic.geometry import (
    affine_dimension,
    chamfer_distance,
    diameter,
    furthest_first_cost,
    hull_volume,
    k_smallest_sum,
    knn_radius,
    meb_radius,
    minimum_enclosing_ball,
    mst_weight,
)
from scipy.spatial import Delaunay


def _rng(seed=0):
    return np.random.default_rng(seed)


def _dist(P, Q):
    return math.sqrt(sum((p - q) ** 2 for p, q in zip(P, Q, strict=True)))


# ------------------------------------------------------------------- MEB


def _brute_force_meb_radius(P):
    """Smallest sphere through a subset of <= d + 1 points (centre in the
    subset's affine hull, by min-norm least squares) that encloses all."""
    n, d = P.shape
    best = math.inf
    for size in range(1, min(n, d + 1) + 1):
        for subset in itertools.combinations(range(n), size):
            Q = P[list(subset)]
            V = Q[1:] - Q[0]
            if size > 1 and np.linalg.matrix_rank(V) < size - 1:
                continue
            u = np.linalg.lstsq(2 * V, (V ** 2).sum(1), rcond=None)[0] if size > 1 else 0.0
            center = Q[0] + u
            radius = np.sqrt(((Q - center) ** 2).sum(1)).max()
            if np.sqrt(((P - center) ** 2).sum(1)).max() <= radius * (1 + 1e-9) + 1e-12:
                best = min(best, radius)
    return best


@pytest.mark.parametrize("d", [1, 2, 3, 5])
def test_meb_equals_brute_force_over_support_subsets(d):
    rng = _rng(d)
    for trial in range(25):
        n = int(rng.integers(2, 9))
        P = rng.standard_normal((n, d)) * rng.uniform(0.1, 10)
        if trial % 3 == 0:  # clusters and anisotropy
            P = P * rng.uniform(0.1, 3, d) + 5 * rng.standard_normal(d) * (rng.random((n, 1)) < 0.5)
        assert meb_radius(P) == pytest.approx(_brute_force_meb_radius(P), rel=1e-9, abs=1e-12)


@pytest.mark.parametrize("d,n", [(8, 30), (16, 30), (32, 35), (32, 8)])
def test_meb_optimality_certificate(d, n):
    rng = _rng(n + d)
    for _ in range(5):
        P = rng.standard_normal((n, d)) * rng.uniform(0.5, 2, d)
        ball = minimum_enclosing_ball(P)
        dist = np.sqrt(((P - ball.center) ** 2).sum(1))
        assert dist.max() <= ball.radius * (1 + 1e-9)  # every point inside
        np.testing.assert_allclose(dist[ball.support], ball.radius, rtol=1e-9)  # on sphere
        assert len(ball.support) <= d + 1
        assert (ball.weights >= 0).all() and ball.weights.sum() == pytest.approx(1.0)
        # The centre is a convex combination of the support (KKT conditions).
        np.testing.assert_allclose(ball.weights @ P[ball.support], ball.center, atol=1e-9)


@pytest.mark.parametrize("d", [1, 2, 3, 7, 20])
def test_meb_regular_simplex(d):
    P = np.eye(d + 1)  # regular simplex with edge sqrt(2), in a hyperplane of R^{d+1}
    P = np.concatenate([P, P.mean(0, keepdims=True) + 0.01 * np.eye(d + 1)[:2] - 0.005])
    ball = minimum_enclosing_ball(P)
    assert ball.radius == pytest.approx(math.sqrt(d / (d + 1)), rel=1e-12)
    np.testing.assert_allclose(ball.center, np.full(d + 1, 1 / (d + 1)), atol=1e-12)


def test_meb_small_known_cases():
    assert meb_radius([[0.0, 0.0], [3.0, 4.0]]) == pytest.approx(2.5)
    ball = minimum_enclosing_ball([[1.0, 2.0, 3.0]])
    assert ball.radius == 0.0 and np.allclose(ball.center, [1, 2, 3])
    assert meb_radius(np.ones((5, 4))) == 0.0  # identical points
    assert meb_radius([[0.0], [1.0], [0.5], [1.0], [-2.0]]) == pytest.approx(1.5)
    cube = np.array(list(itertools.product([0.0, 1.0], repeat=4)))
    assert meb_radius(cube) == pytest.approx(1.0)  # co-spherical, degenerate support


def test_meb_of_embedded_flat_cloud_equals_its_intrinsic_meb():
    rng = _rng(4)
    for _ in range(10):
        P2 = rng.standard_normal((8, 2))
        basis = np.linalg.qr(rng.standard_normal((12, 2)))[0]  # isometric embedding
        P = P2 @ basis.T + rng.standard_normal(12)
        assert meb_radius(P) == pytest.approx(_brute_force_meb_radius(P2), rel=1e-9)


def test_meb_is_permutation_invariant():
    P = _rng(3).standard_normal((25, 6))
    assert meb_radius(P[::-1]) == pytest.approx(meb_radius(P), rel=1e-12)


# ------------------------------------------------------------ convex hull


@pytest.mark.parametrize("d", [2, 3, 4, 5])
def test_hull_unit_cube(d):
    cube = np.array(list(itertools.product([0.0, 1.0], repeat=d)))
    inside = _rng(d).uniform(0.1, 0.9, (10, d))
    assert hull_volume(np.concatenate([cube, inside])) == pytest.approx(1.0, rel=1e-12)


@pytest.mark.parametrize("d", [2, 3, 4, 5, 6])
def test_hull_simplex(d):
    P = np.concatenate([np.zeros((1, d)), np.eye(d)])
    assert hull_volume(P) == pytest.approx(1 / math.factorial(d), rel=1e-12)


@pytest.mark.parametrize("d", [2, 3, 4])
def test_hull_monte_carlo(d):
    rng = _rng(10 + d)
    P = rng.standard_normal((25, d))
    low, high = P.min(0), P.max(0)
    box = float(np.prod(high - low))
    num = 100_000
    hits = Delaunay(P).find_simplex(rng.uniform(low, high, (num, d))) >= 0
    estimate = box * hits.mean()
    stderr = box * math.sqrt(hits.mean() * (1 - hits.mean()) / num)
    assert abs(hull_volume(P) - estimate) < 5 * stderr


def test_hull_degenerate_and_invalid():
    flat = np.c_[_rng(1).standard_normal((20, 2)), np.zeros(20)]  # coplanar in R^3
    assert hull_volume(flat) == 0.0
    assert affine_dimension(flat) == 2
    assert hull_volume(np.ones((6, 3))) == 0.0  # one repeated point
    with pytest.raises(ValueError, match="n > d"):
        hull_volume(np.eye(3))
    with pytest.raises(ValueError, match="d >= 2"):
        hull_volume(np.ones((5, 1)))


# ------------------------------------------------------------------- MST


def _brute_force_prim(P):
    n = len(P)
    in_tree, best, total = {0}, {j: _dist(P[0], P[j]) for j in range(1, n)}, 0.0
    while best:
        j = min(best, key=best.get)
        total += best.pop(j)
        in_tree.add(j)
        for k in best:
            best[k] = min(best[k], _dist(P[j], P[k]))
    return total


def _networkx_mst(P):
    G = nx.Graph()
    for i, j in itertools.combinations(range(len(P)), 2):
        G.add_edge(i, j, weight=_dist(P[i], P[j]))
    return sum(w for _, _, w in nx.minimum_spanning_tree(G).edges(data="weight"))


@pytest.mark.parametrize("d", [1, 2, 8, 64])
def test_mst_equals_prim_and_networkx(d):
    rng = _rng(d)
    for _ in range(5):
        P = rng.standard_normal((int(rng.integers(2, 25)), d))
        expected = _brute_force_prim(P)
        assert mst_weight(P) == pytest.approx(expected, rel=1e-12)
        assert _networkx_mst(P) == pytest.approx(expected, rel=1e-12)


def test_mst_with_duplicates_and_single_point():
    P = _rng(0).standard_normal((10, 3))
    assert mst_weight(np.concatenate([P, P[:4]])) == pytest.approx(_brute_force_prim(P))
    assert mst_weight(P[:1]) == 0.0
    assert mst_weight([[0.0, 0.0], [3.0, 4.0], [3.0, 4.0]]) == pytest.approx(5.0)


# ------------------------------------------------- distance-based targets


def test_chamfer_brute_force():
    rng = _rng(5)
    A, B = rng.standard_normal((7, 3)), rng.standard_normal((11, 3))
    a_to_b = sum(min(_dist(a, b) ** 2 for b in B) for a in A) / len(A)
    b_to_a = sum(min(_dist(a, b) ** 2 for a in A) for b in B) / len(B)
    assert chamfer_distance(A, B) == pytest.approx(a_to_b + b_to_a, rel=1e-12)
    assert chamfer_distance(A, B, "sum") == pytest.approx(a_to_b * len(A) + b_to_a * len(B),
                                                          rel=1e-12)
    assert chamfer_distance(A, A[::-1]) == 0.0
    with pytest.raises(ValueError, match="'reduction' must be one of"):
        chamfer_distance(A, B, "max")
    with pytest.raises(ValueError, match="same dimension"):
        chamfer_distance(A, B[:, :2])


def test_diameter_brute_force():
    P = _rng(6).standard_normal((15, 5))
    expected = max(_dist(p, q) for p, q in itertools.combinations(P, 2))
    assert diameter(P) == pytest.approx(expected, rel=1e-12)
    assert diameter(P[:1]) == 0.0


@pytest.mark.parametrize("k", [1, 3, 9])
def test_knn_radius_brute_force(k):
    P = _rng(k).standard_normal((10, 4))
    radii = [sorted(_dist(p, q) for j, q in enumerate(P) if j != i)[k - 1]
             for i, p in enumerate(P)]
    assert knn_radius(P, k) == pytest.approx(np.mean(radii), rel=1e-12)
    assert knn_radius(P, k, "median") == pytest.approx(np.median(radii), rel=1e-12)
    with pytest.raises(ValueError, match="'reduce' must be one of"):
        knn_radius(P, k, "max")


@pytest.mark.parametrize("k", [1, 5, 45])
def test_k_smallest_sum_brute_force(k):
    P = _rng(k).standard_normal((10, 4))
    pairs = sorted(_dist(p, q) for p, q in itertools.combinations(P, 2))
    assert k_smallest_sum(P, k) == pytest.approx(sum(pairs[:k]), rel=1e-12)


def _brute_force_furthest_first(P, k):
    centroid = [sum(c) / len(P) for c in zip(*P, strict=True)]
    centers = [max(range(len(P)), key=lambda i: _dist(P[i], centroid))]
    cost = lambda i: min(_dist(P[i], P[c]) for c in centers)  # noqa: E731
    while len(centers) < k:
        centers.append(max(range(len(P)), key=cost))
    return max(cost(i) for i in range(len(P)))


@pytest.mark.parametrize("k", [1, 2, 5, 12])
def test_furthest_first_brute_force_and_permutation(k):
    P = _rng(k).standard_normal((12, 6))
    assert furthest_first_cost(P, k) == pytest.approx(_brute_force_furthest_first(P, k))
    assert furthest_first_cost(P[::-1], k) == pytest.approx(furthest_first_cost(P, k))
    if k == len(P):
        assert furthest_first_cost(P, k) == 0.0


@pytest.mark.parametrize("fn,k,match", [
    (knn_radius, 5, "'k' must be <= 4"),
    (knn_radius, 0, "'k' must be >= 1"),
    (k_smallest_sum, 11, "'k' must be <= 10"),
    (furthest_first_cost, 6, "'k' must be <= 5"),
])
def test_k_too_large_raises(fn, k, match):
    with pytest.raises(ValueError, match=match):
        fn(np.zeros((5, 2)), k)


@pytest.mark.parametrize("P,match", [
    (np.zeros(3), "shape \\[n, d\\]"),
    (np.zeros((0, 3)), "at least 1"),
    (np.zeros((3, 0)), "d >= 1"),
    (np.array([[0.0, np.nan]]), "NaN"),
])
def test_bad_points_raise(P, match):
    with pytest.raises(ValueError, match=match):
        meb_radius(P)
