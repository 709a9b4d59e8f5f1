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

A schedule that takes the learning rate to zero at the cap (the paper's
cosine decay) makes the last epochs' plateau the schedule's as much as the
model's: a converged run at the cap whose last :obj:`STALL_EPOCHS` epochs ran
below :obj:`LIVE_LR` of the peak learning rate says, in its reason, how much
its best validation loss still moved over the last :obj:`STALL_EPOCHS` epochs
that ran at or above it, e.g. :obj:`"cap of 200 epochs reached, best val loss
+0.0% over the last 10 (-5.7% over the last 10 at >= 10% of the peak
learning rate)"` (:func:`live_change`). The rule itself stays the
protocol's: such a run is converged.  Runs that early stopping ended after
that window moved as much there (docs/reproduction.md, *Verdict rules*), so
the window's change does not tell a capped run from a converged one.
"""
import math
from dataclasses import dataclass
from typing import Any

STALL_EPOCHS = 10
r"""Window of the cap rule, in epochs."""

STALL_FRACTION = 0.01
r"""Largest relative improvement of the best validation loss over the window
that still counts as converged at the cap."""

LIVE_LR = 0.1
r"""Fraction of the peak learning rate below which an epoch's plateau may be
the schedule's (module docstring)."""


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
                                 f"{100 * change:+.1f}% over the last {STALL_EPOCHS}"
                                 f"{_schedule_note(history)}")
    return Convergence(False, f"cap of {cap} epochs reached, best val loss still "
                              f"{100 * change:+.1f}% over the last {STALL_EPOCHS}")


def _schedule_note(history: list[dict[str, Any]]) -> str:
    change = live_change(history)
    if change is None:
        return ""
    return (f" ({100 * change:+.1f}% over the last {STALL_EPOCHS} at >= "
            f"{100 * LIVE_LR:.0f}% of the peak learning rate)")


def live_change(history: list[dict[str, Any]]) -> float | None:
    r"""Relative change of the best validation loss over the last
    :obj:`STALL_EPOCHS` epochs of :obj:`history` that ran at or above
    :obj:`LIVE_LR` of the peak learning rate, when its last
    :obj:`STALL_EPOCHS` epochs ran below it; :obj:`None` otherwise (or
    when fewer epochs ran at a live rate, or the rates are missing)."""
    rates = [row.get("lr") for row in history]
    if any(rate is None for rate in rates):
        return None
    live = max(rates) * LIVE_LR
    if all(rate >= live for rate in rates[-STALL_EPOCHS:]):
        return None
    last_live = max((i for i, rate in enumerate(rates) if rate >= live), default=-1)
    if last_live < STALL_EPOCHS:
        return None
    return best_change(history[:last_live + 1], STALL_EPOCHS)


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
