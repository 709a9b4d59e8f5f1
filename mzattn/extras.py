r"""Optional dependencies and the extra that installs each.

The core install (``pip install .`` from a checkout) holds what :mod:`mzlayers` and the
registry's pure-PyTorch models need: torch, torch-geometric, numpy and scipy.
Everything else is an extra of the distribution, imported where it is used
through :func:`require`, so that a missing package names its extra::

    h5py = require('h5py', 'data')
"""
import importlib
from types import ModuleType

#: The extras of ``pyproject.toml`` and what each is for.
EXTRAS = {
    'repro': 'the reproduction harness (Lightning, torchmetrics, matplotlib, filelock, submitit, '
             'PyYAML)',
    'data': 'the real-data loaders (RDKit, qm9pack, h5py, scikit-learn, torchvision)',
    'mamba': 'the Mamba + PMA baseline (mambapy)',
    'docker': 'mzattn-repro docker (docker-py)',
}


class MissingExtraError(ModuleNotFoundError):
    r"""An optional dependency is not installed; the message names the
    extra that installs it."""


def require(module: str, extra: str, feature: str | None = None) -> ModuleType:
    r"""Imports and returns :obj:`module`, or raises a
    :class:`MissingExtraError` that says ``pip install 'mzattn[extra]'``.

    Args:
        module (str): The module to import, e.g. ``'rdkit.Chem'``.
        extra (str): The extra that installs it (a key of :obj:`EXTRAS`).
        feature (str, optional): What needs it, for the message
            (default: the extra's description).
    """
    if extra not in EXTRAS:
        raise ValueError(f"unknown extra '{extra}' (one of {sorted(EXTRAS)})")
    try:
        return importlib.import_module(module)
    except ImportError as error:
        top = module.split('.')[0]
        if error.name is not None and error.name.split('.')[0] != top:
            raise  # the package is there but one of its own imports failed
        what = feature or EXTRAS[extra]
        raise MissingExtraError(
            f"'{module}' is not installed: {what} needs the '{extra}' extra. "
            f"Install it with: pip install 'mzattn[{extra}]' (or 'mzattn[all]')",
            name=top) from error


#: The extra that installs each optional top-level module.
EXTRA_OF_MODULE = {
    'lightning': 'repro', 'torchmetrics': 'repro', 'matplotlib': 'repro',
    'filelock': 'repro', 'submitit': 'repro', 'yaml': 'repro',
    'rdkit': 'data', 'qm9pack': 'data', 'h5py': 'data', 'sklearn': 'data', 'torchvision': 'data',
    'mambapy': 'mamba', 'docker': 'docker',
}


def missing_extra_hint(error: ImportError) -> str | None:
    r"""``"needs the 'repro' extra: pip install 'mzattn[repro]'"`` when
    :obj:`error` is about an optional module, else :obj:`None`."""
    extra = EXTRA_OF_MODULE.get((error.name or '').split('.')[0])
    if extra is None:
        return None
    return (f"needs '{error.name}', from the '{extra}' extra: "
            f"pip install 'mzattn[{extra}]' (or 'mzattn[all]')")
