"""Mamba + PMA and the sequence Transformers read the element order."""
import pytest
import torch
from mzattn.baselines import MambaPMA, MZSequenceTransformer, SequenceTransformer

from .helpers import ragged_batch


def test_mamba_pma_is_order_dependent_but_causal():
    model = MambaPMA(4, 1, channels=16, num_layers=1).eval()
    x, batch, B = ragged_batch(4, dtype=torch.float32)
    out = model(x, batch, dim_size=B)
    assert out.shape == (B, 1) and torch.isfinite(out).all()
    swapped = x.clone()
    swapped[[0, 1]] = x[[1, 0]]  # swap two elements of set 0
    moved = model(swapped, batch, dim_size=B)
    assert (out[0] - moved[0]).abs().max() > 1e-6
    assert torch.equal(out[1:], moved[1:])
    empty = model(torch.zeros(0, 4), torch.zeros(0, dtype=torch.long), dim_size=2)
    assert empty.shape == (2, 1) and torch.isfinite(empty).all()


def test_sequence_transformers_rejects_long_sets():
    model = SequenceTransformer(4, 1, max_length=5)
    x, batch, B = ragged_batch(4, dtype=torch.float32)
    with pytest.raises(ValueError, match="'max_length'"):
        model(x, batch, dim_size=B)


def test_mz_sequence_transformer_returns_ihw():
    model = MZSequenceTransformer(4, 2).double().eval()
    x, batch, B = ragged_batch(4)
    pred, ihw = model(x, batch, dim_size=B)
    assert pred.shape == (B, 2) and ihw.shape == (B, 64)
    assert (ihw >= 0).all() and ihw[2].abs().max() == 0  # empty set
    assert 'num_matrix_generators=4' in repr(model)
