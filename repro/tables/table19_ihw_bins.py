r"""Table 19 (App. D.3.1): set-matching test samples binned by IHW.

.. code-block:: bash

    python repro/tables/table19_ihw_bins.py --profile quick
    mzattn-repro analysis table19 --profile quick
"""
from mzattn.repro.analysis.commands import script_main

if __name__ == "__main__":
    raise SystemExit(script_main("table19"))
