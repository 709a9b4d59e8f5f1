r"""Exact computational-geometry targets on point sets.

Every function takes plain NumPy arrays (points as rows, :obj:`P` of shape
:obj:`[n, d]`), validates them, and returns a Python :obj:`float` (or, for
:func:`minimum_enclosing_ball`, the ball itself). Distances are Euclidean
unless a docstring says otherwise. The generators in
:mod:`mzattn.datasets.synthetic.tasks` call these functions; anyone can call
them on their own points.
"""
from typing import NamedTuple

import numpy as np
from scipy.sparse.csgraph import minimum_spanning_tree
from scipy.spatial import ConvexHull, QhullError
from scipy.spatial.distance import cdist, pdist, squareform

from ._validate import as_points, check_int

# Relative tolerance on squared radii of the MEB optimality certificate.
MEB_RTOL = 1e-10
# Relative singular-value threshold below which a point set is treated as
# lying in a lower-dimensional affine subspace.
RANK_RTOL = 1e-10


class Ball(NamedTuple):
    r"""A closed Euclidean ball, as returned by :func:`minimum_enclosing_ball`.

    Attributes:
        center (numpy.ndarray): Centre of shape :obj:`[d]`.
        radius (float): Radius.
        support (numpy.ndarray): Indices of the points on the boundary that
            determine the ball (at most :obj:`d + 1`, affinely independent).
        weights (numpy.ndarray): Convex weights of the support points with
            :obj:`center = weights @ P[support]` (the dual solution).
    """
    center: np.ndarray
    radius: float
    support: np.ndarray
    weights: np.ndarray


# ------------------------------------------------------------- MEB helpers


def _circumcenter_weights(Q: np.ndarray) -> np.ndarray:
    r"""Affine weights :obj:`w` (summing to one) of the centre of the sphere
    through the affinely independent rows of :obj:`Q` [m, d] within their
    affine hull: :obj:`w @ Q` is equidistant from every row."""
    V = Q[1:] - Q[0]  # [m - 1, d]
    if len(V) == 0:
        return np.ones(1)
    a = np.linalg.solve(2.0 * V @ V.T, (V * V).sum(1))
    return np.concatenate([[1.0 - a.sum()], a])


def _affine_coordinates(Q: np.ndarray, p: np.ndarray, tol: float) -> np.ndarray | None:
    r"""Affine weights of :obj:`p` with respect to the rows of :obj:`Q`, or
    :obj:`None` if :obj:`p` lies outside their affine hull (by more than
    :obj:`tol`)."""
    V = Q[1:] - Q[0]
    b, *_ = np.linalg.lstsq(V.T, p - Q[0], rcond=None)
    if np.linalg.norm(V.T @ b - (p - Q[0])) > tol:
        return None
    return np.concatenate([[1.0 - b.sum()], b])


def _descend_to_circumcenter(P: np.ndarray, W: list[int], lam: np.ndarray):
    r"""Primal active-set inner loop: move the convex weights :obj:`lam` of
    the working set :obj:`W` towards the circumcentre weights, dropping the
    first point whose weight reaches zero, until the circumcentre weights are
    non-negative."""
    while True:
        target = _circumcenter_weights(P[W])
        if target.min() >= 0.0:
            return W, target
        shrink = target < 0.0
        steps = lam[shrink] / (lam[shrink] - target[shrink])
        step = steps.min()
        lam = lam + step * (target - lam)
        drop = int(np.flatnonzero(shrink)[np.argmin(steps)])
        W = W[:drop] + W[drop + 1:]
        lam = np.delete(lam, drop)
        lam = np.clip(lam, 0.0, None) / np.clip(lam, 0.0, None).sum()


def _enter(P: np.ndarray, W: list[int], lam: np.ndarray, j: int, tol: float):
    r"""Adds the violating point :obj:`j` to the working set. If :obj:`j` is
    in the affine hull of :obj:`W`, first moves weight onto :obj:`j` along the
    affine dependency (the centre stays fixed and the dual objective drops)
    until a point of :obj:`W` leaves, which restores affine independence."""
    coords = _affine_coordinates(P[W], P[j], tol) if len(W) > 1 else None
    if coords is None:
        return W + [j], np.append(lam, 0.0)
    positive = coords > 0.0
    ratios = lam[positive] / coords[positive]
    drop = int(np.flatnonzero(positive)[np.argmin(ratios)])
    lam = np.append(lam - ratios.min() * coords, ratios.min())
    keep = [i for i in range(len(W) + 1) if i != drop]
    lam = np.clip(lam[keep], 0.0, None)
    return [(W + [j])[i] for i in keep], lam / lam.sum()


