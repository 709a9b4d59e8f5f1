r"""Predictions of trained models over a data split, on the original target
scale: single passes (with the MZ models' interval-hull width), stochastic
MC-Dropout passes and Deep-Ensemble members, each timed."""
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import torch
from mzattn.baselines.uncertainty import dropout_active, prediction
from torch import Tensor


@dataclass
class Predictions:
    r"""Per-sample outputs of one method on one split.

    Args:
        samples (torch.Tensor): Predictions :obj:`[P, N, T]`, one row per
            stochastic pass or ensemble member (:obj:`P = 1` for a single
            deterministic pass), on the original target scale.
        target (torch.Tensor): Targets :obj:`[N, T]` on the original scale.
        seconds (float): Wall time of all passes over the split.
        ihw (torch.Tensor, optional): Interval-hull half-widths :obj:`[N, k d]`
            of the pooled output zonotopes (MZ models). (default: :obj:`None`)
    """
    samples: Tensor
    target: Tensor
    seconds: float
    ihw: Tensor | None = None

    @property
    def mean(self) -> Tensor:
        r"""Mean prediction over passes :obj:`[N, T]`."""
        return self.samples.mean(0)

    @property
    def spread(self) -> Tensor:
        r"""Population std over passes, averaged over targets, :obj:`[N]`."""
        return self.samples.std(0, unbiased=False).mean(-1)

    def head(self, passes: int) -> "Predictions":
        r"""The first :obj:`passes` passes, with the time scaled to them."""
        if not 1 <= passes <= self.samples.size(0):
            raise ValueError(f"'passes' must be in [1, {self.samples.size(0)}] (got {passes})")
        return Predictions(self.samples[:passes], self.target,
                           self.seconds * passes / self.samples.size(0), self.ihw)


def scalar_ihw(ihw: Tensor) -> Tensor:
    r"""The IHW of Thm. 4, :math:`\sum_g \|G_g\|_1`, per sample: the sum of
    the per-channel half-widths :math:`\delta = \sum_g |G_g|`, :obj:`[N]`."""
    return ihw.view(ihw.size(0), -1).sum(-1)


def _denormalize(pred: Tensor, mean: Sequence[float] | None,
                 std: Sequence[float] | None) -> Tensor:
    if mean is None or std is None:
        return pred
    return pred * torch.tensor(std, dtype=pred.dtype) + torch.tensor(mean, dtype=pred.dtype)


def _passes(models: Sequence[torch.nn.Module], loader: Iterable, repeats: int,
            stochastic: bool) -> tuple[Tensor, Tensor, Tensor | None, float]:
    preds, targets, widths = [], [], []
    start = time.perf_counter()
    for data in loader:
        batch_preds = []
        for model in models:
            for _ in range(repeats):
                out = model(data.x, data.batch, dim_size=data.num_graphs)
                batch_preds.append(prediction(out))
                if isinstance(out, tuple) and not stochastic:
                    widths.append(out[1])
        preds.append(torch.stack(batch_preds))
        targets.append(data.y.view(data.num_graphs, -1))
    seconds = time.perf_counter() - start
    ihw = torch.cat(widths) if widths and len(models) == 1 and repeats == 1 else None
    return torch.cat(preds, dim=1), torch.cat(targets), ihw, seconds


@torch.no_grad()
def predict(models: Sequence[torch.nn.Module], loader: Iterable, *,
            passes: int = 1, target_mean: Sequence[float] | None = None,
            target_std: Sequence[float] | None = None) -> Predictions:
    r"""Runs :obj:`models` over :obj:`loader`.

    One model with :obj:`passes = 1` is a deterministic pass (evaluation
    mode; MZ models also give their IHW); one model with :obj:`passes > 1`
    is MC-Dropout (every dropout layer sampled, Gal and Ghahramani, 2016);
    several models are a Deep Ensemble (one pass each).

    Args:
        models (Sequence[torch.nn.Module]): One model or the ensemble members.
        loader (Iterable): PyG batches with :obj:`x`, :obj:`batch`, :obj:`y`.
        passes (int, optional): Stochastic passes per model. (default: :obj:`1`)
        target_mean (Sequence[float], optional): Target mean used in
            training (predictions and targets are de-normalised with it).
            (default: :obj:`None`)
        target_std (Sequence[float], optional): Target std used in training.
            (default: :obj:`None`)
    """
    if passes < 1 or not models:
        raise ValueError(f"'passes' must be positive and 'models' non-empty "
                         f"(got {passes}, {len(models)} models)")
    if passes > 1 and len(models) > 1:
        raise ValueError("'passes' > 1 (MC-Dropout) needs exactly one model")
    for model in models:
        model.eval()
    stochastic = passes > 1
    if stochastic:
        with dropout_active(models[0]):
            samples, target, ihw, seconds = _passes(models, loader, passes, True)
    else:
        samples, target, ihw, seconds = _passes(models, loader, 1, False)
    return Predictions(_denormalize(samples, target_mean, target_std),
                       _denormalize(target, target_mean, target_std), seconds, ihw)
