r"""Table 29: Slot Attention against Deep Sets, the Set Transformer and
MZAttn on the max / sum / median / range reductions (App. D.5.3).

.. code-block:: bash

    python repro/tables/table29_slot_attention.py --profile quick
"""
import dataclasses

from mzattn.repro.core.readings import find_reading
from mzattn.repro.core.spec import (
    QUICK,
    SET_SIZE_NOTE,
    SMOKE,
    Claim,
    Column,
    Row,
    TableSpec,
    full,
    reading_variant,
)
from mzattn.repro.engine.runner import main as run_main
from mzattn.repro.report.claims import compare, ratio, verdict, within

ROWS = (
    Row("Slot Attention", "slot-attention"),
    Row("Deep Sets", "deep-sets"),
    Row("Set Transformer", "standard"),
    Row("MZAttn (ours)", "mz-full"),
)
COLUMNS = tuple(Column(label, f"set_{label.lower()}")
                for label in ("Max", "Sum", "Median", "Range"))
PAPER_COLUMNS = tuple(column.label for column in COLUMNS)
# Max again under the reading the paper's own numbers fix (`mzattn-repro readings`; Sum, Range
# keep ours, which they fix too, and Median is undecided), run by the `readings` campaign, with
# the two claims on max again under it
READINGS = (reading_variant(next(c for c in COLUMNS if c.label == "Max"),
                            find_reading("max", "per-dim-sum")),)
ATTENTION = ["Set Transformer", "MZAttn (ours)"]
MAX_READING = READINGS[0].label

PROFILES = {
    "smoke": dataclasses.replace(SMOKE, columns=PAPER_COLUMNS),
    "quick": dataclasses.replace(QUICK, num_train=500, num_val=200, columns=PAPER_COLUMNS),
    "full": full(columns=PAPER_COLUMNS),
}

CLAIMS = (
    # Sec. 3 says "lags all attention-based models"; App. D's "underperforming every other
    # architecture, including Deep Sets" fails on the paper's own median (0.652 vs. 0.646)
    Claim("Slot Attention lags every attention-based model (Set Transformer, MZAttn) on all "
          "four tasks",
          lambda r: verdict(*(compare(r, ("Slot Attention", c.label), "<", (row, c.label))
                              for c in COLUMNS for row in ATTENTION))),
    Claim("MZAttn is best on max (paper: 0.847 vs. 0.817 for the Set Transformer)",
          lambda r: verdict(*(compare(r, ("MZAttn (ours)", "Max"), ">", (row, "Max"))
                              for row in ("Slot Attention", "Deep Sets", "Set Transformer")))),
    Claim("MZAttn reaches R² >= 0.99 on sum with a large residual-MSE reduction over the Set "
          "Transformer (paper: 40x; we test >= 5x)",
          lambda r: verdict(compare(r, ("MZAttn (ours)", "Sum"), ">=", 0.99),
                            ratio(r, ("Set Transformer", "Sum"), ("MZAttn (ours)", "Sum"), 5.0))),
    Claim(f"MZAttn is best on max under {MAX_READING}, the reading the paper's own numbers fix "
          "(docs/readings.md)",
          lambda r: verdict(*(compare(r, ("MZAttn (ours)", MAX_READING), ">", (row, MAX_READING))
                              for row in ("Slot Attention", "Deep Sets", "Set Transformer")))),
    Claim(f"Slot Attention lags every attention-based model on max under {MAX_READING}",
          lambda r: verdict(*(compare(r, ("Slot Attention", MAX_READING), "<",
                                      (row, MAX_READING)) for row in ATTENTION))),
    Claim("On median all models perform similarly (paper: R² ≈ 0.65; we test all four within "
          "0.03 R² of each other)",
          lambda r: verdict(within(r, [(row.label, "Median") for row in ROWS], 0.03))),
)


SPEC = TableSpec(
    key="table29",
    title="Slot Attention vs. Deep Sets, Set Transformer and MZAttn on set reductions (R²)",
    rows=ROWS, columns=COLUMNS + READINGS, profiles=PROFILES, paper="table29", claims=CLAIMS,
    notes="Quick profile: 500/200/500 sets, batch 32, peak lr 5e-4, 2-epoch warm-up, at most "
          "15 epochs (patience 5), one seed; the paper: 5K/1K/1K (our task default), 200 "
          "epochs, 3 seeds. " + SET_SIZE_NOTE,
)

if __name__ == "__main__":
    raise SystemExit(run_main(SPEC))
