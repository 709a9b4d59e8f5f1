r"""Generator probing of a trained MZ model (Sec. 5.4, App. D.1, Figures
3-4 of "Matrix Zonotopic Attention").

For an MZ attention layer with centre matrix :math:`M_c`, generator
matrices :math:`M_l` and gates :math:`\gamma(\mu) \in [-1, 1]^L`, the
per-head value operator of a context (the key set) is

.. math::
    M(\mu) = M_c + \sum_{l=1}^{L} \gamma_l(\mu)\, M_l .

The probes: :math:`M(\mu)` of chosen contexts, the relative operator change
:math:`\|M(\mu_A) - M(\mu_B)\|_F / \|M_c\|_F`, gate sign flips between two
contexts, the gate activity rate, the cosine matrix and Frobenius norms of
the generators, and the soft effective rank of the centred operators
:math:`\{M(\mu_i) - \bar M\}_i`.

The paper does not define "soft effective rank"; we use the entropy
effective rank of Roy and Vetterli (2007), :math:`\exp(-\sum_j p_j \log
p_j)` with :math:`p_j = s_j / \sum_k s_k` the normalised singular values of
the matrix whose rows are the flattened centred operators. It equals
:math:`k` for :math:`k` equal singular values and is below the numerical
rank otherwise. Nor does it define an "active" gate; we count
:math:`|\gamma_l| \ge 0.1` (:obj:`ACTIVE_GATE`).
"""
from collections.abc import Iterable

import torch
from torch import Tensor

from mzlayers import MZMultiheadAttention, Zonotope

ACTIVE_GATE = 0.1
r"""Threshold of :func:`gate_activity`: a gate is active when
:math:`|\gamma_l| \ge 0.1`."""


def mz_attention_layers(model: torch.nn.Module) -> list[tuple[str, MZMultiheadAttention]]:
    r"""Every :class:`~mzlayers.MZMultiheadAttention` of :obj:`model` with
    its qualified name, in registration order."""
    layers = [(name, module) for name, module in model.named_modules()
              if isinstance(module, MZMultiheadAttention)]
    if not layers:
        raise ValueError(f"'model' ({model.__class__.__name__}) has no MZ attention layer")
    return layers


@torch.no_grad()
def context_gates(model: torch.nn.Module, layer: MZMultiheadAttention,
                  loader: Iterable) -> Tensor:
    r"""Gates :math:`\gamma(\mu)` of :obj:`layer` for every set (context) of
    :obj:`loader`, :obj:`[S, H, L]`, read with a forward hook on the layer
    (its inputs are :obj:`(x, y, key_layout, query_layout)`; the key
    zonotope :obj:`y` is the context). Layers that see a set several times
    per forward pass (e.g. the two attentions of an ISAB) give the gates of
    the first call."""
    model.eval()
    calls: list[Tensor] = []

    def hook(module: MZMultiheadAttention, inputs: tuple) -> None:
        y, key_layout = inputs[1], inputs[2]
        calls.append(module.gates(Zonotope.wrap(y, module.num_generators), key_layout))

    gates = []
    handle = layer.register_forward_pre_hook(hook)
    try:
        for data in loader:
            calls.clear()
            model(data.x, data.batch, dim_size=data.num_graphs)
            gates.append(calls[0])
    finally:
        handle.remove()
    return torch.cat(gates)


def operators(layer: MZMultiheadAttention, gates: Tensor) -> Tensor:
    r""":math:`M(\mu) = M_c + \sum_l \gamma_l M_l` per context and head,
    :obj:`[S, H, d_k, d_k]` for gates :obj:`[S, H, L]`."""
    return layer.matrix_center.detach() + torch.einsum(
        "shl,hlij->shij", gates, layer.matrix_generators.detach())


def relative_change(layer: MZMultiheadAttention, op_a: Tensor, op_b: Tensor) -> Tensor:
    r""":math:`\|M(\mu_A) - M(\mu_B)\|_F / \|M_c\|_F` per head, :obj:`[H]`
    for operators :obj:`[H, d_k, d_k]`."""
    center = layer.matrix_center.detach().flatten(1).norm(dim=-1)
    return (op_a - op_b).flatten(1).norm(dim=-1) / center


