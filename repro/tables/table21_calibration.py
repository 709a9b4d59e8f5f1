r"""Table 21 (App. D.3.2): ECE and Gaussian NLL of IHW, MC-Dropout and Deep
Ensemble; reliability diagram.

.. code-block:: bash

    python repro/tables/table21_calibration.py --profile quick
    mzattn-repro analysis table21 --profile quick
"""
from mzattn.repro.analysis.commands import script_main

if __name__ == "__main__":
    raise SystemExit(script_main("table21"))
