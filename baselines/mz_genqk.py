r"""MZ-GenQK (Table 10): MZ attention whose scores also see the generators."""
import torch
from torch import Tensor
from torch.nn import Linear

from mzlayers import MZMultiheadAttention, MZSetTransformer, Zonotope


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
    attention layers.  The IHW terms enter through
    :meth:`queries_keys`.  Arguments as in
    :class:`~mzlayers.MZMultiheadAttention` (keyword-only after
    :obj:`heads`).

    Shapes:
        - **input / output:** as :class:`~mzlayers.MZMultiheadAttention`
    """
    def __init__(
        self,
        channels: int,
        heads: int = 1,
        *,
        num_generators: int = 8,
        num_matrix_generators: int = 4,
        summary: str = 'mean',
        dropout: float = 0.0,
        backend: str = 'auto',
    ):
        super().__init__(channels, heads, num_generators=num_generators,
                         num_matrix_generators=num_matrix_generators, summary=summary,
                         dropout=dropout, backend=backend)
        self.lin_q_gen = Linear(channels, channels)
        self.lin_k_gen = Linear(channels, channels)
        self.reset_parameters()

    def reset_parameters(self):
        super().reset_parameters()
        if not hasattr(self, 'lin_k_gen'):  # the parent's __init__ resets first
            return
        for lin in (self.lin_q_gen, self.lin_k_gen):
            torch.nn.init.xavier_uniform_(lin.weight)
            torch.nn.init.zeros_(lin.bias)

    def queries_keys(self, x: Zonotope, y: Zonotope) -> tuple[Tensor, Tensor]:
        r"""The centre queries and keys plus the projected IHW,
        :math:`\mathbf{W}_Q \mathbf{c}_i + \mathbf{W}_q^{gen} \delta_i`
        :obj:`[N_q, H d_k]` and
        :math:`\mathbf{W}_K \mathbf{c}_j + \mathbf{W}_k^{gen} \delta_j`
        :obj:`[N, H d_k]`."""
        q, k = super().queries_keys(x, y)
        return q + self.lin_q_gen(x.ihw()), k + self.lin_k_gen(y.ihw())


class MZGenQKSetTransformer(MZSetTransformer):
    r"""The MZ Set Transformer (MZ-Full configuration by default) with
    :class:`GenQKAttention` in every MZ-MAB (Table 10, 415K):
    :obj:`MZSetTransformer(..., attention=GenQKAttention)`.

    Args:
        in_channels (int): Input feature size.
        out_channels (int): Prediction size.
        **kwargs (optional): Further keyword arguments of
            :class:`~mzlayers.MZSetTransformer` (all but :obj:`attention`).

    Shapes:
        - **input:** :obj:`x` :obj:`[N, in_channels]`, :obj:`batch` :obj:`[N]`;
          or, the static-shape path, a padded :obj:`x` :obj:`[B, n, in_channels]`
          with :obj:`mask` :obj:`[B, n]` (:func:`~mzlayers.static.bucket_batch`;
          shapes are checked, values are not read)
        - **output:** :obj:`(pred [B, out_channels], ihw [B, k * d])`
    """
    def __init__(self, in_channels: int, out_channels: int, **kwargs):
        super().__init__(in_channels, out_channels, attention=GenQKAttention, **kwargs)
