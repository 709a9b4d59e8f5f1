r"""The :class:`~lightning.pytorch.LightningModule` that trains every set
model of the reproduction (App. A.1 of "Matrix Zonotopic Attention")."""
import math
from functools import cached_property

import lightning.pytorch as pl
import torch
import torch.nn.functional as F
from torch import Tensor
from torchmetrics import Accuracy, MeanMetric, MeanSquaredError, MetricCollection, R2Score

from mzlayers.layout import SetLayout
from mzlayers.static import bucket_size, pad_sets

LOSSES = ("mse", "cross_entropy", "gaussian_nll")
r"""Supported objectives: set regression, set classification and a Gaussian
likelihood head (mean and variance per target, App. D.5)."""

_MIN_VARIANCE = 1e-6  # keeps the Gaussian NLL finite for a collapsed variance


def warmup_cosine(epoch: int, warmup_epochs: int, max_epochs: int) -> float:
    r"""Learning-rate factor of epoch :obj:`epoch` (0-based): linear warm-up
    :math:`(e + 1) / E_w` for the first :obj:`warmup_epochs` epochs, then a
    cosine from :math:`1` to :math:`0` at :obj:`max_epochs` (App. A.1)."""
    if epoch < warmup_epochs:
        return (epoch + 1) / warmup_epochs
    span = max(max_epochs - warmup_epochs, 1)
    progress = min((epoch - warmup_epochs) / span, 1.0)
    return 0.5 * (1.0 + math.cos(math.pi * progress))


def output_channels(loss: str, target_dim: int, num_classes: int | None = None) -> int:
    r"""Prediction width a model needs for :obj:`loss`: :obj:`target_dim`
    for :obj:`"mse"`, :obj:`num_classes` for :obj:`"cross_entropy"` and
    :obj:`2 * target_dim` (mean and raw variance) for :obj:`"gaussian_nll"`."""
    if loss not in LOSSES:
        raise ValueError(f"'loss' must be one of {LOSSES} (got {loss!r})")
    if loss == "cross_entropy":
        if num_classes is None or num_classes < 2:
            raise ValueError(f"'num_classes' must be >= 2 for cross-entropy (got {num_classes})")
        return num_classes
    return 2 * target_dim if loss == "gaussian_nll" else target_dim


def target_variance(r2: R2Score) -> list[float]:
    r"""The biased variance of every target :obj:`[T]` seen by :obj:`r2`,
    from its own sums (synchronised across processes), so that
    :math:`R^2 = 1 - \text{MSE} / \text{var}` holds to float rounding for
    one target (the total sum of squares is the one :obj:`r2` divides by)."""
    with r2.sync_context():
        total = r2.total
        mean = r2.sum_error / total
        variance = (r2.sum_squared_error - r2.sum_error * mean) / total
    return variance.reshape(-1).tolist()


def batch_layout(data) -> SetLayout | None:
    r"""The :class:`~mzlayers.layout.SetLayout` of a collated PyG batch that
    carries its host :obj:`set_sizes` (added by
    :meth:`~mzattn.repro.training.datamodule.SetDataModule.on_before_batch_transfer`),
    else :obj:`None` (the model then reads the sizes from the device)."""
    if "set_sizes" not in data:
        return None
    return SetLayout.from_sizes(data.batch, data.set_sizes, data.ptr)


