r"""The linear-attention Set Transformer baseline (LA-ST, Tables 3, 23)."""
import torch.nn.functional as F
from torch import Tensor

from mzlayers import MultiheadSetAttention, SetTransformer
from mzlayers.layout import SetLayout


def feature_map(x: Tensor) -> Tensor:
    r"""The positive feature map :math:`\phi(x) = \mathrm{elu}(x) + 1` of
    Katharopoulos et al. (2020)."""
    return F.elu(x) + 1.0


class LinearSetAttention(MultiheadSetAttention):
    r"""Linear attention (Katharopoulos et al., 2020) between ragged sets:

    .. math::
        \mathbf{o}_i = \frac{\phi(\mathbf{q}_i)^{\top} \sum_{j \in b}
        \phi(\mathbf{k}_j) \mathbf{v}_j^{\top}}{\phi(\mathbf{q}_i)^{\top}
        \sum_{j \in b} \phi(\mathbf{k}_j)}, \qquad
        \phi = \mathrm{elu} + 1,

    per head, with the two key sums computed once per set by segment sums
    (:meth:`SetLayout.sum <mzlayers.layout.SetLayout.sum>`, which skips the
    padding rows of a padded layout), so the cost is linear in the set
    size.  It equals the normalised quadratic form
    :math:`\mathrm{diag}(A \mathbf{1})^{-1} A V` with
    :math:`A_{ij} = \phi(\mathbf{q}_i)^{\top}\phi(\mathbf{k}_j)` (tested).
    There is no attention matrix, so attention dropout does not apply; an
    empty set gives a zero output.  Projections as in
    :class:`~mzlayers.MultiheadSetAttention`.

    Args:
        channels (int): Model width :math:`d`.
        heads (int, optional): Number of heads. (default: :obj:`1`)
        dropout (float, optional): Kept for interface compatibility (unused).
            (default: :obj:`0.`)
        backend (str, optional): Kept for interface compatibility (unused).
            (default: :obj:`'auto'`)

    Shapes:
        - **input:** as :class:`~mzlayers.MultiheadSetAttention`
        - **output:** :obj:`[N_q, d]` or :obj:`[B * M, d]`
    """
    def attend(self, q: Tensor, k: Tensor, v: Tensor, key_layout: SetLayout,
               query_layout: SetLayout | None) -> Tensor:
        q, k, v = (self.split_heads(t) for t in (q, k, v))  # [*, H, d_k]
        phi_q, phi_k = feature_map(q), feature_map(k)
        B = key_layout.num_sets
        kv = key_layout.sum(phi_k.unsqueeze(-1) * v.unsqueeze(-2))  # [B, H, d_k, d_v]
        z = key_layout.sum(phi_k)  # [B, H, d_k]; both over the real keys only
        if query_layout is None:  # learned queries, set-major rows [B * M]
            M = q.size(0)
            kv, z = kv.repeat_interleave(M, dim=0), z.repeat_interleave(M, dim=0)
            phi_q = phi_q.repeat(B, 1, 1)
        else:
            kv, z = kv[query_layout.batch], z[query_layout.batch]
        num = (phi_q.unsqueeze(-1) * kv).sum(-2)  # [*, H, d_v]
        den = (phi_q * z).sum(-1, keepdim=True)  # [*, H, 1], 0 only for empty sets
        return (num / den.masked_fill(den == 0, 1.0)).flatten(-2)


class LinearAttentionSetTransformer(SetTransformer):
    r"""The paper's LA-ST baseline: a :class:`~mzlayers.SetTransformer` in
    which every MAB (encoder, PMA and decoder) uses
    :class:`LinearSetAttention`:
    :obj:`SetTransformer(..., attention=LinearSetAttention)`.  The registry uses the ST-Large widths
    (:math:`d = 80`, :math:`d_{ff} = 200`), the parameter-matched budget of
    Table 3 (359K); linear attention adds no parameters.

    Args:
        in_channels (int): Input feature size.
        out_channels (int): Prediction size.
        **kwargs (optional): Further keyword arguments of
            :class:`~mzlayers.SetTransformer` (all but :obj:`attention`).

    Shapes:
        - **input:** :obj:`x` :obj:`[N, in_channels]`, :obj:`batch` :obj:`[N]`;
          or, the static-shape path, a padded :obj:`x` :obj:`[B, n, in_channels]`
          with :obj:`mask` :obj:`[B, n]` (:func:`~mzlayers.static.bucket_batch`;
          shapes are checked, values are not read)
        - **output:** :obj:`[B, out_channels]`
    """
    def __init__(self, in_channels: int, out_channels: int, **kwargs):
        super().__init__(in_channels, out_channels, attention=LinearSetAttention, **kwargs)
