import pytest
import torch

from mzlayers import SetLayout, attention, set_attention
from mzlayers.attention import AUTO_MAX_PADDING
from mzlayers.kernels.dense import plan
from mzlayers.kernels.segment import block_index, block_sum_bags, pair_bags, segment_runs
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


def _assert_matches(out, ref, inputs):
    r"""``out`` equals ``ref`` to 1e-10, and so do their gradients with
    respect to ``inputs`` (for one random cotangent)."""
    assert out.shape == ref.shape
    assert torch.allclose(out, ref, atol=1e-10)
    w = torch.randn_like(out)
    grads = torch.autograd.grad((out * w).sum(), inputs)
    ref_grads = torch.autograd.grad((ref * w).sum(), inputs)
    for g, r in zip(grads, ref_grads, strict=True):
        assert torch.isfinite(g).all()
        assert torch.allclose(g, r, atol=1e-10)


def _attention(q, k, v, layout, query_layout, backend, joined):
    r""":func:`set_attention` on head-split tensors, or (:obj:`joined`) on
    their heads concatenated, :obj:`heads=H`, the output split again."""
    if not joined:
        return set_attention(q, k, v, layout, query_layout, backend)
    out = set_attention(q.flatten(1), k.flatten(1), v.flatten(1), layout, query_layout,
                        backend, heads=H)
    assert out.dim() == 2
    return out.view(out.size(0), H, -1)


@pytest.mark.parametrize('joined', [False, True])
@pytest.mark.parametrize('backend', ['segment', 'dense', 'varlen', 'auto'])
@pytest.mark.parametrize('shared', [True, False])
def test_backends_match_reference_forward_and_backward(backend, shared, joined):
    x, batch, B = ragged_batch()
    layout = _layout(batch, B)
    k = torch.randn(x.size(0), H, DK, dtype=torch.float64, requires_grad=True)
    v = torch.randn(x.size(0), H, DV, dtype=torch.float64, requires_grad=True)
    nq = M if shared else x.size(0)
    q = torch.randn(nq, H, DK, dtype=torch.float64, requires_grad=True)
    query_layout = None if shared else layout
    out = _attention(q, k, v, layout, query_layout, backend, joined)
    ref = _reference(q, k, v, layout, query_layout)
    _assert_matches(out, ref, (q, k, v))


@pytest.mark.parametrize('joined', [False, True])
@pytest.mark.parametrize('backend', ['dense', 'auto'])
@pytest.mark.parametrize('shared', [True, False])
def test_equal_sizes_run_unpadded_and_match_reference(backend, shared, joined):
    batch = torch.arange(3).repeat_interleave(6)
    layout = _layout(batch, 3)
    bucket, = plan(layout, None if shared else layout, AUTO_MAX_PADDING)
    assert bucket.key_pos is None and bucket.key_index is None  # a view, no copy, no mask
    k = torch.randn(18, H, DK, dtype=torch.float64, requires_grad=True)
    v = torch.randn(18, H, DV, dtype=torch.float64, requires_grad=True)
    q = torch.randn(M if shared else 18, H, DK, dtype=torch.float64, requires_grad=True)
    query_layout = None if shared else layout
    out = _attention(q, k, v, layout, query_layout, backend, joined)
    ref = _reference(q, k, v, layout, query_layout)
    _assert_matches(out, ref, (q, k, v))


def test_auto_backend_splits_skewed_batches_into_buckets():
    _, batch, B = ragged_batch()
    layout = _layout(batch, B)
    buckets = plan(layout, None, AUTO_MAX_PADDING)
    assert len(buckets) > 1
    assert sorted(torch.cat([b.set_ids for b in buckets]).tolist()) == list(range(B))
    for b in buckets:
        counts = [SIZES[i] for i in b.set_ids.tolist()]
        assert max(counts) <= AUTO_MAX_PADDING * max(1, min(counts))
    uniform = _layout(torch.arange(4).repeat_interleave(5), 4)
    assert len(plan(uniform, None, AUTO_MAX_PADDING)) == 1


