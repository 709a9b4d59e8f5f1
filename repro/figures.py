r"""Figures of the paper redrawn from our results (matplotlib, PNG)."""
import os
import os.path as osp
import tempfile

from .results import Results


def _pyplot():
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    return plt


def _save(fig, path: str) -> None:
    fd, tmp = tempfile.mkstemp(dir=osp.dirname(path), prefix=".tmp-", suffix=".png")
    os.close(fd)
    fig.savefig(tmp, dpi=120, bbox_inches="tight")
    os.chmod(tmp, 0o644)
    os.replace(tmp, path)


def _bars(ax, results: Results, column: str) -> None:
    rows = [row.label for row in results.spec.rows]
    means = [results.mean(row, column) for row in rows]
    stds = [results.std(row, column) for row in rows]
    shown = [(r, m, s) for r, m, s in zip(rows, means, stds, strict=True) if m is not None]
    ax.barh([r for r, _, _ in shown], [m for _, m, _ in shown],
            xerr=[s for _, _, s in shown], color="tab:blue")
    ax.invert_yaxis()
    ax.axvline(0.0, color="black", linewidth=0.8)
    ax.set_xlabel(f"test {results.spec.metric.upper()} ({column})")


def _lines(ax, results: Results, columns: list[str], xlabel: str) -> None:
    for row in results.spec.rows:
        points = [(i, results.mean(row.label, c)) for i, c in enumerate(columns)]
        points = [(i, m) for i, m in points if m is not None]
        if points:
            ax.plot(*zip(*points, strict=True), marker="o", label=row.label)
    ax.set_xticks(range(len(columns)), columns)
    ax.set_xlabel(xlabel)
    ax.set_ylabel(f"test {results.spec.metric.upper()}")
    ax.legend(fontsize=7)


def bars_and_lines(column: str, title_bars: str, title_lines: str, xlabel: str):
    r"""A figure function (for :obj:`TableSpec.figure`) with a bar chart of
    every row at :obj:`column` (Figure 1, right) beside the metric across
    the table's columns (Figure 2, left)."""
    def draw(results: Results, path: str) -> None:
        plt = _pyplot()
        fig, (left, right) = plt.subplots(1, 2, figsize=(11, 4))
        _bars(left, results, column)
        left.set_title(title_bars)
        _lines(right, results, [c.label for c in results.spec.columns], xlabel)
        right.set_title(title_lines)
        _save(fig, path)
        plt.close(fig)
    return draw
