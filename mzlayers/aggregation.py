r"""MZ Set Transformer aggregation as a PyG :class:`Aggregation`."""

import torch
from torch import Tensor
from torch_geometric.nn.aggr import Aggregation
from torch_geometric.utils import to_dense_batch

from mzlayers.layout import SetLayout
from mzlayers.memory import DEFAULT_BUDGET, EncoderShape, check_budget, check_memory
from mzlayers.mz_attention import activations
from mzlayers.mz_set_transformer import MZSetTransformerEncoder
from mzlayers.validate import (
    check_dim_size,
    check_index,
    check_shape,
    count_sets,
    in_autocast,
    parameter_dtype,
    read_host,
)
from mzlayers.zonotope import Zonotope

#: How to sort :obj:`index` inside a message-passing layer (the error hint).
SORT_HINT = (". Inside a MessagePassing layer (e.g. SAGEConv(aggr=...)), sort the edges "
             "by destination node first: data.sort(sort_by_row=False), or "
             "torch_geometric.utils.sort_edge_index(edge_index, sort_by_row=False)")


def _check_ptr(ptr: Tensor, dim_size: int | None) -> None:
    r"""The host-side checks of :obj:`ptr` (shape, dtype, :obj:`dim_size`)."""
    if not torch.is_tensor(ptr) or ptr.dim() != 1 or ptr.numel() < 1 or \
            ptr.dtype not in (torch.long, torch.int):
        raise ValueError("'ptr' must be a one-dimensional integer tensor of "
                         "[dim_size + 1] CSR offsets")
    if dim_size is not None and dim_size != ptr.numel() - 1:
        raise ValueError(f"Encountered invalid 'dim_size' (got '{dim_size}' but "
                         f"'ptr' holds {ptr.numel() - 1} groups)")


