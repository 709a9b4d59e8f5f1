import inspect

import pytest
import torch
from mzattn.bench.dispatch import count_host_syncs
from torch_geometric.data import Batch, Data
from torch_geometric.nn import SAGEConv
from torch_geometric.nn.aggr import SetTransformerAggregation

from mzlayers import MZISAB, MZSetTransformerAggregation, Zonotope
from mzlayers.mz_blocks import MZISAB as _MZISAB
from mzlayers.mz_blocks import MZSAB

X = torch.randn(7, 8, generator=torch.Generator().manual_seed(0))
INDEX = torch.tensor([0, 0, 0, 2, 2, 2, 2])  # group 1 is empty
PTR = torch.tensor([0, 3, 3, 7])


def test_shared_defaults_are_pyg_defaults():
    ours = inspect.signature(MZSetTransformerAggregation).parameters
    theirs = inspect.signature(SetTransformerAggregation).parameters
    assert list(theirs) == list(ours)[:len(theirs)]  # same names, same order
    for name, param in theirs.items():
        assert ours[name].default == param.default, name
    aggr = MZSetTransformerAggregation(8)
    assert all(isinstance(b, MZSAB) for b in aggr.encoder.encoders)  # SAB, as PyG's
    assert not aggr.layer_norm and aggr.dropout == 0.0


def test_paper_configuration():
    aggr = MZSetTransformerAggregation.paper(16)
    assert (aggr.heads, aggr.layer_norm, aggr.dropout) == (4, True, 0.1)
    assert len(aggr.encoder.encoders) == 2
    assert all(isinstance(b, _MZISAB) and b.num_induced_points == 16
               for b in aggr.encoder.encoders)
    assert MZSetTransformerAggregation.paper(16, heads=2).heads == 2
    assert repr(aggr) == ('MZSetTransformerAggregation(16, num_seed_points=1, heads=4, '
                          'layer_norm=True, dropout=0.1, num_induced_points=16)')


@pytest.mark.parametrize('concat', [True, False])
def test_empty_groups_are_zero_and_batches_work(concat):
    aggr = MZSetTransformerAggregation(8, num_seed_points=2, heads=2, concat=concat)
    out = aggr(X, INDEX, dim_size=4)
    assert out.shape == (4, 16 if concat else 8)
    assert torch.equal(out[1], torch.zeros_like(out[1]))
    assert torch.equal(out[3], torch.zeros_like(out[3]))
    data = Batch.from_data_list([Data(x=X[:3]), Data(x=X[3:])])
    torch.testing.assert_close(aggr(data.x, data.batch), out[[0, 2]], atol=1e-6, rtol=0)


def test_ptr_is_honoured():
    aggr = MZSetTransformerAggregation(8, heads=2).eval()
    expected = aggr(X, INDEX)
    assert torch.equal(aggr(X, ptr=PTR), expected)
    assert torch.equal(aggr(X, INDEX, ptr=PTR, dim_size=3), expected)
    with pytest.raises(ValueError, match="'dim_size'"):
        aggr(X, ptr=PTR, dim_size=4)
    with pytest.raises(ValueError, match="'ptr' must be non-decreasing"):
        aggr(X, ptr=torch.tensor([0, 4, 3, 7]))
    with pytest.raises(ValueError, match="'ptr' must be non-decreasing"):
        aggr(X, ptr=torch.tensor([0, 3, 6]))
    with pytest.raises(ValueError, match="'index' and 'ptr' describe different groups"):
        aggr(X, torch.tensor([0, 0, 2, 2, 2, 2, 2]), ptr=PTR)


def test_max_num_elements_pads_as_pyg():
    aggr = MZSetTransformerAggregation(8, num_seed_points=2, heads=2).eval()
    expected = aggr(X, INDEX, dim_size=5)  # groups 1, 3 and 4 are empty
    for kwargs in (dict(index=INDEX, dim_size=5), dict(index=INDEX), dict(ptr=PTR)):
        out = aggr(X, max_num_elements=8, **kwargs)
        torch.testing.assert_close(out, expected[:out.size(0)], atol=1e-6, rtol=0)
    # PyG's semantics: the elements beyond the first max_num_elements are dropped
    keep = torch.tensor([0, 1, 3, 4])
    torch.testing.assert_close(aggr(X, INDEX, dim_size=3, max_num_elements=2),
                               aggr(X[keep], INDEX[keep], dim_size=3), atol=1e-6, rtol=0)
    z = Zonotope(X, torch.randn(7, 8, 8))
    out, expected = aggr(z, INDEX, max_num_elements=4), aggr(z, INDEX)
    torch.testing.assert_close(out.center, expected.center, atol=1e-6, rtol=0)
    torch.testing.assert_close(out.generators, expected.generators, atol=1e-5, rtol=0)


