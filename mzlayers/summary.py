r"""Permutation-invariant set summaries that drive the MZAttn gates."""
import torch
from torch import Tensor
from torch_geometric.utils import softmax

from mzlayers.layout import SetLayout
from mzlayers.linear import Linear
from mzlayers.validate import check_choice

SUMMARIES = ('mean', 'moment', 'attention')


class SetSummary(torch.nn.Module):
    r"""A per-set statistic :math:`\mu(S)` of the key/value centres.

    * ``'mean'``: :math:`\bar{\mathbf{c}} = \frac{1}{n}\sum_j \mathbf{c}_j`
      (the paper's default, Sec. 2.3).
    * ``'moment'``: :math:`[\bar{\mathbf{c}} \,\Vert\,
      \frac{1}{n}\sum_j \mathbf{c}_j^{\odot 2}]` (second moment, App. A.1).
    * ``'attention'``: :math:`\sum_j \mathrm{softmax}_j(\mathbf{w}^{\top}
      \mathbf{c}_j)\,\mathbf{c}_j` (attention-pooled, App. A.1).

    An empty set summarises to zero.

    Args:
        channels (int): Centre width :math:`d`.
        kind (str, optional): ``'mean'``, ``'moment'`` or ``'attention'``.
            (default: :obj:`'mean'`)

    Shapes:
        - **input:** centres :obj:`[N, d]` with a :class:`SetLayout`
        - **output:** :obj:`[B, out_channels]`
    """
    def __init__(self, channels: int, kind: str = 'mean'):
        super().__init__()
        check_choice('summary', kind, SUMMARIES)
        self.channels = channels
        self.kind = kind
        self.out_channels = 2 * channels if kind == 'moment' else channels
        self.score = Linear(channels, 1) if kind == 'attention' else None
        self.reset_parameters()

    def reset_parameters(self):
        if self.score is not None:
            torch.nn.init.xavier_uniform_(self.score.weight)
            torch.nn.init.zeros_(self.score.bias)

    def forward(self, center: Tensor, layout: SetLayout) -> Tensor:
        if self.kind == 'mean':
            return layout.mean(center)
        if self.kind == 'moment':
            return layout.mean(torch.cat([center, center * center], dim=-1))
        score = self.score(center)
        if layout.mask is not None:  # padding gets no weight
            score = score.masked_fill(~layout.mask[:, None], torch.finfo(score.dtype).min)
        weight = softmax(score, layout.batch, num_nodes=layout.num_sets)
        return layout.sum(weight * center)

    def __repr__(self) -> str:
        return f'{self.__class__.__name__}({self.channels}, kind={self.kind})'
