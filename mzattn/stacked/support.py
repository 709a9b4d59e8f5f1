r"""Which set models :class:`~mzattn.stacked.StackedSeeds` can run.

Replicas run under :func:`torch.func.vmap`, which batches every operation
of the model over the replica dimension.  Custom autograd functions without
a :obj:`setup_context` cannot be batched; measured on every registry model
(:obj:`tests/stacked/test_support.py`):

* **stackable**: every registry model except :obj:`mamba-pma`, i.e. Deep
  Sets, the Set Transformers (Standard, ST-Large, mean-pool, FiLM, depth
  1--6, ``+logn``), HyperNet, Perceiver, Slot Attention, LA-ST, EGNN, the
  sequence Transformers, every MZ variant (the generator path runs as plain
  autograd inside a transform, :mod:`mzlayers.generator_path`), MC-Dropout
  and the Deep Ensemble;
* **not stackable**: :obj:`mamba-pma` (its selective scan,
  :mod:`mzattn.baselines.selective_scan`, is a custom autograd function);
  train its seeds as separate processes (``--jobs``, ``--cells-per-gpu``).

The attention kernel matters too: the segment kernels
(:mod:`mzlayers.kernels.segment`) are custom autograd functions, so stacked
replicas need the dense kernel.  Padded, masked batches
(:func:`~mzattn.stacked.stack_sets`) always run it; on a shared ragged
layout :obj:`backend='auto'` picks it on CUDA, and on CPU when the sets all
have one size: build the replicas with :obj:`backend='dense'` otherwise.
"""
import torch

from mzattn.baselines.mamba_pma import MambaPMA
from mzlayers.layout import SetLayout

UNSTACKABLE: dict[type, str] = {
    MambaPMA: "its selective scan (mzattn/baselines/selective_scan.py) is a custom autograd "
              "function that torch.func.vmap cannot batch",
}
r"""Module types that :func:`torch.func.vmap` cannot run, with the reason."""


def unstackable_reason(model: torch.nn.Module) -> str | None:
    r"""Why :obj:`model` cannot be stacked (:obj:`UNSTACKABLE`), or
    :obj:`None` if it can."""
    for module in model.modules():
        for kind, reason in UNSTACKABLE.items():
            if isinstance(module, kind):
                return f"{type(model).__name__} holds a {kind.__name__}: {reason}"
    return None


def kernel_problem(model: torch.nn.Module, layout: SetLayout | None,
                   device: torch.device) -> str | None:
    r"""Why :obj:`model` would run a segment kernel, which
    :func:`torch.func.vmap` cannot batch, on a batch of :obj:`layout` on
    :obj:`device`; :obj:`None` if it runs the dense kernel throughout.
    Without a layout, :obj:`'auto'` counts as a problem on CPU."""
    ragged = layout is None or (layout.mask is None and not layout.equal_sizes)
    for module in model.modules():
        backend = getattr(module, 'backend', None)
        if backend == 'segment' or (backend == 'auto' and ragged and device.type == 'cpu'):
            return (f"{type(module).__name__} has backend={backend!r}, which runs the segment "
                    "kernel on ragged sets on CPU; build the replicas with backend='dense'")
    return None