def minimum_enclosing_ball(P) -> Ball:
    r"""The minimum enclosing ball (MEB) of a point set, computed exactly.

    Solves the dual of the MEB problem,

    .. math::
        \min_{\lambda \in \Delta_n} \Big\| \sum_i \lambda_i p_i \Big\|^2
        - \sum_i \lambda_i \|p_i\|^2,

    with a primal active-set method (the working set is kept affinely
    independent, so it never exceeds :math:`d + 1` points). At termination the
    KKT conditions hold: the support points are equidistant from the centre
    :math:`c = \sum_i \lambda_i p_i` with :math:`\lambda \ge 0`, and every
    point lies in the ball (up to a relative tolerance :obj:`MEB_RTOL` on the
    squared radius), which certifies optimality because the problem is
    convex. Finite like Welzl's algorithm (used in the paper, App. D.4.1) but
    without its recursion, so it is fast for :math:`d` up to a few hundred.

    Args:
        P (numpy.ndarray): Points of shape :obj:`[n, d]`, :obj:`n >= 1`.

    Returns:
        Ball: centre, radius, support indices and dual weights.
    """
    P = as_points(P)
    scale = max(float(np.abs(P - P[0]).max()), np.finfo(float).tiny)
    tol = RANK_RTOL * scale
    W = [int(np.argmax(((P - P[0]) ** 2).sum(1)))]
    lam = np.ones(1)
    for _ in range(10 * len(P) + 10 * P.shape[1] + 10):
        W, lam = _descend_to_circumcenter(P, W, lam)
        center = lam @ P[W]
        dist2 = ((P - center) ** 2).sum(1)
        radius2 = dist2[W].max()
        j = int(np.argmax(dist2))
        if dist2[j] <= radius2 * (1.0 + MEB_RTOL) + (tol * tol):
            return Ball(center, float(np.sqrt(radius2)), np.asarray(W), lam)
        W, lam = _enter(P, W, lam, j, tol)
    raise RuntimeError("minimum_enclosing_ball did not converge (degenerate input?)")


def meb_radius(P) -> float:
    r"""Radius of the minimum enclosing ball of :obj:`P` [n, d]
    (see :func:`minimum_enclosing_ball`)."""
    return minimum_enclosing_ball(P).radius


# ------------------------------------------------------------ convex hull


def affine_dimension(P) -> int:
    r"""Dimension of the affine hull of the points :obj:`P` [n, d]: the
    number of singular values of the centred points above :obj:`RANK_RTOL`
    times the largest one (:obj:`0` for a single point)."""
    P = as_points(P)
    s = np.linalg.svd(P - P.mean(0), compute_uv=False)
    if s.size == 0 or s[0] == 0.0:
        return 0
    return int((s > RANK_RTOL * s[0]).sum())


def hull_volume(P) -> float:
    r"""The :math:`d`-dimensional volume of the convex hull of :obj:`P` [n, d],
    computed exactly with Qhull (:class:`scipy.spatial.ConvexHull`).

    A degenerate point set (all points in a lower-dimensional affine subspace,
    e.g. coplanar points in :math:`\mathbb{R}^3`) has volume :obj:`0.0`; it is
    detected with :func:`affine_dimension` before Qhull is called, and a
    Qhull precision failure is treated the same way.

    Args:
        P (numpy.ndarray): Points of shape :obj:`[n, d]` with :obj:`n > d`
            and :obj:`d >= 2` (Qhull needs at least two dimensions).

    Returns:
        float: The hull volume.
    """
    P = as_points(P)
    n, d = P.shape
    if d < 2:
        raise ValueError(f"'P' must have d >= 2 coordinates for a Qhull volume (got d={d})")
    if n <= d:
        raise ValueError(f"'P' needs n > d points to span a {d}-dimensional hull "
                         f"(got n={n}, d={d})")
    if affine_dimension(P) < d:
        return 0.0
    try:
        return float(ConvexHull(P).volume)
    except QhullError:
        return 0.0


# --------------------------------------------------- distance-based targets


def mst_weight(P) -> float:
    r"""Total Euclidean edge length of the minimum spanning tree of the
    complete graph on :obj:`P` [n, d] (:obj:`0.0` for one point).

    Duplicate points are merged first (their connecting edge has length
    zero), because :func:`scipy.sparse.csgraph.minimum_spanning_tree` reads a
    zero entry as a missing edge.
    """
    P = np.unique(as_points(P), axis=0)
    if len(P) < 2:
        return 0.0
    return float(minimum_spanning_tree(squareform(pdist(P))).sum())


def diameter(P) -> float:
    r"""Largest Euclidean distance between two points of :obj:`P` [n, d]
    (:obj:`0.0` for one point)."""
    P = as_points(P)
    return float(pdist(P).max()) if len(P) > 1 else 0.0


