r"""MZ-GenQK (Table 10): MZ attention whose scores also see the generators."""
import torch
from mzattn.baselines._swap import all_mabs, swap_attention
from torch import Tensor
from torch.nn import Linear

from mzlayers import MZMultiheadAttention, MZSetTransformer, Zonotope
from mzlayers.layout import SetLayout


class GenQKAttention(MZMultiheadAttention):
    r"""MZ multi-head attention with generator information in the Q/K
    scoring (Table 10, "MZ-GenQK"): projections
    :math:`\mathbf{W}_q^{gen}, \mathbf{W}_k^{gen}` of each token's
    interval-hull half-width :math:`\delta = \sum_g |G_g|` are added to the
    centre queries and keys,

    .. math::
        \alpha_{ij} = \mathrm{softmax}_j\Big(
        \big(\mathbf{W}_Q \mathbf{c}_i + \mathbf{W}_q^{gen} \delta_i\big)^{\top}
        \big(\mathbf{W}_K \mathbf{c}_j + \mathbf{W}_k^{gen} \delta_j\big)
        / \sqrt{d_k}\Big);

    the value path is :class:`~mzlayers.MZMultiheadAttention`'s.  Two
    :math:`d \times d` projections (with bias) per attention layer give the
    paper's ":math:`\sim`\ 50K additional" parameters over MZ-Full's six
    attention layers.  The IHW terms are computed in :meth:`forward` and
    consumed by :meth:`attend` within the same call.  Arguments as in
    :class:`~mzlayers.MZMultiheadAttention`.

    Shapes:
        - **input / output:** as :class:`~mzlayers.MZMultiheadAttention`
    """
    def __init__(
        self,
        channels: int,
        heads: int = 1,
        num_generators: int = 8,
        num_matrix_generators: int = 4,
        summary: str = 'mean',
        dropout: float = 0.0,
        backend: str = 'auto',
    ):
        super().__init__(channels, heads, num_generators, num_matrix_generators,
                         summary, dropout, backend)
        self.lin_q_gen = Linear(channels, channels)
        self.lin_k_gen = Linear(channels, channels)
        self._score_terms: tuple[Tensor, Tensor] | None = None
        self.reset_parameters()

    def reset_parameters(self):
        super().reset_parameters()
        if not hasattr(self, 'lin_k_gen'):  # the parent's __init__ resets first
            return
        for lin in (self.lin_q_gen, self.lin_k_gen):
            torch.nn.init.xavier_uniform_(lin.weight)
            torch.nn.init.zeros_(lin.bias)

    def forward(self, x: Zonotope | Tensor, y: Zonotope | Tensor,
                key_layout: SetLayout,
                query_layout: SetLayout | None = None) -> Zonotope:
        x, y = Zonotope.wrap(x, self.num_generators), Zonotope.wrap(y, self.num_generators)
        self._score_terms = (self.split_heads(self.lin_q_gen(x.ihw())),
                             self.split_heads(self.lin_k_gen(y.ihw())))
        try:
            return super().forward(x, y, key_layout, query_layout)
        finally:
            self._score_terms = None

    def attend(self, q: Tensor, k: Tensor, v: Tensor, key_layout: SetLayout,
               query_layout: SetLayout | None) -> Tensor:
        q_gen, k_gen = self._score_terms
        return super().attend(q + q_gen, k + k_gen, v, key_layout, query_layout)


class MZGenQKSetTransformer(MZSetTransformer):
    r"""The MZ Set Transformer (MZ-Full configuration by default) with
    :class:`GenQKAttention` in every MZ-MAB (Table 10, 415K).  Arguments as
    in :class:`~mzlayers.MZSetTransformer`.

    Args:
        in_channels (int): Input feature size.
        out_channels (int): Prediction size.
        **kwargs (optional): Further arguments of
            :class:`~mzlayers.MZSetTransformer`.

    Shapes:
        - **input:** :obj:`x` :obj:`[N, in_channels]`, :obj:`batch` :obj:`[N]`
        - **output:** :obj:`(pred [B, out_channels], ihw [B, k * d])`
    """
    def __init__(self, in_channels: int, out_channels: int, **kwargs):
        super().__init__(in_channels, out_channels, **kwargs)
        swap_attention(all_mabs(self), lambda old: GenQKAttention(
            old.channels, old.heads, old.num_generators, old.num_matrix_generators,
            old.summary.kind, old.dropout, old.backend))
