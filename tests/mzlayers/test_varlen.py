"""The varlen kernel (nested-jagged SDPA) and the table of the 'auto' policy."""
from math import inf

import pytest
import torch
from mzattn.bench.dispatch import count_host_syncs

from mzlayers import MZSetTransformerAggregation, SetLayout, set_attention
from mzlayers.kernels.policy import AUTO_POLICY, KERNELS, KINDS, auto_kernel
from mzlayers.kernels.varlen import varlen_plan

from .helpers import ragged_batch
from .test_attention import (
    DV,
    H,
    M,
    _assert_matches,
    _inputs,
    _layout,
    _reference,
    assert_dropout_keeps_the_expected_output,
)


def _sized(sizes) -> SetLayout:
    _, batch, B = ragged_batch(sizes=sizes)
    return _layout(batch, B)


@pytest.mark.parametrize('query_sizes,key_sizes', [
    ((2, 0, 3, 1, 0), (4, 4, 4, 4, 4)),  # pooled keys; sets without queries
    ((2, 0, 3, 1, 0), (1, 3, 0, 2, 5)),  # ragged keys; set 2 has queries but no keys
    ((1, 1, 1), (1, 1, 1)),  # one-element sets
    ((3, 2), (0, 0)),  # no set has keys
])
def test_varlen_on_uneven_layouts_matches_reference(query_sizes, key_sizes):
    query_layout, key_layout = _sized(query_sizes), _sized(key_sizes)
    q, k, v = _inputs(query_layout.num_elements, key_layout.num_elements)
    out = set_attention(q, k, v, key_layout, query_layout, 'varlen')
    ref = _reference(q, k, v, key_layout, query_layout)
    no_keys = torch.tensor(key_sizes)[query_layout.batch] == 0
    assert torch.equal(out[no_keys], torch.zeros_like(out[no_keys]))
    if key_layout.num_elements:
        _assert_matches(out, ref, (q, k, v))


@pytest.mark.parametrize('num_queries', [1, M])
@pytest.mark.parametrize('sizes', [(3, 0, 0, 1, 4), (2, 5), (0, 0)])
def test_varlen_learned_queries_with_empty_sets(sizes, num_queries):
    layout = _sized(sizes)
    q, k, v = _inputs(num_queries, layout.num_elements)
    out = set_attention(q, k, v, layout, None, 'varlen')
    assert out.shape == (len(sizes) * num_queries, H, DV)
    empty = torch.tensor(sizes).repeat_interleave(num_queries) == 0
    assert torch.equal(out[empty], torch.zeros_like(out[empty]))
    if layout.num_elements:
        _assert_matches(out, _reference(q, k, v, layout), (q, k, v))


@pytest.mark.parametrize('shared', [True, False])
def test_varlen_gradcheck(shared):
    key_layout = _sized((2, 0, 5, 1))
    query_layout = None if shared else _sized((1, 2, 0, 2))
    q, k, v = _inputs(M if shared else query_layout.num_elements, key_layout.num_elements)

    def fn(q, k, v):
        return set_attention(q, k, v, key_layout, query_layout, 'varlen')

    assert torch.autograd.gradcheck(fn, (q, k, v), atol=1e-8)


@pytest.mark.parametrize('shared', [True, False])
def test_varlen_bf16_autocast_is_close_to_float32(shared):
    key_layout = _sized((3, 0, 6))
    query_layout = None if shared else _sized((2, 1, 3))
    q, k, v = _inputs(M if shared else query_layout.num_elements, key_layout.num_elements,
                      torch.float32)
    exact = set_attention(q, k, v, key_layout, query_layout, 'varlen')
    with torch.autocast('cpu', dtype=torch.bfloat16):
        low = set_attention(q, k, v, key_layout, query_layout, 'varlen')
    assert low.dtype == torch.bfloat16
    assert torch.allclose(low.float(), exact, atol=0.05)
    grads = torch.autograd.grad(low.float().sum(), (q, k, v))
    assert all(torch.isfinite(g).all() for g in grads)


@pytest.mark.parametrize('queries', ['learned', 'pooled', 'elements'])
def test_varlen_dropout_keeps_the_expected_output(queries):
    assert_dropout_keeps_the_expected_output('varlen', queries)


@pytest.mark.parametrize('queries', ['learned', 'elements'])
def test_varlen_plan_reads_nothing_from_the_device(queries):
    # sizes from the host (as the harness gives them): dropping the empty
    # sets needs no host read and no tensor of host data
    keys, query_layout = _sized((3, 0, 2, 5)), _sized((1, 2, 0, 4))
    with count_host_syncs() as count:
        plan = varlen_plan(keys, None if queries == 'learned' else query_layout, M)
    assert count.total == 0, (count.ops, count.tolist, count.copies)
    kept = [0, 3] if queries == 'elements' else [0, 2, 3]
    assert plan.key_offsets.diff().tolist() == [keys.counts[b] for b in kept]
    assert plan.key_rows.tolist() == [r for r, b in enumerate(keys.batch.tolist()) if b in kept]


def test_varlen_rejects_padded_layouts():
    layout = SetLayout.padded(torch.tensor([[True, False], [True, True]]))
    q, k, v = _inputs(M, 4)
    with pytest.raises(ValueError, match="'varlen' backend takes ragged batches only"):
        set_attention(q, k, v, layout, None, 'varlen')


def test_auto_policy_table_is_complete():
    for device, policy in AUTO_POLICY.items():
        assert set(policy.rules) == set(KINDS), device
        for rules in policy.rules.values():
            assert all(kernel in KERNELS for kernel, _ in rules)
            bounds = [bound for _, bound in rules]
            assert bounds == sorted(bounds) and bounds[-1] == inf
    assert AUTO_POLICY['cpu'].measured and AUTO_POLICY['cuda'].measured is None


@pytest.mark.parametrize('sizes,kernel', [
    ((5, 5, 5), 'dense'),  # no padding
    ((5, 9, 6), 'dense'),  # padded 1.35 times over
    ((5, 40, 6), 'varlen'),  # padded 2.35 times over
])
def test_auto_on_cuda_runs_varlen_where_padding_is_high(sizes, kernel):
    layout = _sized(sizes)
    with count_host_syncs() as count:  # learned queries, self-attention, ISAB's second block
        chosen = [auto_kernel('cuda', layout, None), auto_kernel('cuda', layout, layout),
                  auto_kernel('cuda', layout.pooled(2), layout)]
    assert count.total == 0
    assert chosen == [kernel] * 3
    assert auto_kernel('mps', layout, None) == ('buckets' if kernel == 'varlen' else 'dense')


def test_memory_guard_estimates_varlen_unpadded_and_auto_on_cuda_as_varlen():
    skewed = _sized((2000,) + (1,) * 200)  # padded to 201 sets of 2,000 by 'dense'

    def peak(backend, device_type='cpu'):
        shape = MZSetTransformerAggregation(8, heads=2, backend=backend).memory_shape()
        return shape.peak(skewed, device_type=device_type, element_size=4, grad=False)

    assert peak('dense') > 5 * peak('varlen')
    assert peak('auto', 'cuda') == peak('varlen')
