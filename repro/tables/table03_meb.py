r"""Table 3 (and Figure 1 right, Figure 2 left): minimum-enclosing-ball
radius, :math:`R^2` across :math:`d \in \{8, 16, 32\}`.

.. code-block:: bash

    python repro/tables/table03_meb.py --profile quick
"""
import dataclasses
import os.path as osp

from mzattn.repro.core.spec import QUICK, SMOKE, Claim, Column, TableSpec, full
from mzattn.repro.engine.runner import main as run_main
from mzattn.repro.report.claims import compare, verdict
from mzattn.repro.report.figures import bars_and_lines
from mzattn.repro.tables.meb_spec import ROWS
from mzattn.repro.tables.table03_sensitivity import table3_lines

PMA_BASELINES = [row.label for row in ROWS[:6]]
COLUMNS = tuple(Column(f"d={d}", "meb", {"d": d}) for d in (8, 16, 32))

PROFILES = {
    "smoke": SMOKE,
    # 2-core CPU: MZ-Full costs ~15-25 ms per set per epoch there.
    "quick": dataclasses.replace(QUICK, max_epochs=20, patience=6, columns=("d=8",)),
    "full": full(seeds=(0, 1, 2, 3, 4)),
}


def _gap(results, column):
    return verdict(compare(results, ("MZAttn-Full", column), ">=", 0.3),
                   *(compare(results, (row, column), "<=", 0.05) for row in PMA_BASELINES))


CLAIMS = (
    Claim("Every parameter-matched PMA baseline stays near R² = 0 (we test <= 0.05) while "
          "MZAttn-Full clearly escapes (we test >= 0.3), at d=8",
          lambda results: _gap(results, "d=8")),
    Claim("The same collapse and escape at d=32", lambda results: _gap(results, "d=32")),
    Claim("HyperNet at r = d_k = 64 stays within ±0.012 of zero (we test |R²| <= 0.05, d=8)",
          lambda results: verdict(
              compare(results, ("HyperNet (r=64, full key-rank)", "d=8"), "<=", 0.05),
              compare(results, ("HyperNet (r=64, full key-rank)", "d=8"), ">=", -0.05))),
    Claim("Mamba + PMA matches MZAttn-Full at d=8 but falls below it at d=32",
          lambda results: verdict(
              compare(results, ("Mamba + PMA", "d=8"), ">=", ("MZAttn-Full", "d=8"), factor=0.9),
              compare(results, ("Mamba + PMA", "d=32"), "<", ("MZAttn-Full", "d=32")))),
)

def _sensitivity(results, folder: str) -> list[str]:
    # The finding of the distribution study run into the same results folder.
    return table3_lines(osp.dirname(folder))


SPEC = TableSpec(
    key="table3",
    title="MEB radius prediction (R², d = 8, 16, 32); Figure 1 right, Figure 2 left",
    rows=ROWS, columns=COLUMNS, profiles=PROFILES, paper="table3",
    claims=CLAIMS,
    figure=bars_and_lines("d=8", "Figure 1 (right): MEB radius, d=8",
                          "Figure 2 (left): MEB radius across d", "dimension"),
    notes="Quick profile: d=8 only, 1K/250/500 sets, batch 32, peak lr 5e-4 with a 2-epoch "
          "warm-up, at most 20 epochs (patience 6), one seed; full: App. A.1's batch 128 (it "
          "gives 256 for \"geom. tasks\": `table3-sensitivity`, column \"batch 256\"), lr "
          "1e-4, 200 epochs (patience 20), 5 seeds, on 5K/1K/2K sets (split sizes our choice: "
          "the paper gives none for MEB).",
    sections=_sensitivity,
)

if __name__ == "__main__":
    raise SystemExit(run_main(SPEC))
