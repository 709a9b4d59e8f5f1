r"""Matrix Zonotopic multi-head attention (Eq. 3 of the MZAttn paper)."""

import torch
from torch import Tensor
from torch.nn import Parameter
from torch.utils.checkpoint import checkpoint

from mzlayers.generator_path import GeneratorTail, budgeted_generators, in_transform
from mzlayers.layout import SetLayout
from mzlayers.linear import Linear, linear
from mzlayers.multihead import MultiheadSetAttention
from mzlayers.summary import SetSummary
from mzlayers.zonotope import Zonotope


class MZMultiheadAttention(MultiheadSetAttention):
    r"""Matrix Zonotopic multi-head attention from the `"Matrix Zonotopic
    Attention"` paper (Sec. 2.3, Eq. 3): the fixed value projection of
    standard attention is followed, per head :math:`h`, by a context-gated
    matrix zonotope :math:`M^{(h)}(\mu) = M_c^{(h)} + \sum_{l=1}^{L}
    \gamma_l(\mu) M_l^{(h)}`.

    Scores use centres only; values carry their generators through
    :math:`\mathbf{W}_V` (linear maps act on every generator row):

    .. math::
        \alpha_{ij} &= \mathrm{softmax}_j\big(\mathbf{q}_i^{\top}
        \mathbf{k}_j / \sqrt{d_k}\big), \quad
        (\hat{\mathbf{c}}_i, \hat{G}_i) = \textstyle\sum_j \alpha_{ij}
        (\mathbf{W}_V \mathbf{c}_j + \mathbf{b}_V,\; G_j \mathbf{W}_V^{\top})

        \gamma &= \tanh(\mathbf{W}_\gamma \mu(S_{kv}) + \mathbf{b}_\gamma)
        \in [-1, 1]^{H \times L}

        \mathbf{o}^c_i &= M_c \hat{\mathbf{c}}_i, \qquad
        O^G_i = \hat{G}_i M_c^{\top} + W_{\mathrm{mix}}\,
        \mathrm{stack}_l\big[\gamma_l M_l \hat{\mathbf{c}}_i\big]

    and heads are concatenated and projected by :math:`\mathbf{W}_O` (centre
    with bias, generator rows without).  Initialisation (App. A.1):
    :math:`M_c = I`, :math:`M_l \sim \mathcal{N}(0, 0.02^2)`,
    :math:`W_{\mathrm{mix}} \sim \mathcal{N}(0, 0.1^2)`, Xavier uniform
    elsewhere; with :math:`M_l = 0` the centre output equals
    :class:`torch.nn.MultiheadAttention` with the same
    :math:`\mathbf{W}_{Q,K,V,O}`.  :math:`W_{\mathrm{mix}}` is per head
    (:obj:`[H, n_g, L]`).

    The generator rows after the attention weights go through
    :func:`~mzlayers.generator_path.budgeted_generators`, which keeps only
    the attention output for backward and recomputes the per-head products
    (first-order gradients; :obj:`recompute=False` stores them); an MZ-MAB
    calls :meth:`aggregate` and :meth:`generators` itself, so that the same
    function also runs the rest of its generator path.

    Variants override :meth:`queries_keys` to change the scores (e.g.
    MZ-GenQK in :mod:`mzattn.baselines` adds generator terms) and are built
    by the blocks through their :obj:`attention=` factory argument.

    Args:
        channels (int): Model width :math:`d`.
        heads (int, optional): Number of heads :math:`H`. (default: :obj:`1`)
        num_generators (int, optional): Zonotope generator budget
            :math:`n_g`. (default: :obj:`8`)
        num_matrix_generators (int, optional): Matrix-zonotope generators
            :math:`L` per head. (default: :obj:`4`)
        summary (str, optional): Set statistic :math:`\mu` of the gates,
            ``'mean'``, ``'moment'`` or ``'attention'`` (see
            :class:`~mzlayers.summary.SetSummary`). (default: :obj:`'mean'`)
        dropout (float, optional): Dropout on attention weights.
            (default: :obj:`0.`)
        backend (str, optional): Attention kernel. (default: :obj:`'auto'`)
        recompute (bool, optional): If set to :obj:`False`, autograd stores
            what backward needs instead of recomputing it: the attention
            (its queries, keys, values and weights) and the generator path's
            per-head products (:func:`~mzlayers.generator_path.budgeted_generators`
            with :obj:`recompute=False`).  About 20% faster and 20% fewer
            operators for MZ-Full's training step, at several times the
            memory (``docs/benchmarks.md``, "Recomputation against stored
            activations"); :func:`set_recompute` sets it on a built model.
            (default: :obj:`True`)

    Options after :obj:`heads` are keyword-only.

    Shapes:
        - **input:** query zonotope :obj:`[N_q, ...]` (or :obj:`[M, ...]`
          learned queries), key/value zonotope :obj:`[N, ...]` with
          :obj:`n_g` generators
        - **output:** :class:`Zonotope`, centres :obj:`[N_q, d]` (or
          :obj:`[B * M, d]`), generators :obj:`[*, n_g, d]`
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
        recompute: bool = True,
    ):
        super().__init__(channels, heads, dropout, backend)
        self.recompute = recompute
        self.num_generators = num_generators
        self.num_matrix_generators = num_matrix_generators
        H, L, C = heads, num_matrix_generators, self.head_channels
        self.matrix_center = Parameter(torch.empty(H, C, C))
        self.matrix_generators = Parameter(torch.empty(H, L, C, C))
        self.mix = Parameter(torch.empty(H, num_generators, L))
        self.summary = SetSummary(channels, summary)
        self.lin_gate = Linear(self.summary.out_channels, H * L)
        self.reset_parameters()

    def reset_parameters(self):
        super().reset_parameters()
        with torch.no_grad():
            self.matrix_center.copy_(torch.eye(self.head_channels).expand_as(
                self.matrix_center))
        torch.nn.init.normal_(self.matrix_generators, std=0.02)
        torch.nn.init.normal_(self.mix, std=0.1)
        self.summary.reset_parameters()
        torch.nn.init.xavier_uniform_(self.lin_gate.weight)
        torch.nn.init.zeros_(self.lin_gate.bias)

    def gates(self, y: Zonotope, key_layout: SetLayout) -> Tensor:
        r""":math:`\gamma`, shape :obj:`[B, H, L]`."""
        mu = self.summary(y.center, key_layout)
        gamma = torch.tanh(self.lin_gate(mu))
        return gamma.view(-1, self.heads, self.num_matrix_generators)

    def queries_keys(self, x: Zonotope, y: Zonotope) -> tuple[Tensor, Tensor]:
        r"""The queries :obj:`[N_q, H d_k]` of the query zonotopes :obj:`x`
        and keys :obj:`[N, H d_k]` of the key zonotopes :obj:`y` that the
        scores compare, heads concatenated: projections of the centres only,
        :math:`\mathbf{W}_Q \mathbf{c}_i` and :math:`\mathbf{W}_K \mathbf{c}_j`
        (Eq. 3)."""
        return self.lin_q(x.center), self.lin_k(y.center)

    def aggregate(self, x: Zonotope | Tensor, y: Zonotope | Tensor,
                  key_layout: SetLayout, query_layout: SetLayout | None = None
                  ) -> tuple[Tensor, Tensor, Tensor]:
        r"""The attention up to its generator output: the centre output
        :math:`\mathbf{W}_O \Vert_h M_c \hat{\mathbf{c}} + \mathbf{b}_O`
        :obj:`[N_q, d]`, the attention outputs :math:`(\hat{\mathbf{c}},
        \hat G)` :obj:`[N_q, H, 1 + n_g, d_k]` (centre first) and the gates
        :math:`\gamma` of every query :obj:`[N_q, H, L]`, which
        :meth:`generators` maps to the generator output."""
        x, y = Zonotope.wrap(x, self.num_generators), Zonotope.wrap(y, self.num_generators)
        H, C, G = self.heads, self.head_channels, self.num_generators
        args = (x.center, x.generators, y.center, y.generators, key_layout, query_layout)
        if self.recompute and torch.is_grad_enabled() and not (
                torch.compiler.is_compiling() or in_transform()):
            # eager: backward recomputes the queries, keys and values and the
            # attention (the values are (1 + n_g) d wide per key) from the
            # zonotopes, which the block keeps anyway; nothing but the
            # generator path keeps the attention output, whose memory its
            # backward reuses for the output's gradient (generators).
            # Compiled graphs leave the choice to the compiler's partitioner,
            # torch.func transforms (mzattn.stacked) store them; no metadata
            # check, which cannot read the sizes of the nested backend's
            # tensors
            out = checkpoint(self._attend_zonotopes, *args, use_reentrant=False,
                             determinism_check='none')
        else:
            out = self._attend_zonotopes(*args)
        agg = out.view(-1, H, 1 + G, C)  # centre first: [N_q, H, 1 + n_g, C]

        gamma = self.gates(y, key_layout)
        if query_layout is None:  # learned queries: rows are set-major
            gamma = gamma.repeat_interleave(x.center.size(0), dim=0)
        else:
            gamma = gamma[query_layout.batch]
        return self._center_output(agg), agg, gamma

    def _center_output(self, agg: Tensor) -> Tensor:
        r"""The centre output :math:`\mathbf{W}_O \Vert_h M_c^{(h)}
        \hat{\mathbf{c}}^{(h)} + \mathbf{b}_O` :obj:`[N_q, d]` of attention
        outputs :obj:`agg` as one linear map of :math:`\Vert_h
        \hat{\mathbf{c}}^{(h)}` with the weight :math:`\mathbf{W}_O
        \operatorname{diag}_h(M_c^{(h)})`: backward keeps that copy of the
        centres, and no view of :obj:`agg` (the generator path writes its
        gradient over :obj:`agg`) nor the heads' products."""
        H, C = self.heads, self.head_channels
        weight = self.lin_o.weight  # W_O diag_h(M_c): [d, H, C] x M_c per head, one bmm
        weight = torch.bmm(weight.view(-1, H, C).transpose(0, 1), self.matrix_center)
        c = agg[:, :, 0].clone(memory_format=torch.contiguous_format)  # a copy, always
        c = c.view(-1, H * C)  # [N_q, H C]
        return linear(c, weight.transpose(0, 1).reshape(-1, H * C), self.lin_o.bias)

    def _attend_zonotopes(self, x_center: Tensor, x_generators: Tensor, y_center: Tensor,
                          y_generators: Tensor, key_layout: SetLayout,
                          query_layout: SetLayout | None) -> Tensor:
        r"""The attention of the query zonotopes :math:`X` to the key
        zonotopes :math:`Y` (scores from :meth:`queries_keys`) over the
        values :math:`(\mathbf{W}_V \mathbf{c}_j + \mathbf{b}_V, G_j
        \mathbf{W}_V^{\top})` of :math:`Y`, centre and generators of a head
        side by side, heads concatenated: :obj:`[N_q, H (1 + n_g) d_k]`."""
        y = Zonotope(y_center, y_generators)
        q, k = self.queries_keys(Zonotope(x_center, x_generators), y)
        v = y.linear_map(self.lin_v.weight, self.lin_v.bias)
        v_c = self.split_heads(v.center).unsqueeze(2)  # [N, H, 1, C]
        v_g = self.split_heads(v.generators).transpose(1, 2)  # [N, H, n_g, C]
        values = torch.cat([v_c, v_g], dim=2).flatten(1)  # [N, H (1 + n_g) C]
        return self.attend(q, k, values, key_layout, query_layout)

    def generators(self, agg: Tensor, gates: Tensor,
                   tail: GeneratorTail | None = None) -> Tensor:
        r"""The generator output :obj:`[N_q, n_g, d]` of attention outputs
        :obj:`agg` and :obj:`gates` (from :meth:`aggregate`), followed by the
        rest of an MZ-MAB's generator path when :obj:`tail` is given
        (:func:`~mzlayers.generator_path.budgeted_generators`).  Its
        backward writes the gradient of :obj:`agg` over :obj:`agg`, which
        nothing else keeps (:meth:`aggregate` recomputes its attention in
        backward, and its centre output a copy of the centres)."""
        return budgeted_generators(agg, gates, self.matrix_center, self.matrix_generators,
                                   self.mix, self.lin_o.weight, tail, consume=True,
                                   recompute=self.recompute)

    def forward(self, x: Zonotope | Tensor, y: Zonotope | Tensor,
                key_layout: SetLayout,
                query_layout: SetLayout | None = None) -> Zonotope:
        center, agg, gamma = self.aggregate(x, y, key_layout, query_layout)
        return Zonotope(center, self.generators(agg, gamma))

    def __repr__(self) -> str:
        return (f'{self.__class__.__name__}({self.channels}, heads={self.heads}, '
                f'num_generators={self.num_generators}, '
                f'num_matrix_generators={self.num_matrix_generators}, '
                f'summary={self.summary.kind}, backend={self.backend})')


def set_recompute(module: torch.nn.Module, recompute: bool) -> torch.nn.Module:
    r"""Sets :obj:`recompute` on every :class:`MZMultiheadAttention` inside
    :obj:`module` (a built model, a block) and returns :obj:`module`:
    :obj:`False` stores the attention's activations instead of recomputing
    them in backward (faster, more memory)."""
    for child in module.modules():
        if isinstance(child, MZMultiheadAttention):
            child.recompute = recompute
    return module


def activations(module: torch.nn.Module) -> str | None:
    r""":obj:`"stored"` when an :class:`MZMultiheadAttention` inside
    :obj:`module` stores its activations, :obj:`"recomputed"` when every one
    recomputes them, :obj:`None` without MZ attention."""
    flags = {child.recompute for child in module.modules()
             if isinstance(child, MZMultiheadAttention)}
    return None if not flags else ('stored' if False in flags else 'recomputed')
