r"""The standard Set Transformer (Lee et al., 2019) on flat PyG batches."""

import torch
from torch import Tensor
from torch.nn import ModuleList

from mzlayers.blocks import ISAB, AttentionFactory
from mzlayers.layout import SetLayout, resolve_input
from mzlayers.linear import Linear
from mzlayers.multihead import MultiheadSetAttention
from mzlayers.pooling_head import PoolingHead
from mzlayers.static import padded_for
from mzlayers.validate import parameter_dtype


class SetTransformer(torch.nn.Module):
    r"""The Set Transformer of Lee et al. (2019), the paper's "Standard"
    baseline:

    .. math::
        \mathrm{Linear} \to [\mathrm{ISAB}_m]^{L_{enc}} \to \mathrm{PMA}_k
        \to [\mathrm{SAB}]^{L_{dec}} \to \mathrm{MLP}.

    The default configuration (:math:`d = 64`, :math:`H = 4`,
    :math:`d_{ff} = 128`, :math:`m = 16`, two ISABs, :math:`k = 1`, one SAB)
    has about 208K parameters; :obj:`pooling='mean'` replaces PMA and the
    decoder by a mean over the set (the paper's mean-pool head).  PMA, the
    decoder and the MLP are the :class:`~mzlayers.PoolingHead`.

    Args:
        in_channels (int): Input feature size.
        out_channels (int): Prediction size.
        channels (int, optional): Model width :math:`d`. (default: :obj:`64`)
        heads (int, optional): Heads. (default: :obj:`4`)
        ff_channels (int, optional): FFN width :math:`d_{ff}`.
            (default: :obj:`128`)
        num_induced_points (int, optional): :math:`m`. (default: :obj:`16`)
        num_encoder_blocks (int, optional): ISAB blocks :math:`L_{enc}`.
            (default: :obj:`2`)
        num_seed_points (int, optional): PMA seeds :math:`k`. (default: :obj:`1`)
        num_decoder_blocks (int, optional): SAB blocks :math:`L_{dec}` after
            pooling. (default: :obj:`1`)
        pooling (str, optional): ``'pma'`` or ``'mean'``. (default: :obj:`'pma'`)
        layer_norm (bool, optional): Layer norms in the blocks.
            (default: :obj:`True`)
        dropout (float, optional): Dropout. (default: :obj:`0.1`)
        backend (str, optional): Attention kernel; with ``'dense'`` a
            ragged batch is padded once, at the entry, for every block
            (:func:`~mzlayers.static.padded_for`). (default: :obj:`'auto'`)
        attention (callable, optional): Builds the attention of every MAB
            (see :class:`~mzlayers.MAB`), e.g.
            :class:`~mzattn.baselines.LinearSetAttention` for LA-ST.
            (default: :class:`~mzlayers.MultiheadSetAttention`)
        encoder_attention (callable, optional): Builds the attention of both
            MABs of every ISAB; :obj:`None` = :obj:`attention`.
            (default: :obj:`None`)
        induced_attention (callable, optional): Builds the attention of the
            first MAB of every ISAB (inducing points attending to the set);
            :obj:`None` = :obj:`encoder_attention`. (default: :obj:`None`)
        size_feature (str, optional): Appends a set-size feature to the
            pooled summary before the MLP of the
            :class:`~mzlayers.PoolingHead`
            (:obj:`mzlayers.size_feature.SIZE_FEATURES`): :obj:`'log'`,
            :math:`\log n`; :obj:`None`, none, as in the paper.
            (default: :obj:`None`)

    Options after :obj:`out_channels` are keyword-only.

    Shapes:
        - **input:** :obj:`x` :obj:`[N, in_channels]`, :obj:`batch` :obj:`[N]`;
          or, the static-shape path, a padded :obj:`x` :obj:`[B, n, in_channels]`
          with :obj:`mask` :obj:`[B, n]` (:func:`~mzlayers.static.bucket_batch`;
          shapes are checked, values are not read)
        - **output:** :obj:`[B, out_channels]`
    """
    def __init__(
        self,
        in_channels: int,
        out_channels: int,
        *,
        channels: int = 64,
        heads: int = 4,
        ff_channels: int = 128,
        num_induced_points: int = 16,
        num_encoder_blocks: int = 2,
        num_seed_points: int = 1,
        num_decoder_blocks: int = 1,
        pooling: str = 'pma',
        layer_norm: bool = True,
        dropout: float = 0.1,
        backend: str = 'auto',
        attention: AttentionFactory = MultiheadSetAttention,
        encoder_attention: AttentionFactory | None = None,
        induced_attention: AttentionFactory | None = None,
        size_feature: str | None = None,
    ):
        super().__init__()
        self.in_channels = in_channels
        self.out_channels = out_channels
        self.channels = channels
        self.pooling = pooling
        self.backend = backend
        args = dict(heads=heads, ff_channels=ff_channels, layer_norm=layer_norm,
                    dropout=dropout, backend=backend)
        encoder_attention = attention if encoder_attention is None else encoder_attention
        self.lin_in = Linear(in_channels, channels)
        self.encoders = ModuleList([
            ISAB(channels, num_induced_points, attention=encoder_attention,
                 induced_attention=induced_attention, **args)
            for _ in range(num_encoder_blocks)])
        self.head = PoolingHead(channels, out_channels, num_seed_points=num_seed_points,
                                num_decoder_blocks=num_decoder_blocks, pooling=pooling,
                                attention=attention, size_feature=size_feature, **args)
        self.reset_parameters()

    def reset_parameters(self):
        self.lin_in.reset_parameters()
        for encoder in self.encoders:
            encoder.reset_parameters()
        self.head.reset_parameters()

    def forward(self, x: Tensor, batch: Tensor | None = None,
                dim_size: int | None = None, *, mask: Tensor | None = None,
                layout: SetLayout | None = None) -> Tensor:
        x, layout = resolve_input(x, batch, dim_size, self.in_channels, mask=mask,
                                  layout=layout, dtype=parameter_dtype(self))
        x, layout = padded_for(self.backend, x, layout)  # one bucket: 'dense'
        h = self.lin_in(x)
        for encoder in self.encoders:
            h = encoder(h, layout=layout)
        return self.head(h, layout)

    def __repr__(self) -> str:
        return (f'{self.__class__.__name__}({self.in_channels}, {self.out_channels}, '
                f'channels={self.channels}, encoders={len(self.encoders)}, '
                f'pooling={self.pooling})')
