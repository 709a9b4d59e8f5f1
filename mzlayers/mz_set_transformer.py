r"""The MZ Set Transformer (Sec. 2.4 of the MZAttn paper)."""

from collections.abc import Callable

import torch
from torch import Tensor
from torch.nn import ModuleList
from torch_geometric.nn import MLP

from mzlayers.embedding import ZonotopeEmbedding
from mzlayers.layout import SetLayout, resolve_input
from mzlayers.mz_attention import MZMultiheadAttention
from mzlayers.mz_blocks import MZISAB, MZPMA, MZSAB
from mzlayers.size_feature import append_size_feature, size_feature_channels
from mzlayers.static import padded_for
from mzlayers.validate import check_choice, parameter_dtype
from mzlayers.zonotope import Zonotope

READOUTS = ('ihw', 'signed')


class MZSetTransformerEncoder(torch.nn.Module):
    r"""The pooled body of the MZ Set Transformer, shared by
    :class:`MZSetTransformer` and
    :class:`~mzlayers.aggregation.MZSetTransformerAggregation`:

    .. math::
        \mathrm{ZonotopeEmbedding} \to [\mathrm{MZ\text{-}ISAB}]^{L_{enc}}
        \to \mathrm{MZ\text{-}PMA}_k \to [\mathrm{MZ\text{-}SAB}]^{L_{dec}}.

    Args:
        embed (bool, optional): If set to :obj:`False`, there is no
            :class:`ZonotopeEmbedding`: the input must already have
            :obj:`channels` features and enters as a zonotope with zero
            generators. (default: :obj:`True`)

    Other arguments as in :class:`MZSetTransformer` (without the head and
    readout; keyword-only after :obj:`channels`).
    :obj:`num_induced_points=None` gives MZ-SAB encoder blocks (quadratic in
    the set size, as in PyG's
    :class:`~torch_geometric.nn.aggr.SetTransformerAggregation`) instead of
    MZ-ISAB.

    Shapes:
        - **input:** :obj:`[N, in_channels]`, :obj:`batch` :obj:`[N]`
        - **output:** :class:`Zonotope` :obj:`[B * k, d]`,
          :obj:`[B * k, n_g, d]` (zero for empty sets)
    """
    def __init__(
        self,
        in_channels: int,
        channels: int = 64,
        *,
        heads: int = 4,
        num_generators: int = 8,
        num_matrix_generators: int = 4,
        ff_channels: int = 128,
        generator_ff_channels: int | None = None,
        num_induced_points: int | None = 16,
        num_encoder_blocks: int = 2,
        num_seed_points: int = 1,
        num_decoder_blocks: int = 1,
        layer_norm: bool = True,
        dropout: float = 0.1,
        summary: str = 'mean',
        backend: str = 'auto',
        checkpoint_rows: int | None = None,
        attention: Callable[..., torch.nn.Module] = MZMultiheadAttention,
        embed: bool = True,
    ):
        super().__init__()
        self.in_channels = in_channels
        self.channels = channels
        self.num_generators = num_generators
        self.num_seed_points = num_seed_points
        args = dict(heads=heads, num_generators=num_generators,
                    num_matrix_generators=num_matrix_generators,
                    ff_channels=ff_channels, generator_ff_channels=generator_ff_channels,
                    layer_norm=layer_norm, dropout=dropout,
                    summary=summary, backend=backend, checkpoint_rows=checkpoint_rows,
                    attention=attention)
        self.embedding = ZonotopeEmbedding(in_channels, channels, num_generators) \
            if embed else None
        self.encoders = ModuleList([
            MZSAB(channels, **args) if num_induced_points is None else
            MZISAB(channels, num_induced_points, **args) for _ in range(num_encoder_blocks)])
        self.pma = MZPMA(channels, num_seed_points, **args)
        self.decoders = ModuleList([MZSAB(channels, **args)
                                    for _ in range(num_decoder_blocks)])

    def reset_parameters(self):
        if self.embedding is not None:
            self.embedding.reset_parameters()
        for block in [*self.encoders, self.pma, *self.decoders]:
            block.reset_parameters()

    def forward(self, x: Tensor | Zonotope, layout: SetLayout) -> Zonotope:
        z = self.embedding(x) if self.embedding is not None else \
            Zonotope.wrap(x, self.num_generators)
        for encoder in self.encoders:
            z = encoder(z, layout=layout)
        z, _ = self.pma(z, layout=layout)
        pooled = layout.pooled(self.num_seed_points)
        for decoder in self.decoders:
            z = decoder(z, layout=pooled)
        mask = layout.pooled_mask(self.num_seed_points)
        return Zonotope(z.center * mask, z.generators * mask.unsqueeze(-1))


