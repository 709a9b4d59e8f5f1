r"""Zonotope tokens and the (matrix) zonotope algebra of the MZAttn paper.

A zonotope :math:`\mathcal{Z} = \langle \mathbf{c}, G \rangle = \{\mathbf{c} +
\sum_g \xi_g G_g : \xi \in [-1, 1]^{n_g}\}` is stored with its generators as
*rows*: :obj:`center [..., d]` and :obj:`generators [..., n_g, d]`.  A batch of
set elements is a zonotope with leading dimension :obj:`N`.  See App. B.1 of
the paper for the algebra implemented here.
"""
from dataclasses import dataclass
from typing import Union

import torch
from torch import Tensor

from mzlayers.linear import linear


@dataclass(frozen=True)
class Zonotope:
    r"""A batch of zonotopes.

    Args:
        center (torch.Tensor): Centres :obj:`[..., d]`.
        generators (torch.Tensor): Generator rows :obj:`[..., n_g, d]`
            (:obj:`n_g` may be zero).
    """
    center: Tensor
    generators: Tensor

    def __post_init__(self):
        c, G = self.center, self.generators
        if G.dim() != c.dim() + 1 or G.shape[:-2] != c.shape[:-1] or \
                G.size(-1) != c.size(-1):
            raise ValueError(f"Zonotope generators must have shape "
                             f"{tuple(c.shape[:-1])} + (n_g, {c.size(-1)}) for "
                             f"centres of shape {tuple(c.shape)} (got "
                             f"{tuple(G.shape)})")

    @classmethod
    def from_tensor(cls, x: Tensor, num_generators: int = 0) -> 'Zonotope':
        r"""A point (degenerate zonotope) per row of :obj:`x`, with
        :obj:`num_generators` zero generators."""
        return cls(x, x.new_zeros(*x.shape[:-1], num_generators, x.size(-1)))

    @classmethod
    def wrap(cls, x: Union['Zonotope', Tensor], num_generators: int = 0) -> 'Zonotope':
        r"""Returns :obj:`x` if it is a zonotope, else a point zonotope."""
        return x if isinstance(x, Zonotope) else cls.from_tensor(x, num_generators)

    @property
    def num_generators(self) -> int:
        return self.generators.size(-2)

    @property
    def channels(self) -> int:
        return self.center.size(-1)

    def ihw(self) -> Tensor:
        r"""Interval-hull half-width :math:`\delta = \sum_g |G_g|`,
        shape :obj:`[..., d]`: the zonotope lies in the box
        :math:`[\mathbf{c} - \delta, \mathbf{c} + \delta]`."""
        return self.generators.abs().sum(-2)

    def signed(self) -> Tensor:
        r"""Signed generator sum :math:`\sum_g G_g`, shape :obj:`[..., d]`
        (the readout used by the expressiveness proofs, Sec. 2.4)."""
        return self.generators.sum(-2)

    def linear_map(self, weight: Tensor, bias: Tensor | None = None) -> 'Zonotope':
        r""":math:`A\mathcal{Z} + b = \langle A\mathbf{c} + b, A G \rangle` with
        :obj:`weight` :math:`A` of shape :obj:`[d_out, d]` (as in
        :class:`torch.nn.Linear`); the bias moves the centre only.  Both maps
        run through :func:`mzlayers.linear.linear`, whose backward is four
        operators, not autograd's differentiation of :obj:`addmm`."""
        return Zonotope(linear(self.center, weight, bias), linear(self.generators, weight))

    def minkowski_sum(self, other: 'Zonotope') -> 'Zonotope':
        r""":math:`\mathcal{Z}_1 \oplus \mathcal{Z}_2 = \langle \mathbf{c}_1 +
        \mathbf{c}_2, [G_1, G_2] \rangle` (generator counts add)."""
        return Zonotope(self.center + other.center,
                        torch.cat([self.generators, other.generators], dim=-2))

    def __add__(self, other: 'Zonotope') -> 'Zonotope':
        return self.minkowski_sum(other)

    def mz_product(self, matrix_center: Tensor, matrix_generators: Tensor) -> 'Zonotope':
        r"""Exact product :math:`\mathcal{M}\mathcal{Z}` with the matrix
        zonotope :math:`\mathcal{M} = \{M_c + \sum_l \xi_l M_l\}` (App. B.1):
        centre :math:`M_c \mathbf{c}` and the :math:`h + L + Lh` generators
        :math:`\{M_c g_k\} \cup \{M_l \mathbf{c}\} \cup \{M_l g_k\}`
        (in this order, the cross terms :math:`l`-major).

        Args:
            matrix_center (torch.Tensor): :math:`M_c`, :obj:`[..., m, d]`.
            matrix_generators (torch.Tensor): :math:`M_l`, :obj:`[..., L, m, d]`.

        Returns:
            Zonotope: centres :obj:`[..., m]`, generators
            :obj:`[..., h + L + L h, m]`.
        """
        c, G = self.center, self.generators
        Mc, Ml = matrix_center, matrix_generators
        center = torch.einsum('...md,...d->...m', Mc, c)
        gen_c = torch.einsum('...md,...hd->...hm', Mc, G)
        gen_l = torch.einsum('...lmd,...d->...lm', Ml, c)
        gen_lh = torch.einsum('...lmd,...hd->...lhm', Ml, G).flatten(-3, -2)
        return Zonotope(center, torch.cat([gen_c, gen_l, gen_lh], dim=-2))

    def mz_product_budgeted(self, matrix_center: Tensor, matrix_generators: Tensor,
                            gates: Tensor, mix: Tensor) -> 'Zonotope':
        r"""The fixed-budget product of Eq. (3):

        .. math::
            \mathbf{o}^c = M_c \mathbf{c}, \qquad
            O^G = G M_c^{\top} + W_{\mathrm{mix}}\,
            \mathrm{stack}_{l}\left[\gamma_l M_l \mathbf{c}\right].

        The :math:`Lh` cross terms of :meth:`mz_product` are dropped and the
        :math:`L` gated centre terms are mixed into the :math:`n_g` existing
        generator slots, so the generator count stays :math:`n_g`.

        Args:
            matrix_center (torch.Tensor): :math:`M_c`, :obj:`[..., m, d]`.
            matrix_generators (torch.Tensor): :math:`M_l`, :obj:`[..., L, m, d]`.
            gates (torch.Tensor): :math:`\gamma \in [-1, 1]^L`, :obj:`[..., L]`.
            mix (torch.Tensor): :math:`W_{\mathrm{mix}}`, :obj:`[..., n_g, L]`.

        Returns:
            Zonotope: centres :obj:`[..., m]`, generators :obj:`[..., n_g, m]`.
        """
        c, G = self.center, self.generators
        center = torch.einsum('...md,...d->...m', matrix_center, c)
        gated = torch.einsum('...lmd,...d->...lm', matrix_generators, c)
        gated = gated * gates.unsqueeze(-1)
        generators = (torch.einsum('...md,...gd->...gm', matrix_center, G) +
                      torch.einsum('...gl,...lm->...gm', mix, gated))
        return Zonotope(center, generators)

    def index_select(self, index: Tensor) -> 'Zonotope':
        r"""Rows :obj:`index` of the leading dimension."""
        return Zonotope(self.center[index], self.generators[index])

    def map(self, fn) -> 'Zonotope':
        r"""Applies the same tensor function to centre and generators."""
        return Zonotope(fn(self.center), fn(self.generators))

    def __repr__(self) -> str:
        return (f'Zonotope(center={tuple(self.center.shape)}, '
                f'num_generators={self.num_generators})')
