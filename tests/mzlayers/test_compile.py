r"""``torch.compile`` (default backend, inductor) gives eager's outputs and
gradients.  The hand-written segment kernel runs eagerly behind a graph
break (:func:`torch._dynamo.disable`), as does the layout's one host read."""
import copy

import pytest
import torch
from mzattn.baselines import build_model, list_models

X = torch.randn(12, 3, generator=torch.Generator().manual_seed(0))
BATCH = torch.tensor([0, 0, 0, 1, 1, 1, 1, 1, 3, 3, 3, 3])  # set 2 is empty
#: Models whose compiled graphs the default test run checks (a few minutes on CPU).
FAST = ('standard', 'mz-slim')


def _loss_and_grads(call, model, x, batch):
    model.zero_grad()
    out = call(x, batch, 4)
    out = out[0] if isinstance(out, tuple) else out
    out.square().sum().backward()
    return out.detach(), {n: p.grad.clone() for n, p in model.named_parameters()
                          if p.grad is not None}


def check_compiled_matches_eager(name: str):
    torch._dynamo.reset()
    torch.manual_seed(0)
    model = build_model(name, 3, 2).eval()  # eval: no dropout draws to match
    twin = copy.deepcopy(model)
    compiled = torch.compile(twin)
    # MC dropout samples in eval mode too: the same seed, and inductor draws as eager does
    with torch._inductor.config.patch(fallback_random=True):
        for x, batch in ((X, BATCH), (X[:8], BATCH[:8])):  # a second, different batch
            _compare(name, model, twin, compiled, x, batch)


def _compare(name, model, twin, compiled, x, batch):
    torch.manual_seed(1)
    out, grads = _loss_and_grads(model, model, x, batch)
    torch.manual_seed(1)
    out_c, grads_c = _loss_and_grads(compiled, twin, x, batch)
    torch.testing.assert_close(out_c, out, atol=1e-5, rtol=1e-4)
    assert grads_c.keys() == grads.keys()
    for key in grads:
        torch.testing.assert_close(grads_c[key], grads[key], atol=1e-5, rtol=1e-4,
                                   msg=lambda m, key=key: f'{name} {key}: {m}')


@pytest.mark.parametrize('name', FAST)
def test_compiled_matches_eager(name):
    check_compiled_matches_eager(name)


@pytest.mark.slow
@pytest.mark.parametrize('name', [n for n in list_models() if n not in FAST])
def test_every_registry_model_compiles(name):
    check_compiled_matches_eager(name)
