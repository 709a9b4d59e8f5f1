r"""Runs a table (its grid of cells) and writes its report; the entry point
of every table script and of :obj:`mzattn-repro TABLE` (its options are in
:mod:`.options`)."""
import argparse
import contextlib
import os.path as osp
import sys
import time

import torch
from lightning.pytorch.utilities import rank_zero_only
from mzattn.repro.core.faults import RunStopped
from mzattn.repro.core.quiet import quiet_libraries
from mzattn.repro.core.spec import PROFILES, TableSpec
from mzattn.repro.report.report import write_report
from mzattn.repro.training.cells import RunOptions, run_cell
from mzattn.repro.training.layout import Cell
from mzattn.repro.training.together import run_seed_group, seed_groups

from .launch import in_process, launch
from .options import DEVICES, OUT, launch_options_from_args, table_parser


def grid(spec: TableSpec, profile: str, models: list[str] | None = None,
         columns: list[str] | None = None, seeds: list[int] | None = None,
         batching: str = "masked") -> list[Cell]:
    r"""The cells to run: selected rows × columns × seeds (the profile's
    rows, columns and seeds unless given), seed-major so that every row and
    column gets a first seed before any gets a second, each with its sets
    batched as :obj:`batching` says."""
    rows = spec.select_rows(models, profile)
    cols = spec.select_columns(columns, profile)
    seeds = list(spec.profile(profile).seeds) if seeds is None else seeds
    return [Cell(spec.key, row, column, seed, batching)
            for seed in seeds for column in cols for row in rows]


def _say(text: str) -> None:
    if rank_zero_only.rank == 0:
        print(f"[mzattn-repro] {text}", flush=True)


def run_table(spec: TableSpec, profile: str = "quick", models: list[str] | None = None,
              columns: list[str] | None = None, seeds: list[int] | None = None,
              out: str = OUT, options: RunOptions | None = None,
              batching: str = "masked") -> list[dict]:
    r"""Runs every selected cell, its sets batched as :obj:`batching` says
    (finished ones are skipped, failed ones are recorded and the others
    still run), then rebuilds the table's report. With
    :obj:`options.seeds_together` the seeds of each cell train as one group
    (:func:`~mzattn.repro.training.together.run_seed_group`), one cell
    after another.

    Returns:
        list[dict]: The cell records, in run order.
    """
    cells = grid(spec, profile, models, columns, seeds, batching)
    options = options or RunOptions()
    groups = seed_groups(cells) if options.seeds_together else [[cell] for cell in cells]
    records, done = [], 0
    for group in groups:
        for index, cell in enumerate(group, done + 1):
            _say(f"{spec.key} [{index}/{len(cells)}] {cell.cell_id}: {cell.row.label} on "
                 f"{cell.column.label}, seed {cell.seed}")
        start = time.perf_counter()
        ended = run_seed_group(spec, group, profile, out, options) if options.seeds_together \
            else [run_cell(spec, group[0], profile, out, options)]
        for index, (cell, record) in enumerate(zip(group, ended, strict=True), done + 1):
            _say(f"{spec.key} [{index}/{len(cells)}] {cell.cell_id}: {_outcome(record)} "
                 f"({time.perf_counter() - start:.0f} s)")
        records += ended
        done += len(group)
    if rank_zero_only.rank == 0:
        _say(f"report: {write_report(spec, out, batching)}")
    return records


def _outcome(record: dict) -> str:
    # a cell's end as its progress line says it
    state = "skipped (finished)" if record.get("skipped") else \
        "busy (another run holds its lock)" if record["status"] == "busy" else record["status"]
    metrics = record.get("metrics", {})
    return " ".join([state, *(f"{k}={v:.4g}" for k, v in sorted(metrics.items()))])


def options_from_args(args: argparse.Namespace) -> RunOptions:
    r"""The :class:`RunOptions` of parsed arguments."""
    devices = int(args.devices) if args.devices.isdigit() else args.devices
    return RunOptions(accelerator=DEVICES[args.device], devices=devices,
                      strategy=args.strategy, precision=args.precision,
                      num_nodes=args.num_nodes, deterministic=args.deterministic,
                      compile=args.compile,
                      num_workers=args.num_workers, progress=args.progress,
                      keep_checkpoints=args.keep_checkpoints, data_root=args.data_root,
                      seeds_together=args.seeds_together,
                      store_activations=args.store_activations)


