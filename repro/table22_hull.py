r"""Table 22: Convex hull volume ($R^2$ across $d$).

.. code-block:: bash

    python repro/table22_hull.py --profile quick
"""
import dataclasses

from mzattn.repro.claims import compare, verdict
from mzattn.repro.runner import main as run_main
from mzattn.repro.spec import QUICK, SMOKE, Claim, Column, Row, TableSpec, full

ROWS = (
    Row("Standard", "standard"),
    Row("ST-Large", "st-large"),
    Row("HyperNet", "hypernet-r8"),
    Row("Perceiver", "perceiver"),
    Row("LA-ST (Linear Attn.)", "la-st"),
    Row("MZAttn-Full", "mz-full"),
    Row("MZAttn-Large", "mz-large"),
)
COLUMNS = tuple(Column(f"d={d}", "hull", {"d": d}, normalize=False) for d in (3,6,9,))
BASELINES = [row.label for row in ROWS if not row.label.startswith("MZAttn")]

PROFILES = {
    "smoke": SMOKE,
    "quick": dataclasses.replace(QUICK, max_epochs=15, patience=5, columns=("d=3", "d=9")),
    "full": full(seeds=(0, 1, 2, 3, 4)),
}

CLAIMS = (
    Claim("MZAttn-Full beats every baseline at d=3",
          lambda r: verdict(*(compare(r, ("MZAttn-Full", "d=3"), ">", (row, "d=3"))
                              for row in BASELINES))),
    Claim("MZAttn-Full beats every baseline at the largest d",
          lambda r: verdict(*(compare(r, ("MZAttn-Full", COLUMNS[-1].label), ">",
                                      (row, COLUMNS[-1].label)) for row in BASELINES))),
)

SPEC = TableSpec(
    key="table22", title="Convex hull volume (R²)",
    rows=ROWS, columns=COLUMNS, profiles=PROFILES, paper="table22",
    claims=CLAIMS,
)

if __name__ == "__main__":
    raise SystemExit(run_main(SPEC))
