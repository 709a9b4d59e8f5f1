r"""Standard and MZ sequence Transformers with positional encoding
(Table 13): the element order inside each set is the sequence order."""
import torch
from torch import Tensor
from torch.nn import Embedding, Linear, ModuleList
from torch_geometric.nn import MLP

from mzlayers import MZSAB, SAB, Zonotope, ZonotopeEmbedding
from mzlayers.layout import SetLayout, resolve_input
from mzlayers.validate import parameter_dtype


class PositionalEncoding(Embedding):
    r"""Learned absolute positional embeddings of the elements of each set,
    position :math:`i` = index of the element inside its set in :obj:`x`
    (:attr:`~mzlayers.layout.SetLayout.positions`; in a padded batch, its
    rank among the set's real elements).

    Args:
        max_length (int): Longest supported set.
        channels (int): Embedding width.

    Shapes:
        - **input:** :class:`~mzlayers.SetLayout` of :obj:`N` rows (:obj:`B * n`
          for a padded batch)
        - **output:** :obj:`[N, channels]`
    """
    def __init__(self, max_length: int, channels: int):
        super().__init__(max_length, channels)
        self.max_length = max_length

    def forward(self, layout: SetLayout) -> Tensor:
        longest = max(layout.counts, default=0)  # host sizes: no device read
        if longest > self.max_length:
            held = f'is padded to {longest} rows per set' if layout.mask is not None \
                else f'holds a set of {longest} elements'
            raise ValueError(f"'x' {held} but 'max_length' is {self.max_length}")
        return super().forward(layout.positions)


