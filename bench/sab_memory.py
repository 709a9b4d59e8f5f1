r"""Peak memory of one MZ-SAB against one SAB on a single large set, as the
set grows (issue 19: MZ-SAB on 20,000 elements once tried to allocate 6.4 GB
where SAB needs 0.03 GB).  Peak memory must grow linearly in the set size.

.. code-block:: text

    python -m mzattn.bench.sab_memory [--sizes 2500,5000,10000,20000]
                                      [--modes inference,train]
                                      [--out bench/results/sab_memory.json]

Each (block, n, mode) runs in a fresh interpreter
(:func:`~.measure.peak_memory_subprocess`: resident-size high-water mark of
one call minus the resident size before it, one thread, glibc's default
allocator).  ``inference`` is one forward under
:func:`torch.inference_mode`, ``train`` one forward and backward
(:func:`~.measure.train_step`).  Blocks at the paper's default (App. A.1):
:math:`d = 64`, 4 heads, :math:`d_{ff} = 128`; MZ-SAB with :math:`n_g = 8`,
:math:`L = 4`; backend ``auto``.  The JSON keeps the peak per row and, per
block and mode, the log-log slope of peak against :math:`n` (1 = linear,
2 = quadratic).
"""
import argparse
import json
import time

import torch

from mzlayers import MZSAB, SAB

from .measure import environment, inference_step, peak_memory_subprocess, train_step
from .report import write_text_atomic
from .scaling import loglog_slope

CHANNELS, HEADS, FF_CHANNELS = 64, 4, 128
SIZES = (2500, 5000, 10000, 20000)
BLOCKS = ('sab', 'mzsab')
MODES = ('inference', 'train')
#: This module's import name (the children import it to :func:`build` a job).
MODULE = 'mzattn.bench.sab_memory'


def make_block(name: str) -> torch.nn.Module:
    if name == 'sab':
        return SAB(CHANNELS, HEADS, ff_channels=FF_CHANNELS)
    return MZSAB(CHANNELS, HEADS, ff_channels=FF_CHANNELS, num_generators=8,
                 num_matrix_generators=4)


def build(job: dict):
    r"""The measured call of one job (run in the child of
    :func:`~.measure.peak_memory_subprocess`): :obj:`job['block']` on one set
    of :obj:`job['n']` random elements :obj:`[n, d]`."""
    torch.manual_seed(0)
    block = make_block(job['block'])
    x = torch.randn(job['n'], CHANNELS)
    batch = torch.zeros(job['n'], dtype=torch.long)
    step = train_step if job['mode'] == 'train' else inference_step
    return step(block, (x, batch, 1))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    parser.add_argument('--sizes', default=','.join(map(str, SIZES)))
    parser.add_argument('--modes', default=','.join(MODES))
    parser.add_argument('--out', default='bench/results/sab_memory.json')
    args = parser.parse_args(argv)
    sizes = [int(n) for n in args.sizes.split(',')]
    rows, slopes = [], {}
    for mode in args.modes.split(','):
        for block in BLOCKS:
            peaks = []
            for n in sizes:
                start = time.perf_counter()
                peak = peak_memory_subprocess(MODULE, dict(block=block, n=n, mode=mode))
                rows.append(dict(block=block, mode=mode, n=n, peak_bytes=peak,
                                 wall_s=time.perf_counter() - start))
                peaks.append(peak)
                print(json.dumps(rows[-1]), flush=True)
            if len(sizes) > 1:
                slopes[f'{block}/{mode}'] = loglog_slope(sizes, peaks)
    env = environment(torch.device('cpu'))
    env['threads'] = 1  # the children's (see measure._child)
    env['cpu_allocator'] = 'glibc defaults (children)'
    result = {'suite': 'sab_memory', 'device': 'cpu', 'channels': CHANNELS, 'heads': HEADS,
              'ff_channels': FF_CHANNELS, 'num_generators': 8, 'num_matrix_generators': 4,
              'environment': env, 'rows': rows, 'loglog_slopes': slopes}
    write_text_atomic(args.out, json.dumps(result, indent=1) + '\n')
    print(json.dumps(slopes))
    return 0


if __name__ == '__main__':
    raise SystemExit(main())
