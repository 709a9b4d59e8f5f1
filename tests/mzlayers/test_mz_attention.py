import torch

from mzlayers import MZMAB, MZMultiheadAttention, SetLayout, Zonotope

from .helpers import ragged_batch


def _layout(batch, num_sets):
    return SetLayout.from_batch(batch, batch.numel(), num_sets, batch.device)


def test_centre_path_equals_torch_multihead_attention_at_init():
    d, H = 16, 4
    attn = MZMultiheadAttention(d, H, num_generators=3, num_matrix_generators=2).double()
    with torch.no_grad():
        attn.matrix_generators.zero_()
        for lin in (attn.lin_q, attn.lin_k, attn.lin_v, attn.lin_o):
            lin.bias.normal_()
    mha = torch.nn.MultiheadAttention(d, H, batch_first=True).double()
    with torch.no_grad():
        mha.in_proj_weight.copy_(torch.cat([attn.lin_q.weight, attn.lin_k.weight,
                                            attn.lin_v.weight]))
        mha.in_proj_bias.copy_(torch.cat([attn.lin_q.bias, attn.lin_k.bias,
                                          attn.lin_v.bias]))
        mha.out_proj.weight.copy_(attn.lin_o.weight)
        mha.out_proj.bias.copy_(attn.lin_o.bias)
    sizes = (4, 9, 1)
    x, batch, B = ragged_batch(sizes, channels=d)
    z = Zonotope(x, torch.randn(x.size(0), 3, d, dtype=torch.float64))
    layout = _layout(batch, B)
    out = attn(z, z, layout, layout)
    start = 0
    for n in sizes:
        xs = x[start:start + n].unsqueeze(0)
        ref, _ = mha(xs, xs, xs, need_weights=False)
        assert (out.center[start:start + n] - ref[0]).abs().max() < 1e-10
        start += n


def test_theorem_8a_construction_is_exact():
    r"""Uniform attention, M_c = I, M_1 = A, gate weight e_1, W_mix = e_1 and
    the signed readout c + g_1 compute (I + tanh(mu_1) A) mu exactly."""
    d, n_g = 5, 3
    attn = MZMultiheadAttention(d, heads=1, num_generators=n_g,
                                num_matrix_generators=1).double()
    A = torch.randn(d, d, dtype=torch.float64)
    eye = torch.eye(d, dtype=torch.float64)
    with torch.no_grad():
        for lin in (attn.lin_q, attn.lin_k, attn.lin_v, attn.lin_o):
            lin.bias.zero_()
        attn.lin_q.weight.zero_()  # uniform attention
        attn.lin_v.weight.copy_(eye)
        attn.lin_o.weight.copy_(eye)
        attn.matrix_center.copy_(eye[None])
        attn.matrix_generators.copy_(A[None, None])
        attn.lin_gate.weight.copy_(eye[:1])
        attn.lin_gate.bias.zero_()
        attn.mix.zero_()
        attn.mix[0, 0, 0] = 1.0
    x, batch, B = ragged_batch((6, 11, 2), channels=d)
    layout = _layout(batch, B)
    seed = torch.randn(1, d, dtype=torch.float64)
    out = attn(seed, x, layout)  # one pooled zonotope per set
    mu = layout.mean(x)
    target = mu + torch.tanh(mu[:, :1]) * (mu @ A.T)
    assert torch.allclose(out.center + out.signed(), target, atol=1e-12)
    assert torch.allclose(out.generators[:, 1:], torch.zeros_like(out.generators[:, 1:]))


def test_gradcheck_small_mzmab():
    block = MZMAB(4, heads=2, num_generators=2, num_matrix_generators=2,
                  ff_channels=6).double()
    x, batch, B = ragged_batch((3, 2), channels=4)
    layout = _layout(batch, B)
    g = (0.1 * torch.randn(x.size(0), 2, 4, dtype=torch.float64)).requires_grad_()
    x.requires_grad_()

    def fn(c, gens):
        out = block(Zonotope(c, gens), Zonotope(c, gens), layout, layout)
        return out.center, out.generators

    assert torch.autograd.gradcheck(fn, (x, g), eps=1e-6, atol=1e-5)


def test_gates_follow_the_set_summary():
    attn = MZMultiheadAttention(8, heads=2, num_generators=2, num_matrix_generators=3,
                                summary='moment')
    x, batch, B = ragged_batch((2, 5), channels=8, dtype=torch.float32)
    gamma = attn.gates(Zonotope.from_tensor(x, 2), _layout(batch, B))
    assert gamma.shape == (B, 2, 3)
    assert gamma.abs().max() <= 1
    assert repr(attn) == ('MZMultiheadAttention(8, heads=2, num_generators=2, '
                          'num_matrix_generators=3, summary=moment, backend=auto)')


def test_dropout_acts_on_the_centre_ffn_only():
    from mzlayers.mz_blocks import ZonotopeFeedForward
    ffn = ZonotopeFeedForward(8, 16, dropout=0.5).train()
    z = Zonotope(torch.randn(20, 8), torch.randn(20, 3, 8))
    first, second = ffn(z), ffn(z)
    assert not torch.equal(first.center, second.center)  # centre FFN: random masks
    assert torch.equal(first.generators, second.generators)  # generator FFN: none
    assert torch.equal(first.generators, ffn.eval()(z).generators)
