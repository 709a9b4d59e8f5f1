r"""Atomic writers and number formatting shared by the analysis reports."""
import os
import os.path as osp
import statistics
import tempfile
from collections.abc import Callable, Sequence
from typing import Any


def write_text(text: str, path: str) -> str:
    r"""Writes :obj:`text` to :obj:`path` through a temporary file and
    :func:`os.replace`; returns :obj:`path`."""
    os.makedirs(osp.dirname(path) or ".", exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=osp.dirname(path) or ".", prefix=".tmp-")
    with os.fdopen(fd, "w") as f:
        f.write(text)
    os.chmod(tmp, 0o644)
    os.replace(tmp, path)
    return path


def pyplot():
    r""":mod:`matplotlib.pyplot` on the non-interactive Agg backend."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    return plt


def save_figure(fig, path: str) -> str:
    r"""Saves a matplotlib figure as a PNG atomically and closes it."""
    os.makedirs(osp.dirname(path) or ".", exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=osp.dirname(path) or ".", prefix=".tmp-", suffix=".png")
    os.close(fd)
    fig.savefig(tmp, dpi=120, bbox_inches="tight")
    pyplot().close(fig)
    os.chmod(tmp, 0o644)
    os.replace(tmp, path)
    return path


def mean_std(records: Sequence[dict[str, Any]],
             get: Callable[[dict[str, Any]], float]) -> tuple[float, float]:
    r"""Mean and sample std (0 for one record) of :obj:`get(record)`."""
    values = [float(get(record)) for record in records]
    if not values:
        raise ValueError("'records' must not be empty")
    return statistics.fmean(values), statistics.stdev(values) if len(values) > 1 else 0.0


def fmt(mean: float, std: float, digits: int = 3) -> str:
    r"""``mean ± std`` (the std left out when it is zero)."""
    text = f"{mean:.{digits}g}"
    return text if std == 0 else f"{text} ± {std:.2g}"


def markdown_table(header: Sequence[str], rows: Sequence[Sequence[str]]) -> list[str]:
    r"""Lines of a markdown table."""
    lines = ["| " + " | ".join(header) + " |", "|" + " --- |" * len(header)]
    return lines + ["| " + " | ".join(row) + " |" for row in rows]
