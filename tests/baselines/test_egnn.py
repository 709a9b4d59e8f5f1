"""EGNN: E(n) invariance of the output, equivariance of the coordinates."""
import pytest
import torch
from mzattn.baselines import EGNN, EGNNConv, fully_connected_edges

from mzlayers import SetLayout

from .helpers import ragged_batch


def random_orthogonal(d, reflect):
    q, r = torch.linalg.qr(torch.randn(d, d, dtype=torch.float64))
    q = q * torch.sign(torch.diagonal(r))
    if (torch.det(q) < 0) != reflect:
        q[:, 0] = -q[:, 0]
    return q


def test_fully_connected_edges():
    batch = torch.tensor([0, 0, 0, 2, 2])
    layout = SetLayout.from_batch(batch, 5, 3, batch.device)
    edges = fully_connected_edges(layout)
    expected = {(i, j) for i in range(3) for j in range(3) if i != j} | {(3, 4), (4, 3)}
    assert set(map(tuple, edges.t().tolist())) == expected


@pytest.mark.parametrize('reflect', [False, True])
def test_output_invariant_under_rotations_reflections_translations(reflect):
    model = EGNN(8, 2).double().eval()
    x, batch, B = ragged_batch(8)
    Q = random_orthogonal(8, reflect)
    t = 3 * torch.randn(8, dtype=torch.float64)
    out = model(x, batch, dim_size=B)
    moved = model(x @ Q.t() + t, batch, dim_size=B)
    assert (out - moved).abs().max() < 1e-5
    assert out.std(0).min() > 1e-6  # not a constant


def test_scalar_features_stay_fixed_and_matter():
    model = EGNN(4, 1, coord_index=[0, 1, 2]).double().eval()  # x, y, z + type
    x, batch, B = ragged_batch(4)
    Q, t = random_orthogonal(3, True), torch.randn(3, dtype=torch.float64)
    moved = x.clone()
    moved[:, :3] = x[:, :3] @ Q.t() + t
    out = model(x, batch, dim_size=B)
    assert (out - model(moved, batch, dim_size=B)).abs().max() < 1e-5
    retyped = x.clone()
    retyped[:, 3] += 1.0
    assert (out - model(retyped, batch, dim_size=B)).abs()[[0, 3]].min() > 1e-6


def test_coordinate_updates_are_equivariant():
    conv = EGNNConv(16).double()
    torch.nn.init.normal_(conv.lin_coord.weight)  # non-trivial coordinate updates
    x, batch, B = ragged_batch(3)
    layout = SetLayout.from_batch(batch, x.size(0), B, x.device)
    edges = fully_connected_edges(layout)
    h = torch.randn(x.size(0), 16, dtype=torch.float64)
    Q, t = random_orthogonal(3, True), torch.randn(3, dtype=torch.float64)
    h1, pos1 = conv(h, x, edges)
    h2, pos2 = conv(h, x @ Q.t() + t, edges)
    assert (pos1 - x).abs().max() > 1e-3
    assert (pos1 @ Q.t() + t - pos2).abs().max() < 1e-10
    assert (h1 - h2).abs().max() < 1e-10


def equations_written_out(conv, h, pos, sets):
    # Eqs. 3-6 pair by pair, phi_e on the concatenation [h_i, h_j, d_ij] (the paper's form)
    h_out, pos_out = h.clone(), pos.clone()
    for members in sets:
        for i in members:
            others = [j for j in members if j != i]
            m_ij = [torch.nn.functional.silu(conv.lin_edge(torch.cat(
                [h[i], h[j], (pos[i] - pos[j]).pow(2).sum(0, keepdim=True)]))) for j in others]
            shifts = [(pos[i] - pos[j]) * conv.lin_coord(m)
                      for j, m in zip(others, m_ij, strict=True)]
            shift = sum(shifts, torch.zeros_like(pos[i]))
            m_i = sum(m_ij, torch.zeros_like(h[i])) / max(len(others), 1)
            h_out[i] = h[i] + conv.lin_node(torch.cat([h[i], m_i]))
            pos_out[i] = pos[i] + shift / max(len(others), 1)
    return h_out, pos_out


def test_conv_matches_the_equations_written_out():
    conv = EGNNConv(6).double()
    torch.nn.init.normal_(conv.lin_coord.weight)  # non-trivial coordinate updates
    batch = torch.tensor([0, 0, 0, 0, 1, 1, 1, 3])  # set 2 is empty, set 3 a singleton
    layout = SetLayout.from_batch(batch, batch.numel(), 4, batch.device)
    h = torch.randn(batch.numel(), 6, dtype=torch.float64)
    pos = torch.randn(batch.numel(), 3, dtype=torch.float64)
    with torch.no_grad():
        expected = equations_written_out(conv, h, pos, [[0, 1, 2, 3], [4, 5, 6], [7]])
        got = conv(h, pos, fully_connected_edges(layout))
    for a, b in zip(got, expected, strict=True):
        assert (a - b).abs().max() < 1e-12


def test_bad_coord_index_raises():
    with pytest.raises(ValueError, match="'coord_index'"):
        EGNN(4, 1, coord_index=[0, 4])
    assert repr(EGNN(4, 1, coord_index=[0, 1, 2])) == \
        'EGNN(4, 1, hidden_channels=140, num_layers=4, coords=3)'
