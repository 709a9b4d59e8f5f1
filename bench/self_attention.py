r"""Suite 5: one SAB (self-attention over the elements of every set, d = 64,
4 heads) of :mod:`mzlayers` under each attention backend, against PyG's
:class:`SetAttentionBlock` on :func:`to_dense_batch` padding.  The peer of
every ratio is ``ours-dense`` (one padded bucket, masked SDPA): PyG's block
runs only where its padded :obj:`[B, H, n_max, n_max]` scores stay small."""
import torch
from torch_geometric.nn.aggr.utils import SetAttentionBlock
from torch_geometric.utils import to_dense_batch

from mzlayers import SAB
from mzlayers.layout import resolve_layout

from .workloads import workload_step

CHANNELS, HEADS = 64, 4
IMPLEMENTATIONS = ('ours-auto', 'ours-segment', 'ours-dense', 'pyg-sab')
BASELINE = 'ours-dense'
#: Largest padded score count B * n_max^2 of a ``pyg-sab`` run.
PYG_MAX_SCORES = 2**26
NOTE = ('`pyg-sab` (PyG `SetAttentionBlock` on `to_dense_batch`) runs only where its padded '
        'scores B · n_max² stay below 2^26 per head.')


class OursSAB(torch.nn.Module):
    r"""mzlayers SAB; the FFN width equals :obj:`channels`."""
    def __init__(self, backend: str):
        super().__init__()
        self.sab = SAB(CHANNELS, heads=HEADS, ff_channels=CHANNELS, backend=backend)

    def forward(self, x, batch, num_sets):
        return self.sab(x, layout=resolve_layout(x, batch, num_sets, CHANNELS))


class PyGSAB(torch.nn.Module):
    r"""PyG's padded SAB, returning the real rows only."""
    def __init__(self):
        super().__init__()
        self.sab = SetAttentionBlock(CHANNELS, HEADS, layer_norm=True)

    def forward(self, x, batch, num_sets):
        h, mask = to_dense_batch(x, batch, batch_size=num_sets)
        return self.sab(h, mask)[mask]


def runs_on(impl: str, sizes: torch.Tensor) -> bool:
    return impl != 'pyg-sab' or sizes.numel() * int(sizes.max()) ** 2 <= PYG_MAX_SCORES


def make_model(impl: str) -> torch.nn.Module:
    return OursSAB(impl[len('ours-'):]) if impl.startswith('ours-') else PyGSAB()


def build(job: dict):
    r"""The step of one job (:func:`~mzattn.bench.workloads.workload_step`)."""
    return workload_step(make_model, CHANNELS, job)
