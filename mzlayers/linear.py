r"""A linear layer whose backward dispatches half the operators of
:class:`torch.nn.Linear`'s.

:func:`torch.nn.functional.linear` on rows :obj:`[N, i]` runs as
:obj:`addmm(b, x, W.t())`, and autograd differentiates that composition: the
transposes of the product's operands and of its result, the transpose
:obj:`W.t()` and the bias broadcast, eight operators per layer (four
transposes, two products, a sum and a view) where three kernels do the
work.  :class:`Linear` differentiates the map itself,

.. math::
    \frac{\partial \ell}{\partial \mathbf{x}} = \mathbf{g} \mathbf{W}, \qquad
    \frac{\partial \ell}{\partial \mathbf{W}} = \mathbf{g}^{\top} \mathbf{x},
    \qquad \frac{\partial \ell}{\partial \mathbf{b}} = \textstyle\sum_n \mathbf{g}_n,

four operators: the same kernels on the same operands as autograd's, so the
gradients are bit-identical (checked in :file:`tests/mzlayers/test_linear.py`).
A step of a small model on a GPU is launch-bound, and a Set Transformer has
about 40 linear layers (issue 34, :file:`docs/benchmarks.md`, "Few launches").

Under :func:`torch.autocast` the operands are cast outside the function, as
autocast casts them for :func:`~torch.nn.functional.linear`, so that
autograd casts the gradients back.  Inside a :mod:`torch.func` transform
(:func:`~torch.func.vmap` over stacked replicas, :mod:`mzattn.stacked`) and
without gradients the layer runs :func:`~torch.nn.functional.linear` itself.
"""
import torch
import torch.nn.functional as F
from torch import Tensor


class Linear(torch.nn.Linear):
    r""":class:`torch.nn.Linear` (same parameters, initialisation and state
    dict) with a backward of four operators (see the module docstring).

    Args:
        in_features (int): Input size :math:`i`.
        out_features (int): Output size :math:`o`.
        bias (bool, optional): If set to :obj:`False`, the layer has no bias.
            (default: :obj:`True`)

    Shapes:
        - **input:** :obj:`[*, i]`
        - **output:** :obj:`[*, o]`
    """
    def forward(self, x: Tensor) -> Tensor:
        return linear(x, self.weight, self.bias)


def linear(x: Tensor, weight: Tensor, bias: Tensor | None = None) -> Tensor:
    r""":func:`torch.nn.functional.linear` with the backward of
    :class:`Linear`, for a weight that is not a layer's own parameter (e.g.
    a product of two).

    Shapes:
        - **input:** :obj:`x` :obj:`[*, i]`, :obj:`weight` :obj:`[o, i]`,
          :obj:`bias` :obj:`[o]`
        - **output:** :obj:`[*, o]`
    """
    if not torch.is_grad_enabled() or torch._C._are_functorch_transforms_active():
        return F.linear(x, weight, bias)
    x, weight, bias = autocast_operands(x, weight, bias)
    if x.dim() == 2:
        return _LinearFunction.apply(x, weight, bias)
    out = _LinearFunction.apply(x.reshape(-1, x.size(-1)), weight, bias)
    return out.view(*x.shape[:-1], out.size(-1))


def autocast_operands(*tensors: Tensor | None) -> tuple[Tensor | None, ...]:
    r"""The operands as autocast casts them for a linear map: floating
    tensors but :obj:`float64` to the autocast dtype of their device."""
    device_type = tensors[0].device.type
    if not torch.is_autocast_enabled(device_type):
        return tensors
    dtype = torch.get_autocast_dtype(device_type)
    return tuple(t if t is None or t.dtype == torch.float64 else t.to(dtype)
                 for t in tensors)


class _LinearFunction(torch.autograd.Function):
    r""":obj:`x W^T + b` on rows :obj:`x` :obj:`[N, i]`."""
    @staticmethod
    def forward(ctx, x: Tensor, weight: Tensor, bias: Tensor | None) -> Tensor:
        ctx.save_for_backward(x, weight)
        return F.linear(x, weight, bias)

    @staticmethod
    def backward(ctx, grad: Tensor):
        x, weight = ctx.saved_tensors
        needs_x, needs_weight, needs_bias = ctx.needs_input_grad
        return (grad.mm(weight) if needs_x else None,
                grad.t().mm(x) if needs_weight else None,
                grad.sum(0) if needs_bias else None)
