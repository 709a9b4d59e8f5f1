r"""Figure 2 (right): MZAttn's MSE reduction against the TDOF of 18 settings.

.. code-block:: bash

    python repro/tables/figure2_tdof.py --profile quick
    mzattn-repro analysis figure2 --profile quick
"""
from mzattn.repro.analysis.commands import script_main

if __name__ == "__main__":
    raise SystemExit(script_main("figure2"))
