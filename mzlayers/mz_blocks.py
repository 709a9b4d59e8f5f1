r"""The MZ set blocks MZ-MAB, MZ-SAB, MZ-ISAB and MZ-PMA (Sec. 2.4 of the
MZAttn paper): the Set Transformer blocks of :mod:`mzlayers.blocks` with
zonotope tokens and :class:`~mzlayers.mz_attention.MZMultiheadAttention`."""

from collections.abc import Callable
from functools import partial

import torch
import torch.nn.functional as F
from torch import Tensor
from torch.autograd.function import once_differentiable
from torch.nn import LayerNorm, Parameter

from mzlayers.blocks import attention_repr, broadcast_queries
from mzlayers.checkpoint import check_rows, checkpoint_sets
from mzlayers.feedforward import FeedForward
from mzlayers.generator_path import GeneratorTail, centred, generator_tail, in_transform
from mzlayers.hooks import has_forward_hooks
from mzlayers.layout import SetLayout, resolve_layout
from mzlayers.linear import Linear
from mzlayers.mz_attention import MZMultiheadAttention
from mzlayers.validate import parameter_dtype
from mzlayers.zonotope import Zonotope

ZonotopeLike = Zonotope | Tensor


class ZonotopeLayerNorm(LayerNorm):
    r"""Layer normalisation of zonotope tokens.  The centre is normalised as
    by :class:`torch.nn.LayerNorm`; each generator row receives the *linear
    part* of the same affine map: centred over channels, divided by the
    centre's standard deviation and multiplied by the LN weight, without
    bias.  (The paper does not spell out how normalisation acts on the
    generators; this is the first-order image of the zonotope under LN with
    the centre's statistics frozen.)

    Args:
        channels (int): Width :math:`d`.
        eps (float, optional): Added to the variance. (default: :obj:`1e-5`)

    Shapes:
        - **input / output:** :class:`Zonotope` :obj:`[*, d]`,
          :obj:`[*, n_g, d]`
    """
    def __init__(self, channels: int, eps: float = 1e-5):
        super().__init__(channels, eps=eps)

    def forward(self, z: Zonotope) -> Zonotope:
        center, rstd = self.center_and_rstd(z.center)
        G = z.generators
        return Zonotope(center, centred(G) * (self.weight * rstd).to(G.dtype).unsqueeze(-2))

    def center_and_rstd(self, c: Tensor) -> tuple[Tensor, Tensor]:
        r"""The normalised centres :obj:`[*, d]` and the reciprocal standard
        deviation :math:`1 / \sigma(\mathbf{c})` :obj:`[*, 1]` (float32 at
        least) of each token, whose product with the weight
        :math:`\mathbf{w}` scales the generators' linear part."""
        # The statistics in float32 at least: in float16 the variance of
        # centre entries above ~256 overflows and would zero the generators.
        c32 = c.float() if torch.finfo(c.dtype).bits < 32 else c
        return super().forward(c), (_variance(c32) + self.eps).rsqrt()


def _fused_statistics(c: Tensor, weight: Tensor | None) -> bool:
    r"""Whether :class:`_LayerNormWithRstd` normalises :obj:`c`: centres in
    float32 or float64 (the precision of the statistics) with a weight of
    the same dtype, outside :mod:`torch.func` transforms."""
    return (c.dtype in (torch.float32, torch.float64) and c.numel() > 0
            and weight is not None and weight.dtype == c.dtype
            and not in_transform())


class _LayerNormWithRstd(torch.autograd.Function):
    r""":func:`torch.native_layer_norm` of centres :obj:`c` :obj:`[*, d]`,
    with its reciprocal standard deviation :obj:`[*, 1]` as a second,
    differentiable output.  The norm computes it anyway, where autograd's
    composition computed the variance a second time (six more operators
    per norm, forward and backward; issue 34, "Few launches").  Backward
    adds the reciprocal's gradient,
    :math:`\partial \sigma^{-1} / \partial c_j = -\sigma^{-3} (c_j - \mu) / d`,
    to the norm's own.  First-order gradients only, as the generator path
    that reads it (:class:`ZonotopeLayerNorm` itself differentiates twice)."""
    @staticmethod
    def forward(ctx, c: Tensor, weight: Tensor, bias: Tensor | None, eps: float):
        out, mean, rstd = torch.native_layer_norm(c, (c.size(-1),), weight, bias, eps)
        ctx.save_for_backward(c, weight, bias, mean, rstd)
        return out, rstd

    @staticmethod
    @once_differentiable
    def backward(ctx, grad: Tensor, grad_rstd: Tensor):
        c, weight, bias, mean, rstd = ctx.saved_tensors
        grad_c, grad_weight, grad_bias = torch.ops.aten.native_layer_norm_backward(
            grad, c, (c.size(-1),), mean, rstd, weight, bias, list(ctx.needs_input_grad[:3]))
        if grad_c is not None:
            scale = grad_rstd * rstd.pow(3) * (-1.0 / c.size(-1))
            grad_c = grad_c.addcmul_(scale, c - mean)
        return grad_c, grad_weight, grad_bias, None


