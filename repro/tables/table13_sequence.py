r"""Table 13: MZ attention inside a sequence Transformer with positional
encoding, on the order-dependent quadratic-TDOF target.

.. code-block:: bash

    python repro/tables/table13_sequence.py --profile quick
"""
import dataclasses

from mzattn.repro.core.spec import QUICK, SMOKE, Claim, Column, Row, TableSpec, full
from mzattn.repro.engine.runner import main as run_main
from mzattn.repro.report.claims import compare, verdict

ROWS = (Row("MZ-Transformer", "mz-seq-transformer"), Row("Std-Transformer", "seq-transformer"))
COLUMNS = tuple(Column(f"L={L}", "quadratic_tdof_seq", {"L": L}) for L in (4, 8, 16, 24, 32))

PROFILES = {
    "smoke": SMOKE,
    "quick": dataclasses.replace(QUICK, columns=("L=4", "L=32")),
    "full": full(),
}

CLAIMS = (
    Claim("The MZ-Transformer beats the standard Transformer at every L",
          lambda r: verdict(*(compare(r, ("MZ-Transformer", c.label), ">",
                                      ("Std-Transformer", c.label)) for c in COLUMNS))),
    Claim("The MZ-Transformer reaches R² > 0.99 at every L",
          lambda r: verdict(*(compare(r, ("MZ-Transformer", c.label), ">", 0.99)
                              for c in COLUMNS))),
)

SPEC = TableSpec(
    key="table13", title="MZ attention in a sequence Transformer (R², quadratic TDOF)",
    rows=ROWS, columns=COLUMNS, profiles=PROFILES, paper="table13",
    paper_cell=lambda row, column: (column.removeprefix("L="), row), claims=CLAIMS,
)

if __name__ == "__main__":
    raise SystemExit(run_main(SPEC))
