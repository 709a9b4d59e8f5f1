r"""Seeds together (issue 34, item 6): the :math:`K` seeds of one small cell
trained as one :class:`~mzattn.stacked.StackedSeeds` module against the
same :math:`K` trainings one after another in one process, and against
:math:`K` worker processes training one seed each at once (what
``--jobs K``, or ``--cells-per-gpu K`` on a GPU, does).

.. code-block:: text

    python -m mzattn.bench.stacked_seeds [--models deep-sets,standard]
                                         [--seeds 3] [--steps 10] [--repeats 5]
                                         [--device cpu] [--threads T]
                                         [--out bench/results/stacked_seeds.json]

One run of a mode trains every seed for :obj:`steps` training steps of the
harness (AdamW, per-seed gradient clipping at 1.0, dropout on), each seed on
its own batches: 128 sets of :math:`n \sim U(10, 30)` elements (the seed's
own sizes), 8 features, one target.  A seed alone trains on its ragged
batches with their layout (as the harness's data module gives it) and the
model's default kernel; stacked, the seeds' batches are padded to one
width with masks (:func:`~mzattn.stacked.stack_sets`).  Batches, layouts
and the padding are made before the clock starts, as a data loader would.
The pool's workers are long-lived processes that hold their seed's model
and data before the clock starts, with the CPU threads split between them
as the pool splits them (:obj:`max(1, T // K)`); the other two modes
use :obj:`T` threads (:obj:`--threads`, default the CPUs this process may
use).  The load average before and after is stored: on a loaded machine,
several threads per process wait on each other, so compare
:obj:`--threads 1` runs there.  Modes are timed interleaved
(:func:`~.measure.time_interleaved`); the JSON holds each mode's median
seconds per run, seed steps per second and the speed of ``stacked``
against ``sequential`` and against ``pool`` (higher is faster for
``stacked``), all from the same run.
"""
import argparse
import json
import multiprocessing as mp
import os
from collections.abc import Callable
from multiprocessing.connection import Connection

import torch
import torch.nn.functional as F

from .measure import environment, synchronize, time_interleaved
from .report import write_text_atomic

SETS, SIZES, CHANNELS = 128, (10, 30), 8
r"""One batch: :obj:`SETS` sets of :obj:`SIZES` elements (uniform, both
ends included) with :obj:`CHANNELS` features (the MEB task of Table 3)."""

GRADIENT_CLIP, LR, WEIGHT_DECAY = 1.0, 1e-4, 1e-5  # App. A.1, as the harness trains


def seed_model(name: str, seed: int, device: torch.device) -> torch.nn.Module:
    r"""The registry model :obj:`name` initialised under :obj:`seed`."""
    from mzattn.baselines import build_model
    torch.manual_seed(seed)
    return build_model(name, CHANNELS, 1).to(device)


def seed_batches(seed: int, steps: int, device: torch.device) -> list[dict]:
    r"""The :obj:`steps` ragged batches of :obj:`seed`: :obj:`x [N, F]`,
    :obj:`batch [N]`, :obj:`layout` and :obj:`y [B, 1]` each."""
    from mzlayers.layout import SetLayout
    generator = torch.Generator().manual_seed(seed)
    out = []
    for _ in range(steps):
        sizes = torch.randint(SIZES[0], SIZES[1] + 1, (SETS,), generator=generator)
        batch = torch.arange(SETS).repeat_interleave(sizes).to(device)
        ptr = torch.cat([sizes.new_zeros(1), sizes.cumsum(0)]).to(device)
        out.append({'x': torch.randn(int(sizes.sum()), CHANNELS, generator=generator).to(device),
                    'batch': batch, 'y': torch.randn(SETS, 1, generator=generator).to(device),
                    'layout': SetLayout.from_sizes(batch, sizes.tolist(), ptr)})
    return out


def _prediction(out) -> torch.Tensor:
    return out[0] if isinstance(out, tuple) else out


def separate_training(model: torch.nn.Module, batches: list[dict]) -> Callable[[], None]:
    r"""Trains :obj:`model` alone for one step per batch."""
    optimizer = torch.optim.AdamW(model.parameters(), lr=LR, weight_decay=WEIGHT_DECAY)
    model.train()

    def run() -> None:
        for b in batches:
            optimizer.zero_grad(set_to_none=True)
            out = _prediction(model(b['x'], b['batch'], dim_size=SETS, layout=b['layout']))
            F.mse_loss(out, b['y']).backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), GRADIENT_CLIP)
            optimizer.step()
    return run


