r"""Table 22: Convex hull volume ($R^2$ across $d$).

.. code-block:: bash

    python repro/tables/table22_hull.py --profile quick
"""
from mzattn.repro.core.spec import Claim
from mzattn.repro.engine.runner import main as run_main
from mzattn.repro.tables.hull_spec import beats_every_baseline, hull_spec

LINEAR = "LA-ST (Linear Attn.)"

SPEC = hull_spec(key="table22", title="Convex hull volume (R²)", normalize=False,
                 linear_label=LINEAR,
                 claims=(Claim("MZAttn-Full beats every baseline at d=3",
                               beats_every_baseline("d=3", LINEAR)),
                         Claim("MZAttn-Full beats every baseline at the largest d",
                               beats_every_baseline("d=9", LINEAR))))

if __name__ == "__main__":
    raise SystemExit(run_main(SPEC))
