r"""Validate once, compute after: one host read per forward, errors that
name the argument, no input error for a NaN made inside a block."""
import pytest
import torch
from mzattn.baselines import build_model, list_models
from mzattn.bench.dispatch import count_host_syncs

from mzlayers import ISAB, MZISAB, MZSAB, SetLayout, build_set_transformer
from mzlayers.validate import MAX_DIM_SIZE

X = torch.randn(9, 3, generator=torch.Generator().manual_seed(0))
BATCH = torch.tensor([0, 0, 0, 1, 1, 1, 1, 3, 3])  # set 2 is empty


def _members(model) -> int:
    r"""Inner model calls of the uncertainty wrappers (each validates)."""
    if hasattr(model, 'num_samples'):
        return model.num_samples
    return len(model.members) if hasattr(model, 'members') else 1


@pytest.mark.parametrize('name', list_models())
def test_one_host_read_per_forward(name):
    model = build_model(name, 3, 2).eval()
    for dim_size in (None, 4):
        model(X, BATCH, dim_size)  # warm any lazy state
        with count_host_syncs() as count:
            model(X, BATCH, dim_size)
        # without dim_size the number of sets comes from a bincount (CUDA reads its range)
        assert count.ops == ['bincount'] * _members(model) * (dim_size is None), name
        assert count.tolist == _members(model), name


@pytest.mark.parametrize('block', [MZISAB(3, 4, heads=1), MZSAB(3), ISAB(3, 4)])
def test_blocks_given_a_layout_read_nothing(block):
    layout = SetLayout.from_batch(BATCH, 9, 4)
    with count_host_syncs() as count:
        block(X, layout=layout)
    assert (count.tolist, count.ops) == (0, [])  # ('auto' copies its bucket index on CPU)
    with count_host_syncs() as count:
        block(X, BATCH, 4)  # the public entry point: one read
    assert (count.tolist, count.ops) == (1, [])
    with count_host_syncs() as count:
        block(X, layout=SetLayout.from_sizes(BATCH, [3, 4, 0, 2]))  # sizes known: none
    assert (count.tolist, count.ops) == (0, [])


def test_a_nan_made_inside_a_block_is_not_an_input_error():
    model = build_set_transformer('mz-slim', 3, 1)
    with torch.no_grad():
        model.encoder.encoders[1].mab1.attn.lin_q.weight.fill_(float('nan'))
    out, _ = model(X, BATCH)  # no "'x' contains NaN": x is finite
    assert torch.isnan(out[[0, 1, 3]]).all()  # the empty set 2 stays exactly zero-pooled
    with pytest.raises(ValueError, match="'x' contains NaN"):
        model(X.index_fill(0, torch.tensor([4]), float('nan')), BATCH)


def test_dtype_mismatch_is_a_type_error():
    model = build_set_transformer('standard', 3, 1)
    with pytest.raises(TypeError, match=r"'x' has dtype torch.float64 .* torch.float32"):
        model(X.double(), BATCH)
    with torch.autocast('cpu', dtype=torch.bfloat16):  # mixed precision is not a mismatch
        model(X, BATCH)


def test_dim_size_is_checked_on_the_host():
    model = build_set_transformer('standard', 3, 1)
    with pytest.raises(ValueError, match="'dim_size' must lie in"):
        model(X, BATCH, dim_size=MAX_DIM_SIZE + 1)
    with pytest.raises(ValueError, match="'dim_size' must lie in"):
        model(X, BATCH, dim_size=-1)
    with pytest.raises(TypeError, match="'dim_size' must be an int"):
        model(X, BATCH, dim_size=4.0)
    with pytest.raises(ValueError, match=r"'dim_size' \(3\) must be at least"):
        model(X, BATCH, dim_size=3)


def test_set_layout_from_batch_checks_the_batch():
    layout = SetLayout.from_batch(BATCH, 9, 5)
    assert (layout.num_sets, layout.counts) == (5, [3, 4, 0, 2, 0])
    assert SetLayout.from_batch(BATCH, 9).counts == [3, 4, 0, 2]
    assert SetLayout.from_batch(None, 3, 2, X.device).counts == [3, 0]
    with pytest.raises(ValueError, match="'batch' must be sorted"):
        SetLayout.from_batch(BATCH.flip(0), 9)
    with pytest.raises(ValueError, match='negative'):
        SetLayout.from_batch(BATCH - 1, 9)


@pytest.mark.parametrize('name', list_models())
def test_no_element_at_all(name):
    model = build_model(name, 3, 2).eval()
    x, batch = torch.randn(0, 3), torch.zeros(0, dtype=torch.long)
    for dim_size, sets in ((None, 0), (3, 3)):
        out = model(x, batch, dim_size)
        out = out[0] if isinstance(out, tuple) else out
        assert out.shape == (sets, 2), (name, dim_size)


def test_zonotope_layer_norm_in_float16_keeps_large_centres_generators():
    from mzlayers import Zonotope, ZonotopeLayerNorm
    norm = ZonotopeLayerNorm(8)
    g = torch.Generator().manual_seed(0)
    z = Zonotope(300 * torch.randn(4, 8, generator=g), torch.randn(4, 2, 8, generator=g))
    ref = norm(z)  # float32
    out = norm.half()(Zonotope(z.center.half(), z.generators.half()))
    assert out.generators.abs().sum() > 0
    torch.testing.assert_close(out.generators.float(), ref.generators, atol=2e-3, rtol=2e-2)


def test_set_layout_from_sizes_matches_from_batch_without_a_read():
    ptr = torch.tensor([0, 3, 7, 7, 9])
    with count_host_syncs() as count:
        layout = SetLayout.from_sizes(BATCH, [3, 4, 0, 2], ptr=ptr)
        computed = SetLayout.from_sizes(BATCH, [3, 4, 0, 2])  # counts scattered on the device
    assert count.total == 0
    reference = SetLayout.from_batch(BATCH, 9, 4)
    for got in (layout, computed):
        assert (got.num_sets, got.counts) == (4, [3, 4, 0, 2])
        assert torch.equal(got.count_tensor, reference.count_tensor)
        assert torch.equal(got.ptr, ptr)
    with pytest.raises(ValueError, match=r"'ptr' must have shape \[5\]"):
        SetLayout.from_sizes(BATCH, [3, 4, 0, 2], ptr=ptr[:-1])
    with pytest.raises(ValueError, match=r"'batch' must have shape \[8\]"):
        SetLayout.from_sizes(BATCH, [3, 4, 0, 1])


def test_a_model_given_its_layout_gives_the_same_output_and_checks_it():
    model = build_set_transformer('standard', 3, 1).eval()
    layout = SetLayout.from_sizes(BATCH, [3, 4, 0, 2])
    torch.testing.assert_close(model(X, BATCH, 4, layout=layout), model(X, BATCH, 4))
    torch.testing.assert_close(model(X, layout=layout), model(X, BATCH, 4))
    with pytest.raises(ValueError, match=r"'dim_size' \(5\) differs"):
        model(X, BATCH, 5, layout=layout)
    with pytest.raises(ValueError, match="describes 9 elements but 'x' has 8"):
        model(X[:8], layout=layout)
    with pytest.raises(ValueError, match="'mask' or 'layout', not both"):
        model(X.view(3, 3, 3), mask=torch.ones(3, 3, dtype=torch.bool), layout=layout)