def stacked_training(models: list[torch.nn.Module],
                     batches: list[list[dict]]) -> Callable[[], None]:
    r"""Trains :obj:`models` as one :class:`~mzattn.stacked.StackedSeeds`,
    replica :obj:`k` on :obj:`batches[k]`, one step per batch."""
    from mzattn.stacked import StackedSeeds, stack_sets
    stacked = StackedSeeds(models).train()
    optimizer = torch.optim.AdamW(stacked.parameters(), lr=LR, weight_decay=WEIGHT_DECAY)
    stacked.keep_frozen(optimizer)
    steps = []
    for step in zip(*batches, strict=True):  # one batch per seed
        x, mask = stack_sets([b['x'] for b in step], [b['batch'] for b in step], SETS)
        steps.append((x, mask, torch.stack([b['y'] for b in step])))  # y [K, B, 1]

    def run() -> None:
        for x, mask, y in steps:
            optimizer.zero_grad(set_to_none=True)
            out = _prediction(stacked(x, mask=mask))
            F.mse_loss(out, y, reduction='none').mean((1, 2)).sum().backward()
            stacked.clip_grad_norm_(GRADIENT_CLIP)
            optimizer.step()
    return run


def _worker(conn: Connection, name: str, seed: int, steps: int, device: str,
            threads: int) -> None:
    # a pool worker: builds its seed's training, then runs it on every message
    torch.set_num_threads(threads)
    device = torch.device(device)
    run = separate_training(seed_model(name, seed, device), seed_batches(seed, steps, device))
    conn.send('ready')
    while conn.recv():
        run()
        synchronize(device)
        conn.send('done')


class Pool:
    r""":obj:`seeds` long-lived worker processes (spawned), each training
    one seed; calling the pool runs them all once, at the same time."""
    def __init__(self, name: str, seeds: int, steps: int, device: torch.device) -> None:
        context = mp.get_context('spawn')
        self.threads = max(1, torch.get_num_threads() // seeds)
        self.conns, self.processes = [], []
        for seed in range(seeds):
            parent, child = context.Pipe()
            process = context.Process(target=_worker, daemon=True, args=(
                child, name, seed, steps, str(device), self.threads))
            process.start()
            self.conns.append(parent)
            self.processes.append(process)
        for conn in self.conns:
            conn.recv()  # 'ready'

    def __call__(self) -> None:
        for conn in self.conns:
            conn.send(True)
        for conn in self.conns:
            conn.recv()

    def close(self) -> None:
        for conn, process in zip(self.conns, self.processes, strict=True):
            conn.send(False)
            process.join()


def measure(name: str, seeds: int, steps: int, repeats: int, device: torch.device) -> dict:
    r"""The three modes on the registry model :obj:`name`: median seconds per
    run (every seed trained :obj:`steps` steps) and the ratios."""
    batches = [seed_batches(seed, steps, device) for seed in range(seeds)]
    models = [seed_model(name, seed, device) for seed in range(seeds)]
    alone = [separate_training(seed_model(name, seed, device), batches[seed])
             for seed in range(seeds)]
    pool = Pool(name, seeds, steps, device)
    try:
        timings = time_interleaved({
            'stacked': stacked_training(models, batches),
            'sequential': lambda: [run() for run in alone],
            'pool': pool,
        }, device, repeats=repeats, warmup=1)
    finally:
        pool.close()
    rows = {mode: {'median_s': t.median, 'q1_s': t.q1, 'q3_s': t.q3,
                   'seed_steps_per_s': seeds * steps / t.median}
            for mode, t in timings.items()}
    stacked = rows['stacked']['median_s']
    return {'params': sum(p.numel() for p in models[0].parameters()),
            'pool_threads': pool.threads, 'rows': rows,
            'stacked_vs_sequential': rows['sequential']['median_s'] / stacked,
            'stacked_vs_pool': rows['pool']['median_s'] / stacked}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    parser.add_argument('--models', default='deep-sets,standard')
    parser.add_argument('--seeds', type=int, default=3)
    parser.add_argument('--steps', type=int, default=10)
    parser.add_argument('--repeats', type=int, default=5)
    parser.add_argument('--device', default='cpu')
    parser.add_argument('--threads', type=int, default=None,
                        help="torch threads of the process (the pool's workers split them)")
    parser.add_argument('--out', default='bench/results/stacked_seeds.json')
    args = parser.parse_args(argv)
    device = torch.device(args.device)
    cpus = len(os.sched_getaffinity(0)) if hasattr(os, 'sched_getaffinity') else os.cpu_count()
    torch.set_num_threads(args.threads or cpus or 1)
    # small tensors: glibc's defaults, not keep_freed_memory (which environment() assumes)
    result = {'suite': 'stacked_seeds',
              'environment': environment(device) | {'cpu_allocator': 'glibc defaults'},
              'load_average_before': os.getloadavg(),
              'seeds': args.seeds, 'steps': args.steps, 'repeats': args.repeats,
              'batch': {'sets': SETS, 'set_sizes': SIZES, 'channels': CHANNELS},
              'results': {}}
    for name in args.models.split(','):
        entry = result['results'][name] = measure(name, args.seeds, args.steps, args.repeats,
                                                  device)
        print(json.dumps({name: {k: round(v, 2) for k, v in entry.items()
                                 if k.startswith('stacked_vs')}}), flush=True)
        result['load_average_after'] = os.getloadavg()
        write_text_atomic(args.out, json.dumps(result, indent=1) + '\n')
    return 0


if __name__ == '__main__':
    raise SystemExit(main())