class SequenceTransformer(torch.nn.Module):
    r"""The standard Transformer of Table 13 ("Std-Transformer"):

    .. math::
        \mathbf{h}_i = \mathbf{W} \mathbf{x}_i + \mathbf{p}_i \to
        [\mathrm{SAB}]^{L} \to \mathrm{mean} \to \mathrm{MLP}

    with learned positional embeddings :math:`\mathbf{p}_i`.

    .. warning::
        **Order-dependent by design**: position :math:`i` is the element's
        index inside its set in :obj:`x`, so reordering a set changes the
        prediction.

    The paper gives only the parameter counts (44K; MZ 83K-114K); one
    Post-LN layer at :math:`d = 64, H = 4, d_{ff} = 128` with 64 learned
    positions gives 44K at :math:`d_{in} = 32`.

    Args:
        in_channels (int): Input feature size.
        out_channels (int): Prediction size.
        channels (int, optional): Width :math:`d`. (default: :obj:`64`)
        heads (int, optional): Heads. (default: :obj:`4`)
        ff_channels (int, optional): FFN width. (default: :obj:`128`)
        num_layers (int, optional): Transformer layers. (default: :obj:`1`)
        max_length (int, optional): Longest set; for a padded batch, the
            largest padded width :obj:`n` (set lengths are not read).
            (default: :obj:`64`)
        dropout (float, optional): Dropout. (default: :obj:`0.1`)
        backend (str, optional): Attention kernel. (default: :obj:`'auto'`)

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
        num_layers: int = 1,
        max_length: int = 64,
        dropout: float = 0.1,
        backend: str = 'auto',
    ):
        super().__init__()
        self.in_channels = in_channels
        self.out_channels = out_channels
        self.channels = channels
        self.lin_in = Linear(in_channels, channels)
        self.position = PositionalEncoding(max_length, channels)
        self.layers = ModuleList([SAB(channels, heads, ff_channels=ff_channels, dropout=dropout,
                                      backend=backend) for _ in range(num_layers)])
        self.head = MLP([channels, channels, out_channels], norm=None)
        self.reset_parameters()

    def reset_parameters(self):
        for module in (self.lin_in, self.position, *self.layers, self.head):
            module.reset_parameters()

    def forward(self, x: Tensor, batch: Tensor | None = None,
                dim_size: int | None = None, *, mask: Tensor | None = None,
                layout: SetLayout | None = None) -> Tensor:
        x, layout = resolve_input(x, batch, dim_size, self.in_channels, mask=mask,
                                  layout=layout, dtype=parameter_dtype(self))
        h = self.lin_in(x) + self.position(layout)
        for layer in self.layers:
            h = layer(h, layout=layout)
        return self.head(layout.mean(h))

    def __repr__(self) -> str:
        return (f'{self.__class__.__name__}({self.in_channels}, {self.out_channels}, '
                f'channels={self.channels}, num_layers={len(self.layers)})')


class MZSequenceTransformer(torch.nn.Module):
    r"""The MZ Transformer of Table 13 ("MZ-Transformer"): the
    :class:`SequenceTransformer` with zonotope tokens and MZ attention,

    .. math::
        \mathrm{ZonotopeEmbedding}(\mathbf{x}_i) + \mathbf{p}_i \to
        [\mathrm{MZ\text{-}SAB}]^{L} \to \mathrm{mean} \to
        \mathrm{MLP}([\mathbf{c} \,\Vert\, \delta])

    (positions added to the centres; the mean of the zonotopes is the exact
    average, its IHW :math:`\delta` is returned as well).

    .. warning::
        **Order-dependent by design**, as :class:`SequenceTransformer`.

    The paper varies :math:`L` with the task's TDOF (Table 13: 83K at
    :math:`L=4` to 114K at :math:`L=32`); with the "lighter" generator FFN
    of width :math:`d_{ff}/2` (App. A.1) our counts at :math:`d_{in} = 32`
    are 79.5K (:math:`L=4`) to 116.4K (:math:`L=32`).

    Args:
        in_channels (int): Input feature size.
        out_channels (int): Prediction size.
        channels (int, optional): Width :math:`d`. (default: :obj:`64`)
        heads (int, optional): Heads. (default: :obj:`4`)
        num_generators (int, optional): :math:`n_g`. (default: :obj:`8`)
        num_matrix_generators (int, optional): :math:`L`. (default: :obj:`4`)
        ff_channels (int, optional): FFN width. (default: :obj:`128`)
        generator_ff_channels (int, optional): Generator FFN width
            (:obj:`None` = :obj:`ff_channels // 2`). (default: :obj:`None`)
        num_layers (int, optional): Transformer layers. (default: :obj:`1`)
        max_length (int, optional): Longest set; for a padded batch, the
            largest padded width :obj:`n` (set lengths are not read).
            (default: :obj:`64`)
        dropout (float, optional): Dropout. (default: :obj:`0.1`)
        backend (str, optional): Attention kernel. (default: :obj:`'auto'`)

    Shapes:
        - **input:** :obj:`x` :obj:`[N, in_channels]`, :obj:`batch` :obj:`[N]`;
          or, the static-shape path, a padded :obj:`x` :obj:`[B, n, in_channels]`
          with :obj:`mask` :obj:`[B, n]` (:func:`~mzlayers.static.bucket_batch`;
          shapes are checked, values are not read)
        - **output:** :obj:`(pred [B, out_channels], ihw [B, d])`
    """
    def __init__(
        self,
        in_channels: int,
        out_channels: int,
        channels: int = 64,
        heads: int = 4,
        num_generators: int = 8,
        num_matrix_generators: int = 4,
        ff_channels: int = 128,
        generator_ff_channels: int | None = None,
        num_layers: int = 1,
        max_length: int = 64,
        dropout: float = 0.1,
        backend: str = 'auto',
    ):
        super().__init__()
        self.in_channels = in_channels
        self.out_channels = out_channels
        self.channels = channels
        self.num_matrix_generators = num_matrix_generators
        self.embedding = ZonotopeEmbedding(in_channels, channels, num_generators)
        self.position = PositionalEncoding(max_length, channels)
        self.layers = ModuleList([
            MZSAB(channels, heads, num_generators=num_generators,
                  num_matrix_generators=num_matrix_generators, ff_channels=ff_channels,
                  generator_ff_channels=generator_ff_channels or ff_channels // 2,
                  dropout=dropout, backend=backend) for _ in range(num_layers)])
        self.head = MLP([2 * channels, channels, out_channels], norm=None)
        self.reset_parameters()

    def reset_parameters(self):
        for module in (self.embedding, self.position, *self.layers, self.head):
            module.reset_parameters()

    def forward(self, x: Tensor, batch: Tensor | None = None, dim_size: int | None = None,
                *, mask: Tensor | None = None,
                layout: SetLayout | None = None) -> tuple[Tensor, Tensor]:
        x, layout = resolve_input(x, batch, dim_size, self.in_channels, mask=mask,
                                  layout=layout, dtype=parameter_dtype(self))
        z = self.embedding(x)
        z = Zonotope(z.center + self.position(layout), z.generators)
        for layer in self.layers:
            z = layer(z, layout=layout)
        pooled = Zonotope(layout.mean(z.center), layout.mean(z.generators))
        ihw = pooled.ihw()
        return self.head(torch.cat([pooled.center, ihw], dim=-1)), ihw

    def __repr__(self) -> str:
        return (f'{self.__class__.__name__}({self.in_channels}, {self.out_channels}, '
                f'channels={self.channels}, '
                f'num_matrix_generators={self.num_matrix_generators}, '
                f'num_layers={len(self.layers)})')
