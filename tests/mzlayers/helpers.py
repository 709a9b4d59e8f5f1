"""Ragged batches for the layer tests, and the checks of the static-shape path."""
import copy

import pytest
import torch

# Set sizes with an empty set (index 2) and a large one, so the 'auto'
# backend splits the batch into several padded buckets.
SIZES = (3, 1, 0, 7, 2, 40)


def ragged_batch(sizes=SIZES, channels=8, dtype=torch.float64):
    batch = torch.repeat_interleave(torch.arange(len(sizes)), torch.tensor(sizes))
    x = torch.randn(int(sum(sizes)), channels, dtype=dtype)
    return x, batch, len(sizes)


def shuffle_sets(x, batch, num_sets, generator=None):
    r"""Shuffles the elements inside each set and the order of the sets.

    Returns the new :obj:`(x, batch)`, the element permutation :obj:`perm`
    (new row i = old row perm[i]) and the set permutation :obj:`set_perm`
    (new set s = old set set_perm[s])."""
    set_perm = torch.randperm(num_sets, generator=generator)
    rows = []
    for old in set_perm.tolist():
        idx = (batch == old).nonzero().view(-1)
        rows.append(idx[torch.randperm(idx.numel(), generator=generator)])
    perm = torch.cat(rows)
    new_of_old = torch.empty_like(set_perm)
    new_of_old[set_perm] = torch.arange(num_sets)
    new_batch = new_of_old[batch[perm]]
    return x[perm], new_batch, perm, set_perm


# The static-shape path ######################################################

#: Set sizes of the static-shape tests: an empty set; the largest (9) pads to 16.
BUCKET_SIZES = (3, 1, 0, 6, 2, 9)
#: A second batch with other sizes in the same bucket (largest 13 -> 16).
BUCKET_SIZES_2 = (13, 0, 5, 1, 11, 2)


def prediction(out):
    return out[0] if isinstance(out, tuple) else out


def outputs_and_grads(model, *args, call=None, num_loss_outputs=None, **kwargs):
    r"""The outputs of :obj:`(call or model)(*args, **kwargs)` and the
    gradients of :obj:`model`'s parameters for the loss :math:`\sum o^2`
    over the first :obj:`num_loss_outputs` outputs (all: :obj:`None`)."""
    model.zero_grad()
    out = (model if call is None else call)(*args, **kwargs)
    outs = out if isinstance(out, tuple) else (out,)
    sum(o.square().sum() for o in outs[:num_loss_outputs]).backward()
    return [o.detach() for o in outs], {n: p.grad.clone() for n, p in model.named_parameters()
                                        if p.grad is not None}


def assert_same_outputs_and_grads(got, expected, atol: float, rtol: float) -> None:
    r"""Compares two :func:`outputs_and_grads` results."""
    (outs, grads), (outs_ref, grads_ref) = got, expected
    for o, o_ref in zip(outs, outs_ref, strict=True):
        torch.testing.assert_close(o, o_ref, atol=atol, rtol=rtol)
    assert grads.keys() == grads_ref.keys()
    for key in grads_ref:
        torch.testing.assert_close(grads[key], grads_ref[key], atol=atol, rtol=rtol,
                                   msg=lambda m, key=key: f'{key}: {m}')


def check_fullgraph_compile(make_model, backend, channels: int):
    r"""Compiles a twin of :obj:`make_model()` with :obj:`fullgraph=True`
    and checks, on two padded batches of the same bucket, eager's outputs
    and gradients; returns the compile counter (one frame: one graph)."""
    from torch._dynamo.testing import CompileCounterWithBackend

    from mzlayers import bucket_batch
    torch._dynamo.reset()
    model = make_model().eval()
    twin = copy.deepcopy(model)
    counter = CompileCounterWithBackend(backend) if isinstance(backend, str) else backend
    compiled = torch.compile(twin, fullgraph=True, backend=counter)
    for sizes in (BUCKET_SIZES, BUCKET_SIZES_2):
        x, batch, B = ragged_batch(sizes, channels=channels, dtype=torch.float32)
        x_pad, mask = bucket_batch(x, batch, dim_size=B)
        assert x_pad.shape == (B, 16, channels)
        eager = outputs_and_grads(model, x_pad, mask=mask)
        got = outputs_and_grads(twin, x_pad, call=compiled, mask=mask)
        assert_same_outputs_and_grads(got, eager, atol=1e-5, rtol=1e-4)
    return counter


def check_padded_input_errors(model, channels: int) -> None:
    r"""The errors of a padded input that does not fit (shapes only)."""
    x_pad, mask = torch.randn(2, 4, channels), torch.ones(2, 4, dtype=torch.bool)
    with pytest.raises(ValueError, match="'mask' must be a boolean tensor of shape"):
        model(x_pad, mask=mask[:, :3])
    with pytest.raises(ValueError, match="'x' must be a padded batch"):
        model(x_pad[0], mask=mask)
    with pytest.raises(ValueError, match="'batch' must be None"):
        model(x_pad, torch.zeros(8, dtype=torch.long), mask=mask)
    with pytest.raises(ValueError, match="'dim_size'"):
        model(x_pad, dim_size=3, mask=mask)


def check_vmap_over_stacked_replicas(layers: list[torch.nn.Module], x: torch.Tensor,
                                     name: str) -> None:
    r"""The gradient of parameter :obj:`name` of the first of :obj:`layers`,
    computed under :func:`torch.func.vmap` over their stacked parameters (as
    :mod:`mzattn.stacked` trains replicas), equals plain autograd's."""
    params, _ = torch.func.stack_module_state(layers)

    def loss(p):
        return torch.func.functional_call(layers[0], p, (x,)).square().sum()

    grads = torch.func.vmap(torch.func.grad(loss))(params)
    expected = torch.autograd.grad(loss(dict(layers[0].named_parameters())),
                                   layers[0].get_parameter(name))[0]
    torch.testing.assert_close(grads[name][0], expected)
