import pickle

import pytest
import torch
from mzattn.baselines import build_model, list_models, model_info
from mzattn.datasets.padding import PadSets, largest_set, pad_set
from torch_geometric.data import Batch, Data


def _sets():
    return [Data(x=torch.randn(n, 3), y=torch.tensor([[float(n)]])) for n in (2, 5, 1)]


def test_pad_set_appends_zero_rows_and_keeps_the_set():
    data = Data(x=torch.randn(3, 4), pos=torch.randn(3, 2), y=torch.ones(1, 1))
    padded = pad_set(data, 7)
    assert padded.x.shape == (7, 4) and padded.pos.shape == (7, 2) and padded.num_nodes == 7
    assert torch.equal(padded.x[:3], data.x) and torch.equal(padded.pos[:3], data.pos)
    assert torch.count_nonzero(padded.x[3:]) == 0 and torch.count_nonzero(padded.pos[3:]) == 0
    assert torch.equal(padded.y, data.y) and data.x.shape == (3, 4)  # the input is unchanged


def test_pad_set_refuses_a_set_wider_than_the_width():
    with pytest.raises(ValueError, match="a set of 3 elements does not fit the pad width 2"):
        pad_set(Data(x=torch.randn(3, 1)), 2)


@pytest.mark.parametrize("width, expected", [(None, 5), (6, 6)])
def test_pad_sets_pads_every_set_of_a_batch_to_the_stated_width(width, expected):
    sets = _sets()
    batch = PadSets(Batch.from_data_list, width)(sets)
    assert batch.num_graphs == 3 and batch.x.shape == (3 * expected, 3)
    assert torch.equal(batch.ptr, torch.arange(4) * expected)
    x = batch.x.view(3, expected, 3)
    for row, data in zip(x, sets, strict=True):
        n = data.num_nodes
        assert torch.equal(row[:n], data.x) and torch.count_nonzero(row[n:]) == 0
    assert torch.equal(batch.y.view(-1), torch.tensor([2.0, 5.0, 1.0]))


def test_pad_sets_is_picklable_for_loader_workers():
    pad = pickle.loads(pickle.dumps(PadSets(Batch.from_data_list, 4)))
    assert pad.width == 4 and repr(pad) == "PadSets(width=4)"
    assert repr(PadSets(Batch.from_data_list)) == "PadSets(width=batch's largest set)"
    with pytest.raises(ValueError, match="'width'"):
        PadSets(Batch.from_data_list, 0)


def test_largest_set():
    assert largest_set([_sets(), [Data(x=torch.randn(9, 3))]]) == 9
    assert largest_set([[]]) == 0


# Every attention family of the registry: exact masked softmax (and means) cannot see n.
ATTENTION_MODELS = ['standard', 'st-large', 'mz-full', 'mz-1l', 'st-meanpool', 'perceiver',
                    'slot-attention', 'hypernet-r8', 'la-st']


def _predict(model, sets, batching, width=None):
    items = [Data(x=x) for x in sets]
    data = Batch.from_data_list(items) if batching == 'masked' else \
        PadSets(Batch.from_data_list, width)(items)
    out = model(data.x, data.batch, dim_size=data.num_graphs)
    return out[0] if isinstance(out, tuple) else out


@pytest.mark.parametrize('batching, width', [('masked', None), ('padded', None),
                                             ('padded-dataset', 12)])
@pytest.mark.parametrize('name', ATTENTION_MODELS)
def test_duplicating_every_element_changes_the_output_only_when_padded(name, batching, width):
    torch.manual_seed(0)
    model = build_model(name, 4, 2).double().eval()
    x = torch.randn(3, 4, dtype=torch.float64)
    largest = torch.randn(7, 4, dtype=torch.float64)  # the batch's largest set
    once = _predict(model, [x, largest], batching, width)
    twice = _predict(model, [torch.cat([x, x]), largest], batching, width)
    change = (once[0] - twice[0]).abs().max()
    if batching == 'masked':
        assert change < 1e-5
    else:  # 3 real + 4 zero rows against 6 real + 1 zero row (or + 9 and + 6 at width 12)
        assert change > 1e-3
    assert (once[1] - twice[1]).abs().max() < 1e-10  # the other set is unchanged


@pytest.mark.parametrize('name', list_models())
def test_every_registry_model_takes_a_padded_batch(name):
    torch.manual_seed(0)
    d = model_info(name).in_channels
    overrides = dict(dropout=0.0) if name == 'mc-dropout' else {}  # else it samples masks
    model = build_model(name, d, 2, **overrides).double().eval()
    sets = [torch.randn(n, d, dtype=torch.float64) for n in (3, 1, 5)]
    padded = _predict(model, sets, 'padded')
    assert padded.shape == (3, 2) and torch.isfinite(padded).all()
    # a batch whose sets all have the largest size has no padding
    same = [torch.randn(4, d, dtype=torch.float64) for _ in range(2)]
    assert torch.allclose(_predict(model, same, 'padded'), _predict(model, same, 'masked'),
                          atol=1e-10)
