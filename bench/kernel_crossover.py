r"""The CPU cross-over of the ``'auto'`` policy (:mod:`mzlayers.kernels.policy`):
the set_pooling stack (:mod:`.set_pooling`) under each of our kernels alone,
``ours-segment``, ``ours-dense``, ``ours-varlen`` and ``ours-auto``,
interleaved on every workload, training step and inference, without the
PyG peers or memory (a short run on a busy machine).  Ratios are against
``ours-segment``, the kernel the CPU policy runs on ragged batches::

    python -m mzattn.bench.kernel_crossover --repeats 5 --out bench/results/kernel_crossover.json
"""
import argparse
import json
from types import SimpleNamespace

import torch

from . import set_pooling
from .cli import run_workloads
from .measure import environment, keep_freed_memory
from .report import write_text_atomic

IMPLEMENTATIONS = ('ours-segment', 'ours-dense', 'ours-varlen', 'ours-auto')
BASELINE = 'ours-segment'


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    parser.add_argument('--repeats', type=int, default=5)
    parser.add_argument('--out', default='bench/results/kernel_crossover.json')
    parser.add_argument('--scale', type=float, default=1.0,
                        help='below 1: fewer and smaller sets (a quick check)')
    args = parser.parse_args(argv)
    keep_freed_memory()
    device = torch.device('cpu')
    suite = SimpleNamespace(IMPLEMENTATIONS=IMPLEMENTATIONS, CHANNELS=set_pooling.CHANNELS,
                            runs_on=set_pooling.runs_on, make_model=set_pooling.make_model)
    results = run_workloads(suite, device, args.scale, args.repeats, memory=False)
    for entry in results.values():
        base = entry['rows'][BASELINE]['median_s']
        for row in entry['rows'].values():
            row['speed_vs_segment'] = base / row['median_s']
    result = {'suite': 'kernel_crossover', 'environment': environment(device),
              'baseline': BASELINE, 'results': results}
    write_text_atomic(args.out, json.dumps(result, indent=1) + '\n')
    return 0


if __name__ == '__main__':
    raise SystemExit(main())