def test_max_num_elements_with_dim_size_reads_nothing_from_the_device():
    aggr = MZSetTransformerAggregation(8, heads=2)
    for kwargs in (dict(index=INDEX, dim_size=4), dict(ptr=PTR)):
        with count_host_syncs() as syncs:
            aggr(X, max_num_elements=4, **kwargs).sum().backward()
        assert syncs.total == 0, syncs.ops
    with count_host_syncs() as syncs:  # without dim_size: the validating read
        aggr(X, INDEX, max_num_elements=4)
    assert (syncs.tolist, syncs.ops) == (1, ['bincount'])  # the number of sets


@pytest.mark.slow
def test_max_num_elements_compiles_to_one_graph():
    from torch._dynamo.testing import CompileCounterWithBackend
    torch._dynamo.reset()
    aggr = MZSetTransformerAggregation(8, heads=2).eval()
    counter = CompileCounterWithBackend('aot_eager')
    compiled = torch.compile(aggr, fullgraph=True, backend=counter)
    for sizes in ((3, 0, 4), (5, 2, 1)):  # N is the one dynamic size
        index = torch.repeat_interleave(torch.arange(3), torch.tensor(sizes))
        x = torch.randn(index.numel(), 8)
        torch._dynamo.mark_dynamic(x, 0)
        torch._dynamo.mark_dynamic(index, 0)
        torch.testing.assert_close(compiled(x, index, dim_size=4, max_num_elements=8),
                                   aggr(x, index, dim_size=4), atol=1e-5, rtol=1e-5)
    assert counter.frame_count == 1


def test_max_num_elements_errors():
    with pytest.raises(ValueError, match="'max_num_elements' must be a positive int"):
        MZSetTransformerAggregation(8)(X, INDEX, max_num_elements=0)
    with pytest.raises(ValueError, match="'max_num_elements' must be a positive int"):
        MZSetTransformerAggregation(8)(X, INDEX, max_num_elements=True)
    with pytest.raises(ValueError, match="'segment' backend takes ragged batches only"):
        MZSetTransformerAggregation(8, backend='segment')(X, INDEX, max_num_elements=4)


def test_unsorted_index_says_how_to_sort_it():
    aggr = MZSetTransformerAggregation(8)
    with pytest.raises(ValueError, match=r"'index' must be sorted.*"
                                         r"data\.sort\(sort_by_row=False\)"):
        aggr(X, INDEX.flip(0))
    conv = SAGEConv(8, 4, aggr=MZSetTransformerAggregation(8))
    edge_index = torch.tensor([[0, 1, 2, 3, 4], [1, 1, 2, 0, 0]])  # by source
    with pytest.raises(ValueError, match=r"sort_by_row=False"):
        conv(X, edge_index)
    data = Data(x=X, edge_index=edge_index).sort(sort_by_row=False)
    out = conv(data.x, data.edge_index)
    assert out.shape == (7, 4)
    out.sum().backward()
    assert conv.aggr_module.encoder.pma.seeds.center.grad.abs().sum() > 0


@pytest.mark.parametrize('concat', [True, False])
def test_zonotope_input_keeps_its_generators(concat):
    torch.manual_seed(0)
    isab = MZISAB(8, num_induced_points=4, heads=2, num_generators=8)
    aggr = MZSetTransformerAggregation(8, num_seed_points=2, heads=2, concat=concat)
    z = isab(X, INDEX, 3)
    out = aggr(z, INDEX)
    assert isinstance(out, Zonotope)
    assert out.center.shape == (3, 16 if concat else 8)
    assert out.generators.shape == (3, 16, 16 if concat else 8)  # k * n_g rows
    # the centre path reads centres only (Eq. 3); the generators carry z's
    points = aggr(Zonotope.from_tensor(z.center, 8), INDEX)
    torch.testing.assert_close(out.center, points.center, atol=1e-6, rtol=0)
    torch.testing.assert_close(aggr(z.center, INDEX), out.center, atol=1e-6, rtol=0)
    assert not torch.allclose(out.generators, points.generators, atol=1e-3)
    assert out.generators[[0, 2]].abs().sum() > 0
    assert torch.equal(out.generators[1], torch.zeros_like(out.generators[1]))
    if concat:  # block-diagonal: seed s's generators touch only its channels
        assert torch.equal(out.generators[:, :8, 8:], torch.zeros(3, 8, 8))
    with pytest.raises(ValueError, match='generators'):
        aggr(Zonotope.from_tensor(X, 2), INDEX)


def test_bad_inputs_are_named():
    aggr = MZSetTransformerAggregation(8)
    with pytest.raises(TypeError, match="'x' has dtype torch.float64"):
        aggr(X.double(), INDEX)
    with pytest.raises(ValueError, match="'x' contains NaN"):
        aggr(X.index_fill(0, torch.tensor([2]), float('nan')), INDEX)
    with pytest.raises(ValueError, match="'dim_size'"):
        aggr(X, INDEX, dim_size=2)
    with pytest.raises(ValueError, match="'dim'"):
        aggr(X, INDEX, dim=1)
