import pytest
import torch
import torch.nn.functional as F

from mzlayers import MZSAB
from mzlayers.kernels import sdpa as sdpa_module
from mzlayers.kernels.sdpa import sdpa


@pytest.mark.parametrize('masked', [False, True])
def test_query_chunks_match_one_call(monkeypatch, masked):
    g = torch.Generator().manual_seed(0)
    q = torch.randn(3, 2, 17, 4, dtype=torch.float64, generator=g, requires_grad=True)
    k = torch.randn(3, 2, 11, 4, dtype=torch.float64, generator=g, requires_grad=True)
    v = torch.randn(3, 2, 11, 12, dtype=torch.float64, generator=g, requires_grad=True)
    mask = None
    if masked:
        real = torch.arange(11)[None, :] < torch.tensor([11, 5, 1])[:, None]
        mask = torch.zeros(3, 1, 1, 11, dtype=torch.float64).masked_fill(
            ~real[:, None, None, :], torch.finfo(torch.float64).min)
    ref = F.scaled_dot_product_attention(q, k, v, attn_mask=mask)
    ref_grads = torch.autograd.grad(ref.square().sum(), (q, k, v))
    calls = []
    original = F.scaled_dot_product_attention

    def spy(q, k, v, attn_mask=None, dropout_p=0.0):
        calls.append(q.numel() // q.size(-1) * k.size(-2))
        return original(q, k, v, attn_mask=attn_mask, dropout_p=dropout_p)

    monkeypatch.setattr(sdpa_module, 'MAX_SCORE_ELEMENTS', 3 * 2 * 4 * 11)  # 4 queries
    monkeypatch.setattr(sdpa_module.F, 'scaled_dot_product_attention', spy)
    out = sdpa(q, k, v, attn_mask=mask)
    grads = torch.autograd.grad(out.square().sum(), (q, k, v))
    monkeypatch.undo()
    assert len(calls) >= 5 and max(calls) <= 3 * 2 * 4 * 11  # the bound holds
    torch.testing.assert_close(out, ref, atol=1e-12, rtol=0)
    for a, b in zip(grads, ref_grads, strict=True):
        torch.testing.assert_close(a, b, atol=1e-12, rtol=0)


@pytest.mark.parametrize('masked', [False, True])
def test_query_chunks_without_grad_fill_one_output(monkeypatch, masked):
    g = torch.Generator().manual_seed(1)
    q, k = (torch.randn(3, 2, n, 4, dtype=torch.float64, generator=g) for n in (17, 11))
    v = torch.randn(3, 2, 11, 12, dtype=torch.float64, generator=g)
    mask = torch.zeros(3, 1, 1, 11, dtype=torch.float64)
    mask[1, ..., 5:] = torch.finfo(torch.float64).min
    mask = mask if masked else None
    ref = F.scaled_dot_product_attention(q, k, v, attn_mask=mask)
    monkeypatch.setattr(sdpa_module, 'MAX_SCORE_ELEMENTS', 3 * 2 * 4 * 11)  # 4 queries
    out = sdpa(q, k, v, attn_mask=mask)  # 5 chunks, the last of 1 query
    torch.testing.assert_close(out, ref, atol=1e-12, rtol=0)


def test_query_chunks_keep_their_dropout_masks_in_backward(monkeypatch):
    g = torch.Generator().manual_seed(2)
    q = torch.randn(2, 2, 9, 4, dtype=torch.float64, generator=g, requires_grad=True)
    k = torch.randn(2, 2, 7, 4, dtype=torch.float64, generator=g, requires_grad=True)
    v = torch.randn(2, 2, 7, 8, dtype=torch.float64, generator=g, requires_grad=True)
    monkeypatch.setattr(sdpa_module, 'MAX_SCORE_ELEMENTS', 2 * 2 * 3 * 7)  # 3 queries
    torch.manual_seed(0)
    out = sdpa(q, k, v, dropout_p=0.5)
    grads = torch.autograd.grad(out.square().sum(), (q, k, v))
    torch.manual_seed(0)  # the same chunks, the same draws, plain autograd
    ref = torch.cat([F.scaled_dot_product_attention(qc, k, v, dropout_p=0.5)
                     for qc in q.split(3, dim=-2)], dim=-2)
    ref_grads = torch.autograd.grad(ref.square().sum(), (q, k, v))
    torch.testing.assert_close(out, ref, atol=1e-12, rtol=0)
    for a, b in zip(grads, ref_grads, strict=True):
        torch.testing.assert_close(a, b, atol=1e-12, rtol=0)


def test_mz_self_attention_on_one_large_set_is_chunked(monkeypatch):
    seen = []
    original = F.scaled_dot_product_attention

    def spy(q, k, v, attn_mask=None, dropout_p=0.0):
        seen.append(q.numel() // q.size(-1) * k.size(-2))
        return original(q, k, v, attn_mask=attn_mask, dropout_p=dropout_p)

    monkeypatch.setattr(sdpa_module, 'MAX_SCORE_ELEMENTS', 4096)
    monkeypatch.setattr(sdpa_module.F, 'scaled_dot_product_attention', spy)
    block = MZSAB(16, heads=2, num_generators=4)
    x = torch.randn(300, 16)
    for backend in ('dense', 'segment'):
        seen.clear()
        block.backend = block.attn.backend = backend
        block(x, torch.zeros(300, dtype=torch.long)).center.sum().backward()
        assert seen and max(seen) <= 4096, backend  # never the [2, 300, 300] scores
