import pickle

import pytest
import torch
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
