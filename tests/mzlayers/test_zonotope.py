import pytest
import torch

from mzlayers import Zonotope


def _zonotope(n=5, g=3, d=4):
    return Zonotope(torch.randn(n, d, dtype=torch.float64),
                    torch.randn(n, g, d, dtype=torch.float64))


def _point(z, xi):
    r"""The point :math:`c + \sum_g \xi_g G_g` for coefficients :obj:`[n, g]`."""
    return z.center + (xi.unsqueeze(-1) * z.generators).sum(-2)


def test_shape_validation():
    with pytest.raises(ValueError, match='generators must have shape'):
        Zonotope(torch.zeros(3, 4), torch.zeros(3, 2, 5))
    z = Zonotope.from_tensor(torch.ones(3, 4), num_generators=2)
    assert z.num_generators == 2 and z.ihw().abs().sum() == 0
    assert repr(z) == 'Zonotope(center=(3, 4), num_generators=2)'


def test_ihw_and_signed():
    z = _zonotope()
    assert torch.equal(z.ihw(), z.generators.abs().sum(-2))
    assert torch.equal(z.signed(), z.generators.sum(-2))
    xi = torch.rand(5, 3, dtype=torch.float64) * 2 - 1
    p = _point(z, xi)
    assert ((p - z.center).abs() <= z.ihw() + 1e-12).all()


def test_linear_map_commutes_with_points():
    z, A, b = _zonotope(), torch.randn(6, 4, dtype=torch.float64), torch.randn(6,
                                                                                 dtype=torch.float64)
    xi = torch.rand(5, 3, dtype=torch.float64) * 2 - 1
    mapped = z.linear_map(A, b)
    assert torch.allclose(_point(mapped, xi), _point(z, xi) @ A.T + b)


def test_minkowski_sum_adds_generators():
    z1, z2 = _zonotope(g=2), _zonotope(g=3)
    s = z1 + z2
    assert s.num_generators == 5
    xi1, xi2 = torch.rand(5, 2).double(), torch.rand(5, 3).double()
    assert torch.allclose(_point(s, torch.cat([xi1, xi2], -1)),
                          _point(z1, xi1) + _point(z2, xi2))


def test_mz_product_is_exact():
    h, L, m, d = 3, 2, 5, 4
    z = _zonotope(n=6, g=h, d=d)
    Mc = torch.randn(m, d, dtype=torch.float64)
    Ml = torch.randn(L, m, d, dtype=torch.float64)
    prod = z.mz_product(Mc, Ml)
    assert prod.num_generators == h + L + L * h
    alpha = torch.rand(6, h, dtype=torch.float64) * 2 - 1
    xi = torch.rand(6, L, dtype=torch.float64) * 2 - 1
    M = Mc + (xi[:, :, None, None] * Ml).sum(1)  # [6, m, d]
    expected = (M @ _point(z, alpha).unsqueeze(-1)).squeeze(-1)
    # generator order: M_c g_k (h), M_l c (L), M_l g_k (l-major, then k)
    coeff = torch.cat([alpha, xi, (xi[:, :, None] * alpha[:, None, :]).flatten(1)], -1)
    assert torch.allclose(_point(prod, coeff), expected)


def test_budgeted_product_matches_eq3():
    n_g, L, d = 4, 3, 5
    z = _zonotope(n=7, g=n_g, d=d)
    Mc, Ml = torch.randn(d, d).double(), torch.randn(L, d, d).double()
    gates = torch.rand(7, L).double() * 2 - 1
    mix = torch.randn(n_g, L).double()
    out = z.mz_product_budgeted(Mc, Ml, gates, mix)
    assert out.num_generators == n_g
    assert torch.allclose(out.center, z.center @ Mc.T)
    stack = torch.stack([gates[:, l, None] * (z.center @ Ml[l].T) for l in range(L)], 1)
    assert torch.allclose(out.generators, z.generators @ Mc.T + mix @ stack)