def _variance(c: Tensor) -> Tensor:
    r"""The biased variance of :obj:`c` :obj:`[*, d]` over channels,
    :obj:`[*, 1]`.  :func:`torch.var` keeps only its input for backward,
    which the layer norm keeps anyway (a centred copy would be one more
    :obj:`[*, d]` tensor); without rows it would warn of zero degrees of
    freedom."""
    return c.var(-1, correction=0, keepdim=True) if c.numel() else c.sum(-1, keepdim=True)


class ZonotopeFeedForward(torch.nn.Module):
    r"""The residual FFN of an MZ block: the centre FFN of width
    :math:`d_{ff}` and, row-wise on the generators, a separate bias-free
    generator FFN (App. A.1, "Generator FFN"):
    :math:`(\mathbf{c} + \mathrm{FFN}(\mathbf{c}),\; G + \mathrm{FFN}_g(G))`.

    Dropout acts on the centre FFN only.  The generator FFN has none, so
    that the generators (the token's extent, read out as the IHW) are the
    same function of the input in training and evaluation; it also spares
    the random masks of :math:`n_g` rows per token, on CPU the most
    expensive operation of a training step.

    .. note::
        App. A.1 describes the generator FFN as "lighter" with hidden width
        :math:`d_{ff}/2`, but the parameter counts the paper reports
        (MZ-Slim 333K, MZ-Med 344K, MZ-Full 368K in Table 6, ~372K in A.1)
        are only reached with hidden width :math:`d_{ff}` (with
        :math:`d_{ff}/2` MZ-Full has 324K).  We default to the width that
        reproduces the reported models; pass
        :obj:`generator_ff_channels=ff_channels // 2` for the textual variant.

    Args:
        channels (int): Width :math:`d`.
        ff_channels (int): Centre FFN width :math:`d_{ff}`.
        generator_ff_channels (int, optional): Generator FFN width
            (:obj:`None` = :obj:`ff_channels`). (default: :obj:`None`)
        dropout (float, optional): Dropout in the centre FFN.
            (default: :obj:`0.`)
    """
    def __init__(self, channels: int, ff_channels: int,
                 generator_ff_channels: int | None = None, dropout: float = 0.0):
        super().__init__()
        self.center = FeedForward(channels, ff_channels, dropout)
        self.generators = FeedForward(channels, generator_ff_channels or ff_channels,
                                      bias=False)

    def reset_parameters(self):
        self.center.reset_parameters()
        self.generators.reset_parameters()

    def forward(self, z: Zonotope) -> Zonotope:
        return Zonotope(z.center + self.center(z.center),
                        z.generators + self.generators(z.generators))


