"""The width-matching helper."""
import pytest
from mzattn.baselines import build_model, match_width

from mzlayers import count_parameters


def test_match_width_finds_the_closest_multiple():
    def build(w):
        return build_model('hypernet-r16', 8, 1, channels=w, ff_channels=2 * w)

    width = match_width(build, 370_000)
    assert width == 56 and width % 4 == 0
    best = abs(count_parameters(build(width)) - 370_000)
    for other in (width - 4, width + 4):
        assert abs(count_parameters(build(other)) - 370_000) >= best


def test_match_width_validates():
    with pytest.raises(ValueError, match="'target'"):
        match_width(lambda w: None, 0)
    with pytest.raises(ValueError, match="'multiple'"):
        match_width(lambda w: None, 10, low=5, high=6, multiple=4)
