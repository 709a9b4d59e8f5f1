r"""The :obj:`mzattn-repro bench` and :obj:`mzattn-repro table30` commands.

.. code-block:: text

    mzattn-repro bench [--suites set_pooling,self_attention,table30,scaling,epoch]
                       [--size full|tiny] [--device cpu|cuda] [--repeats 10] [--out bench/results]
                       [--readme docs/benchmarks.md]
    mzattn-repro table30 [--profile smoke|quick|full] [--out results/quick]
"""
import argparse
import json
import os
from functools import partial

import torch

from . import overhead, scaling, self_attention, set_pooling
from .measure import (
    environment,
    inference_step,
    keep_freed_memory,
    peak_memory_cuda,
    peak_memory_subprocess,
    time_interleaved,
    train_step,
)
from .report import render_suite, splice_readme, write_text_atomic

SUITES = ('set_pooling', 'self_attention', 'table30', 'scaling', 'epoch')
MODES = {'train': train_step, 'inference': inference_step}


def _peak(module, job: dict, step, device: torch.device) -> int:
    if device.type == 'cuda':
        return peak_memory_cuda(step, device)
    return peak_memory_subprocess(module.__name__, job)


def _measure(module, jobs: dict[str, dict], steps: dict, device, repeats: int,
             memory: bool) -> dict[str, dict]:
    r"""Interleaved timings of :obj:`steps` and, optionally, the peak memory
    of each job."""
    timings = time_interleaved(steps, device, repeats)
    rows = {}
    for name, t in timings.items():
        rows[name] = {'median_s': t.median, 'q1_s': t.q1, 'q3_s': t.q3, 'runs': t.runs}
        if memory:
            rows[name]['peak_bytes'] = _peak(module, jobs[name], steps[name], device)
    return rows


def run_workloads(suite, device, scale: float, repeats: int, memory: bool) -> dict:
    r"""The implementations of :obj:`suite` (:mod:`.set_pooling` or
    :mod:`.self_attention`) on every workload, training step and inference."""
    from .workloads import WORKLOADS, ragged, set_sizes
    results = {}
    for workload in WORKLOADS:
        sizes = set_sizes(workload, scale)
        impls = [i for i in suite.IMPLEMENTATIONS if suite.runs_on(i, sizes)]
        inputs = ragged(sizes, suite.CHANNELS, device)
        for mode, make_step in MODES.items():
            torch.manual_seed(0)
            steps = {i: make_step(suite.make_model(i).to(device), inputs) for i in impls}
            jobs = {i: dict(impl=i, workload=workload, mode=mode, scale=scale,
                            device=str(device)) for i in impls}
            rows = _measure(suite, jobs, steps, device, repeats,
                            memory and mode == 'train')
            results[f'{workload}/{mode}'] = {
                'padding_ratio': float(sizes.numel() * sizes.max() / sizes.sum()),
                'rows': rows}
    return results


def run_table30(device, scale: float, repeats: int, memory: bool) -> dict:
    results = {}
    for config, (channels, n) in overhead.CONFIGS.items():
        data = overhead.inputs(config, device, scale)
        entry = {'params': {m: sum(p.numel() for p in overhead.make_model(m, channels)
                                   .parameters()) for m in overhead.MODELS},
                 'isab_flop_ratio': overhead.isab_flop_ratio(channels, n),
                 'model_flop_ratio': overhead.model_flop_ratio(channels, data)}
        for mode, make_step in MODES.items():
            torch.manual_seed(0)
            models = {m: overhead.make_model(m, channels).to(device) for m in overhead.MODELS}
            steps = {m: make_step(model.train(mode == 'train'), data)
                     for m, model in models.items()}
            jobs = {m: dict(model=m, config=config, mode=mode, scale=scale,
                            device=str(device)) for m in overhead.MODELS}
            entry[mode] = _measure(overhead, jobs, steps, device, repeats, memory)
        entry['block'] = _measure_blocks(config, device, scale, repeats, memory)
        results[config] = entry
    return results


def _measure_blocks(config: str, device, scale: float, repeats: int, memory: bool) -> dict:
    r"""One MZ-ISAB vs one ISAB forward + backward on the batch of :obj:`config`."""
    torch.manual_seed(0)
    channels = overhead.CONFIGS[config][0]
    steps = {b: train_step(overhead.make_block(b, channels).to(device),
                           overhead.block_inputs(b, config, device, scale))
             for b in overhead.BLOCKS}
    jobs = {b: dict(model=b, config=config, mode='train', scale=scale, device=str(device))
            for b in overhead.BLOCKS}
    return _measure(overhead, jobs, steps, device, repeats, memory)


