r"""The Perceiver baseline (Jaegle et al., 2021) on flat PyG batches."""
import torch
from torch import Tensor
from torch.nn import Linear, ModuleList, Parameter

from mzlayers import MAB, SAB, PoolingHead
from mzlayers.layout import SetLayout, resolve_input
from mzlayers.validate import parameter_dtype


class Perceiver(torch.nn.Module):
    r"""The Perceiver (Jaegle et al., 2021): a learned latent array attends
    to the set (cross-attention), then to itself, repeatedly; the latents
    are pooled with PMA as in the other "PMA-pool" baselines of Table 3:

    .. math::
        Z_0 = \mathrm{MAB}(Z, X), \quad
        Z_t = [\mathrm{SAB}]^{L_{lat}}\big(\mathrm{MAB}(Z_{t-1}, X)\big),
        \quad \mathrm{PMA}_k(Z_T) \to [\mathrm{SAB}]^{L_{dec}} \to \mathrm{MLP}.

    The paper gives only the parameter count (341K) and no latent count.
    We use the shared width (:math:`d = 64, H = 4, d_{ff} = 128`),
    :math:`m = 16` latents (the ISAB inducing-point count), two
    cross-attention blocks (weights not shared) each followed by three latent
    SABs: 345K at :math:`d_{in} = 8`.  An empty set pools to zero.

    Args:
        in_channels (int): Input feature size.
        out_channels (int): Prediction size.
        channels (int, optional): Width :math:`d`. (default: :obj:`64`)
        heads (int, optional): Heads. (default: :obj:`4`)
        ff_channels (int, optional): FFN width. (default: :obj:`128`)
        num_latents (int, optional): Latents :math:`m`. (default: :obj:`16`)
        num_cross_blocks (int, optional): Cross-attention blocks :math:`T`.
            (default: :obj:`2`)
        num_latent_blocks (int, optional): Latent SABs after each cross
            attention :math:`L_{lat}`. (default: :obj:`3`)
        num_seed_points (int, optional): PMA seeds :math:`k`. (default: :obj:`1`)
        num_decoder_blocks (int, optional): SABs after pooling.
            (default: :obj:`1`)
        dropout (float, optional): Dropout. (default: :obj:`0.1`)
        backend (str, optional): Attention kernel. (default: :obj:`'auto'`)
        size_feature (str, optional): Appends a set-size feature to the
            pooled summary before the MLP
            (:obj:`mzlayers.size_feature.SIZE_FEATURES`): :obj:`'log'`,
            :math:`\log n`; :obj:`None`, none, as in the paper.
            (default: :obj:`None`)

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
        channels: int = 64,
        heads: int = 4,
        ff_channels: int = 128,
        num_latents: int = 16,
        num_cross_blocks: int = 2,
        num_latent_blocks: int = 3,
        num_seed_points: int = 1,
        num_decoder_blocks: int = 1,
        dropout: float = 0.1,
        backend: str = 'auto',
        size_feature: str | None = None,
    ):
        super().__init__()
        self.in_channels = in_channels
        self.out_channels = out_channels
        self.channels = channels
        self.num_latents = num_latents
        args = dict(heads=heads, ff_channels=ff_channels, dropout=dropout,
                    backend=backend)
        self.lin_in = Linear(in_channels, channels)
        self.latents = Parameter(torch.empty(num_latents, channels))
        self.cross = ModuleList([MAB(channels, **args) for _ in range(num_cross_blocks)])
        self.latent_blocks = ModuleList([
            ModuleList([SAB(channels, **args) for _ in range(num_latent_blocks)])
            for _ in range(num_cross_blocks)])
        self.head = PoolingHead(channels, out_channels, num_seed_points=num_seed_points,
                                num_decoder_blocks=num_decoder_blocks,
                                size_feature=size_feature, **args)
        self.reset_parameters()

    def reset_parameters(self):
        self.lin_in.reset_parameters()
        torch.nn.init.xavier_uniform_(self.latents)
        latent_blocks = [block for blocks in self.latent_blocks for block in blocks]
        for block in [*self.cross, *latent_blocks, self.head]:
            block.reset_parameters()

    def forward(self, x: Tensor, batch: Tensor | None = None,
                dim_size: int | None = None, *, mask: Tensor | None = None,
                layout: SetLayout | None = None) -> Tensor:
        x, layout = resolve_input(x, batch, dim_size, self.in_channels, mask=mask,
                                  layout=layout, dtype=parameter_dtype(self))
        latent_layout = layout.pooled(self.num_latents)
        h = self.lin_in(x)
        z = self.latents  # [m, d], shared by all sets before the first block
        for t, (cross, blocks) in enumerate(zip(self.cross, self.latent_blocks, strict=True)):
            z = cross(z, h, layout, None if t == 0 else latent_layout)  # [B * m, d]
            for block in blocks:
                z = block(z, layout=latent_layout)
        return self.head(z, layout, key_layout=latent_layout)  # empty sets pool to 0

    def __repr__(self) -> str:
        return (f'{self.__class__.__name__}({self.in_channels}, {self.out_channels}, '
                f'channels={self.channels}, num_latents={self.num_latents}, '
                f'cross_blocks={len(self.cross)})')
