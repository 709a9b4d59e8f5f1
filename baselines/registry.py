r"""The registry of every model, keyed by the paper's row labels.

:func:`build_model` builds a model by name with the paper's configuration;
keyword :obj:`overrides` replace any of its constructor arguments.
:func:`list_models` lists the names, :func:`model_info` describes each one
(paper row label, tables, paper parameter count) and :func:`models_table`
puts our parameter counts beside the paper's.
"""
import dataclasses
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import partial

import torch
from mzattn.baselines.deep_sets import DeepSets
from mzattn.baselines.egnn import EGNN
from mzattn.baselines.film import FiLMSetTransformer
from mzattn.baselines.hypernet import HyperNetSetTransformer
from mzattn.baselines.linear_attention import LinearAttentionSetTransformer
from mzattn.baselines.mamba_pma import MambaPMA
from mzattn.baselines.mz_genqk import MZGenQKSetTransformer
from mzattn.baselines.perceiver import Perceiver
from mzattn.baselines.sequence import MZSequenceTransformer, SequenceTransformer
from mzattn.baselines.slot_attention import SlotAttention
from mzattn.baselines.uncertainty import DeepEnsemble, MCDropout

from mzattn.names import did_you_mean
from mzlayers import build_set_transformer, count_parameters


@dataclass(frozen=True)
class ModelInfo:
    r"""One registry entry.

    Args:
        name (str): Registry name.
        paper_row (str): The row label the paper uses.
        tables (tuple[str, ...]): Paper tables that report the model.
        paper_params (int, optional): The paper's parameter count, :obj:`None`
            when the paper gives none.
        builder (Callable): :obj:`builder(in_channels, out_channels, **kwargs)`.
        defaults (dict): Keyword arguments of the paper's configuration.
        in_channels (int): Input size at which :obj:`paper_params` is compared
            (8, the MEB/MST tasks, unless the paper's table implies another).
        order_dependent (bool): :obj:`True` for models whose output depends
            on the element order (Mamba, sequence Transformers).
    """
    name: str
    paper_row: str
    tables: tuple[str, ...]
    paper_params: int | None
    builder: Callable[..., torch.nn.Module]
    defaults: dict = field(default_factory=dict)
    in_channels: int = 8
    order_dependent: bool = False


def _set_transformer(name: str) -> Callable[..., torch.nn.Module]:
    return partial(build_set_transformer, name)


def mc_dropout(in_channels: int, out_channels: int, base: str = 'standard',
               num_samples: int = 30, **overrides) -> MCDropout:
    r""":class:`~mzattn.baselines.uncertainty.MCDropout` around the registry
    model :obj:`base` (built with :obj:`overrides`)."""
    return MCDropout(build_model(base, in_channels, out_channels, **overrides), num_samples)


def deep_ensemble(in_channels: int, out_channels: int, base: str = 'standard',
                  num_members: int = 5, **overrides) -> DeepEnsemble:
    r""":class:`~mzattn.baselines.uncertainty.DeepEnsemble` of
    :obj:`num_members` independently initialised registry models :obj:`base`."""
    if num_members < 1:
        raise ValueError(f"'num_members' must be positive (got {num_members})")
    return DeepEnsemble([build_model(base, in_channels, out_channels, **overrides)
                         for _ in range(num_members)])


def _depth_entries() -> list[ModelInfo]:
    r"""Table 12: Set Transformers with 1-6 ISAB layers."""
    params = {1: 140_000, 2: 208_000, 3: 276_000, 4: 344_000, 5: 412_000, 6: 480_000}
    return [ModelInfo(f'st-{depth}l', f'Set Transformer (D={depth})', ('1', '12'),
                      count, _set_transformer('standard'),
                      dict(num_encoder_blocks=depth)) for depth, count in params.items()]


def _hypernet_entries() -> list[ModelInfo]:
    r"""Tables 3, 5, 11: HyperNet ranks; r = 16, 32 narrowed to the matched
    budget (d_ff = 2d, widths from :func:`~mzattn.baselines.width.match_width`)."""
    widths = {8: 64, 16: 56, 32: 44, 64: 64}
    params = {8: 360_000, 16: 370_000, 32: 359_000, 64: 1_300_000}
    return [ModelInfo(f'hypernet-r{r}', f'HyperNet (r={r})', ('2', '3', '5', '11'),
                      params[r], HyperNetSetTransformer,
                      dict(rank=r, channels=widths[r], ff_channels=2 * widths[r]))
            for r in (8, 16, 32, 64)]