class MZMAB(torch.nn.Module):
    r"""The MZ Multihead Attention Block:

    .. math::
        H = \mathrm{LN}(X + \mathrm{MZMHA}(X, Y)), \qquad
        \mathrm{MZMAB}(X, Y) = \mathrm{LN}(H + \mathrm{FFN}(H))

    on zonotopes: the residuals are Minkowski-free sums of centres and of
    generator rows (the generator budget :math:`n_g` is fixed), the FFN is
    :class:`ZonotopeFeedForward` and the norms :class:`ZonotopeLayerNorm`.
    After the attention weights, the generator rows go through one
    function, :func:`~mzlayers.generator_path.budgeted_generators` with a
    :class:`~mzlayers.generator_path.GeneratorTail`, which keeps only the
    attention output and small inputs for backward and recomputes the
    attention's generator output, the residual, the norms' linear parts and
    the generator FFN in row chunks (first-order gradients): the generator
    activations, :math:`n_g` times the centre's, are not stored.

    Args:
        channels (int): Model width :math:`d`.
        heads (int, optional): Number of heads. (default: :obj:`1`)
        num_generators (int, optional): :math:`n_g`. (default: :obj:`8`)
        num_matrix_generators (int, optional): :math:`L`. (default: :obj:`4`)
        ff_channels (int, optional): Centre FFN width (:obj:`None` =
            :obj:`2 * channels`). (default: :obj:`None`)
        generator_ff_channels (int, optional): Generator FFN width
            (:obj:`None` = :obj:`ff_channels`, see
            :class:`ZonotopeFeedForward`). (default: :obj:`None`)
        layer_norm (bool, optional): Apply the two norms. (default: :obj:`True`)
        dropout (float, optional): Dropout. (default: :obj:`0.`)
        summary (str, optional): Gate statistic. (default: :obj:`'mean'`)
        backend (str, optional): Attention kernel. (default: :obj:`'auto'`)
        checkpoint_rows (int, optional): If set, the block's activations,
            which carry :math:`n_g` generator rows per token, are not stored
            for backward but recomputed on chunks of whole sets with about
            this many query and key rows each
            (:func:`~mzlayers.checkpoint.checkpoint_sets`): only the block's
            inputs and outputs are kept.  Same outputs and gradients (without
            dropout; with dropout, chunks draw their masks in turn); less
            training memory for a second forward.  Forward hooks of the
            attention fire once per chunk, and again in backward.
            (default: :obj:`None`)
        attention (callable, optional): Builds the block's attention,
            called with keyword arguments :obj:`attention(channels,
            heads=..., num_generators=..., num_matrix_generators=...,
            summary=..., dropout=..., backend=...)`; a module with
            :class:`~mzlayers.MZMultiheadAttention`'s :meth:`aggregate` and
            :meth:`generators` (e.g. a subclass such as
            :class:`~mzattn.baselines.GenQKAttention`).
            (default: :class:`~mzlayers.MZMultiheadAttention`)

    Options after :obj:`heads` are keyword-only.

    Shapes:
        - **input:** :obj:`x` queries (:obj:`[N_q, *]` with
          :obj:`query_layout`, or :obj:`[M, *]` learned), :obj:`y`
          :obj:`[N, *]` with :obj:`key_layout`
        - **output:** :class:`Zonotope` :obj:`[N_q, d]` / :obj:`[B * M, d]`
    """
    def __init__(
        self,
        channels: int,
        heads: int = 1,
        *,
        num_generators: int = 8,
        num_matrix_generators: int = 4,
        ff_channels: int | None = None,
        generator_ff_channels: int | None = None,
        layer_norm: bool = True,
        dropout: float = 0.0,
        summary: str = 'mean',
        backend: str = 'auto',
        checkpoint_rows: int | None = None,
        attention: Callable[..., torch.nn.Module] = MZMultiheadAttention,
    ):
        super().__init__()
        check_rows('checkpoint_rows', checkpoint_rows)
        self.channels = channels
        self.heads = heads
        self.num_generators = num_generators
        self.num_matrix_generators = num_matrix_generators
        self.ff_channels = ff_channels or 2 * channels
        self.layer_norm = layer_norm
        self.dropout = dropout
        self.backend = backend
        self.checkpoint_rows = checkpoint_rows
        self.attn = attention(channels, heads=heads, num_generators=num_generators,
                              num_matrix_generators=num_matrix_generators,
                              summary=summary, dropout=dropout, backend=backend)
        self.ffn = ZonotopeFeedForward(channels, self.ff_channels,
                                       generator_ff_channels, dropout)
        self.norm1 = ZonotopeLayerNorm(channels) if layer_norm else torch.nn.Identity()
        self.norm2 = ZonotopeLayerNorm(channels) if layer_norm else torch.nn.Identity()

    def reset_parameters(self):
        self.attn.reset_parameters()
        self.ffn.reset_parameters()
        for norm in (self.norm1, self.norm2):
            if isinstance(norm, LayerNorm):
                norm.reset_parameters()

    def forward(self, x: ZonotopeLike, y: ZonotopeLike, key_layout: SetLayout,
                query_layout: SetLayout | None = None) -> Zonotope:
        x = Zonotope.wrap(x, self.num_generators)
        y = Zonotope.wrap(y, self.num_generators)
        if self.checkpoint_rows is None:
            return Zonotope(*self.block(x.center, x.generators, y.center, y.generators,
                                        key_layout, query_layout))
        return checkpoint_sets(self.block, x, y, key_layout, query_layout,
                               self.checkpoint_rows)

    def block(self, x_center: Tensor, x_generators: Tensor, y_center: Tensor,
              y_generators: Tensor, key_layout: SetLayout,
              query_layout: SetLayout | None) -> tuple[Tensor, Tensor]:
        r"""The block on tensors (the function that
        :func:`~mzlayers.checkpoint.checkpoint_sets` recomputes).

        Returns:
            (torch.Tensor, torch.Tensor): centres :obj:`[N_q, d]` (or
            :obj:`[B * M, d]`) and generators :obj:`[*, n_g, d]`.
        """
        x, y = Zonotope(x_center, x_generators), Zonotope(y_center, y_generators)
        if has_forward_hooks(self.attn):  # the hooks see the attention's output
            o = self.attn(x, y, key_layout, query_layout)
            o_center, generators = o.center, partial(generator_tail, o.generators)
        else:
            o_center, agg, gates = self.attn.aggregate(x, y, key_layout, query_layout)
            generators = partial(self.attn.generators, agg, gates)
        h, norm1 = _norm_center(self.norm1, broadcast_queries(
            x_center, query_layout, key_layout) + o_center)
        out, norm2 = _norm_center(self.norm2, h + self.ffn.center(h))
        ffn = self.ffn.generators.net
        return out, generators(GeneratorTail(x_generators, *norm1, *norm2, ffn[0].weight,
                                             ffn[3].weight))

    def __repr__(self) -> str:
        return (f'{self.__class__.__name__}({self.channels}, heads={self.heads}, '
                f'num_generators={self.num_generators}, '
                f'num_matrix_generators={self.num_matrix_generators}, '
                f'ff_channels={self.ff_channels}, backend={self.backend}'
                f'{_checkpoint_repr(self.checkpoint_rows)}'
                f'{attention_repr(self.attn, MZMultiheadAttention)})')


