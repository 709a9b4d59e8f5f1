import pytest
import torch
from torch.autograd import gradcheck
from torch.func import functional_call

import mzlayers.generator_path as generator_path
from mzlayers import MZISAB, MZPMA, MZSAB, Zonotope, set_recompute
from mzlayers.generator_path import GeneratorTail, budgeted_generators

N, H, G, C, L = 7, 2, 3, 2, 2
D, FF = H * C, 6


@pytest.fixture
def tiny_chunks(monkeypatch):
    r"""Chunks of one or two rows, so that every path crosses chunk borders."""
    monkeypatch.setitem(generator_path.CHUNK_ELEMENTS, 'cpu', 2 * G * FF)


def _double(*shape):
    return torch.randn(*shape, dtype=torch.float64, requires_grad=True)


def _budgeted_inputs(rows=N):
    return (_double(rows, H, 1 + G, C), torch.rand(rows, H, L, dtype=torch.float64)
            .mul(2).sub(1).requires_grad_(), _double(H, C, C), _double(H, L, C, C),
            _double(H, G, L), _double(D, D))


def _budgeted_reference(agg, gates, Mc, Ml, mix, weight):
    r"""Eq. (3) through :meth:`Zonotope.mz_product_budgeted` and plain autograd."""
    o = Zonotope(agg[:, :, 0], agg[:, :, 1:]).mz_product_budgeted(Mc, Ml, gates, mix)
    return torch.nn.functional.linear(o.generators.transpose(1, 2).flatten(-2), weight)


def _tail_inputs(rows=N, residual_rows=N, norms=True):
    def norm():  # 1 / sigma per row and the weight of a norm
        return (_double(rows, 1), _double(D)) if norms else (None, None)
    return (_double(residual_rows, G, D), *norm(), *norm(), _double(FF, D), _double(D, FF))