class SetModule(pl.LightningModule):
    r"""Trains a set model :math:`f(x, \text{batch}) \to \hat y` on PyG
    batches with the paper's optimisation (App. A.1): AdamW, a linear
    warm-up of :obj:`warmup_epochs` epochs, then a cosine schedule to zero at
    :obj:`max_epochs` (stepped once per epoch). Gradient clipping and early
    stopping belong to the :class:`~lightning.pytorch.Trainer`.

    The model may return a tensor or a tuple whose first entry is the
    prediction (MZ models return :obj:`(pred, ihw)`). Objectives:

    * :obj:`"mse"`: :math:`\frac1{BT}\|\hat y - y\|^2`; metrics MSE and
      :math:`R^2` on the original target scale (predictions and targets are
      de-normalised with :obj:`target_mean`, :obj:`target_std`).
    * :obj:`"cross_entropy"`: metric accuracy; :obj:`y` holds class indices.
    * :obj:`"gaussian_nll"`: the model predicts :math:`[\mu, s]` per target,
      :math:`\sigma^2 = \operatorname{softplus}(s) + 10^{-6}`, loss
      :math:`\frac12(\log\sigma^2 + (y - \mu)^2 / \sigma^2)`; metrics MSE,
      :math:`R^2` and the NLL (with its :math:`\frac12\log 2\pi`, on the
      normalised scale).

    Metrics are logged as :obj:`{stage}/{name}` with :obj:`stage` in
    :obj:`train`, :obj:`val`, :obj:`test` (e.g. :obj:`val/loss`,
    :obj:`test/r2`). After a test of a regression, :attr:`test_target_var`
    holds the variance of every target :obj:`[T]` over the test split, on
    the original scale, as the :math:`R^2` metric computed it
    (:func:`target_variance`), so that a record can be checked: for
    :math:`T = 1`, :math:`R^2 = 1 - \text{MSE} / \text{var}`.

    Args:
        model (torch.nn.Module): The set model.
        loss (str, optional): One of :obj:`LOSSES`. (default: :obj:`"mse"`)
        target_dim (int, optional): Regression targets :math:`T`. (default: :obj:`1`)
        num_classes (int, optional): Classes for :obj:`"cross_entropy"`.
            (default: :obj:`None`)
        lr (float, optional): Peak learning rate. (default: :obj:`1e-4`)
        weight_decay (float, optional): AdamW weight decay. (default: :obj:`1e-5`)
        warmup_epochs (int, optional): Linear warm-up epochs. (default: :obj:`5`)
        max_epochs (int, optional): Epoch at which the cosine reaches zero.
            (default: :obj:`200`)
        target_mean (Tensor, optional): Mean of the normalised targets
            :obj:`[T]`. (default: :obj:`None`, zeros)
        target_std (Tensor, optional): Standard deviation of the normalised
            targets :obj:`[T]`. (default: :obj:`None`, ones)
        compile (bool, optional): Run the model on the static-shape path
            under :func:`torch.compile` (:obj:`fullgraph=True`, static
            shapes): every batch is padded, from its host set sizes, to the
            next power of two of its largest set
            (:func:`~mzlayers.static.pad_sets`), so a bucket's batches replay
            one graph; mode :obj:`"reduce-overhead"` (forward and backward
            as CUDA graphs) on CUDA, :obj:`"default"` elsewhere.
            (default: :obj:`False`)
    """
    def __init__(
        self,
        model: torch.nn.Module,
        loss: str = "mse",
        target_dim: int = 1,
        num_classes: int | None = None,
        lr: float = 1e-4,
        weight_decay: float = 1e-5,
        warmup_epochs: int = 5,
        max_epochs: int = 200,
        target_mean: Tensor | None = None,
        target_std: Tensor | None = None,
        compile: bool = False,
    ) -> None:
        super().__init__()
        output_channels(loss, target_dim, num_classes)  # validates loss/num_classes
        if lr <= 0:
            raise ValueError(f"'lr' must be positive (got {lr})")
        if warmup_epochs < 0 or max_epochs < 1:
            raise ValueError(f"'warmup_epochs' must be >= 0 and 'max_epochs' >= 1 "
                             f"(got {warmup_epochs}, {max_epochs})")
        self.model = model
        self.loss_name, self.target_dim, self.num_classes = loss, target_dim, num_classes
        self.lr, self.weight_decay = lr, weight_decay
        self.warmup_epochs, self.max_epochs = warmup_epochs, max_epochs
        mean = torch.zeros(target_dim) if target_mean is None else target_mean
        std = torch.ones(target_dim) if target_std is None else target_std
        self.register_buffer("target_mean", torch.as_tensor(mean, dtype=torch.float).view(-1))
        self.register_buffer("target_std", torch.as_tensor(std, dtype=torch.float).view(-1))
        self.metrics = torch.nn.ModuleDict(
            {f"{stage}_metrics": self._metric_collection() for stage in ("train", "val", "test")})
        self.test_target_var: list[float] | None = None
        self.compile = compile

    def _metric_collection(self) -> MetricCollection:
        if self.loss_name == "cross_entropy":
            return MetricCollection({"acc": Accuracy("multiclass", num_classes=self.num_classes)})
        r2 = R2Score(multioutput="uniform_average") if self.target_dim > 1 else R2Score()
        metrics = {"mse": MeanSquaredError(), "r2": r2}
        if self.loss_name == "gaussian_nll":
            metrics["nll"] = MeanMetric()
        return MetricCollection(metrics)

    # -------------------------------------------------------------- model
    def forward(self, x: Tensor, batch: Tensor, dim_size: int | None = None,
                layout: SetLayout | None = None) -> Tensor:
        r"""The model's prediction :obj:`[B, out]` (the first entry of a
        tuple output), given the batch's :obj:`layout` when it is known (no
        device read in the model). Floating-point features are cast to the
        module's dtype: Lightning's :obj:`"64-true"`, :obj:`"16-true"` and
        :obj:`"bf16-true"` precisions convert the parameters but not the
        tensors of a PyG batch."""
        if x.is_floating_point() and x.dtype != self.dtype:
            x = x.to(self.dtype)
        if self.compile and layout is not None:  # the static-shape path
            x_pad, mask = pad_sets(x, layout, bucket_size(max(layout.counts, default=0)))
            out = self.compiled_model(x_pad, mask=mask)
        else:
            options = {} if layout is None else {"layout": layout}
            out = self.model(x, batch, dim_size=dim_size, **options)
        return out[0] if isinstance(out, tuple) else out

    @cached_property
    def compiled_model(self) -> torch.nn.Module:
        r"""The model under :func:`torch.compile` (with :obj:`compile`),
        made on the first call, on the device it trains on (kept out of the
        module's children: checkpoints hold the model's parameters once)."""
        mode = "reduce-overhead" if self.device.type == "cuda" else "default"
        return torch.compile(self.model, fullgraph=True, dynamic=False, mode=mode)

    def denormalize(self, y: Tensor) -> Tensor:
        r"""Maps normalised targets :obj:`[B, T]` to the original scale."""
        return y * self.target_std + self.target_mean

    def gaussian_parameters(self, out: Tensor) -> tuple[Tensor, Tensor]:
        r"""Splits a Gaussian head's output :obj:`[B, 2T]` into the mean and
        the variance :obj:`[B, T]` each."""
        mean, raw = out.split(self.target_dim, dim=-1)
        return mean, F.softplus(raw) + _MIN_VARIANCE

    # ---------------------------------------------------------- training
    def _step(self, data, stage: str) -> Tensor:
        out = self(data.x, data.batch, dim_size=data.num_graphs, layout=batch_layout(data))
        loss = self.objective(out.float(), data.y, stage)
        self.log(f"{stage}/loss", loss, batch_size=data.num_graphs, sync_dist=stage != "train",
                 prog_bar=stage != "test", on_step=False, on_epoch=True)
        return loss

    def objective(self, out: Tensor, y: Tensor, stage: str) -> Tensor:
        r"""The loss of the predictions :obj:`out` :obj:`[B, out]` for the
        targets :obj:`y` of a batch, with the metrics of :obj:`stage`
        updated (a trainer of stacked seeds,
        :mod:`~mzattn.repro.training.together`, scores each seed here)."""
        metrics = self.metrics[f"{stage}_metrics"]
        if self.loss_name == "cross_entropy":
            y = y.view(-1).long()
            loss = F.cross_entropy(out, y)
            metrics.update(out.argmax(-1), y)
        else:
            y = y.view(out.size(0), self.target_dim).float()
            pred, nll = out, None
            if self.loss_name == "gaussian_nll":
                pred, var = self.gaussian_parameters(out)
                nll = F.gaussian_nll_loss(pred, y, var, full=True, reduction="none")
                loss = nll.mean()
            else:
                loss = F.mse_loss(pred, y)
            pred_raw, y_raw = self.denormalize(pred.detach()), self.denormalize(y)
            squeeze = self.target_dim == 1
            metrics["mse"].update(pred_raw, y_raw)
            metrics["r2"].update(pred_raw.squeeze(-1) if squeeze else pred_raw,
                                 y_raw.squeeze(-1) if squeeze else y_raw)
            if nll is not None:
                metrics["nll"].update(nll.detach())
        return loss

    def _log_metrics(self, stage: str) -> None:
        metrics = self.metrics[f"{stage}_metrics"]
        if stage == "test" and "r2" in metrics:
            self.test_target_var = target_variance(metrics["r2"])
        values = metrics.compute()
        self.log_dict({f"{stage}/{k}": v for k, v in values.items()},
                      prog_bar=stage == "val")
        metrics.reset()

    def training_step(self, data, batch_idx: int) -> Tensor:
        return self._step(data, "train")

    def validation_step(self, data, batch_idx: int) -> None:
        self._step(data, "val")

    def test_step(self, data, batch_idx: int) -> None:
        self._step(data, "test")

    def on_train_epoch_end(self) -> None:
        self._log_metrics("train")

    def on_validation_epoch_end(self) -> None:
        self._log_metrics("val")

    def on_test_epoch_end(self) -> None:
        self._log_metrics("test")

    def configure_optimizers(self):
        optimizer = torch.optim.AdamW(self.parameters(), lr=self.lr,
                                      weight_decay=self.weight_decay)
        scheduler = torch.optim.lr_scheduler.LambdaLR(
            optimizer, lambda epoch: warmup_cosine(epoch, self.warmup_epochs, self.max_epochs))
        return {"optimizer": optimizer,
                "lr_scheduler": {"scheduler": scheduler, "interval": "epoch"}}

    def __repr__(self) -> str:
        return (f"{self.__class__.__name__}({self.model.__class__.__name__}, "
                f"loss={self.loss_name}, lr={self.lr}, warmup_epochs={self.warmup_epochs}, "
                f"max_epochs={self.max_epochs})")
