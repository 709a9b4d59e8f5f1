r"""The :obj:`mzattn-repro` command (also :obj:`python -m mzattn.repro`).

.. code-block:: text

    mzattn-repro list                      # tables with a script
    mzattn-repro table3 --profile quick    # run a table, write its report
    mzattn-repro report [--out results]    # rebuild every report from the JSONs
    mzattn-repro demo                      # Figure 1 / Table 3 headline, ~2-5 min on 2 cores
    mzattn-repro models [--docs PAGE]      # registry models and parameter counts
    mzattn-repro docker build|run TABLE    # the CUDA image (docker-py)
    mzattn-repro env                       # environment information
    mzattn-repro bench                     # speed and memory benchmarks
    mzattn-repro datagen [TABLE ...]       # generate (cache) and time a profile's data
    mzattn-repro campaign NAME [NAME ...] [--jobs 2]  # named lists of cells, resumable (--status)
    mzattn-repro readings [TASK]           # which reading of a task the paper's numbers fix
"""
import argparse
import importlib
import sys

from mzattn.extras import missing_extra_hint
from mzattn.names import did_you_mean

from .core.quiet import quiet_libraries
from .core.registry import TABLE_MODULES, list_tables, load_spec, table_title
from .engine.options import OUT, table_parser

COMMANDS = {  # command -> its line in --help
    "list": "list the tables that have a script, with their titles",
    "report": "rebuild every report.md and SUMMARY.md (and --readme's verdict table) "
              "from the cell JSONs",
    "demo": "the Figure 1 / Table 3 headline (MEB, d = 8): Standard vs. MZAttn-Full, "
            "trained and judged in minutes on a CPU",
    "models": "the registry's models with their parameter counts beside the paper's",
    "docker": "build the CUDA image or run a table in it (docker-py)",
    "env": "versions, devices and data paths, for bug reports",
    "bench": "speed and memory benchmarks against PyG and the standard layers",
    "table30": "Table 30: MZ-Full / Standard cost ratios (a benchmark)",
    "analysis": "IHW uncertainty, calibration, generator probing and TDOF analysis",
    "datagen": "generate (and time) the synthetic data of tables, filling the cache",
    "campaign": "run a named, resumable list of cells (--status shows progress)",
    "readings": "per under-specified task, which reading the paper's own numbers fix "
                "(no training)",
}
_DELEGATED = {  # command -> (module, function taking the remaining argv)
    "docker": ("mzattn.repro.docker.docker_driver", "cli"),
    "env": ("mzattn.repro.core.envinfo", "cli"),
    "bench": ("mzattn.bench.cli", "cli"),
    "table30": ("mzattn.bench.cli", "table30_cli"),
    "analysis": ("mzattn.repro.analysis", "cli"),
    "datagen": ("mzattn.repro.engine.datagen", "cli"),
    "campaign": ("mzattn.repro.campaign", "cli"),
    "readings": ("mzattn.repro.analysis.readings", "cli"),
}


def _list() -> int:
    width = max(map(len, list_tables())) + 1
    for key in list_tables():
        print(f"{key:<{width}} {table_title(key)}")
    return 0


MODELS_BEGIN, MODELS_END = "<!-- models:begin -->", "<!-- models:end -->"
r"""Markers of the parameter-count table that :obj:`models --docs` splices."""


def _models(argv: list[str]) -> int:
    from mzattn.baselines.registry import models_table
    parser = argparse.ArgumentParser(prog="mzattn-repro models", description=COMMANDS["models"])
    parser.add_argument("--docs", default=None,
                        help="also splice the table into this page between "
                             f"{MODELS_BEGIN} and {MODELS_END} (docs/baselines.md)")
    args = parser.parse_args(argv)
    table = models_table()
    print(table)
    if args.docs:
        from mzattn.bench.report import splice_readme
        splice_readme(args.docs, table, MODELS_BEGIN, MODELS_END)
    return 0


