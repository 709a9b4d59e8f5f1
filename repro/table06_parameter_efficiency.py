r"""Table 6: MZ parameter efficiency, MZ-Slim / Med / Full against the
standard Set Transformer on max, rotation matching and MST ($R^2$).

.. code-block:: bash

    python repro/table06_parameter_efficiency.py --profile quick
"""
import dataclasses

from mzattn.repro.claims import compare, verdict, within
from mzattn.repro.runner import main as run_main
from mzattn.repro.spec import (
    QUICK,
    REDUCTION_READING,
    SET_SIZE_NOTE,
    SMOKE,
    TASK_F_NOTE,
    Claim,
    Column,
    Row,
    TableSpec,
    full,
)

ROWS = (
    Row("Standard", "standard"),
    Row("MZ-Slim (n_g=2, L=1)", "mz-slim"),
    Row("MZ-Med (n_g=4, L=2)", "mz-med"),
    Row("MZ-Full (n_g=8, L=4)", "mz-full"),
)
MZ_ROWS = ["MZ-Slim (n_g=2, L=1)", "MZ-Med (n_g=4, L=2)", "MZ-Full (n_g=8, L=4)"]
COLUMNS = (Column("Max", "set_max", reading=REDUCTION_READING),
           Column("RotMatch", "task_f", {"d": 8}), Column("MST", "task_g", {"d": 8}))

PROFILES = {"smoke": SMOKE, "quick": dataclasses.replace(QUICK, max_epochs=20, patience=6),
            "full": full()}

CLAIMS = (
    Claim("Even MZ-Slim (n_g=2, L=1) beats the standard Set Transformer on all three tasks",
          lambda r: verdict(*(compare(r, ("MZ-Slim (n_g=2, L=1)", c.label), ">",
                                      ("Standard", c.label)) for c in COLUMNS))),
    Claim("The three MZ sizes are within 0.03 R² of each other on every task",
          lambda r: verdict(*(within(r, [(row, c.label) for row in MZ_ROWS], 0.03)
                              for c in COLUMNS))),
)


SPEC = TableSpec(
    key="table6", title="MZ parameter efficiency: Slim / Med / Full vs. Standard (R²)",
    rows=ROWS, columns=COLUMNS, profiles=PROFILES, paper="table6", claims=CLAIMS,
    notes=f"{TASK_F_NOTE} {SET_SIZE_NOTE}",
)

if __name__ == "__main__":
    raise SystemExit(run_main(SPEC))
