r"""K replicas of one set model, trained as one module with
:func:`torch.func.vmap` over stacked parameters."""
import copy
from collections.abc import Callable, Sequence
from typing import Any

import torch
from torch import Tensor
from torch.func import functional_call, stack_module_state, vmap
from torch.optim import Optimizer
from torch.utils.hooks import RemovableHandle

from mzlayers.layout import SetLayout

from .support import kernel_problem, unstackable_reason

RANDOMNESS = ('different', 'same')
r"""How random operations (dropout) draw across replicas under
:func:`torch.func.vmap`: independently per replica, or one draw for all."""


def _key(name: str) -> str:
    # a module attribute cannot contain '.': 'encoder.0.weight' -> 'encoder/0/weight'
    return name.replace('.', '/')


class StackedSeeds(torch.nn.Module):
    r"""Trains :math:`K` replicas of one set model, e.g. the seeds of one
    cell of a table, as one module: each parameter and buffer of the model
    is stacked along a new leading dimension (:func:`torch.func.stack_module_state`),
    and the forward pass runs the model once per replica with
    :func:`torch.func.functional_call` under :func:`torch.func.vmap`, so
    that a small model fills a device with one launch per operation for all
    replicas instead of one per replica.

    Replica :math:`k` starts from the parameters of :obj:`models[k]` (build
    each one under its own seed) and gets its own batch: its own ragged sets
    as a padded batch with a mask (:func:`~mzattn.stacked.stack_sets`, the
    static-shape input of :mod:`mzlayers.static` that every registry model
    takes; the outputs equal the ragged path's up to rounding), or its own
    features on a layout that all replicas share (:obj:`batch`,
    :obj:`layout`: sets of one size, or an ensemble trained on the same
    batches).

    Because the replicas' parameters are independent,
    :math:`\nabla_{\theta_k} \sum_j \ell_j = \nabla_{\theta_k} \ell_k`:
    backpropagating the sum of the replicas' losses gives each replica the
    gradients of its own loss, and an element-wise optimiser (AdamW) on the
    stacked parameters takes every replica's own step.  Gradient clipping
    must be per replica (:meth:`clip_grad_norm_`).  With these, :math:`K`
    stacked replicas follow :math:`K` separate trainings to float rounding
    (tested to :math:`10^{-6}` in float64), except for dropout: under
    :obj:`randomness="different"` each replica draws its own masks from the
    process's generator, a different draw from the one a separate training
    with that seed would make (the same distribution).

    A replica whose training ends early (early stopping) is frozen with
    :meth:`freeze`: optimiser steps no longer change its parameters
    (:meth:`keep_frozen`) while the others go on.  :meth:`replica` returns
    replica :math:`k` as a plain model (for evaluation, checkpoints and
    records) and :meth:`load_replica` puts one back (resume).

    Args:
        models (Sequence[torch.nn.Module]): The replicas at their
            initialisation: instances of one class with the same parameter
            names and shapes.
        randomness (str, optional): One of :obj:`RANDOMNESS`.
            (default: :obj:`"different"`)

    Shapes:
        - **input:** a padded batch per replica, :obj:`x` :obj:`[K, B, n, F]`
          with :obj:`mask` :obj:`[K, B, n]` (:obj:`True` = real element);
          or features :obj:`x` :obj:`[K, N, F]` (:obj:`x.expand(K, N, F)`
          shares one) on a shared :obj:`batch` :obj:`[N]`, with the model's
          other arguments (:obj:`dim_size`, :obj:`layout`)
        - **output:** the model's output with a leading :obj:`K`, e.g.
          :obj:`[K, B, out]`, or a tuple of such for the MZ models
    """
    def __init__(self, models: Sequence[torch.nn.Module], randomness: str = 'different'):
        super().__init__()
        if len(models) < 1:
            raise ValueError("'models' must hold at least one replica")
        if randomness not in RANDOMNESS:
            raise ValueError(f"'randomness' must be one of {RANDOMNESS} (got {randomness!r})")
        kinds = {type(model) for model in models}
        if len(kinds) > 1:
            raise ValueError(f"'models' must be instances of one class (got "
                             f"{sorted(kind.__name__ for kind in kinds)})")
        reason = unstackable_reason(models[0])
        if reason is not None:
            raise ValueError(f"'models' cannot be stacked: {reason}")
        params, buffers = stack_module_state(list(models))
        self.num_replicas, self.randomness = len(models), randomness
        self.params = torch.nn.ParameterDict(
            {_key(name): torch.nn.Parameter(value.detach()) for name, value in params.items()})
        self.stacked_buffers = torch.nn.Module()
        for name, value in buffers.items():
            self.stacked_buffers.register_buffer(_key(name), value)
        # the architecture without storage: functional_call fills in every tensor
        self._template = [copy.deepcopy(models[0]).to('meta')]
        self.frozen: set[int] = set()
        self._frozen_index: Tensor | None = None
        self._held: dict[str, Tensor] = {}
        self.train(models[0].training)

    @classmethod
    def from_seeds(cls, build: Callable[[], torch.nn.Module], seeds: Sequence[int],
                   randomness: str = 'different') -> 'StackedSeeds':
        r"""Replica :math:`k` built by :obj:`build()` right after
        :obj:`torch.manual_seed(seeds[k])`, as a separate training that
        seeds torch and then builds its model initialises it; the global
        generators are left as they were (:func:`torch.random.fork_rng`)."""
        models = []
        for seed in seeds:
            with torch.random.fork_rng(devices=[]):
                torch.manual_seed(seed)
                models.append(build())
        return cls(models, randomness=randomness)

    @property
    def template(self) -> torch.nn.Module:
        r"""The replicas' architecture, its tensors on the :obj:`meta` device."""
        return self._template[0]

    def named_stacked(self) -> list[tuple[str, Tensor]]:
        r"""Every stacked parameter and buffer :obj:`[K, ...]` under its name
        in the model, e.g. :obj:`("encoder.0.weight", [K, d, F])`."""
        tensors = [*self.params.items(), *self.stacked_buffers.named_buffers()]
        return [(key.replace('/', '.'), value) for key, value in tensors]

    def train(self, mode: bool = True) -> 'StackedSeeds':
        super().train(mode)
        self.template.train(mode)
        return self

    # -------------------------------------------------------------- model
    def forward(self, x: Tensor, batch: Tensor | None = None, *args: Any,
                mask: Tensor | None = None, layout: SetLayout | None = None,
                **kwargs: Any) -> Any:
        K = self.num_replicas
        if x.dim() < 2 or x.size(0) != K:
            raise ValueError(f"'x' must have the {K} replicas first, [K, N, F] or "
                             f"[K, B, n, F] (got shape {tuple(x.shape)})")
        if mask is not None and (mask.dim() != 3 or mask.size(0) != K):
            raise ValueError(f"'mask' must be [K, B, n] with K = {K} (got shape "
                             f"{tuple(mask.shape)})")
        problem = None if mask is not None else kernel_problem(self.template, layout, x.device)
        if problem is not None:
            raise ValueError(f"The replicas cannot run under torch.func.vmap: {problem}")
        options = kwargs if layout is None else {**kwargs, 'layout': layout}

        def run(params: dict[str, Tensor], buffers: dict[str, Tensor], x: Tensor,
                mask: Tensor | None) -> Any:
            extra = options if mask is None else {**options, 'mask': mask}
            return functional_call(self.template, (params, buffers), (x, batch, *args), extra)
        params = {key.replace('/', '.'): value for key, value in self.params.items()}
        buffers = {key.replace('/', '.'): value
                   for key, value in self.stacked_buffers.named_buffers()}
        in_dims = (0, 0, 0, None if mask is None else 0)
        return vmap(run, in_dims=in_dims, randomness=self.randomness)(params, buffers, x, mask)

    # ----------------------------------------------------------- replicas
    def replica(self, k: int) -> torch.nn.Module:
        r"""Replica :obj:`k` as a plain model (a copy, on the device of the
        stacked parameters, in this module's training mode)."""
        self._check_index(k)
        device = next(iter(self.params.values())).device
        model = copy.deepcopy(self.template).to_empty(device=device)
        with torch.no_grad():
            for target, (_, value) in zip(self._model_tensors(model), self.named_stacked(),
                                          strict=True):
                target.copy_(value[k])
        return model.train(self.training)

    def load_replica(self, k: int, model: torch.nn.Module) -> None:
        r"""Copies the parameters and buffers of :obj:`model`, an instance
        of the replicas' class, into replica :obj:`k` (e.g. a seed resumed
        from its own checkpoint)."""
        self._check_index(k)
        with torch.no_grad():
            for source, (name, value) in zip(self._model_tensors(model), self.named_stacked(),
                                             strict=True):
                if source.shape != value.shape[1:]:
                    raise ValueError(f"'model' does not match the replicas: {name} has shape "
                                     f"{tuple(source.shape)}, not {tuple(value.shape[1:])}")
                value[k] = source

    def _model_tensors(self, model: torch.nn.Module) -> list[Tensor]:
        # a model's parameters, then its buffers, in the order of named_stacked()
        tensors = dict(model.named_parameters()) | dict(model.named_buffers())
        names = [name for name, _ in self.named_stacked()]
        if set(names) != set(tensors):
            raise ValueError(f"'model' does not match the replicas: its tensors are "
                             f"{sorted(set(tensors) ^ set(names))[:5]} apart")
        return [tensors[name] for name in names]

    def _check_index(self, k: int) -> None:
        if not 0 <= k < self.num_replicas:
            raise IndexError(f"replica {k} of {self.num_replicas}")

    # ---------------------------------------------------------- training
    @torch.no_grad()
    def clip_grad_norm_(self, max_norm: float) -> Tensor:
        r"""Scales each replica's gradients as
        :func:`torch.nn.utils.clip_grad_norm_` would scale those of that
        replica trained alone: by :math:`\min(1, c / (\|g_k\|_2 + 10^{-6}))`,
        :math:`\|g_k\|_2` over all its parameters.  Returns the norms
        :obj:`[K]` before clipping."""
        grads = [p.grad for p in self.params.values() if p.grad is not None]
        if not grads:
            return torch.zeros(self.num_replicas)
        norms = torch.stack([g.flatten(1).norm(dim=1) for g in grads]).norm(dim=0)  # [K]
        scale = (max_norm / (norms + 1e-6)).clamp(max=1.0)
        for g in grads:
            g.mul_(scale.view(-1, *[1] * (g.dim() - 1)).to(g.dtype))
        return norms

    def freeze(self, k: int) -> None:
        r"""Freezes replica :obj:`k` at its current parameters: the steps of
        an optimiser under :meth:`keep_frozen` no longer change them (its
        optimiser state goes on changing; it is never read again).  The
        frozen replicas, :attr:`frozen`, are part of the state dict."""
        self._check_index(k)
        self.frozen.add(k)
        self._frozen_index = None

    def keep_frozen(self, optimizer: Optimizer) -> tuple[RemovableHandle, RemovableHandle]:
        r"""Makes every step of :obj:`optimizer` (an optimiser of
        :meth:`parameters`) a masked update that leaves the frozen replicas
        as they are: their parameters are kept before the step and written
        back after it, with no read of device data on the host.  Returns
        the two hooks' handles."""
        return (optimizer.register_step_pre_hook(lambda *_: self._hold()),
                optimizer.register_step_post_hook(lambda *_: self._release()))

    def _index(self, device: torch.device) -> Tensor:
        # the frozen replicas [F] on the parameters' device, made once per freeze
        if self._frozen_index is None or self._frozen_index.device != device:
            self._frozen_index = torch.tensor(sorted(self.frozen), device=device)
        return self._frozen_index

    @torch.no_grad()
    def _hold(self) -> None:
        self._held = {} if not self.frozen else {
            key: p.index_select(0, self._index(p.device)) for key, p in self.params.items()}

    @torch.no_grad()
    def _release(self) -> None:
        for key, value in self._held.items():
            p = self.params[key]
            p.index_copy_(0, self._index(p.device), value)
        self._held = {}

    def get_extra_state(self) -> dict[str, list[int]]:
        return {'frozen': sorted(self.frozen)}

    def set_extra_state(self, state: dict[str, list[int]]) -> None:
        self.frozen, self._frozen_index = set(state['frozen']), None

    def __repr__(self) -> str:
        return (f"{self.__class__.__name__}({type(self.template).__name__}, "
                f"replicas={self.num_replicas}, randomness={self.randomness!r})")
