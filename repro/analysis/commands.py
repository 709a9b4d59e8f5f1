r"""The :obj:`mzattn-repro analysis` command.

.. code-block:: text

    mzattn-repro analysis table19|table20|table21 [--profile quick] [--jobs 2]  # App. D.3
    mzattn-repro analysis table14 [--profile quick] [--results results/quick]
    mzattn-repro analysis figure2 [--results results/quick]        # Fig. 2 right
    mzattn-repro analysis figure3 [--profile quick] [--jobs 2]     # Figs. 3-4
    mzattn-repro analysis ihw CHECKPOINT [--out DIR]     # any trained checkpoint
    mzattn-repro analysis probe CHECKPOINT [--layer 0] [--out DIR]
    mzattn-repro analysis tdof                           # TDOF assignments

The commands that train models (the uncertainty tables and :obj:`figure3`)
take the dispatch options of a table (:obj:`--launcher`, :obj:`--jobs`,
:obj:`--cells-per-gpu`, :obj:`--slurm-*`; :mod:`.training`). The others
train nothing: they read trained checkpoints or table results.
"""
import argparse
import json
import os.path as osp
import sys

import torch
from mzattn.repro.core.faults import RunStopped
from mzattn.repro.core.spec import PROFILES
from mzattn.repro.engine.options import add_launch_arguments, launch_options_from_args
from mzattn.repro.training.cells import write_json_atomic

from .training import TrainingsFailed

UNCERTAINTY_TABLES = ("table19", "table20", "table21")
COMMANDS = (*UNCERTAINTY_TABLES, "table14", "figure2", "figure3", "ihw", "probe", "tdof")


def _parser(command: str, description: str) -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog=f"mzattn-repro analysis {command}",
                                     description=description)
    parser.add_argument("--threads", type=int, default=None, help="torch CPU threads")
    parser.add_argument("--data-root", default=None, help="dataset cache root")
    return parser


def _profile_parser(command: str, description: str,
                    trains: bool = False) -> argparse.ArgumentParser:
    # trains: the command trains models, dispatched as a table's cells (.training)
    parser = _parser(command, description)
    parser.add_argument("--profile", choices=PROFILES, default="quick",
                        help="smoke (seconds), quick (2-core CPU), full (paper protocol)")
    parser.add_argument("--out", default=None,
                        help="results folder (default: results/PROFILE)")
    if trains:
        add_launch_arguments(parser)
    return parser


def run_uncertainty_table(key: str, argv: list[str]) -> int:
    r""":obj:`mzattn-repro analysis table19|table20|table21`: runs (or
    reuses) the uncertainty study and writes the table's report."""
    from .study import run_study
    from .uncertainty_tables import table19_report, table20_report, table21_report
    parser = _profile_parser(key, f"{key} of App. D.3 (uncertainty on set matching)",
                             trains=True)
    parser.add_argument("--seeds", default=None, help="comma-separated seeds")
    args = _parse(parser, argv)
    seeds = None if args.seeds is None else [int(s) for s in args.seeds.split(",")]
    out = args.out or osp.join("results", args.profile)
    records = run_study(args.profile, out, seeds, args.data_root,
                        launch_options_from_args(args))
    write = {"table19": table19_report, "table20": table20_report,
             "table21": table21_report}[key]
    print(write(records, osp.join(out, key)))
    return 0


def run_tdof_table(key: str, argv: list[str]) -> int:
    r""":obj:`mzattn-repro analysis table14|figure2`: the TDOF-vs-gain
    analysis of our table results (Figure 2 right) and its perturbation
    robustness (Table 14)."""
    from .tdof_tables import figure2_report, table14_report
    parser = _profile_parser(key, "TDOF vs MZAttn's MSE reduction (Sec. 5.3, App. D.2.1)")
    parser.add_argument("--results", default=None,
                        help="folder of the table results read (default: --out)")
    args = _parse(parser, argv)
    out = args.out or osp.join("results", args.profile)
    write = table14_report if key == "table14" else figure2_report
    print(write(args.results or out, osp.join(out, key), args.profile))
    return 0


def run_figure3(argv: list[str]) -> int:
    r""":obj:`mzattn-repro analysis figure3`: Figures 3-4 (probing)."""
    from .probe_study import run_probe_study
    args = _parse(_profile_parser("figure3", "Figures 3-4: generator probing", trains=True),
                  argv)
    print(run_probe_study(args.profile, args.out or osp.join("results", args.profile),
                          args.data_root, launch_options_from_args(args)))
    return 0


