r"""Table 11: HyperNet rank $r \in \{8, 16, 32\}$ against MZAttn on Tasks A
and B.

.. code-block:: bash

    python repro/tables/table11_hypernet_rank.py --profile quick
"""

from mzattn.repro.core.spec import QUICK, SMOKE, Claim, Column, Row, TableSpec, full
from mzattn.repro.engine.runner import main as run_main
from mzattn.repro.report.claims import compare, verdict

ROWS = (
    Row("HyperNet (r=8)", "hypernet-r8"),
    Row("HyperNet (r=16)", "hypernet-r16"),
    Row("HyperNet (r=32)", "hypernet-r32"),
    Row("MZAttn", "mz-full"),
)
RANKS = ("HyperNet (r=8)", "HyperNet (r=16)", "HyperNet (r=32)")
COLUMNS = (Column("A", "task_a"), Column("B", "task_b"))

PROFILES = {"smoke": SMOKE, "quick": QUICK,
            "full": full()}

CLAIMS = (
    Claim("MZAttn has a lower MSE than HyperNet at every rank on A and B",
          lambda r: verdict(*(compare(r, ("MZAttn", c), "<", (row, c), "mse")
                              for c in ("A", "B") for row in RANKS))),
)

SPEC = TableSpec(
    key="table11", title="HyperNet rank ablation vs. MZAttn (Tasks A, B)",
    rows=ROWS, columns=COLUMNS, profiles=PROFILES, paper="table11",
    paper_cell=lambda row, column: (row, f"{column} R2"), claims=CLAIMS,
)

if __name__ == "__main__":
    raise SystemExit(run_main(SPEC))
