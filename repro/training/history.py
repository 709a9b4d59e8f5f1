r"""A cell's learning curve: one row per validated epoch, kept in the
checkpoint (a resumed cell keeps the epochs before the interruption),
written to a per-cell CSV log after every epoch and stored in the cell JSON.
"""
import csv
import io
import time
from typing import Any

import lightning.pytorch as pl
import torch
from mzattn.repro.core.faults import atomic_write_text

from mzlayers.mz_attention import activations

FIELDS = ("epoch", "train_loss", "val_loss", "val_metric", "lr", "epoch_time_s")
r"""Columns of a history row (and of the CSV log)."""


class History(pl.Callback):
    r"""Records, per validated epoch, the mean training loss, the validation
    loss, the validation value of :obj:`metric`, the learning rate the epoch
    trained with and its wall time (training and validation).

    The rows are part of the callback's :meth:`state_dict`, so they travel
    in every checkpoint, with the running sums of an epoch in progress (a
    run resumed in the middle of an epoch records the whole epoch's training
    loss and time); after each epoch they are also written atomically to
    :obj:`csv_path` (columns :obj:`FIELDS`).  So do :obj:`runs`: one entry
    per process that trained the cell, the epoch it started (or resumed)
    in and, for a model with MZ attention, whether it stored or recomputed
    the attention's activations (:func:`~mzlayers.mz_attention.activations`).

    Args:
        metric (str): Validation metric to record, e.g. :obj:`"r2"` (logged
            as :obj:`val/{metric}`).
        csv_path (str, optional): CSV log. (default: :obj:`None`, none)
    """

    def __init__(self, metric: str, csv_path: str | None = None) -> None:
        self.metric, self.csv_path = metric, csv_path
        self.rows: list[dict[str, Any]] = []
        self.runs: list[dict[str, Any]] = []
        self._restored = False
        self._start = self._lr = None
        self._loss_sum = self._count = 0.0

    @property
    def state_key(self) -> str:
        return "History"

    def on_train_start(self, trainer: pl.Trainer, module: pl.LightningModule) -> None:
        self.runs = [*earlier_runs(self.runs, module, restored=self._restored),
                     run_entry(trainer.current_epoch + 1, module)]

    def on_train_epoch_start(self, trainer: pl.Trainer, module: pl.LightningModule) -> None:
        self._start = time.perf_counter()
        self._lr = trainer.optimizers[0].param_groups[0]["lr"]
        self._loss_sum = self._count = 0.0

    def on_train_batch_end(self, trainer: pl.Trainer, module: pl.LightningModule,
                           outputs: Any, batch: Any, batch_idx: int) -> None:
        loss = outputs["loss"] if isinstance(outputs, dict) else outputs
        if loss is None:
            return
        size = float(getattr(batch, "num_graphs", 1))
        self._loss_sum += float(loss.detach()) * size
        self._count += size

    def on_validation_end(self, trainer: pl.Trainer, module: pl.LightningModule) -> None:
        if trainer.sanity_checking or self._start is None:
            return
        metrics = trainer.callback_metrics
        self.rows.append({
            "epoch": trainer.current_epoch + 1,
            "train_loss": self._loss_sum / self._count if self._count else None,
            "val_loss": _value(metrics.get("val/loss")),
            "val_metric": _value(metrics.get(f"val/{self.metric}")),
            "lr": self._lr, "epoch_time_s": time.perf_counter() - self._start,
        })
        self._start = None
        if self.csv_path is not None and trainer.is_global_zero:
            write_csv_atomic(self.rows, self.csv_path)

    def state_dict(self) -> dict[str, Any]:
        state: dict[str, Any] = {"rows": list(self.rows), "runs": list(self.runs)}
        if self._start is not None:  # saved in the middle of an epoch
            state["epoch_in_progress"] = {
                "loss_sum": self._loss_sum, "count": self._count, "lr": self._lr,
                "seconds": time.perf_counter() - self._start}
        return state

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        self.rows = list(state_dict.get("rows", []))
        self.runs = list(state_dict.get("runs", []))  # none in checkpoints made before runs
        self._restored = True
        # Lightning resumes a mid-epoch checkpoint without on_train_epoch_start
        partial = state_dict.get("epoch_in_progress")
        if partial is not None:
            self._loss_sum, self._count, self._lr = (partial["loss_sum"], partial["count"],
                                                     partial["lr"])
            self._start = time.perf_counter() - partial["seconds"]


NOT_RECORDED = "not recorded"
r"""The activations mode of the runs before a checkpoint made before
:obj:`History.runs` existed (one entry from epoch 1 stands for them)."""


def run_entry(epoch: int, model: torch.nn.Module, mode: str | None = None) -> dict[str, Any]:
    r"""The entry of :obj:`History.runs` for a process that starts training
    :obj:`model` in :obj:`epoch` (1-based): with :obj:`model`'s activations
    mode (:func:`~mzlayers.mz_attention.activations`), or :obj:`mode` in its
    place, where the model has MZ attention."""
    found = activations(model)
    return {"epoch": epoch} | ({} if found is None else {"activations": mode or found})


def earlier_runs(runs: list[dict[str, Any]] | None, model: torch.nn.Module, *,
                 restored: bool) -> list[dict[str, Any]]:
    r"""The runs before this process's: those a :obj:`restored` checkpoint
    kept, or one :obj:`NOT_RECORDED` entry from epoch 1 for a checkpoint
    made before runs were kept; none for a run that starts afresh."""
    if runs or not restored:
        return list(runs or [])
    return [run_entry(1, model, mode=NOT_RECORDED)]


def activations_of(runs: list[dict[str, Any]]) -> dict[str, str]:
    r"""The record's :obj:`activations` from its :obj:`runs`: the MZ
    attention's modes in order, e.g. :obj:`"stored"`, or
    :obj:`"recomputed, then stored"` for a cell resumed under the other one;
    nothing without MZ attention."""
    modes = [run["activations"] for run in runs if "activations" in run]
    changes = [mode for i, mode in enumerate(modes) if i == 0 or mode != modes[i - 1]]
    return {"activations": ", then ".join(changes)} if changes else {}


def _value(value: torch.Tensor | float | None) -> float | None:
    return None if value is None else float(value)


def write_csv_atomic(rows: list[dict[str, Any]], path: str) -> None:
    r"""Writes :obj:`rows` (history rows) as CSV to :obj:`path` through a
    temporary file in the same folder, so readers never see a partial log
    (:func:`~mzattn.repro.core.faults.atomic_write`)."""
    buffer = io.StringIO()
    writer = csv.DictWriter(buffer, fieldnames=FIELDS)
    writer.writeheader()
    writer.writerows(rows)
    atomic_write_text(buffer.getvalue(), path)
