r"""Table 18: Convex hull volume, normalised targets ($R^2$ across $d$).

.. code-block:: bash

    python repro/tables/table18_hull_normalized.py --profile quick
"""
from mzattn.repro.core.spec import Claim
from mzattn.repro.engine.runner import main as run_main
from mzattn.repro.report.claims import at_least, compare, verdict
from mzattn.repro.tables.hull_spec import MZ, baselines, beats_every_baseline, hull_spec

LINEAR = "LA-ST"


def _ties_the_best(results, column: str = "d=3", margin: float = 0.02):
    # within margin of the best baseline: no baseline leads MZAttn-Full by more than margin,
    # and MZAttn-Full does not lead the best one (so every one) by more
    cells = [(row, column) for row in baselines(LINEAR)]
    return verdict(*(compare(results, (MZ, column), ">=", cell, offset=-margin)
                     for cell in cells),
                   at_least(1, [compare(results, (MZ, column), "<=", cell, offset=margin)
                                for cell in cells], f"{MZ} at most {margin:g} above a baseline"))


# The caption: "MZAttn-Full wins at d=6 (+0.14), ties at d=3, and is within seed variance
# of the leader at d=9"
SPEC = hull_spec(key="table18", title="Convex hull volume, normalised targets (R²)",
                 normalize=True, linear_label=LINEAR,
                 claims=(Claim("MZAttn-Full beats every baseline at d=6 (paper: +0.14)",
                               beats_every_baseline("d=6", LINEAR)),
                         Claim("MZAttn-Full ties the best baseline at d=3 (paper: 0.863 vs. "
                               "0.866; we test within 0.02)", _ties_the_best)),
                 notes="The caption's third statement, MZAttn-Full within seed variance of "
                       "the leader at d=9, is not checked: the table prints no seed std.",
                 paper_cell=lambda row, column: (column.removeprefix("d="), row))

if __name__ == "__main__":
    raise SystemExit(run_main(SPEC))
