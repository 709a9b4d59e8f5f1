import pytest
import torch

from mzlayers import SetLayout, set_attention
from mzlayers.attention import AUTO_MAX_PADDING
from mzlayers.layout import attention_bias

from .helpers import SIZES, ragged_batch

H, DK, DV, M = 2, 3, 5, 4


def _layout(batch, num_sets):
    return SetLayout.from_batch(batch, batch.numel(), num_sets, batch.device)


def _reference(q, k, v, layout, query_layout=None):
    r"""Per-set loop with an explicit softmax (independent of all kernels)."""
    outs = []
    starts = [0]
    for c in layout.counts:
        starts.append(starts[-1] + c)
    for b in range(layout.num_sets):
        kb, vb = k[starts[b]:starts[b + 1]], v[starts[b]:starts[b + 1]]
        qb = q if query_layout is None else q[query_layout.batch == b]
        if kb.numel() == 0:
            outs.append(q.new_zeros(qb.size(0), H, DV))
            continue
        score = torch.einsum('qhd,khd->hqk', qb, kb) / DK**0.5
        outs.append(torch.einsum('hqk,khd->qhd', score.softmax(-1), vb))
    return torch.cat(outs)


@pytest.mark.parametrize('backend', ['segment', 'dense', 'auto'])
@pytest.mark.parametrize('shared', [True, False])
def test_backends_match_reference_forward_and_backward(backend, shared):
    x, batch, B = ragged_batch()
    layout = _layout(batch, B)
    k = torch.randn(x.size(0), H, DK, dtype=torch.float64, requires_grad=True)
    v = torch.randn(x.size(0), H, DV, dtype=torch.float64, requires_grad=True)
    nq = M if shared else x.size(0)
    q = torch.randn(nq, H, DK, dtype=torch.float64, requires_grad=True)
    query_layout = None if shared else layout
    out = set_attention(q, k, v, layout, query_layout, backend)
    ref = _reference(q, k, v, layout, query_layout)
    assert out.shape == ref.shape
    assert torch.allclose(out, ref, atol=1e-10)
    w = torch.randn_like(out)
    grads = torch.autograd.grad((out * w).sum(), (q, k, v))
    ref_grads = torch.autograd.grad((ref * w).sum(), (q, k, v))
    for g, r in zip(grads, ref_grads, strict=True):
        assert torch.allclose(g, r, atol=1e-10)


@pytest.mark.parametrize('backend', ['dense', 'auto'])
@pytest.mark.parametrize('shared', [True, False])
def test_equal_sizes_run_unpadded_and_match_reference(backend, shared):
    batch = torch.arange(3).repeat_interleave(6)
    layout = _layout(batch, 3)
    bucket, = layout.plan(None if shared else layout, AUTO_MAX_PADDING)
    assert bucket.key_pos is None and bucket.key_index is None  # a view, no copy, no mask
    k = torch.randn(18, H, DK, dtype=torch.float64, requires_grad=True)
    v = torch.randn(18, H, DV, dtype=torch.float64, requires_grad=True)
    q = torch.randn(M if shared else 18, H, DK, dtype=torch.float64, requires_grad=True)
    query_layout = None if shared else layout
    out = set_attention(q, k, v, layout, query_layout, backend)
    ref = _reference(q, k, v, layout, query_layout)
    assert torch.allclose(out, ref, atol=1e-10)
    grads = torch.autograd.grad(out.square().sum(), (q, k, v))
    ref_grads = torch.autograd.grad(ref.square().sum(), (q, k, v))
    for g, r in zip(grads, ref_grads, strict=True):
        assert torch.allclose(g, r, atol=1e-10)


def test_auto_backend_splits_skewed_batches_into_buckets():
    _, batch, B = ragged_batch()
    layout = _layout(batch, B)
    buckets = layout.plan(None, AUTO_MAX_PADDING)
    assert len(buckets) > 1
    assert sorted(torch.cat([b.set_ids for b in buckets]).tolist()) == list(range(B))
    for b in buckets:
        counts = [SIZES[i] for i in b.set_ids.tolist()]
        assert max(counts) <= AUTO_MAX_PADDING * max(1, min(counts))
    uniform = _layout(torch.arange(4).repeat_interleave(5), 4)
    assert len(uniform.plan(None, AUTO_MAX_PADDING)) == 1


def test_empty_set_gives_exact_zero_without_nan():
    x, batch, B = ragged_batch(sizes=(0, 3, 0))
    layout = _layout(batch, B)
    k = torch.randn(3, H, DK, dtype=torch.float64, requires_grad=True)
    v = torch.randn(3, H, DV, dtype=torch.float64, requires_grad=True)
    q = torch.randn(M, H, DK, dtype=torch.float64, requires_grad=True)
    for backend in ('segment', 'dense', 'auto'):
        out = set_attention(q, k, v, layout, None, backend).view(B, M, H, DV)
        assert torch.equal(out[0], torch.zeros_like(out[0]))
        assert torch.equal(out[2], torch.zeros_like(out[2]))
        grads = torch.autograd.grad(out.sum(), (q, k, v))
        assert all(torch.isfinite(g).all() for g in grads)


@pytest.mark.parametrize('backend', ['segment', 'dense', 'auto'])
def test_extreme_logit_is_isolated_to_its_set(backend):
    x, batch, B = ragged_batch()
    layout = _layout(batch, B)
    q = torch.randn(M, H, DK, dtype=torch.float64)
    k = torch.randn(x.size(0), H, DK, dtype=torch.float64)
    v = torch.randn(x.size(0), H, DV, dtype=torch.float64)
    before = set_attention(q, k, v, layout, None, backend).view(B, M, H, DV)
    k2 = k.clone()
    k2[0] = 1e4 * q[0]  # element 0 belongs to set 0: a logit of ~1e4
    after = set_attention(q, k2, v, layout, None, backend).view(B, M, H, DV)
    assert torch.isfinite(after).all()
    assert torch.equal(before[1:], after[1:])
    assert not torch.allclose(before[0], after[0])


def test_attention_bias_is_the_single_mask_conversion():
    mask = torch.tensor([[True, False], [False, False]])
    bias = attention_bias(mask, torch.float32)
    assert bias.shape == (2, 1, 1, 2)
    assert bias[0, 0, 0, 0] == 0
    assert bias[0, 0, 0, 1] == torch.finfo(torch.float32).min
    assert torch.isfinite(bias).all()
