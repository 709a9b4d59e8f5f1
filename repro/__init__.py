"""mzattn.repro: the reproduction harness for the paper's tables.

Kept import-light; the pieces live in rooms by role, each importing only
the rooms below it (``tests/packaging/test_import_graph.py``):

* :mod:`.cli` (``mzattn-repro``), :mod:`.demo` and :mod:`.campaign`: the
  commands on top.
* :mod:`.tables`: one spec per table, each also a script
  (``repro/tables/tableNN_*.py``, ``repro/tables/egnn_comparison.py``).
* :mod:`.analysis`: studies of trained models and readings of the tasks.
* :mod:`.engine`: runs a table's cells (runner, dispatch, pool, SLURM).
* :mod:`.report`: results, claims, verdicts, reports, figures, summaries
  and the paper's numbers.
* :mod:`.training`: one cell's training and record (Lightning module, data
  module, checkpoints).
* :mod:`.docker`: the CUDA image's driver and entry point.
* :mod:`.core`: the table spec, the registry of tables, warnings, faults
  and the environment record.
"""
from .core.quiet import filter_library_warnings

filter_library_warnings()  # before a table script's imports load PyG (quiet.LIBRARY_WARNINGS)
