"""FiLM is diagonal, HyperNet's update has the configured rank, LA-ST equals
its explicit quadratic form, MZ-GenQK sees the generators; the variants are
built through constructor arguments with the state_dict keys of old
checkpoints."""
from pathlib import Path

import mzattn.baselines
import pytest
import torch
from mzattn.baselines import (
    FiLMSetAttention,
    FiLMSetTransformer,
    GenQKAttention,
    HyperNetSetAttention,
    HyperNetSetTransformer,
    LinearSetAttention,
    MZGenQKSetTransformer,
)
from mzattn.baselines.linear_attention import feature_map

from mzlayers import MultiheadSetAttention, MZMultiheadAttention, SetLayout, Zonotope

from .helpers import ragged_batch


def layout_of(batch, num_sets):
    return SetLayout.from_batch(batch, batch.numel(), num_sets, batch.device)


def test_film_modulation_is_diagonal():
    attn = FiLMSetAttention(16, heads=4).double()
    y, batch, B = ragged_batch(16)
    layout = layout_of(batch, B)
    gamma, beta = attn.modulation(y, layout)
    mu = layout.mean(y)

    def modulated(v):  # the value map at the fixed context mu
        return gamma[0] * v + beta[0]

    jac = torch.autograd.functional.jacobian(modulated, torch.randn(16, dtype=y.dtype))
    off_diagonal = jac - torch.diag(torch.diagonal(jac))
    assert off_diagonal.abs().max() == 0
    assert (torch.diagonal(jac) - gamma[0]).abs().max() == 0
    # the modulation depends on the set mean only
    gamma2, _ = attn.modulation(y + 0 * mu[batch], layout)
    assert torch.equal(gamma, gamma2)
    v = attn.values(y, layout)
    assert torch.allclose(v, gamma[batch] * attn.lin_v(y) + beta[batch])


def test_film_model_builds_only_the_induced_attentions():
    model = FiLMSetTransformer(8, 1)
    swapped = [m for m in model.modules() if isinstance(m, FiLMSetAttention)]
    assert len(swapped) == 2
    assert all(isinstance(isab.mab1.attn, FiLMSetAttention) for isab in model.encoders)
    assert not isinstance(model.head.pma.mab.attn, FiLMSetAttention)
    assert repr(model.encoders[0].mab1).endswith(', attention=FiLMSetAttention)')
    assert 'attention=' not in repr(model.encoders[0].mab2)


@pytest.mark.parametrize('rank', [8, 16, 32, 64])
def test_hypernet_update_has_configured_rank(rank):
    attn = HyperNetSetAttention(64, heads=4, rank=rank).double()
    y, batch, B = ragged_batch(64)
    layout = layout_of(batch, B)
    update = attn.update(y, layout)  # [B, d, d]
    assert update.shape == (B, 64, 64)
    nonempty = layout.nonempty
    ranks = torch.linalg.matrix_rank(update[nonempty])
    assert (ranks == rank).all()
    # the forward pass applies W_V + U(mu) V without forming it
    expected = attn.lin_v(y) + (update[batch] @ y.unsqueeze(-1)).squeeze(-1)
    assert torch.allclose(attn.values(y, layout), expected, atol=1e-10)


def test_hypernet_rejects_bad_rank_and_repr():
    with pytest.raises(ValueError, match="'rank'"):
        HyperNetSetAttention(16, rank=0)
    model = HyperNetSetTransformer(8, 1, rank=16)
    assert sum(isinstance(m, HyperNetSetAttention) for m in model.modules()) == 4
    assert 'rank=16' in repr(model)


def quadratic_linear_attention(q, k, v):
    """Explicit form: A = phi(q) phi(k)^T, rows normalised, times values."""
    A = torch.einsum('ihd,jhd->hij', feature_map(q), feature_map(k))
    A = A / A.sum(-1, keepdim=True)
    return torch.einsum('hij,jhd->ihd', A, v)


