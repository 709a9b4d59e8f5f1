r"""``torch.compile`` (default backend, inductor) gives eager's outputs and
gradients.  The hand-written segment kernel runs eagerly behind a graph
break (:func:`torch._dynamo.disable`), as does the layout's one host read."""
import copy

import pytest
import torch
from mzattn.baselines import build_model, list_models

from .helpers import assert_same_outputs_and_grads, outputs_and_grads

X = torch.randn(12, 3, generator=torch.Generator().manual_seed(0))
BATCH = torch.tensor([0, 0, 0, 1, 1, 1, 1, 1, 3, 3, 3, 3])  # set 2 is empty
#: Models whose compiled graphs the default test run checks (a few minutes on CPU).
FAST = ('standard', 'mz-slim')


def check_compiled_matches_eager(name: str):
    torch._dynamo.reset()
    torch.manual_seed(0)
    model = build_model(name, 3, 2).eval()  # eval: no dropout draws to match
    twin = copy.deepcopy(model)
    compiled = torch.compile(twin)
    # MC dropout samples in eval mode too: the same seed, and inductor draws as eager does
    with torch._inductor.config.patch(fallback_random=True):
        for x, batch in ((X, BATCH), (X[:8], BATCH[:8])):  # a second, different batch
            _compare(model, twin, compiled, x, batch)


def _compare(model, twin, compiled, x, batch):
    # outputs and parameter gradients of the loss on the prediction (the first output)
    torch.manual_seed(1)
    eager = outputs_and_grads(model, x, batch, 4, num_loss_outputs=1)
    torch.manual_seed(1)
    got = outputs_and_grads(twin, x, batch, 4, call=compiled, num_loss_outputs=1)
    assert_same_outputs_and_grads(got, eager, atol=1e-5, rtol=1e-4)


@pytest.mark.parametrize('name', FAST)
def test_compiled_matches_eager(name):
    check_compiled_matches_eager(name)


@pytest.mark.slow
@pytest.mark.parametrize('name', [n for n in list_models() if n not in FAST])
def test_every_registry_model_compiles(name):
    check_compiled_matches_eager(name)