def _tail_reference(residual, update, rstd1, nw1, rstd2, nw2, w1, w2):
    def norm(x, rstd, weight):
        return x if rstd is None else \
            (x - x.mean(-1, keepdim=True)) * (weight * rstd).unsqueeze(-2)
    res = residual.repeat(update.size(0) // residual.size(0), 1, 1)
    h = norm(res + update, rstd1, nw1)
    f = h + torch.nn.functional.linear(torch.relu(torch.nn.functional.linear(h, w1)), w2)
    return norm(f, rstd2, nw2)


def _path(*inputs):
    r""":func:`budgeted_generators` with a tail, on the inputs of both."""
    return budgeted_generators(*inputs[:6], GeneratorTail(*inputs[6:]))


def _path_reference(*inputs):
    return _tail_reference(inputs[6], _budgeted_reference(*inputs[:6]), *inputs[7:])


def _path_inputs(rows=N, residual_rows=N, norms=True):
    return _budgeted_inputs(rows) + _tail_inputs(rows, residual_rows, norms)


def _assert_matches_reference(fn, reference, inputs):
    out = fn(*inputs)
    expected = reference(*inputs)
    torch.testing.assert_close(out, expected, atol=1e-12, rtol=0)
    grad = torch.randn_like(out)
    wanted = [t for t in inputs if t is not None and t.requires_grad]
    got = torch.autograd.grad(out, wanted, grad)
    ref = torch.autograd.grad(expected, wanted, grad)
    for a, b in zip(got, ref, strict=True):
        torch.testing.assert_close(a, b, atol=1e-12, rtol=0)


@pytest.mark.parametrize('rows', [N, 0])
def test_budgeted_generators_gradcheck(tiny_chunks, rows):
    assert gradcheck(budgeted_generators, _budgeted_inputs(rows))


def test_budgeted_generators_match_the_zonotope_product(tiny_chunks):
    _assert_matches_reference(budgeted_generators, _budgeted_reference, _budgeted_inputs())


@pytest.mark.parametrize('norms', [True, False])
@pytest.mark.parametrize('residual_rows', [N, 1])  # set elements / one learned query
def test_generator_path_with_tail_gradcheck(tiny_chunks, norms, residual_rows):
    assert gradcheck(_path, _path_inputs(N, residual_rows, norms))


def test_generator_path_with_tail_learned_queries_and_empty_batch(tiny_chunks):
    # 2 learned queries shared by 3 sets (rows set-major), and no rows at all
    assert gradcheck(_path, _path_inputs(6, 2))
    assert gradcheck(_path, _path_inputs(0, 2))


@pytest.mark.parametrize('residual_rows', [N, 1])
def test_generator_path_with_tail_matches_plain_autograd(tiny_chunks, residual_rows):
    _assert_matches_reference(_path, _path_reference, _path_inputs(N, residual_rows))


@pytest.mark.parametrize('chunks', ['one', 'several'])
def test_consumed_attention_output_holds_its_gradient(monkeypatch, chunks):
    # consume=True: the same values and gradients, and backward writes the
    # gradient of agg over agg (no second buffer of its size)
    if chunks == 'several':
        monkeypatch.setitem(generator_path.CHUNK_ELEMENTS, 'cpu', 2 * G * FF)
    inputs = _path_inputs(N, 1)
    results = []
    for consume in (False, True):
        agg = inputs[0] * 1  # a non-leaf, as an attention output is
        out = budgeted_generators(agg, *inputs[1:6], GeneratorTail(*inputs[6:]),
                                  consume=consume)
        grads = torch.autograd.grad(out, inputs, torch.ones_like(out), allow_unused=True)
        results.append((out, grads, agg))
    (out, grads, agg), (out_c, grads_c, agg_c) = results
    torch.testing.assert_close(out_c, out, atol=1e-12, rtol=0)
    for a, b in zip(grads_c, grads, strict=True):
        torch.testing.assert_close(a, b, atol=1e-12, rtol=0)
    torch.testing.assert_close(agg, inputs[0], atol=0, rtol=0)  # kept without consume
    torch.testing.assert_close(agg_c, grads[0], atol=0, rtol=0)  # its gradient now


def test_consumed_attention_output_survives_a_retained_graph(tiny_chunks):
    # a backward that keeps the graph leaves agg as it was: a second one
    # reads it again and gives the same gradients
    inputs = _path_inputs(N, N)
    agg = inputs[0] * 1
    out = budgeted_generators(agg, *inputs[1:6], GeneratorTail(*inputs[6:]), consume=True)
    first = torch.autograd.grad(out.sum(), inputs, retain_graph=True)
    torch.testing.assert_close(agg, inputs[0], atol=0, rtol=0)
    second = torch.autograd.grad(out.sum(), inputs)
    for a, b in zip(first, second, strict=True):
        torch.testing.assert_close(a, b, atol=0, rtol=0)


@pytest.mark.parametrize('dropout', [0.0, 0.3])
@pytest.mark.parametrize('backend', ['segment', 'dense'])
def test_blocks_match_plain_autograd(tiny_chunks, backend, dropout):
    # the whole MZ-ISAB in training mode (its attention recomputed in
    # backward, the generator path writing its gradient over the attention
    # output) against the generator path as plain autograd; with dropout,
    # the recomputation draws the forward's masks
    torch.manual_seed(0)
    block = MZISAB(D, 2, heads=H, num_generators=G, num_matrix_generators=L, ff_channels=FF,
                   dropout=dropout, backend=backend).double().train()
    x = Zonotope(torch.randn(5, D, dtype=torch.float64),
                 0.3 * torch.randn(5, G, D, dtype=torch.float64))
    batch = torch.tensor([0, 0, 2, 2, 2])
    results = []
    for custom in (True, False):
        block.zero_grad()
        torch.manual_seed(1)
        out = block(x, batch, 3) if custom else _plain(block, x, batch)
        (out.center.sin().sum() + out.generators.cos().sum()).backward()
        results.append([out.center, out.generators] + [p.grad for p in block.parameters()])
    for a, b in zip(*results, strict=True):
        torch.testing.assert_close(a, b, atol=1e-12, rtol=0)


@pytest.mark.parametrize('backend', ['segment', 'dense'])
def test_stored_activations_match_recomputation(backend):
    # recompute=False: the attention and the generator path as plain
    # autograd, their intermediates stored; the same values and gradients
    # (dropout's masks included), fewer operators, more memory
    from mzattn.bench.dispatch import count_ops
    from mzattn.bench.measure import peak_memory_dispatch
    torch.manual_seed(0)
    block = MZISAB(D, 4, heads=H, num_generators=G, num_matrix_generators=L, ff_channels=FF,
                   dropout=0.3, backend=backend).double().train()
    x = Zonotope(torch.randn(40, D, dtype=torch.float64),
                 0.3 * torch.randn(40, G, D, dtype=torch.float64))
    batch = torch.arange(4).repeat_interleave(10)

    def step():
        block.zero_grad()
        torch.manual_seed(1)
        out = block(x, batch, 4)
        (out.center.sin().sum() + out.generators.cos().sum()).backward()
        return [out.center, out.generators] + [p.grad for p in block.parameters()]

    results, ops, peaks = [], [], []
    for recompute in (True, False):
        set_recompute(block, recompute)
        results.append(step())
        with count_ops() as counted:
            step()
        ops.append(sum(counted.values()))
        peaks.append(peak_memory_dispatch(step))
    for a, b in zip(*results, strict=True):
        torch.testing.assert_close(a, b, atol=1e-12, rtol=0)
    assert ops[1] < ops[0] and peaks[1] > peaks[0], (ops, peaks)


_GENERATOR_PATH_PARAMETERS = ('matrix_', 'mix', 'lin_o.weight', 'lin_gate',
                              'ffn.generators', 'norm', 'induced', 'seeds')


@pytest.mark.parametrize('backend', ['segment', 'dense'])
@pytest.mark.parametrize('block', [MZSAB, MZISAB, MZPMA])
def test_blocks_gradcheck_with_an_empty_set(tiny_chunks, backend, block):
    torch.manual_seed(0)
    kw = dict(heads=H, num_generators=G, num_matrix_generators=L, ff_channels=FF,
              backend=backend)
    module = (block(D, 2, **kw) if block is not MZSAB else block(D, **kw)).double()
    sizes = torch.tensor([2, 0, 3])
    batch = torch.repeat_interleave(torch.arange(3), sizes)
    x = Zonotope(_double(5, D), 0.3 * _double(5, G, D).detach()).map(
        lambda t: t.detach().requires_grad_())
    # inputs and the parameters that the custom functions differentiate
    names = [n for n, _ in module.named_parameters() if any(
        key in n for key in _GENERATOR_PATH_PARAMETERS)]

    def fn(center, generators, *params):
        out = functional_call(module, dict(zip(names, params, strict=True)),
                              (Zonotope(center, generators), batch, 3))
        out = out[0] if isinstance(out, tuple) else out
        return out.center, out.generators
    params = [module.get_parameter(n).detach().requires_grad_() for n in names]
    assert gradcheck(fn, (x.center, x.generators, *params))


def test_matches_plain_autograd_under_autocast(tiny_chunks):
    torch.manual_seed(0)
    block = MZISAB(D, 2, heads=H, num_generators=G, num_matrix_generators=L, ff_channels=FF)
    x = torch.randn(5, D)
    batch = torch.tensor([0, 0, 2, 2, 2])
    grads = []
    for custom in (True, False):
        block.zero_grad()
        with torch.autocast('cpu', dtype=torch.bfloat16):
            out = block(x, batch, 3) if custom else _plain(block, x, batch)
        assert out.generators.dtype == torch.float32
        (out.center.float().square().sum() + out.generators.float().square().sum()).backward()
        grads.append([p.grad.clone() for p in block.parameters()])
    for a, b in zip(*grads, strict=True):
        torch.testing.assert_close(a, b, atol=5e-2, rtol=5e-2)


def _plain_path(*inputs, consume=False, recompute=True):
    out = _budgeted_reference(*inputs[:6])
    return out if inputs[6] is None else _tail_reference(inputs[6][0], out, *inputs[6][1:])


def _plain(block, x, batch):
    r""":obj:`block` with the custom functions swapped for plain autograd."""
    mp = pytest.MonkeyPatch()
    mp.setattr('mzlayers.mz_attention.budgeted_generators', _plain_path)
    try:
        return block(x, batch, 3)
    finally:
        mp.undo()


@pytest.mark.parametrize('residual_rows', [N, 1])
def test_generator_tail_matches_plain_autograd(residual_rows):
    def tail(update, *inputs):
        return generator_path.generator_tail(update, GeneratorTail(*inputs))

    def reference(update, residual, *norms_and_weights):
        return _tail_reference(residual, update, *norms_and_weights)
    _assert_matches_reference(tail, reference, (_double(N, G, D), *_tail_inputs(N, residual_rows)))


@pytest.mark.parametrize('hook', ['module', 'global'])
def test_attention_hooks_see_its_output_and_change_nothing(tiny_chunks, hook):
    # an MZ-MAB whose attention has hooks calls it as a module (the hooks
    # see its Zonotope output) and gives the fused path's values and gradients
    torch.manual_seed(0)
    block = MZISAB(D, 2, heads=H, num_generators=G, num_matrix_generators=L,
                   ff_channels=FF).double()
    x, batch = torch.randn(5, D, dtype=torch.float64), torch.tensor([0, 0, 2, 2, 2])
    results, seen = [], []
    for hooked in (False, True):
        block.zero_grad()
        handles = []
        if hooked and hook == 'module':
            handles = [block.mab1.attn.register_forward_hook(
                lambda mod, inp, out: seen.append(out))]
        elif hooked:
            handles = [torch.nn.modules.module.register_module_forward_hook(
                lambda mod, inp, out: seen.append(out)
                if isinstance(out, Zonotope) and mod is block.mab1.attn else None)]
        try:
            out = block(x, batch, 3)
        finally:
            for handle in handles:
                handle.remove()
        (out.center.sin().sum() + out.generators.cos().sum()).backward()
        results.append([out.center, out.generators] + [p.grad for p in block.parameters()])
    assert len(seen) == 1 and isinstance(seen[0], Zonotope)
    for a, b in zip(*results, strict=True):
        torch.testing.assert_close(a, b, atol=1e-12, rtol=0)
