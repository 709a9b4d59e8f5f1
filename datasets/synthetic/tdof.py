r"""Targets of controlled transformation degrees of freedom (TDOF): the
quadratic-TDOF target of Eq. 4 (Sec. 3.2, Tables 1, 7, 12), its sequence
version (Table 13), and the few-shot meta-regression operators of
App. D.5.1 (Table 27).
"""
import numpy as np

from ._validate import check_int


def frobenius_orthogonal_basis(rng: np.random.Generator, d: int, L: int) -> np.ndarray:
    r"""Draws :math:`L + 1` matrices :math:`M_0, \dots, M_L \in
    \mathbb{R}^{d \times d}` that are mutually orthogonal in the Frobenius
    inner product, each with :math:`\|M_l\|_F = \sqrt{d}` (so that
    :math:`\|M_l \mu\| \approx \|\mu\|` for a random :math:`\mu`).

    They are the Gram-Schmidt (QR) orthonormalisation of :math:`L + 1`
    Gaussian matrices, scaled by :math:`\sqrt{d}`.

    Args:
        rng (numpy.random.Generator): The random source.
        d (int): Matrix size.
        L (int): Number of generator matrices (besides :math:`M_0`),
            :obj:`L + 1 <= d * d`.

    Returns:
        numpy.ndarray: Matrices of shape :obj:`[L + 1, d, d]`.
    """
    d = check_int("d", d, minimum=1)
    L = check_int("L", L, minimum=0, maximum=d * d - 1,
                  reason=f"at most d*d = {d * d} Frobenius-orthogonal {d}x{d} matrices")
    Q, _ = np.linalg.qr(rng.standard_normal((d * d, L + 1)))
    return np.sqrt(d) * Q.T.reshape(L + 1, d, d)


def quadratic_tdof(mu, M, w) -> float:
    r"""The quadratic-TDOF target of Eq. 4,

    .. math::
        f = w^\top \Big(M_0 + \sum_{l=1}^{L} \mu_l M_l\Big) \mu,

    whose TDOF is :math:`L` when the :math:`M_l` are Frobenius-orthogonal.

    Args:
        mu (numpy.ndarray): Set summary :math:`\mu` of shape :obj:`[d]`
            (the set mean for Eq. 4), :obj:`d >= L`.
        M (numpy.ndarray): Matrices :math:`M_0, \dots, M_L` of shape
            :obj:`[L + 1, d, d]`.
        w (numpy.ndarray): Read-out vector of shape :obj:`[d]`.
    """
    mu, M, w = np.asarray(mu, float), np.asarray(M, float), np.asarray(w, float)
    L = M.shape[0] - 1
    if mu.shape[0] < L:
        raise ValueError(f"'mu' needs at least L={L} coordinates (got {mu.shape[0]})")
    operator = M[0] + np.tensordot(mu[:L], M[1:], axes=1)  # [d, d]
    return float(w @ operator @ mu)


def position_weights(n: int) -> np.ndarray:
    r"""Positional weights :math:`\omega_i = 2 i / (n (n + 1))`,
    :math:`i = 1, \dots, n`, of the sequence version of Eq. 4: linearly
    increasing, summing to one, so the summary :math:`\sum_i \omega_i x_i`
    depends on the order of the tokens (our choice; Table 13 only says the
    model uses positional encoding)."""
    n = check_int("n", n, minimum=1)
    return np.arange(1, n + 1) * (2.0 / (n * (n + 1)))


def meta_regression_basis(rng: np.random.Generator, L: int, d_in: int,
                          d_out: int) -> np.ndarray:
    r"""The shared random basis :math:`M_1, \dots, M_L \in
    \mathbb{R}^{d_{out} \times d_{in}}` of App. D.5.1, entries
    :math:`\mathcal{N}(0, 1/d_{in})` (our scale: with :math:`c \sim
    \mathcal{N}(0, I_L)` and :math:`x \sim \mathcal{N}(0, I)` every output
    coordinate has variance :math:`L`, matching the paper's mean-predictor
    MSE of about 30 at :math:`L = 32`).

    Returns:
        numpy.ndarray: Basis of shape :obj:`[L, d_out, d_in]`.
    """
    return rng.standard_normal((L, d_out, d_in)) / np.sqrt(d_in)


def task_operator(c, basis) -> np.ndarray:
    r"""The task operator :math:`A_\tau = \sum_l c_\tau[l] M_l` of shape
    :obj:`[d_out, d_in]` for coefficients :obj:`c` [L] and :obj:`basis`
    [L, d_out, d_in]."""
    return np.tensordot(np.asarray(c, float), np.asarray(basis, float), axes=1)
