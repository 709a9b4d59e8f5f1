import os
import signal
import subprocess
import sys
import time

import numpy as np
import pytest
from mzattn.datasets.synthetic import generation, geometry, statistics
from mzattn.datasets.synthetic.generation import generate_chunk, generate_split
from mzattn.datasets.synthetic.tasks import ALIASES, SWEEPS, TASKS, canonical_name, get_config

from tests.processes import alive, children, needs_proc


def _samples(name, count=12, split="train", seed=0, **overrides):
    """float64 sets straight from the generator (the stored ones are float32)."""
    config = get_config(name, **overrides)
    shared = generation.shared_state(name, config, seed)
    return config.sample_many(np.random.default_rng(seed), split, shared, count)


@pytest.mark.parametrize("name", sorted(TASKS))
def test_every_task_draws_valid_sets(name):
    config = TASKS[name]
    for sample in _samples(name):
        n, F = sample.x.shape
        assert n >= 1 and F == config.num_features
        assert sample.y.shape == (config.target_dim,)
        assert np.isfinite(sample.x).all() and np.isfinite(sample.y).all()
        if hasattr(config, "n_min") and name not in ("task_b", "task_f", "mahalanobis"):
            assert config.n_min <= n <= config.n_max


@pytest.mark.parametrize("name", ["task_g", "meb", "hull", "sgsp_diameter",
                                  "sgsp_knn_radius", "sgsp_k_smallest_sum",
                                  "sgsp_furthest_first"])
def test_point_cloud_targets_recompute_from_the_set(name):
    config = TASKS[name]
    for sample in _samples(name, 5):
        assert config.with_target(sample.x).y == pytest.approx(sample.y, rel=1e-12)


def test_task_a_and_reductions_recompute_from_the_set():
    for name, reduction in [("task_a", "sum_of_dimension_maxima"), ("set_sum", "sum"),
                            ("set_median", "median")]:
        for sample in _samples(name, 5):
            assert sample.y[0] == pytest.approx(statistics.set_reduction(sample.x, reduction))


def test_statistics_targets_recompute_from_the_set():
    for s in _samples("mahalanobis", 5):
        assert s.x[:, -1].tolist() == [0.0] * (len(s.x) - 1) + [1.0]
        expected = statistics.mahalanobis_distance(s.x[:-1, :-1], s.x[-1, :-1], ridge=1e-2)
        assert s.y[0] == pytest.approx(expected)
    for s in _samples("pca_reconstruction", 5):
        assert s.y[0] == pytest.approx(statistics.pca_reconstruction_error(s.x, 4))


def test_task_b_pairs_and_indicator():
    samples = _samples("task_b", 40)
    for s in samples:
        flag = s.x[:, 3]
        A, B = s.x[flag == 0, :3], s.x[flag == 1, :3]
        assert set(np.unique(flag)) == {0.0, 1.0}
        assert 10 <= len(A) <= 30 and 10 <= len(B) <= 30
        assert s.y[0] == pytest.approx(geometry.chamfer_distance(A, B))
    # Noise-free copies at angle zero have target zero.
    zero = _samples("task_b", 20, noise=0.0, max_angle=0.0, copy_prob=1.0)
    assert max(s.y[0] for s in zero) == pytest.approx(0.0, abs=1e-24)


def test_task_b_larger_test_sets():
    for s in _samples("task_b", 10, split="test", test_n_min=80, test_n_max=120):
        assert 160 <= len(s.x) <= 240


@pytest.mark.parametrize("d", [2, 8, 33])
def test_task_f_noise_free_pairs_have_zero_target(d):
    for s in _samples("task_f", 40, d=d, noise=0.0):
        assert s.y[0] == pytest.approx(0.0, abs=1e-18)
        A, B = s.x[s.x[:, -1] == 0, :-1], s.x[s.x[:, -1] == 1, :-1]
        # B is a rotation of A: same Gram matrix.
        np.testing.assert_allclose(A @ A.T, B @ B.T, atol=1e-9)


def test_task_d_fraction_and_support():
    config = TASKS["task_d"]
    for s in _samples("task_d", 30):
        assert s.x.shape == (25, 9)
        assert s.x[:, -1].tolist() == [1.0] * 5 + [0.0] * 20
        assert 0.0 <= s.y[0] <= 1.0 and (s.y[0] * config.num_query) % 1 == 0


def test_meta_regression_support_pairs_share_one_operator():
    for s in _samples("meta_regression", 5, L=4):
        X, Y = s.x[:30, :8], s.x[:30, 8:16]
        A = np.linalg.lstsq(X, Y, rcond=None)[0].T
        np.testing.assert_allclose(A @ s.x[30, :8], s.y, atol=1e-9)
        assert s.x[30, 8:].tolist() == [0.0] * 8 + [1.0]


