r"""The registry of every model, keyed by the paper's row labels.

:func:`build_model` builds a model by name with the paper's configuration;
keyword :obj:`overrides` replace any of its constructor arguments.
:func:`list_models` lists the names and :func:`model_info` describes each
one (paper row label, tables, paper parameter count).
"""
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import partial

import torch

from mzlayers import build_set_transformer


@dataclass(frozen=True)
class ModelInfo:
    r"""One registry entry.

    Args:
        name (str): Registry name.
        paper_row (str): The row label the paper uses.
        tables (tuple[str, ...]): Paper tables that report the model.
        paper_params (int, optional): The paper's parameter count (at
            :obj:`d_in = 8` unless :obj:`notes` says otherwise), :obj:`None`
            when the paper gives none.
        builder (Callable): :obj:`builder(in_channels, out_channels, **kwargs)`.
        defaults (dict): Keyword arguments of the paper's configuration.
        order_dependent (bool): :obj:`True` for models whose output depends
            on the element order (Mamba, sequence Transformers).
        notes (str): Choices where the paper is silent.
    """
    name: str
    paper_row: str
    tables: tuple[str, ...]
    paper_params: int | None
    builder: Callable[..., torch.nn.Module]
    defaults: dict = field(default_factory=dict)
    order_dependent: bool = False
    notes: str = ''


def _set_transformer(name: str) -> Callable[..., torch.nn.Module]:
    return partial(build_set_transformer, name)


_ENTRIES = [
    ModelInfo('standard', 'Standard', ('2', '3', '6', '12', '28'), 208_000,
              _set_transformer('standard')),
    ModelInfo('st-large', 'ST-Large', ('3', '4', '6', '28'), 362_000,
              _set_transformer('st-large')),
    ModelInfo('st-xlarge', 'ST-XLarge', ('28',), 443_000, _set_transformer('standard'),
              dict(channels=92, ff_channels=200),
              notes='d widened from 80 to 92 (Sec. D.5); d_ff kept at 200'),
    ModelInfo('st-meanpool', 'Standard (mean-pool head)', ('3',), 140_000,
              _set_transformer('st-meanpool')),
    ModelInfo('mz-slim', 'MZ-Slim', ('6',), 333_000, _set_transformer('mz-slim')),
    ModelInfo('mz-med', 'MZ-Med', ('6',), 344_000, _set_transformer('mz-med')),
    ModelInfo('mz-full', 'MZAttn-Full', ('2', '3', '6', '28'), 368_000,
              _set_transformer('mz-full')),
    ModelInfo('mz-large', 'MZAttn-Large', ('28',), 417_000, _set_transformer('mz-large')),
]

#: name -> :class:`ModelInfo`, in the paper's order.
REGISTRY: dict[str, ModelInfo] = {info.name: info for info in _ENTRIES}


def list_models() -> list[str]:
    r"""The registry names, in the paper's order."""
    return list(REGISTRY)


def model_info(name: str) -> ModelInfo:
    r"""The :class:`ModelInfo` of :obj:`name`."""
    if name not in REGISTRY:
        raise ValueError(f"Unknown model 'name'='{name}' (choose from {list_models()})")
    return REGISTRY[name]


def build_model(name: str, in_channels: int, out_channels: int,
                **overrides) -> torch.nn.Module:
    r"""Builds the model :obj:`name` with the paper's configuration.

    Args:
        name (str): A name of :func:`list_models`.
        in_channels (int): Input feature size per element.
        out_channels (int): Prediction size per set.
        **overrides: Constructor arguments replacing the paper's.
    """
    info = model_info(name)
    return info.builder(in_channels, out_channels, **{**info.defaults, **overrides})
