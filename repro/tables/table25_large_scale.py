r"""Table 25: large-scale generalisation on the max, sum and range tasks
with up to 1000 elements per set ($R^2$).

.. code-block:: bash

    python repro/tables/table25_large_scale.py --profile quick
"""
import dataclasses

from mzattn.repro.core.spec import (
    QUICK,
    SMOKE,
    Claim,
    Column,
    Row,
    TableSpec,
    full,
)
from mzattn.repro.engine.runner import main as run_main
from mzattn.repro.report.claims import all_compare

ROWS = (
    Row("Standard", "standard"),
    Row("ST-Large", "st-large"),
    Row("Perceiver", "perceiver"),
    Row("MZAttn", "mz-full"),
)
BASELINES = ("Standard", "ST-Large", "Perceiver")
SUM = "Sum d=64, n=200-500"
SETTINGS = (("Max", 16, 10, 50), ("Max", 64, 200, 500), ("Max", 128, 500, 1000),
            ("Sum", 64, 200, 500), ("Range", 64, 200, 500), ("Range", 128, 500, 1000))
COLUMNS = tuple(Column(f"{name} d={d}, n={lo}-{hi}", f"set_{name.lower()}",
                       {"d": d, "n_min": lo, "n_max": hi})
                for name, d, lo, hi in SETTINGS)

PROFILES = {
    "smoke": SMOKE,
    "quick": dataclasses.replace(QUICK, num_train=500, num_val=200, num_test=200,
                                 max_epochs=10, patience=4,
                                 columns=("Max d=16, n=10-50", "Sum d=64, n=200-500")),
    "full": full(),
}

CLAIMS = (
    Claim("MZAttn is best on the sum task at d=64, n=200-500",
          lambda r: all_compare(r, ("MZAttn", SUM), ">", [(row, SUM) for row in BASELINES])),
)

SPEC = TableSpec(
    key="table25", title="Large-scale generalisation on max / sum / range (R²)",
    rows=ROWS, columns=COLUMNS, profiles=PROFILES, paper="table25", claims=CLAIMS,
)

if __name__ == "__main__":
    raise SystemExit(run_main(SPEC))
