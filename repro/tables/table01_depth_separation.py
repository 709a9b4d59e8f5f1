r"""Table 1: depth separation on the quadratic-TDOF target (Eq. 4): a
1-layer MZAttn against a 4-layer Set Transformer for
:math:`L \in \{4, 8, 16, 24, 32\}` (plus EGNN, Sec. 3.2).

.. code-block:: bash

    python repro/tables/table01_depth_separation.py --profile quick
"""
import dataclasses

from mzattn.repro.core.spec import QUICK, SMOKE, Claim, Column, Row, TableSpec, full
from mzattn.repro.engine.runner import main as run_main
from mzattn.repro.report.claims import compare, ratio, verdict

LS = (4, 8, 16, 24, 32)
ROWS = (
    Row("MZAttn-1L", "mz-1l"),
    Row("ST-4L", "st-4l"),
    Row("EGNN", "egnn"),
)
COLUMNS = tuple(Column(f"L={L}", "quadratic_tdof", {"L": L}) for L in LS)
PAPER_COLUMNS = tuple(column.label for column in COLUMNS)


def _knob(L: int, label: str, overrides: dict, why: str) -> Column:
    return Column(f"L={L}, {label}", "quadratic_tdof", {"L": L, **overrides}, reading=why,
                  variant_of=f"L={L}")


# Choices the paper never states, on which our verdicts may lean (issue 35, item 4); the
# `knobs` campaign runs them (mzattn.repro.campaign), and the profiles leave them out unless
# named (--columns). d = 64 is the other reading of d that the paper's numbers leave standing
# (`mzattn-repro readings quadratic_tdof`, docs/readings.md), so the claims that its columns
# can decide carry a verdict under it too (the last three claims; issue 35, item 3): L = 4 is
# run for the drop from L = 4 to L = 32. No claim reads the 5K-train columns.
D64_LS = (16, 32, 4)
KNOBS = (
    *(_knob(L, "d=64", {"d": 64}, "d = 64 >= 2L: the quadratic form's rank keeps growing with L "
            "(ours, d = 32, stops at L >= 16)") for L in D64_LS),
    *(_knob(L, "5K train", {"num_train": 5000}, "5K training sets (ours: 10K; the paper gives "
            "none): does ST-4L's drop depend on the data size?") for L in (4, 32)),
)

PROFILES = {
    "smoke": dataclasses.replace(SMOKE, columns=PAPER_COLUMNS),
    "quick": dataclasses.replace(QUICK, max_epochs=20, patience=6, batch_size=16,
                                 columns=("L=4", "L=32")),
    "full": full(columns=PAPER_COLUMNS),
}


def _paper_cell(row: str, column: str) -> tuple[str, str] | None:
    if row == "EGNN":
        return None
    return column.removeprefix("L="), f"{row} R2"


def _holds(labels):
    return lambda r: verdict(*(compare(r, ("MZAttn-1L", label), ">=", 0.9) for label in labels))


def _gap(labels):
    return lambda r: verdict(*(ratio(r, ("ST-4L", label), ("MZAttn-1L", label), 6.0)
                               for label in labels))


def _drop(first: str, last: str):
    def check(results):
        low, high = results.mean("ST-4L", first), results.mean("ST-4L", last)
        if low is None or high is None:
            return None, f"ST-4L {first} / {last} not run"
        return low - high >= 0.1, f"ST-4L R² drop {first} -> {last} = {low - high:.3g} >= 0.1"
    return lambda r: verdict(check(r))


D64 = tuple(f"L={L}, d=64" for L in sorted(D64_LS))
UNDER_D64 = "Under d = 64 >= 2L (the other reading of d; at L = 4, 16, 32, the L run there): "

CLAIMS = (
    Claim("A single MZAttn layer holds R² >= 0.90 at every L", _holds(PAPER_COLUMNS)),
    Claim("The 4-layer Set Transformer degrades with L (paper: 0.97 at L=4 to 0.40 at L=32; "
          "we test a drop of at least 0.1)",
          _drop("L=4", "L=32")),
    Claim("A 6-15x residual-MSE gap: MSE(ST-4L) / MSE(MZAttn-1L) >= 6 at every L",
          _gap(PAPER_COLUMNS)),
    Claim("EGNN collapses to R² ≈ 0 for every L (we test |R²| <= 0.05)",
          lambda r: verdict(*(cond for c in COLUMNS
                              for cond in (compare(r, ("EGNN", c.label), "<=", 0.05),
                                           compare(r, ("EGNN", c.label), ">=", -0.05))))),
    # the same claims under the d = 64 reading, at the L it runs (EGNN is not run there)
    Claim(UNDER_D64 + "a single MZAttn layer holds R² >= 0.90", _holds(D64)),
    Claim(UNDER_D64 + "the 4-layer Set Transformer degrades with L (a drop of at least 0.1 "
          "from L=4 to L=32)", _drop(D64[0], D64[-1])),
    Claim(UNDER_D64 + "MSE(ST-4L) / MSE(MZAttn-1L) >= 6", _gap(D64)),
)


SPEC = TableSpec(
    key="table1",
    title="Depth separation on the quadratic-TDOF target: MZAttn-1L vs. ST-4L (R²)",
    rows=ROWS, columns=COLUMNS + KNOBS, profiles=PROFILES, paper="table1",
    paper_cell=_paper_cell,
    claims=CLAIMS,
    notes="Rows: `mz-1l` (one MZ-ISAB encoder block) and `st-4l` (four ISAB blocks). "
          "Quick profile: L=4 and L=32 only, 1K/250/500 sets, batch 16, peak lr 5e-4, 2-epoch "
          "warm-up, at most 20 epochs (patience 6), one seed; full: App. A.1's batch 128, lr "
          "1e-4, 200 epochs, 3 seeds, on 10K/2K/2K sets of 10-30 points in d=32 (the paper "
          "gives neither the split sizes nor d, n or the norms of Eq. 4 for this task: our "
          "choices, `docs/datasets.md`).",
)

if __name__ == "__main__":
    raise SystemExit(run_main(SPEC))