def test_auto_gives_large_sets_an_unpadded_bucket_of_their_own(monkeypatch):
    x, batch, B = ragged_batch()  # sizes 3, 1, 0, 7, 2, 40: pairs 9, 1, 0, 49, 4, 1600
    layout = _layout(batch, B)
    buckets = plan(layout, layout, AUTO_MAX_PADDING, alone_min_pairs=40)
    alone = [b for b in buckets if b.set_ids.tolist() in ([3], [5])]
    assert len(alone) == 2
    assert all(b.key_pos is None and b.query_pos is None for b in alone)  # no padding, no mask
    assert sorted(torch.cat([b.set_ids for b in buckets]).tolist()) == list(range(B))
    tight = _layout(torch.arange(4).repeat_interleave(50), 4)
    assert len(plan(tight, tight, AUTO_MAX_PADDING, alone_min_pairs=40)) == 1
    monkeypatch.setattr(attention, 'AUTO_ALONE_MIN_PAIRS', 40)
    q, k, v = _inputs(x.size(0), x.size(0))
    out = set_attention(q, k, v, layout, layout, 'auto')
    ref = _reference(q, k, v, layout, layout)
    _assert_matches(out, ref, (q, k, v))


def test_empty_set_gives_exact_zero_without_nan():
    x, batch, B = ragged_batch(sizes=(0, 3, 0))
    layout = _layout(batch, B)
    k = torch.randn(3, H, DK, dtype=torch.float64, requires_grad=True)
    v = torch.randn(3, H, DV, dtype=torch.float64, requires_grad=True)
    q = torch.randn(M, H, DK, dtype=torch.float64, requires_grad=True)
    for backend in ('segment', 'dense', 'varlen', 'auto'):
        out = set_attention(q, k, v, layout, None, backend).view(B, M, H, DV)
        assert torch.equal(out[0], torch.zeros_like(out[0]))
        assert torch.equal(out[2], torch.zeros_like(out[2]))
        grads = torch.autograd.grad(out.sum(), (q, k, v))
        assert all(torch.isfinite(g).all() for g in grads)


@pytest.mark.parametrize('backend', ['segment', 'dense', 'varlen', 'auto'])
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


@pytest.fixture(params=['bags', 'mixed', 'fused'])
def fused_sets(request, monkeypatch):
    r"""The segment kernel with every set in the bag kernel, sets of at
    least 8 query-key pairs fused (mixed runs in these small tests), or every
    non-empty set fused."""
    min_pairs = {'bags': 10**9, 'mixed': 8, 'fused': 1}[request.param]
    monkeypatch.setattr(attention, 'SEGMENT_FUSED_MIN_PAIRS', min_pairs)


def test_segment_runs_put_every_large_set_alone():
    _, batch, B = ragged_batch()  # sizes 3, 1, 0, 7, 2, 40
    layout = _layout(batch, B)
    learned = segment_runs(layout, None, 8, num_learned=2)  # pairs 6, 2, 0, 14, 4, 80
    assert [(r.start, r.stop, r.fused) for r in learned.runs] == [
        (0, 3, False), (3, 4, True), (4, 5, False), (5, 6, True)]
    assert learned.key_rows == [4, 7, 2, 40] and learned.query_rows == []
    pairs = segment_runs(layout, layout.pooled(2), 8)  # 6, 2, 0, 14, 4, 80 again
    assert pairs.runs == learned.runs
    assert pairs.query_rows == [6, 2, 2, 2]
    self_attention = segment_runs(layout, layout, 8)  # 9, 1, 0, 49, 4, 1600
    assert [(r.start, r.stop, r.fused) for r in self_attention.runs] == [
        (0, 1, True), (1, 3, False), (3, 4, True), (4, 5, False), (5, 6, True)]
    assert self_attention.query_rows == self_attention.key_rows == [3, 1, 7, 2, 40]
    with pytest.raises(ValueError, match='same sets'):
        segment_runs(layout, _layout(torch.arange(2), 2), 8)


@pytest.mark.parametrize('shared', [True, False])
def test_segment_mixed_runs_match_reference(shared, fused_sets):
    x, batch, B = ragged_batch()
    layout = _layout(batch, B)
    query_layout = None if shared else layout
    q, k, v = _inputs(M if shared else x.size(0), x.size(0))
    out = set_attention(q, k, v, layout, query_layout, 'segment')
    ref = _reference(q, k, v, layout, query_layout)
    _assert_matches(out, ref, (q, k, v))


def _inputs(num_queries, num_keys, dtype=torch.float64):
    q = torch.randn(num_queries, H, DK, dtype=dtype, requires_grad=True)
    k = torch.randn(num_keys, H, DK, dtype=dtype, requires_grad=True)
    v = torch.randn(num_keys, H, DV, dtype=dtype, requires_grad=True)
    return q, k, v


