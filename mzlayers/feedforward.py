r"""The row-wise feed-forward network of the Set Transformer blocks.

Its training step runs as one autograd function (:class:`_FeedForwardFunction`)
instead of four modules: the hidden activation is kept once (after ReLU and
dropout, where autograd kept it twice and a float dropout mask beside it),
dropout is PyTorch's fused :func:`torch.native_dropout` (one operator, which
:func:`~torch.nn.functional.dropout` runs on CUDA only; on CPU it dispatches
four), and backward is ten operators where autograd's composition dispatches
fifteen.  A step of a small model on a GPU is launch-bound (issue 34,
:file:`docs/benchmarks.md`, "Few launches").  The function is
:class:`~mzlayers.linear.Linear`'s, extended to the two layers with their
activation: same kernels on the same operands, so the gradients equal
autograd's (:file:`tests/mzlayers/test_feedforward.py`).

The modules stay what the state dict and the hooks see: inside a
:mod:`torch.func` transform, under :func:`torch.compile` (which fuses the
step itself), without gradients, or when a forward hook would see one of
them (:func:`~mzlayers.hooks.has_forward_hooks`), the network runs module by
module.
"""
import torch
from torch import Tensor
from torch.nn import Dropout, Identity, ReLU, Sequential

from mzlayers.hooks import has_forward_hooks
from mzlayers.linear import Linear, autocast_operands


class FeedForward(torch.nn.Module):
    r"""Row-wise feed-forward network
    :math:`\mathbf{W}_2\,\mathrm{Dropout}(\mathrm{ReLU}(\mathbf{W}_1 \mathbf{x}
    + \mathbf{b}_1)) + \mathbf{b}_2`, applied to every row of :obj:`x`.

    Args:
        channels (int): Input and output size.
        hidden_channels (int): Hidden size.
        dropout (float, optional): Dropout after the activation (none at
            all when :obj:`0.`, so that training keeps no copy of the hidden
            layer).
            (default: :obj:`0.`)
        bias (bool, optional): If set to :obj:`False`, both linear maps have
            no bias (used on zonotope generators, so that a zero generator
            stays zero). (default: :obj:`True`)

    Shapes:
        - **input:** :obj:`[*, channels]`
        - **output:** :obj:`[*, channels]`
    """
    def __init__(
        self,
        channels: int,
        hidden_channels: int,
        dropout: float = 0.0,
        bias: bool = True,
    ):
        super().__init__()
        self.channels = channels
        self.hidden_channels = hidden_channels
        self.dropout = dropout
        self.net = Sequential(
            Linear(channels, hidden_channels, bias=bias),
            ReLU(),
            Dropout(dropout) if dropout > 0 else Identity(),
            Linear(hidden_channels, channels, bias=bias),
        )
        self.reset_parameters()

    def reset_parameters(self):
        for lin in (self.net[0], self.net[3]):
            torch.nn.init.xavier_uniform_(lin.weight)
            if lin.bias is not None:
                torch.nn.init.zeros_(lin.bias)

    def forward(self, x: Tensor) -> Tensor:
        if not self._fused():
            return self.net(x)
        first, last = self.net[0], self.net[3]
        p = self.dropout if self.training else 0.0
        x, *weights = autocast_operands(x, first.weight, first.bias, last.weight, last.bias)
        if x.dim() == 2:
            return _FeedForwardFunction.apply(x, p, *weights)
        out = _FeedForwardFunction.apply(x.reshape(-1, x.size(-1)), p, *weights)
        return out.view(*x.shape[:-1], out.size(-1))

    def _fused(self) -> bool:
        # see the module docstring
        return (torch.is_grad_enabled() and not torch.compiler.is_compiling()
                and not torch._C._are_functorch_transforms_active()
                and not any(has_forward_hooks(m) for m in self.net.modules()))

    def __repr__(self) -> str:
        return f'{self.__class__.__name__}({self.channels}, {self.hidden_channels})'


class _FeedForwardFunction(torch.autograd.Function):
    r""":obj:`Dropout_p(ReLU(x W_1^T + b_1)) W_2^T + b_2` on rows :obj:`x`
    :obj:`[N, i]`, keeping :obj:`x`, the weights, the hidden activation
    :obj:`[N, h]` and the dropout mask (boolean) for backward."""
    @staticmethod
    def forward(ctx, x: Tensor, p: float, weight1: Tensor, bias1: Tensor | None,
                weight2: Tensor, bias2: Tensor | None) -> Tensor:
        hidden = torch.nn.functional.linear(x, weight1, bias1).relu_()
        mask = None
        if p > 0:
            hidden, mask = torch.native_dropout(hidden, p, True)
        ctx.save_for_backward(x, weight1, hidden, weight2, mask)
        ctx.scale = 1.0 / (1.0 - p) if p < 1 else 0.0
        return torch.nn.functional.linear(hidden, weight2, bias2)

    @staticmethod
    def backward(ctx, grad: Tensor):
        x, weight1, hidden, weight2, mask = ctx.saved_tensors
        needs = ctx.needs_input_grad
        grad_hidden = grad.mm(weight2)
        if mask is not None:
            grad_hidden = torch.ops.aten.native_dropout_backward(grad_hidden, mask, ctx.scale)
        grad_weight2 = grad.t().mm(hidden) if needs[4] else None
        grad_bias2 = grad.sum(0) if needs[5] else None
        # hidden > 0 where ReLU passed and dropout kept (elsewhere the gradient
        # is 0); rebinding the name frees each [N, h] gradient once used, as
        # autograd frees it between the modules' backward nodes
        grad_hidden = torch.ops.aten.threshold_backward(grad_hidden, hidden, 0)
        del hidden
        return (grad_hidden.mm(weight1) if needs[0] else None, None,
                grad_hidden.t().mm(x) if needs[2] else None,
                grad_hidden.sum(0) if needs[3] else None,
                grad_weight2, grad_bias2)
