r"""The memory guard's estimate (:mod:`mzlayers.memory`) beside the measured
peak of :class:`~mzlayers.MZSetTransformerAggregation` calls on CUDA
(issue 36: :obj:`MZSetTransformerAggregation(8, heads=2)` on one set of
200,000 elements grew past 8 GB on CPU).

.. code-block:: text

    python -m mzattn.bench.memory_estimate [--out bench/results/memory_estimate.json]

Each row is one call, forward under :func:`torch.no_grad` (``inference``) or
forward and backward (``train``): the estimate, and
:func:`torch.cuda.max_memory_allocated` during the call minus the memory
allocated before it.  The estimate should lie above the measured peak and
within a small factor of it.
"""
import argparse
import json
import time

import torch

from mzlayers import MZSetTransformerAggregation
from mzlayers.layout import SetLayout

from .measure import environment
from .report import write_text_atomic

#: (label, layer arguments, set sizes of the batch)
CASES = (
    ('issue 36: SAB, one set', dict(channels=8, heads=2), [200_000]),
    ('SAB, one set', dict(channels=8, heads=2), [20_000]),
    ('ISAB m=16, one set', dict(channels=8, heads=2, num_induced_points=16), [200_000]),
    ('paper config, 256 sets', dict(channels=64, heads=4, num_induced_points=16,
                                    num_encoder_blocks=2), [500] * 256),
    ('dense, skewed batch', dict(channels=8, heads=2, backend='dense'), [10_000] + [1] * 200),
    ('auto, skewed batch', dict(channels=8, heads=2), [10_000] + [1] * 200),
)


def measure(arguments: dict, sizes: list[int], train: bool, device: torch.device) -> dict:
    torch.manual_seed(0)
    layer = MZSetTransformerAggregation(**arguments, memory_budget=None).to(device)
    counts = torch.tensor(sizes, device=device)
    index = torch.arange(len(sizes), device=device).repeat_interleave(counts)
    x = torch.randn(index.numel(), arguments['channels'], device=device, requires_grad=train)
    layout = SetLayout.from_batch(index, index.numel(), len(sizes))
    estimate = layer.memory_shape().peak(layout, device_type=device.type,
                                         element_size=x.element_size(), grad=train)
    torch.cuda.synchronize(device)
    torch.cuda.reset_peak_memory_stats(device)
    before = torch.cuda.memory_allocated(device)
    start = time.perf_counter()
    with torch.set_grad_enabled(train):
        out = layer(x, index, dim_size=len(sizes))
        if train:
            out.square().sum().backward()
    torch.cuda.synchronize(device)
    peak = torch.cuda.max_memory_allocated(device) - before
    return dict(estimate_bytes=estimate, peak_bytes=peak, ratio=estimate / max(peak, 1),
                wall_s=time.perf_counter() - start)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    parser.add_argument('--out', default='bench/results/memory_estimate.json')
    args = parser.parse_args(argv)
    device = torch.device('cuda')
    rows = []
    for label, arguments, sizes in CASES:
        for train in (False, True):
            row = dict(case=label, arguments=arguments, num_sets=len(sizes),
                       num_elements=sum(sizes), mode='train' if train else 'inference')
            rows.append(row | measure(arguments, sizes, train, device))
            print(json.dumps(rows[-1]), flush=True)
    result = {'suite': 'memory_estimate', 'device': 'cuda',
              'environment': environment(device), 'rows': rows}
    write_text_atomic(args.out, json.dumps(result, indent=1) + '\n')
    return 0


if __name__ == '__main__':
    raise SystemExit(main())
