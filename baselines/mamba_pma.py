r"""The Mamba + PMA baseline (Table 3): an S6 encoder over the elements in
their input order, then the Set Transformer's PMA pooling."""
import torch
from torch import Tensor
from torch.nn import Linear

from mzattn.extras import require
from mzlayers import PoolingHead
from mzlayers.layout import SetLayout, resolve_input
from mzlayers.validate import parameter_dtype


class MambaPMA(torch.nn.Module):
    r"""Mamba + PMA: the ISAB encoder of the Set Transformer replaced by a
    Mamba (S6) selective state-space encoder (Gu and Dao, 2024; the
    :mod:`mambapy` implementation the paper used), keeping PMA pooling:

    .. math::
        \mathrm{Linear} \to \mathrm{Mamba}^{L} \to \mathrm{PMA}_k
        \to [\mathrm{SAB}]^{L_{dec}} \to \mathrm{MLP}.

    .. warning::
        **Not permutation-invariant.**  Mamba is a causal sequence model: it
        reads each set's elements in their order in :obj:`x` (sets are padded
        at the end, as :func:`~torch_geometric.utils.to_dense_batch` does,
        which keeps the order, and the padding never reaches a real
        element), so reordering a set changes the prediction (tested).  A
        padded batch (:obj:`mask=`) is read the same way: the real elements
        of each row are moved to its front, in their order, wherever the
        mask puts them.

    The paper gives only the parameter count (645K, :math:`1.75\times`
    MZAttn's); :math:`d = 128` with :math:`d_{ff} = 256` in PMA/SAB and
    three Mamba layers (mambapy defaults: state 16, expansion 2, conv 4)
    give 649K at :math:`d_{in} = 8`.  An empty set pools to zero.

    Args:
        in_channels (int): Input feature size.
        out_channels (int): Prediction size.
        channels (int, optional): Width :math:`d`. (default: :obj:`128`)
        num_layers (int, optional): Mamba layers :math:`L`. (default: :obj:`3`)
        heads (int, optional): PMA/SAB heads. (default: :obj:`4`)
        ff_channels (int, optional): PMA/SAB FFN width. (default: :obj:`256`)
        num_seed_points (int, optional): PMA seeds :math:`k`. (default: :obj:`1`)
        num_decoder_blocks (int, optional): SABs after pooling.
            (default: :obj:`1`)
        dropout (float, optional): Dropout in PMA/SAB. (default: :obj:`0.1`)
        backend (str, optional): Attention kernel. (default: :obj:`'auto'`)
        scan (str, optional): Selective-scan kernel: :obj:`'sequential'`
            (a loop over time, the fastest on a CPU), :obj:`'parallel'`
            (:mod:`mambapy`'s parallel scan, meant for GPUs) or
            :obj:`'auto'` (parallel on CUDA, else sequential); see
            :mod:`~mzattn.baselines.selective_scan`. (default: :obj:`'auto'`)

    Shapes:
        - **input:** :obj:`x` :obj:`[N, in_channels]`, :obj:`batch` :obj:`[N]`;
          or, the static-shape path, a padded :obj:`x` :obj:`[B, n, in_channels]`
          with :obj:`mask` :obj:`[B, n]` (:func:`~mzlayers.static.bucket_batch`;
          shapes are checked, values are not read)
        - **output:** :obj:`[B, out_channels]`
    """
    def __init__(
        self,
        in_channels: int,
        out_channels: int,
        channels: int = 128,
        num_layers: int = 3,
        heads: int = 4,
        ff_channels: int = 256,
        num_seed_points: int = 1,
        num_decoder_blocks: int = 1,
        dropout: float = 0.1,
        backend: str = 'auto',
        scan: str = 'auto',
    ):
        super().__init__()
        self.in_channels = in_channels
        self.out_channels = out_channels
        self.channels = channels
        self.num_layers = num_layers
        self.lin_in = Linear(in_channels, channels)
        mamba = require('mambapy.mamba', 'mamba', 'the mamba-pma baseline')
        from mzattn.baselines.mamba_encoder import MambaEncoder  # imports mambapy
        self.mamba = MambaEncoder(mamba.MambaConfig(d_model=channels, n_layers=num_layers),
                                  scan=scan)
        self.head = PoolingHead(channels, out_channels, num_seed_points=num_seed_points,
                                num_decoder_blocks=num_decoder_blocks, heads=heads,
                                ff_channels=ff_channels, dropout=dropout, backend=backend)
        self.reset_parameters()

    def reset_parameters(self):
        self.lin_in.reset_parameters()
        # mambapy initialises in its constructors only: copy a fresh draw.
        fresh = type(self.mamba)(self.mamba.config, scan=self.mamba.scan)
        fresh = fresh.to(self.lin_in.weight.device)
        self.mamba.load_state_dict(fresh.state_dict())
        self.head.reset_parameters()

    def forward(self, x: Tensor, batch: Tensor | None = None,
                dim_size: int | None = None, *, mask: Tensor | None = None,
                layout: SetLayout | None = None) -> Tensor:
        x, layout = resolve_input(x, batch, dim_size, self.in_channels, mask=mask,
                                  layout=layout, dtype=parameter_dtype(self))
        h = self.lin_in(x)
        if layout.num_elements:  # mambapy cannot scan zero-length sequences
            width = max(layout.counts)  # host sizes: no device sync
            rows = layout.batch * width + layout.positions  # real elements first, in order
            dense = h.new_zeros(layout.num_sets * width, h.size(-1)).index_copy(0, rows, h)
            dense = _scan(self.mamba, dense.view(layout.num_sets, width, -1))  # [B, n_max, d]
            h = dense.flatten(0, 1).index_select(0, rows)  # [N, d]
        return self.head(h, layout)

    def __repr__(self) -> str:
        return (f'{self.__class__.__name__}({self.in_channels}, {self.out_channels}, '
                f'channels={self.channels}, num_layers={self.num_layers}, '
                f'scan={self.mamba.scan!r})')


@torch._dynamo.disable(recursive=True)
def _scan(mamba: torch.nn.Module, x: Tensor) -> Tensor:
    # the Mamba layers run eagerly behind a graph break, as the segment kernel does: the
    # sequential scan loops over the length, and mambapy's parallel scan pads it to a power of
    # two, a size that inductor's symbolic shapes cannot compare ("cannot determine truth
    # value of Relational")
    return mamba(x)
