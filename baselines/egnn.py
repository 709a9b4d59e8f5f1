r"""The E(n)-equivariant graph neural network baseline (Satorras et al.,
2021) on the fully connected graph of each set (Table 7, App. D.5.4)."""
from collections.abc import Sequence
from typing import Optional

import torch
import torch.nn.functional as F
from torch import Tensor
from torch.nn import Linear, ModuleList, Parameter
from torch_geometric.nn import MessagePassing
from torch_geometric.utils import degree, scatter

from mzlayers.layout import SetLayout, resolve_input
from mzlayers.validate import parameter_dtype

#: Xavier gain of :math:`\phi_x`, as in the official EGNN code: coordinate
#: updates start tiny so the geometry is not scrambled before
#: :math:`\phi_e` has learned anything.
COORD_INIT_GAIN = 1e-3


def fully_connected_edges(layout: SetLayout) -> Tensor:
    r"""Edges :obj:`[2, E]` between every ordered pair of distinct elements of
    the same set (no self loops), built from the sorted :obj:`batch`; for a
    padded layout, between every pair of distinct rows of a set, padding
    included (:obj:`E = B n (n - 1)`, from the shapes alone)."""
    N, device = layout.num_elements, layout.device
    degree = layout.count_tensor[layout.batch] - 1  # [N]: the other elements of its set
    E = sum(n * (n - 1) for n in layout.counts)  # host sizes: no device sync
    nodes = torch.arange(N, device=device)
    dst = nodes.repeat_interleave(degree, output_size=E)
    first = (degree.cumsum(0) - degree).repeat_interleave(degree, output_size=E)
    t = torch.arange(E, device=device) - first  # the t-th other element of dst's set
    start = layout.ptr.index_select(0, layout.batch)  # [N]: first element of its set
    pos = (nodes - start).index_select(0, dst)  # dst's own position, skipped
    src = start.index_select(0, dst) + t + (t >= pos).long()
    return torch.stack([src, dst])


