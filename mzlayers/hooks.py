r"""Whether calling a module runs forward hooks: the layers that fuse a
module's work into one autograd function (:class:`~mzlayers.FeedForward`,
the MZ-MAB's generator path) call it as a module instead, so that the hooks
see and may change its inputs and output."""
import torch


def has_forward_hooks(module: torch.nn.Module) -> bool:
    r"""Whether calling :obj:`module` runs forward (pre-)hooks, its own or
    global ones (e.g. those of :mod:`mzattn.repro.analysis`)."""
    hooks = torch.nn.modules.module
    return bool(module._forward_hooks or module._forward_pre_hooks
                or hooks._global_forward_hooks or hooks._global_forward_pre_hooks)
