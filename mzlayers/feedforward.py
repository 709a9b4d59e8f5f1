r"""The row-wise feed-forward network of the Set Transformer blocks."""
import torch
from torch import Tensor
from torch.nn import Dropout, Identity, ReLU, Sequential

from mzlayers.linear import Linear


class FeedForward(torch.nn.Module):
    r"""Row-wise feed-forward network
    :math:`\mathbf{W}_2\,\mathrm{Dropout}(\mathrm{ReLU}(\mathbf{W}_1 \mathbf{x}
    + \mathbf{b}_1)) + \mathbf{b}_2`, applied to every row of :obj:`x`.

    Args:
        channels (int): Input and output size.
        hidden_channels (int): Hidden size.
        dropout (float, optional): Dropout after the activation (none at
            all when :obj:`0.`, so that training keeps no copy of the hidden
            layer).
            (default: :obj:`0.`)
        bias (bool, optional): If set to :obj:`False`, both linear maps have
            no bias (used on zonotope generators, so that a zero generator
            stays zero). (default: :obj:`True`)

    Shapes:
        - **input:** :obj:`[*, channels]`
        - **output:** :obj:`[*, channels]`
    """
    def __init__(
        self,
        channels: int,
        hidden_channels: int,
        dropout: float = 0.0,
        bias: bool = True,
    ):
        super().__init__()
        self.channels = channels
        self.hidden_channels = hidden_channels
        self.net = Sequential(
            Linear(channels, hidden_channels, bias=bias),
            ReLU(),
            Dropout(dropout) if dropout > 0 else Identity(),
            Linear(hidden_channels, channels, bias=bias),
        )
        self.reset_parameters()

    def reset_parameters(self):
        for lin in (self.net[0], self.net[3]):
            torch.nn.init.xavier_uniform_(lin.weight)
            if lin.bias is not None:
                torch.nn.init.zeros_(lin.bias)

    def forward(self, x: Tensor) -> Tensor:
        return self.net(x)

    def __repr__(self) -> str:
        return f'{self.__class__.__name__}({self.channels}, {self.hidden_channels})'