CHAMFER_REDUCTIONS = ("mean", "sum")
r"""How :func:`chamfer_distance` reduces the nearest-neighbour distances of
each direction."""


def chamfer_distance(A, B, reduction: str = "mean") -> float:
    r"""Symmetric Chamfer distance between two point sets,

    .. math::
        \mathrm{CD}(A, B) = \frac{1}{|A|} \sum_{a \in A} \min_{b \in B}
        \|a - b\|^2 + \frac{1}{|B|} \sum_{b \in B} \min_{a \in A} \|a - b\|^2,

    or, with :obj:`reduction="sum"`, the same without the :math:`1 / |A|`,
    :math:`1 / |B|` (the summed form that grows with the set sizes).

    (Squared distances, both directions: the usual point-cloud definition.
    App. B.3 of the paper writes only the first term; the task generators use
    this symmetric form.)

    Args:
        A (numpy.ndarray): Points of shape :obj:`[n, d]`.
        B (numpy.ndarray): Points of shape :obj:`[m, d]`.
        reduction (str, optional): One of :obj:`CHAMFER_REDUCTIONS`. (default: :obj:`"mean"`)
    """
    A, B = as_points(A, "A"), as_points(B, "B")
    if A.shape[1] != B.shape[1]:
        raise ValueError(f"'A' and 'B' must have the same dimension "
                         f"(got {A.shape[1]} and {B.shape[1]})")
    if reduction not in CHAMFER_REDUCTIONS:
        raise ValueError(f"'reduction' must be one of {CHAMFER_REDUCTIONS} (got {reduction!r})")
    D = cdist(A, B, "sqeuclidean")
    reduce = np.mean if reduction == "mean" else np.sum
    return float(reduce(D.min(1)) + reduce(D.min(0)))


def knn_radius(P, k: int, reduce: str = "mean") -> float:
    r"""Mean (or median) over the points of :obj:`P` [n, d] of the Euclidean
    distance to their :obj:`k`-th nearest other point (the set's
    :math:`k`-NN radius).  Table 24 does not name the reduction (we use the
    mean); Table 32 uses the median.

    Args:
        P (numpy.ndarray): Points of shape :obj:`[n, d]`.
        k (int): Neighbour rank, :obj:`1 <= k <= n - 1`.
        reduce (str, optional): ``"mean"`` or ``"median"`` over the points.
            (default: ``"mean"``)
    """
    P = as_points(P)
    k = check_int("k", k, minimum=1, maximum=len(P) - 1,
                  reason=f"a point has only n - 1 = {len(P) - 1} other points")
    if reduce not in _REDUCTIONS:
        raise ValueError(f"'reduce' must be one of {sorted(_REDUCTIONS)} (got {reduce!r})")
    D = squareform(pdist(P))
    np.fill_diagonal(D, np.inf)
    return float(_REDUCTIONS[reduce](np.partition(D, k - 1, axis=1)[:, k - 1]))


_REDUCTIONS = {"mean": np.mean, "median": np.median}


def k_smallest_sum(P, k: int) -> float:
    r"""Sum of the :obj:`k` smallest Euclidean distances among the
    :math:`n(n-1)/2` unordered pairs of points of :obj:`P` [n, d].

    Args:
        P (numpy.ndarray): Points of shape :obj:`[n, d]`.
        k (int): Number of pairs, :obj:`1 <= k <= n (n - 1) / 2`.
    """
    P = as_points(P)
    pairs = len(P) * (len(P) - 1) // 2
    k = check_int("k", k, minimum=1, maximum=pairs,
                  reason=f"{len(P)} points have only {pairs} pairs")
    return float(np.partition(pdist(P), k - 1)[:k].sum())


def furthest_first_cost(P, k: int) -> float:
    r"""Cost of the greedy furthest-first traversal (Gonzalez's
    2-approximation of :math:`k`-center) with :obj:`k` centres.

    The first centre is the point furthest from the centroid (our choice: it
    makes the cost independent of the order of the points); each next centre
    is the point furthest from the centres chosen so far. The cost is the
    largest distance from a point to its nearest centre.

    Args:
        P (numpy.ndarray): Points of shape :obj:`[n, d]`.
        k (int): Number of centres, :obj:`1 <= k <= n`.
    """
    P = as_points(P)
    k = check_int("k", k, minimum=1, maximum=len(P),
                  reason=f"at most one centre per point (n={len(P)})")
    first = int(np.argmax(((P - P.mean(0)) ** 2).sum(1)))
    nearest = np.sqrt(((P - P[first]) ** 2).sum(1))
    for _ in range(k - 1):
        nearest = np.minimum(nearest, np.sqrt(((P - P[np.argmax(nearest)]) ** 2).sum(1)))
    return float(nearest.max())
