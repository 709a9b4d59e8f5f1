r"""The memory guard's estimate (:mod:`mzlayers.memory`) beside the measured
peak of :class:`~mzlayers.MZSetTransformerAggregation` calls (issue 36:
:obj:`MZSetTransformerAggregation(8, heads=2)` on one set of 200,000
elements grew past 8 GB).

.. code-block:: text

    python -m mzattn.bench.memory_estimate [--device cpu|cuda]
                                           [--out bench/results/memory_estimate.json]

Each row is one call, a forward under :func:`torch.inference_mode`
(``inference``) or a forward and backward (``train``,
:func:`~.measure.train_step`): the estimate, and the measured peak: on CPU
the resident-size growth of the call in a fresh interpreter
(:func:`~.measure.peak_memory_subprocess`, one thread, glibc's default
allocator), on CUDA :func:`~.measure.peak_memory_cuda`.  The estimate should
lie above the measured peak, within a small factor of it.
"""
import argparse
import json
import time

import torch

from mzlayers import MZSetTransformerAggregation
from mzlayers.layout import SetLayout

from .measure import (
    environment,
    inference_step,
    peak_memory_cuda,
    peak_memory_subprocess,
    train_step,
)
from .report import write_text_atomic

#: (label, layer arguments, set sizes of the batch)
CASES = (
    ('SAB, one set', dict(channels=8, heads=2), [5_000]),
    ('SAB, one set', dict(channels=8, heads=2), [10_000]),
    ('SAB, one set', dict(channels=8, heads=2), [20_000]),
    ('ISAB m=16, one set', dict(channels=8, heads=2, num_induced_points=16), [200_000]),
    ('paper body, 128 sets', dict(channels=64, heads=4, num_induced_points=16,
                                  num_encoder_blocks=2), [500] * 128),
    ('dense, skewed batch', dict(channels=8, heads=2, backend='dense'), [1_000] + [1] * 200),
    ('auto, skewed batch', dict(channels=8, heads=2), [1_000] + [1] * 200),
)
MODES = ('inference', 'train')
#: This module's import name (the children import it to :func:`build` a job).
MODULE = 'mzattn.bench.memory_estimate'


def _inputs(job: dict, device: torch.device):
    torch.manual_seed(0)
    layer = MZSetTransformerAggregation(**job['arguments'], memory_budget=None).to(device)
    counts = torch.tensor(job['sizes'], device=device)
    index = torch.arange(len(job['sizes']), device=device).repeat_interleave(counts)
    x = torch.randn(index.numel(), job['arguments']['channels'], device=device)
    return layer, (x, index, None, len(job['sizes']))


def build(job: dict, device: torch.device | None = None):
    r"""The measured call of one job: the layer of :obj:`job['arguments']`
    on a batch of sets of :obj:`job['sizes']` random elements (on CPU
    unless :obj:`device` is given)."""
    layer, inputs = _inputs(job, device or torch.device('cpu'))
    return (train_step if job['mode'] == 'train' else inference_step)(layer, inputs)


def estimate(job: dict, device: torch.device) -> int:
    r"""The guard's estimate of the call of :obj:`job` (host sizes only)."""
    layer, (x, index, _, num_sets) = _inputs(job, device)
    layout = SetLayout.from_batch(index, index.numel(), num_sets)
    return layer.memory_shape().peak(layout, device_type=device.type,
                                     element_size=x.element_size(),
                                     grad=job['mode'] == 'train')


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    parser.add_argument('--device', default='cpu', choices=('cpu', 'cuda'))
    parser.add_argument('--out', default='bench/results/memory_estimate.json')
    args = parser.parse_args(argv)
    device = torch.device(args.device)
    rows = []
    for label, arguments, sizes in CASES:
        for mode in MODES:
            job = dict(arguments=arguments, sizes=sizes, mode=mode)
            start = time.perf_counter()
            peak = peak_memory_cuda(build(job, device), device) if device.type == 'cuda' \
                else peak_memory_subprocess(MODULE, job)
            guess = estimate(job, device)
            rows.append(dict(case=label, arguments=arguments, num_sets=len(sizes),
                             num_elements=sum(sizes), mode=mode, estimate_bytes=guess,
                             peak_bytes=peak, estimate_over_peak=round(guess / max(peak, 1), 2),
                             wall_s=round(time.perf_counter() - start, 1)))
            print(json.dumps(rows[-1]), flush=True)
    env = environment(device)
    if device.type == 'cpu':
        env['threads'] = 1  # the children's (see measure._child)
        env['cpu_allocator'] = 'glibc defaults (children)'
    result = {'suite': 'memory_estimate', 'device': args.device, 'environment': env,
              'rows': rows}
    write_text_atomic(args.out, json.dumps(result, indent=1) + '\n')
    return 0


if __name__ == '__main__':
    raise SystemExit(main())
