r"""Table 22: Convex hull volume ($R^2$ across $d$).

.. code-block:: bash

    python repro/table22_hull.py --profile quick
"""
from mzattn.repro.hull_spec import hull_spec
from mzattn.repro.runner import main as run_main

SPEC = hull_spec(key="table22", title="Convex hull volume (R²)", normalize=False,
                 linear_label="LA-ST (Linear Attn.)")

if __name__ == "__main__":
    raise SystemExit(run_main(SPEC))
