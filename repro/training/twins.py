r"""Twin cells: cells of two tables that are the same run.

Some tables share a configuration: EGNN on the quadratic-TDOF target at
:math:`L = 4` is a cell of Table 1 (column :obj:`L=4`) and of Table 7
(column :obj:`Quadratic TDOF L=4`), with the same model, arguments, data,
seed, loss, training and validation metric. A cell whose finished twin is
already in the results folder is not trained again: its record is the
twin's, with its own configuration and :obj:`"reused_from"` naming the
twin's file (:func:`~mzattn.repro.training.cells.run_cell`). While a twin trains,
it holds the run's lock (:func:`run_lock_path`): a cell that finds it held
waits for the twin instead of training the same run beside it.
"""
import glob
import hashlib
import json
import os.path as osp
from collections.abc import Callable
from typing import Any

#: Configuration fields that name a cell's place, not its run.
PLACE = ("table", "row", "column")


def run_of(config: dict[str, Any], place: tuple[str, ...] = PLACE) -> str:
    r"""What determines a cell's run: its configuration (a
    :func:`~mzattn.repro.training.cells.cell_config`) without the fields
    :obj:`place` (default: the table, row and column labels) and unset
    training fields, as canonical JSON. The default batching,
    :obj:`"masked"`, is left out: records written before the field existed
    are masked runs, and their identity stays what it was."""
    training = {k: v for k, v in config.get("training", {}).items() if v is not None}
    run = {k: v for k, v in config.items() if k not in place and k != "batching"}
    batching = batching_of(config)
    if batching != "masked":
        run["batching"] = batching
    return json.dumps(run | {"training": training}, sort_keys=True, default=str)


def batching_of(config: dict[str, Any]) -> str:
    r"""The batching of a cell's configuration
    (:obj:`mzattn.datasets.batching.BATCHINGS`); :obj:`"masked"` for a
    record written before the field existed."""
    return config.get("batching", "masked")


def run_lock_path(out: str, config: dict[str, Any], metric: str) -> str:
    r"""Lock of a run, held by whichever cell trains it:
    :obj:`{out}/locks/run-{digest}.lock`, the same file for every cell with
    the run (:func:`run_of`) of :obj:`config` and validation metric
    :obj:`metric`."""
    digest = hashlib.sha256(f"{run_of(config)}\n{metric}".encode()).hexdigest()[:20]
    return osp.join(out, "locks", f"run-{digest}.lock")


def find_twin(out: str, config: dict[str, Any], metric: str,
              read: Callable[[str], dict[str, Any] | None]) -> tuple[str, dict[str, Any]] | None:
    r"""The path and record of a finished cell of another table in
    :obj:`out` with the run (:func:`run_of`) of :obj:`config` and a
    validation curve of :obj:`metric`, or :obj:`None`. :obj:`read` reads a
    record, :obj:`None` for a missing or unusable one."""
    wanted = run_of(config)
    for path in sorted(glob.glob(osp.join(out, "*", "cells", "*.json"))):
        record = read(path)
        if record is None or record.get("status") != "ok" or "reused_from" in record:
            continue
        twin = record.get("config", {})
        if twin.get("table") != config["table"] and run_of(twin) == wanted \
                and _metric(twin) == metric:
            return path, record
    return None


def _metric(config: dict[str, Any]) -> str | None:
    from mzattn.repro.core.registry import load_spec
    try:
        return load_spec(config["table"]).metric_of(config["column"])
    except (KeyError, ValueError):  # a table or column that no longer exists
        return None
