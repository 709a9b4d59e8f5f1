r"""Argument guards shared by the synthetic targets and task configurations.

Every guard raises a :class:`ValueError` that names the offending parameter
and says why its value is impossible.
"""
import numpy as np


def check_int(name: str, value: int, *, minimum: int | None = None,
              maximum: int | None = None, reason: str = "") -> int:
    r"""Returns :obj:`value` as an :obj:`int` after checking its range."""
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        raise ValueError(f"'{name}' must be an integer (got {value!r})")
    why = f" ({reason})" if reason else ""
    if minimum is not None and value < minimum:
        raise ValueError(f"'{name}' must be >= {minimum}{why} (got {value})")
    if maximum is not None and value > maximum:
        raise ValueError(f"'{name}' must be <= {maximum}{why} (got {value})")
    return int(value)


def check_float(name: str, value: float, *, minimum: float | None = None,
                positive: bool = False) -> float:
    r"""Returns :obj:`value` as a finite :obj:`float` after checking its
    range."""
    if isinstance(value, bool) or not np.isfinite(value):
        raise ValueError(f"'{name}' must be a finite number (got {value!r})")
    if positive and value <= 0:
        raise ValueError(f"'{name}' must be > 0 (got {value})")
    if minimum is not None and value < minimum:
        raise ValueError(f"'{name}' must be >= {minimum} (got {value})")
    return float(value)


def check_range(low_name: str, low: float, high_name: str, high: float) -> None:
    r"""Checks that the interval :obj:`[low, high]` is not empty."""
    if low > high:
        raise ValueError(f"'{low_name}' ({low}) must be <= '{high_name}' ({high}): "
                         f"the range is empty")


def as_points(P, name: str = "P", *, min_points: int = 1) -> np.ndarray:
    r"""Returns :obj:`P` as a finite float64 array of shape :obj:`[n, d]`
    with :obj:`n >= min_points` and :obj:`d >= 1`."""
    P = np.asarray(P, dtype=np.float64)
    if P.ndim != 2:
        raise ValueError(f"'{name}' must have shape [n, d] (got shape {P.shape})")
    if P.shape[1] < 1:
        raise ValueError(f"'{name}' must have at least one coordinate (d >= 1)")
    if P.shape[0] < min_points:
        raise ValueError(f"'{name}' must hold at least {min_points} point(s) "
                         f"(got {P.shape[0]})")
    if not np.isfinite(P).all():
        raise ValueError(f"'{name}' contains NaN or infinite coordinates")
    return P
