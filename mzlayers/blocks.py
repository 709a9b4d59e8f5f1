r"""The Set Transformer blocks MAB, SAB, ISAB and PMA (Lee et al., 2019) on
flat PyG batches.  The baselines of :mod:`mzattn.baselines` reuse them."""

from collections.abc import Callable

import torch
from torch import Tensor
from torch.nn import LayerNorm, Parameter

from mzlayers.feedforward import FeedForward
from mzlayers.layout import SetLayout, resolve_layout
from mzlayers.linear import Linear
from mzlayers.multihead import MultiheadSetAttention
from mzlayers.validate import parameter_dtype

#: A factory of attention modules: called as
#: :obj:`attention(channels, heads=heads, dropout=dropout, backend=backend)`,
#: e.g. :class:`~mzlayers.MultiheadSetAttention` or a subclass (with
#: :func:`functools.partial` for its own options).
AttentionFactory = Callable[..., torch.nn.Module]


def attention_repr(attn: torch.nn.Module, default: type) -> str:
    r"""The :obj:`attention=` part of a block's :obj:`repr`, empty for the
    default attention class."""
    return '' if type(attn) is default else f', attention={type(attn).__name__}'


def broadcast_queries(x: Tensor, query_layout: SetLayout | None,
                      key_layout: SetLayout) -> Tensor:
    r"""Learned queries :obj:`[M, *]` repeated for every set :obj:`[B * M, *]`
    (set-major); set-element queries are returned unchanged."""
    if query_layout is not None:
        return x
    return x.repeat(key_layout.num_sets, *([1] * (x.dim() - 1)))


class MAB(torch.nn.Module):
    r"""The Multihead Attention Block

    .. math::
        \mathrm{MAB}(X, Y) = \mathrm{LN}(H + \mathrm{FFN}(H)), \qquad
        H = \mathrm{LN}(X + \mathrm{MHA}(X, Y)).

    Unlike the official Set Transformer code, attention is masked per set,
    scaled by :math:`\sqrt{d_k}` (the head width), and has its own output
    projection :math:`\mathbf{W}_O`.

    Args:
        channels (int): Model width :math:`d`.
        heads (int, optional): Number of heads. (default: :obj:`1`)
        ff_channels (int, optional): FFN hidden width :math:`d_{ff}`
            (:obj:`None` = :obj:`2 * channels`). (default: :obj:`None`)
        layer_norm (bool, optional): Apply the two layer norms.
            (default: :obj:`True`)
        dropout (float, optional): Dropout on attention weights and in the
            FFN. (default: :obj:`0.`)
        backend (str, optional): Attention kernel, ``'auto'``, ``'segment'``,
            ``'dense'`` or ``'varlen'``. (default: :obj:`'auto'`)
        attention (callable, optional): Builds the block's attention,
            :obj:`attention(channels, heads=heads, dropout=dropout,
            backend=backend)`, a module with
            :class:`~mzlayers.MultiheadSetAttention`'s :obj:`forward`; e.g.
            :obj:`functools.partial(HyperNetSetAttention, rank=8)`.
            (default: :class:`~mzlayers.MultiheadSetAttention`)

    Options after :obj:`heads` are keyword-only.

    Shapes:
        - **input:** :obj:`x` queries :obj:`[N_q, d]` (set elements with
          :obj:`query_layout`) or :obj:`[M, d]` (learned, shared by all sets),
          :obj:`y` :obj:`[N, d]` with :obj:`key_layout`
        - **output:** :obj:`[N_q, d]` or :obj:`[B * M, d]`
    """
    def __init__(
        self,
        channels: int,
        heads: int = 1,
        *,
        ff_channels: int | None = None,
        layer_norm: bool = True,
        dropout: float = 0.0,
        backend: str = 'auto',
        attention: AttentionFactory = MultiheadSetAttention,
    ):
        super().__init__()
        self.channels = channels
        self.heads = heads
        self.ff_channels = ff_channels or 2 * channels
        self.layer_norm = layer_norm
        self.dropout = dropout
        self.backend = backend
        self.attn = attention(channels, heads=heads, dropout=dropout, backend=backend)
        self.ffn = FeedForward(channels, self.ff_channels, dropout)
        self.norm1 = LayerNorm(channels) if layer_norm else torch.nn.Identity()
        self.norm2 = LayerNorm(channels) if layer_norm else torch.nn.Identity()

    def reset_parameters(self):
        self.attn.reset_parameters()
        self.ffn.reset_parameters()
        for norm in (self.norm1, self.norm2):
            if isinstance(norm, LayerNorm):
                norm.reset_parameters()

    def forward(self, x: Tensor, y: Tensor, key_layout: SetLayout,
                query_layout: SetLayout | None = None) -> Tensor:
        h = self.attn(x, y, key_layout, query_layout)
        h = self.norm1(broadcast_queries(x, query_layout, key_layout) + h)
        return self.norm2(h + self.ffn(h))

    def __repr__(self) -> str:
        return (f'{self.__class__.__name__}({self.channels}, heads={self.heads}, '
                f'ff_channels={self.ff_channels}, layer_norm={self.layer_norm}, '
                f'dropout={self.dropout}, backend={self.backend}'
                f'{attention_repr(self.attn, MultiheadSetAttention)})')


