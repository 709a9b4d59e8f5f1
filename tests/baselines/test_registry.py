"""Every registry model: output shape, finiteness, permutation invariance
(or order dependence), parameter counts against the paper, overfitting."""
import pytest
import torch
from mzattn.baselines import REGISTRY, build_model, list_models, model_info, models_table

from mzlayers import count_parameters

from .helpers import (
    in_channels,
    prediction,
    ragged_batch,
    reverse_within_sets,
    shuffle_within_sets,
)

SET_MODELS = [n for n in list_models() if not model_info(n).order_dependent]
ORDERED_MODELS = [n for n in list_models() if model_info(n).order_dependent]
COUNTED = [n for n in list_models() if model_info(n).paper_params is not None]
# Default-run overfit subset (one per family that is cheap on CPU); the rest are slow.
FAST_OVERFIT = {'deep-sets', 'slot-attention', 'egnn', 'seq-transformer'}


def test_names_are_the_papers_row_labels():
    for name in ('standard', 'st-large', 'st-film', 'st-meanpool', 'hypernet-r8',
                 'perceiver', 'slot-attention', 'deep-sets', 'la-st', 'mamba-pma',
                 'egnn', 'mz-full', 'mz-slim', 'mz-genqk', 'mz-1l'):
        assert name in REGISTRY
    assert ORDERED_MODELS == ['mamba-pma', 'seq-transformer', 'mz-seq-transformer']


def test_unknown_name_raises():
    with pytest.raises(ValueError, match="'name'"):
        build_model('transformer-xl', 8, 1)


@pytest.mark.parametrize('name', list_models())
def test_output_shape_and_finite(name, one_thread):
    d = in_channels(name)
    model = build_model(name, d, 3).double()
    x, batch, B = ragged_batch(d)
    out = model(x, batch, dim_size=B)
    pred = prediction(out)
    assert pred.shape == (B, 3)
    assert torch.isfinite(pred).all()
    loss = pred.pow(2).mean()
    loss.backward()
    grads = [p.grad for p in model.parameters() if p.grad is not None]
    assert grads and all(torch.isfinite(g).all() for g in grads)


@pytest.mark.parametrize('name', SET_MODELS)
def test_permutation_invariance(name, one_thread):
    d = in_channels(name)
    # MC-Dropout samples dropout per element: it is invariant in distribution
    # only, so its wrapper path is checked with dropout off.
    overrides = dict(dropout=0.0) if name == 'mc-dropout' else {}
    model = build_model(name, d, 2, **overrides).double().eval()
    x, batch, B = ragged_batch(d)
    x2, batch2 = shuffle_within_sets(x, batch)
    assert not torch.equal(x, x2)
    out1 = prediction(model(x, batch, dim_size=B))
    out2 = prediction(model(x2, batch2, dim_size=B))
    assert (out1 - out2).abs().max() < 1e-5


@pytest.mark.parametrize('name', ORDERED_MODELS)
def test_order_dependent_models_change_with_the_order(name):
    d = in_channels(name)
    model = build_model(name, d, 2).double().eval()
    x, batch, B = ragged_batch(d)
    x2, batch2 = reverse_within_sets(x, batch)
    out1 = prediction(model(x, batch, dim_size=B))
    out2 = prediction(model(x2, batch2, dim_size=B))
    # every set with >= 2 elements was reordered and its output moves
    assert (out1 - out2)[[0, 3, 4, 5]].abs().amin() > 1e-6


@pytest.mark.parametrize('name', COUNTED)
def test_parameter_count_matches_paper(name):
    info = model_info(name)
    ours = count_parameters(build_model(name, info.in_channels, 1))
    assert abs(ours - info.paper_params) / info.paper_params < 0.05, (name, ours)


def test_models_table_lists_every_model():
    table = models_table()
    for name in list_models():
        assert f'`{name}`' in table
    assert '| `egnn` | EGNN | 1, 7 | 8 | 316,121 | 303,000 | +4.3% |' in table


def overfit(name, max_steps=1500, window=10):
    """Adam on one batch of four sets until the last ``window`` losses all sit
    below a tenth of the first one, or ``max_steps``.  Returns the first loss
    and the largest of the last ``window``.  Stopping early keeps the test
    independent of when a model leaves its initial plateau (EGNN's exit moved
    past a fixed 300 steps on another CPU's float rounding)."""
    torch.manual_seed(0)
    d = in_channels(name)
    model = build_model(name, d, 1)
    batch = torch.arange(4).repeat_interleave(5)
    x, y = torch.randn(20, d), torch.randn(4, 1)
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    losses = []
    for _ in range(max_steps):
        loss = torch.nn.functional.mse_loss(prediction(model(x, batch)), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(loss.item())
        if len(losses) > window and max(losses[-window:]) < losses[0] / 10:
            break
    return losses[0], max(losses[-window:])


@pytest.mark.parametrize('name', [
    n if n in FAST_OVERFIT else pytest.param(n, marks=pytest.mark.slow)
    for n in list_models()])
def test_overfits_one_small_batch(name, one_thread):
    first, last = overfit(name)
    assert last < first / 10, (first, last)
