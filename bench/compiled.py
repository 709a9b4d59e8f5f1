r"""``torch.compile`` against eager: one training step (forward + backward)
of registry models on CPU, timed interleaved (:func:`.measure.time_interleaved`).

.. code-block:: text

    python -m mzattn.bench.compiled [--models standard,mz-full] [--sets 64]
                                    [--repeats 10] [--out bench/results/compiled.json]
                                    [--harness] [--device cuda]

Each model runs on a fixed batch (the same sizes every step, as a training
loop over a padded or bucketed loader would see) and on batches whose set
sizes change every step (a new graph per size unless ``dynamic=True``).
Compile time is reported separately (first call, forward and backward).
With ``--harness`` (any device) it times instead the two paths the harness
trains on (:func:`harness_row`): eager, against ``--compile``'s
static-shape path with CUDA graphs on CUDA, the measurement that decides
whether ``--compile`` becomes CUDA's default (issue 34).
"""
import argparse
import json
import time

import torch
from mzattn.baselines import build_model

from .measure import (
    Timing,
    environment,
    keep_freed_memory,
    synchronize,
    time_interleaved,
    train_step,
)
from .report import write_text_atomic

#: Registry models measured by default (one per kernel family).
MODELS = ('standard', 'mz-full', 'deep-sets')
IN_CHANNELS = 8


def batch_of(sizes: list[int], seed: int = 0) -> tuple[torch.Tensor, torch.Tensor]:
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(sum(sizes), IN_CHANNELS, generator=g)
    batch = torch.repeat_interleave(torch.arange(len(sizes)), torch.tensor(sizes))
    return x, batch


def sizes_of(num_sets: int, seed: int) -> list[int]:
    g = torch.Generator().manual_seed(seed)
    return torch.randint(10, 31, (num_sets,), generator=g).tolist()


def measure_model(name: str, num_sets: int, repeats: int) -> dict:
    r"""Eager and compiled train steps of :obj:`name` (median seconds)."""
    torch._dynamo.reset()
    torch.manual_seed(0)
    eager = build_model(name, IN_CHANNELS, 1)
    compiled = torch.compile(build_model(name, IN_CHANNELS, 1))
    fixed = batch_of(sizes_of(num_sets, 0))
    start = time.perf_counter()
    train_step(compiled, fixed)()
    compile_s = time.perf_counter() - start
    row = {'compile_s': compile_s}
    steps = {'eager': train_step(eager, fixed), 'compiled': train_step(compiled, fixed)}
    for key, t in time_interleaved(steps, torch.device('cpu'), repeats).items():
        row[f'{key}_fixed_s'] = t.median
    # Changing set sizes: a new batch per step, the same batches for both.
    batches = [batch_of(sizes_of(num_sets, s), s) for s in range(1, repeats + 1)]
    for key, model in (('eager', eager), ('compiled', compiled)):
        samples = []
        for inputs in batches:
            start = time.perf_counter()
            train_step(model, inputs)()
            samples.append(time.perf_counter() - start)
        row[f'{key}_varying_s'] = Timing.of(samples).median
    row['speedup_fixed'] = row['eager_fixed_s'] / row['compiled_fixed_s']
    row['speedup_varying'] = row['eager_varying_s'] / row['compiled_varying_s']
    return row


def harness_row(name: str, device: torch.device, num_sets: int, repeats: int,
                backend: str = 'inductor') -> dict:
    r"""The harness's two paths for one training step of :obj:`name` on
    :obj:`device` (median seconds, interleaved): eager on the ragged batch
    with its layout, against ``--compile``'s static-shape path (the batch
    padded to its bucket by :func:`~mzlayers.static.pad_sets`, the model
    under :func:`torch.compile` with :obj:`fullgraph=True`,
    :obj:`dynamic=False`, and :obj:`mode="reduce-overhead"` on CUDA: CUDA
    graphs), as :class:`~mzattn.repro.training.lightning_module.SetModule`
    runs them; one fixed batch, compile time apart."""
    from mzlayers import SetLayout, bucket_size
    from mzlayers.static import pad_sets
    torch._dynamo.reset()
    torch.manual_seed(0)
    eager = build_model(name, IN_CHANNELS, 1).to(device)
    mode = 'reduce-overhead' if device.type == 'cuda' else 'default'
    compiled = torch.compile(build_model(name, IN_CHANNELS, 1).to(device), fullgraph=True,
                             dynamic=False, mode=mode, backend=backend)
    sizes = sizes_of(num_sets, 0)
    x, batch = (t.to(device) for t in batch_of(sizes))
    layout = SetLayout.from_sizes(batch, sizes)
    x_pad, mask = pad_sets(x, layout, bucket_size(max(sizes)))
    steps = {'eager': train_step(eager, (x, batch, num_sets), layout=layout),
             'compiled': train_step(compiled, (x_pad,), mask=mask)}
    start = time.perf_counter()
    steps['compiled']()
    synchronize(device)
    row = {'compile_s': time.perf_counter() - start}
    for key, t in time_interleaved(steps, device, repeats).items():
        row[f'{key}_s'] = t.median
    row['speedup'] = row['eager_s'] / row['compiled_s']
    return row


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    parser.add_argument('--models', default=','.join(MODELS))
    parser.add_argument('--sets', type=int, default=64)
    parser.add_argument('--repeats', type=int, default=10)
    parser.add_argument('--out', default='bench/results/compiled.json')
    parser.add_argument('--device', default='cpu')
    parser.add_argument('--harness', action='store_true',
                        help="the harness's eager path against --compile's static one "
                             '(harness_row), instead of compiled against eager on ragged batches')
    parser.add_argument('--backend', default='inductor', help='torch.compile backend (harness)')
    args = parser.parse_args(argv)
    if args.device != 'cpu' and not args.harness:
        parser.error('the comparison on ragged batches runs on CPU; pass --harness for '
                     f'{args.device}')
    keep_freed_memory()  # as mzattn-repro bench does
    device = torch.device(args.device)
    result = {'suite': 'compiled-harness' if args.harness else 'compiled',
              'device': str(device), 'sets': args.sets, 'environment': environment(device),
              'rows': {}}
    for name in args.models.split(','):
        row = harness_row(name, device, args.sets, args.repeats, args.backend) \
            if args.harness else measure_model(name, args.sets, args.repeats)
        result['rows'][name] = row
        print(name, json.dumps({k: round(v, 4) for k, v in row.items()}), flush=True)
        # after each model: a stage stopped by its time limit keeps the ones it finished
        write_text_atomic(args.out, json.dumps(result, indent=1) + '\n')
    return 0


if __name__ == '__main__':
    raise SystemExit(main())