def test_quadratic_tdof_sequence_version_depends_on_order():
    from mzattn.datasets.synthetic.tdof import position_weights, quadratic_tdof

    config = get_config("quadratic_tdof_seq", L=8)
    M, w = generation.shared_state("quadratic_tdof_seq", config, 0)
    s = _samples("quadratic_tdof_seq", 1, L=8)[0]
    assert s.y[0] == pytest.approx(quadratic_tdof(position_weights(len(s.x)) @ s.x, M, w))
    reordered = quadratic_tdof(position_weights(len(s.x)) @ s.x[::-1], M, w)
    assert reordered != pytest.approx(s.y[0])


def test_chunks_are_float32_with_float64_targets():
    config = get_config("meb")
    chunk = generate_chunk("meb", config, 0, "train", 0, 3)
    assert all(s.x.dtype == np.float32 and s.y.dtype == np.float64 for s in chunk)
    shared = generation.shared_state("meb", config, 0)
    seq = np.random.SeedSequence(0, spawn_key=(generation._task_code("meb"), 1, 0))
    exact = config.sample_many(np.random.default_rng(seq), "train", shared, 3)
    for stored, sample in zip(chunk, exact, strict=True):
        np.testing.assert_array_equal(stored.x, sample.x.astype(np.float32))
        assert stored.y == sample.y


def test_shared_state_is_split_independent_but_seed_dependent():
    config = TASKS["meta_regression"]
    a = generation.shared_state("meta_regression", config, 0)
    np.testing.assert_array_equal(a, generation.shared_state("meta_regression", config, 0))
    assert not np.allclose(a, generation.shared_state("meta_regression", config, 1))


def test_generation_is_deterministic_and_splits_are_disjoint():
    config = get_config("task_g", num_train=30, num_val=30)
    first = generate_split("task_g", config, 3, "train", workers=1)
    again = generate_split("task_g", config, 3, "train", workers=1)
    assert all(np.array_equal(a.x, b.x) for a, b in zip(first, again, strict=True))
    val = generate_split("task_g", config, 3, "val", workers=1)
    train_rows = {row.tobytes() for s in first for row in s.x}
    assert not any(row.tobytes() in train_rows for s in val for row in s.x)
    other_seed = generate_split("task_g", config, 4, "train", workers=1)
    assert not np.array_equal(first[0].x, other_seed[0].x)


def test_parallel_generation_equals_serial(monkeypatch):
    monkeypatch.setattr(generation, "CHUNK_SIZE", 7)
    monkeypatch.setattr(generation, "PARALLEL_MIN_SECONDS", 0.0)
    config = get_config("meb", num_train=30)
    serial = generate_split("meb", config, 0, "train", workers=1)
    parallel = generate_split("meb", config, 0, "train", workers=2)
    assert len(parallel) == 30
    assert all(np.array_equal(a.x, b.x) and np.array_equal(a.y, b.y)
               for a, b in zip(serial, parallel, strict=True))


GENERATES = """
import signal, sys
from mzattn.datasets.synthetic import generation
from mzattn.datasets.synthetic.tasks import get_config
generation.PARALLEL_MIN_SECONDS = 0.0
signal.signal(signal.SIGTERM, lambda signum, frame: sys.exit(128 + signum))
print("start", flush=True)
generation.generate_split("meb", get_config("meb", num_train=40_000), 0, "train", workers=2)
"""


def _generating():
    # a process generating a split on two workers, in its own process group, and its workers
    proc = subprocess.Popen([sys.executable, "-c", GENERATES], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, start_new_session=True)
    assert proc.stdout.readline().strip() == "start"
    deadline = time.monotonic() + 60
    while len(children(proc.pid)) < 2:
        assert proc.poll() is None and time.monotonic() < deadline, proc.communicate()
        time.sleep(0.1)
    return proc, children(proc.pid)


@needs_proc
def test_sigterm_to_the_process_group_stops_parallel_generation_cleanly():
    # Python 3.11's pool broke (its workers died of the signal), printed InvalidStateError
    # tracebacks and hung at exit
    proc, workers = _generating()
    os.killpg(proc.pid, signal.SIGTERM)  # as a scheduler or a terminal signals a job
    _, stderr = proc.communicate(timeout=60)
    assert proc.returncode == 143 and "Traceback" not in stderr, stderr
    assert not any(map(alive, workers))


@needs_proc
def test_generation_workers_end_with_a_killed_parent():
    proc, workers = _generating()
    proc.kill()
    proc.communicate(timeout=60)
    deadline = time.monotonic() + 5
    while any(map(alive, workers)) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not any(map(alive, workers))


def test_alias_and_sweeps():
    assert canonical_name("mst") == "task_g" and ALIASES["mst"] == "task_g"
    for name, sweep in SWEEPS.items():
        for field, values in sweep.items():
            for value in values:
                get_config(name, **{field: value})  # every swept value is valid


def test_paper_split_sizes():
    sizes = {name: (c.num_train, c.num_val, c.num_test) for name, c in TASKS.items()}
    assert sizes["task_a"] == (10000, 2000, 2000)
    assert sizes["task_b"] == (5000, 1000, 1000)
    assert sizes["task_d"] == (8000, 1500, 1500)
    assert sizes["task_f"] == sizes["task_g"] == (5000, 1000, 2000)


