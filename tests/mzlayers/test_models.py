import inspect
import re

import pytest
import torch
from torch_geometric.data import Batch, Data

import mzlayers
from mzlayers import (
    CONFIGS,
    MZSetTransformer,
    MZSetTransformerAggregation,
    SetTransformer,
    build_set_transformer,
    count_parameters,
)
from mzlayers.validate import check_features

from .helpers import ragged_batch, shuffle_sets

# Paper parameter counts (App. A.1, Table 2, Table 6) at d_in = 8.
PAPER_PARAMS = {'standard': 208_000, 'st-large': 362_000, 'st-meanpool': 140_000,
                'mz-slim': 333_000, 'mz-med': 344_000, 'mz-full': 368_000}


@pytest.mark.parametrize('name', sorted(PAPER_PARAMS))
def test_parameter_counts_match_the_paper(name):
    ours = count_parameters(build_set_transformer(name, 8, 1))
    assert abs(ours - PAPER_PARAMS[name]) / PAPER_PARAMS[name] < 0.05, ours


def test_mz_full_within_the_a1_range():
    ours = count_parameters(build_set_transformer('mz-full', 8, 1))
    assert 365_000 * 0.95 <= ours <= 372_000 * 1.05


@pytest.mark.parametrize('name', sorted(CONFIGS))
def test_models_are_permutation_invariant(name):
    model = build_set_transformer(name, 8, 3).eval()
    x, batch, B = ragged_batch(dtype=torch.float32)
    out = model(x, batch, B)
    pred = out[0] if isinstance(out, tuple) else out
    assert pred.shape == (B, 3)
    x2, batch2, _, set_perm = shuffle_sets(x, batch, B)
    out2 = model(x2, batch2, B)
    pred2 = out2[0] if isinstance(out2, tuple) else out2
    assert (pred2 - pred[set_perm]).abs().max() < 1e-5


def test_mz_set_transformer_returns_ihw_and_signed_readout():
    x, batch, B = ragged_batch(dtype=torch.float32)
    model = MZSetTransformer(8, 2, readout='signed').eval()
    pred, ihw = model(x, batch, B)
    assert pred.shape == (B, 2) and ihw.shape == (B, 64)
    assert (ihw >= 0).all()
    assert torch.equal(ihw[2], torch.zeros(64))  # the empty set
    assert repr(model) == ('MZSetTransformer(8, 2, channels=64, num_generators=8, '
                           'num_matrix_generators=4, readout=signed)')
    assert repr(SetTransformer(8, 1)) == ('SetTransformer(8, 1, channels=64, encoders=2, '
                                          'pooling=pma)')


def test_bf16_autocast_on_cpu_is_close_to_float32():
    model = build_set_transformer('mz-full', 8, 1).eval()
    x, batch, B = ragged_batch(dtype=torch.float32)
    ref, _ = model(x, batch, B)
    with torch.autocast('cpu', dtype=torch.bfloat16):
        out, ihw = model(x, batch, B)
    assert torch.isfinite(out).all() and torch.isfinite(ihw).all()
    # bf16 keeps ~3 significant digits; through 7 blocks we allow 0.1 absolute
    assert (out.float() - ref).abs().max() < 0.1


@pytest.mark.parametrize('bad, message', [
    (lambda x, b: (x, b.flip(0)), 'sorted'),
    (lambda x, b: (x, b[:-1]), 'shape'),
    (lambda x, b: (x[:, :5], b), 'features per element'),
    (lambda x, b: (x.index_fill(0, torch.tensor([1]), float('nan')), b), 'NaN'),
    (lambda x, b: (x.index_fill(0, torch.tensor([1]), float('inf')), b), 'infinite'),
    (lambda x, b: (x, b.float()), 'integer'),
    (lambda x, b: (x[0], b), 'two-dimensional'),
])
def test_bad_input_raises_a_named_value_error(bad, message):
    model = build_set_transformer('mz-slim', 8, 1)
    x, batch, _ = ragged_batch(dtype=torch.float32)
    x, batch = bad(x, batch)
    with pytest.raises(ValueError, match=message):
        model(x, batch)


def test_finite_check_is_exact_when_the_sum_overflows():
    huge = torch.full((4, 3), 3e38)  # finite, but the float32 sum is inf
    check_features(huge, 3)
    with pytest.raises(ValueError, match='NaN or infinite'):
        check_features(torch.tensor([[1.0, float('-inf')], [float('inf'), 2.0]]), 2)


def test_bad_dim_size_and_options():
    x, batch, B = ragged_batch(dtype=torch.float32)
    with pytest.raises(ValueError, match='dim_size'):
        SetTransformer(8, 1)(x, batch, dim_size=B - 1)
    with pytest.raises(ValueError, match='readout'):
        MZSetTransformer(8, 1, readout='max')
    with pytest.raises(ValueError, match='backend'):
        SetTransformer(8, 1, backend='flash')
    with pytest.raises(ValueError, match='divisible'):
        SetTransformer(8, 1, channels=10, heads=4)


def _documented_args(cls):
    r"""Argument names of the class docstring's ``Args:`` section, plus those
    of a class it refers to with "Arguments as in :class:`Other`"."""
    doc = inspect.getdoc(cls) or ''
    section = doc.split('Args:')[1].split('Shapes:')[0] if 'Args:' in doc else ''
    names = re.findall(r'^\s{4}(\*{0,2}\w+) \(', section, flags=re.M)
    ref = re.search(r'[Aa]rguments as in\s+:class:`~?([\w.]+)`', doc)
    if ref:
        names += _documented_args(getattr(mzlayers, ref.group(1).split('.')[-1]))
    return names


@pytest.mark.parametrize('name', [n for n in mzlayers.__all__
                                  if inspect.isclass(getattr(mzlayers, n))
                                  and issubclass(getattr(mzlayers, n), torch.nn.Module)])
def test_docstring_args_match_signature(name):
    cls = getattr(mzlayers, name)
    params = [p for p in inspect.signature(cls.__init__).parameters.values()
              if p.name != 'self']
    expected = [('**' if p.kind is p.VAR_KEYWORD else '') + p.name for p in params]
    documented = _documented_args(cls)
    if 'rguments as in' in (inspect.getdoc(cls) or ''):
        assert set(expected) <= set(documented)
    else:
        assert documented == expected


def test_aggregation_is_a_drop_in_for_pyg():
    from torch_geometric.nn.aggr import Aggregation
    aggr = MZSetTransformerAggregation(8, num_seed_points=2, heads=2, concat=False)
    assert isinstance(aggr, Aggregation)
    x, batch, B = ragged_batch(dtype=torch.float32)
    out = aggr(x, batch, dim_size=B + 2)
    assert out.shape == (B + 2, 8)
    assert torch.equal(out[2], torch.zeros(8)) and torch.equal(out[-1], torch.zeros(8))
    data = Batch.from_data_list([Data(x=x[:3]), Data(x=x[3:])])
    assert aggr(data.x, data.batch).shape == (2, 8)
    assert repr(aggr) == ('MZSetTransformerAggregation(8, num_seed_points=2, heads=2, '
                          'layer_norm=False, dropout=0.0, num_induced_points=None)')