def _report(argv: list[str]) -> int:
    from .report.report import write_report
    from .report.summary import (
        folder_summaries,
        readme_folders,
        specs_in,
        update_readme,
        write_summary,
    )
    parser = argparse.ArgumentParser(prog="mzattn-repro report",
                                     description="rebuild every report from the cell JSONs")
    parser.add_argument("--out", action="append", default=None,
                        help="results folder, repeatable (default: the folders --readme's "
                             f"verdict region lists, else {OUT})")
    parser.add_argument("--readme", default=None,
                        help="also regenerate this README's verdict table from the folders, "
                             "in the order given (paper protocol first), and list them in its "
                             "begin marker")
    args = parser.parse_args(argv)
    try:
        folders = args.out or (readme_folders(args.readme) if args.readme else [OUT])
    except ValueError as error:
        parser.error(str(error))
    summaries = folder_summaries(folders)
    for out, rows in summaries.items():
        for spec in specs_in(out):
            print(write_report(spec, out))
        print(write_summary(out, rows))
    if args.readme:
        try:
            changed = update_readme(args.readme, summaries)
        except ValueError as error:  # no verdict region
            parser.error(str(error))
        print(f"{args.readme}: verdict table {'updated' if changed else 'unchanged'}")
    return 0


def _delegate(command: str, argv: list[str]) -> int:
    name, function = _DELEGATED[command]
    try:
        module = importlib.import_module(name)
    except ModuleNotFoundError as error:
        if error.name != name:
            raise
        print(f"error: 'mzattn-repro {command}' needs {name}, which is not installed",
              file=sys.stderr)
        return 2
    return getattr(module, function)(argv)


def _usage() -> str:
    return "usage: mzattn-repro COMMAND [options]  |  mzattn-repro TABLE [options]"


def _help() -> str:
    width = max(map(len, [*COMMANDS, *TABLE_MODULES])) + 2
    lines = [_usage(), "", "Reproduces the tables of the Matrix Zonotopic Attention paper.",
             "", "commands:"]
    lines += [f"  {name:<{width}}{text}" for name, text in COMMANDS.items()]
    lines += ["", "tables (mzattn-repro TABLE --profile smoke|quick|full):"]
    lines += [f"  {key:<{width}}{table_title(key)}" for key in list_tables()]
    lines += ["", "'mzattn-repro COMMAND --help' or 'mzattn-repro TABLE --help' gives the "
              "options."]
    return "\n".join(lines)


def _table_help(prog: str, key: str) -> int:
    epilog = (f"By default this runs profile quick, results in {OUT}/{key}/ (one JSON per "
              f"cell, report.md, figures); --profile full is the paper's protocol. "
              f"'python repro/{TABLE_MODULES[key]}.py --help' also counts the cells.")
    table_parser(prog, table_title(key), epilog).print_help()
    return 0


def _unknown(command: str) -> int:
    from .analysis.commands import COMMANDS as ANALYSES  # only on this error path: it is heavy
    if command in ANALYSES:  # Tables 14, 19-21 and the figures analyse runs
        print(f"error: {command!r} is an analysis, not a table script: run "
              f"'mzattn-repro analysis {command}' ('mzattn-repro analysis {command} --help' "
              "gives its options)", file=sys.stderr)
        return 2
    hint = did_you_mean(command, [*COMMANDS, *TABLE_MODULES])
    print(f"error: unknown command or table {command!r}{hint}\n{_usage()}\n"
          "'mzattn-repro --help' lists the commands and tables", file=sys.stderr)
    return 2


def main(argv: list[str] | None = None) -> int:
    r"""Runs the command line :obj:`argv` (default: :obj:`sys.argv[1:]`)."""
    argv = sys.argv[1:] if argv is None else list(argv)
    quiet_libraries()
    if not argv or argv[0] in ("-h", "--help"):
        print(_help())
        return 0 if argv else 2
    command, rest = argv[0], argv[1:]
    try:
        return _dispatch(command, rest)
    except ModuleNotFoundError as error:
        hint = missing_extra_hint(error)
        if hint is None:
            raise
        print(f"error: 'mzattn-repro {command}' {hint}", file=sys.stderr)
        return 2


def _dispatch(command: str, rest: list[str]) -> int:
    if command == "list":
        return _list()
    if command == "models":
        return _models(rest)
    if command == "report":
        return _report(rest)
    if command == "demo":
        from .demo import main as demo
        return demo(rest)
    if command in _DELEGATED:
        return _delegate(command, rest)
    if command in TABLE_MODULES:
        prog = f"mzattn-repro {command}"
        if "-h" in rest or "--help" in rest:  # without importing the table (torch, Lightning)
            return _table_help(prog, command)
        from .engine.runner import main as run
        return run(load_spec(command), rest, prog=prog)
    return _unknown(command)
