r"""The cost of one training step of every registry model, as the harness
runs it (the batch's layout given, AdamW): milliseconds, aten operators
dispatched, and on CUDA the kernel launches, host synchronisations and
memory copies that :mod:`torch.profiler` records.

.. code-block:: text

    python -m mzattn.bench.step_profile [--device cuda] [--models standard,mz-full]
                                        [--steps 20] [--out step_profile.json]

The batch is 128 sets of U(10, 30) elements with 8 features (issue 34's
step).  Rows ``+bf16`` run under bf16 autocast; rows ``+plain`` call the
model with a plain PyG batch (the layout computed, with one host read, in
the forward); ``mz-full+stored`` builds MZ-Full's attention with
:obj:`recompute=False` (activations stored, not recomputed in backward); on
an accelerator, ``mz-full+cpu-chunks`` runs MZ-Full's generator path in
CPU's fine row chunks instead of the device's coarse ones.
"""
import argparse
import json
import time
from collections.abc import Callable, Iterator
from functools import partial
from unittest.mock import patch

import torch
from torch.profiler import ProfilerActivity, profile

import mzlayers.generator_path as generator_path
from mzlayers import set_recompute

from .dispatch import count_host_syncs, count_ops
from .measure import synchronize

#: Models profiled with bf16 autocast and with a plain PyG batch as well.
VARIANT_MODELS = ('standard', 'mz-full')
#: Profiled on an accelerator once more with CPU's generator-path chunks.
FINE_CHUNKS_MODEL = 'mz-full'
#: Profiled once more with its activations stored (``recompute=False``).
STORED_MODEL = 'mz-full'
NUM_SETS, MIN_SIZE, MAX_SIZE, FEATURES = 128, 10, 30, 8


def make_batch(device: torch.device, num_sets: int = NUM_SETS) -> dict:
    r"""The step's batch: features :obj:`x`, set index :obj:`batch`, its
    :obj:`ptr` and host :obj:`sizes` (as a PyG :obj:`Batch` from
    :class:`~mzattn.repro.training.datamodule.SetDataModule` carries them), targets."""
    g = torch.Generator().manual_seed(0)
    sizes = torch.randint(MIN_SIZE, MAX_SIZE + 1, (num_sets,), generator=g)
    return {'x': torch.randn(int(sizes.sum()), FEATURES, generator=g).to(device),
            'batch': torch.repeat_interleave(torch.arange(num_sets), sizes).to(device),
            'ptr': torch.cat([sizes.new_zeros(1), sizes.cumsum(0)]).to(device),
            'sizes': sizes.tolist(), 'y': torch.randn(num_sets, 1, generator=g).to(device)}


def forward_backward(model, data: dict, *, bf16: bool = False, plain: bool = False) -> None:
    r"""The loss of :obj:`model` on :obj:`data` and its gradients."""
    from mzlayers import SetLayout
    x, batch = data['x'], data['batch']
    options = {} if plain else {'layout': SetLayout.from_sizes(batch, data['sizes'],
                                                                data['ptr'])}
    with torch.autocast(x.device.type, dtype=torch.bfloat16, enabled=bf16):
        out = model(x, batch, len(data['sizes']), **options)
    out = out[0] if isinstance(out, tuple) else out
    (out.float() - data['y']).square().mean().backward()


