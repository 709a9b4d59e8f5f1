r"""Every model the paper compares against, under one interface.

All models take a flat PyG batch :obj:`x [N, F]`, :obj:`batch [N]` (and an
optional :obj:`dim_size`) and return :obj:`[B, out_channels]`, or
:obj:`(pred, ihw)` for the MZ models (:obj:`(mean, std)` for the
uncertainty wrappers).  Build them by the paper's row label::

    from mzattn.baselines import build_model, list_models
    model = build_model('standard', in_channels=8, out_channels=1)

``python -m mzattn.baselines`` prints every model's parameter count beside
the paper's.  ``mamba-pma``, ``seq-transformer`` and ``mz-seq-transformer``
depend on the element order; every other model is permutation-invariant.
"""
from mzattn.baselines.deep_sets import DeepSets
from mzattn.baselines.egnn import EGNN, EGNNConv, fully_connected_edges
from mzattn.baselines.film import FiLMSetAttention, FiLMSetTransformer
from mzattn.baselines.hypernet import HyperNetSetAttention, HyperNetSetTransformer
from mzattn.baselines.linear_attention import (
    LinearAttentionSetTransformer,
    LinearSetAttention,
)
from mzattn.baselines.mamba_pma import MambaPMA
from mzattn.baselines.mz_genqk import GenQKAttention, MZGenQKSetTransformer
from mzattn.baselines.perceiver import Perceiver
from mzattn.baselines.registry import (
    REGISTRY,
    SIZE_FEATURE_MODELS,
    ModelInfo,
    build_model,
    list_models,
    model_info,
    models_table,
)
from mzattn.baselines.sequence import (
    MZSequenceTransformer,
    PositionalEncoding,
    SequenceTransformer,
)
from mzattn.baselines.slot_attention import SlotAttention
from mzattn.baselines.uncertainty import DeepEnsemble, MCDropout
from mzattn.baselines.width import match_width

__all__ = [
    'ModelInfo',
    'REGISTRY',
    'SIZE_FEATURE_MODELS',
    'build_model',
    'list_models',
    'model_info',
    'models_table',
    'match_width',
    'DeepSets',
    'FiLMSetAttention',
    'FiLMSetTransformer',
    'HyperNetSetAttention',
    'HyperNetSetTransformer',
    'LinearSetAttention',
    'LinearAttentionSetTransformer',
    'Perceiver',
    'SlotAttention',
    'MambaPMA',
    'EGNNConv',
    'EGNN',
    'fully_connected_edges',
    'GenQKAttention',
    'MZGenQKSetTransformer',
    'PositionalEncoding',
    'SequenceTransformer',
    'MZSequenceTransformer',
    'MCDropout',
    'DeepEnsemble',
]
