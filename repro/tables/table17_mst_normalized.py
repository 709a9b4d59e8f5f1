r"""Table 17: MST weight, normalised targets ($R^2$ across $d$).

The grid, profiles and claims of Table 23 (:mod:`table23_mst_scaling`) with the
targets normalised by the training statistics (App. D.2.4).

.. code-block:: bash

    python repro/tables/table17_mst_normalized.py --profile quick
"""
import dataclasses

from mzattn.repro.engine.runner import main as run_main
from mzattn.repro.tables import table23_mst_scaling as unnormalized

COLUMNS = tuple(dataclasses.replace(column, normalize=True)
                for column in unnormalized.COLUMNS)

SPEC = dataclasses.replace(
    unnormalized.SPEC, key="table17", title="MST weight, normalised targets (R²)",
    columns=COLUMNS, paper="table17",
    paper_cell=lambda row, column: (column.removeprefix("d="), row),
)

if __name__ == "__main__":
    raise SystemExit(run_main(SPEC))
