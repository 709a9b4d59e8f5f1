r"""Cost estimates of runs, so that a parallel sweep starts the costliest
first (longest-processing-time-first scheduling).

With :obj:`--jobs N` the sweep ends when its last cell ends. Started in
the tables' order, the slowest cells (MZ-Full, the deep models) often start
last and then run alone while the other workers idle. :func:`by_cost`
orders the runs by :func:`training_cost`: the seconds of one training step
of the run's model, timed here on a probe batch of sets drawn from its
task, times the steps of its epoch cap. Early stopping
ends most runs sooner, so this is a ranking, not a forecast of wall time.

A run whose cost cannot be estimated without loading its data (a real
dataset) has none; :func:`by_cost` starts those first, in their given
order, since they may be the longest.
"""
import json
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any, TypeVar

import numpy as np
import torch
from torch.nn.utils.rnn import pad_sequence

PROBE_SETS = 16
r"""Sets in the probe batch that times one training step."""

PROBE_STEPS = 3
r"""Timed steps after one warm-up step; the fastest counts (one alone varied by up to 2x
between probes of one cell on a loaded machine)."""

R = TypeVar("R")

_STEPS: dict[str, float] = {}  # step_seconds by its arguments, once per process


def by_cost(runs: Sequence[R]) -> list[R]:
    r""":obj:`runs` with those without a cost estimate first (in their
    order), then the others by decreasing :obj:`run.cost()` (ties in their
    order)."""
    costs = [run.cost() for run in runs]
    unknown = [run for run, cost in zip(runs, costs, strict=True) if cost is None]
    known = sorted((i for i, cost in enumerate(costs) if cost is not None),
                   key=lambda i: -costs[i])  # a stable sort: ties keep their order
    return unknown + [runs[i] for i in known]


def training_cost(*, model: str, overrides: dict[str, Any], task: str,
                  task_overrides: dict[str, Any], max_epochs: int,
                  store_activations: bool = False, batching: str = "masked") -> float | None:
    r"""Estimated seconds to train registry model :obj:`model` (with
    constructor :obj:`overrides`; its MZ attention storing its activations
    with :obj:`store_activations`) on synthetic task :obj:`task` (with
    :obj:`task_overrides`), its sets batched as :obj:`batching` says, for
    :obj:`max_epochs` epochs: :func:`step_seconds` on :obj:`PROBE_SETS`
    sets of the task, scaled to the training split.
    :obj:`None` for a task that is not synthetic or a configuration that
    does not resolve (the run reports its own error)."""
    from mzattn.datasets.synthetic.tasks import get_config
    try:
        config = get_config(task, **task_overrides)
    except ValueError:  # a real dataset, or options only its provider knows
        return None
    sets = {f"num_{split}": None for split in ("train", "val", "test")}
    key = json.dumps([model, overrides, task, task_overrides | sets, store_activations, batching],
                     sort_keys=True, default=repr)  # the split sizes change the scale only
    if key not in _STEPS:
        x, batch = probe_batch(config, padded=batching != "masked")
        _STEPS[key] = step_seconds(model, overrides, x, batch, config.target_dim,
                                   store_activations=store_activations)
    return max_epochs * config.num_samples("train") / PROBE_SETS * _STEPS[key]


def probe_batch(config: Any, num_sets: int = PROBE_SETS, *,
                padded: bool = False) -> tuple[torch.Tensor, torch.Tensor]:
    r"""The first :obj:`num_sets` training sets that :obj:`config` (a
    :class:`~mzattn.datasets.synthetic.tasks.TaskConfig`) draws with seed
    0, as :obj:`(x [N, F], batch [N])`; with :obj:`padded`, each set
    zero-padded to the largest of them, as padded batching gives a model
    its batch (:mod:`mzattn.datasets.padding`; the run's batches, of more
    sets, pad to about the task's largest size)."""
    rng = np.random.default_rng(0)
    samples = config.sample_many(rng, "train", config.shared(rng), num_sets)
    sets = [torch.as_tensor(sample.x, dtype=torch.float32) for sample in samples]
    if padded:
        x = pad_sequence(sets, batch_first=True)  # [num_sets, largest, F]
        return x.flatten(0, 1), torch.arange(len(sets)).repeat_interleave(x.size(1))
    sizes = torch.tensor([len(x) for x in sets])
    return torch.cat(sets), torch.arange(len(sets)).repeat_interleave(sizes)


def step_seconds(model: str, overrides: dict[str, Any], x: torch.Tensor, batch: torch.Tensor,
                 out_channels: int, store_activations: bool = False) -> float:
    r"""Seconds of one core for one training step (forward, backward, no
    optimiser) of registry model :obj:`model`, built with constructor
    :obj:`overrides` (its MZ attention storing its activations with
    :obj:`store_activations`), on the sets :obj:`x [N, F]` with set index
    :obj:`batch [N]`, on one torch thread: the fastest of
    :obj:`PROBE_STEPS` after a warm-up. The clock is the thread's CPU time,
    so that the estimate holds on a loaded machine: wall time would count
    the time the step waits for a busy core (4-5 times the step beside
    three busy processes on two cores)."""
    from mzattn.baselines import build_model
    from mzattn.baselines.uncertainty import prediction

    from mzlayers import set_recompute
    times = []
    # the caller's random state and threads stay as they were
    with torch.random.fork_rng(devices=[]), _one_thread():
        torch.manual_seed(0)
        net = build_model(model, x.size(-1), out_channels, **overrides)
        set_recompute(net, not store_activations)
        for _ in range(1 + PROBE_STEPS):
            start = time.thread_time()  # one torch thread: the ops run on this one
            prediction(net(x, batch)).square().mean().backward()
            times.append(time.thread_time() - start)
    return min(times[1:])


@contextmanager
def _one_thread() -> Iterator[None]:
    # the step's ops run on the calling thread, whose CPU time step_seconds reads
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        yield
    finally:
        torch.set_num_threads(threads)

