import pytest
import torch

from mzlayers import PoolingHead, SetLayout

from .helpers import ragged_batch

C, K, EMPTY = 8, 2, 2  # ragged_batch's set 2 is empty


def _layout(batch, num_sets):
    return SetLayout.from_batch(batch, batch.numel(), num_sets, batch.device)


@pytest.mark.parametrize('pooling', ['pma', 'mean'])
def test_shape_and_finite_empty_set_forward_backward(pooling):
    head = PoolingHead(C, 3, num_seed_points=K, num_decoder_blocks=2, pooling=pooling,
                       heads=2).double()
    h, batch, B = ragged_batch(channels=C)
    h.requires_grad_()
    layout = _layout(batch, B)
    out = head(h, layout)
    assert out.shape == (B, 3)
    assert head.mlp.channel_list[0] == (K if pooling == 'pma' else 1) * C
    assert torch.isfinite(out).all()
    out.sum().backward()
    assert torch.isfinite(h.grad).all()
    pooled = head.pool(h, layout, layout).view(B, -1, C)
    assert torch.equal(pooled[EMPTY], torch.zeros_like(pooled[EMPTY]))
    assert pooled[1].abs().amax() > 0


def test_mean_pooling_is_the_mlp_of_the_set_mean():
    head = PoolingHead(C, 3, pooling='mean').double().eval()
    h, batch, B = ragged_batch(channels=C)
    layout = _layout(batch, B)
    assert len(head.decoders) == 0 and head.pma is None
    assert torch.allclose(head(h, layout), head.mlp(layout.mean(h)), atol=1e-12)


def test_latent_rows_of_an_empty_set_pool_to_zero():
    head = PoolingHead(C, 3, num_seed_points=K, heads=2).double().eval()
    _, batch, B = ragged_batch(channels=C)
    layout, m = _layout(batch, B), 4
    latents = torch.randn(B * m, C, dtype=torch.float64)  # m rows for every set
    key_layout = layout.pooled(m)
    pooled = head.pool(latents, layout, key_layout).view(B, K, C)
    unmasked = head.pma(latents, layout=key_layout)[0].view(B, K, C)
    assert unmasked[EMPTY].abs().amax() > 0  # PMA alone sees m latents ...
    assert torch.equal(pooled[EMPTY], torch.zeros(K, C, dtype=torch.float64))  # ... masked
    keep = torch.arange(B) != EMPTY
    assert torch.equal(pooled[keep], unmasked[keep])
    assert torch.isfinite(head(latents, layout, key_layout=key_layout)).all()


def test_reset_parameters_redraws_every_child():
    head = PoolingHead(C, 3, num_seed_points=K, heads=2)
    children = (head.pma.seeds, head.decoders[0].attn.lin_q.weight, head.mlp.lins[0].weight)
    before = [p.detach().clone() for p in children]
    head.reset_parameters()
    assert all(not torch.equal(old, new) for old, new in zip(before, children, strict=True))


def test_repr_and_bad_pooling():
    head = PoolingHead(C, 3, num_seed_points=K)
    assert repr(head) == 'PoolingHead(8, 3, num_seed_points=2, decoders=1, pooling=pma)'
    assert repr(PoolingHead(C, 3, num_seed_points=K, pooling='mean')) == \
        'PoolingHead(8, 3, num_seed_points=1, decoders=0, pooling=mean)'
    with pytest.raises(ValueError, match="'pooling'"):
        PoolingHead(C, 3, pooling='max')
