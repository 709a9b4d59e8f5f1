r"""The Mamba stack of :class:`~mzattn.baselines.MambaPMA`: :mod:`mambapy`'s
layers, with the selective scan chosen by device.

Importing this module imports :mod:`mambapy` (the ``mamba`` extra);
:class:`~mzattn.baselines.MambaPMA` imports it only once that is checked.
"""
import torch
from mambapy.mamba import MambaBlock, MambaConfig, RMSNorm
from mzattn.baselines.selective_scan import selective_scan
from torch import Tensor
from torch.nn import ModuleList

SCANS = ('auto', 'sequential', 'parallel')
r"""The selective-scan kernels: :obj:`'sequential'`
(:func:`~mzattn.baselines.selective_scan.selective_scan`, a loop over time
with the state in cache; the fastest on a CPU), :obj:`'parallel'`
(:mod:`mambapy`'s log-depth parallel scan, meant for GPUs), or
:obj:`'auto'`: parallel on CUDA tensors, sequential otherwise."""


class MambaEncoder(torch.nn.Module):
    r""":math:`L` residual Mamba layers, :math:`\mathbf{x} \leftarrow
    \mathbf{x} + \mathrm{S6}(\mathrm{RMSNorm}(\mathbf{x}))`: the modules,
    parameter names and initialisation of :class:`mambapy.mamba.Mamba`
    (its state dicts load both ways), with the scan kernel :obj:`scan`
    (one of :obj:`SCANS`).

    Shapes:
        - **input:** :obj:`[B, L, d_model]`
        - **output:** :obj:`[B, L, d_model]`
    """
    def __init__(self, config: MambaConfig, scan: str = 'auto'):
        super().__init__()
        if scan not in SCANS:
            raise ValueError(f"'scan' must be one of {SCANS} (got '{scan}')")
        self.config = config
        self.scan = scan
        self.layers = ModuleList([_ResidualLayer(config, scan) for _ in range(config.n_layers)])

    def forward(self, x: Tensor) -> Tensor:
        for layer in self.layers:
            x = layer(x)
        return x


class _ResidualLayer(torch.nn.Module):
    # mambapy's ResidualBlock, with the mixer given its scan
    def __init__(self, config: MambaConfig, scan: str):
        super().__init__()
        self.mixer = _ScanBlock(config, scan)
        self.norm = RMSNorm(config.d_model, config.rms_norm_eps, config.mup)

    def forward(self, x: Tensor) -> Tensor:
        return self.mixer(self.norm(x)) + x


class _ScanBlock(MambaBlock):
    # mambapy's S6 block; its parallel-scan training path calls selective_scan
    def __init__(self, config: MambaConfig, scan: str):
        super().__init__(config)
        self.scan = scan

    def selective_scan(self, x: Tensor, delta: Tensor, A: Tensor, B: Tensor, C: Tensor,
                       D: Tensor) -> Tensor:
        if self.scan == 'parallel' or (self.scan == 'auto' and x.is_cuda):
            return super().selective_scan(x, delta, A, B, C, D)
        return selective_scan(x, delta, A, B, C, D)
