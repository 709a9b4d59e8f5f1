"""On a CUDA device: the varlen kernel (nested-jagged SDPA through the fused
kernels' varlen entry points) agrees with the padded kernel, trains under
bf16 autocast, reads nothing from the device in a forward and backward, and
is what 'auto' runs on a batch padded more than twice over.  Skipped where
no CUDA device is visible."""
import pytest
import torch
from mzattn.bench.dispatch import count_host_syncs

from mzlayers import ISAB, PMA, SetLayout, set_attention
from mzlayers.kernels.policy import auto_kernel

pytestmark = pytest.mark.skipif(not torch.cuda.is_available(), reason='no CUDA device')

#: An empty set and a large one: padded 5 * 40 / 52 = 3.8 times over.
SIZES = (3, 0, 40, 7, 2)
H, DK, M = 2, 16, 4


def _layout() -> SetLayout:
    batch = torch.repeat_interleave(torch.arange(len(SIZES)), torch.tensor(SIZES)).cuda()
    return SetLayout.from_sizes(batch, SIZES)


def _inputs(num_queries: int, num_keys: int, value_channels: int):
    g = torch.Generator().manual_seed(0)
    shapes = ((num_queries, H, DK), (num_keys, H, DK), (num_keys, H, value_channels))
    return [torch.randn(*s, generator=g).cuda().requires_grad_() for s in shapes]


@pytest.mark.parametrize('value_channels', [DK, 3 * DK])  # MZ values are wider than keys
@pytest.mark.parametrize('shared', [True, False])
def test_varlen_matches_dense_and_reads_nothing_from_the_device(shared, value_channels):
    layout = _layout()
    assert auto_kernel('cuda', layout, None if shared else layout) == 'varlen'
    q, k, v = _inputs(M if shared else layout.num_elements, layout.num_elements, value_channels)
    query_layout = None if shared else layout
    results = []
    for backend in ('dense', 'varlen', 'varlen'):  # the second varlen call is counted
        with count_host_syncs() as count:
            out = set_attention(q, k, v, layout, query_layout, backend)
            grads = torch.autograd.grad(out.square().sum(), (q, k, v))
        results.append((out, grads))
    assert count.total == 0, (count.ops, count.tolist, count.copies)
    (dense, dense_grads), (varlen, varlen_grads), _ = results
    torch.testing.assert_close(varlen, dense, atol=1e-4, rtol=1e-3)
    for got, expected in zip(varlen_grads, dense_grads, strict=True):
        torch.testing.assert_close(got, expected, atol=1e-4, rtol=1e-3)


def test_varlen_isab_pma_trains_under_bf16_autocast():
    torch.manual_seed(0)
    layout = _layout()
    model = torch.nn.ModuleList([ISAB(32, 8, heads=H, backend='varlen'),
                                 PMA(32, 1, heads=H, backend='varlen')]).cuda()
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
    x, target = torch.randn(layout.num_elements, 32).cuda(), torch.randn(len(SIZES), 32).cuda()
    losses = []
    for _ in range(30):
        with torch.autocast('cuda', dtype=torch.bfloat16):
            out = model[1](model[0](x, layout=layout), layout=layout)[0]
        loss = (out.float() - target).square().mean()
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    assert losses[-1] < losses[0]
