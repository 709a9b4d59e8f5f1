r"""Suite 3: time of one MZ-ISAB forward + backward as the set size grows
(10 -> 10,000 at a fixed batch: it must grow linearly, not quadratically) and
as the budgets :math:`n_g` and :math:`L` grow."""
import math

import torch

from mzlayers import MZISAB

from .workloads import ragged

CHANNELS, SETS = 64, 8
SIZES = (10, 100, 1000, 10000)
GENERATORS = (2, 4, 8, 16)
MATRIX_GENERATORS = (1, 2, 4, 8)
#: Set size of the n_g and L sweeps (each sweep timed interleaved).
SWEEP_SIZE = 1000


def make_block(num_generators: int = 8, num_matrix_generators: int = 4) -> MZISAB:
    return MZISAB(CHANNELS, 16, heads=4, ff_channels=2 * CHANNELS,
                  num_generators=num_generators,
                  num_matrix_generators=num_matrix_generators)


def set_inputs(n: int, device: torch.device, sets: int = SETS):
    return ragged(torch.full((sets,), n), CHANNELS, device)


def loglog_slope(xs, ys) -> float:
    r"""Least-squares slope of :math:`\log y` against :math:`\log x`."""
    lx, ly = [math.log(v) for v in xs], [math.log(v) for v in ys]
    mx, my = sum(lx) / len(lx), sum(ly) / len(ly)
    cov = sum((a - mx) * (b - my) for a, b in zip(lx, ly, strict=True))
    return cov / sum((a - mx) ** 2 for a in lx)


def build(job: dict):
    from .measure import train_step
    device = torch.device(job.get('device', 'cpu'))
    torch.manual_seed(0)
    block = make_block(job.get('num_generators', 8), job.get('num_matrix_generators', 4))
    return train_step(block.to(device), set_inputs(job['n'], device, job.get('sets', SETS)))
