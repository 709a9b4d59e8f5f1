r"""The command-line options of a table run and of the dispatch, with the
dataclasses of the latter. Nothing here imports torch or Lightning at import
time, so that :obj:`mzattn-repro TABLE --help` answers at once
(:func:`table_parser`).

Every option is checked as it is parsed (its :obj:`type`): a value that
cannot be honoured (:obj:`--threads 0`, :obj:`--seeds -1`, an :obj:`--out`
that is a file or cannot be written) is an argparse usage error, exit
status 2, before any cell, lock or folder is written.
"""
import argparse
import errno
import os
import os.path as osp
import re
import warnings
from collections.abc import Callable
from dataclasses import dataclass, field

from mzattn.datasets.batching import BATCHINGS
from mzattn.repro.core.spec import PROFILES

LAUNCHERS = ("local", "slurm")
r"""The values of :obj:`--launcher`."""


@dataclass(frozen=True)
class SlurmOptions:
    r"""What a SLURM job array asks for, per cell (one array task).

    Args:
        partition (str, optional): Partition (:obj:`sbatch -p`); the
            cluster's default if :obj:`None`. (default: :obj:`None`)
        time_min (int, optional): Time limit of one cell, in minutes. A cell
            that reaches it is checkpointed and requeued. (default: :obj:`240`)
        gpus (int, optional): GPUs per cell. (default: :obj:`0`)
        cpus (int, optional): CPUs per cell; also its torch threads.
            (default: :obj:`2`)
        mem_gb (float, optional): Memory per cell in GB; the partition's
            default if :obj:`None`. (default: :obj:`None`)
        account (str, optional): Account to charge. (default: :obj:`None`)
        qos (str, optional): Quality of service. (default: :obj:`None`)
        parallelism (int, optional): Cells of one array running at once
            (:obj:`sbatch --array=...%N`). (default: :obj:`64`)
        poll_s (float, optional): Seconds between two progress polls.
            (default: :obj:`5.0`)
    """
    partition: str | None = None
    time_min: int = 240
    gpus: int = 0
    cpus: int = 2
    mem_gb: float | None = None
    account: str | None = None
    qos: str | None = None
    parallelism: int = 64
    poll_s: float = 5.0


@dataclass(frozen=True)
class LaunchOptions:
    r"""Where and how many cells run at a time.

    Args:
        launcher (str, optional): :obj:`"local"` or :obj:`"slurm"`.
            (default: :obj:`"local"`)
        jobs (int, optional): Local cells at a time; :obj:`0` picks one per
            GPU slot (GPUs × :obj:`cells_per_gpu`) on a GPU machine, else
            :obj:`1`. (default: :obj:`0`)
        cells_per_gpu (int, optional): Local cells sharing one GPU.
            (default: :obj:`1`)
        threads (int, optional): Torch threads per cell; the machine's CPUs
            split between the jobs if :obj:`None`. (default: :obj:`None`)
        slurm (SlurmOptions, optional): SLURM resources. (default:
            :obj:`SlurmOptions()`)
    """
    launcher: str = "local"
    jobs: int = 0
    cells_per_gpu: int = 1
    threads: int | None = None
    slurm: SlurmOptions = field(default_factory=SlurmOptions)


DEVICES = {"cpu": "cpu", "cuda": "gpu", "gpu": "gpu", "auto": "auto"}
r"""The values of :obj:`--device` → Lightning's accelerator."""

OUT = osp.join("results", "runs")
r"""The default results folder of a run: apart from the committed
:obj:`results/quick` and :obj:`results/full` (and ignored by git)."""


def table_parser(prog: str, description: str,
                 epilog: str | None = None) -> argparse.ArgumentParser:
    r"""The parser of :obj:`mzattn-repro TABLE` and of a table script: the
    run options (:func:`add_run_arguments`) and the dispatch options
    (:func:`add_launch_arguments`), with :obj:`epilog` after them."""
    parser = argparse.ArgumentParser(prog=prog, description=description, epilog=epilog)
    add_run_arguments(parser)
    return parser