@pytest.mark.parametrize("name,overrides,match", [
    ("task_a", {"n_min": 50, "n_max": 20}, "'n_min' \\(50\\) must be <= 'n_max' \\(20\\)"),
    ("meb", {"d": 0}, "'d' must be >= 1"),
    ("task_f", {"d": 1}, "'d' must be >= 2"),
    ("hull", {"d": 9, "n_min": 9}, "'n_min' must be >= 10"),
    ("hull", {"test_n_min": 3}, "'n_min' must be >= 4"),
    ("sgsp_knn_radius", {"k": 10}, "'k' must be <= 9"),
    ("sgsp_furthest_first", {"k": 11}, "'k' must be <= 10"),
    ("quadratic_tdof", {"L": 33}, "'L' must be <= 32"),
    ("pca_reconstruction", {"k": 16}, "'k' must be <= 15"),
    ("task_b", {"copy_prob": 1.5}, "'copy_prob'"),
    ("task_d", {"noise_min": 2.0}, "'noise_min'"),
    ("task_a", {"num_train": 0}, "'num_train' must be >= 1"),
    ("task_a", {"n_min": 0}, "'n_min' must be >= 1"),
    ("task_a", {"bogus": 1}, "unknown parameter 'bogus'"),
    ("set_max", {"target": "sum"}, "'target' is fixed"),
])
def test_impossible_parameters_raise(name, overrides, match):
    with pytest.raises(ValueError, match=match):
        get_config(name, **overrides)


def test_unknown_task_raises():
    with pytest.raises(ValueError, match="unknown task 'task_z'"):
        get_config("task_z")


@pytest.mark.parametrize("reduction", ["entries", "per-dim-sum", "per-element-sum"])
def test_reduction_readings_recompute_from_the_set(reduction):
    for name, target in [("set_max", "max"), ("set_range", "range")]:
        for s in _samples(name, 4, d=3, reduction=reduction):
            axis = {"entries": None, "per-dim-sum": 0, "per-element-sum": 1}[reduction]
            expected = (s.x.max(axis) - (s.x.min(axis) if target == "range" else 0)).sum()
            assert s.y[0] == pytest.approx(expected, rel=1e-12)


def test_task_b_summed_chamfer_reading():
    for mean, total in zip(_samples("task_b", 6), _samples("task_b", 6, chamfer_reduction="sum"),
                           strict=True):
        np.testing.assert_array_equal(mean.x, total.x)  # same sets, another target
        A, B = total.x[total.x[:, 3] == 0, :3], total.x[total.x[:, 3] == 1, :3]
        D = ((A[:, None] - B[None]) ** 2).sum(-1)
        assert total.y[0] == pytest.approx(D.min(1).sum() + D.min(0).sum(), rel=1e-12)


@pytest.mark.parametrize("reduction", ["mean", "sum"])
def test_task_f_unaligned_reading_is_the_chamfer_of_the_given_clouds(reduction):
    aligned = _samples("task_f", 4, d=4, chamfer_reduction=reduction)
    unaligned = _samples("task_f", 4, d=4, chamfer="unaligned", chamfer_reduction=reduction)
    for a, u in zip(aligned, unaligned, strict=True):
        np.testing.assert_array_equal(a.x, u.x)
        A, B = u.x[u.x[:, -1] == 0, :-1], u.x[u.x[:, -1] == 1, :-1]
        D = ((A[:, None] - B[None]) ** 2).sum(-1)
        reduce = np.mean if reduction == "mean" else np.sum
        assert u.y[0] == pytest.approx(reduce(D.min(1)) + reduce(D.min(0)), rel=1e-12)
        assert u.y[0] > a.y[0]  # the rotation is not undone
    # noise-free: aligned is exactly zero whatever the reduction, unaligned is not
    assert _samples("task_f", 1, d=4, noise=0.0, chamfer_reduction=reduction)[0].y[0] == \
        pytest.approx(0.0, abs=1e-18)


def test_reading_options_keep_old_cache_keys_at_their_default():
    for name, field, other in [("set_max", "reduction", "per-dim-sum"),
                               ("task_b", "chamfer_reduction", "sum"),
                               ("task_f", "chamfer", "unaligned"),
                               ("meb", "unit_sets", True)]:
        assert field not in get_config(name).cache_fields("train")
        assert get_config(name, **{field: other}).cache_fields("train")[field] == other


@pytest.mark.parametrize(("name", "overrides", "match"), [
    ("set_max", {"reduction": "per-row"}, "'reduction' must be one of"),
    ("task_a", {"reduction": "per-dim-sum"}, "'reduction' must be 'entries'"),
    ("task_b", {"chamfer_reduction": "max"}, "'chamfer_reduction' must be one of"),
    ("task_f", {"chamfer": "rotated"}, "'chamfer' must be one of"),
])
def test_bad_reading_options_raise(name, overrides, match):
    with pytest.raises(ValueError, match=match):
        get_config(name, **overrides)
