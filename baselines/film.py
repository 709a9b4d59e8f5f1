r"""The FiLM-conditioned Set Transformer baseline (ST + FiLM, Table 2)."""
import torch
from torch import Tensor
from torch.nn import Linear

from mzlayers import MultiheadSetAttention, SetTransformer
from mzlayers.layout import SetLayout


class FiLMSetAttention(MultiheadSetAttention):
    r"""Multi-head set attention whose values are modulated by FiLM
    (Perez et al., 2018) from the mean :math:`\mu` of the key set:

    .. math::
        \mathbf{v}_j = \boldsymbol{\gamma}(\mu) \odot
        (\mathbf{W}_V \mathbf{y}_j + \mathbf{b}_V) + \boldsymbol{\beta}(\mu),
        \qquad [\boldsymbol{\gamma} - 1 \,\Vert\, \boldsymbol{\beta}] =
        \mathbf{W}_F \mu + \mathbf{b}_F,

    i.e. the context-adaptive value map is *diagonal*,
    :math:`\mathrm{diag}(\boldsymbol{\gamma}(\mu)) \mathbf{W}_V`, the
    restriction that Sec. 5 / Task F contrast with the matrix zonotope.
    :math:`\boldsymbol{\gamma}` is parameterised around 1 so that with
    :math:`\mathbf{W}_F = 0` the layer is standard attention.  Scores and
    kernel are :class:`~mzlayers.MultiheadSetAttention`'s; only
    :meth:`values` differs.

    Args:
        channels (int): Model width :math:`d`.
        heads (int, optional): Number of heads. (default: :obj:`1`)
        dropout (float, optional): Dropout on attention weights.
            (default: :obj:`0.`)
        backend (str, optional): Attention kernel. (default: :obj:`'auto'`)

    Shapes:
        - **input:** as :class:`~mzlayers.MultiheadSetAttention`
        - **output:** :obj:`[N_q, d]` or :obj:`[B * M, d]`
    """
    def __init__(
        self,
        channels: int,
        heads: int = 1,
        dropout: float = 0.0,
        backend: str = 'auto',
    ):
        super().__init__(channels, heads, dropout, backend)
        self.lin_film = Linear(channels, 2 * channels)
        self.reset_parameters()

    def reset_parameters(self):
        super().reset_parameters()
        torch.nn.init.xavier_uniform_(self.lin_film.weight)
        torch.nn.init.zeros_(self.lin_film.bias)

    def modulation(self, y: Tensor, key_layout: SetLayout) -> tuple[Tensor, Tensor]:
        r"""The per-set scale :math:`\boldsymbol{\gamma}` and shift
        :math:`\boldsymbol{\beta}`, each :obj:`[B, d]`."""
        delta, beta = self.lin_film(key_layout.mean(y)).chunk(2, dim=-1)
        return 1.0 + delta, beta

    def values(self, y: Tensor, key_layout: SetLayout) -> Tensor:
        gamma, beta = self.modulation(y, key_layout)
        index = key_layout.batch
        return gamma[index] * self.lin_v(y) + beta[index]


class FiLMSetTransformer(SetTransformer):
    r"""The paper's "ST + FiLM" baseline: the standard
    :class:`~mzlayers.SetTransformer` in which the first MAB of every ISAB
    (inducing points attending to the set elements) uses
    :class:`FiLMSetAttention`, conditioned on the mean of the block's input
    set: :obj:`SetTransformer(..., induced_attention=FiLMSetAttention)`.

    The paper gives only the parameter count (225K, Table 2).  It is
    met by one FiLM generator :math:`\mathbf{W}_F \in \mathbb{R}^{2d \times d}`
    per encoder block (:math:`2 \times 8{,}320` parameters on top of
    Standard's 208K); PMA and the decoder keep standard attention.

    Args:
        in_channels (int): Input feature size.
        out_channels (int): Prediction size.
        **kwargs (optional): Further keyword arguments of
            :class:`~mzlayers.SetTransformer` (all but
            :obj:`induced_attention`).

    Shapes:
        - **input:** :obj:`x` :obj:`[N, in_channels]`, :obj:`batch` :obj:`[N]`;
          or, the static-shape path, a padded :obj:`x` :obj:`[B, n, in_channels]`
          with :obj:`mask` :obj:`[B, n]` (:func:`~mzlayers.static.bucket_batch`;
          shapes are checked, values are not read)
        - **output:** :obj:`[B, out_channels]`
    """
    def __init__(self, in_channels: int, out_channels: int, **kwargs):
        super().__init__(in_channels, out_channels, induced_attention=FiLMSetAttention,
                         **kwargs)