class EGNNConv(MessagePassing):
    r"""One E(n)-equivariant layer (Satorras et al., 2021, Eqs. 3-6):

    .. math::
        \mathbf{m}_{ij} &= \phi_e\big(\mathbf{h}_i, \mathbf{h}_j,
        \|\mathbf{x}_i - \mathbf{x}_j\|^2\big) \\
        \mathbf{x}_i' &= \mathbf{x}_i + \frac{1}{M - 1} \sum_{j \ne i}
        (\mathbf{x}_i - \mathbf{x}_j)\, \phi_x(\mathbf{m}_{ij}) \\
        \mathbf{m}_i &= \frac{1}{M - 1} \textstyle\sum_{j \ne i} \mathbf{m}_{ij} \\
        \mathbf{h}_i' &= \mathbf{h}_i + \phi_h(\mathbf{h}_i, \mathbf{m}_i)

    on the fully connected graph of each set (:math:`M` elements).  The
    features :math:`\mathbf{h}` are E(n)-invariant and the coordinates
    :math:`\mathbf{x}` E(n)-equivariant.  The paper gives :math:`h = 140`, four
    layers and 303K parameters (D.5.4); with the official two-layer MLPs that
    width would give 553K, so each :math:`\phi` is one layer here:
    :math:`\phi_e = \mathrm{SiLU} \circ \mathrm{Linear}`,
    :math:`\phi_x = \mathrm{Linear}` (bias-free, to a scalar),
    :math:`\phi_h = \mathrm{Linear}`.  Deviation: Eq. (5) averages the
    messages instead of summing them (see :meth:`aggregate_messages`).

    Args:
        channels (int): Feature width :math:`h`.

    :obj:`forward` takes an optional node :obj:`mask` :obj:`[N]`
    (:obj:`True` = real node): messages from the other nodes (the padding
    rows of a padded batch) are dropped and not counted in :math:`M - 1`.

    Shapes:
        - **input:** :obj:`h` :obj:`[N, h]`, :obj:`pos` :obj:`[N, D]`,
          :obj:`edge_index` :obj:`[2, E]`, :obj:`mask` :obj:`[N]` (optional)
        - **output:** :obj:`(h' [N, h], pos' [N, D])`
    """
    def __init__(self, channels: int):
        super().__init__(aggr='sum')
        self.channels = channels
        self.lin_edge = Linear(2 * channels + 1, channels)
        self.lin_coord = Linear(channels, 1, bias=False)
        self.lin_node = Linear(2 * channels, channels)
        self.reset_parameters()

    def reset_parameters(self):
        super().reset_parameters()
        self.lin_edge.reset_parameters()
        self.lin_node.reset_parameters()
        torch.nn.init.xavier_uniform_(self.lin_coord.weight, gain=COORD_INIT_GAIN)

    def forward(self, h: Tensor, pos: Tensor, edge_index: Tensor,
                mask: Tensor | None = None) -> tuple[Tensor, Tensor]:
        src, dst = edge_index
        if mask is None:
            edge_weight = None
            num_neighbours = degree(dst, h.size(0), dtype=pos.dtype)
        else:  # messages from padding rows weigh 0 and are not counted
            edge_weight = mask.to(pos.dtype).index_select(0, src)  # [E]
            num_neighbours = scatter(edge_weight, dst, dim=0, dim_size=h.size(0))
        target, source = self.node_terms(h)
        out = self.propagate(edge_index, target=target, source=source, pos=pos,
                             edge_weight=edge_weight)  # Eq. 5, 4
        m, shift = out.split([self.channels, pos.size(-1)], dim=-1)
        num_neighbours = num_neighbours.clamp(min=1).unsqueeze(-1)
        m = self.aggregate_messages(m, num_neighbours)
        return self.node_update(h, m), self.coordinate_update(pos, shift, num_neighbours)

    def node_terms(self, h: Tensor) -> tuple[Tensor, Tensor]:
        r"""The terms of :math:`\phi_e`'s linear map that depend on one
        node only.  With :math:`\phi_e`'s weight split by its input columns
        as :math:`[W_i, W_j, \mathbf{w}_d]` and bias :math:`\mathbf{b}`,
        they are :math:`W_i \mathbf{h} + \mathbf{b}` (for the receiving
        node) and :math:`W_j \mathbf{h}` (for the sending one), computed once
        per node rather than once per edge: the same map as
        :math:`\mathrm{Linear}([\mathbf{h}_i, \mathbf{h}_j, d_{ij}])` for
        :math:`N` rather than :math:`E = \sum_s M_s (M_s - 1)` rows.

        Shapes:
            - **input:** :obj:`h` :obj:`[N, h]`
            - **output:** :obj:`(target [N, h], source [N, h])`
        """
        weight, c = self.lin_edge.weight, self.channels
        return (F.linear(h, weight[:, :c], self.lin_edge.bias),
                F.linear(h, weight[:, c:2 * c]))

    def edge_message(self, target_i: Tensor, source_j: Tensor, pos_i: Tensor,
                     pos_j: Tensor) -> Tensor:
        r"""Eq. (3): :math:`\mathbf{m}_{ij} = \phi_e(\mathbf{h}_i, \mathbf{h}_j,
        \|\mathbf{x}_i - \mathbf{x}_j\|^2) = \mathrm{SiLU}(W_i \mathbf{h}_i +
        \mathbf{b} + W_j \mathbf{h}_j + \mathbf{w}_d \|\mathbf{x}_i -
        \mathbf{x}_j\|^2)`, from the :meth:`node_terms` of the two nodes."""
        dist = (pos_i - pos_j).pow(2).sum(-1, keepdim=True)  # [E, 1]
        return F.silu(torch.addcmul(target_i + source_j, dist,
                                    self.lin_edge.weight[:, 2 * self.channels]))

    # PyG's signature inspector cannot parse 'Tensor | None' (a types.UnionType).
    def message(self, target_i: Tensor, source_j: Tensor, pos_i: Tensor, pos_j: Tensor,
                edge_weight: Optional[Tensor]) -> Tensor:  # noqa: UP045
        m_ij = self.edge_message(target_i, source_j, pos_i, pos_j)
        out = torch.cat([m_ij, (pos_i - pos_j) * self.lin_coord(m_ij)], dim=-1)
        return out if edge_weight is None else out * edge_weight.unsqueeze(-1)

    def coordinate_update(self, pos: Tensor, shift: Tensor, num_neighbours: Tensor) -> Tensor:
        r"""Eq. (4): :math:`\mathbf{x}_i + C \sum_{j \ne i} (\mathbf{x}_i -
        \mathbf{x}_j) \phi_x(\mathbf{m}_{ij})` with :math:`C = 1 / (M - 1)`
        (a singleton set keeps its coordinates)."""
        return pos + shift / num_neighbours

    def aggregate_messages(self, m: Tensor, num_neighbours: Tensor) -> Tensor:
        r"""Eq. (5), normalised: :math:`\mathbf{m}_i = C \sum_{j \ne i}
        \mathbf{m}_{ij}` with the :math:`C = 1 / (M - 1)` of Eq. (4).  The
        paper's plain sum lets the feature scale grow with the set size
        (our sets have 5 to 1024 elements) and trained unreliably."""
        return m / num_neighbours

    def node_update(self, h: Tensor, m: Tensor) -> Tensor:
        r"""Eq. (6): :math:`\mathbf{h}_i + \phi_h(\mathbf{h}_i, \mathbf{m}_i)`
        (residual, as the official code), :math:`\mathbf{m}_i` from Eq. (5)."""
        return h + self.lin_node(torch.cat([h, m], dim=-1))

    def __repr__(self) -> str:
        return f'{self.__class__.__name__}({self.channels})'