class MZSetTransformerAggregation(Aggregation):
    r"""A drop-in replacement for
    :class:`torch_geometric.nn.aggr.SetTransformerAggregation` built from the
    MZ blocks of the `"Matrix Zonotopic Attention"` paper: the elements of
    every group enter as zonotopes (a tensor is a zonotope with zero
    generators; a :class:`~mzlayers.zonotope.Zonotope` keeps its
    generators), pass

    .. math::
        [\mathrm{MZ\text{-}SAB}]^{L_{enc}} \to \mathrm{MZ\text{-}PMA}_k
        \to [\mathrm{MZ\text{-}SAB}]^{L_{dec}},

    and each group is read out as its :math:`k` pooled tokens, concatenated
    (or averaged).  With :obj:`num_induced_points=m` the encoder blocks are
    MZ-ISAB (linear in the group size), as in the paper.

    The arguments it shares with PyG's class have PyG's defaults
    (:obj:`layer_norm=False`, one head, no dropout, SAB encoders), so
    replacing the class keeps the architecture; :meth:`paper` gives the
    paper's configuration (2 MZ-ISAB with :math:`m = 16`, 4 heads, layer
    norms, dropout 0.1, :math:`n_g = 8`, :math:`L = 4`).

    .. note::
        Until 0.1.0 the defaults were :obj:`layer_norm=True` and MZ-ISAB
        encoders with :obj:`num_induced_points=16`; pass them (or use
        :meth:`paper`) to keep the old behaviour.

    Groups without elements (indices below :obj:`dim_size` absent from
    :obj:`index`) aggregate to exactly zero.  Like PyG's version it requires
    a sorted :obj:`index`; an unsorted one raises a :class:`ValueError`
    that says how to sort the edges inside a conv layer.  :obj:`ptr` (CSR
    offsets) is honoured.  Inputs are validated with one host read per call.

    :obj:`max_num_elements=n` is PyG's static-size option, with PyG's
    meaning: every group is padded to :math:`n` rows by
    :func:`~torch_geometric.utils.to_dense_batch` (the elements of a group
    beyond its first :math:`n` are dropped, as PyG's version drops them)
    and attended with a mask (the ``'dense'`` kernel; ``'segment'`` is
    refused).  With :obj:`dim_size` (or :obj:`ptr`) as well, the shapes
    after the padding, :obj:`[dim_size, n]`, are fixed and nothing is read
    from the device: only shapes and dtypes are checked, so :obj:`index`
    must be sorted and below :obj:`dim_size` (unchecked, as in PyG's
    static mode), and :func:`torch.compile` traces the call without a graph
    break (the element count :obj:`N` stays the one dynamic size).  Without
    :obj:`dim_size` the number of groups comes from the validating read.

    Args:
        channels (int): Size of each input sample.
        num_seed_points (int, optional): Number of seeds :math:`k`.
            (default: :obj:`1`)
        num_encoder_blocks (int, optional): Encoder blocks. (default: :obj:`1`)
        num_decoder_blocks (int, optional): MZ-SAB blocks after pooling.
            (default: :obj:`1`)
        heads (int, optional): Heads. (default: :obj:`1`)
        concat (bool, optional): Concatenate the seeds instead of averaging
            them. (default: :obj:`True`)
        layer_norm (bool, optional): Apply the layer norms (as
            :class:`~mzlayers.mz_blocks.ZonotopeLayerNorm`).
            (default: :obj:`False`)
        dropout (float, optional): Dropout on the attention weights and in
            the feed-forward networks. (default: :obj:`0.`)
        num_generators (int, optional): :math:`n_g`. (default: :obj:`8`)
        num_matrix_generators (int, optional): :math:`L`. (default: :obj:`4`)
        num_induced_points (int, optional): If set, the encoder blocks are
            MZ-ISAB with this many inducing zonotopes, else MZ-SAB.
            (default: :obj:`None`)
        backend (str, optional): Attention kernel. (default: :obj:`'auto'`)
        checkpoint_rows (int, optional): Recompute the row-wise part of every
            MZ block in backward, in chunks of this many rows, instead of
            storing it (see :class:`~mzlayers.mz_blocks.MZMAB`).
            (default: :obj:`None`)
        memory_budget (float or int, optional): Before a call runs, its
            peak memory is estimated from the set sizes
            (:mod:`mzlayers.memory`, no device read) and a call over the
            budget raises a :class:`MemoryError` that names the set sizes,
            the estimate and the options that fit (:obj:`num_induced_points`,
            the ``'segment'`` backend, :obj:`checkpoint_rows`).  A float is
            a fraction of the memory free on the device at the call, an int
            a number of bytes; :obj:`None` disables the check.
            (default: :obj:`0.5`)

    The arguments shared with PyG's class keep its positions; ours (from
    :obj:`num_generators` on) are keyword-only.

    Shapes:
        - **input:** :obj:`x` :obj:`[N, channels]` (or a
          :class:`~mzlayers.zonotope.Zonotope` with :obj:`n_g` generators),
          :obj:`index` :obj:`[N]` or :obj:`ptr` :obj:`[dim_size + 1]`
          (padded to :obj:`[dim_size, max_num_elements]` inside when
          :obj:`max_num_elements` is given)
        - **output:** :obj:`[dim_size, k * channels]` (or
          :obj:`[dim_size, channels]` with :obj:`concat=False`); for a
          zonotope input, a :class:`~mzlayers.zonotope.Zonotope` with that
          centre and :obj:`k * n_g` generators (the Cartesian product of the
          :math:`k` seeds' zonotopes, or their Minkowski mean)
    """
    def __init__(
        self,
        channels: int,
        num_seed_points: int = 1,
        num_encoder_blocks: int = 1,
        num_decoder_blocks: int = 1,
        heads: int = 1,
        concat: bool = True,
        layer_norm: bool = False,
        dropout: float = 0.0,
        *,
        num_generators: int = 8,
        num_matrix_generators: int = 4,
        num_induced_points: int | None = None,
        backend: str = 'auto',
        checkpoint_rows: int | None = None,
        memory_budget: float | int | None = DEFAULT_BUDGET,
    ):
        super().__init__()
        check_budget('memory_budget', memory_budget)
        self.channels = channels
        self.num_seed_points = num_seed_points
        self.heads = heads
        self.concat = concat
        self.layer_norm = layer_norm
        self.dropout = dropout
        self.backend = backend
        self.num_generators = num_generators
        self.num_induced_points = num_induced_points
        self.checkpoint_rows = checkpoint_rows
        self.memory_budget = memory_budget
        self.encoder = MZSetTransformerEncoder(
            channels, channels=channels, heads=heads, num_generators=num_generators,
            num_matrix_generators=num_matrix_generators, ff_channels=2 * channels,
            num_induced_points=num_induced_points, num_encoder_blocks=num_encoder_blocks,
            num_seed_points=num_seed_points, num_decoder_blocks=num_decoder_blocks,
            layer_norm=layer_norm, dropout=dropout, backend=backend,
            checkpoint_rows=checkpoint_rows, embed=False)

    @classmethod
    def paper(cls, channels: int, **kwargs) -> 'MZSetTransformerAggregation':
        r"""The paper's MZ-Full pooling body (App. A.1): 2 MZ-ISAB blocks
        with :math:`m = 16` inducing zonotopes, one seed, one MZ-SAB
        decoder, 4 heads, layer norms, dropout 0.1, :math:`n_g = 8`,
        :math:`L = 4`.  :obj:`kwargs` override any of them."""
        config = dict(num_seed_points=1, num_encoder_blocks=2, num_decoder_blocks=1,
                      heads=4, layer_norm=True, dropout=0.1, num_generators=8,
                      num_matrix_generators=4, num_induced_points=16)
        return cls(channels, **{**config, **kwargs})

    def reset_parameters(self):
        self.encoder.reset_parameters()

    def __call__(
        self,
        x: Tensor | Zonotope,
        index: Tensor | None = None,
        ptr: Tensor | None = None,
        dim_size: int | None = None,
        dim: int = -2,
        max_num_elements: int | None = None,
    ) -> Tensor | Zonotope:
        # Validation, as PyG's Aggregation.__call__ does, but with one host
        # read (PyG's reads index.max() and, here, more).
        center = x.center if isinstance(x, Zonotope) else x
        check_shape(center, self.channels,
                    dtype=None if in_autocast(center) else parameter_dtype(self))
        if dim not in (0, -2):
            raise ValueError(f"'dim' must be -2 (or 0) for two-dimensional input (got {dim})")
        if isinstance(x, Zonotope) and x.num_generators != self.num_generators:
            raise ValueError(f"'x' has {x.num_generators} generators but the layer has "
                             f"num_generators={self.num_generators}")
        check_dim_size(dim_size)
        if max_num_elements is None:
            layout = self._layout(x, index, ptr, dim_size)
        else:
            x, layout = self._padded(x, index, ptr, dim_size, max_num_elements)
        self._check_memory(center, layout)
        # PyG's Aggregation.__call__ would re-check (and read index.max()).
        return torch.nn.Module.__call__(self, x, layout=layout)

    def memory_shape(self) -> EncoderShape:
        r"""What the peak memory of a call depends on besides the set sizes
        (:meth:`mzlayers.memory.EncoderShape.peak` estimates it)."""
        return EncoderShape(
            channels=self.channels, heads=self.heads, num_generators=self.num_generators,
            num_encoder_blocks=len(self.encoder.encoders),
            num_seed_points=self.num_seed_points, num_induced_points=self.num_induced_points,
            checkpoint_rows=self.checkpoint_rows, backend=self.backend,
            recompute=activations(self) != 'stored')

    def _check_memory(self, center: Tensor, layout: SetLayout) -> None:
        r"""The memory guard (:obj:`memory_budget`): host sizes only."""
        shape = self.memory_shape()
        grad = torch.is_grad_enabled() and (center.requires_grad or any(
            p.requires_grad for p in self.parameters()))
        try:
            check_memory(shape, layout, self.memory_budget, device=center.device,
                         element_size=center.element_size(), grad=grad)
        except MemoryError as error:
            raise MemoryError(f"{self.__class__.__name__}: {error}") from None

    def _padded(self, x, index: Tensor | None, ptr: Tensor | None, dim_size: int | None,
                max_num_elements: int) -> tuple[Tensor | Zonotope, SetLayout]:
        r"""The groups padded to :obj:`max_num_elements` rows each, as PyG's
        :func:`~torch_geometric.utils.to_dense_batch` pads them (the
        elements beyond are dropped), flattened to :obj:`[B * n, ...]`, and
        their padded :class:`~mzlayers.layout.SetLayout`.  With
        :obj:`dim_size` (or :obj:`ptr`) nothing is read from the device."""
        if isinstance(max_num_elements, bool) or not isinstance(max_num_elements, int) \
                or max_num_elements < 1:
            raise ValueError(f"'max_num_elements' must be a positive int (got "
                             f"{max_num_elements!r})")
        if self.backend == 'segment':
            raise ValueError("'max_num_elements' pads the groups, but the 'segment' "
                             "backend takes ragged batches only (use 'auto' or 'dense')")
        center = x.center if isinstance(x, Zonotope) else x
        N = center.size(0)
        check_index(index, N, 'index')
        if ptr is not None:
            _check_ptr(ptr, dim_size)
            dim_size = ptr.numel() - 1
            if index is None:  # the groups of the CSR offsets, without a device read
                index = torch.arange(dim_size, device=center.device).repeat_interleave(
                    ptr.diff(), output_size=N)
        if dim_size is None:  # the number of groups: the validating read of the ragged path
            dim_size = self._layout(x, index, None, None).num_sets
        if index is None:
            index = center.new_zeros(N, dtype=torch.long)
        pad = dict(batch=index, max_num_nodes=max_num_elements, batch_size=dim_size)
        dense, mask = to_dense_batch(center, **pad)  # [B, n, d], [B, n]
        layout = SetLayout.padded(mask)
        if not isinstance(x, Zonotope):
            return dense.flatten(0, 1), layout
        generators, _ = to_dense_batch(x.generators, **pad)  # [B, n, n_g, d]
        return Zonotope(dense.flatten(0, 1), generators.flatten(0, 1)), layout

    def _layout(self, x, index: Tensor | None, ptr: Tensor | None,
                dim_size: int | None) -> SetLayout:
        center = x.center if isinstance(x, Zonotope) else x
        finite = (x.center, x.generators) if isinstance(x, Zonotope) else (x,)
        N = center.size(0)
        if ptr is None:
            num_sets, counts = count_sets(index, N, dim_size, finite=finite, name='index',
                                          hint=SORT_HINT)
            batch = index if index is not None else center.new_zeros(N, dtype=torch.long)
            return SetLayout(batch.long(), num_sets, counts)
        _check_ptr(ptr, dim_size)
        values = read_host(torch.cat([ptr.long(), torch.stack(
            [~torch.isfinite(t.sum()) for t in finite]).long()]))
        offsets, flags = values[:ptr.numel()], values[ptr.numel():]
        if any(flags):  # the exact (slow) check only when the sum is not finite
            count_sets(None, N, finite=finite)
        counts = [b - a for a, b in zip(offsets[:-1], offsets[1:], strict=True)]
        if offsets[0] != 0 or offsets[-1] != N or min(counts, default=0) < 0:
            raise ValueError(f"'ptr' must be non-decreasing CSR offsets from 0 to "
                             f"{N} (the number of elements)")
        batch = torch.arange(len(counts), device=center.device).repeat_interleave(
            torch.tensor(counts, device=center.device), output_size=N)
        if index is not None:  # the index must describe the same groups
            layout = SetLayout(batch, len(counts), counts)
            if index.shape != batch.shape or not torch.equal(index.long(), batch):
                raise ValueError("'index' and 'ptr' describe different groups (is "
                                 "'index' sorted?)" + SORT_HINT)
            return layout
        return SetLayout(batch, len(counts), counts)

    def forward(
        self,
        x: Tensor | Zonotope,
        index: Tensor | None = None,
        ptr: Tensor | None = None,
        dim_size: int | None = None,
        dim: int = -2,
        max_num_elements: int | None = None,
        *,
        layout: SetLayout | None = None,
    ) -> Tensor | Zonotope:
        k, B = self.num_seed_points, layout.num_sets
        z = self.encoder(x, layout)  # [B * k, d], [B * k, n_g, d]
        center = z.center.view(B, k, self.channels)
        center = center.flatten(1) if self.concat else center.mean(dim=1)
        if not isinstance(x, Zonotope):
            return center
        G = z.generators.view(B, k, self.num_generators, self.channels)  # [B, k, n_g, d]
        if not self.concat:  # Minkowski mean of the k seeds: all generators / k
            return Zonotope(center, G.flatten(1, 2) / k)
        eye = torch.eye(k, dtype=G.dtype, device=G.device)  # block-diagonal product
        G = torch.einsum('bkgd,kl->bkgld', G, eye)  # [B, k, n_g, k, d]
        G = G.reshape(B, k * self.num_generators, k * self.channels)
        return Zonotope(center, G)

    def __repr__(self) -> str:
        return (f'{self.__class__.__name__}({self.channels}, '
                f'num_seed_points={self.num_seed_points}, heads={self.heads}, '
                f'layer_norm={self.layer_norm}, dropout={self.dropout}, '
                f'num_induced_points={self.num_induced_points})')
