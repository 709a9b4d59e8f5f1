"""The sequential selective scan against finite differences and mambapy's
parallel scan; the Mamba encoder against mambapy's Mamba."""
import pytest
import torch
from mzattn.baselines import MambaPMA
from mzattn.baselines.selective_scan import selective_scan

from .helpers import ragged_batch

mamba = pytest.importorskip('mambapy.mamba')
from mzattn.baselines.mamba_encoder import MambaEncoder  # noqa: E402 (needs mambapy)


def scan_inputs(batch=3, length=7, inner=16, state=4, dtype=torch.float64):
    g = torch.Generator().manual_seed(0)

    def draw(*shape):
        return torch.randn(*shape, generator=g, dtype=dtype)

    delta = torch.nn.functional.softplus(draw(batch, length, inner))
    A = -3 * torch.rand(inner, state, generator=g, dtype=dtype)
    tensors = (draw(batch, length, inner), delta, A, draw(batch, length, state),
               draw(batch, length, state), draw(inner))
    return [tensor.requires_grad_() for tensor in tensors]


def parallel_scan(*inputs):
    block = mamba.MambaBlock(mamba.MambaConfig(d_model=8, n_layers=1))
    return block.selective_scan(*inputs)


def test_gradients_match_finite_differences():
    assert torch.autograd.gradcheck(selective_scan, scan_inputs())


@pytest.mark.parametrize('length', [1, 7, 16])
def test_matches_mambapys_parallel_scan(length):
    inputs = scan_inputs(length=length)
    ours, theirs = selective_scan(*inputs), parallel_scan(*inputs)
    assert (ours - theirs).abs().max() < 1e-12
    grad = torch.randn_like(ours)
    for a, b in zip(torch.autograd.grad(ours, inputs, grad),
                    torch.autograd.grad(theirs, inputs, grad), strict=True):
        assert (a - b).abs().max() < 1e-12


def test_encoder_is_mambapys_mamba_with_another_scan():
    config = mamba.MambaConfig(d_model=16, n_layers=2)
    torch.manual_seed(0)
    reference = mamba.Mamba(config)
    torch.manual_seed(0)
    encoder = MambaEncoder(config, scan='sequential')
    assert encoder.state_dict().keys() == reference.state_dict().keys()
    for name, value in reference.state_dict().items():  # the same draw from the same seed
        assert torch.equal(encoder.state_dict()[name], value), name
    x = torch.randn(3, 9, 16)
    assert (encoder(x) - reference(x)).abs().max() < 1e-5


@pytest.mark.parametrize('scan', ['sequential', 'parallel'])
def test_mamba_pma_scans_agree(scan):
    x, batch, B = ragged_batch(4, dtype=torch.float32)
    torch.manual_seed(0)
    auto = MambaPMA(4, 1, channels=16, num_layers=2).eval()
    torch.manual_seed(0)
    other = MambaPMA(4, 1, channels=16, num_layers=2, scan=scan).eval()
    out, other_out = auto(x, batch, dim_size=B), other(x, batch, dim_size=B)
    assert (out - other_out).abs().max() < 1e-5
    out.sum().backward()
    other_out.sum().backward()
    for a, b in zip(auto.parameters(), other.parameters(), strict=True):
        assert (a.grad - b.grad).abs().max() < 1e-5
    assert f"scan='{scan}'" in repr(other)


def test_auto_scan_is_the_sequential_one_on_the_cpu(monkeypatch):
    from mzattn.baselines import mamba_encoder
    calls = []

    def counted(*inputs):
        calls.append(1)
        return selective_scan(*inputs)
    monkeypatch.setattr(mamba_encoder, 'selective_scan', counted)
    x, batch, B = ragged_batch(4, dtype=torch.float32)
    MambaPMA(4, 1, channels=16, num_layers=2)(x, batch, dim_size=B)
    assert len(calls) == 2  # one per layer


def test_unknown_scan_raises():
    with pytest.raises(ValueError, match="'scan' must be one of"):
        MambaPMA(4, 1, channels=16, num_layers=1, scan='cuda')
