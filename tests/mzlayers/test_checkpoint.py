import pytest
import torch

from mzlayers import MZISAB, MZMAB, MZPMA, MZSAB, MZSetTransformer, SetLayout, Zonotope
from mzlayers.checkpoint import set_chunks

from .helpers import ragged_batch

C, HEADS = 8, 2
MZ = dict(heads=HEADS, num_generators=3, num_matrix_generators=2)


def _blocks(rows):
    return {'mzsab': MZSAB(C, checkpoint_rows=rows, **MZ),
            'mzisab': MZISAB(C, 4, checkpoint_rows=rows, **MZ),
            'mzpma': MZPMA(C, 2, checkpoint_rows=rows, **MZ)}


def _loss_and_grads(block, x, batch, num_sets):
    x = x.clone().requires_grad_()
    out = block(x, batch, num_sets)
    out = out[0] if isinstance(out, tuple) else out
    loss = out.center.square().sum() + out.generators.sin().sum()
    loss.backward()
    grads = [x.grad] + [p.grad for p in block.parameters()]
    return torch.cat([out.center.flatten(), out.generators.flatten()]), grads


@pytest.mark.parametrize('name', ['mzsab', 'mzisab', 'mzpma'])
@pytest.mark.parametrize('rows', [1, 5, 1000])
def test_checkpointed_blocks_equal_stored_ones(name, rows):
    torch.manual_seed(0)
    plain = _blocks(None)[name].double()
    ckpt = _blocks(rows)[name].double()
    ckpt.load_state_dict(plain.state_dict())
    x, batch, num_sets = ragged_batch()
    out, grads = _loss_and_grads(plain, x, batch, num_sets)
    out_c, grads_c = _loss_and_grads(ckpt, x, batch, num_sets)
    assert (out - out_c).abs().max() < 1e-12
    for g, g_c in zip(grads, grads_c, strict=True):
        assert (g - g_c).abs().max() < 1e-12


def _saved_bytes(block, x, batch, num_sets) -> int:
    seen = {}

    def pack(t):
        seen.setdefault(t.untyped_storage().data_ptr(), t.untyped_storage().nbytes())
        return t
    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        block(x.requires_grad_(), batch, num_sets)
    return sum(seen.values())


def test_checkpointing_keeps_less_for_backward():
    torch.manual_seed(0)
    x, batch, num_sets = ragged_batch(sizes=(30,) * 16, channels=64, dtype=torch.float32)
    stored = _saved_bytes(MZISAB(64, 16, heads=4), x, batch, num_sets)
    recomputed = _saved_bytes(MZISAB(64, 16, heads=4, checkpoint_rows=64), x, batch, num_sets)
    assert recomputed < 0.5 * stored


def test_set_chunks_keep_sets_whole():
    assert set_chunks([3, 1, 0, 7, 2, 40], 5) == [(0, 3), (3, 4), (4, 5), (5, 6)]
    assert set_chunks([3, 1, 0, 7, 2, 40], 1000) == [(0, 6)]
    assert set_chunks([], 5) == []


def _used(block):
    return [p for name, p in block.named_parameters() if 'summary' not in name]


def test_dropout_replays_in_the_recomputation():
    torch.manual_seed(0)
    block = MZSAB(C, dropout=0.3, **MZ).double()
    x, batch, num_sets = ragged_batch()
    layout = SetLayout.from_batch(batch, x.size(0), num_sets, x.device)
    z = Zonotope(x, torch.randn(x.size(0), 3, C, dtype=x.dtype))
    block.checkpoint_rows = 10
    torch.manual_seed(1)
    out = block(z, layout=layout)
    out = torch.cat([out.center, out.generators.flatten(1)], dim=1)
    grads = torch.autograd.grad(out.sin().sum(), _used(block))
    torch.manual_seed(1)  # the same chunks in the same order, nothing recomputed
    parts = []
    for start, stop in set_chunks([2 * c for c in layout.counts], 10):
        sub, (lo, hi) = layout.subset(start, stop), layout.row_range(start, stop)
        c, G = block.block(x[lo:hi], z.generators[lo:hi], x[lo:hi], z.generators[lo:hi],
                           sub, sub)
        parts.append(torch.cat([c, G.flatten(1)], dim=1))
    ref = torch.cat(parts)
    ref_grads = torch.autograd.grad(ref.sin().sum(), _used(block))
    assert torch.equal(out, ref)
    for g, r in zip(grads, ref_grads, strict=True):
        assert torch.allclose(g, r, atol=1e-12)


def test_model_passes_checkpoint_rows_to_every_block():
    torch.manual_seed(0)
    model = MZSetTransformer(3, 2, channels=16, heads=2, ff_channels=32,
                             num_induced_points=4, checkpoint_rows=7)
    layers = [m for m in model.modules() if isinstance(m, MZMAB)]
    assert len(layers) == 6 and all(m.checkpoint_rows == 7 for m in layers)
    x, batch, num_sets = ragged_batch(channels=3, dtype=torch.float32)
    with torch.no_grad():  # inference: one call over all rows, no chunks
        pred, ihw = model.eval()(x, batch, num_sets)
    assert pred.shape == (num_sets, 2) and torch.isfinite(ihw).all()
    assert 'checkpoint_rows=7' in repr(model.encoder.pma.mab)


def test_bad_checkpoint_rows():
    with pytest.raises(ValueError, match="'checkpoint_rows' must be a positive"):
        MZSAB(C, checkpoint_rows=0, **MZ)
    with pytest.raises(ValueError, match="'rows' must be a positive"):
        set_chunks([1, 2], 0)
