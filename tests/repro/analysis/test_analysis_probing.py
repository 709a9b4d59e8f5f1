import pytest
import torch
from mzattn.repro.analysis.probing import (
    context_gates,
    gate_activity,
    generator_cosines,
    generator_norms,
    mz_attention_layers,
    numerical_rank,
    operators,
    probe,
    relative_change,
    sign_flips,
    soft_effective_rank,
)
from torch_geometric.data import Batch, Data

from mzlayers import MZMultiheadAttention
from mzlayers.layout import resolve_layout

C = 8  # head width (one head)


class _SelfAttention(torch.nn.Module):
    r"""One MZ attention layer as a set model (context = the set itself)."""
    def __init__(self, layer):
        super().__init__()
        self.attn = layer

    def forward(self, x, batch, dim_size=None):
        layout = resolve_layout(x, batch, dim_size, C)
        return self.attn(x, x, layout, layout).center


def _planted(k: int, L: int = 6, seed: int = 0) -> MZMultiheadAttention:
    r"""Generators 0..k-1 set to Frobenius-orthonormal matrices, the others
    zero; gate rows orthonormal so the k gates vary independently."""
    gen = torch.Generator().manual_seed(seed)
    layer = MZMultiheadAttention(C, heads=1, num_generators=2, num_matrix_generators=L)
    q, _ = torch.linalg.qr(torch.randn(C * C, k, generator=gen, dtype=torch.double))
    rows, _ = torch.linalg.qr(torch.randn(C, C, generator=gen))
    with torch.no_grad():
        layer.matrix_generators.zero_()
        layer.matrix_generators[0, :k] = q.T.reshape(k, C, C).float()
        layer.lin_gate.weight.zero_()
        layer.lin_gate.weight[:k] = 0.5 * rows[:k]
        layer.lin_gate.bias.zero_()
    return layer.eval()


def _contexts(num_sets: int, seed: int = 0):
    gen = torch.Generator().manual_seed(seed)
    sets = [Data(x=torch.randn(1, C, generator=gen)) for _ in range(num_sets)]
    return [Batch.from_data_list(sets[i:i + 100]) for i in range(0, num_sets, 100)]


@pytest.mark.parametrize("k", [1, 2, 3, 5])
def test_probe_recovers_planted_rank(k):
    layer = _planted(k)
    model = _SelfAttention(layer)
    gates = context_gates(model, layer, _contexts(1000))
    assert gates.shape == (1000, 1, 6)
    assert torch.all(gates[..., k:] == 0) and gates[..., :k].std() > 0.2
    ops = operators(layer, gates)[:, 0]
    assert numerical_rank(ops) == k
    assert round(soft_effective_rank(ops)) == k
    assert abs(soft_effective_rank(ops) - k) < 0.25
    cos = generator_cosines(layer)[0]
    assert torch.allclose(cos[:k, :k], torch.eye(k), atol=1e-5)
    assert torch.allclose(generator_norms(layer)[0, :k], torch.ones(k), atol=1e-5)


def test_context_gates_match_the_layers_gates():
    layer = _planted(3)
    loader = _contexts(10)
    gates = context_gates(_SelfAttention(layer), layer, loader)
    from mzlayers import Zonotope
    data = loader[0]
    layout = resolve_layout(data.x, data.batch, data.num_graphs, C)
    assert torch.allclose(gates, layer.gates(Zonotope.wrap(data.x, 2), layout))


def test_operator_probes_by_hand():
    layer = _planted(2, L=2)
    gates = torch.tensor([[[0.5, -0.5]], [[-0.5, -0.5]]])  # [S=2, H=1, L=2]
    ops = operators(layer, gates)
    expected = layer.matrix_center[0] + 0.5 * layer.matrix_generators[0, 0] \
        - 0.5 * layer.matrix_generators[0, 1]
    assert torch.allclose(ops[0, 0], expected.detach())
    # M_A - M_B = 1.0 * M_1 (unit Frobenius norm); ||M_c||_F = ||I_8||_F = sqrt(8)
    change = relative_change(layer, ops[0], ops[1])
    assert change.item() == pytest.approx(1 / 8 ** 0.5, rel=1e-5)
    assert sign_flips(gates[0], gates[1]).tolist() == [1]
    assert gate_activity(torch.tensor([0.0, 0.05, 0.2, -0.5])) == 0.5
    result = probe(layer, gates)
    assert result["sign_flips"] == [1] and result["num_contexts"] == 2
    with pytest.raises(ValueError, match="pair"):
        probe(layer, gates, pair=(0, 5))


def test_soft_effective_rank_of_constant_operators_is_zero():
    assert soft_effective_rank(torch.ones(10, 3, 3)) == 0.0


def test_mz_attention_layers_names_and_error():
    from mzlayers import MZSetTransformer
    layers = mz_attention_layers(MZSetTransformer(3, 1, channels=16, heads=2,
                                                  num_induced_points=4))
    assert layers[0][0].startswith("encoder.") and len(layers) >= 4
    with pytest.raises(ValueError, match="model"):
        mz_attention_layers(torch.nn.Linear(2, 2))
