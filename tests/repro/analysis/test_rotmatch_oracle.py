r"""Task F's target is decided by the inputs (Procrustes oracle), though
not by anything a model could read off without aligning the two clouds."""
import numpy as np
from mzattn.repro.analysis.rotmatch_oracle import oracle_scores, procrustes_chamfer


def test_procrustes_undoes_an_exact_rotation():
    rng = np.random.default_rng(0)
    A = rng.standard_normal((12, 5))
    rotation, _ = np.linalg.qr(rng.standard_normal((5, 5)))
    assert procrustes_chamfer(A, A @ rotation.T) < 1e-20


def test_the_oracle_explains_the_target_and_the_set_size_does_not():
    scores = oracle_scores(num_sets=600, d=8, seed=1)
    assert scores["procrustes_calibrated_r2"] > 0.5
    assert scores["mean_per_set_size_r2"] < 0.1
    assert scores["target_var"] < 1e-3
