r"""Parallel cells: cells per hour of one table run with ``--jobs 1`` (one
cell at a time, in the calling process) against ``--jobs N`` (``N`` pooled
worker processes, the CPU threads split between them).

.. code-block:: text

    python -m mzattn.bench.jobs [--table table6] [--profile quick] [--jobs 1,2]
                                [--out bench/results/jobs.json]

The table's synthetic data are generated once into a fresh cache
(``mzattn-repro datagen --root``), untimed, so that no run pays for them.
Each run is then the whole command ``mzattn-repro TABLE --profile P
--device cpu --jobs J`` into a fresh results folder, timed from start to
exit (interpreter start, imports, worker start-up and the report
included). The JSON holds each run's wall time, cells per hour and cell
wall times, each run's cells per hour over the first run's, whether every
run wrote the same cells (file names, configurations and statuses: the
metrics differ in their last digits, since the runs use different torch
thread counts), and the load average before and after: run it on an
otherwise idle machine.
"""
import argparse
import glob
import json
import os
import subprocess
import sys
import tempfile
import time

import torch

from .measure import environment
from .report import write_text_atomic

#: The target of issue 20: ``--jobs 2`` gives at least this many times the
#: cells per hour of ``--jobs 1`` on a 2-core machine.
TARGET = 1.7


def table_command(table: str, profile: str, jobs: int, out: str, root: str) -> list[str]:
    r"""The arguments of ``mzattn-repro`` for one timed run."""
    return [table, '--profile', profile, '--device', 'cpu', '--no-progress',
            '--jobs', str(jobs), '--out', out, '--data-root', root]


def time_run(table: str, profile: str, jobs: int, out: str, root: str) -> dict:
    r"""Runs :func:`table_command` in a fresh interpreter and returns its
    wall time, cells per hour, the cells' own wall times and the records it
    wrote (by file name); raises a :class:`RuntimeError` with the run's
    output tail if it or a cell failed."""
    command = [sys.executable, '-m', 'mzattn.repro',
               *table_command(table, profile, jobs, out, root)]
    start = time.perf_counter()
    done = subprocess.run(command, text=True, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    wall = time.perf_counter() - start
    records = {}
    for path in sorted(glob.glob(os.path.join(out, table, 'cells', '*.json'))):
        with open(path) as f:
            records[os.path.basename(path)] = json.load(f)
    if done.returncode != 0 or not records or \
            any(r['status'] != 'ok' for r in records.values()):
        raise RuntimeError(f'--jobs {jobs} failed (exit status {done.returncode}):\n'
                           f'{done.stdout[-3000:]}')
    cell_s = [r['wall_time_s'] for r in records.values()]
    return {'wall_s': wall, 'cells': len(records),
            'cells_per_hour': 3600 * len(records) / wall,
            'cell_wall_s': {'min': min(cell_s), 'max': max(cell_s), 'sum': sum(cell_s)},
            'records': records}


def measure(table: str, profile: str, jobs: list[int], folder: str) -> dict:
    r"""Fills a data cache under :obj:`folder`, times one run per value of
    :obj:`jobs` into its own results folder there, and returns the JSON
    record (module docstring)."""
    from mzattn.repro.engine.datagen import cli as datagen
    root = os.path.join(folder, 'data')
    datagen([table, '--profile', profile, '--root', root])
    load_before = os.getloadavg()
    runs = {}
    for count in jobs:
        runs[count] = time_run(table, profile, count, os.path.join(folder, f'jobs{count}'), root)
        print(f"--jobs {count}: {runs[count]['cells']} cells in {runs[count]['wall_s']:.0f} s, "
              f"{runs[count]['cells_per_hour']:.1f} cells/hour", flush=True)
    cells = [{name: (record['config'], record['status'])
              for name, record in run.pop('records').items()} for run in runs.values()]
    reference = runs[jobs[0]]['cells_per_hour']
    return {'suite': 'jobs', 'table': table, 'profile': profile,
            'command': f"python -m mzattn.bench.jobs --table {table} --profile {profile} "
                       f"--jobs {','.join(map(str, jobs))}",
            'runs': {str(count): {'argv': ' '.join(['mzattn-repro', *table_command(
                         table, profile, count, 'OUT', 'CACHE')]), **run}
                     for count, run in runs.items()},
            'ratio': {str(count): run['cells_per_hour'] / reference
                      for count, run in runs.items()},
            'target': TARGET, 'same_cells': all(c == cells[0] for c in cells),
            'cpus': len(os.sched_getaffinity(0)),
            'load_average': {'before': load_before, 'after': os.getloadavg()},
            'environment': environment(torch.device('cpu'))}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    parser.add_argument('--table', default='table6',
                        help='a table of cells alike in size (default: table6, 12 cells)')
    parser.add_argument('--profile', default='quick',
                        help='quick (the measurement) or smoke (checks the script)')
    parser.add_argument('--jobs', default='1,2',
                        help='comma-separated --jobs values, the first the reference')
    parser.add_argument('--out', default='bench/results/jobs.json')
    args = parser.parse_args(argv)
    jobs = [int(count) for count in args.jobs.split(',')]
    with tempfile.TemporaryDirectory(prefix='mzattn-jobs-') as folder:
        result = measure(args.table, args.profile, jobs, folder)
    write_text_atomic(args.out, json.dumps(result, indent=1) + '\n')
    print(json.dumps(result['ratio']), 'same cells:', result['same_cells'])
    return 0


if __name__ == '__main__':
    raise SystemExit(main())