def test_linear_attention_equals_quadratic_form():
    attn = LinearSetAttention(16, heads=4).double()
    x, batch, B = ragged_batch(16)
    layout = layout_of(batch, B)
    q = torch.randn(x.size(0), 4, 4, dtype=x.dtype)
    k, v = torch.randn_like(q), torch.randn_like(q)
    out = attn.attend(q.flatten(1), k.flatten(1), v.flatten(1), layout, layout)  # heads joined
    out = out.view_as(q)
    for b in range(B):
        idx = (batch == b).nonzero().view(-1)
        if idx.numel():
            ref = quadratic_linear_attention(q[idx], k[idx], v[idx])
            assert torch.allclose(out[idx], ref, atol=1e-12)
    # learned queries shared by every set; an empty set gives exactly zero
    seeds = torch.randn(3, 4, 4, dtype=x.dtype)
    out = attn.attend(seeds.flatten(1), k.flatten(1), v.flatten(1), layout, None)
    out = out.view(B, 3, 4, 4)
    assert out[2].abs().max() == 0
    idx = (batch == 3).nonzero().view(-1)
    assert torch.allclose(out[3], quadratic_linear_attention(seeds, k[idx], v[idx]),
                          atol=1e-12)


def test_genqk_adds_ihw_to_the_scores():
    attn = GenQKAttention(16, heads=4, num_generators=3, num_matrix_generators=2).double()
    plain = MZMultiheadAttention(16, heads=4, num_generators=3,
                                 num_matrix_generators=2).double()
    gen_terms = ('lin_q_gen', 'lin_k_gen')
    plain.load_state_dict({k: v for k, v in attn.state_dict().items()
                           if not k.startswith(gen_terms)})
    c, batch, B = ragged_batch(16)
    layout = layout_of(batch, B)
    z = Zonotope(c, 0.1 * torch.randn(c.size(0), 3, 16, dtype=c.dtype))
    assert not torch.allclose(attn(z, z, layout, layout).center,
                              plain(z, z, layout, layout).center)
    for lin in (attn.lin_q_gen, attn.lin_k_gen):  # no generator terms: MZ attention
        torch.nn.init.zeros_(lin.weight)
        torch.nn.init.zeros_(lin.bias)
    out, ref = attn(z, z, layout, layout), plain(z, z, layout, layout)
    assert torch.allclose(out.center, ref.center, atol=1e-12)
    assert torch.allclose(out.generators, ref.generators, atol=1e-12)
    model = MZGenQKSetTransformer(8, 1)
    assert sum(isinstance(m, GenQKAttention) for m in model.modules()) == 6
    assert repr(model.encoder.pma.mab).endswith(', attention=GenQKAttention)')


def test_value_path_models_keep_the_standard_scores():
    base = MultiheadSetAttention(16, heads=4).double()
    film = FiLMSetAttention(16, heads=4).double()
    film.load_state_dict({**base.state_dict(), **{
        f'lin_film.{k}': torch.zeros_like(p) for k, p in film.lin_film.state_dict().items()}})
    x, batch, B = ragged_batch(16)
    layout = layout_of(batch, B)
    assert torch.allclose(film(x, x, layout, layout), base(x, x, layout, layout),
                          atol=1e-12)


def test_genqk_queries_and_keys_add_the_projected_ihw():
    attn = GenQKAttention(16, heads=4, num_generators=3, num_matrix_generators=2).double()
    c, batch, B = ragged_batch(16)
    z = Zonotope(c, torch.randn(c.size(0), 3, 16, dtype=c.dtype))
    seeds = Zonotope(c[:2], torch.randn(2, 3, 16, dtype=c.dtype))
    q, k = attn.queries_keys(seeds, z)
    assert torch.equal(q, attn.lin_q(seeds.center) + attn.lin_q_gen(seeds.ihw()))
    assert torch.allclose(k, attn.lin_k(z.center) + attn.lin_k_gen(z.ihw()), atol=1e-12)


# One state_dict key per variant module: checkpoints written when these
# models were built by replacing block.attn must keep loading.
VARIANT_KEYS = {
    FiLMSetTransformer: ['encoders.1.mab1.attn.lin_film.weight'],
    HyperNetSetTransformer: ['encoders.0.mab1.attn.basis', 'encoders.1.mab2.attn.lin_hyper.bias'],
    MZGenQKSetTransformer: ['encoder.encoders.0.mab1.attn.lin_q_gen.weight',
                            'encoder.decoders.0.attn.lin_k_gen.bias'],
}


@pytest.mark.parametrize('cls', list(VARIANT_KEYS))
def test_variant_state_dict_keys_are_unchanged(cls):
    keys = cls(8, 1).state_dict().keys()
    assert all(key in keys for key in VARIANT_KEYS[cls])


def test_baselines_import_no_private_module():
    for path in sorted(Path(mzattn.baselines.__file__).parent.glob('*.py')):
        text = path.read_text()
        assert 'mzlayers._' not in text, path.name
        assert 'baselines._' not in text, path.name
