import pytest
import torch

from mzlayers import (
    ISAB,
    MAB,
    MZISAB,
    MZMAB,
    MZPMA,
    MZSAB,
    PMA,
    SAB,
    MultiheadSetAttention,
    MZMultiheadAttention,
    MZSetTransformer,
    SetTransformer,
    Zonotope,
)
from mzlayers.mz_blocks import (
    ZonotopeLayerNorm,
    _fused_statistics,
    _LayerNormWithRstd,
    _norm_center,
)

from .helpers import ragged_batch, shuffle_sets

C, HEADS = 8, 2


def _blocks(backend='auto'):
    kw = dict(heads=HEADS, backend=backend)
    mz = dict(num_generators=3, num_matrix_generators=2, **kw)
    return {
        'sab': SAB(C, **kw), 'isab': ISAB(C, 4, **kw), 'pma': PMA(C, 2, **kw),
        'mzsab': MZSAB(C, **mz), 'mzisab': MZISAB(C, 4, **mz), 'mzpma': MZPMA(C, 2, **mz),
    }


def _flat(out):
    r"""Block output as one tensor per row (centres and generators)."""
    out = out[0] if isinstance(out, tuple) else out
    if isinstance(out, Zonotope):
        return torch.cat([out.center, out.generators.flatten(1)], dim=-1)
    return out


def _run(block, x, batch, dim_size):
    return _flat(block(x, batch, dim_size))


@pytest.mark.parametrize('name', ['sab', 'isab', 'pma', 'mzsab', 'mzisab', 'mzpma'])
def test_permutation_equivariance_and_invariance(name):
    block = _blocks()[name].eval()
    x, batch, B = ragged_batch(dtype=torch.float32)
    out = _run(block, x, batch, B)
    x2, batch2, perm, set_perm = shuffle_sets(x, batch, B)
    out2 = _run(block, x2, batch2, B)
    if name.endswith('pma'):  # set-level: rows follow the set permutation
        k = out.size(0) // B
        expected = out.view(B, k, -1)[set_perm].view(B * k, -1)
    else:  # element-level: rows follow the element permutation
        expected = out[perm]
    assert (out2 - expected).abs().max() < 1e-5


@pytest.mark.parametrize('name', ['sab', 'isab', 'pma', 'mzsab', 'mzisab', 'mzpma'])
def test_backends_agree(name):
    x, batch, B = ragged_batch()
    outs, grads = [], []
    for backend in ('segment', 'dense', 'varlen', 'auto'):
        torch.manual_seed(0)
        block = _blocks(backend)[name].double()
        xr = x.clone().requires_grad_()
        out = _run(block, xr, batch, B)
        out.pow(2).sum().backward()
        outs.append(out)
        grads.append([xr.grad] + [p.grad for p in block.parameters()])
    for out, grad in zip(outs[1:], grads[1:], strict=True):
        assert torch.allclose(out, outs[0], atol=1e-10)
        for g, g0 in zip(grad, grads[0], strict=True):
            assert torch.allclose(g, g0, atol=1e-10)


@pytest.mark.parametrize('name', ['isab', 'pma', 'mzisab', 'mzpma'])
def test_batch_independence(name):
    block = _blocks()[name].double().eval()
    sizes = (1, 60, 5, 17)
    x, batch, B = ragged_batch(sizes)
    together = _run(block, x, batch, B)
    start, rows = 0, []
    for n in sizes:
        rows.append(_run(block, x[start:start + n], None, None))
        start += n
    assert torch.allclose(together, torch.cat(rows), atol=1e-10)


@pytest.mark.parametrize('name', ['pma', 'mzpma'])
def test_empty_sets_pool_to_zero_without_nan(name):
    block = _blocks()[name].double()
    x, batch, B = ragged_batch((0, 4, 0, 2))
    x.requires_grad_()
    out = block(x, batch, dim_size=B + 1)  # one more empty set past the end
    rows = _flat(out).view(B + 1, 2, -1)
    for empty in (0, 2, 4):
        assert torch.equal(rows[empty], torch.zeros_like(rows[empty]))
    assert torch.isfinite(rows).all()
    rows.pow(2).sum().backward()
    assert torch.isfinite(x.grad).all()
    assert all(torch.isfinite(p.grad).all() for p in block.parameters() if p.grad is not None)
    assert torch.equal(out[1], torch.tensor([0, 0, 1, 1, 2, 2, 3, 3, 4, 4]))


def test_reprs():
    blocks = _blocks()
    assert repr(blocks['sab']) == ('SAB(8, heads=2, ff_channels=16, layer_norm=True, '
                                   'dropout=0.0, backend=auto)')
    assert repr(blocks['isab']) == 'ISAB(8, num_induced_points=4, heads=2, backend=auto)'
    assert repr(blocks['pma']) == 'PMA(8, num_seed_points=2, heads=2, backend=auto)'
    assert repr(blocks['mzsab']) == ('MZSAB(8, heads=2, num_generators=3, '
                                     'num_matrix_generators=2, ff_channels=16, backend=auto)')
    assert repr(blocks['mzisab']).startswith('MZISAB(8, num_induced_points=4, mab=MZMAB(')


