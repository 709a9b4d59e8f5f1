r"""Rotations composed of Givens rotations in all :math:`d(d-1)/2` planes
(Task F, App. A.2 and D.4.3), applied without forming the :math:`d \times d`
matrix, and the post-alignment Chamfer target.

The planes are visited in the round-robin (circle-method) tournament order:
:math:`d - 1` rounds (:math:`d` if :math:`d` is odd) of disjoint planes, so
every plane appears exactly once and the rotations of one round commute. The
rotation is :math:`R = G_1 G_2 \cdots G_{d(d-1)/2}` in :func:`givens_planes`
order, where :math:`G(i, j, \theta)` is the identity except for
:math:`G_{ii} = G_{jj} = \cos\theta`, :math:`G_{ij} = -\sin\theta`,
:math:`G_{ji} = \sin\theta`.
"""
import numpy as np

from ._validate import as_points, check_int
from .geometry import chamfer_distance


def givens_rounds(d: int) -> list[np.ndarray]:
    r"""The planes :math:`(i, j)`, :math:`i < j`, of :math:`\mathbb{R}^d`
    grouped into rounds of disjoint planes (round-robin schedule).

    Args:
        d (int): Dimension, :obj:`d >= 2`.

    Returns:
        list[numpy.ndarray]: One integer array of shape :obj:`[d // 2, 2]`
        (or fewer rows) per round.
    """
    d = check_int("d", d, minimum=2, reason="a rotation plane needs two axes")
    m = d + d % 2  # pad odd dimensions with a dummy axis m - 1 == d
    ring = np.arange(1, m)
    rounds = []
    for r in range(m - 1):
        order = np.concatenate([[0], np.roll(ring, r)])
        pairs = np.sort(np.stack([order[: m // 2], order[::-1][: m // 2]], 1), 1)
        rounds.append(pairs[pairs[:, 1] < d])
    return rounds


def givens_planes(d: int) -> np.ndarray:
    r"""All :math:`d(d-1)/2` planes in application order, shape
    :obj:`[d (d - 1) / 2, 2]` (the angles of :func:`apply_rotation` follow
    this order)."""
    return np.concatenate(givens_rounds(d))


def apply_rotation(X, angles, *, transpose: bool = False) -> np.ndarray:
    r"""Rotates the rows of :obj:`X`: returns :math:`X R^\top` (each row
    :math:`x \mapsto R x`), or :math:`X R` (each row :math:`x \mapsto
    R^\top x`) if :obj:`transpose` is :obj:`True`.

    Works on a batch too: :obj:`X` of shape :obj:`[..., n, d]` with
    :obj:`angles` of shape :obj:`[..., d (d - 1) / 2]` rotates every set
    with its own angles. The cost is :math:`O(n d^2)` per set.

    Args:
        X (numpy.ndarray): Points of shape :obj:`[..., n, d]`.
        angles (numpy.ndarray): Givens angles of shape
            :obj:`[..., d (d - 1) / 2]` in :func:`givens_planes` order.
        transpose (bool, optional): Apply :math:`R^\top = R^{-1}` instead.
            (default: :obj:`False`)
    """
    X = np.asarray(X, dtype=np.float64)
    angles = np.asarray(angles, dtype=np.float64)
    d = X.shape[-1]
    if angles.shape[-1] != d * (d - 1) // 2:
        raise ValueError(f"'angles' must have d (d - 1) / 2 = {d * (d - 1) // 2} "
                         f"entries in its last axis (got {angles.shape[-1]})")
    rounds = givens_rounds(d)
    offsets = np.cumsum([0] + [len(r) for r in rounds])
    Xt = np.ascontiguousarray(np.moveaxis(X, -1, 0))  # [d, ..., n]: rows gather fast
    At = np.moveaxis(angles, -1, 0)[..., None]  # [d (d - 1) / 2, ..., 1]
    # X R^T = ((X G_K^T) ... ) G_1^T: the last plane acts first on the rows.
    steps = range(len(rounds)) if transpose else reversed(range(len(rounds)))
    for r in steps:
        i, j = rounds[r][:, 0], rounds[r][:, 1]
        theta = At[offsets[r]:offsets[r + 1]]  # [|round|, ..., 1]
        s = -np.sin(theta) if transpose else np.sin(theta)
        c = np.cos(theta)
        xi, xj = Xt[i], Xt[j]
        Xt[i], Xt[j] = c * xi - s * xj, s * xi + c * xj
    return np.moveaxis(Xt, 0, -1)


def rotation_matrix(angles, d: int) -> np.ndarray:
    r"""The rotation :math:`R` of shape :obj:`[d, d]` for the Givens
    :obj:`angles` (in :func:`givens_planes` order)."""
    return apply_rotation(np.eye(d), angles).T


def post_alignment_chamfer(A, B, angles) -> float:
    r"""Chamfer distance between :obj:`A` and :obj:`B` after undoing the
    rotation: :math:`\mathrm{CD}(A, B R)`, i.e. every point of
    :math:`B = A R^\top + \varepsilon` is mapped back by :math:`R^\top`
    (Task F target; :func:`~mzattn.datasets.synthetic.geometry.chamfer_distance`).

    Our reading of "post-alignment Chamfer distance": the alignment is the
    true rotation of the generating process, so a noise-free pair has target
    exactly zero and the target measures only the residual noise.

    Args:
        A (numpy.ndarray): Points of shape :obj:`[n, d]`.
        B (numpy.ndarray): Points of shape :obj:`[m, d]`.
        angles (numpy.ndarray): Givens angles of :math:`R`, shape
            :obj:`[d (d - 1) / 2]`.
    """
    B = as_points(B, "B")
    return chamfer_distance(A, apply_rotation(B, angles, transpose=True))
