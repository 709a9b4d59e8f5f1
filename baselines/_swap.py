r"""Helpers that assemble a baseline from the shared Set Transformer blocks
by swapping the attention module of selected MABs, so that no MAB, ISAB or
PMA code is copied."""
from collections.abc import Callable, Iterable

import torch
from torch import Tensor

from mzlayers import MAB, MZMAB, MultiheadSetAttention, SetTransformer
from mzlayers.layout import SetLayout


def encoder_mabs(model: SetTransformer) -> list[MAB]:
    r"""Both MABs of every ISAB of :obj:`model` (the set encoder)."""
    return [mab for isab in model.encoders for mab in (isab.mab1, isab.mab2)]


def induced_mabs(model: SetTransformer) -> list[MAB]:
    r"""The first MAB of every ISAB: inducing points attending to the set
    elements (the encoder attentions whose values are the set's elements)."""
    return [isab.mab1 for isab in model.encoders]


def all_mabs(model: torch.nn.Module) -> list[torch.nn.Module]:
    r"""Every (MZ-)MAB of :obj:`model` (encoder, PMA and decoder)."""
    return [m for m in model.modules() if isinstance(m, MAB | MZMAB)]


def swap_attention(blocks: Iterable[torch.nn.Module],
                   factory: Callable[[torch.nn.Module], torch.nn.Module]) -> None:
    r"""Replaces :obj:`block.attn` by :obj:`factory(block.attn)` in place."""
    for block in blocks:
        block.attn = factory(block.attn)


class ValuePathAttention(MultiheadSetAttention):
    r"""Multi-head set attention whose value path is replaced: scores use the
    projections :math:`\mathbf{W}_Q, \mathbf{W}_K` of
    :class:`~mzlayers.MultiheadSetAttention` and the shared
    :func:`~mzlayers.set_attention` kernel, while subclasses define the
    values :math:`\mathbf{v}_j` through :meth:`values`.  Arguments as in
    :class:`~mzlayers.MultiheadSetAttention`.
    """
    def values(self, y: Tensor, key_layout: SetLayout) -> Tensor:
        r"""Values :obj:`[N, d]` of the keys :obj:`y` :obj:`[N, d]`."""
        raise NotImplementedError

    def forward(self, x: Tensor, y: Tensor, key_layout: SetLayout,
                query_layout: SetLayout | None = None) -> Tensor:
        q = self.split_heads(self.lin_q(x))
        k = self.split_heads(self.lin_k(y))
        v = self.split_heads(self.values(y, key_layout))
        out = self.attend(q, k, v, key_layout, query_layout)  # [*, H, d_k]
        return self.lin_o(out.flatten(-2))