def test_reset_parameters_reinitialises():
    block = MZISAB(C, 4, heads=HEADS)
    with torch.no_grad():
        for p in block.parameters():
            p.fill_(0.5)
    block.reset_parameters()
    mc = block.mab1.attn.matrix_center
    assert torch.equal(mc, torch.eye(C // HEADS).expand_as(mc))
    assert block.induced.center.std() > 0


class _CountingFactory:
    r"""An attention factory that records the keyword arguments of each call."""
    def __init__(self, cls):
        self.cls, self.calls = cls, []

    def __call__(self, channels, **kwargs):
        self.calls.append(kwargs)
        return self.cls(channels, **kwargs)


def test_attention_factories_build_each_attention_once():
    induced = _CountingFactory(MultiheadSetAttention)
    encoder = _CountingFactory(MultiheadSetAttention)
    head = _CountingFactory(MultiheadSetAttention)
    model = SetTransformer(3, 1, channels=C, heads=HEADS, attention=head,
                           encoder_attention=encoder, induced_attention=induced)
    assert len(induced.calls) == 2 and len(encoder.calls) == 2  # mab1 / mab2 of 2 ISABs
    assert len(head.calls) == 2  # PMA and the decoder SAB
    assert induced.calls[0] == dict(heads=HEADS, dropout=0.1, backend='auto')
    assert all(type(isab.mab1.attn) is MultiheadSetAttention for isab in model.encoders)
    # without encoder_attention / induced_attention, attention builds all six
    every = _CountingFactory(MultiheadSetAttention)
    SetTransformer(3, 1, channels=C, heads=HEADS, attention=every)
    assert len(every.calls) == 6


def test_mz_attention_factory_gets_the_block_options():
    factory = _CountingFactory(MZMultiheadAttention)
    model = MZSetTransformer(3, 1, channels=C, heads=HEADS, num_generators=3,
                             num_matrix_generators=2, summary='moment', attention=factory)
    assert len(factory.calls) == 6  # 2 MZ-ISAB x 2, MZ-PMA, 1 MZ-SAB
    assert factory.calls[0] == dict(heads=HEADS, num_generators=3, num_matrix_generators=2,
                                    summary='moment', dropout=0.1, backend='auto')
    assert sum(isinstance(m, MZMultiheadAttention) for m in model.modules()) == 6


@pytest.mark.parametrize('build', [
    lambda: MAB(C, HEADS, 16),
    lambda: ISAB(C, 4, HEADS, 16),  # PyG's 4th argument is layer_norm, ours was ff_channels
    lambda: PMA(C, 1, HEADS, 16),
    lambda: MZMAB(C, HEADS, 3),
    lambda: MZMultiheadAttention(C, HEADS, 3),
    lambda: SetTransformer(3, 1, 64),
    lambda: MZSetTransformer(3, 1, 64),
])
def test_long_signatures_are_keyword_only(build):
    with pytest.raises(TypeError, match='positional'):
        build()


_GENERATOR_PATH = ("matrix_generators", ".mix", ".lin_gate.", ".ffn.generators.")


@pytest.mark.parametrize("readout", ["center", "center+ihw"])
def test_generators_meet_the_centres_only_in_a_readout_that_reads_them(readout):
    # docs/layers.md: MZISAB -> global mean pool; a centre-only readout leaves mab2's
    # generator path without gradients and mab1's with exactly zero ones
    from torch_geometric.nn import global_mean_pool
    x, batch, num_sets = ragged_batch(channels=16)
    isab = MZISAB(16, num_induced_points=4, heads=2).double()
    z = isab(x, batch, num_sets)
    read = z.center if readout == "center" else torch.cat([z.center, z.ihw()], dim=-1)
    global_mean_pool(read, batch).square().sum().backward()
    path = {n: p.grad for n, p in isab.named_parameters() if any(k in n for k in _GENERATOR_PATH)}
    assert len(path) == 12  # six tensors in each MZ-MAB
    if readout == "center":
        assert {n for n, g in path.items() if g is None} == {n for n in path if "mab2" in n}
        assert all(not g.any() for n, g in path.items() if "mab1" in n)
    else:
        assert all(g is not None and g.any() for g in path.values())


def test_block_norm_statistics_match_the_layer_norm():
    # MZ-MAB's norms take 1 / sigma from torch.native_layer_norm (one function,
    # first-order) where ZonotopeLayerNorm.center_and_rstd computes the variance again
    norm = ZonotopeLayerNorm(C).double()
    with torch.no_grad():
        norm.weight.uniform_(0.5, 1.5)
        norm.bias.uniform_(-1, 1)
    c = torch.randn(11, C, dtype=torch.float64, requires_grad=True)
    grads = [torch.randn(11, C, dtype=torch.float64), torch.randn(11, 1, dtype=torch.float64)]
    def fused(c):
        center, (rstd, _) = _norm_center(norm, c)
        return center, rstd

    assert _fused_statistics(c, norm.weight)
    results = []
    for run in (norm.center_and_rstd, fused):
        center, rstd = run(c)
        torch.autograd.backward([center, rstd], grads)
        results.append([center, rstd, c.grad, norm.weight.grad, norm.bias.grad])
        c.grad = norm.weight.grad = norm.bias.grad = None
    for expected, got in zip(*results, strict=True):
        torch.testing.assert_close(got, expected, rtol=1e-12, atol=1e-12)
    assert torch.autograd.gradcheck(
        lambda c, w, b: _LayerNormWithRstd.apply(c, w, b, norm.eps),
        (c[:4].detach().requires_grad_(), norm.weight.detach().requires_grad_(),
         norm.bias.detach().requires_grad_()))


def test_block_norm_statistics_stay_float32_under_low_precision():
    norm = ZonotopeLayerNorm(C)
    for c in (torch.randn(5, C).bfloat16(), torch.randn(5, C)):
        with torch.autocast('cpu', dtype=torch.bfloat16):
            center, (rstd, _) = _norm_center(norm, c)
        assert rstd.dtype == torch.float32 and center.dtype == c.dtype
