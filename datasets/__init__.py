r"""Datasets of the paper: synthetic tasks with exact ground truth
(:mod:`mzattn.datasets.synthetic`) and loaders for real data (QM9,
ModelNet40, ScanObjectNN, ResNet-feature and pixel point clouds, the
Neural-Process image completion and tabular meta-regression episodes).

Import-light: the loaders are imported on first access."""
import importlib

_LAZY = {
    "QM9": "qm9",
    "QM9_TARGETS": "qm9",
    "qm9_split": "qm9",
    "ModelNet40": "modelnet",
    "ScanObjectNN": "scanobjectnn",
    "ResNetFeatureClouds": "resnet_features",
    "PixelClouds": "pixel_clouds",
    "EpisodeSets": "episodes",
    "ImageCompletion": "image_completion",
    "TabularMetaRegression": "tabular_meta_regression",
    "RandomYRotateJitter": "_io",
}

__all__ = sorted(_LAZY)


def __getattr__(name: str):
    if name in _LAZY:
        return getattr(importlib.import_module(f".{_LAZY[name]}", __name__), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