def sign_flips(gates_a: Tensor, gates_b: Tensor) -> Tensor:
    r"""Generators whose gate changes sign between two contexts, per head,
    :obj:`[H]` for gates :obj:`[H, L]`."""
    return (torch.sign(gates_a) * torch.sign(gates_b) < 0).sum(-1)


def gate_activity(gates: Tensor, threshold: float = ACTIVE_GATE) -> float:
    r"""Share of gate evaluations with :math:`|\gamma_l| \ge` :obj:`threshold`."""
    return float((gates.abs() >= threshold).float().mean())


def generator_cosines(layer: MZMultiheadAttention) -> Tensor:
    r"""Cosine similarity of the flattened generators :math:`M_l` per head,
    :obj:`[H, L, L]`."""
    flat = torch.nn.functional.normalize(layer.matrix_generators.detach().flatten(2), dim=-1)
    return flat @ flat.transpose(1, 2)


def generator_norms(layer: MZMultiheadAttention) -> Tensor:
    r"""Frobenius norms :math:`\|M_l\|_F` per head, :obj:`[H, L]`."""
    return layer.matrix_generators.detach().flatten(2).norm(dim=-1)


def soft_effective_rank(ops: Tensor) -> float:
    r"""Entropy effective rank of the centred operators
    :math:`\{M(\mu_i) - \bar M\}_i` given as :obj:`[S, ...]` (each operator
    flattened to a row). Zero when the operators do not vary."""
    rows = ops.flatten(1).double()
    singular = torch.linalg.svdvals(rows - rows.mean(0))
    total = singular.sum()
    if total <= torch.finfo(torch.double).eps * singular.numel():
        return 0.0
    p = singular / total
    p = p[p > 0]
    return float(torch.exp(-(p * p.log()).sum()))


def numerical_rank(ops: Tensor, rtol: float = 1e-6) -> int:
    r"""Rank of the centred operators (singular values above :obj:`rtol`
    times the largest)."""
    rows = ops.flatten(1).double()
    return int(torch.linalg.matrix_rank(rows - rows.mean(0), rtol=rtol))


def probe(layer: MZMultiheadAttention, gates: Tensor, pair: tuple[int, int] = (0, 1),
          head: int = 0, rank_contexts: int | None = None) -> dict:
    r"""Every probe of Figures 3-4 on the contexts' gates :obj:`[S, H, L]`:
    the operators of contexts :obj:`pair` at :obj:`head`, their relative
    change and gate sign flips, the gate activity, the generator cosines and
    norms, and the soft effective rank of the centred operators of the
    first :obj:`rank_contexts` contexts (all if :obj:`None`) at
    :obj:`head` and over all heads."""
    if gates.size(0) < 2 or not all(0 <= i < gates.size(0) for i in pair):
        raise ValueError(f"'pair' {pair} must index two of the {gates.size(0)} contexts")
    ops = operators(layer, gates)
    ranked = ops[:rank_contexts]
    a, b = pair
    return {
        "num_contexts": int(gates.size(0)), "head": head, "pair": list(pair),
        "operator_a": ops[a, head].tolist(), "operator_b": ops[b, head].tolist(),
        "gates_a": gates[a, head].tolist(), "gates_b": gates[b, head].tolist(),
        "relative_change": relative_change(layer, ops[a], ops[b]).tolist(),
        "sign_flips": sign_flips(gates[a], gates[b]).tolist(),
        "gate_activity": gate_activity(gates),
        "gate_values": gates[:, head].flatten().tolist(),
        "generator_cosines": generator_cosines(layer)[head].tolist(),
        "generator_norms": generator_norms(layer).tolist(),
        "rank_contexts": int(ranked.size(0)),
        "soft_effective_rank": soft_effective_rank(ranked[:, head]),
        "soft_effective_rank_all_heads": soft_effective_rank(ranked),
        "numerical_rank": numerical_rank(ranked[:, head]),
        "num_matrix_generators": layer.num_matrix_generators,
    }

