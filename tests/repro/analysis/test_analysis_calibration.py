import math

import pytest
import torch
from mzattn.repro.analysis.calibration import (
    StdMap,
    correlations,
    error_bins,
    gaussian_nll,
    regression_ece,
    uncertainty_scores,
)


def test_gaussian_nll_matches_hand_computation():
    mean, std, y = torch.tensor([0.0, 0.0]), torch.tensor([1.0, 2.0]), torch.tensor([1.0, -1.0])
    first = 0.5 * math.log(2 * math.pi * 1.0) + 0.5 * 1.0 / 1.0
    second = 0.5 * math.log(2 * math.pi * 4.0) + 0.5 * 1.0 / 4.0
    assert gaussian_nll(mean, std, y) == pytest.approx((first + second) / 2, rel=1e-6)


def test_regression_ece_matches_hand_computation():
    # F_1(y_1) = Phi(1) = 0.841, F_2(y_2) = Phi(-0.5) = 0.309.
    mean, std, y = torch.tensor([0.0, 0.0]), torch.tensor([1.0, 2.0]), torch.tensor([1.0, -1.0])
    # observed frequencies at p = 0.25, 0.5, 0.75: 0, 1/2, 1/2
    expected = (0.25 + 0.0 + 0.25) / 3
    assert regression_ece(mean, std, y, levels=(0.25, 0.5, 0.75)) == pytest.approx(expected)


def test_ece_of_a_calibrated_gaussian_is_small_and_of_a_collapsed_one_large():
    gen = torch.Generator().manual_seed(0)
    y = torch.randn(20_000, generator=gen) * 3.0
    mean = torch.zeros_like(y)
    assert regression_ece(mean, torch.full_like(y, 3.0), y) < 0.01
    assert regression_ece(mean, torch.full_like(y, 0.3), y) > 0.2


def test_correlations_and_bins():
    score = torch.tensor([3.0, 1.0, 4.0, 2.0, 5.0, 6.0])
    error = score.pow(2)
    result = correlations(score, error)
    assert result["spearman"] == pytest.approx(1.0)
    assert 0.9 < result["pearson"] < 1.0
    bins = error_bins(score, error, num_bins=3)
    assert [b["count"] for b in bins] == [2, 2, 2]
    assert [b["score"] for b in bins] == [1.5, 3.5, 5.5]
    assert [b["abs_error"] for b in bins] == [2.5, 12.5, 30.5]
    with pytest.raises(ValueError, match="num_bins"):
        error_bins(score, error, num_bins=7)


def test_std_map_recovers_the_noise_model():
    gen = torch.Generator().manual_seed(0)
    score = torch.rand(20_000, generator=gen) * 4.0
    residual = torch.randn(20_000, 1, generator=gen) * (2.0 * score + 0.5).unsqueeze(-1)
    fitted = StdMap.fit(score, residual)
    assert fitted.scale == pytest.approx(2.0, rel=0.05)
    assert fitted.offset == pytest.approx(0.5, abs=0.05)
    assert torch.allclose(fitted(torch.tensor([1.0])), torch.tensor([fitted.scale
                                                                     + fitted.offset]))
    with pytest.raises(ValueError, match="scale"):
        StdMap(-1.0)


def test_uncertainty_scores_keys():
    y = torch.arange(5.0).view(-1, 1)
    scores = uncertainty_scores(y * 1.5, torch.ones_like(y), torch.arange(5.0), y)
    assert scores["mse"] == pytest.approx(0.25 * (0 + 1 + 4 + 9 + 16) / 5)
    assert scores["spearman"] == pytest.approx(1.0)
    assert set(scores) >= {"spearman", "pearson", "nll", "ece"}
