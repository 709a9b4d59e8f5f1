r"""Table 16: size generalisation on set matching (Task B): trained on
clouds of 10-30 points, tested on larger ones.

.. code-block:: bash

    python repro/tables/table16_size_generalization.py --profile quick
"""
import dataclasses

from mzattn.datasets.synthetic import TABLE16_TEST_SIZES
from mzattn.repro.core.spec import QUICK, SMOKE, Claim, Column, Row, TableSpec, full
from mzattn.repro.engine.runner import main as run_main
from mzattn.repro.report.claims import compare, verdict

ROWS = (Row("ST", "standard"), Row("MZ", "mz-full"))
COLUMNS = tuple(Column(f"[{low},{high}]", "task_b", {"test_n_min": low, "test_n_max": high})
                for low, high in TABLE16_TEST_SIZES)

PROFILES = {
    "smoke": SMOKE,
    "quick": dataclasses.replace(QUICK,
                                 columns=("[10,30]", "[80,120]")),
    "full": full(),
}

CLAIMS = (
    Claim("MZ has a lower MSE than ST on every test-size range",
          lambda r: verdict(*(compare(r, ("MZ", c.label), "<", ("ST", c.label), "mse")
                              for c in COLUMNS))),
)

SPEC = TableSpec(
    key="table16", title="Size generalisation on set matching (train 10-30, test larger)",
    rows=ROWS, columns=COLUMNS, profiles=PROFILES, paper="table16",
    paper_cell=lambda row, column: (column, f"{row} R2"), claims=CLAIMS,
    notes="Each column trains its own model on 10-30 point clouds (the training split is the "
          "same for all columns; only the test split changes).",
)

if __name__ == "__main__":
    raise SystemExit(run_main(SPEC))