@pytest.mark.parametrize('query_sizes,key_sizes', [
    ((2, 0, 3, 1, 0), (4, 4, 4, 4, 4)),  # keys pooled to a uniform width
    ((2, 0, 3, 1, 0), (1, 3, 0, 2, 5)),  # ragged keys; set 2 has queries but no keys
    ((1, 1, 1), (1, 1, 1)),  # one-element sets
])
def test_segment_pairs_on_uneven_layouts_match_reference(query_sizes, key_sizes, fused_sets):
    _, query_batch, B = ragged_batch(sizes=query_sizes)
    _, key_batch, _ = ragged_batch(sizes=key_sizes)
    query_layout, key_layout = _layout(query_batch, B), _layout(key_batch, B)
    q, k, v = _inputs(query_batch.numel(), key_batch.numel())
    out = set_attention(q, k, v, key_layout, query_layout, 'segment')
    ref = _reference(q, k, v, key_layout, query_layout)
    _assert_matches(out, ref, (q, k, v))


@pytest.mark.parametrize('num_queries', [1, M])
@pytest.mark.parametrize('sizes', [(3, 0, 0, 1, 4), (1, 1), (0, 2, 0)])
def test_segment_shared_with_empty_and_one_element_sets(sizes, num_queries, fused_sets):
    _, batch, B = ragged_batch(sizes=sizes)
    layout = _layout(batch, B)
    q, k, v = _inputs(num_queries, batch.numel())
    out = set_attention(q, k, v, layout, None, 'segment')
    ref = _reference(q, k, v, layout)
    empty = torch.tensor(sizes).repeat_interleave(num_queries) == 0
    assert torch.equal(out[empty], torch.zeros_like(out[empty]))
    _assert_matches(out, ref, (q, k, v))


def test_segment_shared_on_a_batch_of_empty_sets_is_zero():
    layout = _layout(torch.zeros(0, dtype=torch.long), 2)
    q, k, v = _inputs(M, 0)
    out = set_attention(q, k, v, layout, None, 'segment')
    assert out.shape == (2 * M, H, DV)
    assert torch.equal(out, torch.zeros_like(out))
    grad, = torch.autograd.grad(out.sum(), q)
    assert torch.equal(grad, torch.zeros_like(grad))


@pytest.mark.parametrize('key_sizes', [(3, 3, 3, 3), (2, 0, 5, 1)])
@pytest.mark.parametrize('shared', [True, False])
def test_segment_gradcheck(key_sizes, shared, fused_sets):
    _, key_batch, B = ragged_batch(sizes=key_sizes)
    key_layout = _layout(key_batch, B)
    query_layout = None if shared else _layout(ragged_batch(sizes=(1, 2, 0, 2))[1], B)
    num_queries = M if shared else query_layout.num_elements
    q, k, v = _inputs(num_queries, key_batch.numel())

    def fn(q, k, v):
        return set_attention(q, k, v, key_layout, query_layout, 'segment')

    assert torch.autograd.gradcheck(fn, (q, k, v), atol=1e-8)


