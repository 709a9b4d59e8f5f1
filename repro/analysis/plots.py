r"""PNG panels of the analyses: Figure 3 (operators of two contexts),
Figure 4 (generator basis and effective rank) and Figure 2 right (TDOF vs
MZAttn's MSE reduction)."""
from collections.abc import Sequence

import numpy as np

from .output import pyplot, save_figure


def _heatmap(ax, matrix, title: str, cmap: str = "RdBu_r", symmetric: bool = True) -> None:
    matrix = np.asarray(matrix)
    limit = float(np.abs(matrix).max()) or 1.0
    image = ax.imshow(matrix, cmap=cmap, vmin=-limit if symmetric else None,
                      vmax=limit if symmetric else None)
    ax.set_title(title, fontsize=9)
    ax.set_xticks([])
    ax.set_yticks([])
    ax.figure.colorbar(image, ax=ax, fraction=0.046)


def figure3(probe: dict, path: str) -> str:
    r"""Figure 3: :math:`M(\mu_A)`, :math:`M(\mu_B)`, their difference and
    the gates of both contexts at the probed head."""
    plt = pyplot()
    fig, axes = plt.subplots(1, 4, figsize=(17, 3.8), constrained_layout=True)
    a, b = np.asarray(probe["operator_a"]), np.asarray(probe["operator_b"])
    head = probe["head"]
    _heatmap(axes[0], a, f"M(mu_A), head {head}")
    _heatmap(axes[1], b, f"M(mu_B), head {head}")
    change = probe["relative_change"][head]
    _heatmap(axes[2], a - b, f"M(mu_A) - M(mu_B) ({100 * change:.1f}% of ||M_c||_F)")
    L = len(probe["gates_a"])
    width = 0.4
    axes[3].bar(np.arange(L) - width / 2, probe["gates_a"], width, label="context A")
    axes[3].bar(np.arange(L) + width / 2, probe["gates_b"], width, label="context B")
    axes[3].axhline(0.0, color="black", linewidth=0.8)
    axes[3].set_title(f"gates gamma_l, {probe['sign_flips'][head]} of {L} flip sign",
                      fontsize=9)
    axes[3].set_xlabel("generator l")
    axes[3].legend(fontsize=8)
    return save_figure(fig, path)


def figure4(probe: dict, sweep: Sequence[tuple[int, float]], path: str,
            tdof: int | None = None) -> str:
    r"""Figure 4: generator cosine matrix, Frobenius norms, gate histogram
    and the soft effective rank against the generator budget :math:`L`
    (:obj:`sweep` of :obj:`(L, rank)` pairs; :obj:`tdof` draws the
    target's TDOF)."""
    plt = pyplot()
    fig, axes = plt.subplots(1, 4, figsize=(17, 3.8), constrained_layout=True)
    _heatmap(axes[0], probe["generator_cosines"], "cosine(M_l, M_l'), head "
             f"{probe['head']}")
    norms = np.asarray(probe["generator_norms"])  # [H, L]
    for h, row in enumerate(norms):
        axes[1].plot(np.arange(len(row)), row, marker="o", label=f"head {h}")
    axes[1].set_ylim(bottom=0.0)
    axes[1].set_title("||M_l||_F", fontsize=9)
    axes[1].set_xlabel("generator l")
    axes[1].legend(fontsize=7)
    axes[2].hist(probe["gate_values"], bins=40, range=(-1, 1), color="tab:green")
    axes[2].set_title(f"gates over {probe['num_contexts']} contexts "
                      f"({100 * probe['gate_activity']:.1f}% active)", fontsize=9)
    if sweep:
        budgets, ranks = zip(*sorted(sweep), strict=True)
        axes[3].plot(budgets, ranks, marker="o", label="soft effective rank")
        axes[3].plot(budgets, budgets, color="gray", linestyle=":", label="budget L")
        if tdof is not None:
            axes[3].axhline(tdof, color="black", linestyle="--", label=f"TDOF = {tdof}")
        axes[3].set_xscale("log", base=2)
        axes[3].legend(fontsize=7)
    axes[3].set_xlabel("generator budget L")
    axes[3].set_title("effective rank of {M(mu_i) - mean}", fontsize=9)
    return save_figure(fig, path)


def figure2_right(rows: Sequence[dict], rho: float | None, path: str) -> str:
    r"""Figure 2 (right): MZAttn's MSE reduction against the estimated TDOF
    of every setting that ran (exact TDOFs filled, estimates hollow)."""
    plt = pyplot()
    fig, ax = plt.subplots(figsize=(5.5, 4))
    for exact, marker in ((True, "o"), (False, "s")):
        shown = [r for r in rows if r["reduction_pct"] is not None and r["exact"] == exact]
        ax.scatter([r["tdof"] for r in shown], [r["reduction_pct"] for r in shown],
                   marker=marker, facecolors="tab:blue" if exact else "none",
                   edgecolors="tab:blue", label="exact TDOF" if exact else "estimated TDOF")
    ax.axhline(0.0, color="black", linewidth=0.8)
    ran = sum(r["reduction_pct"] is not None for r in rows)
    if ran:
        ax.set_xscale("log")
    ax.set_xlabel("estimated TDOF")
    ax.set_ylabel("MZAttn MSE reduction vs best baseline (%)")
    title = f"Figure 2 (right): {ran} of {len(rows)} settings"
    ax.set_title(title + ("" if rho is None else f", Spearman {rho:.2f}"), fontsize=9)
    ax.legend(fontsize=8)
    return save_figure(fig, path)


def reliability_plot(curves: dict[str, Sequence], path: str, title: str) -> str:
    r"""Reliability diagram: observed frequency of :math:`F(y) \le p`
    against the nominal level :math:`p`, one curve of :obj:`(p, observed)`
    points per label of :obj:`curves`."""
    plt = pyplot()
    fig, ax = plt.subplots(figsize=(4.5, 4.5))
    ax.plot([0, 1], [0, 1], color="black", linewidth=0.8, linestyle="--", label="ideal")
    for label, points in curves.items():
        ax.plot(*zip(*points, strict=True), marker="o", markersize=3, label=label)
    ax.set_xlabel("nominal quantile level p")
    ax.set_ylabel("observed frequency of F(y) <= p")
    ax.set_title(title, fontsize=9)
    ax.legend(fontsize=8)
    return save_figure(fig, path)