def _norm_center(norm: torch.nn.Module, c: Tensor
                 ) -> tuple[Tensor, tuple[Tensor | None, Tensor | None]]:
    r"""A block norm on centres :obj:`[*, d]`: the normalised centres and,
    for the generators' linear part, the reciprocal standard deviations
    :obj:`[*, 1]` and the norm's weight :obj:`[d]` (both :obj:`None`
    without a norm)."""
    if not isinstance(norm, ZonotopeLayerNorm):
        return c, (None, None)
    if _fused_statistics(c, norm.weight):  # first-order, as the generator path
        center, rstd = _LayerNormWithRstd.apply(c, norm.weight, norm.bias, norm.eps)
    else:
        center, rstd = norm.center_and_rstd(c)
    return center, (rstd, norm.weight)


def _checkpoint_repr(rows: int | None) -> str:
    return '' if rows is None else f', checkpoint_rows={rows}'


class MZSAB(MZMAB):
    r"""The MZ Set Attention Block :math:`\mathrm{MZSAB}(X) =
    \mathrm{MZMAB}(X, X)`, permutation-equivariant.  Arguments as in
    :class:`MZMAB`.

    Shapes:
        - **input:** :class:`Zonotope` or tensor :obj:`[N, d]`, :obj:`batch`
          :obj:`[N]`
        - **output:** :class:`Zonotope` :obj:`[N, d]`, :obj:`[N, n_g, d]`
    """
    def forward(self, x: ZonotopeLike, batch: Tensor | None = None,
                dim_size: int | None = None, *,
                layout: SetLayout | None = None) -> Zonotope:
        x = Zonotope.wrap(x, self.num_generators)
        layout = resolve_layout(x, batch, dim_size, self.channels, layout,
                                parameter_dtype(self))
        return super().forward(x, x, layout, layout)


class _InducedZonotopes(torch.nn.Module):
    r"""A learned set of :math:`m` zonotopes shared by all sets (ISAB
    inducing points, PMA seeds); generators start small as in Eq. (2)."""
    def __init__(self, num_points: int, channels: int, num_generators: int):
        super().__init__()
        self.center = Parameter(torch.empty(num_points, channels))
        self.generators = Parameter(torch.empty(num_points, num_generators, channels))
        self.reset_parameters()

    def reset_parameters(self):
        torch.nn.init.xavier_uniform_(self.center)
        n_g, d = self.generators.shape[-2:]
        torch.nn.init.xavier_uniform_(self.generators.view(-1, d))
        with torch.no_grad():
            self.generators.mul_((n_g * d) ** -0.5)

    def forward(self) -> Zonotope:
        return Zonotope(self.center, self.generators)


