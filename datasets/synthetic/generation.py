r"""Deterministic, optionally parallel generation of a task split.

A split is generated in chunks of :obj:`CHUNK_SIZE` sets. Chunk :math:`c`
of split :math:`s` of task :math:`t` draws from
:obj:`SeedSequence(seed, spawn_key=(crc32(t), 1 + s, c))`, and the state
shared by all splits (fixed target matrices) from
:obj:`SeedSequence(seed, spawn_key=(crc32(t),))`. So the sets depend only on
(task, configuration, seed, split), never on the number of worker processes,
and different splits draw from independent streams.

Slow targets are spread over worker processes: the first chunk is timed,
and if the rest would take longer than :obj:`PARALLEL_MIN_SECONDS`, the
remaining chunks go to a :class:`~concurrent.futures.ProcessPoolExecutor`
with :func:`default_workers` processes. The workers run NumPy/SciPy code
only, so they are forked where the platform allows it (like PyTorch's
:class:`~torch.utils.data.DataLoader`), which also works from scripts
without a ``__main__`` guard.

The workers ignore SIGTERM and SIGINT (a stop is the parent's to decide: it
stops after the chunks in progress, whatever signal reached the process
group) and are killed when their parent ends
(:func:`mzattn.lifetime.die_with_parent`), so that none is left computing
when the parent is killed.
"""
import functools
import multiprocessing
import os
import signal
import time
import warnings
import zlib
from collections.abc import Iterable
from concurrent.futures import ProcessPoolExecutor
from typing import Any

import numpy as np

from mzattn.lifetime import blocked_signals, die_with_parent

from ._validate import check_int
from .tasks import SPLITS, Sample, TaskConfig

CHUNK_SIZE = 250
PARALLEL_MIN_SECONDS = 2.0
MAX_WORKERS = 2


def default_workers() -> int:
    r"""Worker processes for slow generation: the environment variable
    :obj:`MZATTN_DATA_WORKERS` if set, else :obj:`min(MAX_WORKERS,
    os.cpu_count())`."""
    value = os.environ.get("MZATTN_DATA_WORKERS")
    if value is not None:
        return check_int("MZATTN_DATA_WORKERS", int(value), minimum=1)
    return max(1, min(MAX_WORKERS, os.cpu_count() or 1))


def _task_code(name: str) -> int:
    return zlib.crc32(name.encode())


@functools.lru_cache(maxsize=8)
def shared_state(name: str, config: TaskConfig, seed: int) -> Any:
    r"""The split-independent state of task :obj:`name` for :obj:`seed`
    (cached per process: every chunk of a split needs it)."""
    seq = np.random.SeedSequence(seed, spawn_key=(_task_code(name),))
    return config.shared(np.random.default_rng(seq))


def generate_chunk(name: str, config: TaskConfig, seed: int, split: str,
                   index: int, count: int) -> list[Sample]:
    r"""Generates chunk :obj:`index` (:obj:`count` sets) of a split.

    Targets are computed in float64; the sets are returned as float32 (the
    storage type), which halves the memory of large splits."""
    seq = np.random.SeedSequence(
        seed, spawn_key=(_task_code(name), 1 + SPLITS.index(split), index))
    shared = shared_state(name, config, seed)
    samples = config.sample_many(np.random.default_rng(seq), split, shared, count)
    return [s._replace(x=s.x.astype(np.float32)) for s in samples]


def _in_workers(chunks: Iterable[tuple], workers: int) -> list[list[Sample]]:
    # generate_chunk(*chunk) for every chunk on forked workers (module docstring). They are
    # forked with SIGTERM and SIGINT blocked, so that none runs a handler of this process; a
    # signal to this process meanwhile is delivered once they are started.
    pool = None
    try:
        with warnings.catch_warnings(), blocked_signals(signal.SIGTERM, signal.SIGINT):
            warnings.simplefilter("ignore", DeprecationWarning)  # Python >= 3.12: fork, threads
            pool = ProcessPoolExecutor(workers, mp_context=_pool_context(),
                                       initializer=_start_worker, initargs=(os.getpid(),))
            futures = [pool.submit(generate_chunk, *chunk) for chunk in chunks]
        return [future.result() for future in futures]
    finally:
        if pool is not None:  # after a stop: once the chunks in progress end
            pool.shutdown(cancel_futures=True)


def _start_worker(parent: int) -> None:
    # the initializer of a generation worker (module docstring)
    for signum in (signal.SIGTERM, signal.SIGINT):
        signal.signal(signum, signal.SIG_IGN)
    die_with_parent(parent, signal.SIGKILL)


def _pool_context():
    methods = multiprocessing.get_all_start_methods()
    return multiprocessing.get_context("fork" if "fork" in methods else "spawn")


def generate_split(name: str, config: TaskConfig, seed: int, split: str, *,
                   workers: int | None = None) -> list[Sample]:
    r"""Generates all sets of :obj:`split`.

    Args:
        name (str): Canonical task name (part of the random stream).
        config (TaskConfig): Task configuration.
        seed (int): Non-negative base seed.
        split (str): :obj:`"train"`, :obj:`"val"` or :obj:`"test"`.
        workers (int, optional): Worker processes; :obj:`None` for
            :func:`default_workers`. (default: :obj:`None`)

    Returns:
        list[Sample]: :obj:`config.num_samples(split)` sets, in order.
    """
    check_int("seed", seed, minimum=0)
    total = config.num_samples(split)
    sizes = [min(CHUNK_SIZE, total - start) for start in range(0, total, CHUNK_SIZE)]
    workers = default_workers() if workers is None else check_int("workers", workers, minimum=1)
    start = time.perf_counter()
    samples = generate_chunk(name, config, seed, split, 0, sizes[0])
    rest = (time.perf_counter() - start) * (len(sizes) - 1)
    args = [(name, config, seed, split, index, size) for index, size in enumerate(sizes[1:], 1)]
    if workers > 1 and len(sizes) > 2 and rest > PARALLEL_MIN_SECONDS:
        chunks = _in_workers(args, workers)
    else:
        chunks = [generate_chunk(*chunk) for chunk in args]
    for chunk in chunks:
        samples.extend(chunk)
    return samples
