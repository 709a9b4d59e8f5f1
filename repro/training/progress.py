r"""Progress output: a bar in a terminal (:func:`~mzattn.repro.core.quiet.show_progress_bar`),
plain epoch lines under CI or in a log file."""
import time

import lightning.pytorch as pl


def duration(seconds: float) -> str:
    r"""A duration for people, e.g. :obj:`"45 s"` or :obj:`"3 min 05 s"`."""
    minutes, seconds = divmod(round(seconds), 60)
    return f"{minutes} min {seconds:02d} s" if minutes else f"{seconds} s"


class EpochLogger(pl.Callback):
    r"""Prints one line per validated epoch: the cell, the epoch, the
    learning rate, the validation metrics and the time left until the
    epoch cap at the mean pace so far (early stopping can end it sooner), e.g.
    :obj:`[MZAttn-Full d=8 seed 0] epoch 3/20 lr=6e-05 val/loss=0.39 val/r2=0.62,
    ~2 min 10 s left`.

    Args:
        label (str, optional): The cell, as the lines name it. (default: :obj:`""`)
    """
    KEYS = ("val/loss", "val/mse", "val/r2", "val/acc", "val/nll")

    def __init__(self, label: str = "") -> None:
        self.label = label
        self.lr: float | None = None
        self.started: tuple[float, int] | None = None  # (time, epoch) when training started

    def on_train_start(self, trainer: pl.Trainer, module: pl.LightningModule) -> None:
        self.started = (time.perf_counter(), trainer.current_epoch)  # a resumed run starts late

    def on_train_epoch_start(self, trainer: pl.Trainer, module: pl.LightningModule) -> None:
        self.lr = trainer.optimizers[0].param_groups[0]["lr"]

    def on_validation_end(self, trainer: pl.Trainer, module: pl.LightningModule) -> None:
        if trainer.sanity_checking or not trainer.is_global_zero or self.lr is None \
                or self.started is None:
            return
        metrics = trainer.callback_metrics
        parts = [f"lr={self.lr:.3g}"] + [f"{k}={float(metrics[k]):.4g}" for k in self.KEYS
                                         if k in metrics]
        epoch = trainer.current_epoch + 1
        start, first = self.started
        pace = (time.perf_counter() - start) / max(epoch - first, 1)
        left = duration(pace * (trainer.max_epochs - epoch))
        prefix = f"[{self.label}] " if self.label else ""
        print(f"{prefix}epoch {epoch}/{trainer.max_epochs} {' '.join(parts)}, ~{left} left",
              flush=True)
