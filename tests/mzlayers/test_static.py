r"""The static-shape path: ``bucket_batch`` pads to a power-of-two set size,
a model called with ``mask=`` gives the ragged path's outputs and
gradients, and ``torch.compile(model, fullgraph=True)`` traces it once per
bucket (``aot_eager`` here; inductor behind ``slow``)."""
import copy

import pytest
import torch
from torch._dynamo.testing import CompileCounterWithBackend

from mzlayers import MZSetTransformer, SetTransformer, bucket_batch, bucket_size
from mzlayers.layout import SetLayout

from .helpers import ragged_batch

SIZES = (3, 1, 0, 6, 2, 9)  # an empty set; the largest (9) pads to 16
#: A second batch with other sizes in the same bucket (largest 13 -> 16).
SIZES_2 = (13, 0, 5, 1, 11, 2)
SMALL = dict(channels=16, heads=2, ff_channels=32, num_induced_points=4)
MZ = dict(num_generators=3, num_matrix_generators=2)
MODELS = {
    'st': lambda: SetTransformer(3, 2, **SMALL),
    'st-meanpool': lambda: SetTransformer(3, 2, pooling='mean', **SMALL),
    'mz': lambda: MZSetTransformer(3, 2, **SMALL, **MZ),
    'mz-moment': lambda: MZSetTransformer(3, 2, summary='moment', **SMALL, **MZ),
    'mz-attention': lambda: MZSetTransformer(3, 2, summary='attention', **SMALL, **MZ),
}


def _pred(out):
    return out[0] if isinstance(out, tuple) else out


def _out_and_grads(model, *args, call=None, **kwargs):
    model.zero_grad()
    out = (model if call is None else call)(*args, **kwargs)
    outs = out if isinstance(out, tuple) else (out,)
    sum(o.square().sum() for o in outs).backward()
    return [o.detach() for o in outs], {n: p.grad.clone() for n, p in model.named_parameters()
                                        if p.grad is not None}


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
    outs, grads = _out_and_grads(model, x, batch, B)
    outs_pad, grads_pad = _out_and_grads(model, x_pad, mask=mask)
    for o, o_pad in zip(outs, outs_pad, strict=True):
        torch.testing.assert_close(o_pad, o, atol=1e-10, rtol=0)
    assert grads_pad.keys() == grads.keys()
    for key in grads:
        torch.testing.assert_close(grads_pad[key], grads[key], atol=1e-10, rtol=0)
    # the padding's values do not matter; the empty set predicts from a zero token
    out_noise = _pred(model(x_pad.masked_fill(~mask[..., None], 7.0), mask=mask))
    torch.testing.assert_close(out_noise, outs_pad[0], atol=1e-10, rtol=0)


def test_padded_layout_statistics_skip_the_padding():
    mask = torch.tensor([[True, True, False], [False, False, False]])
    layout = SetLayout.padded(mask)
    x = torch.tensor([1.0, 3.0, 100.0, 5.0, 5.0, 5.0]).unsqueeze(-1)
    assert layout.mean(x).view(-1).tolist() == [2.0, 0.0]
    assert layout.sum(x).view(-1).tolist() == [4.0, 0.0]
    assert layout.nonempty.tolist() == [True, False]
    assert layout.counts == [3, 3]  # the padded widths: host sizes from shapes only


def test_padded_input_errors():
    model = SetTransformer(3, 2, **SMALL)
    x_pad, mask = torch.randn(2, 4, 3), torch.ones(2, 4, dtype=torch.bool)
    with pytest.raises(ValueError, match="'mask' must be a boolean tensor of shape"):
        model(x_pad, mask=mask[:, :3])
    with pytest.raises(ValueError, match="'x' must be a padded batch"):
        model(x_pad[0], mask=mask)
    with pytest.raises(ValueError, match="'batch' must be None"):
        model(x_pad, torch.zeros(8, dtype=torch.long), mask=mask)
    with pytest.raises(ValueError, match="'dim_size'"):
        model(x_pad, dim_size=3, mask=mask)
    segment = SetTransformer(3, 2, backend='segment', **SMALL)
    with pytest.raises(ValueError, match="'segment' backend takes ragged batches only"):
        segment(x_pad, mask=mask)


def check_fullgraph_compile(name: str, backend):
    r"""One compiled graph for two batches of the same bucket, with eager's
    outputs and gradients; returns the compile counter."""
    torch._dynamo.reset()
    model = MODELS[name]().eval()
    twin = copy.deepcopy(model)
    counter = CompileCounterWithBackend(backend) if isinstance(backend, str) else backend
    compiled = torch.compile(twin, fullgraph=True, backend=counter)
    for sizes in (SIZES, SIZES_2):
        x, batch, B = ragged_batch(sizes, channels=3, dtype=torch.float32)
        x_pad, mask = bucket_batch(x, batch, dim_size=B)
        assert x_pad.shape == (B, 16, 3)
        outs, grads = _out_and_grads(model, x_pad, mask=mask)
        outs_c, grads_c = _out_and_grads(twin, x_pad, call=compiled, mask=mask)
        for o, o_c in zip(outs, outs_c, strict=True):
            torch.testing.assert_close(o_c, o, atol=1e-5, rtol=1e-4)
        assert grads_c.keys() == grads.keys()
        for key in grads:
            torch.testing.assert_close(grads_c[key], grads[key], atol=1e-5, rtol=1e-4)
    return counter


@pytest.mark.parametrize('name', ['st', 'mz'])
def test_fullgraph_compile_traces_once_per_bucket(name):
    counter = check_fullgraph_compile(name, 'aot_eager')
    assert counter.frame_count == 1  # the second batch (same bucket) reused the graph


@pytest.mark.slow
@pytest.mark.parametrize('name', ['st', 'mz'])
def test_fullgraph_compile_with_inductor(name):
    counter = check_fullgraph_compile(name, 'inductor')
    assert counter.frame_count == 1
