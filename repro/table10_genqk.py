r"""Table 10: MZ-GenQK (generator information in the Q/K scores) against
centre-only MZAttn on Tasks A and B.

.. code-block:: bash

    python repro/table10_genqk.py --profile quick
"""

from mzattn.repro.claims import compare, verdict
from mzattn.repro.runner import main as run_main
from mzattn.repro.spec import QUICK, SMOKE, Claim, Column, Row, TableSpec, full

ROWS = (Row("MZAttn (centers-only Q/K)", "mz-full"),
        Row("MZ-GenQK (gen info in Q/K)", "mz-genqk"))
COLUMNS = (Column("A", "task_a"), Column("B", "task_b"))

PROFILES = {"smoke": SMOKE, "quick": QUICK,
            "full": full()}

CLAIMS = (
    Claim("Putting generator information into Q/K does not help: MZ-GenQK's R² is not above "
          "centre-only MZAttn's by more than 0.01 on A and B",
          lambda r: verdict(*(compare(r, ("MZ-GenQK (gen info in Q/K)", c), "<=",
                                      _plus(r, ("MZAttn (centers-only Q/K)", c), 0.01))
                              for c in ("A", "B")))),
)


def _plus(results, cell, margin):
    mean = results.mean(*cell)
    return cell if mean is None else mean + margin


SPEC = TableSpec(
    key="table10", title="MZ-GenQK vs. centre-only Q/K (Tasks A, B)",
    rows=ROWS, columns=COLUMNS, profiles=PROFILES, paper="table10",
    paper_cell=lambda row, column: (row, f"{column} R2"), claims=CLAIMS,
)

if __name__ == "__main__":
    raise SystemExit(run_main(SPEC))
