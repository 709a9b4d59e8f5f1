r"""Table 15: ambiguity sweep on set matching (Task B), MSE and $R^2$ as a
function of the copy noise $\sigma$.

.. code-block:: bash

    python repro/tables/table15_ambiguity.py --profile quick
"""
import dataclasses

from mzattn.datasets.synthetic import TABLE15_NOISES
from mzattn.repro.core.spec import QUICK, SMOKE, Claim, Column, Row, TableSpec, full
from mzattn.repro.engine.runner import main as run_main
from mzattn.repro.report.claims import compare, verdict

ROWS = (Row("ST", "standard"), Row("MZ", "mz-full"))
COLUMNS = tuple(Column(f"sigma={noise}", "task_b", {"noise": noise}) for noise in TABLE15_NOISES)

PROFILES = {
    "smoke": SMOKE,
    "quick": dataclasses.replace(QUICK,
                                 columns=("sigma=0.05", "sigma=1.0")),
    "full": full(),
}

CLAIMS = (
    Claim("MZ has a lower MSE than ST at every noise level",
          lambda r: verdict(*(compare(r, ("MZ", c.label), "<", ("ST", c.label), "mse")
                              for c in COLUMNS))),
)

SPEC = TableSpec(
    key="table15", title="Ambiguity sweep on set matching (noise sigma)",
    rows=ROWS, columns=COLUMNS, profiles=PROFILES, paper="table15",
    paper_cell=lambda row, column: (column.removeprefix("sigma="), f"{row} R2"), claims=CLAIMS,
)

if __name__ == "__main__":
    raise SystemExit(run_main(SPEC))
