r"""Peak memory and time of one MZ-ISAB forward + backward against one
standard ISAB on the batches of the paper's Table 30 (issue 34, item 5: at
most 2.5x the ISAB's peak memory by default, at most 1.5x the time of the
MZ-ISAB that stores every activation).

.. code-block:: text

    python -m mzattn.bench.isab_memory [--configs small,medium,large]
                                       [--repeats 5] [--rss]
                                       [--out bench/results/isab_memory.json]

Blocks of :mod:`.overhead` (16 inducing points, 4 heads, :math:`d_{ff} =
2d`; MZ: :math:`n_g = 8`, :math:`L = 4`): ``isab``, ``mz-isab`` (the
default), ``mz-isab-recompute`` (:obj:`checkpoint_rows=256`) and
``mz-isab-stored`` (:obj:`recompute=False`: nothing recomputed), batch 64 of
sets of 30 / 50 / 100 elements at :math:`d` = 64 / 128 / 256.  Each row
holds the step time (median of :obj:`repeats` interleaved steps,
:func:`~.measure.time_interleaved`) and the peak bytes of one step counted
by :func:`~.measure.peak_memory_dispatch` (the tensors torch allocates; after
one warm-up step, in this process); with :obj:`--rss` also the resident-size
growth of a first step in a fresh child (:func:`~.measure.peak_memory_subprocess`,
the measure of Table 30's CPU column), and the aten operators of one step.
Ratios are against ``isab`` of the same run.  A last row,
``mz-isab-cuda-budget``, counts the default MZ-ISAB's peak memory and
operators with the generator path's chunk budget of CUDA (coarse, for
fewer launches), still on CPU.
"""
import argparse
import json
from collections.abc import Callable
from unittest.mock import patch

import torch

import mzlayers.generator_path as generator_path

from . import overhead
from .dispatch import count_ops
from .measure import (
    environment,
    keep_freed_memory,
    peak_memory_dispatch,
    peak_memory_subprocess,
    time_interleaved,
    train_step,
)
from .report import write_text_atomic

#: Targets of issue 34, item 5.
MEMORY_TARGET, TIME_TARGET = 2.5, 1.5


def block_steps(config: str, blocks: tuple[str, ...] = overhead.BLOCKS
                ) -> dict[str, Callable[[], None]]:
    r"""One training step (forward + backward) of every block of
    :obj:`blocks` on the batch of :obj:`config`, on CPU."""
    torch.manual_seed(0)
    channels = overhead.CONFIGS[config][0]
    device = torch.device('cpu')
    return {b: train_step(overhead.make_block(b, channels),
                          overhead.block_inputs(b, config, device)) for b in blocks}


def counted_peak(step: Callable[[], None]) -> int:
    r"""The peak bytes of one call of :obj:`step` after a warm-up call,
    counted tensor by tensor (:func:`~.measure.peak_memory_dispatch`)."""
    step()
    return peak_memory_dispatch(step)


def measure(config: str, repeats: int, rss: bool) -> dict[str, dict]:
    r"""The rows of one configuration, with ratios against ``isab``."""
    steps = block_steps(config)
    timings = time_interleaved(steps, torch.device('cpu'), repeats)
    rows = {}
    for block, step in steps.items():
        rows[block] = {'median_s': timings[block].median, 'q1_s': timings[block].q1,
                       'q3_s': timings[block].q3, 'peak_bytes': counted_peak(step)}
        if rss:
            rows[block]['rss_peak_bytes'] = peak_memory_subprocess(
                overhead.__name__, dict(model=block, config=config, mode='train'))
    for row in rows.values():
        row['time_ratio'] = row['median_s'] / rows['isab']['median_s']
        row['memory_ratio'] = row['peak_bytes'] / rows['isab']['peak_bytes']
        if rss:
            row['rss_ratio'] = row['rss_peak_bytes'] / rows['isab']['rss_peak_bytes']
    for block, step in steps.items():
        rows[block]['aten_ops'] = aten_ops(step)
    rows[CUDA_BUDGET_ROW] = cuda_budget_row(steps['mz-isab'], rows['isab']['peak_bytes'])
    return rows


#: The row of :func:`cuda_budget_row`.
CUDA_BUDGET_ROW = 'mz-isab-cuda-budget'


def aten_ops(step: Callable[[], None]) -> int:
    r"""The aten operators one call of :obj:`step` dispatches (each a kernel
    launch or more on a GPU)."""
    with count_ops() as ops:
        step()
    return sum(ops.values())


def cuda_budget_row(step: Callable[[], None], isab_peak: int) -> dict:
    r"""The default MZ-ISAB step with the generator path's chunk budget of
    CUDA (:obj:`mzlayers.generator_path.CHUNK_ELEMENTS`), counted here on
    CPU: the trade that budget makes, fewer launches for more memory (no
    time: a CPU step is not launch-bound)."""
    with patch.dict(generator_path.CHUNK_ELEMENTS, cpu=generator_path.CHUNK_ELEMENTS['cuda']):
        peak = counted_peak(step)
        return {'peak_bytes': peak, 'memory_ratio': peak / isab_peak,
                'aten_ops': aten_ops(step)}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    parser.add_argument('--configs', default=','.join(overhead.CONFIGS))
    parser.add_argument('--repeats', type=int, default=5)
    parser.add_argument('--rss', action='store_true',
                        help='also measure the resident-size growth in a child')
    parser.add_argument('--out', default='bench/results/isab_memory.json')
    args = parser.parse_args(argv)
    keep_freed_memory()
    result = {'suite': 'isab_memory', 'device': 'cpu',
              'environment': environment(torch.device('cpu')),
              'memory_target': MEMORY_TARGET, 'results': {}}
    for config in args.configs.split(','):
        rows = result['results'][config] = measure(config, args.repeats, args.rss)
        print(json.dumps({config: {b: {k: round(v, 3) for k, v in r.items() if 'ratio' in k}
                                   for b, r in rows.items()}}), flush=True)
        # after each configuration, whole: a stopped run keeps the ones it finished
        write_text_atomic(args.out, json.dumps(result, indent=1) + '\n')
    return 0


if __name__ == '__main__':
    raise SystemExit(main())
