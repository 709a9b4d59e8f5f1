r"""Table 24: the sparse geometric set predicates (diameter, k-NN radius,
k smallest pairwise distances, furthest-first k-centre cost) at
$d \in \{8, 16, 32\}$ ($R^2$).

.. code-block:: bash

    python repro/table24_sgsp.py --profile quick
"""
import dataclasses

from mzattn.repro.claims import compare, verdict
from mzattn.repro.runner import main as run_main
from mzattn.repro.spec import QUICK, SMOKE, Claim, Column, Row, TableSpec, full, transposed

ROWS = (
    Row("Standard", "standard"),
    Row("ST-Large", "st-large"),
    Row("HyperNet", "hypernet-r8"),
    Row("Perceiver", "perceiver"),
    Row("LA-ST", "la-st"),
    Row("MZAttn-Full", "mz-full"),
    Row("MZAttn-Large", "mz-large"),
)
TASKS = {"diameter": "sgsp_diameter", "knn-radius": "sgsp_knn_radius",
         "k-smallest sum": "sgsp_k_smallest_sum", "furthest-first": "sgsp_furthest_first"}
COLUMNS = tuple(Column(f"{label} d={d}", task, {"d": d})
                for label, task in TASKS.items() for d in (8, 16, 32))

PROFILES = {
    "smoke": SMOKE,
    "quick": dataclasses.replace(QUICK,
                                 rows=("Standard", "ST-Large", "MZAttn-Full"),
                                 columns=("diameter d=8", "furthest-first d=8")),
    "full": full(seeds=(0, 1, 2, 3, 4)),
}

CLAIMS = (
    Claim("MZAttn-Full beats the parameter-matched ST-Large on the sparse furthest-first "
          "k-centre cost at every d",
          lambda r: verdict(*(compare(r, ("MZAttn-Full", f"furthest-first d={d}"), ">",
                                      ("ST-Large", f"furthest-first d={d}"))
                              for d in (8, 16, 32)))),
)

SPEC = TableSpec(
    key="table24", title="Sparse geometric set predicates (R²)",
    rows=ROWS, columns=COLUMNS, profiles=PROFILES, paper="table24", paper_cell=transposed,
    claims=CLAIMS,
)

if __name__ == "__main__":
    raise SystemExit(run_main(SPEC))
