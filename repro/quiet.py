r"""Keeps the libraries' own warnings and banners out of a normal run.

Each filter names one message and says where it comes from; everything
else, our own warnings included, still shows.
"""
import logging
import os
import re
import warnings

LIBRARY_WARNINGS = (
    # torch_geometric calls torch.jit.script at import time
    # (torch_geometric/nn/pool/select/base.py), which torch deprecates
    ("`torch.jit.script` is deprecated", FutureWarning),
    # Lightning's SLURM detection on a machine with `srun` when we are not in a SLURM job
    ("The `srun` command is available on your system but is not used", Warning),
    # Lightning's own use of torch's deprecated LeafSpec (lightning/pytorch/utilities/_pytree.py)
    ("`isinstance(treespec, LeafSpec)` is deprecated", Warning),
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


def quiet_libraries() -> None:
    r"""Filters :obj:`LIBRARY_WARNINGS` here and, through
    :obj:`PYTHONWARNINGS`, in every process started from here (the workers
    of :obj:`--jobs` and SLURM tasks import PyG before any of our code runs),
    and sets the :obj:`LIGHTNING_BANNERS` logger to :obj:`WARNING`."""
    for message, category in LIBRARY_WARNINGS:
        warnings.filterwarnings("ignore", message=re.escape(message), category=category)
    given = [o for o in os.environ.get("PYTHONWARNINGS", "").split(",") if o]
    os.environ["PYTHONWARNINGS"] = ",".join(
        given + [o for o in _warning_options() if o not in given])
    logging.getLogger(LIGHTNING_BANNERS).setLevel(logging.WARNING)