class SAB(MAB):
    r"""The Set Attention Block :math:`\mathrm{SAB}(X) = \mathrm{MAB}(X, X)`,
    permutation-equivariant.  Arguments as in :class:`MAB`.

    Shapes:
        - **input:** :obj:`x` :obj:`[N, d]`, :obj:`batch` :obj:`[N]`
        - **output:** :obj:`[N, d]`
    """
    def forward(self, x: Tensor, batch: Tensor | None = None,
                dim_size: int | None = None, *,
                layout: SetLayout | None = None) -> Tensor:
        layout = resolve_layout(x, batch, dim_size, self.channels, layout,
                                parameter_dtype(self))
        return super().forward(x, x, layout, layout)


class ISAB(torch.nn.Module):
    r"""The Induced Set Attention Block

    .. math::
        \mathrm{ISAB}_m(X) = \mathrm{MAB}(X, H), \qquad H = \mathrm{MAB}(I, X)

    with :math:`m` learned inducing points :math:`I`; cost linear in the set
    size.  Permutation-equivariant.

    Args:
        channels (int): Model width :math:`d`.
        num_induced_points (int): Number of inducing points :math:`m`.
        heads (int, optional): Number of heads. (default: :obj:`1`)
        ff_channels (int, optional): FFN hidden width. (default: :obj:`None`)
        layer_norm (bool, optional): Apply layer norms. (default: :obj:`True`)
        dropout (float, optional): Dropout. (default: :obj:`0.`)
        backend (str, optional): Attention kernel. (default: :obj:`'auto'`)
        attention (callable, optional): Builds the attention of both MABs
            (see :class:`MAB`).
            (default: :class:`~mzlayers.MultiheadSetAttention`)
        induced_attention (callable, optional): Builds the attention of the
            first MAB only, :math:`\mathrm{MAB}(I, X)` (the inducing points
            attending to the set); :obj:`None` = :obj:`attention`.
            (default: :obj:`None`)

    Options after :obj:`heads` are keyword-only.

    Shapes:
        - **input:** :obj:`x` :obj:`[N, d]`, :obj:`batch` :obj:`[N]`
        - **output:** :obj:`[N, d]`
    """
    def __init__(
        self,
        channels: int,
        num_induced_points: int,
        heads: int = 1,
        *,
        ff_channels: int | None = None,
        layer_norm: bool = True,
        dropout: float = 0.0,
        backend: str = 'auto',
        attention: AttentionFactory = MultiheadSetAttention,
        induced_attention: AttentionFactory | None = None,
    ):
        super().__init__()
        self.channels = channels
        self.num_induced_points = num_induced_points
        self.heads = heads
        self.backend = backend
        self.induced = Parameter(torch.empty(num_induced_points, channels))
        args = dict(ff_channels=ff_channels, layer_norm=layer_norm, dropout=dropout,
                    backend=backend)
        induced_attention = attention if induced_attention is None else induced_attention
        self.mab1 = MAB(channels, heads, attention=induced_attention, **args)
        self.mab2 = MAB(channels, heads, attention=attention, **args)
        self.reset_parameters()

    def reset_parameters(self):
        torch.nn.init.xavier_uniform_(self.induced)
        self.mab1.reset_parameters()
        self.mab2.reset_parameters()

    def forward(self, x: Tensor, batch: Tensor | None = None,
                dim_size: int | None = None, *,
                layout: SetLayout | None = None) -> Tensor:
        layout = resolve_layout(x, batch, dim_size, self.channels, layout,
                                parameter_dtype(self))
        h = self.mab1(self.induced, x, layout)  # [B * m, d]
        return self.mab2(x, h, layout.pooled(self.num_induced_points), layout)

    def __repr__(self) -> str:
        return (f'{self.__class__.__name__}({self.channels}, '
                f'num_induced_points={self.num_induced_points}, heads={self.heads}, '
                f'backend={self.backend})')


