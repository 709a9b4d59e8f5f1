r"""Table 23: MST weight scaling ($R^2$ across $d$).

.. code-block:: bash

    python repro/tables/table23_mst_scaling.py --profile quick
"""
import dataclasses

from mzattn.repro.core.spec import QUICK, SMOKE, Claim, Column, Row, TableSpec, full
from mzattn.repro.engine.runner import main as run_main
from mzattn.repro.report.claims import compare, verdict

ROWS = (
    Row("Standard", "standard"),
    Row("ST-Large", "st-large"),
    Row("HyperNet", "hypernet-r8"),
    Row("Perceiver", "perceiver"),
    Row("MZAttn-Full", "mz-full"),
    Row("MZAttn-Large", "mz-large"),
)
COLUMNS = tuple(Column(f"d={d}", "task_g", {"d": d}, normalize=False) for d in (16,32,64,128,256,))
BASELINES = [row.label for row in ROWS if not row.label.startswith("MZAttn")]

PROFILES = {
    "smoke": SMOKE,
    "quick": dataclasses.replace(QUICK, columns=("d=16", "d=64")),
    "full": full(seeds=(0, 1, 2, 3, 4)),
}

CLAIMS = (
    Claim("MZAttn-Full beats every baseline at d=16",
          lambda r: verdict(*(compare(r, ("MZAttn-Full", "d=16"), ">", (row, "d=16"))
                              for row in BASELINES))),
    Claim("MZAttn-Full beats every baseline at the largest d",
          lambda r: verdict(*(compare(r, ("MZAttn-Full", COLUMNS[-1].label), ">",
                                      (row, COLUMNS[-1].label)) for row in BASELINES))),
)

SPEC = TableSpec(
    key="table23", title="MST weight scaling (R²)",
    rows=ROWS, columns=COLUMNS, profiles=PROFILES, paper="table23",
    claims=CLAIMS,
)

if __name__ == "__main__":
    raise SystemExit(run_main(SPEC))
