r"""Table 14 (App. D.2.1): robustness of the TDOF Spearman to random TDOF perturbations.

.. code-block:: bash

    python repro/tables/table14_tdof_robustness.py --profile quick
    mzattn-repro analysis table14 --profile quick
"""
from mzattn.repro.analysis.commands import script_main

if __name__ == "__main__":
    raise SystemExit(script_main("table14"))