EXIT_BUSY = 75
r"""Exit status of a run that trained nothing because another run holds the
locks of cells it needs (:obj:`EX_TEMPFAIL`: the same command later goes
on)."""


def run_from_args(spec: TableSpec, args: argparse.Namespace) -> int:
    r"""Runs :obj:`spec` as parsed by
    :func:`~mzattn.repro.engine.options.add_run_arguments`; the exit
    status is 1 when a cell failed or the disk is full, :obj:`EXIT_BUSY`
    when it trained nothing because another run holds cells
    (:func:`exit_status`), 143 / 130 after SIGTERM / SIGINT
    (:mod:`~mzattn.repro.core.faults`)."""
    if args.threads is not None:
        torch.set_num_threads(args.threads)
    quiet_libraries(args.progress)
    options, launch_options = options_from_args(args), launch_options_from_args(args)
    try:
        # worker processes or SLURM (launch.py: a group of seeds is one worker's or one
        # array task's run)
        if not in_process(launch_options, options):
            cells = grid(spec, args.profile, args.models, args.columns, args.seeds,
                         args.batching)
            statuses = launch(cells, args.profile, args.out, options, launch_options)
        else:
            records = run_table(spec, args.profile, args.models, args.columns, args.seeds,
                                args.out, options, args.batching)
            statuses = {f"{spec.key}/{r['cell_id']}": "skipped" if r.get("skipped")
                        else r["status"] for r in records}
    except RunStopped as stop:  # SIGTERM / SIGINT (143 / 130) or a full disk
        return _stopped(spec, args.out, args.batching, stop)
    return exit_status(statuses)


def exit_status(statuses: dict[str, str]) -> int:
    r"""The exit status of a run whose cells (by :obj:`{table}/{cell_id}`)
    ended as :obj:`statuses` (:class:`~mzattn.repro.engine.launch.CellRun`): 1 if
    one failed, else :obj:`EXIT_BUSY` if the run trained none and found one
    busy (another process holds its lock), else 0. Busy cells get one line
    that names them and says what to do."""
    busy = sorted(key for key, status in statuses.items() if status == "busy")
    if busy:
        print(f"[mzattn-repro] {len(busy)} of {len(statuses)} cells not run: another run holds "
              f"their locks ({', '.join(busy)}); wait for it to end, or stop it, then rerun "
              "the same command", file=sys.stderr, flush=True)
    if "failed" in statuses.values():
        return 1
    return EXIT_BUSY if busy and "ok" not in statuses.values() else 0


def _stopped(spec: TableSpec, out: str, batching: str, stop: RunStopped) -> int:
    # A stopped run still reports what finished, then says why it stopped, once.
    if rank_zero_only.rank == 0:
        with contextlib.suppress(RunStopped):  # the disk may still be full
            _say(f"report: {write_report(spec, out, batching)}")
    print(f"[mzattn-repro] {stop}", file=sys.stderr, flush=True)
    return stop.exit_status


def run_epilog(spec: TableSpec) -> str:
    r"""What a run of :obj:`spec` does by default, for :obj:`--help`: the
    profile, the number of cells of each profile and the results folder."""
    cells = {name: len(grid(spec, name)) for name in PROFILES}
    return (f"By default this runs profile quick: {cells['quick']} cells (model x setting x "
            f"seed), results in {osp.join(OUT, spec.key)}/ (one JSON per cell, report.md, "
            f"figures). --profile full runs the paper's protocol ({cells['full']} cells), "
            f"--profile smoke a seconds-long plumbing check ({cells['smoke']} cells).")


def main(spec: TableSpec, argv: list[str] | None = None, prog: str | None = None) -> int:
    r"""Entry point of a table script: :obj:`python repro/<script>.py
    [--profile quick] ...` (usage names the script), or of
    :obj:`mzattn-repro TABLE` with :obj:`prog` set to that."""
    parser = table_parser(prog or osp.basename(sys.argv[0]), spec.title, run_epilog(spec))
    args = parser.parse_args(argv)
    try:  # unknown --models or --columns: a usage error, before anything runs
        grid(spec, args.profile, args.models, args.columns, args.seeds)
    except ValueError as error:
        parser.error(str(error))
    try:
        return run_from_args(spec, args)
    except ValueError as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
