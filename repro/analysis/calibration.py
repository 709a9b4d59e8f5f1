r"""Scores of a regression uncertainty estimate against the errors it should
predict (App. D.3 of "Matrix Zonotopic Attention", Tables 19-21): rank and
linear correlation with :math:`|y - \hat y|`, error by uncertainty bin, the
Gaussian negative log-likelihood, the regression expected calibration error
and an affine map from any uncertainty score to a predictive standard
deviation fitted on the validation split.

The paper does not define its ECE for regression; we use the standard
quantile-calibration error of Kuleshov et al. (2018): with the Gaussian
predictive CDF :math:`F_i`, the observed frequency of :math:`F_i(y_i) \le p`
against the nominal level :math:`p`, averaged over the levels
:math:`p \in \{0.05, 0.10, \dots, 0.95\}`.
"""
import math

import numpy as np
import torch
import torch.nn.functional as F
from scipy import stats
from torch import Tensor

ECE_LEVELS = tuple(round(0.05 * i, 2) for i in range(1, 20))
r"""Nominal quantile levels of :func:`regression_ece`."""

_MIN_STD = 1e-6  # keeps the likelihood finite for a zero predicted spread


def _as_2d(value: Tensor) -> Tensor:
    return value.view(value.size(0), -1)


def absolute_error(mean: Tensor, target: Tensor) -> Tensor:
    r"""Per-sample :math:`\frac1T \sum_t |y_t - \hat y_t|`, shape :obj:`[N]`."""
    return (_as_2d(mean) - _as_2d(target)).abs().mean(-1)


def correlations(score: Tensor, error: Tensor) -> dict[str, float]:
    r"""Spearman and Pearson correlation of an uncertainty :obj:`score`
    :obj:`[N]` with the absolute :obj:`error` :obj:`[N]` (Table 20), with
    their two-sided p-values (:mod:`scipy.stats`)."""
    if score.numel() != error.numel() or score.numel() < 3:
        raise ValueError(f"'score' and 'error' need the same size >= 3 "
                         f"(got {score.numel()} and {error.numel()})")
    s, e = score.double().cpu().numpy(), error.double().cpu().numpy()
    spearman, pearson = stats.spearmanr(s, e), stats.pearsonr(s, e)
    return {"spearman": float(spearman.statistic), "spearman_p": float(spearman.pvalue),
            "pearson": float(pearson.statistic), "pearson_p": float(pearson.pvalue)}


def error_bins(score: Tensor, error: Tensor, num_bins: int = 5) -> list[dict[str, float]]:
    r"""Samples sorted by :obj:`score` and cut into :obj:`num_bins` bins of
    (almost) equal count, lowest score first (Table 19): per bin the mean
    score, the mean :obj:`error` and the count."""
    if num_bins < 1 or num_bins > score.numel():
        raise ValueError(f"'num_bins' must be in [1, {score.numel()}] (got {num_bins})")
    order = torch.argsort(score, stable=True)
    return [{"score": float(score[idx].mean()), "abs_error": float(error[idx].mean()),
             "count": int(idx.numel())}
            for idx in torch.tensor_split(order, num_bins)]


def gaussian_nll(mean: Tensor, std: Tensor, target: Tensor) -> float:
    r"""Mean Gaussian negative log-likelihood
    :math:`\frac12 \log(2\pi\sigma^2) + \frac{(y - \mu)^2}{2\sigma^2}` over
    samples and targets (natural log, the target's own scale)."""
    var = _as_2d(std).clamp_min(_MIN_STD).pow(2)
    return float(F.gaussian_nll_loss(_as_2d(mean), _as_2d(target), var, full=True,
                                     eps=_MIN_STD ** 2))


def observed_frequencies(mean: Tensor, std: Tensor, target: Tensor,
                         levels: tuple[float, ...] = ECE_LEVELS) -> Tensor:
    r"""Share of samples (and targets) with :math:`F_i(y_i) \le p` per level
    :math:`p` of :obj:`levels`, where :math:`F_i` is the CDF of
    :math:`\mathcal{N}(\mu_i, \sigma_i^2)`; shape :obj:`[len(levels)]`."""
    z = (_as_2d(target) - _as_2d(mean)) / _as_2d(std).clamp_min(_MIN_STD)
    cdf = 0.5 * (1.0 + torch.erf(z.double() / math.sqrt(2.0)))
    p = torch.tensor(levels, dtype=torch.double)
    return (cdf.flatten().unsqueeze(0) <= p.unsqueeze(1)).double().mean(1)