def run_scaling(device, scale: float, repeats: int, memory: bool) -> dict:
    sizes = [n for n in scaling.SIZES if n <= 10000 * scale] or [scaling.SIZES[0]]
    sets = scaling.SETS if scale >= 1 else 2
    results = {'size': {}}
    for n in sizes:
        step = train_step(scaling.make_block().to(device), scaling.set_inputs(n, device, sets))
        job = dict(n=n, sets=sets, device=str(device))
        results['size'][n] = _measure(scaling, {'mz': job}, {'mz': step}, device, repeats,
                                      memory)['mz']
    if len(sizes) > 2:
        results['size_slope'] = scaling.loglog_slope(
            sizes[1:], [results['size'][n]['median_s'] for n in sizes[1:]])
    results['sweep_n'] = n = min(scaling.SWEEP_SIZE, sizes[-1])
    for key, values in (('num_generators', scaling.GENERATORS),
                        ('num_matrix_generators', scaling.MATRIX_GENERATORS)):
        steps = {str(v): train_step(scaling.make_block(**{key: v}).to(device),
                                    scaling.set_inputs(n, device, sets)) for v in values}
        results[key] = _measure(scaling, {}, steps, device, repeats, False)
    return results


def run_epoch(device, scale: float, repeats: int, memory: bool, models=None,
              root=None) -> dict:
    from mzattn.baselines import list_models

    from .epoch import epoch_seconds, task_g_loader
    loader, in_channels = task_g_loader(None if scale >= 1 else 64, root)
    names = models or list_models()
    return {name: epoch_seconds(name, loader, in_channels, device) for name in names}


RUNNERS = {'set_pooling': partial(run_workloads, set_pooling),
           'self_attention': partial(run_workloads, self_attention), 'table30': run_table30,
           'scaling': run_scaling, 'epoch': run_epoch}


def _run_suite(suite: str, args, device: torch.device, scale: float) -> dict:
    kwargs = {'models': args.models.split(',')} if suite == 'epoch' and args.models else {}
    return {'environment': environment(device), 'size': args.size,
            'results': RUNNERS[suite](device, scale, args.repeats, not args.no_memory,
                                      **kwargs)}


def cli(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog='mzattn-repro bench',
                                     description='speed and memory benchmarks')
    parser.add_argument('--suites', default=','.join(SUITES))
    parser.add_argument('--size', choices=('full', 'tiny'), default='full')
    parser.add_argument('--device', default='cpu')
    parser.add_argument('--repeats', type=int, default=10)
    parser.add_argument('--no-memory', action='store_true')
    parser.add_argument('--models', default=None, help='epoch suite: registry names')
    parser.add_argument('--out', default=os.path.join('bench', 'results'))
    parser.add_argument('--render', action='store_true',
                        help='measure nothing: rebuild summary.md (and --readme) from the '
                             'JSON files of --suites already in --out')
    parser.add_argument('--readme', default=None,
                        help='also splice the tables into this README')
    args = parser.parse_args(argv)
    suites = args.suites.split(',')
    unknown = sorted(set(suites) - set(SUITES))
    if unknown:
        parser.error(f'unknown suites {unknown}; choose from {list(SUITES)}')
    device = torch.device(args.device)
    keep_freed_memory()
    scale = 1.0 if args.size == 'full' else 0.02
    os.makedirs(args.out, exist_ok=True)
    sections = []
    for suite in suites:
        path = os.path.join(args.out, f'{suite}.json')
        if args.render:
            with open(path) as f:
                result = json.load(f)
        else:
            result = _run_suite(suite, args, device, scale)
            write_text_atomic(path, json.dumps(result, indent=2, default=str))
        sections.append(render_suite(suite, result))
        print(sections[-1])
    write_text_atomic(os.path.join(args.out, 'summary.md'), '\n\n'.join(sections) + '\n')
    if args.readme:
        splice_readme(args.readme, '\n\n'.join(sections))
    return 0


def table30_cli(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog='mzattn-repro table30',
                                     description="Table 30: MZ-Full / Standard cost ratios")
    parser.add_argument('--profile', choices=('smoke', 'quick', 'full'), default='quick')
    parser.add_argument('--device', default='cpu')
    parser.add_argument('--out', default='results')
    args = parser.parse_args(argv)
    scale, repeats = {'smoke': (0.1, 2), 'quick': (1.0, 10), 'full': (1.0, 30)}[args.profile]
    device = torch.device(args.device)
    keep_freed_memory()
    result = {'environment': environment(device), 'profile': args.profile,
              'results': run_table30(device, scale, repeats, args.profile != 'smoke')}
    folder = os.path.join(args.out, 'table30')
    os.makedirs(folder, exist_ok=True)
    write_text_atomic(os.path.join(folder, 'table30.json'),
                      json.dumps(result, indent=2, default=str))
    report = render_suite('table30', result, title=True)
    write_text_atomic(os.path.join(folder, 'report.md'), report + '\n')
    print(report)
    return 0
