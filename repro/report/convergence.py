r"""Whether a cell converged: the rule behind "contradicted" versus
"inconclusive".

A cell **converged** when

1. early stopping fired (the validation loss did not improve for
   :obj:`patience` epochs), or
2. it reached its epoch cap and its best validation loss improved by less
   than :obj:`STALL_FRACTION` (relative) over the last :obj:`STALL_EPOCHS`
   epochs.

Anything else (the cap reached while still improving, a record without a
history, or a validation loss that became NaN or infinite, on which early
stopping also fires) is "not converged", with the reason in words, e.g.
:obj:`"cap of 20 epochs reached, best val loss still -9.1% over the last 10"`.
"""
import math
from dataclasses import dataclass
from typing import Any

STALL_EPOCHS = 10
r"""Window of the cap rule, in epochs."""

STALL_FRACTION = 0.01
r"""Largest relative improvement of the best validation loss over the window
that still counts as converged at the cap."""


@dataclass(frozen=True)
class Convergence:
    r"""A cell's convergence state: :obj:`converged` and the reason in words."""
    converged: bool
    reason: str


def convergence(record: dict[str, Any]) -> Convergence:
    r"""The convergence state of a finished cell record (rule: module
    docstring)."""
    epochs = record.get("epochs")
    diverged = _first_non_finite(record.get("history") or [])
    if diverged is not None:  # early stopping also ends a run on a non-finite loss
        return Convergence(False, f"val loss not finite at epoch {diverged}")
    if record.get("stopped_early"):
        return Convergence(True, f"early stopping at epoch {epochs}")
    history = [row for row in record.get("history") or [] if row.get("val_loss") is not None]
    if not history:
        return Convergence(False, f"no history ({epochs} epochs)")
    cap = record.get("max_epochs") or record.get("config", {}).get("training", {}).get(
        "max_epochs")
    if cap is None or epochs is None or epochs < cap:
        return Convergence(False, f"stopped at epoch {epochs} of {cap} "
                                  "without early stopping")
    if len(history) <= STALL_EPOCHS:
        return Convergence(False, f"cap of {cap} epochs reached (≤ {STALL_EPOCHS} epochs: "
                                  "too short to judge)")
    change = best_change(history, STALL_EPOCHS)
    if change > -STALL_FRACTION:
        return Convergence(True, f"cap of {cap} epochs reached, best val loss "
                                 f"{100 * change:+.1f}% over the last {STALL_EPOCHS}")
    return Convergence(False, f"cap of {cap} epochs reached, best val loss still "
                              f"{100 * change:+.1f}% over the last {STALL_EPOCHS}")


def _first_non_finite(history: list[dict[str, Any]]) -> int | None:
    # the epoch (1-based) of the first validation loss that is NaN or infinite
    for index, row in enumerate(history, start=1):
        loss = row.get("val_loss")
        if loss is not None and not math.isfinite(float(loss)):
            return row.get("epoch", index)
    return None


def best_change(history: list[dict[str, Any]], window: int) -> float:
    r"""Relative change of the best validation loss over the last
    :obj:`window` epochs of :obj:`history` (negative: it improved)."""
    losses = [float(row["val_loss"]) for row in history]
    before, after = min(losses[:-window]), min(losses)
    return (after - before) / max(abs(before), 1e-12)
