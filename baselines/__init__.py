r"""Every model the paper compares against, under one interface.

All models take a flat PyG batch :obj:`x [N, F]`, :obj:`batch [N]` (and an
optional :obj:`dim_size`) and return :obj:`[B, out_channels]`, or
:obj:`(pred, ihw)` for the MZ models.  Build them by the paper's row label::

    from mzattn.baselines import build_model, list_models
    model = build_model('standard', in_channels=8, out_channels=1)
"""
from mzattn.baselines.registry import (
    REGISTRY,
    ModelInfo,
    build_model,
    list_models,
    model_info,
)

__all__ = [
    'ModelInfo',
    'REGISTRY',
    'build_model',
    'list_models',
    'model_info',
]
