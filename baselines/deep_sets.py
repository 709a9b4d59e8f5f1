r"""The Deep Sets baseline (Zaheer et al., 2017)."""
import torch
from torch import Tensor
from torch_geometric.nn import MLP

from mzlayers.layout import SetLayout, resolve_input
from mzlayers.validate import check_choice, parameter_dtype

AGGREGATIONS = ('sum', 'mean')


class DeepSets(torch.nn.Module):
    r"""Deep Sets (Zaheer et al., 2017):

    .. math::
        f(S) = \rho\Big(\sum_{\mathbf{x} \in S} \phi(\mathbf{x})\Big)

    with MLPs :math:`\phi` (per element) and :math:`\rho` (per set).  The
    paper gives only the parameter count (36K, Tables 2 and 29; 35K on
    QM9); two-layer :math:`\phi` and :math:`\rho` of width 132 give 36.4K at
    :math:`d_{in} = 8`.  Sum pooling as in the original paper; an empty set
    pools to zero.

    Args:
        in_channels (int): Input feature size.
        out_channels (int): Prediction size.
        hidden_channels (int, optional): Width of :math:`\phi` and
            :math:`\rho`. (default: :obj:`132`)
        num_phi_layers (int, optional): Layers of :math:`\phi`.
            (default: :obj:`2`)
        num_rho_layers (int, optional): Layers of :math:`\rho`.
            (default: :obj:`2`)
        aggr (str, optional): ``'sum'`` or ``'mean'``. (default: :obj:`'sum'`)
        dropout (float, optional): Dropout in both MLPs. (default: :obj:`0.1`)

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
        hidden_channels: int = 132,
        num_phi_layers: int = 2,
        num_rho_layers: int = 2,
        aggr: str = 'sum',
        dropout: float = 0.1,
    ):
        super().__init__()
        check_choice('aggr', aggr, AGGREGATIONS)
        self.in_channels = in_channels
        self.out_channels = out_channels
        self.hidden_channels = hidden_channels
        self.aggr = aggr
        self.phi = MLP(in_channels=in_channels, hidden_channels=hidden_channels,
                       out_channels=hidden_channels, num_layers=num_phi_layers,
                       dropout=dropout, norm=None, plain_last=False)
        self.rho = MLP(in_channels=hidden_channels, hidden_channels=hidden_channels,
                       out_channels=out_channels, num_layers=num_rho_layers,
                       dropout=dropout, norm=None)
        self.reset_parameters()

    def reset_parameters(self):
        self.phi.reset_parameters()
        self.rho.reset_parameters()

    def forward(self, x: Tensor, batch: Tensor | None = None,
                dim_size: int | None = None, *, mask: Tensor | None = None,
                layout: SetLayout | None = None) -> Tensor:
        x, layout = resolve_input(x, batch, dim_size, self.in_channels, mask=mask,
                                  layout=layout, dtype=parameter_dtype(self))
        h = self.phi(x)
        pooled = layout.sum(h) if self.aggr == 'sum' else layout.mean(h)
        return self.rho(pooled)

    def __repr__(self) -> str:
        return (f'{self.__class__.__name__}({self.in_channels}, {self.out_channels}, '
                f'hidden_channels={self.hidden_channels}, aggr={self.aggr})')
