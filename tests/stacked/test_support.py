import pytest
import torch
from mzattn.baselines import build_model, list_models

from mzattn.stacked import StackedSeeds, kernel_problem, unstackable_reason
from mzlayers.layout import SetLayout

from .helpers import layout_of, prediction

SIZES = [4, 0, 6, 3]
NOT_STACKABLE = {'mamba-pma'}


def build(name: str, seed: int, **overrides) -> torch.nn.Module:
    torch.manual_seed(seed)
    try:
        return build_model(name, 3, 1, backend='dense', **overrides)
    except TypeError:  # a model without an attention kernel to choose
        return build_model(name, 3, 1, **overrides)


@pytest.mark.parametrize('name', sorted(set(list_models()) - NOT_STACKABLE))
def test_every_registry_model_stacks(name):
    # two replicas train (dropout drawn per replica); in evaluation each one gives its own
    # output and gradients
    batch, layout = layout_of(SIZES)
    models = [build(name, seed) for seed in range(2)]
    stacked = StackedSeeds(models)
    x = torch.randn(2, sum(SIZES), 3)
    prediction(stacked(x, batch, dim_size=len(SIZES), layout=layout)).sum().backward()
    if name == 'mc-dropout':  # it samples in evaluation too
        return
    stacked.eval().zero_grad()
    out = prediction(stacked(x, batch, dim_size=len(SIZES), layout=layout))
    out.sum().backward()
    for k, model in enumerate(models):
        expected = prediction(model.eval()(x[k], batch, dim_size=len(SIZES), layout=layout))
        expected.sum().backward()
        torch.testing.assert_close(out[k], expected, atol=1e-5, rtol=1e-5)
        grads = dict(model.named_parameters())
        for key, p in stacked.named_stacked():
            if key in grads:
                torch.testing.assert_close(p.grad[k], grads[key].grad, atol=1e-5, rtol=1e-4,
                                           msg=lambda m, key=key: f"{key}: {m}")


def test_mamba_is_not_stackable():
    pytest.importorskip('mambapy')
    model = build_model('mamba-pma', 3, 1)
    assert 'selective scan' in unstackable_reason(model)
    with pytest.raises(ValueError, match='cannot be stacked.*MambaPMA'):
        StackedSeeds([model, model])


def test_segment_kernel_is_refused():
    batch, ragged = layout_of(SIZES)
    model = build_model('standard', 3, 1)  # backend 'auto': the segment kernel on ragged CPU
    assert 'backend' in kernel_problem(model, ragged, torch.device('cpu'))
    assert kernel_problem(model, ragged, torch.device('cuda')) is None
    even_batch, even = layout_of([3, 3, 3])
    assert kernel_problem(model, even, torch.device('cpu')) is None
    stacked = StackedSeeds([model, model])
    with pytest.raises(ValueError, match="backend='dense'"):
        stacked(torch.randn(2, sum(SIZES), 3), batch, dim_size=len(SIZES), layout=ragged)
    out = stacked(torch.randn(2, 9, 3), even_batch, dim_size=3, layout=even)
    assert out.shape == (2, 3, 1)
    assert isinstance(even, SetLayout)
