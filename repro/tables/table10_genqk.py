r"""Table 10: MZ-GenQK (generator information in the Q/K scores) against
centre-only MZAttn on Tasks A and B.

.. code-block:: bash

    python repro/tables/table10_genqk.py --profile quick
"""

from mzattn.repro.core.spec import QUICK, SMOKE, Claim, Column, Row, TableSpec, full
from mzattn.repro.engine.runner import main as run_main
from mzattn.repro.report.claims import compare, verdict

CENTRES, GENQK = "MZAttn (centers-only Q/K)", "MZ-GenQK (gen info in Q/K)"
ROWS = (Row(CENTRES, "mz-full"), Row(GENQK, "mz-genqk"))
COLUMNS = (Column("A", "task_a"), Column("B", "task_b"))

PROFILES = {"smoke": SMOKE, "quick": QUICK,
            "full": full()}

CLAIMS = (
    Claim("Generator information in Q/K is task-dependent: MZ-GenQK raises R² on A (paper: "
          "0.879 to 0.909) and lowers it on B (paper: 0.961 to 0.951, MSE 55.0 to 68.8)",
          lambda r: verdict(compare(r, (GENQK, "A"), ">", (CENTRES, "A")),
                            compare(r, (GENQK, "B"), "<", (CENTRES, "B")))),
)


SPEC = TableSpec(
    key="table10", title="MZ-GenQK vs. centre-only Q/K (Tasks A, B)",
    rows=ROWS, columns=COLUMNS, profiles=PROFILES, paper="table10",
    paper_cell=lambda row, column: (row, f"{column} R2"), claims=CLAIMS,
)

if __name__ == "__main__":
    raise SystemExit(run_main(SPEC))