def test_pair_plan_transposes_the_samples():
    _, batch, B = ragged_batch()
    layout = _layout(batch, B)
    bags = pair_bags(layout, layout, H)
    S = bags.index.numel()
    assert S == H * torch.tensor(SIZES).square().sum()
    assert sorted(bags.perm.tolist()) == list(range(S))
    assert torch.equal(bags.bag.diff() >= 0, torch.ones(S - 1, dtype=torch.bool))
    assert torch.equal(bags.bag[bags.perm], bags.t_index)
    rows = torch.arange(bags.t_offsets.numel() - 1).repeat_interleave(bags.t_offsets.diff())
    assert torch.equal(bags.index[bags.perm], rows)
    query, head = bags.bag // H, bags.bag % H  # every bag reads its own set and head
    assert torch.equal(bags.index % H, head)
    assert torch.equal(batch[bags.index // H], batch[query])


def test_block_plans_index_every_set_and_head():
    _, batch, B = ragged_batch()
    layout = _layout(batch, B)
    W = 3
    index = block_index(layout, H, W).view(-1, H, W)
    for x in range(batch.numel()):
        for h in range(H):
            assert index[x, h].tolist() == [(batch[x].item() * H + h) * W + k for k in range(W)]
    rows, offsets = block_sum_bags(layout, H, W)
    assert offsets.numel() == H * W * B + 1
    for h in range(H):
        for k in range(W):
            for b in range(B):
                bag = (h * W + k) * B + b
                members = rows[offsets[bag]:offsets[bag + 1]]
                expected = [x * H + h for x in range(batch.numel()) if batch[x] == b]
                assert members.tolist() == expected


@pytest.mark.parametrize('key_sizes', [(2, 2, 2), (1, 3, 2)])
def test_segment_pairs_reject_layouts_of_other_sets(key_sizes):
    _, key_batch, B = ragged_batch(sizes=key_sizes)
    key_layout, query_layout = _layout(key_batch, B), _layout(torch.arange(2), 2)
    q, k, v = _inputs(2, key_batch.numel())
    with pytest.raises(ValueError, match='same sets'):
        set_attention(q, k, v, key_layout, query_layout, 'segment')
    with pytest.raises(ValueError, match='same sets'):
        pair_bags(key_layout, query_layout, H)


@pytest.mark.parametrize('queries', ['learned', 'pooled', 'elements'])
def test_segment_dropout_keeps_the_expected_output(queries, fused_sets):
    assert_dropout_keeps_the_expected_output('segment', queries)


def assert_dropout_keeps_the_expected_output(backend: str, queries: str) -> None:
    r"""Dropout draws of :obj:`backend` differ, and their mean is the exact
    output, for learned queries, queries over pooled keys, or pooled queries."""
    _, batch, B = ragged_batch(sizes=(4, 0, 6))
    layout = _layout(batch, B)
    key_layout, query_layout = {  # ragged keys, or the 2 pooled tokens of every set
        'learned': (layout, None),
        'pooled': (layout, layout.pooled(2)),
        'elements': (layout.pooled(2), layout),
    }[queries]
    num_queries = M if query_layout is None else query_layout.num_elements
    q, k, v = _inputs(num_queries, key_layout.num_elements)
    exact = set_attention(q, k, v, key_layout, query_layout, backend)
    torch.manual_seed(0)
    draws = torch.stack([set_attention(q, k, v, key_layout, query_layout, backend, 0.5)
                         for _ in range(400)])
    assert not torch.allclose(draws[0], exact)
    assert torch.allclose(draws.mean(0), exact, atol=0.15)


@pytest.mark.parametrize('key_sizes', [(4, 4, 4), (3, 0, 6)])
@pytest.mark.parametrize('shared', [True, False])
def test_segment_bf16_autocast_is_close_to_float32(key_sizes, shared, fused_sets):
    _, key_batch, B = ragged_batch(sizes=key_sizes)
    key_layout = _layout(key_batch, B)
    query_layout = None if shared else _layout(ragged_batch(sizes=(2, 1, 3))[1], B)
    q, k, v = _inputs(M if shared else query_layout.num_elements, key_batch.numel(),
                      torch.float32)
    exact = set_attention(q, k, v, key_layout, query_layout, 'segment')
    with torch.autocast('cpu', dtype=torch.bfloat16):
        low = set_attention(q.bfloat16(), k.bfloat16(), v.bfloat16(), key_layout,
                            query_layout, 'segment')
    assert low.dtype == torch.bfloat16
    assert torch.allclose(low.float(), exact, atol=0.05)
    grads = torch.autograd.grad(low.float().sum(), (q, k, v))
    assert all(torch.isfinite(g).all() for g in grads)


@pytest.mark.parametrize('case', ['learned-ragged', 'learned-equal', 'pooled-keys',
                                  'pooled-keys-equal', 'ragged-keys'])
def test_auto_backend_dispatch_on_cpu(case):
    ragged = torch.tensor([0, 0, 0, 1, 2, 2, 2, 2, 2, 2, 2])
    equal = torch.arange(3).repeat_interleave(4)
    batch = equal if case.endswith('equal') else ragged
    layout = _layout(batch, 3)
    n = batch.numel()
    if case.startswith('learned'):
        key_layout, query_layout = layout, None
        q, k = torch.randn(M, H, DK), torch.randn(n, H, DK)
    elif case.startswith('pooled'):
        key_layout, query_layout = layout.pooled(2), layout
        q, k = torch.randn(n, H, DK), torch.randn(6, H, DK)
    else:
        key_layout, query_layout = layout, layout
        q, k = torch.randn(n, H, DK), torch.randn(n, H, DK)
    v = torch.randn(k.size(0), H, DV)
    expected = 'dense' if case in ('learned-equal', 'pooled-keys-equal', 'ragged-keys') \
        else 'segment'
    auto = set_attention(q, k, v, key_layout, query_layout, 'auto')
    assert torch.equal(auto, set_attention(q, k, v, key_layout, query_layout, expected))