def profile_model(name: str, device: torch.device, data: dict, steps: int,
                  bf16: bool = False, plain: bool = False, stored: bool = False) -> dict:
    r"""Milliseconds per step (median of :obj:`steps` timed one by one
    after 3 warm-up steps), aten operators of one step, and, from a
    profile of 3 steps, kernel launches, synchronisations and copies per
    step.  :obj:`aten_ops`, :obj:`kernel_ops` (those of them that run a
    kernel, views and metadata aside) and :obj:`counted_syncs`
    (:mod:`.dispatch`) are the forward and backward's."""
    from mzattn.baselines import build_model
    torch.manual_seed(0)
    model = build_model(name, FEATURES, 1).to(device)
    set_recompute(model, not stored)  # MZ attention: store, or recompute (the default)
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4)

    def step():
        optimizer.zero_grad(set_to_none=True)
        forward_backward(model, data, bf16=bf16, plain=plain)
        optimizer.step()
    for _ in range(3):
        step()
    times = []
    for _ in range(steps):
        synchronize(device)
        start = time.perf_counter()
        step()
        synchronize(device)
        times.append(time.perf_counter() - start)
    optimizer.zero_grad(set_to_none=True)
    with count_ops() as ops, count_host_syncs() as syncs:  # AdamW's host counters aside
        forward_backward(model, data, bf16=bf16, plain=plain)
    row = {'model': name + ('+bf16' if bf16 else '') + ('+plain' if plain else '')
           + ('+stored' if stored else ''),
           'ms': 1e3 * sorted(times)[len(times) // 2], 'aten_ops': sum(ops.values()),
           'kernel_ops': ops.kernels,
           'counted_syncs': syncs.total,
           'params': sum(p.numel() for p in model.parameters())}
    if device.type == 'cuda':
        row.update(_cuda_counts(step, device))
    return row


def _cuda_counts(step, device, steps: int = 3) -> dict:
    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
        for _ in range(steps):
            step()
        synchronize(device)
    events = prof.key_averages()

    def per_step(*keys):
        return sum(e.count for e in events if any(k in e.key for k in keys)) / steps
    return {'launches': per_step('LaunchKernel'),
            'syncs': per_step('StreamSynchronize', 'DeviceSynchronize', 'EventSynchronize'),
            'memcpy': per_step('cudaMemcpy')}


def profile_models(names: list[str], device: torch.device, steps: int) -> Iterator[dict]:
    r"""The rows of :func:`profile_model` for :obj:`names`, one by one: first
    those of :obj:`VARIANT_MODELS` with their variants (``+bf16``,
    ``+plain``, ``+stored``, and on an accelerator :func:`fine_chunks_row`),
    then the other models, so that a run stopped by a time limit (the GPU
    check's stage) has measured the rows issue 34 reads; a model that fails
    gets a row with its error."""
    data = make_batch(device)
    first = [n for n in VARIANT_MODELS if n in names]
    jobs = [(n, v) for n in first for v in ({}, {'bf16': True}, {'plain': True})]
    jobs += [(STORED_MODEL, {'stored': True})] if STORED_MODEL in names else []
    for name, variant in jobs:
        yield _row_or_error(name + ''.join(f'+{k}' for k in variant),
                            partial(profile_model, name, device, data, steps, **variant))
    if device.type != 'cpu' and FINE_CHUNKS_MODEL in names:
        yield _row_or_error(f'{FINE_CHUNKS_MODEL}+cpu-chunks',
                            partial(fine_chunks_row, device, data, steps))
    for name in (n for n in names if n not in first):
        yield _row_or_error(name, partial(profile_model, name, device, data, steps))


def fine_chunks_row(device: torch.device, data: dict, steps: int,
                    budget: int | None = None) -> dict:
    r""":obj:`FINE_CHUNKS_MODEL`'s row with the generator path's chunk
    budget on :obj:`device` set to :obj:`budget` elements (default: CPU's,
    :obj:`mzlayers.generator_path.CHUNK_ELEMENTS`): on an accelerator, the
    launches that CPU's fine chunks cost beside the default's coarse ones
    (``docs/benchmarks.md``, "Chunks: memory against launches")."""
    budget = generator_path.CHUNK_ELEMENTS['cpu'] if budget is None else budget
    with patch.dict(generator_path.CHUNK_ELEMENTS, {device.type: budget}):
        row = profile_model(FINE_CHUNKS_MODEL, device, data, steps)
    return row | {'model': f'{FINE_CHUNKS_MODEL}+cpu-chunks'}


def _row_or_error(model: str, run: Callable[[], dict]) -> dict:
    try:
        return run()
    except Exception as error:  # noqa: BLE001 - reported in the JSON, the rest still run
        return {'model': model, 'error': f'{type(error).__name__}: {error}'[:300]}


def main(argv: list[str] | None = None) -> None:
    from mzattn.baselines import list_models

    from .measure import environment
    from .report import write_text_atomic
    parser = argparse.ArgumentParser(prog='python -m mzattn.bench.step_profile',
                                     description=__doc__.split('\n\n')[0])
    parser.add_argument('--device', default='cuda' if torch.cuda.is_available() else 'cpu')
    parser.add_argument('--models', default=None, help='comma-separated (default: all)')
    parser.add_argument('--steps', type=int, default=20, help='timed steps per model')
    parser.add_argument('--out', default=None, help='JSON file (default: print only)')
    args = parser.parse_args(argv)
    device = torch.device(args.device)
    names = args.models.split(',') if args.models else list_models()
    result = {'suite': 'step_profile', 'device': str(device),
              'environment': environment(device),
              'batch': {'sets': NUM_SETS, 'sizes': [MIN_SIZE, MAX_SIZE], 'features': FEATURES},
              'rows': []}
    for row in profile_models(names, device, args.steps):
        print(json.dumps(row), flush=True)
        result['rows'].append(row)
        if args.out:  # after every row: a stage stopped by its time limit keeps what it made
            write_text_atomic(args.out, json.dumps(result, indent=1) + '\n')


if __name__ == '__main__':
    main()
