r"""Keeps the libraries' own warnings and banners out of a normal run.

Each filter names one message and says where it comes from; everything
else, our own warnings included, still shows.
"""
import logging
import warnings

LIBRARY_WARNINGS = (
    # torch_geometric calls torch.jit.script at import time
    # (torch_geometric/nn/pool/select/base.py), which torch deprecates
    (r"`torch\.jit\.script` is deprecated", FutureWarning),
    # Lightning's SLURM detection on a machine with `srun` when we are not in a SLURM job
    (r"The `srun` command is available on your system but is not used", Warning),
    # Lightning's own use of torch's deprecated LeafSpec (lightning/pytorch/utilities/_pytree.py)
    (r"`isinstance\(treespec, LeafSpec\)` is deprecated", Warning),
)

LIGHTNING_BANNERS = "lightning.pytorch.utilities.rank_zero"
r"""The logger of Lightning's informational lines ("GPU available: ...",
"TPU available: ...", its tips about other products, "`Trainer.fit`
stopped"); its warnings still show."""


def quiet_libraries() -> None:
    r"""Filters :obj:`LIBRARY_WARNINGS` and sets the :obj:`LIGHTNING_BANNERS`
    logger to :obj:`WARNING`."""
    for message, category in LIBRARY_WARNINGS:
        warnings.filterwarnings("ignore", message=message, category=category)
    logging.getLogger(LIGHTNING_BANNERS).setLevel(logging.WARNING)
