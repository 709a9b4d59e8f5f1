r"""MZ Set Transformer aggregation as a PyG :class:`Aggregation`."""

from torch import Tensor
from torch_geometric.nn.aggr import Aggregation

from mzlayers._validate import check_batch, check_features
from mzlayers.layout import SetLayout
from mzlayers.mz_set_transformer import MZSetTransformerEncoder


class MZSetTransformerAggregation(Aggregation):
    r"""A drop-in replacement for
    :class:`torch_geometric.nn.aggr.SetTransformerAggregation` built from MZ
    blocks: the elements of every group enter as zonotopes with zero
    generators (no embedding, so :obj:`channels` in = out), pass
    :math:`[\mathrm{MZ\text{-}ISAB}]^{L_{enc}} \to \mathrm{MZ\text{-}PMA}_k
    \to [\mathrm{MZ\text{-}SAB}]^{L_{dec}}`, and each group is read out as
    its pooled centres concatenated (or averaged) over the :math:`k` seeds.
    Groups without elements (indices below :obj:`dim_size` absent from
    :obj:`index`) aggregate to exactly zero.  Requires a sorted
    :obj:`index`, as PyG's version does.

    Args:
        channels (int): Size of each input sample.
        num_seed_points (int, optional): Number of seeds. (default: :obj:`1`)
        num_encoder_blocks (int, optional): MZ-ISAB blocks. (default: :obj:`1`)
        num_decoder_blocks (int, optional): MZ-SAB blocks. (default: :obj:`1`)
        heads (int, optional): Heads. (default: :obj:`1`)
        concat (bool, optional): Concatenate the seeds instead of averaging
            them. (default: :obj:`True`)
        layer_norm (bool, optional): Layer norms. (default: :obj:`True`)
        dropout (float, optional): Dropout. (default: :obj:`0.`)
        num_generators (int, optional): :math:`n_g`. (default: :obj:`8`)
        num_matrix_generators (int, optional): :math:`L`. (default: :obj:`4`)
        num_induced_points (int, optional): MZ-ISAB inducing points.
            (default: :obj:`16`)
        backend (str, optional): Attention kernel. (default: :obj:`'auto'`)
        checkpoint_rows (int, optional): Recompute the row-wise part of every
            MZ block in backward, in chunks of this many rows, instead of
            storing it (see :class:`~mzlayers.mz_blocks.MZMAB`).
            (default: :obj:`None`)

    Shapes:
        - **input:** :obj:`x` :obj:`[N, channels]`, :obj:`index` :obj:`[N]`
        - **output:** :obj:`[dim_size, k * channels]` (or
          :obj:`[dim_size, channels]` with :obj:`concat=False`)
    """
    def __init__(
        self,
        channels: int,
        num_seed_points: int = 1,
        num_encoder_blocks: int = 1,
        num_decoder_blocks: int = 1,
        heads: int = 1,
        concat: bool = True,
        layer_norm: bool = True,
        dropout: float = 0.0,
        num_generators: int = 8,
        num_matrix_generators: int = 4,
        num_induced_points: int = 16,
        backend: str = 'auto',
        checkpoint_rows: int | None = None,
    ):
        super().__init__()
        self.channels = channels
        self.num_seed_points = num_seed_points
        self.heads = heads
        self.concat = concat
        self.encoder = MZSetTransformerEncoder(
            channels, channels, heads, num_generators, num_matrix_generators,
            2 * channels, None, num_induced_points, num_encoder_blocks, num_seed_points,
            num_decoder_blocks, layer_norm, dropout, 'mean', backend, checkpoint_rows,
            embed=False)

    def reset_parameters(self):
        self.encoder.reset_parameters()

    def forward(
        self,
        x: Tensor,
        index: Tensor | None = None,
        ptr: Tensor | None = None,
        dim_size: int | None = None,
        dim: int = -2,
        max_num_elements: int | None = None,
    ) -> Tensor:
        self.assert_index_present(index)
        self.assert_two_dimensional_input(x, dim)
        check_features(x, self.channels)
        num_sets = check_batch(index, x.size(0), dim_size)
        layout = SetLayout.from_batch(index, x.size(0), num_sets, x.device)
        out = self.encoder(x, layout).center.view(num_sets, self.num_seed_points, -1)
        return out.flatten(1) if self.concat else out.mean(dim=1)

    def __repr__(self) -> str:
        return (f'{self.__class__.__name__}({self.channels}, '
                f'num_seed_points={self.num_seed_points}, heads={self.heads})')
