r"""Standard multi-head attention between ragged sets."""

import torch
from torch import Tensor

from mzlayers.attention import BACKENDS, set_attention
from mzlayers.layout import SetLayout
from mzlayers.linear import Linear
from mzlayers.validate import check_choice


class MultiheadSetAttention(torch.nn.Module):
    r"""Multi-head scaled dot-product attention (Vaswani et al., 2017) from
    queries to the keys of the same set, on a flat PyG batch:

    .. math::
        \mathrm{MHA}(X, Y) = \mathbf{W}_O \big\Vert_{h=1}^{H}
        \mathrm{softmax}\left(\frac{X \mathbf{W}_Q^{(h)}
        (Y \mathbf{W}_K^{(h)})^{\top}}{\sqrt{d_k}}\right) Y \mathbf{W}_V^{(h)}

    with the softmax restricted to each set.  It equals
    :class:`torch.nn.MultiheadAttention` with the same weights (biases
    included), without padding.

    Variants change one step by overriding a method instead of
    :meth:`forward`: :meth:`values` (the value map, e.g. FiLM or a
    hypernetwork in :mod:`mzattn.baselines`) or :meth:`attend` (the kernel,
    e.g. linear attention).  The blocks build their attention through a
    factory argument (:obj:`attention=` of :class:`~mzlayers.MAB` and the
    models), so a variant is constructed in place, never swapped in.

    Args:
        channels (int): Model width :math:`d` (divisible by :obj:`heads`).
        heads (int, optional): Number of heads :math:`H`. (default: :obj:`1`)
        dropout (float, optional): Dropout on attention weights.
            (default: :obj:`0.`)
        backend (str, optional): ``'auto'``, ``'segment'``, ``'dense'`` or
            ``'varlen'`` (see :mod:`mzlayers.attention`). (default: :obj:`'auto'`)

    Shapes:
        - **input:** queries :obj:`[N_q, d]` (or :obj:`[M, d]` learned
          queries), keys/values :obj:`[N, d]`
        - **output:** :obj:`[N_q, d]` (or :obj:`[B * M, d]`)
    """
    def __init__(
        self,
        channels: int,
        heads: int = 1,
        dropout: float = 0.0,
        backend: str = 'auto',
    ):
        super().__init__()
        if channels % heads != 0:
            raise ValueError(f"'channels' ({channels}) must be divisible by "
                             f"'heads' ({heads})")
        check_choice('backend', backend, BACKENDS)
        self.channels = channels
        self.heads = heads
        self.head_channels = channels // heads
        self.dropout = dropout
        self.backend = backend
        self.lin_q = Linear(channels, channels)
        self.lin_k = Linear(channels, channels)
        self.lin_v = Linear(channels, channels)
        self.lin_o = Linear(channels, channels)
        MultiheadSetAttention.reset_parameters(self)

    def reset_parameters(self):
        for lin in (self.lin_q, self.lin_k, self.lin_v, self.lin_o):
            torch.nn.init.xavier_uniform_(lin.weight)
            torch.nn.init.zeros_(lin.bias)

    def split_heads(self, x: Tensor) -> Tensor:
        r""":obj:`[*, d]` -> :obj:`[*, H, d_k]`."""
        return x.view(*x.shape[:-1], self.heads, self.head_channels)

    def values(self, y: Tensor, key_layout: SetLayout) -> Tensor:
        r"""The values :math:`\mathbf{W}_V \mathbf{y}_j + \mathbf{b}_V`,
        :obj:`[N, d]`, of the keys :obj:`y` :obj:`[N, d]` (the sets of
        :obj:`key_layout`)."""
        return self.lin_v(y)

    def attend(self, q: Tensor, k: Tensor, v: Tensor, key_layout: SetLayout,
               query_layout: SetLayout | None) -> Tensor:
        r"""Runs the configured kernel on projected tensors, heads
        concatenated: :obj:`[*, H d_k]` queries and keys and :obj:`[*, H d_v]`
        values to :obj:`[*, H d_v]`."""
        dropout = self.dropout if self.training else 0.0
        return set_attention(q, k, v, key_layout, query_layout, self.backend, dropout,
                             heads=self.heads)

    def forward(self, x: Tensor, y: Tensor, key_layout: SetLayout,
                query_layout: SetLayout | None = None) -> Tensor:
        q, k, v = self.lin_q(x), self.lin_k(y), self.values(y, key_layout)
        return self.lin_o(self.attend(q, k, v, key_layout, query_layout))

    def __repr__(self) -> str:
        return (f'{self.__class__.__name__}({self.channels}, heads={self.heads}, '
                f'backend={self.backend})')