def add_run_arguments(parser: argparse.ArgumentParser) -> None:
    r"""Adds the options of a table run to :obj:`parser`."""
    parser.add_argument("--profile", choices=PROFILES, default="quick",
                        help="smoke (seconds), quick (2-core CPU), full (paper protocol)")
    parser.add_argument("--models", type=parse_names, default=None,
                        help="comma-separated row labels or registry names "
                             "(default: the profile's, else all)")
    parser.add_argument("--columns", type=parse_names, default=None,
                        help="comma-separated column labels (default: the profile's, else all)")
    parser.add_argument("--seeds", type=parse_seeds, default=None,
                        help="comma-separated seeds (default: the profile's)")
    parser.add_argument("--out", type=writable_folder, default=OUT,
                        help=f"results folder; the table's cells, report and figures go to "
                             f"OUT/TABLE/ (default: {OUT})")
    add_batching_argument(parser)
    parser.add_argument("--device", type=_device, choices=sorted(DEVICES), default="auto",
                        help="cpu, cuda (or gpu), or auto: a GPU when one is visible")
    parser.add_argument("--devices", default="1", help="devices per node, passed to Lightning")
    parser.add_argument("--num-nodes", type=at_least(1), default=1)
    parser.add_argument("--strategy", type=_strategy, default="auto",
                        help="Lightning strategy, e.g. ddp")
    parser.add_argument("--precision", type=_precision, default="32-true",
                        help="Lightning precision, e.g. bf16-mixed")
    parser.add_argument("--deterministic", action="store_true",
                        help="use deterministic algorithms only")
    parser.add_argument("--compile", action="store_true",
                        help="train on the static-shape path under torch.compile: batches "
                             "padded to a power-of-two set size, one graph per bucket, "
                             "mode reduce-overhead (CUDA graphs) on CUDA (docs/benchmarks.md)")
    add_store_activations_argument(parser)
    parser.add_argument("--seeds-together", action="store_true",
                        help="train the seeds of a cell as one group in one process on one "
                             "device (torch.func.vmap), one record per seed as usual; with "
                             "--jobs N or --launcher slurm a group is one worker's or one array "
                             "task's run; --compile, a precision other than 32, several "
                             "devices, mamba-pma or a single seed train one seed after another "
                             "(docs/reproduction.md)")
    parser.add_argument("--num-workers", type=at_least(0), default=0,
                        help="data-loader worker processes per cell (default: 0)")
    parser.add_argument("--threads", type=at_least(1), default=None, help="torch CPU threads")
    parser.add_argument("--data-root", type=writable_folder, default=None,
                        help="dataset cache root")
    parser.add_argument("--keep-checkpoints", action="store_true")
    bar = parser.add_mutually_exclusive_group()
    bar.add_argument("--progress", dest="progress", action="store_true", default=None)
    bar.add_argument("--no-progress", dest="progress", action="store_false")
    add_launch_arguments(parser)


def add_store_activations_argument(parser: argparse.ArgumentParser) -> None:
    r"""Adds :obj:`--store-activations`
    (:obj:`RunOptions.store_activations`) to :obj:`parser`."""
    parser.add_argument("--store-activations", action="store_true",
                        help="MZ attention stores its activations for backward instead of "
                             "recomputing them: MZ-Full's step about 0.76x the time, about 4x "
                             "the training memory; recorded as the record's 'activations' "
                             "(docs/benchmarks.md)")


_BATCHING_HELP = ("masked: ragged sets, only real elements (default); padded: zero-padded to "
                  "the batch's largest set, no mask, as the reference Set Transformer code; "
                  "padded-dataset: to the dataset's largest set (docs/reproduction.md)")


def add_batching_argument(parser: argparse.ArgumentParser, several: bool = False) -> None:
    r"""Adds :obj:`--batching` (:obj:`mzattn.datasets.batching.BATCHINGS`)
    to :obj:`parser`: one batching, or with :obj:`several` a comma-separated
    list of them (:func:`parse_batchings`, a tuple; a campaign runs its
    cells under each in turn)."""
    if several:
        parser.add_argument("--batching", type=parse_batchings, default=("masked",),
                            help=f"{_BATCHING_HELP}; several, comma-separated (masked,padded), "
                                 "run the campaign's cells under each in turn")
    else:
        parser.add_argument("--batching", choices=list(BATCHINGS), default="masked",
                            help=_BATCHING_HELP)


