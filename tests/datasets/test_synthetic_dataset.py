import os
import time

import numpy as np
import pytest
import torch
from mzattn.datasets.synthetic import VERSION, SyntheticSetDataset, load_splits, load_task
from mzattn.datasets.synthetic.tasks import HullConfig, get_config
from torch_geometric.loader import DataLoader

SMALL = {"num_train": 40, "num_val": 20, "num_test": 30}


def test_items_shapes_and_dtypes(tmp_path):
    ds = load_task("meta_regression", split="val", root=str(tmp_path), L=4, **SMALL)
    assert len(ds) == 20 and ds.num_features == 17 and ds.target_dim == 8
    data = ds[0]
    assert data.x.dtype == data.y.dtype == torch.float32
    assert data.x.shape == (31, 17) and data.y.shape == (1, 8)
    batch = next(iter(DataLoader(ds, batch_size=4)))
    assert batch.y.shape == (4, 8) and batch.num_graphs == 4


def test_cache_file_and_instant_second_load(tmp_path):
    first = load_task("task_g", split="train", root=str(tmp_path), **SMALL)
    path = first.processed_paths[0]
    assert path.startswith(str(tmp_path / "task_g" / "processed"))
    assert os.path.basename(path).startswith("train_") and path.endswith(f"_v{VERSION}.pt")
    assert not first.summary()["from_cache"]
    start = time.perf_counter()
    second = load_task("mst", split="train", root=str(tmp_path), **SMALL)  # alias, same cache
    assert time.perf_counter() - start < 1.0
    assert second.summary()["from_cache"] and second.processed_paths[0] == path
    assert torch.equal(first._data.x, second._data.x)
    assert not [f for f in os.listdir(os.path.dirname(path)) if f.startswith(".tmp-")]


def test_cache_key_tracks_the_relevant_config(tmp_path):
    root = str(tmp_path)
    base = load_task("task_a", split="train", root=root, **SMALL).processed_paths[0]
    other_test_size = {**SMALL, "num_test": 99, "test_n_max": 120}
    assert load_task("task_a", split="train", root=root,
                     **other_test_size).processed_paths[0] == base
    assert load_task("task_a", split="train", root=root, d=8,
                     **SMALL).processed_paths[0] != base
    assert load_task("task_a", split="train", root=root, seed=1,
                     **SMALL).processed_paths[0] != base


def test_normalisation_uses_train_statistics(tmp_path):
    train, val, test = load_splits("meb", root=str(tmp_path), normalize=True, **SMALL)
    raw_val = load_task("meb", split="val", root=str(tmp_path), **SMALL)
    raw_train = load_task("meb", split="train", root=str(tmp_path), **SMALL)
    y_train = raw_train._data.y.double()
    torch.testing.assert_close(train.target_mean, y_train.mean(0).float())
    torch.testing.assert_close(train.target_std, y_train.std(0, unbiased=False).float())
    assert train._data.y.mean().abs() < 1e-5
    assert (train._data.y.std(unbiased=False) - 1).abs() < 1e-4
    for ds in (val, test):
        torch.testing.assert_close(ds.target_mean, train.target_mean)
        torch.testing.assert_close(ds.target_std, train.target_std)
    torch.testing.assert_close(val.denormalize(val._data.y), raw_val._data.y)
    torch.testing.assert_close(raw_val.denormalize(raw_val._data.y), raw_val._data.y)
    torch.testing.assert_close(raw_val.target_std, torch.ones(1))
    assert val.summary()["normalized"]


def test_determinism_across_roots(tmp_path):
    a = load_task("task_b", split="test", root=str(tmp_path / "a"), **SMALL)
    b = load_task("task_b", split="test", root=str(tmp_path / "b"), **SMALL)
    assert torch.equal(a._data.x, b._data.x) and torch.equal(a._data.y, b._data.y)


def test_summary_counts_degenerate_hulls(tmp_path, monkeypatch):
    original = HullConfig.points

    def sometimes_flat(self, rng, split):
        P = original(self, rng, split)
        if rng.random() < 0.5:
            P[:, -1] = 0.0  # coplanar
        return P

    monkeypatch.setattr(HullConfig, "points", sometimes_flat)
    ds = load_task("hull", split="train", root=str(tmp_path), **SMALL)
    summary = ds.summary()
    flat = int((ds._data.y == 0).sum())
    assert summary["num_degenerate"] == flat > 0
    assert summary["num_samples"] == 40 and 15 <= summary["set_size_min"]
    assert summary["set_size_max"] <= 35 and summary["generation_time_s"] >= 0


def test_default_root_from_environment(tmp_path, monkeypatch):
    monkeypatch.setenv("MZATTN_DATA", str(tmp_path))
    ds = SyntheticSetDataset(name="set_max", split="val", config=get_config("set_max", **SMALL))
    assert ds.processed_paths[0].startswith(str(tmp_path))
    assert np.isfinite(ds._data.y.numpy()).all()


@pytest.mark.parametrize("kwargs,match", [
    ({"split": "dev"}, "'split' must be one of"),
    ({"split": "train", "seed": -1}, "'seed' must be >= 0"),
    ({"split": "train", "d": 0}, "'d' must be >= 1"),
    ({"split": "train", "colour": 3}, "unknown parameter 'colour'"),
])
def test_bad_arguments_raise(tmp_path, kwargs, match):
    with pytest.raises(ValueError, match=match):
        load_task("task_g", root=str(tmp_path), **kwargs)


@pytest.mark.slow
@pytest.mark.parametrize("name,overrides", [("task_g", {}), ("meb", {})])
def test_full_paper_size_generation(tmp_path, name, overrides):
    train, val, test = load_splits(name, root=str(tmp_path), log=False, **overrides)
    assert (len(train), len(val), len(test)) == (5000, 1000, 2000)
