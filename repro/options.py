r"""The command-line options of a table run and of the dispatch, with the
dataclasses of the latter. Nothing here imports torch or Lightning, so that
:obj:`mzattn-repro TABLE --help` answers at once (:func:`table_parser`)."""
import argparse
import os.path as osp
from dataclasses import dataclass, field

from mzattn.datasets.batching import BATCHINGS

from .spec import PROFILES

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
    parser.add_argument("--out", default=OUT,
                        help=f"results folder; the table's cells, report and figures go to "
                             f"OUT/TABLE/ (default: {OUT})")
    add_batching_argument(parser)
    parser.add_argument("--device", type=_device, choices=sorted(DEVICES), default="auto",
                        help="cpu, cuda (or gpu), or auto: a GPU when one is visible")
    parser.add_argument("--devices", default="1", help="devices per node, passed to Lightning")
    parser.add_argument("--num-nodes", type=int, default=1)
    parser.add_argument("--strategy", default="auto", help="Lightning strategy, e.g. ddp")
    parser.add_argument("--precision", default="32-true",
                        help="Lightning precision, e.g. bf16-mixed")
    parser.add_argument("--deterministic", action="store_true",
                        help="use deterministic algorithms only")
    parser.add_argument("--num-workers", type=int, default=0)
    parser.add_argument("--threads", type=int, default=None, help="torch CPU threads")
    parser.add_argument("--data-root", default=None, help="dataset cache root")
    parser.add_argument("--keep-checkpoints", action="store_true")
    bar = parser.add_mutually_exclusive_group()
    bar.add_argument("--progress", dest="progress", action="store_true", default=None)
    bar.add_argument("--no-progress", dest="progress", action="store_false")
    add_launch_arguments(parser)


def add_batching_argument(parser: argparse.ArgumentParser) -> None:
    r"""Adds :obj:`--batching` (:obj:`mzattn.datasets.batching.BATCHINGS`)
    to :obj:`parser`."""
    parser.add_argument("--batching", choices=list(BATCHINGS), default="masked",
                        help="masked: ragged sets, only real elements (default); padded: "
                             "zero-padded to the batch's largest set, no mask, as the reference "
                             "Set Transformer code; padded-dataset: to the dataset's largest set "
                             "(docs/reproduction.md)")


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


def parse_names(text: str) -> list[str]:
    r"""The names of a comma-separated option, e.g. :obj:`--columns d=8,d=32`."""
    return [name.strip() for name in text.split(",") if name.strip()]


def parse_seeds(text: str) -> list[int]:
    r"""The seeds of :obj:`--seeds 0,1,2`."""
    try:
        return [int(seed) for seed in parse_names(text)]
    except ValueError as error:
        raise argparse.ArgumentTypeError(f"'--seeds' must be integers (got {text!r})") from error


def add_launch_arguments(parser: argparse.ArgumentParser) -> None:
    r"""Adds :obj:`--launcher`, :obj:`--jobs`, :obj:`--cells-per-gpu` and
    the :obj:`--slurm-*` options to :obj:`parser`."""
    group = parser.add_argument_group("dispatch (docs/clusters.md)")
    group.add_argument("--launcher", choices=LAUNCHERS, default="local",
                       help="local: this machine; slurm: a job array per table (submitit)")
    group.add_argument("--jobs", type=int, default=0,
                       help="local cells at a time, on a pool of worker processes (default: "
                            "one per GPU slot, else 1 = in this process)")
    group.add_argument("--cells-per-gpu", type=int, default=1,
                       help="local cells sharing one GPU (default: 1)")
    slurm = SlurmOptions()
    for name, kind, text in (
            ("partition", str, "partition"),
            ("time", int, "time limit of one cell, minutes (requeued when reached)"),
            ("gpus", int, "GPUs per cell"), ("cpus", int, "CPUs (threads) per cell"),
            ("mem-gb", float, "memory per cell, GB"), ("account", str, "account to charge"),
            ("qos", str, "quality of service"),
            ("array-parallelism", int, "cells of one table running at once")):
        attr = _SLURM_FIELDS.get(name, name.replace("-", "_"))
        group.add_argument(f"--slurm-{name}", type=kind, default=getattr(slurm, attr),
                           help=f"SLURM: {text} (default: {getattr(slurm, attr)})")


_SLURM_FIELDS = {"time": "time_min", "array-parallelism": "parallelism"}


def launch_options_from_args(args: argparse.Namespace) -> LaunchOptions:
    r"""The :class:`LaunchOptions` of arguments parsed with
    :func:`add_launch_arguments` (and :obj:`--threads`)."""
    if args.jobs < 0 or args.cells_per_gpu < 1:
        raise ValueError("'--jobs' must be >= 0 and '--cells-per-gpu' >= 1")
    slurm = SlurmOptions(partition=args.slurm_partition, time_min=args.slurm_time,
                         gpus=args.slurm_gpus, cpus=args.slurm_cpus, mem_gb=args.slurm_mem_gb,
                         account=args.slurm_account, qos=args.slurm_qos,
                         parallelism=args.slurm_array_parallelism)
    return LaunchOptions(launcher=args.launcher, jobs=args.jobs,
                         cells_per_gpu=args.cells_per_gpu,
                         threads=getattr(args, "threads", None), slurm=slurm)
