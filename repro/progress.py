r"""Progress output: a bar in a terminal (:func:`~mzattn.repro.quiet.show_progress_bar`),
plain epoch lines under CI or in a log file."""
import lightning.pytorch as pl


class EpochLogger(pl.Callback):
    r"""Prints one line per validated epoch with the validation metrics and
    the epoch's learning rate, e.g. :obj:`epoch 3/200 lr=6e-05 val/loss=0.39 val/r2=0.62`."""
    KEYS = ("val/loss", "val/mse", "val/r2", "val/acc", "val/nll")

    def __init__(self) -> None:
        self.lr: float | None = None

    def on_train_epoch_start(self, trainer: pl.Trainer, module: pl.LightningModule) -> None:
        self.lr = trainer.optimizers[0].param_groups[0]["lr"]

    def on_validation_end(self, trainer: pl.Trainer, module: pl.LightningModule) -> None:
        if trainer.sanity_checking or not trainer.is_global_zero or self.lr is None:
            return
        metrics = trainer.callback_metrics
        parts = [f"lr={self.lr:.3g}"] + [f"{k}={float(metrics[k]):.4g}" for k in self.KEYS
                                    if k in metrics]
        print(f"epoch {trainer.current_epoch + 1}/{trainer.max_epochs} " + " ".join(parts),
              flush=True)
