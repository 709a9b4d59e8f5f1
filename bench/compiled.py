r"""``torch.compile`` against eager: one training step (forward + backward)
of registry models on CPU, timed interleaved (:func:`.measure.time_interleaved`).

.. code-block:: text

    python -m mzattn.bench.compiled [--models standard,mz-full] [--sets 64]
                                    [--repeats 10] [--out bench/results/compiled.json]

Each model runs on a fixed batch (the same sizes every step, as a training
loop over a padded or bucketed loader would see) and on batches whose set
sizes change every step (a new graph per size unless ``dynamic=True``).
Compile time is reported separately (first call, forward and backward).
"""
import argparse
import json
import time

import torch
from mzattn.baselines import build_model

from .measure import Timing, environment, keep_freed_memory, time_interleaved, train_step
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


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    parser.add_argument('--models', default=','.join(MODELS))
    parser.add_argument('--sets', type=int, default=64)
    parser.add_argument('--repeats', type=int, default=10)
    parser.add_argument('--out', default='bench/results/compiled.json')
    args = parser.parse_args(argv)
    keep_freed_memory()  # as mzattn-repro bench does
    rows = {}
    for name in args.models.split(','):
        rows[name] = measure_model(name, args.sets, args.repeats)
        print(name, json.dumps({k: round(v, 4) for k, v in rows[name].items()}), flush=True)
    result = {'suite': 'compiled', 'device': 'cpu', 'sets': args.sets,
              'environment': environment(torch.device('cpu')), 'rows': rows}
    write_text_atomic(args.out, json.dumps(result, indent=1) + '\n')
    return 0


if __name__ == '__main__':
    raise SystemExit(main())
