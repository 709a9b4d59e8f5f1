"""mzattn.repro: the reproduction harness for the paper's tables.

Kept import-light; the pieces live in submodules:

* :mod:`.lightning_module` (:class:`SetModule`) and :mod:`.datamodule`
  (:class:`SetDataModule`): training with the paper's optimisation.
* :mod:`.spec` (:class:`TableSpec`, profiles, claims), :mod:`.cells` (one
  JSON per trained cell), :mod:`.runner`, :mod:`.report`, :mod:`.summary`.
* :mod:`.tables`: the table scripts (``repro/tableNN_*.py``,
  ``repro/egnn_comparison.py``); :mod:`.cli`: ``mzattn-repro``.
"""
from .quiet import filter_library_warnings

filter_library_warnings()  # before a table script's imports load PyG (quiet.LIBRARY_WARNINGS)