_ENTRIES = [
    ModelInfo('deep-sets', 'Deep Sets', ('2', '28', '29'), 36_000, DeepSets),
    ModelInfo('standard', 'Standard', ('2', '3', '6', '28', '29'), 208_000,
              _set_transformer('standard')),
    ModelInfo('st-film', 'ST + FiLM', ('2',), 225_000, FiLMSetTransformer),
    ModelInfo('st-large', 'ST-Large', ('2', '3', '4', '28'), 362_000,
              _set_transformer('st-large')),
    ModelInfo('st-xlarge', 'ST-XLarge', ('28',), 443_000, _set_transformer('standard'),
              dict(channels=92, ff_channels=200)),
    ModelInfo('st-meanpool', 'Standard (mean-pool head)', ('3',), 140_000,
              _set_transformer('st-meanpool')),
    *_depth_entries(),
    *_hypernet_entries(),
    ModelInfo('perceiver', 'Perceiver', ('2', '3', '28'), 341_000, Perceiver),
    ModelInfo('slot-attention', 'Slot Attention', ('28', '29'), 59_000, SlotAttention),
    ModelInfo('la-st', 'LA-ST (Linear Attn.)', ('3', '23'), 359_000,
              LinearAttentionSetTransformer, dict(channels=80, ff_channels=200)),
    ModelInfo('mamba-pma', 'Mamba + PMA', ('3',), 645_000, MambaPMA, order_dependent=True),
    ModelInfo('egnn', 'EGNN', ('1', '7'), 303_000, EGNN),
    ModelInfo('mz-slim', 'MZ-Slim', ('6',), 333_000, _set_transformer('mz-slim')),
    ModelInfo('mz-med', 'MZ-Med', ('6',), 344_000, _set_transformer('mz-med')),
    ModelInfo('mz-full', 'MZAttn-Full', ('2', '3', '6', '28'), 368_000,
              _set_transformer('mz-full')),
    ModelInfo('mz-large', 'MZAttn-Large', ('3', '28'), 417_000, _set_transformer('mz-large')),
    ModelInfo('mz-genqk', 'MZ-GenQK', ('10',), 415_000, MZGenQKSetTransformer),
    ModelInfo('mz-1l', 'MZAttn (1 layer)', ('1', '12'), 244_000, _set_transformer('mz-full'),
              dict(num_encoder_blocks=1)),
    ModelInfo('seq-transformer', 'Std-Transformer', ('13',), 44_000, SequenceTransformer,
              in_channels=32, order_dependent=True),
    ModelInfo('mz-seq-transformer', 'MZ-Transformer (L=4)', ('13',), 83_000,
              MZSequenceTransformer, in_channels=32, order_dependent=True),
    ModelInfo('mc-dropout', 'MC-Dropout', ('20', '21'), None, mc_dropout),
    ModelInfo('deep-ensemble', 'Deep Ensemble', ('20', '21'), None, deep_ensemble),
]

SIZE_FEATURE_MODELS = ('standard', 'st-large', 'st-meanpool', 'hypernet-r8', 'la-st',
                       'perceiver', 'slot-attention', 'mz-full', 'mz-1l')
r"""The attention models that are also registered as :obj:`{name}+logn`:
the same model with :obj:`size_feature='log'`, :math:`\log n` appended to
the pooled summary before the head (:mod:`mzlayers.size_feature`), a
variant of ours that the paper does not run."""


def _size_feature_entries(entries: list[ModelInfo]) -> list[ModelInfo]:
    by_name = {info.name: info for info in entries}
    return [dataclasses.replace(
        by_name[name], name=f'{name}+logn', paper_row=f'{by_name[name].paper_row} + log n',
        tables=(), paper_params=None,
        defaults={**by_name[name].defaults, 'size_feature': 'log'})
        for name in SIZE_FEATURE_MODELS]


#: name -> :class:`ModelInfo`, in the paper's order, then the
#: :obj:`SIZE_FEATURE_MODELS` variants.
REGISTRY: dict[str, ModelInfo] = {
    info.name: info for info in [*_ENTRIES, *_size_feature_entries(_ENTRIES)]}


def list_models() -> list[str]:
    r"""The registry names, in the paper's order."""
    return list(REGISTRY)


def model_info(name: str) -> ModelInfo:
    r"""The :class:`ModelInfo` of :obj:`name`."""
    if name not in REGISTRY:
        raise ValueError(f"Unknown model 'name'='{name}'{did_you_mean(name, REGISTRY)} "
                         f"(choose from {list_models()})")
    return REGISTRY[name]


def build_model(name: str, in_channels: int, out_channels: int,
                **overrides) -> torch.nn.Module:
    r"""Builds the model :obj:`name` with the paper's configuration.

    Every model maps a PyG batch :obj:`(x [N, in_channels], batch [N],
    dim_size)` to :obj:`[B, out_channels]`; MZ models return
    :obj:`(pred, ihw)` and the uncertainty wrappers :obj:`(mean, std)`.

    Args:
        name (str): A name of :func:`list_models`.
        in_channels (int): Input feature size per element.
        out_channels (int): Prediction size per set.
        **overrides: Constructor arguments replacing the paper's (for
            ``'mc-dropout'`` / ``'deep-ensemble'``: :obj:`base`,
            :obj:`num_samples` / :obj:`num_members` and the base model's
            arguments).
    """
    info = model_info(name)
    return info.builder(in_channels, out_channels, **{**info.defaults, **overrides})


def models_table(out_channels: int = 1) -> str:
    r"""A markdown table of every registry model: name, paper row, tables,
    :math:`d_{in}`, our parameter count (:func:`~mzlayers.count_parameters`),
    the paper's and the relative difference."""
    lines = ['| name | paper row | tables | d_in | ours | paper | diff |',
             '| --- | --- | --- | ---: | ---: | ---: | ---: |']
    for info in REGISTRY.values():
        ours = count_parameters(build_model(info.name, info.in_channels, out_channels))
        paper, diff = '-', '-'
        if info.paper_params is not None:
            paper = f'{info.paper_params:,}'
            diff = f'{100 * (ours - info.paper_params) / info.paper_params:+.1f}%'
        lines.append(f'| `{info.name}` | {info.paper_row} | {", ".join(info.tables) or "-"} | '
                     f'{info.in_channels} | {ours:,} | {paper} | {diff} |')
    return '\n'.join(lines)
