"""On a CUDA device: every registry model gives the CPU's outputs and
gradients, bf16 autocast trains every one of them, and Mamba + PMA's 'auto' scan is mambapy's
parallel one. Skipped where no CUDA device is visible."""
import copy
import math

import pytest
import torch
from mzattn.baselines import MambaPMA, build_model, list_models

from mzattn.extras import MissingExtraError

from ..mzlayers.helpers import assert_same_outputs_and_grads, outputs_and_grads, prediction

pytestmark = pytest.mark.skipif(not torch.cuda.is_available(), reason='no CUDA device')

X = torch.randn(40, 3, generator=torch.Generator().manual_seed(0))
BATCH = torch.tensor([0] * 9 + [1] * 14 + [3] * 17)  # set 2 is empty
#: Deterministic constructions of the models that sample at evaluation.
OVERRIDES = {'mc-dropout': {'dropout': 0.0}}


@pytest.fixture(autouse=True)
def full_precision_matmuls():
    # TF32 (on by default for cuDNN) rounds products to 10 mantissa bits
    old = torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32
    torch.backends.cuda.matmul.allow_tf32 = torch.backends.cudnn.allow_tf32 = False
    yield
    torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32 = old


def build(name: str) -> torch.nn.Module:
    r"""The registry model :obj:`name` (skipped when its extra is missing,
    e.g. mambapy on a machine without network)."""
    try:
        return build_model(name, 3, 2, **OVERRIDES.get(name, {}))
    except MissingExtraError as error:
        pytest.skip(str(error))


@pytest.mark.parametrize('name', list_models())
def test_cuda_matches_cpu(name):
    torch.manual_seed(0)
    model = build(name).eval()
    twin = copy.deepcopy(model).cuda()
    expected = outputs_and_grads(model, X, BATCH, 4)
    outs, grads = outputs_and_grads(twin, X.cuda(), BATCH.cuda(), 4)
    got = [o.cpu() for o in outs], {key: grad.cpu() for key, grad in grads.items()}
    assert_same_outputs_and_grads(got, expected, atol=1e-4, rtol=1e-3)


#: Models whose loss must halve in the bf16 test (every other one must decrease).
HALVES = ('standard', 'mz-full')


@pytest.mark.parametrize('name', list_models())
def test_bf16_autocast_trains(name):
    torch.manual_seed(0)
    model = build(name).cuda()
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
    x, batch, target = X.cuda(), BATCH.cuda(), torch.randn(4, 2, device='cuda')
    losses = []
    for _ in range(50):
        with torch.autocast('cuda', dtype=torch.bfloat16):
            out = prediction(model(x, batch, 4))
        loss = (out.float() - target).square().mean()
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    assert all(math.isfinite(loss) for loss in losses)
    assert losses[-1] < (0.5 if name in HALVES else 1.0) * losses[0]


def test_mamba_auto_scan_is_the_parallel_one_and_agrees_with_the_sequential_one(monkeypatch):
    pytest.importorskip('mambapy')
    from mzattn.baselines import mamba_encoder
    x, batch = X.cuda(), BATCH.cuda()
    outs = {}
    for scan in ('sequential', 'auto'):
        torch.manual_seed(0)
        model = MambaPMA(3, 2, channels=16, num_layers=2, scan=scan).cuda().eval()
        outs[scan] = model(x, batch, 4)
        # from here on, a call of the sequential scan fails: 'auto' must not make one
        monkeypatch.setattr(mamba_encoder, 'selective_scan', None)
    torch.testing.assert_close(outs['auto'], outs['sequential'], atol=1e-5, rtol=1e-4)