class EGNN(torch.nn.Module):
    r"""EGNN set model: :class:`EGNNConv` layers on the fully connected graph
    of each set and an invariant readout,
    :math:`\hat{y} = \mathrm{Linear}(\mathrm{mean}_i\, \mathbf{h}_i)`.

    The columns :obj:`coord_index` of :obj:`x` are the coordinates
    :math:`\mathbf{x}_i` (default: all features); the remaining columns are
    invariant scalar features (e.g. a type indicator or atom types),
    embedded linearly into :math:`\mathbf{h}_i^{0}`; without any, every
    element starts from the same learned vector.  The prediction is
    invariant to rotations, reflections and translations of the coordinate
    columns (tested).  Defaults (:math:`h = 140`, four layers) give 316K at
    :math:`d_{in} = 8` (paper: ~303K).

    A padded batch (:obj:`mask=`, the static-shape path) runs on the fully
    connected graph of every padded row, :math:`B n (n - 1)` edges of which
    those from padding rows carry zero weight: the real elements get the
    ragged path's messages, at the cost of the padded pairs (up to
    :math:`4\times` the edges for a power-of-two bucket).

    Args:
        in_channels (int): Input feature size.
        out_channels (int): Prediction size.
        hidden_channels (int, optional): Width :math:`h`. (default: :obj:`140`)
        num_layers (int, optional): EGNN layers. (default: :obj:`4`)
        coord_index (Sequence[int], optional): Coordinate columns of :obj:`x`
            (:obj:`None` = all). (default: :obj:`None`)

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
        hidden_channels: int = 140,
        num_layers: int = 4,
        coord_index: Sequence[int] | None = None,
    ):
        super().__init__()
        coords = list(range(in_channels)) if coord_index is None else list(coord_index)
        if not coords or len(set(coords)) != len(coords) or \
                not all(0 <= i < in_channels for i in coords):
            raise ValueError(f"'coord_index' must list distinct columns in "
                             f"[0, {in_channels}) (got {coord_index})")
        self.in_channels = in_channels
        self.out_channels = out_channels
        self.hidden_channels = hidden_channels
        scalars = [i for i in range(in_channels) if i not in coords]
        self.register_buffer('coord_index', torch.tensor(coords), persistent=False)
        self.register_buffer('scalar_index', torch.tensor(scalars, dtype=torch.long),
                             persistent=False)
        self.lin_in = Linear(len(scalars), hidden_channels) if scalars else None
        self.h0 = None if scalars else Parameter(torch.empty(hidden_channels))
        self.convs = ModuleList([EGNNConv(hidden_channels) for _ in range(num_layers)])
        self.lin_out = Linear(hidden_channels, out_channels)
        self.reset_parameters()

    def reset_parameters(self):
        if self.lin_in is not None:
            self.lin_in.reset_parameters()
        else:
            torch.nn.init.zeros_(self.h0)
        for conv in self.convs:
            conv.reset_parameters()
        self.lin_out.reset_parameters()

    def embed(self, x: Tensor) -> tuple[Tensor, Tensor]:
        r"""Initial invariant features :obj:`[N, h]` and coordinates."""
        pos = x[:, self.coord_index]
        if self.lin_in is not None:
            return self.lin_in(x[:, self.scalar_index]), pos
        return self.h0.expand(x.size(0), -1), pos

    def forward(self, x: Tensor, batch: Tensor | None = None,
                dim_size: int | None = None, *, mask: Tensor | None = None,
                layout: SetLayout | None = None) -> Tensor:
        x, layout = resolve_input(x, batch, dim_size, self.in_channels, mask=mask,
                                  layout=layout, dtype=parameter_dtype(self))
        edge_index = fully_connected_edges(layout)
        h, pos = self.embed(x)
        for conv in self.convs:
            h, pos = conv(h, pos, edge_index, layout.mask)
        return self.lin_out(layout.mean(h))

    def __repr__(self) -> str:
        return (f'{self.__class__.__name__}({self.in_channels}, {self.out_channels}, '
                f'hidden_channels={self.hidden_channels}, num_layers={len(self.convs)}, '
                f'coords={self.coord_index.numel()})')
