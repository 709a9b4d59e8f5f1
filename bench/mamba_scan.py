r"""Mamba + PMA's two selective-scan kernels, :obj:`scan='sequential'` (ours)
against :obj:`scan='parallel'` (:mod:`mambapy`'s), on Table 3's sets: one
training step of the whole model at the paper's batch of 128 MEB sets
(:math:`d = 8`), interleaved, with the same weights.

.. code-block:: text

    python -m mzattn.bench.mamba_scan [--sets 128] [--repeats 10] [--threads 1]
                                      [--allocator kept|default]
                                      [--out bench/results/mamba_scan.json]

:obj:`--allocator kept` (the default, as the other suites) keeps freed memory
in glibc's heap (:func:`~mzattn.bench.measure.keep_freed_memory`);
:obj:`default` leaves glibc as a training cell finds it, where every tensor
above 32 MB is a fresh mapping faulted in on each step, which the parallel
scan's :obj:`[B, L, E, N]` tensors pay. Needs the ``mamba`` extra.
"""
import argparse
import json

import torch

from .measure import environment, keep_freed_memory, time_interleaved, train_step
from .report import write_text_atomic

SCANS = ('parallel', 'sequential')


def time_scans(x: torch.Tensor, batch: torch.Tensor, num_sets: int,
               repeats: int) -> dict[str, dict[str, float]]:
    r"""Median and quartile seconds of one Mamba + PMA training step on the
    sets :obj:`(x, batch)` for each of :obj:`SCANS`, interleaved, with the
    same weights."""
    from mzattn.baselines import MambaPMA
    steps = {}
    for scan in SCANS:
        torch.manual_seed(0)
        steps[scan] = train_step(MambaPMA(8, 1, scan=scan), (x, batch, num_sets))
    timings = time_interleaved(steps, torch.device('cpu'), repeats)
    return {scan: {'train_s': t.median, 'q1_s': t.q1, 'q3_s': t.q3}
            for scan, t in timings.items()}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    parser.add_argument('--sets', type=int, default=128)
    parser.add_argument('--repeats', type=int, default=10)
    parser.add_argument('--threads', type=int, default=1)
    parser.add_argument('--allocator', choices=('kept', 'default'), default='kept')
    parser.add_argument('--out', default='bench/results/mamba_scan.json')
    args = parser.parse_args(argv)
    env = environment(torch.device('cpu'))
    if args.allocator == 'kept':
        keep_freed_memory()  # as mzattn-repro bench does
    else:
        env['cpu_allocator'] = "glibc's default (tensors above 32 MB mapped afresh)"
    torch.set_num_threads(args.threads)
    from mzattn.datasets.synthetic.tasks import get_config
    from mzattn.repro.engine.cost import probe_batch
    x, batch = probe_batch(get_config('meb', d=8), args.sets)  # Table 3's first sets
    rows = time_scans(x, batch, args.sets, args.repeats)
    speedup = rows['parallel']['train_s'] / rows['sequential']['train_s']
    print(json.dumps(rows), f'sequential is {speedup:.2f}x faster', flush=True)
    result = {'suite': 'mamba_scan', 'allocator': args.allocator, 'sets': args.sets,
              'elements': x.size(0), 'max_set_size': int(batch.bincount().max()),
              'environment': env | {'threads': args.threads}, 'rows': rows,
              'speedup': speedup}
    write_text_atomic(args.out, json.dumps(result, indent=1) + '\n')
    return 0


if __name__ == '__main__':
    raise SystemExit(main())
