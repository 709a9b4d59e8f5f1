r"""Figures of the paper redrawn from our results (matplotlib, PNG)."""
import os
import os.path as osp
import tempfile

from .paper_values import paper_entry, paper_scale, paper_table_of
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


def _paper_mean(results: Results, row: str, column: str) -> float | None:
    # The paper's value in our units (a percentage as a fraction).
    value = paper_entry(results.spec, paper_table_of(results.spec), row, column)
    return None if value is None else value.mean / paper_scale(value)


def _metric_label(results: Results, columns: list[str]) -> str:
    metrics = dict.fromkeys(results.spec.metric_of(column) for column in columns)
    return "/".join(metric.upper() for metric in metrics)


def _bars(ax, results: Results, column: str) -> None:
    rows = [row.label for row in results.spec.rows]
    shown = [(r, results.mean(r, column), results.std(r, column)) for r in rows]
    shown = [(r, m, s) for r, m, s in shown if m is not None]
    labels = [r for r, _, _ in shown]
    ax.barh(labels, [m for _, m, _ in shown], xerr=[s for _, _, s in shown],
            color="tab:blue", label="ours")
    paper = [(r, _paper_mean(results, r, column)) for r in labels]
    paper = [(r, m) for r, m in paper if m is not None]
    if paper:
        ax.scatter([m for _, m in paper], [r for r, _ in paper], marker="x", color="black",
                   zorder=3, label="paper")
        ax.legend(fontsize=7)
    ax.invert_yaxis()
    ax.axvline(0.0, color="black", linewidth=0.8)
    ax.set_xlabel(f"test {_metric_label(results, [column])} ({column})")


def _lines(ax, results: Results, columns: list[str], xlabel: str) -> None:
    for row in results.spec.rows:
        points = [(i, results.mean(row.label, c)) for i, c in enumerate(columns)]
        points = [(i, m) for i, m in points if m is not None]
        if points:
            line, = ax.plot(*zip(*points, strict=True), marker="o", label=row.label)
            paper = [(i, _paper_mean(results, row.label, c)) for i, c in enumerate(columns)]
            paper = [(i, m) for i, m in paper if m is not None]
            if paper:
                ax.plot(*zip(*paper, strict=True), linestyle="--", marker="x",
                        color=line.get_color(), alpha=0.6)
    ax.set_xticks(range(len(columns)), columns)
    ax.set_xlabel(xlabel)
    ax.set_ylabel(f"test {_metric_label(results, columns)} (dashed, x: paper)")
    ax.legend(fontsize=7)


def bars_and_lines(column: str, title_bars: str, title_lines: str, xlabel: str):
    r"""A figure function (for :obj:`TableSpec.figure`) with a bar chart of
    every row at :obj:`column` (Figure 1, right) beside the metric across
    the table's columns that ran (Figure 2, left); the bar chart alone when
    fewer than two columns ran."""
    def draw(results: Results, path: str) -> None:
        plt = _pyplot()
        ran = _columns_that_ran(results)
        fig, axes = plt.subplots(1, 2 if len(ran) > 1 else 1,
                                 figsize=(11 if len(ran) > 1 else 6, 4), squeeze=False)
        _bars(axes[0, 0], results, column)
        axes[0, 0].set_title(title_bars)
        if len(ran) > 1:
            _lines(axes[0, 1], results, ran, xlabel)
            axes[0, 1].set_title(title_lines)
        _save(fig, path)
        plt.close(fig)
    return draw


def _columns_that_ran(results: Results) -> list[str]:
    return [c.label for c in results.spec.columns
            if any(results.mean(r.label, c.label) is not None for r in results.spec.rows)]


def learning_curves(results: Results, path: str) -> bool:
    r"""Draws every finished cell's validation metric per epoch (one panel
    per column, one line per row and seed) to :obj:`path`. Returns
    :obj:`False`, drawing nothing, when no record has a history."""
    spec = results.spec
    columns = [c.label for c in spec.columns
               if any(r.get("history") for row in spec.rows
                      for r in results.records(row.label, c.label))]
    if not columns:
        return False
    plt = _pyplot()
    ncols = min(4, len(columns))
    nrows = -(-len(columns) // ncols)
    fig, axes = plt.subplots(nrows, ncols, figsize=(4 * ncols, 3 * nrows), squeeze=False)
    colors = dict(zip([row.label for row in spec.rows], plt.cm.tab10.colors * 3, strict=False))
    for ax, column in zip(axes.flat, columns, strict=False):
        for row in spec.rows:
            for record in results.records(row.label, column):
                history = [h for h in record.get("history") or []
                           if h.get("val_metric") is not None]
                ax.plot([h["epoch"] for h in history], [h["val_metric"] for h in history],
                        color=colors[row.label], label=row.label, lw=1)
        if spec.metric_of(column) == "r2":  # the first epochs' large negative R² hides the rest
            ax.set_ylim(max(ax.get_ylim()[0], -1.0), 1.02)
        ax.set_title(column, fontsize=9)
        ax.set_xlabel("epoch")
        ax.set_ylabel(f"validation {spec.metric_of(column)}")
    for ax in list(axes.flat)[len(columns):]:
        ax.axis("off")
    handles, labels = axes.flat[0].get_legend_handles_labels()
    unique = dict(zip(labels, handles, strict=False))
    fig.legend(unique.values(), unique.keys(), loc="lower center", ncol=min(4, len(unique)),
               fontsize=8, bbox_to_anchor=(0.5, -0.08 - 0.05 * (len(unique) // 4)))
    fig.tight_layout()
    _save(fig, path)
    plt.close(fig)
    return True
