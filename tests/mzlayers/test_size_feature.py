import math

import pytest
import torch
from mzattn.baselines import SIZE_FEATURE_MODELS, build_model, model_info

from mzlayers import SetLayout
from mzlayers.size_feature import append_size_feature, size_feature_channels

from ..baselines.helpers import prediction, shuffle_within_sets


def test_log_n_is_appended_per_set_and_an_empty_set_gets_zero():
    layout = SetLayout.from_batch(torch.tensor([0, 0, 0, 2, 2]), 5, num_sets=3)
    summary = torch.randn(3, 4, dtype=torch.float64)
    out = append_size_feature(summary, layout, 'log')
    assert out.shape == (3, 5) and torch.equal(out[:, :4], summary)
    assert out[:, 4].tolist() == pytest.approx([math.log(3), 0.0, math.log(2)])
    assert append_size_feature(summary, layout, None) is summary


def test_a_padded_layout_counts_only_its_real_elements():
    mask = torch.tensor([[True, True, False, False], [True, True, True, False]])
    out = append_size_feature(torch.zeros(2, 1), SetLayout.padded(mask), 'log')
    assert out[:, 1].tolist() == pytest.approx([math.log(2), math.log(3)])


def test_an_unknown_size_feature_is_refused():
    assert size_feature_channels(None) == 0 and size_feature_channels('log') == 1
    with pytest.raises(ValueError, match="'size_feature' must be one of"):
        size_feature_channels('sqrt')
    with pytest.raises(ValueError, match="'size_feature' must be one of"):
        build_model('standard', 4, 1, size_feature='n')


@pytest.mark.parametrize('name', SIZE_FEATURE_MODELS)
def test_the_logn_variant_sees_duplication_and_stays_permutation_invariant(name):
    torch.manual_seed(0)
    variant = f'{name}+logn'
    assert model_info(variant).defaults['size_feature'] == 'log'
    model = build_model(variant, 4, 2).double().eval()
    base = build_model(name, 4, 2).double()
    extra = model.channels  # one more input column to the head MLP's first layer
    assert sum(p.numel() for p in model.parameters()) == \
        sum(p.numel() for p in base.parameters()) + extra
    x = torch.randn(3, 4, dtype=torch.float64)
    once = prediction(model(x, torch.zeros(3, dtype=torch.long)))
    twice = prediction(model(torch.cat([x, x]), torch.zeros(6, dtype=torch.long)))
    assert (once - twice).abs().max() > 1e-4  # masked batching, every element duplicated
    xs, batch = torch.randn(9, 4, dtype=torch.float64), torch.tensor([0] * 4 + [1] * 5)
    xp, bp = shuffle_within_sets(xs, batch)
    assert (prediction(model(xs, batch)) - prediction(model(xp, bp))).abs().max() < 1e-10


def test_a_bfloat16_summary_gets_the_exact_count_of_a_large_set():
    layout = SetLayout.from_batch(torch.zeros(1001, dtype=torch.long), 1001)
    out = append_size_feature(torch.zeros(1, 2, dtype=torch.bfloat16), layout, 'log')
    assert out.dtype == torch.bfloat16
    assert float(out[0, 2]) == pytest.approx(math.log(1001), rel=1e-2)  # bf16 rounding only
