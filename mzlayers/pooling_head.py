r"""The pooled prediction head of the Set Transformer and of the baselines
that pool with PMA (Lee et al., 2019) on flat PyG batches."""

import torch
from torch import Tensor
from torch.nn import ModuleList
from torch_geometric.nn import MLP

from mzlayers.blocks import PMA, SAB, AttentionFactory
from mzlayers.layout import SetLayout
from mzlayers.multihead import MultiheadSetAttention
from mzlayers.size_feature import append_size_feature, size_feature_channels
from mzlayers.validate import check_choice

POOLINGS = ('pma', 'mean')


class PoolingHead(torch.nn.Module):
    r"""The decoder and prediction head of the Set Transformer (Lee et al.,
    2019), which turns the encoded elements :math:`H_b` of every set
    :math:`b` into one prediction:

    .. math::
        \mathbf{y}_b = \mathrm{MLP}\Big(\mathrm{vec}\,
        [\mathrm{SAB}]^{L_{dec}}\big(\mathrm{PMA}_k(H_b)\big)\Big)

    where :math:`\mathrm{vec}` concatenates the :math:`k` pooled tokens of
    the set and :math:`\mathrm{MLP}` has the widths
    :math:`[k d, d, d_{out}]` (PyG's :class:`~torch_geometric.nn.MLP`, ReLU,
    no norm).  :obj:`pooling='mean'` replaces PMA and the decoder by the mean
    over the set (the paper's mean-pool head),
    :math:`\mathbf{y}_b = \mathrm{MLP}(\frac{1}{n_b} \sum_{i \in b}
    \mathbf{h}_i)` with :math:`k = 1`.  :obj:`size_feature='log'` appends
    :math:`\log n_b` to the vector before the MLP
    (:func:`~mzlayers.size_feature.append_size_feature`).

    A set without elements pools to exactly zero before the decoder, also
    when the pooled rows are not the set's elements (e.g. a Perceiver's
    latents, see :meth:`forward`), so its prediction is finite.

    Args:
        channels (int): Model width :math:`d`.
        out_channels (int): Prediction size :math:`d_{out}`.
        num_seed_points (int, optional): PMA seeds :math:`k` (unused with
            :obj:`pooling='mean'`). (default: :obj:`1`)
        num_decoder_blocks (int, optional): SAB blocks :math:`L_{dec}` after
            pooling (unused with :obj:`pooling='mean'`). (default: :obj:`1`)
        pooling (str, optional): ``'pma'`` or ``'mean'``. (default: :obj:`'pma'`)
        heads (int, optional): PMA/SAB heads. (default: :obj:`1`)
        ff_channels (int, optional): PMA/SAB FFN hidden width.
            (default: :obj:`None`)
        layer_norm (bool, optional): Layer norms in PMA/SAB.
            (default: :obj:`True`)
        dropout (float, optional): Dropout in PMA/SAB. (default: :obj:`0.`)
        backend (str, optional): Attention kernel. (default: :obj:`'auto'`)
        attention (callable, optional): Builds the attention of PMA and of
            the decoder SABs (see :class:`~mzlayers.MAB`).
            (default: :class:`~mzlayers.MultiheadSetAttention`)
        size_feature (str, optional): Appends a set-size feature to the
            pooled summary before the MLP
            (:obj:`mzlayers.size_feature.SIZE_FEATURES`): :obj:`'log'`,
            :math:`\log n`; :obj:`None`, none, as in the paper.
            (default: :obj:`None`)

    Options after :obj:`out_channels` are keyword-only.

    Shapes:
        - **input:** :obj:`h` :obj:`[N, d]` with :obj:`layout` (or the rows of
          :obj:`key_layout`)
        - **output:** :obj:`[B, out_channels]`
    """
    def __init__(
        self,
        channels: int,
        out_channels: int,
        *,
        num_seed_points: int = 1,
        num_decoder_blocks: int = 1,
        pooling: str = 'pma',
        heads: int = 1,
        ff_channels: int | None = None,
        layer_norm: bool = True,
        dropout: float = 0.0,
        backend: str = 'auto',
        attention: AttentionFactory = MultiheadSetAttention,
        size_feature: str | None = None,
    ):
        super().__init__()
        check_choice('pooling', pooling, POOLINGS)
        extra = size_feature_channels(size_feature)
        self.size_feature = size_feature
        self.channels = channels
        self.out_channels = out_channels
        self.pooling = pooling
        self.num_seed_points = num_seed_points if pooling == 'pma' else 1
        args = dict(heads=heads, ff_channels=ff_channels, layer_norm=layer_norm,
                    dropout=dropout, backend=backend, attention=attention)
        self.pma = PMA(channels, num_seed_points, **args) if pooling == 'pma' else None
        self.decoders = ModuleList([SAB(channels, **args) for _ in range(
            num_decoder_blocks if pooling == 'pma' else 0)])
        self.mlp = MLP([self.num_seed_points * channels + extra, channels, out_channels],
                       norm=None)
        self.reset_parameters()

    def reset_parameters(self):
        if self.pma is not None:
            self.pma.reset_parameters()
        for decoder in self.decoders:
            decoder.reset_parameters()
        self.mlp.reset_parameters()

    def pool(self, h: Tensor, layout: SetLayout, key_layout: SetLayout) -> Tensor:
        r"""The :math:`k` pooled tokens of every set, :obj:`[B * k, d]`
        (set-major), zero for the empty sets of :obj:`layout`."""
        if self.pma is None:
            h = key_layout.mean(h)  # [B, d]
        else:
            h, _ = self.pma(h, layout=key_layout)  # [B * k, d]
        if key_layout is layout:  # the mean and PMA pool an empty set to zero already
            return h
        return h * layout.pooled_mask(self.num_seed_points)

    def forward(self, h: Tensor, layout: SetLayout,
                key_layout: SetLayout | None = None) -> Tensor:
        r"""Predicts one output per set of :obj:`layout`.

        Args:
            h (torch.Tensor): Encoded rows :obj:`[N, d]`.
            layout (SetLayout): The layout of the :obj:`B` sets.
            key_layout (SetLayout, optional): The layout of the rows of
                :obj:`h` when they are not the elements of :obj:`layout`'s
                sets, e.g. :obj:`m` latents per set
                (:obj:`layout.pooled(m)`); :obj:`None` = :obj:`layout`.
                (default: :obj:`None`)
        """
        h = self.pool(h, layout, layout if key_layout is None else key_layout)
        pooled = layout.pooled(self.num_seed_points)
        for decoder in self.decoders:
            h = decoder(h, layout=pooled)
        width = self.num_seed_points * h.size(-1)  # [B * k, d] -> [B, k * d]
        h = append_size_feature(h.view(layout.num_sets, width), layout, self.size_feature)
        return self.mlp(h)  # [B, k * d (+ 1)] -> [B, out]

    def __repr__(self) -> str:
        return (f'{self.__class__.__name__}({self.channels}, {self.out_channels}, '
                f'num_seed_points={self.num_seed_points}, '
                f'decoders={len(self.decoders)}, pooling={self.pooling}'
                + (f', size_feature={self.size_feature})' if self.size_feature else ')'))
