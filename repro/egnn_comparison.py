r"""Table 7 (MZAttn vs. EGNN) as a plain script at the path the project has
always promised, :obj:`python repro/egnn_comparison.py`; the spec itself
lives with the other tables in :mod:`mzattn.repro.tables.egnn_comparison`.

.. code-block:: bash

    python repro/egnn_comparison.py --profile quick
"""
import os.path as osp
import runpy

if __name__ == "__main__":
    runpy.run_path(osp.join(osp.dirname(osp.abspath(__file__)), "tables", "egnn_comparison.py"),
                   run_name="__main__")
