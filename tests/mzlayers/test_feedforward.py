import pytest
import torch
from mzattn.bench.dispatch import count_ops

from mzlayers.feedforward import FeedForward
from tests.mzlayers.helpers import check_vmap_over_stacked_replicas

GEN = torch.Generator().manual_seed(0)


def network(dropout: float = 0.0, bias: bool = True) -> FeedForward:
    torch.manual_seed(0)
    return FeedForward(16, 32, dropout, bias=bias).train()


def step(ffn: FeedForward, x: torch.Tensor, grad: torch.Tensor, *, fused: bool,
         autocast: bool = False, seed: int = 1) -> list[torch.Tensor]:
    r"""Output and gradients of one forward + backward, through the fused
    function or module by module (the same dropout mask: the same seed)."""
    ffn.zero_grad(set_to_none=True)
    x = x.detach().requires_grad_()
    torch.manual_seed(seed)
    with torch.autocast('cpu', dtype=torch.bfloat16, enabled=autocast):
        out = ffn(x) if fused else ffn.net(x)
    out.float().backward(grad)
    return [out, x.grad, *(p.grad for p in ffn.parameters())]


@pytest.mark.parametrize('shape', [(37, 16), (5, 7, 16)], ids=['rows', 'batched'])
@pytest.mark.parametrize('bias', [True, False])
def test_equals_the_modules_without_dropout(shape, bias):
    ffn = network(bias=bias)
    x, grad = torch.randn(*shape, generator=GEN), torch.randn(*shape, generator=GEN)
    expected, got = step(ffn, x, grad, fused=False), step(ffn, x, grad, fused=True)
    assert len(got) == (6 if bias else 4)
    for e, g in zip(expected, got, strict=True):  # the same kernels on the same operands
        assert g.dtype == e.dtype and torch.equal(g, e)


@pytest.mark.parametrize('autocast', [False, True], ids=['fp32', 'bf16'])
def test_equals_the_modules_with_dropout(autocast):
    # torch.native_dropout draws its mask as nn.Dropout does on CPU: the same
    # Bernoulli draws from the same seed; it scales by 1/(1-p) where
    # nn.Dropout divides, so values agree to rounding
    ffn = network(dropout=0.4)
    x, grad = torch.randn(64, 16, generator=GEN), torch.randn(64, 16, generator=GEN)
    expected = step(ffn, x, grad, fused=False, autocast=autocast)
    got = step(ffn, x, grad, fused=True, autocast=autocast)
    for e, g in zip(expected, got, strict=True):
        assert g.dtype == e.dtype
        error = (g.double() - e.double()).norm() / e.double().norm()
        assert error <= (1e-2 if autocast else 1e-6), error  # bf16 rounds to 2^-8
    assert not torch.equal(got[0], step(ffn, x, grad, fused=True, seed=2)[0])  # dropout acts


def test_eval_has_no_dropout():
    ffn = network(dropout=0.5).eval()
    x = torch.randn(8, 16, generator=GEN, requires_grad=True)
    torch.testing.assert_close(ffn(x), ffn(x))
    torch.testing.assert_close(ffn(x), ffn.net(x))


def test_dispatches_fewer_operators():
    ffn = network(dropout=0.1)
    x = torch.randn(37, 16, generator=GEN, requires_grad=True)
    counts = []
    for run in (ffn.net, ffn):
        with count_ops() as ops:
            run(x).sum().backward()
        counts.append(sum(ops.values()))
    assert counts[1] <= counts[0] - 5, counts  # 24 against 29 on torch 2.14.1


def test_hooks_see_every_module():
    ffn = network(dropout=0.1)
    seen = []
    ffn.net[0].register_forward_hook(lambda m, args, out: seen.append(out.shape))
    ffn(torch.randn(5, 16, generator=GEN, requires_grad=True)).sum().backward()
    assert seen == [torch.Size([5, 32])]


def test_second_order_gradients():
    ffn = network()
    x = torch.randn(9, 16, generator=GEN, requires_grad=True)
    grads = []
    for run in (ffn.net, ffn):
        (gx,) = torch.autograd.grad(run(x).square().sum(), x, create_graph=True)
        grads.append(torch.autograd.grad(gx.square().sum(), ffn.net[0].weight)[0])
    torch.testing.assert_close(grads[1], grads[0])


def test_runs_under_vmap_over_stacked_parameters():
    check_vmap_over_stacked_replicas([network() for _ in range(3)],
                                     torch.randn(9, 16, generator=GEN), 'net.0.weight')


def test_compiles_as_one_graph():
    torch._dynamo.reset()
    ffn = network(dropout=0.1)
    compiled = torch.compile(ffn, fullgraph=True, backend='aot_eager')
    compiled(torch.randn(9, 16, generator=GEN)).square().sum().backward()
    assert all(torch.isfinite(p.grad).all() for p in ffn.parameters())


def test_state_dict_is_the_sequential_one():
    assert list(network().state_dict()) == ['net.0.weight', 'net.0.bias', 'net.3.weight',
                                           'net.3.bias']
