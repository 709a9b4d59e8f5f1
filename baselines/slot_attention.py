r"""The Slot Attention baseline (Locatello et al., 2020) on flat PyG batches."""
import torch
from torch import Tensor
from torch.nn import GRUCell, LayerNorm, Linear, Parameter
from torch_geometric.nn import MLP

from mzlayers import FeedForward
from mzlayers.layout import SetLayout, resolve_input
from mzlayers.size_feature import append_size_feature, size_feature_channels
from mzlayers.validate import parameter_dtype

#: Added to the attention weights before the per-slot normalisation over the
#: inputs, as in the original code (keeps slots that win no input finite).
ATTENTION_EPS = 1e-8


class SlotAttention(torch.nn.Module):
    r"""Slot Attention (Locatello et al., 2020): :math:`K` slots compete for
    the elements of each set over :math:`T` iterations,

    .. math::
        A_{jk} = \mathrm{softmax}_k\Big(\frac{\mathbf{k}_j^{\top}
        \mathbf{q}(\mathbf{s}_k)}{\sqrt{d}}\Big), \quad
        \mathbf{u}_k = \frac{\sum_{j \in S} A_{jk} \mathbf{v}_j}
        {\sum_{j \in S} A_{jk}}, \quad
        \mathbf{s}_k \leftarrow \mathrm{GRU}(\mathbf{u}_k, \mathbf{s}_k)
        + \mathrm{MLP}(\mathrm{LN}(\cdot)),

    where the softmax runs over the *slots* (competition), then the slots
    are averaged and read out by an MLP.  Deviation from the original: the
    initial slots are learned vectors instead of samples from a learned
    Gaussian, so the model is a deterministic function of the set (the
    paper's regression tasks need no slot sampling; it is silent on this).
    Defaults (:math:`d = 64`, :math:`K = 4`, :math:`T = 3`, MLP width 128)
    give the paper's 59K (Tables 28, 29).  An empty set reads out zero.

    Args:
        in_channels (int): Input feature size.
        out_channels (int): Prediction size.
        channels (int, optional): Slot width :math:`d`. (default: :obj:`64`)
        num_slots (int, optional): Slots :math:`K`. (default: :obj:`4`)
        num_iterations (int, optional): Iterations :math:`T`. (default: :obj:`3`)
        ff_channels (int, optional): Slot MLP width. (default: :obj:`128`)
        dropout (float, optional): Dropout in the slot MLP. (default: :obj:`0.1`)
        size_feature (str, optional): Appends a set-size feature to the
            mean slot before the MLP
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
        num_slots: int = 4,
        num_iterations: int = 3,
        ff_channels: int = 128,
        dropout: float = 0.1,
        size_feature: str | None = None,
    ):
        super().__init__()
        self.in_channels = in_channels
        self.out_channels = out_channels
        self.channels = channels
        self.num_slots = num_slots
        self.num_iterations = num_iterations
        self.lin_in = Linear(in_channels, channels)
        self.norm_in = LayerNorm(channels)
        self.lin_q = Linear(channels, channels, bias=False)
        self.lin_k = Linear(channels, channels, bias=False)
        self.lin_v = Linear(channels, channels, bias=False)
        self.gru = GRUCell(channels, channels)
        self.norm_slots = LayerNorm(channels)
        self.norm_ff = LayerNorm(channels)
        self.ffn = FeedForward(channels, ff_channels, dropout)
        self.slots = Parameter(torch.empty(num_slots, channels))
        self.size_feature = size_feature
        self.head = MLP([channels + size_feature_channels(size_feature), channels,
                         out_channels], norm=None)
        self.reset_parameters()

    def reset_parameters(self):
        for module in (self.lin_in, self.norm_in, self.gru, self.norm_slots,
                       self.norm_ff, self.ffn, self.head):
            module.reset_parameters()
        for lin in (self.lin_q, self.lin_k, self.lin_v):
            torch.nn.init.xavier_uniform_(lin.weight)
        torch.nn.init.xavier_uniform_(self.slots)

    def updates(self, slots: Tensor, k: Tensor, v: Tensor, layout: SetLayout) -> Tensor:
        r"""One round of slot competition: the weighted input means
        :math:`\mathbf{u}` :obj:`[B, K, d]` of :obj:`slots` :obj:`[B, K, d]`
        over the keys :obj:`k` and values :obj:`v` :obj:`[N, d]` of the rows
        of :obj:`layout` (padding rows of a padded layout are skipped)."""
        q = self.lin_q(self.norm_slots(slots))  # [B, K, d]
        logits = (k.unsqueeze(1) * q[layout.batch]).sum(-1) / self.channels**0.5
        attn = logits.softmax(dim=-1) + ATTENTION_EPS  # [N, K], over slots
        total = layout.sum(attn)  # [B, K], over the real elements; 0 for empty sets
        attn = attn / total.masked_fill(total == 0, 1.0)[layout.batch]
        return layout.sum(attn.unsqueeze(-1) * v.unsqueeze(1))  # [B, K, d]

    def forward(self, x: Tensor, batch: Tensor | None = None,
                dim_size: int | None = None, *, mask: Tensor | None = None,
                layout: SetLayout | None = None) -> Tensor:
        x, layout = resolve_input(x, batch, dim_size, self.in_channels, mask=mask,
                                  layout=layout, dtype=parameter_dtype(self))
        h = self.norm_in(self.lin_in(x).relu())
        k, v = self.lin_k(h), self.lin_v(h)
        B, K, d = layout.num_sets, self.num_slots, self.channels
        slots = self.slots.expand(B, K, d)
        for _ in range(self.num_iterations):
            u = self.updates(slots, k, v, layout)
            slots = self.gru(u.reshape(B * K, d), slots.reshape(B * K, d)).view(B, K, d)
            slots = slots + self.ffn(self.norm_ff(slots))
        pooled = slots.mean(1) * layout.nonempty.unsqueeze(-1)
        return self.head(append_size_feature(pooled, layout, self.size_feature))

    def __repr__(self) -> str:
        return (f'{self.__class__.__name__}({self.in_channels}, {self.out_channels}, '
                f'channels={self.channels}, num_slots={self.num_slots}, '
                f'num_iterations={self.num_iterations})')
