r"""Table 9: number of zonotope generators $n_g$ of MZAttn on set matching
(Task B; the paper runs one seed, 42).

.. code-block:: bash

    python repro/tables/table09_zonotope_generators.py --profile quick
"""
import dataclasses

from mzattn.repro.core.spec import QUICK, SMOKE, Claim, Column, Row, TableSpec, full
from mzattn.repro.engine.runner import main as run_main
from mzattn.repro.report.claims import verdict, within

ROWS = tuple(Row(str(n), "mz-full", {"num_generators": n}) for n in (2, 4, 8, 16))
COLUMNS = (Column("Set matching", "task_b"),)

PROFILES = {
    "smoke": SMOKE,
    "quick": dataclasses.replace(QUICK, seeds=(42,)),
    "full": full(seeds=(42,)),
}

CLAIMS = (
    Claim("The number of zonotope generators matters little: every n_g within 0.02 R² of "
          "n_g=8",
          lambda r: verdict(*(within(r, [(row, "Set matching"), ("8", "Set matching")], 0.02)
                              for row in ("2", "4", "16")))),
)


SPEC = TableSpec(
    key="table9", title="Ablation on the number of zonotope generators n_g (set matching)",
    rows=ROWS, columns=COLUMNS, profiles=PROFILES, paper="table9",
    paper_cell=lambda row, column: (row, "R2"), claims=CLAIMS,
)

if __name__ == "__main__":
    raise SystemExit(run_main(SPEC))
