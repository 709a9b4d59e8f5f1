r"""Sampling-based uncertainty baselines (Tables 20, 21): MC-Dropout and
Deep Ensembles around any registry model."""
from collections.abc import Iterator, Sequence
from contextlib import contextmanager

import torch
from torch import Tensor
from torch.nn.modules.batchnorm import _BatchNorm

from mzlayers.layout import SetLayout


def prediction(out: Tensor | tuple[Tensor, Tensor]) -> Tensor:
    r"""The prediction of a model output (the first entry of a tuple)."""
    return out[0] if isinstance(out, tuple) else out


@contextmanager
def dropout_active(model: torch.nn.Module) -> Iterator[None]:
    r"""Temporarily puts every sub-module except batch norms into training
    mode (so all dropout, including attention dropout, is sampled) and
    restores the previous modes."""
    modes = {module: module.training for module in model.modules()}
    try:
        for module in model.modules():
            module.training = not isinstance(module, _BatchNorm)
        yield
    finally:
        for module, mode in modes.items():
            module.training = mode


def predict(model: torch.nn.Module, x: Tensor, batch: Tensor | None,
            dim_size: int | None, mask: Tensor | None,
            layout: SetLayout | None = None) -> Tensor:
    r"""The prediction of :obj:`model` for a ragged batch (with its
    :obj:`layout`, if known), or for a padded one when :obj:`mask` is given
    (only given options are passed, so a base model without a static-shape
    path still takes ragged batches)."""
    options = {key: value for key, value in (('mask', mask), ('layout', layout))
               if value is not None}
    return prediction(model(x, batch, dim_size, **options))


def mean_std(samples: Tensor) -> tuple[Tensor, Tensor]:
    r"""Mean and (population) standard deviation over the first dimension
    (:obj:`[T, B, *]` → two :obj:`[B, *]`; zero sets give empty ones)."""
    mean = samples.mean(0)
    if mean.numel() == 0:  # torch.std warns of "degrees of freedom <= 0" on an empty batch
        return mean, torch.zeros_like(mean)
    return mean, samples.std(0, unbiased=False)


class MCDropout(torch.nn.Module):
    r"""MC-Dropout (Gal and Ghahramani, 2016): in evaluation mode, :math:`T`
    stochastic passes with dropout kept on,

    .. math::
        \hat{y} = \frac{1}{T} \sum_{t=1}^{T} f_{\theta, \epsilon_t}(S), \qquad
        \hat{\sigma} = \mathrm{std}_t\, f_{\theta, \epsilon_t}(S).

    In training mode it is one ordinary (stochastic) pass of the base model
    with :math:`\hat{\sigma} = 0`.  Table 21 uses :math:`T = 30` (Table 20:
    10).

    Args:
        model (torch.nn.Module): Base model (any registry model; MZ models'
            IHW output is ignored).
        num_samples (int, optional): Passes :math:`T`. (default: :obj:`30`)

    Shapes:
        - **input:** as the base model: :obj:`x` :obj:`[N, F]`, :obj:`batch`
          :obj:`[N]`; or a padded :obj:`x` :obj:`[B, n, F]` with :obj:`mask`
          :obj:`[B, n]` (passed on; the base model validates it)
        - **output:** :obj:`(mean [B, out], std [B, out])`
    """
    def __init__(self, model: torch.nn.Module, num_samples: int = 30):
        super().__init__()
        if num_samples < 1:
            raise ValueError(f"'num_samples' must be positive (got {num_samples})")
        self.model = model
        self.num_samples = num_samples

    def reset_parameters(self):
        self.model.reset_parameters()

    def forward(self, x: Tensor, batch: Tensor | None = None,
                dim_size: int | None = None, *, mask: Tensor | None = None,
                layout: SetLayout | None = None) -> tuple[Tensor, Tensor]:
        if self.training:
            pred = predict(self.model, x, batch, dim_size, mask, layout)
            return pred, torch.zeros_like(pred)
        with dropout_active(self.model):
            samples = [predict(self.model, x, batch, dim_size, mask, layout)
                       for _ in range(self.num_samples)]
        return mean_std(torch.stack(samples))

    def __repr__(self) -> str:
        return (f'{self.__class__.__name__}({self.model.__class__.__name__}, '
                f'num_samples={self.num_samples})')


class DeepEnsemble(torch.nn.Module):
    r"""Deep Ensemble (Lakshminarayanan et al., 2017): :math:`K`
    independently initialised members,

    .. math::
        \hat{y} = \frac{1}{K} \sum_{k=1}^{K} f_{\theta_k}(S), \qquad
        \hat{\sigma} = \mathrm{std}_k\, f_{\theta_k}(S).

    Table 21 uses :math:`K = 5`.  The paper's members are trained
    independently: train each of :obj:`members` on its own (each is an
    ordinary registry model).  Training the wrapper itself through its
    output trains the members jointly on the loss of their mean, a
    different method.

    Args:
        members (Sequence[torch.nn.Module]): The member models.

    Shapes:
        - **input:** as the members: :obj:`x` :obj:`[N, F]`, :obj:`batch`
          :obj:`[N]`; or a padded :obj:`x` :obj:`[B, n, F]` with :obj:`mask`
          :obj:`[B, n]` (passed on; every member validates it)
        - **output:** :obj:`(mean [B, out], std [B, out])`
    """
    def __init__(self, members: Sequence[torch.nn.Module]):
        super().__init__()
        if len(members) < 1:
            raise ValueError("'members' must hold at least one model")
        self.members = torch.nn.ModuleList(members)

    def reset_parameters(self):
        for member in self.members:
            member.reset_parameters()

    def forward(self, x: Tensor, batch: Tensor | None = None,
                dim_size: int | None = None, *, mask: Tensor | None = None,
                layout: SetLayout | None = None) -> tuple[Tensor, Tensor]:
        samples = [predict(member, x, batch, dim_size, mask, layout)
                   for member in self.members]
        return mean_std(torch.stack(samples))

    def __repr__(self) -> str:
        return (f'{self.__class__.__name__}({self.members[0].__class__.__name__}, '
                f'num_members={len(self.members)})')
