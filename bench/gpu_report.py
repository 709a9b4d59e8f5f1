r"""The JSON and the Markdown of the GPU check (:file:`bench/gpu_check.sh`).

.. code-block:: text

    python -m mzattn.bench.gpu_report slug cuda|cpu          # the device's file-name part
    python -m mzattn.bench.gpu_report collect FOLDER --out gpu_check_<device>.json
    python -m mzattn.bench.gpu_report render bench/results/gpu_check_*.json \
        [--readme docs/benchmarks.md]

:func:`collect` gathers what the check's stages left in :obj:`FOLDER`
(:file:`stages.tsv`, the tests' JUnit XML, :file:`step_profile.json`, the
suites' JSON, the cell's epoch log, the seeds stage's
:file:`stacked_seeds.json`, the compile stage's :file:`compiled.json`) into
one JSON; :func:`render` makes the Markdown that :file:`docs/benchmarks.md` shows between its
:obj:`BEGIN` and :obj:`END` markers.
"""
import argparse
import csv
import glob
import json
import os
import re
import xml.etree.ElementTree as ET

from .report import splice_readme, write_text_atomic

BEGIN, END = '<!-- gpu-check:begin -->', '<!-- gpu-check:end -->'
SUITES = ('set_pooling', 'table30')


def slug(device: str) -> str:
    r"""The device's name for file names: :obj:`'nvidia-h200'`, :obj:`'cpu'`."""
    import torch
    if device != 'cuda':
        return device
    return re.sub(r'[^a-z0-9]+', '-', torch.cuda.get_device_name(0).lower()).strip('-')


def _stages(folder: str) -> list[dict]:
    with open(os.path.join(folder, 'stages.tsv')) as f:
        return [{'stage': name, 'seconds': int(sec), 'status': _status(rc),
                 'limit_s': int(limit)}
                for name, sec, rc, limit in csv.reader(f, delimiter='\t')]


def _status(rc: str) -> str:
    return {'0': 'ok', 'skipped': 'skipped', '124': 'timed out', '137': 'timed out'}.get(
        rc, f'failed (exit {rc})')


def _tests(path: str) -> dict | None:
    if not os.path.exists(path):
        return None
    suite = ET.parse(path).getroot()
    suite = suite if suite.tag == 'testsuite' else suite.find('testsuite')
    failed = [case.get('name') for case in suite.iter('testcase')
              if case.find('failure') is not None or case.find('error') is not None]
    counts = {key: int(suite.get(key, 0)) for key in ('tests', 'failures', 'errors', 'skipped')}
    return {**counts, 'failed': failed}


def _json(path: str) -> dict | None:
    if not os.path.exists(path):
        return None
    with open(path) as f:
        return json.load(f)


