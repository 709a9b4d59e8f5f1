r"""The zonotope token embedding of Eq. (2)."""
import torch
import torch.nn.functional as F
from torch import Tensor
from torch.nn import LayerNorm

from mzlayers.linear import Linear
from mzlayers.zonotope import Zonotope


class ZonotopeEmbedding(torch.nn.Module):
    r"""Embeds every set element as a zonotope token (Eq. 2 of the MZAttn
    paper):

    .. math::
        \mathbf{c}_i = \mathrm{LayerNorm}(\mathrm{GELU}(\mathbf{W}_c
        \mathbf{x}_i + \mathbf{b}_c)), \qquad
        G_i = \frac{1}{\sqrt{n_g d}} (\mathbf{W}_g \mathbf{x}_i + \mathbf{b}_g)
        \in \mathbb{R}^{n_g \times d}.

    The :math:`1/\sqrt{n_g d}` factor makes the generators small at
    initialisation, so the token starts close to a plain vector embedding.

    Args:
        in_channels (int): Input feature size :math:`d_{in}`.
        channels (int): Model width :math:`d`.
        num_generators (int, optional): Generator budget :math:`n_g`.
            (default: :obj:`8`)

    Shapes:
        - **input:** :obj:`[N, d_in]`
        - **output:** :class:`Zonotope` with centres :obj:`[N, d]` and
          generators :obj:`[N, n_g, d]`
    """
    def __init__(
        self,
        in_channels: int,
        channels: int,
        num_generators: int = 8,
    ):
        super().__init__()
        self.in_channels = in_channels
        self.channels = channels
        self.num_generators = num_generators
        self.lin_center = Linear(in_channels, channels)
        self.norm = LayerNorm(channels)
        self.lin_generators = Linear(in_channels, num_generators * channels)
        self.reset_parameters()

    def reset_parameters(self):
        for lin in (self.lin_center, self.lin_generators):
            torch.nn.init.xavier_uniform_(lin.weight)
            torch.nn.init.zeros_(lin.bias)
        self.norm.reset_parameters()

    def forward(self, x: Tensor) -> Zonotope:
        center = self.norm(F.gelu(self.lin_center(x)))
        scale = (self.num_generators * self.channels) ** -0.5
        generators = self.lin_generators(x) * scale  # [N, n_g * d]
        return Zonotope(center, generators.view(-1, self.num_generators, self.channels))

    def __repr__(self) -> str:
        return (f'{self.__class__.__name__}({self.in_channels}, {self.channels}, '
                f'num_generators={self.num_generators})')
