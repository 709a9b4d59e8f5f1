r"""Random point-cloud samplers shared by the synthetic task generators.

Every sampler takes a :class:`numpy.random.Generator` and draws everything it
needs from it, so a generator seeded once reproduces the same sets.
"""
import numpy as np


def set_size(rng: np.random.Generator, n_min: int, n_max: int) -> int:
    r"""Draws a set size :math:`n \sim \mathcal{U}\{n_{min}, \dots, n_{max}\}`
    (both ends included)."""
    return int(rng.integers(n_min, n_max + 1))


def gaussian_mixture(rng: np.random.Generator, n: int, d: int, *,
                     max_clusters: int = 3, center_scale: float = 3.0,
                     spread_range: tuple[float, float] = (0.5, 1.5)) -> np.ndarray:
    r"""Draws :obj:`n` points from a random mixture of isotropic Gaussians.

    The number of clusters is :math:`k \sim \mathcal{U}\{1, \dots,
    \text{max\_clusters}\}`, the centres are :math:`\mathcal{N}(0,
    \text{center\_scale}^2 I_d)`, every cluster has its own spread
    :math:`\sigma_c \sim \mathcal{U}(\text{spread\_range})`, and every point
    picks its cluster uniformly at random. This is the point distribution of
    the paper's MEB, MST (Task G), hull and SGSP tasks ("1-3 random clusters
    with varying centres and spreads"; the paper does not give the scales,
    these are our choice).

    Args:
        rng (numpy.random.Generator): The random source.
        n (int): Number of points.
        d (int): Dimension.
        max_clusters (int, optional): Largest number of clusters. (default: :obj:`3`)
        center_scale (float, optional): Standard deviation of the cluster
            centres. (default: :obj:`3.0`)
        spread_range (tuple[float, float], optional): Range of the cluster
            standard deviations. (default: :obj:`(0.5, 1.5)`)

    Returns:
        numpy.ndarray: Points of shape :obj:`[n, d]`.
    """
    k = int(rng.integers(1, max_clusters + 1))
    centers = center_scale * rng.standard_normal((k, d))
    spreads = rng.uniform(*spread_range, size=k)
    label = rng.integers(0, k, size=n)
    return centers[label] + spreads[label, None] * rng.standard_normal((n, d))


def random_orthogonal(rng: np.random.Generator, d: int) -> np.ndarray:
    r"""Draws a Haar-distributed orthogonal matrix of shape :obj:`[d, d]`
    (QR of a Gaussian matrix with the sign correction of Mezzadri, 2007)."""
    Q, R = np.linalg.qr(rng.standard_normal((d, d)))
    return Q * np.sign(np.diag(R))


def anisotropic_gaussian(rng: np.random.Generator, n: int, d: int, *,
                         log_scale: float = 1.0) -> np.ndarray:
    r"""Draws :obj:`n` points :math:`x_i = m + Q\,\mathrm{diag}(s)\,z_i` from a
    Gaussian with a random mean and a random covariance.

    :math:`m \sim \mathcal{N}(0, I_d)`, :math:`Q` is a Haar-random rotation,
    :math:`\log s_j \sim \mathcal{U}(-\text{log\_scale}, \text{log\_scale})`
    and :math:`z_i \sim \mathcal{N}(0, I_d)`, so the covariance
    :math:`Q\,\mathrm{diag}(s^2)\,Q^\top` has a random orientation and a
    random spectrum. Used by the statistical targets of Table 7.

    Args:
        rng (numpy.random.Generator): The random source.
        n (int): Number of points.
        d (int): Dimension.
        log_scale (float, optional): Half-width of the range of the log
            standard deviations. (default: :obj:`1.0`)

    Returns:
        numpy.ndarray: Points of shape :obj:`[n, d]`.
    """
    mean = rng.standard_normal(d)
    factor = random_orthogonal(rng, d) * np.exp(rng.uniform(-log_scale, log_scale, d))
    return mean + rng.standard_normal((n, d)) @ factor.T
