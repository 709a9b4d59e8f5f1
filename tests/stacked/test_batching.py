import pytest
import torch

from mzattn.stacked import stack_sets

from .helpers import layout_of


def test_stack_sets_pads_every_replica_to_one_bucket():
    sizes = [[2, 0, 3], [5, 1, 0]]
    batches = [layout_of(s)[0] for s in sizes]
    xs = [torch.randn(sum(s), 4) for s in sizes]
    x, mask = stack_sets(xs, batches, dim_size=3)
    assert x.shape == (2, 3, 8, 4) and mask.shape == (2, 3, 8)  # bucket of the largest, 5
    for k, s in enumerate(sizes):
        assert mask[k].sum(-1).tolist() == s
        torch.testing.assert_close(x[k][mask[k]], xs[k])  # each set's rows, in order
        assert torch.equal(x[k][~mask[k]], torch.zeros(8 * 3 - sum(s), 4))


def test_stack_sets_arguments():
    with pytest.raises(ValueError, match='one batch per replica'):
        stack_sets([torch.randn(2, 4)], [], dim_size=1)
