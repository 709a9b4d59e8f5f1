r"""Suite 1: the set pooling stack (2 ISAB with 16 inducing points, PMA with
one seed, d = 64, 4 heads) of :mod:`mzlayers` under each attention backend,
against the like-for-like PyG anchor (:func:`to_dense_batch` -> PyG
:class:`InducedSetAttentionBlock` x 2 -> :class:`PoolingByMultiheadAttention`)
and PyG's :class:`SetTransformerAggregation`."""
import torch
from torch_geometric.nn.aggr import SetTransformerAggregation
from torch_geometric.nn.aggr.utils import InducedSetAttentionBlock, PoolingByMultiheadAttention
from torch_geometric.utils import to_dense_batch

from mzlayers import ISAB, PMA
from mzlayers.layout import resolve_layout

from .workloads import workload_step

CHANNELS, HEADS, INDUCED = 64, 4, 16
IMPLEMENTATIONS = ('ours-auto', 'ours-segment', 'ours-dense', 'ours-varlen', 'pyg-anchor',
                   'pyg-settransformer')
BASELINE = 'pyg-anchor'
NOTE = ('`pyg-settransformer` (SAB encoders, quadratic) runs only where sets have at most 100 '
        'elements. `ours-varlen` shows — in runs made before that kernel existed.')


class OursStack(torch.nn.Module):
    r"""mzlayers ISAB -> ISAB -> PMA; the FFN width equals :obj:`channels`."""
    def __init__(self, backend: str):
        super().__init__()
        kw = dict(heads=HEADS, ff_channels=CHANNELS, backend=backend)
        self.isab1 = ISAB(CHANNELS, INDUCED, **kw)
        self.isab2 = ISAB(CHANNELS, INDUCED, **kw)
        self.pma = PMA(CHANNELS, 1, **kw)

    def forward(self, x, batch, num_sets):
        layout = resolve_layout(x, batch, num_sets, CHANNELS)
        h = self.isab2(self.isab1(x, layout=layout), layout=layout)
        return self.pma(h, layout=layout)[0]


class PyGAnchor(torch.nn.Module):
    r"""The same stack from PyG's padded blocks (one :func:`to_dense_batch`)."""
    def __init__(self):
        super().__init__()
        self.isab1 = InducedSetAttentionBlock(CHANNELS, INDUCED, HEADS, layer_norm=True)
        self.isab2 = InducedSetAttentionBlock(CHANNELS, INDUCED, HEADS, layer_norm=True)
        self.pma = PoolingByMultiheadAttention(CHANNELS, 1, HEADS, layer_norm=True)

    def forward(self, x, batch, num_sets):
        h, mask = to_dense_batch(x, batch, batch_size=num_sets)
        h = self.isab2(self.isab1(h, mask), mask)
        return self.pma(h, mask).flatten(1)


class PyGSetTransformer(torch.nn.Module):
    r""":class:`SetTransformerAggregation` (SAB encoders: quadratic in n)."""
    def __init__(self):
        super().__init__()
        self.aggr = SetTransformerAggregation(CHANNELS, 1, 2, 0, HEADS, layer_norm=True)

    def forward(self, x, batch, num_sets):
        return self.aggr(x, batch, dim_size=num_sets)


def runs_on(impl: str, sizes: torch.Tensor) -> bool:
    return impl != 'pyg-settransformer' or int(sizes.max()) <= 100


def make_model(impl: str) -> torch.nn.Module:
    if impl.startswith('ours-'):
        return OursStack(impl[len('ours-'):])
    return {'pyg-anchor': PyGAnchor, 'pyg-settransformer': PyGSetTransformer}[impl]()


def build(job: dict):
    r"""The step of one job (:func:`~mzattn.bench.workloads.workload_step`)."""
    return workload_step(make_model, CHANNELS, job)