class MZSetTransformer(torch.nn.Module):
    r"""The MZ Set Transformer of the `"Matrix Zonotopic Attention"` paper:

    .. math::
        \mathrm{ZonotopeEmbedding} \to [\mathrm{MZ\text{-}ISAB}]^{L_{enc}}
        \to \mathrm{MZ\text{-}PMA}_k \to [\mathrm{MZ\text{-}SAB}]^{L_{dec}}
        \to \mathrm{MLP}([\mathbf{c} \,\Vert\, \mathbf{r}])

    where the readout :math:`\mathbf{r}` of the pooled zonotopes is the
    interval-hull half-width :math:`\delta = \sum_g |G_g|` (``'ihw'``, the
    default, which keeps the uncertainty interpretation of Thm. 4) or the
    signed sum :math:`\sum_g G_g` (``'signed'``, used by the expressiveness
    proofs).  The forward pass returns the prediction and the IHW, a
    single-pass uncertainty estimate.  The default configuration is the
    paper's MZ-Full (:math:`d = 64, H = 4, d_{ff} = 128, m = 16, n_g = 8,
    L = 4`).

    Args:
        in_channels (int): Input feature size :math:`d_{in}`.
        out_channels (int): Prediction size.
        channels (int, optional): Model width :math:`d`. (default: :obj:`64`)
        heads (int, optional): Heads :math:`H`. (default: :obj:`4`)
        num_generators (int, optional): Zonotope generators :math:`n_g`.
            (default: :obj:`8`)
        num_matrix_generators (int, optional): Matrix-zonotope generators
            :math:`L`. (default: :obj:`4`)
        ff_channels (int, optional): FFN width :math:`d_{ff}`.
            (default: :obj:`128`)
        generator_ff_channels (int, optional): Generator FFN width
            (:obj:`None` = :obj:`ff_channels`, see
            :class:`~mzlayers.mz_blocks.ZonotopeFeedForward`).
            (default: :obj:`None`)
        num_induced_points (int, optional): :math:`m`. (default: :obj:`16`)
        num_encoder_blocks (int, optional): MZ-ISAB blocks. (default: :obj:`2`)
        num_seed_points (int, optional): MZ-PMA seeds :math:`k`.
            (default: :obj:`1`)
        num_decoder_blocks (int, optional): MZ-SAB blocks after pooling.
            (default: :obj:`1`)
        readout (str, optional): ``'ihw'`` or ``'signed'``.
            (default: :obj:`'ihw'`)
        layer_norm (bool, optional): Layer norms. (default: :obj:`True`)
        dropout (float, optional): Dropout. (default: :obj:`0.1`)
        summary (str, optional): Gate statistic ``'mean'``, ``'moment'`` or
            ``'attention'``. (default: :obj:`'mean'`)
        backend (str, optional): Attention kernel; with ``'dense'`` a
            ragged batch is padded once, at the entry, for every block
            (:func:`~mzlayers.static.padded_for`). (default: :obj:`'auto'`)
        checkpoint_rows (int, optional): Recompute the row-wise part of every
            MZ block in backward, in chunks of this many rows, instead of
            storing it (see :class:`~mzlayers.mz_blocks.MZMAB`).
            (default: :obj:`None`)
        attention (callable, optional): Builds the attention of every MZ-MAB
            (see :class:`~mzlayers.mz_blocks.MZMAB`), e.g.
            :class:`~mzattn.baselines.GenQKAttention` for MZ-GenQK.
            (default: :class:`~mzlayers.MZMultiheadAttention`)
        size_feature (str, optional): Appends a set-size feature to the
            readout (centres and IHW or signed sum) before the MLP
            (:obj:`mzlayers.size_feature.SIZE_FEATURES`): :obj:`'log'`,
            :math:`\log n`; :obj:`None`, none, as in the paper.
            (default: :obj:`None`)

    Options after :obj:`out_channels` are keyword-only.

    Shapes:
        - **input:** :obj:`x` :obj:`[N, in_channels]`, :obj:`batch` :obj:`[N]`;
          or, the static-shape path, a padded :obj:`x` :obj:`[B, n, in_channels]`
          with :obj:`mask` :obj:`[B, n]` (:func:`~mzlayers.static.bucket_batch`;
          shapes are checked, values are not read)
        - **output:** :obj:`(pred [B, out_channels], ihw [B, k * d])`
    """
    def __init__(
        self,
        in_channels: int,
        out_channels: int,
        *,
        channels: int = 64,
        heads: int = 4,
        num_generators: int = 8,
        num_matrix_generators: int = 4,
        ff_channels: int = 128,
        generator_ff_channels: int | None = None,
        num_induced_points: int = 16,
        num_encoder_blocks: int = 2,
        num_seed_points: int = 1,
        num_decoder_blocks: int = 1,
        readout: str = 'ihw',
        layer_norm: bool = True,
        dropout: float = 0.1,
        summary: str = 'mean',
        backend: str = 'auto',
        checkpoint_rows: int | None = None,
        attention: Callable[..., torch.nn.Module] = MZMultiheadAttention,
        size_feature: str | None = None,
    ):
        super().__init__()
        check_choice('readout', readout, READOUTS)
        self.size_feature = size_feature
        self.in_channels = in_channels
        self.out_channels = out_channels
        self.channels = channels
        self.num_generators = num_generators
        self.num_matrix_generators = num_matrix_generators
        self.readout = readout
        self.backend = backend
        self.encoder = MZSetTransformerEncoder(
            in_channels, channels=channels, heads=heads, num_generators=num_generators,
            num_matrix_generators=num_matrix_generators, ff_channels=ff_channels,
            generator_ff_channels=generator_ff_channels,
            num_induced_points=num_induced_points, num_encoder_blocks=num_encoder_blocks,
            num_seed_points=num_seed_points, num_decoder_blocks=num_decoder_blocks,
            layer_norm=layer_norm, dropout=dropout, summary=summary, backend=backend,
            checkpoint_rows=checkpoint_rows, attention=attention)
        self.head = MLP([2 * num_seed_points * channels + size_feature_channels(size_feature),
                         channels, out_channels], norm=None)
        self.reset_parameters()

    def reset_parameters(self):
        self.encoder.reset_parameters()
        self.head.reset_parameters()

    def forward(self, x: Tensor, batch: Tensor | None = None, dim_size: int | None = None,
                *, mask: Tensor | None = None,
                layout: SetLayout | None = None) -> tuple[Tensor, Tensor]:
        x, layout = resolve_input(x, batch, dim_size, self.in_channels, mask=mask,
                                  layout=layout, dtype=parameter_dtype(self))
        x, layout = padded_for(self.backend, x, layout)  # one bucket: 'dense'
        z = self.encoder(x, layout)
        B = layout.num_sets
        width = self.encoder.num_seed_points * self.channels  # [B * k, d] -> [B, k * d]
        ihw = z.ihw().view(B, width)
        extra = ihw if self.readout == 'ihw' else z.signed().view(B, width)
        summary = torch.cat([z.center.view(B, width), extra], dim=-1)  # [B, 2 k d]
        return self.head(append_size_feature(summary, layout, self.size_feature)), ihw

    def __repr__(self) -> str:
        return (f'{self.__class__.__name__}({self.in_channels}, {self.out_channels}, '
                f'channels={self.channels}, num_generators={self.num_generators}, '
                f'num_matrix_generators={self.num_matrix_generators}, '
                f'readout={self.readout})')