def parse_batchings(text: str) -> tuple[str, ...]:
    r"""The batchings of :obj:`--batching masked,padded`: distinct names of
    :obj:`mzattn.datasets.batching.BATCHINGS`, at least one."""
    names = parse_names(text)
    unknown = [name for name in names if name not in BATCHINGS]
    if not names or unknown or len(set(names)) < len(names):
        raise argparse.ArgumentTypeError(
            f"must be distinct batchings of {', '.join(BATCHINGS)}, at least one (got {text!r})")
    return tuple(names)


def _device(name: str) -> str:
    # fail before any work when the device cannot be honoured
    if DEVICES.get(name) != "gpu":
        return name
    import torch
    if not torch.cuda.is_available():
        build = f"built with CUDA {torch.version.cuda}" if torch.version.cuda else \
            "built without CUDA"
        raise argparse.ArgumentTypeError(
            f"'{name}': torch {torch.__version__} ({build}) sees no CUDA device; use "
            "'--device cpu', or '--device auto' to take a GPU when one is visible")
    return name


def at_least(minimum: int, kind: Callable[[str], float] = int) -> Callable[[str], float]:
    r"""The :obj:`type` of an option whose value is a number (:obj:`int`
    or :obj:`float`) of at least :obj:`minimum` (above it for a float
    whose minimum is 0)."""
    def parse(text: str) -> float:
        try:
            value = kind(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None
        if value < minimum or (kind is float and value <= minimum == 0):
            bound = f"at least {minimum}" if kind is int or minimum else "above 0"
            raise argparse.ArgumentTypeError(f"must be {bound} (got {text})")
        return value
    parse.__name__ = kind.__name__
    return parse


def writable_folder(text: str) -> str:
    r"""The :obj:`type` of a folder this run writes (:obj:`--out`): refused
    when a name in it is too long for its file system, when it or a folder
    above it is a file, or when the folder (or the nearest existing one
    above it, where it will be created) cannot be written. Nothing is
    created."""
    path = osp.abspath(text)
    existing = path
    while not osp.lexists(existing):
        existing = osp.dirname(existing)
    if not osp.isdir(existing):
        raise argparse.ArgumentTypeError(f"{text!r}: {existing!r} is a file, not a folder")
    longest = max(path.split(os.sep), key=lambda name: len(name.encode()))
    limit = os.pathconf(existing, "PC_NAME_MAX") if hasattr(os, "pathconf") else 255
    if len(longest.encode()) > limit:
        raise argparse.ArgumentTypeError(
            f"{text!r}: {os.strerror(errno.ENAMETOOLONG).lower()} ({len(longest.encode())} "
            f"bytes in one name, this file system allows {limit})")
    if not os.access(existing, os.W_OK | os.X_OK):
        where = "" if existing == path else f" (it would be created in {existing!r})"
        raise argparse.ArgumentTypeError(f"{text!r}: cannot write there{where}: permission "
                                         "denied or a read-only file system")
    return text


def _precision(text: str) -> str:
    # a precision that Lightning accepts (its own check, without its warning on aliases)
    from lightning.fabric.connector import _convert_precision_to_unified_args
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            _convert_precision_to_unified_args(text)
    except ValueError as error:
        raise argparse.ArgumentTypeError(str(error)) from None
    return text


def _strategy(name: str) -> str:
    # a strategy name that Lightning knows
    from lightning.pytorch.strategies import StrategyRegistry
    if name != "auto" and name not in StrategyRegistry:
        known = ", ".join(["auto", *StrategyRegistry.available_strategies()])
        raise argparse.ArgumentTypeError(f"unknown Lightning strategy {name!r}; choose from "
                                         f"{known}")
    return name


def parse_names(text: str) -> list[str]:
    r"""The names of a comma-separated option, e.g. :obj:`--columns d=8,d=32`."""
    return [name.strip() for name in text.split(",") if name.strip()]


def parse_duration(text: str) -> float:
    r"""The seconds of a duration such as :obj:`2h45m`, :obj:`90m`,
    :obj:`1h`, :obj:`30s` or :obj:`5400` (seconds), positive."""
    match = re.fullmatch(r"(?:(\d+(?:\.\d*)?)h)?(?:(\d+(?:\.\d*)?)m)?(?:(\d+(?:\.\d*)?)s?)?",
                         text.strip())
    if not text.strip() or match is None:
        raise argparse.ArgumentTypeError(f"must be a duration such as 2h45m, 90m or 5400 "
                                         f"(seconds) (got {text!r})")
    hours, minutes, seconds = (float(part or 0) for part in match.groups())
    total = 3600 * hours + 60 * minutes + seconds
    if total <= 0:
        raise argparse.ArgumentTypeError(f"must be positive (got {text!r})")
    return total


def parse_seeds(text: str) -> list[int]:
    r"""The seeds of :obj:`--seeds 0,1,2`: distinct integers, at least one,
    none negative."""
    try:
        seeds = [int(seed) for seed in parse_names(text)]
    except ValueError as error:
        raise argparse.ArgumentTypeError(f"must be integers (got {text!r})") from error
    if not seeds or min(seeds) < 0 or len(set(seeds)) < len(seeds):
        raise argparse.ArgumentTypeError(
            f"must be distinct integers >= 0, at least one (got {text!r})")
    return seeds


def add_launch_arguments(parser: argparse.ArgumentParser) -> None:
    r"""Adds :obj:`--launcher`, :obj:`--jobs`, :obj:`--cells-per-gpu` and
    the :obj:`--slurm-*` options to :obj:`parser`."""
    group = parser.add_argument_group("dispatch (docs/clusters.md)")
    group.add_argument("--launcher", choices=LAUNCHERS, default="local",
                       help="local: this machine; slurm: a job array per table (submitit)")
    group.add_argument("--jobs", type=at_least(0), default=0,
                       help="local cells at a time, on a pool of worker processes (default: "
                            "one per GPU slot, else 1 = in this process)")
    group.add_argument("--cells-per-gpu", type=at_least(1), default=1,
                       help="local cells sharing one GPU (default: 1)")
    slurm = SlurmOptions()
    for name, kind, text in (
            ("partition", str, "partition"),
            ("time", at_least(1), "time limit of one cell, minutes (requeued when reached)"),
            ("gpus", at_least(0), "GPUs per cell"),
            ("cpus", at_least(1), "CPUs (threads) per cell"),
            ("mem-gb", at_least(0, float), "memory per cell, GB"),
            ("account", str, "account to charge"), ("qos", str, "quality of service"),
            ("array-parallelism", at_least(1), "cells of one table running at once")):
        attr = _SLURM_FIELDS.get(name, name.replace("-", "_"))
        group.add_argument(f"--slurm-{name}", type=kind, default=getattr(slurm, attr),
                           help=f"SLURM: {text} (default: {getattr(slurm, attr)})")


_SLURM_FIELDS = {"time": "time_min", "array-parallelism": "parallelism"}


def launch_options_from_args(args: argparse.Namespace) -> LaunchOptions:
    r"""The :class:`LaunchOptions` of arguments parsed with
    :func:`add_launch_arguments` (and :obj:`--threads`), which checked them."""
    slurm = SlurmOptions(partition=args.slurm_partition, time_min=args.slurm_time,
                         gpus=args.slurm_gpus, cpus=args.slurm_cpus, mem_gb=args.slurm_mem_gb,
                         account=args.slurm_account, qos=args.slurm_qos,
                         parallelism=args.slurm_array_parallelism)
    return LaunchOptions(launcher=args.launcher, jobs=args.jobs,
                         cells_per_gpu=args.cells_per_gpu,
                         threads=getattr(args, "threads", None), slurm=slurm)
