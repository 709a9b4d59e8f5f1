r"""Table 18: Convex hull volume, normalised targets ($R^2$ across $d$).

.. code-block:: bash

    python repro/table18_hull_normalized.py --profile quick
"""
from mzattn.repro.hull_spec import hull_spec
from mzattn.repro.runner import main as run_main

SPEC = hull_spec(key="table18", title="Convex hull volume, normalised targets (R²)",
                 normalize=True, linear_label="LA-ST",
                 paper_cell=lambda row, column: (column.removeprefix("d="), row))

if __name__ == "__main__":
    raise SystemExit(run_main(SPEC))
