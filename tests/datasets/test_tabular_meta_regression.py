import numpy as np
import pytest
import torch
from mzattn.datasets.openml_tables import load_table
from mzattn.datasets.tabular_meta_regression import (
    PARTS,
    TabularMetaRegression,
    split_rows,
    standardize,
)
from test_openml_tables import write_table_csv  # sibling test module


def write_boston(raw, num_rows=120, seed=0):
    r"""A Boston-like table: 13 numeric features and the target MEDV."""
    rng = np.random.default_rng(seed)
    header = [f"f{i}" for i in range(13)] + ["MEDV"]
    write_table_csv(str(raw / "boston.csv"), header, rng.normal(5.0, 2.0, (num_rows, 14)))


def test_split_rows_cuts_a_permutation():
    parts = split_rows(10, (0.5, 0.25, 0.25), np.random.default_rng(0))
    assert [len(parts[p]) for p in PARTS] == [5, 2, 3]
    assert sorted(np.concatenate([parts[p] for p in PARTS])) == list(range(10))


def test_standardize_uses_the_given_rows_only():
    features = np.array([[1.0, 7.0], [3.0, 7.0], [100.0, 7.0]])
    target = np.array([0.0, 2.0, 50.0])
    out, y, stats = standardize(features, target, np.array([0, 1]))
    np.testing.assert_allclose(out[:2], [[-1.0, 0.0], [1.0, 0.0]])  # constant column: std 1
    np.testing.assert_allclose(y, [-1.0, 1.0, 49.0])
    assert stats["target_mean"] == 1.0 and stats["target_std"] == 1.0


def test_episodes_hold_standardised_rows_of_their_part(tmp_path):
    K, T = 6, 3
    dataset = TabularMetaRegression(str(tmp_path), part="test", num_episodes=4,
                                    num_context=K, num_targets=T)
    assert len(dataset) == 12 and dataset.num_episodes == 4
    features, target = load_table("diabetes", "")
    train, test = dataset.row_parts["diabetes"]["train"], dataset.row_parts["diabetes"]["test"]
    stats = dataset.statistics["diabetes"]
    np.testing.assert_allclose(stats["feature_mean"], features[train].mean(0))  # train only
    np.testing.assert_allclose(stats["target_std"], target[train].std())
    rows = (features[test] - stats["feature_mean"]) / stats["feature_std"]
    y = (target[test] - stats["target_mean"]) / stats["target_std"]
    for index in range(len(dataset)):
        data = dataset[index]
        assert data.x.shape == (K + 1, 10) and data.y.shape == (1, 1)
        assert data.x[:K, 9].eq(0).all() and data.x[K, 8:].tolist() == [0.0, 1.0]
        query = np.abs(rows - data.x[K, :8].numpy()).max(1).argmin()  # the query's test row
        np.testing.assert_allclose(rows[query], data.x[K, :8], atol=1e-5)
        assert data.y.item() == pytest.approx(y[query], abs=1e-5)
        for token in data.x[:K]:  # context rows are test rows with their own targets
            row = np.abs(rows - token[:8].numpy()).max(1).argmin()
            assert token[8].item() == pytest.approx(y[row], abs=1e-5) and row != query


def test_episodes_are_seeded(tmp_path):
    first = TabularMetaRegression(str(tmp_path), num_episodes=2, num_context=5, num_targets=2)
    again = TabularMetaRegression(str(tmp_path), num_episodes=2, num_context=5, num_targets=2)
    other = TabularMetaRegression(str(tmp_path), num_episodes=2, num_context=5, num_targets=2,
                                  seed=1)
    assert torch.equal(first.context_tokens, again.context_tokens)
    assert not torch.equal(first.context_tokens, other.context_tokens)
    val = TabularMetaRegression(str(tmp_path), part="val", num_episodes=2, num_context=5,
                                num_targets=2)
    assert not torch.equal(first.context_tokens, val.context_tokens)


def test_episodes_cycle_through_tables(tmp_path):
    write_boston(tmp_path / "raw")
    dataset = TabularMetaRegression(str(tmp_path), tables=("diabetes", "boston"),
                                    num_episodes=4, num_context=5, num_targets=2)
    sex = dataset.context_tokens[:, :, 1]  # diabetes' second feature takes two values only
    assert [sex[e].unique().numel() <= 2 for e in range(4)] == [True, False, True, False]
    assert set(dataset.row_parts) == {"diabetes", "boston"}
    assert len(dataset.row_parts["boston"]["test"]) == 30


def test_missing_csv_and_invalid_arguments(tmp_path):
    with pytest.raises(FileNotFoundError, match=r"abalone\.csv(.|\n)*data_id=44956"):
        TabularMetaRegression(str(tmp_path), tables=("diabetes", "abalone"))
    with pytest.raises(ValueError, match="'tables' must be distinct names"):
        TabularMetaRegression(str(tmp_path), tables=("diabetes", "diabetes"))
    with pytest.raises(ValueError, match="'part' must be one of"):
        TabularMetaRegression(str(tmp_path), part="dev")
    with pytest.raises(ValueError, match="'fractions' must be three positive shares"):
        TabularMetaRegression(str(tmp_path), fractions=(0.5, 0.5))
    with pytest.raises(ValueError, match="exceeds the 110 items"):  # a quarter of 442 rows
        TabularMetaRegression(str(tmp_path), part="val", num_context=61)