def regression_ece(mean: Tensor, std: Tensor, target: Tensor,
                   levels: tuple[float, ...] = ECE_LEVELS) -> float:
    r"""Regression expected calibration error
    :math:`\frac{1}{|P|} \sum_{p \in P} |\hat{F}(p) - p|` with
    :math:`\hat F` of :func:`observed_frequencies` (Kuleshov et al., 2018)."""
    observed = observed_frequencies(mean, std, target, levels)
    return float((observed - torch.tensor(levels, dtype=torch.double)).abs().mean())


class StdMap:
    r"""An affine map :math:`\sigma(s) = a\,s + b` (:math:`a, b \ge 0`) from
    an uncertainty score :math:`s` (the IHW, or an ensemble spread) to a
    Gaussian predictive standard deviation, fitted by minimising the
    Gaussian NLL of held-out residuals (the validation split) with L-BFGS.

    Args:
        scale (float, optional): :math:`a`. (default: :obj:`1.0`)
        offset (float, optional): :math:`b`. (default: :obj:`0.0`)
    """
    def __init__(self, scale: float = 1.0, offset: float = 0.0) -> None:
        if scale < 0 or offset < 0:
            raise ValueError(f"'scale' and 'offset' must be non-negative "
                             f"(got {scale}, {offset})")
        self.scale, self.offset = float(scale), float(offset)

    @classmethod
    def fit(cls, score: Tensor, residual: Tensor, steps: int = 200) -> "StdMap":
        r"""Fits :math:`a, b` to :obj:`score` :obj:`[N]` and the residuals
        :math:`y - \hat y` :obj:`[N, T]` of the same samples."""
        s = score.double().view(-1, 1)
        r = _as_2d(residual).double()
        rms = float(r.pow(2).mean().sqrt().clamp_min(_MIN_STD))
        log_a = torch.tensor(math.log(rms / float(s.mean().clamp_min(_MIN_STD))),
                             dtype=torch.double, requires_grad=True)
        log_b = torch.tensor(math.log(0.1 * rms), dtype=torch.double, requires_grad=True)
        optimizer = torch.optim.LBFGS([log_a, log_b], max_iter=steps,
                                      line_search_fn="strong_wolfe")

        def closure() -> Tensor:
            optimizer.zero_grad()
            var = (log_a.exp() * s + log_b.exp()).pow(2).expand_as(r)
            loss = F.gaussian_nll_loss(torch.zeros_like(r), r, var, full=True)
            loss.backward()
            return loss

        optimizer.step(closure)
        return cls(float(log_a.detach().exp()), float(log_b.detach().exp()))

    def __call__(self, score: Tensor) -> Tensor:
        return self.scale * score + self.offset

    def to_dict(self) -> dict[str, float]:
        return {"scale": self.scale, "offset": self.offset}

    def __repr__(self) -> str:
        return f"{self.__class__.__name__}(scale={self.scale:.4g}, offset={self.offset:.4g})"


def uncertainty_scores(mean: Tensor, std: Tensor, score: Tensor,
                       target: Tensor) -> dict[str, float]:
    r"""Every Table 20-21 number of one method on one split: MSE, Spearman
    and Pearson of :obj:`score` with :math:`|error|`, Gaussian NLL and
    regression ECE of :math:`\mathcal{N}(\text{mean}, \text{std}^2)`."""
    error = absolute_error(mean, target)
    mse = float((_as_2d(mean) - _as_2d(target)).pow(2).mean())
    return {"mse": mse, **correlations(score, error),
            "nll": gaussian_nll(mean, std, target), "ece": regression_ece(mean, std, target)}


def reliability_curve(mean: Tensor, std: Tensor, target: Tensor,
                      levels: tuple[float, ...] = ECE_LEVELS) -> np.ndarray:
    r"""Points :obj:`[len(levels), 2]` (nominal, observed) of a reliability
    diagram."""
    observed = observed_frequencies(mean, std, target, levels).numpy()
    return np.stack([np.asarray(levels), observed], axis=1)
