r"""Figures 3-4 (App. D.1): generator probing of trained MZ checkpoints.

.. code-block:: bash

    python repro/tables/figure3_probing.py --profile quick
    mzattn-repro analysis figure3 --profile quick
"""
from mzattn.repro.analysis.commands import script_main

if __name__ == "__main__":
    raise SystemExit(script_main("figure3"))
