import numpy as np
import pytest
import torch
from mzattn.repro.training.datamodule import SetDataModule, seed_worker


def _module(data_root, seed=0, **kwargs):
    return SetDataModule("meb", seed=seed, overrides={"d": 4, "num_train": 24, "num_val": 8,
                                                      "num_test": 8},
                         batch_size=8, root=data_root, **kwargs)


def _order(loader):
    return torch.cat([batch.y.view(-1) for batch in loader])


def test_shapes_and_splits(data_root):
    data = _module(data_root)
    assert data.in_channels == 4 and data.target_dim == 1
    assert [len(split) for split in (data.train_dataset, *data.splits[1:])] == [24, 8, 8]
    batch = next(iter(data.val_dataloader()))
    assert batch.num_graphs == 8 and batch.x.size(1) == 4


def test_shuffling_is_seeded(data_root):
    a = _order(_module(data_root).train_dataloader())
    b = _order(_module(data_root).train_dataloader())
    assert torch.equal(a, b)
    other = _module(data_root)
    other.seed = 5  # same sets, another shuffling seed
    other.splits = _module(data_root).splits
    assert not torch.equal(a, _order(other.train_dataloader()))
    assert torch.equal(_order(_module(data_root).test_dataloader()),
                      _order(_module(data_root).test_dataloader()))


def test_normalized_targets(data_root):
    train = _module(data_root, normalize=True).train_dataset
    assert float(train.y.mean()) == pytest.approx(0.0, abs=1e-5)


def test_seed_worker_seeds_numpy():
    torch.manual_seed(7)
    seed_worker(0)
    first = np.random.rand()
    torch.manual_seed(7)
    seed_worker(0)
    assert np.random.rand() == first


def test_invalid_arguments():
    with pytest.raises(ValueError, match="'batch_size'"):
        SetDataModule("meb", batch_size=0)
    with pytest.raises(ValueError, match="'num_workers'"):
        SetDataModule("meb", num_workers=-1)


def _sizes(batch):
    return (batch.ptr[1:] - batch.ptr[:-1]).tolist()


def test_masked_batching_keeps_the_ragged_sets(data_root):
    batch = next(iter(_module(data_root).val_dataloader()))
    assert len(set(_sizes(batch))) > 1  # MEB draws 10-30 elements: ragged


@pytest.mark.parametrize("batching", ["padded", "padded-dataset"])
def test_padded_batching_zero_pads_every_set_to_the_stated_width(data_root, batching):
    masked, padded = _module(data_root), _module(data_root, batching=batching)
    masked.setup()
    width = max(data.num_nodes for split in masked.splits for data in split)
    assert padded.pad_width == (width if batching == "padded-dataset" else None)
    for loader in ("train_dataloader", "val_dataloader", "test_dataloader"):
        for ragged, batch in zip(getattr(masked, loader)(), getattr(padded, loader)(),
                                 strict=True):
            sizes = _sizes(ragged)
            stated = width if batching == "padded-dataset" else max(sizes)
            assert _sizes(batch) == [stated] * len(sizes)
            x = batch.x.view(len(sizes), stated, -1)
            for row, n, start in zip(x, sizes, ragged.ptr.tolist(), strict=False):
                assert torch.equal(row[:n], ragged.x[start:start + n])
                assert torch.count_nonzero(row[n:]) == 0
            assert torch.equal(batch.y, ragged.y)
    assert "batching=padded" in repr(padded)


def test_unknown_batching_is_refused():
    with pytest.raises(ValueError, match="'batching' must be one of"):
        SetDataModule("meb", batching="pad")
