import pytest
import torch
from mzattn.bench.dispatch import count_ops

from mzlayers.linear import Linear
from tests.mzlayers.helpers import check_vmap_over_stacked_replicas

GEN = torch.Generator().manual_seed(0)


def twins(bias: bool = True) -> tuple[torch.nn.Linear, Linear]:
    torch.manual_seed(0)
    reference = torch.nn.Linear(16, 24, bias=bias)
    ours = Linear(16, 24, bias=bias)
    ours.load_state_dict(reference.state_dict())  # the same state dict keys and shapes
    return reference, ours


def outputs_and_grads(lin: torch.nn.Module, x: torch.Tensor, grad: torch.Tensor,
                      autocast: bool) -> list[torch.Tensor]:
    x = x.detach().requires_grad_()
    with torch.autocast('cpu', dtype=torch.bfloat16, enabled=autocast):
        out = lin(x)
    out.float().backward(grad)
    return [out, x.grad, *(p.grad for p in lin.parameters())]


@pytest.mark.parametrize('shape', [(37, 16), (5, 7, 16)], ids=['rows', 'batched'])
@pytest.mark.parametrize('bias', [True, False])
@pytest.mark.parametrize('autocast', [False, True], ids=['fp32', 'bf16'])
def test_bit_identical_to_torch_linear(shape, bias, autocast):
    x = torch.randn(*shape, generator=GEN)
    grad = torch.randn(*shape[:-1], 24, generator=GEN)
    expected, got = (outputs_and_grads(lin, x, grad, autocast) for lin in twins(bias))
    assert len(got) == len(expected) == (4 if bias else 3)
    for e, g in zip(expected, got, strict=True):
        assert g.dtype == e.dtype and torch.equal(g, e)


def test_backward_dispatches_half_the_operators():
    x = torch.randn(37, 16, generator=GEN, requires_grad=True)
    counts = []
    for lin in twins():
        out = lin(x)
        with count_ops() as ops:
            out.sum().backward()
        counts.append(sum(ops.values()))
    assert counts[1] <= counts[0] - 4, counts  # e.g. 8 of autograd's 12 on torch 2.14


def test_second_order_gradients():
    reference, ours = twins()
    x = torch.randn(9, 16, generator=GEN, requires_grad=True)
    grads = []
    for lin in (reference, ours):
        (gx,) = torch.autograd.grad(lin(x).square().sum(), x, create_graph=True)
        grads.append(torch.autograd.grad(gx.square().sum(), lin.weight)[0])
    torch.testing.assert_close(grads[1], grads[0])


def test_runs_under_vmap_over_stacked_parameters():
    # mzattn.stacked: replicas as one module, torch.func.vmap over their parameters
    check_vmap_over_stacked_replicas([twins()[1] for _ in range(3)],
                                     torch.randn(9, 16, generator=GEN), 'weight')


def test_compiles_as_one_graph():
    torch._dynamo.reset()
    reference, ours = twins()
    x = torch.randn(9, 16, generator=GEN)
    compiled = torch.compile(ours, fullgraph=True, backend='aot_eager')
    compiled(x).square().sum().backward()
    reference(x).square().sum().backward()
    torch.testing.assert_close(ours.weight.grad, reference.weight.grad)


def test_is_a_torch_linear():
    reference, ours = twins(bias=False)
    assert isinstance(ours, torch.nn.Linear)
    assert repr(ours) == repr(reference) == 'Linear(in_features=16, out_features=24, bias=False)'