def run_ihw(argv: list[str]) -> int:
    r""":obj:`mzattn-repro analysis ihw CHECKPOINT`: IHW uncertainty of any
    trained MZ checkpoint (per-sample CSV, bins, correlations, calibrated
    ECE/NLL, reliability diagram)."""
    from .ihw_report import ihw_analysis
    parser = _parser("ihw", "IHW uncertainty of a trained MZ checkpoint")
    parser.add_argument("checkpoint", help="analysis checkpoint (.pt)")
    parser.add_argument("--out", default="ihw", help="output folder (default: ihw)")
    parser.add_argument("--bins", type=int, default=5, help="IHW bins (default: 5)")
    args = _parse(parser, argv)
    summary = ihw_analysis(args.checkpoint, args.out, args.bins, args.data_root)
    print(json.dumps(summary["test"], indent=2))
    return 0


def run_probe(argv: list[str]) -> int:
    r""":obj:`mzattn-repro analysis probe CHECKPOINT`: generator probing of
    any trained MZ checkpoint (JSON and the Figure 3-4 panels)."""
    from .plots import figure3, figure4
    from .probe_study import probe_checkpoint
    parser = _parser("probe", "generator probing of a trained MZ checkpoint")
    parser.add_argument("checkpoint", help="analysis checkpoint (.pt)")
    parser.add_argument("--layer", type=int, default=0, help="MZ attention layer index")
    parser.add_argument("--head", type=int, default=0, help="head of the panels")
    parser.add_argument("--contexts", default="0,1", help="the two contexts of Figure 3")
    parser.add_argument("--out", default="probe", help="output folder (default: probe)")
    args = _parse(parser, argv)
    pair = tuple(int(i) for i in args.contexts.split(","))
    result = probe_checkpoint(args.checkpoint, args.layer, pair, args.head,
                              root=args.data_root)
    write_json_atomic(result, osp.join(args.out, "probe.json"))
    figure3(result, osp.join(args.out, "figure3.png"))
    budget = [(result["num_matrix_generators"], result["soft_effective_rank"])]
    figure4(result, budget, osp.join(args.out, "figure4.png"))
    print(osp.join(args.out, "probe.json"))
    return 0


def run_tdof(argv: list[str]) -> int:
    r""":obj:`mzattn-repro analysis tdof`: prints the TDOF assignments."""
    from .tdof import SETTINGS
    _parse(_parser("tdof", "per-task TDOF assignments and their justification"), argv)
    for s in SETTINGS:
        kind = "exact" if s.exact else "estimate"
        print(f"{s.table:<8} {s.column:<22} TDOF {s.tdof:>5} ({kind}): {s.why}")
    return 0


def _parse(parser: argparse.ArgumentParser, argv: list[str]) -> argparse.Namespace:
    args = parser.parse_args(argv)
    if args.threads is not None:
        torch.set_num_threads(args.threads)
    return args


def cli(argv: list[str] | None = None) -> int:
    r"""Runs :obj:`mzattn-repro analysis` with :obj:`argv` (default:
    :obj:`sys.argv[1:]`); returns the exit status."""
    argv = sys.argv[1:] if argv is None else list(argv)
    if not argv or argv[0] not in COMMANDS:
        print(f"usage: mzattn-repro analysis {{{','.join(COMMANDS)}}} [options]",
              file=sys.stderr if argv else sys.stdout)
        return 2 if argv and argv[0] not in ("-h", "--help") else 0
    command, rest = argv[0], argv[1:]
    try:
        if command in UNCERTAINTY_TABLES:
            return run_uncertainty_table(command, rest)
        if command in ("table14", "figure2"):
            return run_tdof_table(command, rest)
        runners = {"figure3": run_figure3, "ihw": run_ihw, "probe": run_probe,
                   "tdof": run_tdof}
        return runners[command](rest)
    except ValueError as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    except TrainingsFailed as error:
        print(f"error: {error}", file=sys.stderr)
        return 1
    except RunStopped as stop:  # SIGTERM / SIGINT to the workers (143 / 130), a full disk
        print(f"[mzattn-repro] {stop}", file=sys.stderr, flush=True)
        return stop.exit_status


def script_main(command: str) -> int:
    r"""Entry point of the table scripts (:obj:`python repro/tables/table19_ihw_bins.py
    --profile quick`)."""
    return cli([command, *sys.argv[1:]])