class MZISAB(torch.nn.Module):
    r"""The MZ Induced Set Attention Block
    :math:`\mathrm{MZISAB}(X) = \mathrm{MZMAB}(X, \mathrm{MZMAB}(I, X))`
    with :math:`m` learned inducing zonotopes :math:`I`.

    Args:
        channels (int): Model width :math:`d`.
        num_induced_points (int): Number of inducing zonotopes :math:`m`.
        **kwargs (optional): Arguments of both :class:`MZMAB` blocks
            (:obj:`heads`, :obj:`num_generators`, ...).

    Shapes:
        - **input:** :class:`Zonotope` or tensor :obj:`[N, d]`, :obj:`batch`
          :obj:`[N]`
        - **output:** :class:`Zonotope` :obj:`[N, d]`, :obj:`[N, n_g, d]`
    """
    def __init__(self, channels: int, num_induced_points: int, **kwargs):
        super().__init__()
        self.channels = channels
        self.num_induced_points = num_induced_points
        self.mab1 = MZMAB(channels, **kwargs)
        self.mab2 = MZMAB(channels, **kwargs)
        self.num_generators = self.mab1.num_generators
        self.induced = _InducedZonotopes(num_induced_points, channels,
                                         self.num_generators)

    def reset_parameters(self):
        self.induced.reset_parameters()
        self.mab1.reset_parameters()
        self.mab2.reset_parameters()

    def forward(self, x: ZonotopeLike, batch: Tensor | None = None,
                dim_size: int | None = None, *,
                layout: SetLayout | None = None) -> Zonotope:
        x = Zonotope.wrap(x, self.num_generators)
        layout = resolve_layout(x, batch, dim_size, self.channels, layout,
                                parameter_dtype(self))
        h = self.mab1(self.induced(), x, layout)  # [B * m, ...]
        return self.mab2(x, h, layout.pooled(self.num_induced_points), layout)

    def __repr__(self) -> str:
        return (f'{self.__class__.__name__}({self.channels}, '
                f'num_induced_points={self.num_induced_points}, '
                f'mab={self.mab1})')


class MZPMA(torch.nn.Module):
    r"""MZ Pooling by Multihead Attention
    :math:`\mathrm{MZPMA}_k(X) = \mathrm{MZMAB}(S, \mathrm{rFF}(X))` with
    :math:`k` learned seed zonotopes.  The row-wise
    :math:`\mathrm{rFF}(x) = \mathrm{ReLU}(\mathbf{W}x + \mathbf{b})` acts on
    a zonotope through its linearisation at the centre: centre
    :math:`\mathrm{ReLU}(\mathbf{W}\mathbf{c} + \mathbf{b})`, generators
    :math:`\mathbb{1}[\mathbf{W}\mathbf{c} + \mathbf{b} > 0] \odot
    \mathbf{W} G_g`.  A set without elements pools to exactly zero.

    Args:
        channels (int): Model width :math:`d`.
        num_seed_points (int, optional): Number of seeds :math:`k`.
            (default: :obj:`1`)
        **kwargs (optional): Arguments of the :class:`MZMAB` block.

    Shapes:
        - **input:** :class:`Zonotope` or tensor :obj:`[N, d]`, :obj:`batch`
          :obj:`[N]`
        - **output:** :obj:`(Zonotope [B * k, d] / [B * k, n_g, d],
          out_batch [B * k])`
    """
    def __init__(self, channels: int, num_seed_points: int = 1, **kwargs):
        super().__init__()
        self.channels = channels
        self.num_seed_points = num_seed_points
        self.mab = MZMAB(channels, **kwargs)
        self.num_generators = self.mab.num_generators
        self.seeds = _InducedZonotopes(num_seed_points, channels, self.num_generators)
        self.lin = Linear(channels, channels)
        self.reset_parameters()

    def reset_parameters(self):
        self.seeds.reset_parameters()
        torch.nn.init.xavier_uniform_(self.lin.weight)
        torch.nn.init.zeros_(self.lin.bias)
        self.mab.reset_parameters()

    def rff(self, x: Zonotope) -> Zonotope:
        r"""The row-wise :math:`\mathrm{ReLU}(\mathbf{W}x + \mathbf{b})`,
        linearised at the centre for the generators."""
        z = x.linear_map(self.lin.weight, self.lin.bias)
        active = (z.center > 0).to(z.center.dtype)
        return Zonotope(F.relu(z.center), z.generators * active.unsqueeze(-2))

    def forward(self, x: ZonotopeLike, batch: Tensor | None = None,
                dim_size: int | None = None, *,
                layout: SetLayout | None = None) -> tuple[Zonotope, Tensor]:
        x = Zonotope.wrap(x, self.num_generators)
        layout = resolve_layout(x, batch, dim_size, self.channels, layout,
                                parameter_dtype(self))
        out = self.mab(self.seeds(), self.rff(x), layout)
        mask = layout.pooled_mask(self.num_seed_points)  # [B * k, 1]
        out = Zonotope(out.center * mask, out.generators * mask.unsqueeze(-1))
        return out, layout.pooled(self.num_seed_points).batch

    def __repr__(self) -> str:
        return (f'{self.__class__.__name__}({self.channels}, '
                f'num_seed_points={self.num_seed_points}, mab={self.mab})')
