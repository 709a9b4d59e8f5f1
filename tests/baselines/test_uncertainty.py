"""MC-Dropout and Deep Ensembles."""
import warnings

import pytest
import torch
from mzattn.baselines import DeepEnsemble, MCDropout, build_model
from mzattn.baselines.uncertainty import mean_std

from .helpers import ragged_batch


def test_mc_dropout_samples_in_eval_mode_only():
    model = build_model('mc-dropout', 8, 1, num_samples=7)
    assert isinstance(model, MCDropout) and model.num_samples == 7
    x, batch, B = ragged_batch(8, dtype=torch.float32)
    model.eval()
    mean, std = model(x, batch, dim_size=B)
    assert mean.shape == std.shape == (B, 1)
    assert (std[[0, 3, 5]] > 0).all()
    assert not model.model.training  # modes restored
    model.train()
    _, std = model(x, batch, dim_size=B)
    assert std.abs().max() == 0
    with pytest.raises(ValueError, match="'num_samples'"):
        MCDropout(model.model, num_samples=0)


def test_deep_ensemble_members_are_independent():
    model = build_model('deep-ensemble', 8, 1, base='deep-sets', num_members=3).eval()
    assert isinstance(model, DeepEnsemble) and len(model.members) == 3
    first = [p for p in model.members[0].parameters()]
    second = [p for p in model.members[1].parameters()]
    assert not torch.equal(first[0], second[0])
    x, batch, B = ragged_batch(8, dtype=torch.float32)
    mean, std = model(x, batch, dim_size=B)
    preds = torch.stack([m(x, batch, dim_size=B) for m in model.members])
    assert torch.allclose(mean, preds.mean(0)) and (std > 0).all()
    with pytest.raises(ValueError, match="'num_members'"):
        build_model('deep-ensemble', 8, 1, num_members=0)


def test_wrappers_use_the_mz_prediction():
    model = build_model('mc-dropout', 8, 1, base='mz-slim', num_samples=2).eval()
    x, batch, B = ragged_batch(8, dtype=torch.float32)
    mean, std = model(x, batch, dim_size=B)
    assert mean.shape == (B, 1)


def test_mean_std_of_an_empty_batch_is_empty_and_silent():
    samples = torch.randn(5, 0, 1)  # T = 5 passes over zero sets
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # torch.std's "degrees of freedom is <= 0"
        mean, std = mean_std(samples)
    assert mean.shape == std.shape == (0, 1)
    mean, std = mean_std(torch.tensor([[1.0], [3.0]]))
    assert mean.tolist() == [2.0] and std.tolist() == [1.0]  # population std
