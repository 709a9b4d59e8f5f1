import pytest
import torch
import torch.nn.functional as F
from mzattn.bench.dispatch import count_ops


def _heads_last(*shape):  # [B, H, L, E] views of [B, L, H, E] rows, as the dense kernel makes
    B, H, L, E = shape
    return torch.randn(B, L, H, E, dtype=torch.float64).transpose(1, 2).requires_grad_()


@pytest.mark.parametrize('dropout', [0.0, 0.5])
def test_fused_sdpa_counts_one_operator_each_way_with_the_fused_layouts(dropout):
    q, k, v = _heads_last(2, 3, 5, 4), _heads_last(2, 3, 7, 4), _heads_last(2, 3, 7, 6)
    mask = torch.zeros(2, 1, 1, 7, dtype=torch.float64)
    grad = torch.randn(2, 3, 5, 6, dtype=torch.float64)
    torch.manual_seed(0)
    expected = F.scaled_dot_product_attention(q, k, v, attn_mask=mask, dropout_p=dropout)
    expected_grads = torch.autograd.grad(expected, (q, k, v), grad)
    torch.manual_seed(0)
    with count_ops(fused_sdpa=True) as ops:
        out = F.scaled_dot_product_attention(q, k, v, attn_mask=mask, dropout_p=dropout)
        grads = torch.autograd.grad(out, (q, k, v), grad)
    assert dict(ops) == {'scaled_dot_product_attention': 1,
                         'scaled_dot_product_attention_backward': 1}
    assert torch.equal(out, expected)
    assert all(torch.equal(g, e) for g, e in zip(grads, expected_grads, strict=True))
    assert out.transpose(1, 2).is_contiguous()  # [B, L, H, E] in memory
    assert [g.stride() for g in grads] == [t.stride() for t in (q, k, v)]


def test_fused_sdpa_counts_a_call_without_gradients_and_restores_the_function():
    sdpa = F.scaled_dot_product_attention
    q = torch.randn(1, 2, 3, 4)
    with pytest.raises(RuntimeError, match='inside'):
        with count_ops(fused_sdpa=True) as ops, torch.no_grad():
            F.scaled_dot_product_attention(q, q, q, is_causal=True)
            raise RuntimeError('inside')
    assert dict(ops) == {'scaled_dot_product_attention': 1}
    assert F.scaled_dot_product_attention is sdpa
    with count_ops() as ops:  # unfused: the CPU kernel's own operators
        F.scaled_dot_product_attention(q, q, q)
    assert sum(ops.values()) >= 1 and 'scaled_dot_product_attention_backward' not in ops


def test_views_and_metadata_are_counted_apart_from_kernels():
    x = torch.randn(4, 6, requires_grad=True)
    w = torch.randn(5, 6)
    with count_ops() as ops:
        y = x.view(2, 2, 6).transpose(0, 1).reshape(4, 6)  # a view, a transpose, a copy
        (y @ w.t()).sum().backward()
    assert {'view', 'transpose', 't'} <= ops.views.keys()
    assert 'mm' in ops and 'mm' not in ops.views and 'clone' not in ops.views
    assert ops.kernels == sum(ops.values()) - sum(ops.views.values()) > 0
