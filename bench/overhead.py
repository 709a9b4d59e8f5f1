r"""Suite 2 (the paper's Table 30): cost of MZ-Full relative to the standard
Set Transformer at the Small (d=64, n=30), Medium (d=128, n=50) and Large
(d=256, n=100) configurations, batch 64 — parameter, inference-time,
training-step-time and peak-memory ratios beside the paper's, plus the FLOP
ratio of one ISAB block counted on our exact layers, and the time and peak
memory of one MZ-ISAB forward + backward against a standard ISAB."""
from functools import partial

import torch
from torch.utils.flop_counter import FlopCounterMode

from mzlayers import ISAB, MZISAB, MZMultiheadAttention, MZSetTransformer, SetTransformer, Zonotope

from .workloads import ragged

CONFIGS = {'small': (64, 30), 'medium': (128, 50), 'large': (256, 100)}
BATCH, IN_CHANNELS = 64, 8
MODELS = ('standard', 'mz-full')
BLOCKS = ('isab', 'mz-isab', 'mz-isab-recompute', 'mz-isab-stored')
#: Rows per chunk of the ``'mz-isab-recompute'`` block (``checkpoint_rows``).
RECOMPUTE_ROWS = 256
#: Target of one MZ-ISAB forward + backward: at most this many times the peak
#: memory of a standard ISAB on the same batch.
BLOCK_MEMORY_TARGET = 2.5
#: Table 30 of the paper (RTX 5090, batch 64), ratios MZ / Standard.
PAPER_RATIOS = {'params': 1.9, 'inference': 2.4, 'train': 2.2, 'memory': 2.5}


def make_model(name: str, channels: int) -> torch.nn.Module:
    kw = dict(channels=channels, ff_channels=2 * channels, dropout=0.0)
    if name == 'standard':
        return SetTransformer(IN_CHANNELS, 1, **kw)
    return MZSetTransformer(IN_CHANNELS, 1, num_generators=8, num_matrix_generators=4, **kw)


def make_block(name: str, channels: int) -> torch.nn.Module:
    r"""One encoder block at the default configuration (16 inducing points,
    4 heads, :math:`d_{ff} = 2d`; MZ: :math:`n_g = 8`, :math:`L = 4`;
    ``'mz-isab-recompute'`` with :obj:`checkpoint_rows=RECOMPUTE_ROWS`,
    ``'mz-isab-stored'`` with its activations stored, :obj:`recompute=False`)."""
    if name == 'isab':
        return ISAB(channels, 16, 4, ff_channels=2 * channels)
    rows = RECOMPUTE_ROWS if name == 'mz-isab-recompute' else None
    attention = partial(MZMultiheadAttention, recompute=name != 'mz-isab-stored')
    return MZISAB(channels, 16, heads=4, ff_channels=2 * channels, checkpoint_rows=rows,
                  attention=attention)


def block_inputs(name: str, config: str, device: torch.device, scale: float = 1.0):
    r"""The batch of :func:`inputs` with features of the block width: plain
    tokens for the ISAB, zonotope tokens (as the embedding makes them,
    generators of scale :math:`1/\sqrt{n_g d}`) for the MZ-ISABs."""
    x, batch, num_sets = inputs(config, device, scale)
    g = torch.Generator().manual_seed(2)
    d = CONFIGS[config][0]
    x = torch.randn(x.size(0), d, generator=g).to(device)
    if name == 'isab':
        return x, batch, num_sets
    G = torch.randn(x.size(0), 8, d, generator=g).to(device) / (8 * d) ** 0.5
    return Zonotope(x, G), batch, num_sets


def inputs(config: str, device: torch.device, scale: float = 1.0):
    channels, n = CONFIGS[config]
    batch = max(2, int(BATCH * scale))
    return ragged(torch.full((batch,), max(2, int(n * scale))), IN_CHANNELS, device)


def isab_flop_ratio(channels: int, n: int) -> float:
    r"""FLOPs of one forward of :class:`MZISAB` (n_g=8, L=4) over
    :class:`ISAB` on one set of :obj:`n` elements."""
    flops = []
    for block in (make_block(name, channels) for name in ('isab', 'mz-isab')):
        x = torch.randn(n, channels)
        with FlopCounterMode(display=False) as counter:
            block(x)
        flops.append(counter.get_total_flops())
    return flops[1] / flops[0]


def model_flop_ratio(channels: int, data: tuple) -> float:
    r"""FLOPs of one training step (forward + backward) of MZ-Full over the
    standard Set Transformer on the benchmark batch :obj:`data`."""
    flops = []
    for name in MODELS:
        model = make_model(name, channels).to(data[0].device)
        with FlopCounterMode(display=False) as counter:
            pred = model(*data)
            (pred[0] if isinstance(pred, tuple) else pred).sum().backward()
        flops.append(counter.get_total_flops())
    return flops[1] / flops[0]


def build(job: dict):
    r"""The step of one (model, config, mode) job for the memory child."""
    from .measure import inference_step, train_step
    device = torch.device(job.get('device', 'cpu'))
    torch.manual_seed(0)
    channels = CONFIGS[job['config']][0]
    if job['model'] in BLOCKS:
        model = make_block(job['model'], channels).to(device)
        data = block_inputs(job['model'], job['config'], device, job.get('scale', 1.0))
    else:
        model = make_model(job['model'], channels).to(device)
        data = inputs(job['config'], device, job.get('scale', 1.0))
    return (train_step if job['mode'] == 'train' else inference_step)(model, data)
