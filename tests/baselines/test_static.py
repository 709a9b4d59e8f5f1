r"""The static-shape path of every registry model: ``model(x_pad, mask=mask)``
(``bucket_batch``) gives the ragged path's outputs and parameter gradients,
a mask may put the real elements anywhere in a row, and
``torch.compile(model, fullgraph=True)`` traces one graph per bucket."""
import pytest
import torch
from mzattn.baselines import build_model, list_models, model_info

from mzlayers import bucket_batch
from tests.mzlayers.helpers import (
    BUCKET_SIZES,
    assert_same_outputs_and_grads,
    check_fullgraph_compile,
    check_padded_input_errors,
    outputs_and_grads,
    prediction,
)

from .helpers import in_channels, ragged_batch

#: Fewer passes and members than the paper's (speed); MC-Dropout samples
#: dropout in evaluation mode, so it is off: both paths must draw the same.
OVERRIDES = {'mc-dropout': dict(num_samples=2, dropout=0.0),
             'deep-ensemble': dict(num_members=2)}
#: Outputs in the loss: MC-Dropout's std is 0 without dropout, where its
#: gradient is undefined (NaN on either path), so only its mean enters.
LOSS_OUTPUTS = {'mc-dropout': 1}
ORDERED_MODELS = [n for n in list_models() if model_info(n).order_dependent]


def _model(name, **overrides):
    return build_model(name, in_channels(name), 2,
                       **{**OVERRIDES.get(name, {}), **overrides}).eval()


@pytest.mark.parametrize('name', list_models())
def test_padded_path_equals_the_ragged_path(name, one_thread):
    model = _model(name)
    x, batch, B = ragged_batch(in_channels(name), BUCKET_SIZES, dtype=torch.float32)
    B += 2  # two more sets, empty, beyond the last index (a fixed dim_size)
    x_pad, mask = bucket_batch(x, batch, dim_size=B)
    assert x_pad.shape[:2] == (B, 16)
    loss = dict(num_loss_outputs=LOSS_OUTPUTS.get(name))
    padded = outputs_and_grads(model, x_pad, mask=mask, **loss)
    ragged = outputs_and_grads(model, x, batch, B, **loss)
    assert_same_outputs_and_grads(padded, ragged, atol=1e-5, rtol=1e-5)
    # the padding's values never reach a real element or an empty set's output
    noise = prediction(model(x_pad.masked_fill(~mask[..., None], 7.0), mask=mask))
    torch.testing.assert_close(noise, padded[0][0], atol=1e-5, rtol=1e-5)


@pytest.mark.parametrize('name', [*ORDERED_MODELS, 'deep-sets', 'egnn'])
def test_real_elements_may_sit_anywhere_in_a_row(name, one_thread):
    r"""The set of row :obj:`b` is :obj:`x[b][mask[b]]` in row order, also
    when padding lies between or before the real elements (the
    order-dependent models read it in that order)."""
    model = _model(name)
    x, batch, B = ragged_batch(in_channels(name), BUCKET_SIZES, dtype=torch.float32)
    x_pad, mask = bucket_batch(x, batch, dim_size=B)
    x_holes = x_pad.new_zeros(B, 32, x.size(-1))  # element i of a set at slot 2i + 1
    x_holes[:, 1::2] = x_pad
    mask_holes = mask.new_zeros(B, 32)
    mask_holes[:, 1::2] = mask
    torch.testing.assert_close(prediction(model(x_holes, mask=mask_holes)),
                               prediction(model(x, batch, B)), atol=1e-5, rtol=1e-5)


#: Compiled models, shortened where compile time grows with the depth (the
#: structure is kept: Perceiver's first and later cross-attention blocks).
COMPILED = {'deep-sets': {}, 'slot-attention': dict(num_iterations=2),
            'perceiver': dict(num_latent_blocks=1, num_decoder_blocks=0)}


@pytest.mark.parametrize('name', list(COMPILED))
def test_fullgraph_compile_traces_once_per_bucket(name):
    counter = check_fullgraph_compile(lambda: _model(name, **COMPILED[name]), 'aot_eager',
                                      in_channels(name))
    assert counter.frame_count == 1  # the second batch (same bucket) reused the graph


@pytest.mark.parametrize('name', ['deep-sets', 'egnn', 'mc-dropout', 'mamba-pma'])
def test_padded_input_errors(name):
    check_padded_input_errors(_model(name), in_channels(name))


@pytest.mark.parametrize('name', ['seq-transformer', 'mz-seq-transformer'])
def test_padded_width_beyond_max_length_is_refused(name):
    model = _model(name, max_length=8)  # set lengths are not read: the width decides
    x_pad = torch.randn(2, 16, in_channels(name))
    mask = torch.zeros(2, 16, dtype=torch.bool)
    mask[:, :3] = True
    with pytest.raises(ValueError, match="padded to 16 rows per set but 'max_length' is 8"):
        model(x_pad, mask=mask)
    model(x_pad[:, :8], mask=mask[:, :8])  # the same sets in a narrower bucket
