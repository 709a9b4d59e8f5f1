r"""Table 20 (App. D.3.1): Spearman / Pearson of each uncertainty with the error, inference cost.

.. code-block:: bash

    python repro/tables/table20_uncertainty_quality.py --profile quick
    mzattn-repro analysis table20 --profile quick
"""
from mzattn.repro.analysis.commands import script_main

if __name__ == "__main__":
    raise SystemExit(script_main("table20"))