def _cell(folder: str) -> dict | None:
    logs = sorted(glob.glob(os.path.join(folder, 'cell', '*', 'logs', '*.csv')))
    if not logs:
        return None
    with open(logs[0]) as f:
        epochs = list(csv.DictReader(f))
    times = [float(e['epoch_time_s']) for e in epochs]
    return {'log': os.path.basename(logs[0]), 'epochs': len(epochs),
            'median_epoch_s': sorted(times)[len(times) // 2] if times else None}


def collect(folder: str) -> dict:
    r"""Everything the check's stages left in :obj:`folder`, as one dict."""
    return {'stages': _stages(folder),
            'tests_cuda': _tests(os.path.join(folder, 'tests_cuda.xml')),
            'step_profile': _json(os.path.join(folder, 'step_profile.json')),
            'suites': {name: _json(os.path.join(folder, f'{name}.json')) for name in SUITES},
            'cell': _cell(folder),
            'stacked_seeds': _json(os.path.join(folder, 'stacked_seeds.json')),
            'compiled': _json(os.path.join(folder, 'compiled.json'))}


def _fmt(value, digits: int = 1) -> str:
    if value is None:
        return '—'
    return f'{value:,.{digits}f}' if isinstance(value, float) else f'{value:,}'


def render(result: dict) -> str:
    r"""The Markdown of a :func:`collect` result."""
    profile = result.get('step_profile') or {}
    env = profile.get('environment') or {}
    lines = [f"Device: {env.get('gpu') or env.get('device', '?')}, torch {env.get('torch', '?')}.",
             '', '| stage | status | seconds (limit) |', '| --- | --- | --- |']
    lines += [f"| {s['stage']} | {s['status']} | {s['seconds']} ({s['limit_s']}) |"
              for s in result['stages']]
    tests = result.get('tests_cuda')
    if tests:
        passed = tests['tests'] - tests['failures'] - tests['errors'] - tests['skipped']
        lines += ['', f"`tests/cuda`: {passed} passed, {tests['failures'] + tests['errors']} "
                  f"failed, {tests['skipped']} skipped."]
        lines += [f'- failed: `{name}`' for name in tests['failed']]
    if profile.get('rows'):
        lines += ['', _step_table(profile['rows'])]
    cell = result.get('cell')
    if cell:
        lines += ['', f"One paper-protocol cell ({cell['log']}): {cell['epochs']} epochs in the "
                  f"stage's limit, median {_fmt(cell['median_epoch_s'], 2)} s/epoch."]
    if result.get('stacked_seeds'):
        lines += ['', _seeds_table(result['stacked_seeds'])]
    if result.get('compiled'):
        lines += ['', _compiled_table(result['compiled'])]
    return '\n'.join(lines)


def _compiled_table(compiled: dict) -> str:
    # the `compile` stage: the harness's eager step against --compile's CUDA graphs
    head = (f"`--compile` ({compiled['sets']} sets; median seconds of one training step):\n\n"
            "| model | eager | compiled | speedup | compile time (s) |\n"
            "| --- | --- | --- | --- | --- |")
    body = [f"| {model} | {_fmt(row['eager_s'], 4)} | {_fmt(row['compiled_s'], 4)} | "
            f"{row['speedup']:.2f}× | {_fmt(row['compile_s'], 1)} |"
            for model, row in compiled['rows'].items()]
    return '\n'.join([head] + body)


def _seeds_table(seeds: dict) -> str:
    # the `seeds` stage: one cell's K seeds stacked, one after another, and on K workers
    head = (f"Seeds together ({seeds['seeds']} seeds, {seeds['steps']} steps each; median "
            "seconds; speed of stacked against each):\n\n| model | stacked | one after another "
            "| K workers | stacked vs one after another | stacked vs K workers |\n"
            "| --- | --- | --- | --- | --- | --- |")
    body = []
    for model, result in seeds['results'].items():
        rows = result['rows']
        cells = [_fmt(rows[mode]['median_s'], 2) for mode in ('stacked', 'sequential', 'pool')]
        cells += [f"{result[key]:.2f}×" for key in ('stacked_vs_sequential', 'stacked_vs_pool')]
        body.append(f"| {model} | " + ' | '.join(cells) + ' |')
    return '\n'.join([head] + body)


def _step_table(rows: list[dict]) -> str:
    head = ('| model | ms/step | kernel launches | host syncs | memcpy | aten ops '
            '(fwd+bwd) | of which kernels | syncs counted on dispatch |\n'
            '| --- | --- | --- | --- | --- | --- | --- | --- |')
    body = []
    for row in rows:
        if 'error' in row:
            body.append(f"| {row['model']} | error: {row['error'][:80]} | | | | | | |")
            continue
        cells = [_fmt(row['ms'], 2)] + [_fmt(row.get(k)) for k in ('launches', 'syncs', 'memcpy')]
        cells += [_fmt(row['aten_ops']), _fmt(row.get('kernel_ops')), _fmt(row['counted_syncs'])]
        body.append(f"| {row['model']} | " + ' | '.join(cells) + ' |')
    return '\n'.join([head] + body)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog='python -m mzattn.bench.gpu_report',
                                     description=__doc__.split('\n\n')[0])
    sub = parser.add_subparsers(dest='command', required=True)
    sub.add_parser('slug', help="the device's file-name part").add_argument('device')
    p = sub.add_parser('collect', help="one JSON of a check's folder")
    p.add_argument('folder')
    p.add_argument('--out', required=True)
    p = sub.add_parser('render', help='Markdown of JSON files (or splice it into --readme)')
    p.add_argument('json', nargs='+')
    p.add_argument('--readme', default=None)
    args = parser.parse_args(argv)
    if args.command == 'slug':
        print(slug(args.device))
    elif args.command == 'collect':
        write_text_atomic(args.out, json.dumps(collect(args.folder), indent=1) + '\n')
    else:
        text = '\n\n'.join(render(_json(path)) for path in sorted(args.json))
        if args.readme:
            splice_readme(args.readme, text, BEGIN, END)
        else:
            print(text)


if __name__ == '__main__':
    main()
