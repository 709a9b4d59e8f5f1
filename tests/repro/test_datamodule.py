import numpy as np
import pytest
import torch
from mzattn.repro.datamodule import SetDataModule, seed_worker


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
