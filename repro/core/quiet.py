r"""Keeps the libraries' own warnings and banners out of a normal run.

Each filter names one message and says where it comes from; everything
else, our own warnings included, still shows.
"""
import logging
import os
import re
import sys
import warnings

LIBRARY_WARNINGS = (
    # torch_geometric calls torch.jit.script at import time
    # (torch_geometric/nn/pool/select/base.py), which torch deprecates
    ("`torch.jit.script` is deprecated", FutureWarning),
    # Lightning's SLURM detection on a machine with `srun` when we are not in a SLURM job
    ("The `srun` command is available on your system but is not used", Warning),
    # Lightning's own use of torch's deprecated LeafSpec (lightning/pytorch/utilities/_pytree.py)
    ("`isinstance(treespec, LeafSpec)` is deprecated", Warning),
    # Lightning's ModelCheckpoint when a cell resumes into its own checkpoint folder, as
    # designed (lightning/pytorch/callbacks/model_checkpoint.py; .cells)
    ("Checkpoint directory ", Warning),
)
r"""(start of the message, category) of every filtered library warning."""

LIGHTNING_BANNERS = "lightning.pytorch.utilities.rank_zero"
r"""The logger of Lightning's informational lines ("GPU available: ...",
"TPU available: ...", its tips about other products, "`Trainer.fit`
stopped"); its warnings still show."""


def _warning_options() -> list[str]:
    # LIBRARY_WARNINGS as PYTHONWARNINGS options: there a message is a literal prefix, and
    # options are split on commas and fields on colons, so each message is cut before either.
    return [f"ignore:{re.split('[,:]', message)[0]}:{category.__name__}"
            for message, category in LIBRARY_WARNINGS]


def show_progress_bar(progress: bool | None = None) -> bool:
    r"""Whether to draw a progress bar: :obj:`progress` if given, else
    :obj:`True` in an interactive terminal outside CI (:obj:`$CI` unset)."""
    if progress is not None:
        return progress
    return sys.stderr.isatty() and not os.environ.get("CI")


def filter_library_warnings() -> None:
    r"""Filters :obj:`LIBRARY_WARNINGS` in this process. Importing
    :mod:`mzattn.repro` calls it, so that a table script run as
    :obj:`python repro/<script>.py` imports PyG without its warning."""
    for message, category in LIBRARY_WARNINGS:
        warnings.filterwarnings("ignore", message=re.escape(message), category=category)


def quiet_libraries(progress: bool | None = None) -> None:
    r"""Filters :obj:`LIBRARY_WARNINGS` here and, through
    :obj:`PYTHONWARNINGS`, in every process started from here (the workers
    of :obj:`--jobs` and SLURM tasks import PyG before any of our code runs),
    and sets the :obj:`LIGHTNING_BANNERS` logger to :obj:`WARNING`. Without a
    progress bar (:func:`show_progress_bar` of :obj:`progress`), a plain log,
    Lightning's other informational lines are left out too."""
    filter_library_warnings()
    given = [o for o in os.environ.get("PYTHONWARNINGS", "").split(",") if o]
    os.environ["PYTHONWARNINGS"] = ",".join(
        given + [o for o in _warning_options() if o not in given])
    logging.getLogger(LIGHTNING_BANNERS).setLevel(logging.WARNING)
    logging.getLogger("lightning.pytorch").setLevel(
        logging.NOTSET if show_progress_bar(progress) else logging.WARNING)