class PMA(torch.nn.Module):
    r"""Pooling by Multihead Attention

    .. math::
        \mathrm{PMA}_k(X) = \mathrm{MAB}(S, \mathrm{rFF}(X))

    with :math:`k` learned seed vectors :math:`S` and
    :math:`\mathrm{rFF}(x) = \mathrm{ReLU}(\mathbf{W} x + \mathbf{b})`.
    Permutation-invariant.  A set without elements pools to exactly zero.

    Args:
        channels (int): Model width :math:`d`.
        num_seed_points (int, optional): Number of seeds :math:`k`.
            (default: :obj:`1`)
        heads (int, optional): Number of heads. (default: :obj:`1`)
        ff_channels (int, optional): FFN hidden width. (default: :obj:`None`)
        layer_norm (bool, optional): Apply layer norms. (default: :obj:`True`)
        dropout (float, optional): Dropout. (default: :obj:`0.`)
        backend (str, optional): Attention kernel. (default: :obj:`'auto'`)
        attention (callable, optional): Builds the MAB's attention (see
            :class:`MAB`). (default: :class:`~mzlayers.MultiheadSetAttention`)

    Options after :obj:`heads` are keyword-only.

    Shapes:
        - **input:** :obj:`x` :obj:`[N, d]`, :obj:`batch` :obj:`[N]`
        - **output:** :obj:`(out [B * k, d], out_batch [B * k])`
    """
    def __init__(
        self,
        channels: int,
        num_seed_points: int = 1,
        heads: int = 1,
        *,
        ff_channels: int | None = None,
        layer_norm: bool = True,
        dropout: float = 0.0,
        backend: str = 'auto',
        attention: AttentionFactory = MultiheadSetAttention,
    ):
        super().__init__()
        self.channels = channels
        self.num_seed_points = num_seed_points
        self.heads = heads
        self.backend = backend
        self.seeds = Parameter(torch.empty(num_seed_points, channels))
        self.lin = Linear(channels, channels)
        self.mab = MAB(channels, heads, ff_channels=ff_channels, layer_norm=layer_norm,
                       dropout=dropout, backend=backend, attention=attention)
        self.reset_parameters()

    def reset_parameters(self):
        torch.nn.init.xavier_uniform_(self.seeds)
        torch.nn.init.xavier_uniform_(self.lin.weight)
        torch.nn.init.zeros_(self.lin.bias)
        self.mab.reset_parameters()

    def forward(self, x: Tensor, batch: Tensor | None = None,
                dim_size: int | None = None, *,
                layout: SetLayout | None = None) -> tuple[Tensor, Tensor]:
        layout = resolve_layout(x, batch, dim_size, self.channels, layout,
                                parameter_dtype(self))
        out = self.mab(self.seeds, self.lin(x).relu(), layout)  # [B * k, d]
        k = self.num_seed_points
        return out * layout.pooled_mask(k), layout.pooled(k).batch

    def __repr__(self) -> str:
        return (f'{self.__class__.__name__}({self.channels}, '
                f'num_seed_points={self.num_seed_points}, heads={self.heads}, '
                f'backend={self.backend})')
