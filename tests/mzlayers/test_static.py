r"""The static-shape path: ``bucket_batch`` pads to a power-of-two set size,
a model called with ``mask=`` gives the ragged path's outputs and
gradients, and ``torch.compile(model, fullgraph=True)`` traces it once per
bucket (``aot_eager`` here; inductor behind ``slow``)."""
import pytest
import torch
from torch_geometric.utils import scatter

from mzlayers import MZSetTransformer, SetTransformer, bucket_batch, bucket_size
from mzlayers.layout import SetLayout

from .helpers import BUCKET_SIZES as SIZES
from .helpers import (
    assert_same_outputs_and_grads,
    check_fullgraph_compile,
    check_padded_input_errors,
    outputs_and_grads,
    prediction,
    ragged_batch,
)

SMALL = dict(channels=16, heads=2, ff_channels=32, num_induced_points=4)
MZ = dict(num_generators=3, num_matrix_generators=2)
MODELS = {
    'st': lambda: SetTransformer(3, 2, **SMALL),
    'st-meanpool': lambda: SetTransformer(3, 2, pooling='mean', **SMALL),
    'mz': lambda: MZSetTransformer(3, 2, **SMALL, **MZ),
    'mz-moment': lambda: MZSetTransformer(3, 2, summary='moment', **SMALL, **MZ),
    'mz-attention': lambda: MZSetTransformer(3, 2, summary='attention', **SMALL, **MZ),
}


def test_bucket_size_and_batch():
    assert [bucket_size(n) for n in (0, 1, 2, 3, 8, 9, 1000)] == [1, 1, 2, 4, 8, 16, 1024]
    assert bucket_size(3, min_size=32) == 32
    x, batch, B = ragged_batch(SIZES, channels=3)
    x_pad, mask = bucket_batch(x, batch, dim_size=B + 1)  # one more, empty, set
    assert x_pad.shape == (B + 1, 16, 3) and mask.shape == (B + 1, 16)
    assert mask.sum(1).tolist() == [*SIZES, 0]
    assert torch.equal(x_pad[mask], x)
    assert x_pad[~mask].abs().max() == 0
    with pytest.raises(ValueError, match="'batch' must be sorted"):
        bucket_batch(x, batch.flip(0))


@pytest.mark.parametrize('name', list(MODELS))
def test_padded_path_equals_the_ragged_path(name):
    model = MODELS[name]().double().eval()
    x, batch, B = ragged_batch(SIZES, channels=3)
    x_pad, mask = bucket_batch(x, batch, dim_size=B)
    padded = outputs_and_grads(model, x_pad, mask=mask)
    assert_same_outputs_and_grads(padded, outputs_and_grads(model, x, batch, B),
                                  atol=1e-10, rtol=0)
    # the padding's values do not matter; the empty set predicts from a zero token
    out_noise = prediction(model(x_pad.masked_fill(~mask[..., None], 7.0), mask=mask))
    torch.testing.assert_close(out_noise, padded[0][0], atol=1e-10, rtol=0)


def test_padded_layout_statistics_skip_the_padding():
    mask = torch.tensor([[True, True, False], [False, False, False]])
    layout = SetLayout.padded(mask)
    x = torch.tensor([1.0, 3.0, 100.0, 5.0, 5.0, 5.0]).unsqueeze(-1)
    assert layout.mean(x).view(-1).tolist() == [2.0, 0.0]
    assert layout.sum(x).view(-1).tolist() == [4.0, 0.0]
    assert layout.nonempty.tolist() == [True, False]
    assert layout.counts == [3, 3]  # the padded widths: host sizes from shapes only


@pytest.mark.parametrize('counts', [[4, 4, 4], [0, 0], [2, 3, 0]],
                         ids=['equal', 'empty', 'ragged'])
def test_layout_statistics_equal_pyg_scatter(counts):
    # equal sizes reduce a [B, n] view, the rest scatters (torch_geometric.utils)
    batch = torch.repeat_interleave(torch.arange(len(counts)), torch.tensor(counts))
    layout = SetLayout(batch, len(counts), counts)
    x = torch.randn(batch.numel(), 3, 2, dtype=torch.float64)
    for reduce in ('mean', 'sum'):
        expected = scatter(x, batch, dim=0, dim_size=len(counts), reduce=reduce)
        torch.testing.assert_close(getattr(layout, reduce)(x), expected, rtol=1e-15, atol=0)


def test_padded_input_errors():
    check_padded_input_errors(SetTransformer(3, 2, **SMALL), channels=3)
    x_pad, mask = torch.randn(2, 4, 3), torch.ones(2, 4, dtype=torch.bool)
    segment = SetTransformer(3, 2, backend='segment', **SMALL)
    with pytest.raises(ValueError, match="'segment' backend takes ragged batches only"):
        segment(x_pad, mask=mask)


@pytest.mark.parametrize('name', ['st', 'mz'])
def test_fullgraph_compile_traces_once_per_bucket(name):
    counter = check_fullgraph_compile(MODELS[name], 'aot_eager', channels=3)
    assert counter.frame_count == 1  # the second batch (same bucket) reused the graph


@pytest.mark.slow
@pytest.mark.parametrize('name', ['st', 'mz'])
def test_fullgraph_compile_with_inductor(name):
    counter = check_fullgraph_compile(MODELS[name], 'inductor', channels=3)
    assert counter.frame_count == 1
