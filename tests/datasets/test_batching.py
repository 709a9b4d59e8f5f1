import pytest
from mzattn.datasets.batching import BATCHINGS, check_batching


def test_the_batchings_are_named_and_masked_is_the_default():
    assert list(BATCHINGS) == ["masked", "padded", "padded-dataset"]
    assert [check_batching(b) for b in BATCHINGS] == list(BATCHINGS)


def test_an_unknown_batching_names_the_choices():
    with pytest.raises(ValueError, match="'batching' must be one of masked, padded, "
                                         "padded-dataset .got 'pad'."):
        check_batching("pad")
