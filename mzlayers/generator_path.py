r"""The generator path of an MZ block as one custom autograd function that
keeps only the attention output for backward.

Every token of an MZ block carries :math:`n_g` generator rows beside its
centre, so each activation that autograd stores on the generator path is
:math:`n_g` times the size of the matching centre activation: storing them
all made one MZ-ISAB forward + backward take 8.6--10x the peak memory of a
standard ISAB (issue 34).  The generator path after the attention weights is
cheap, row-wise arithmetic given a few small centre-path quantities (the
gates :math:`\gamma`, the layer-norm scales), so :func:`budgeted_generators`
saves the attention output and the small inputs once (and, given
:obj:`consume`, writes the output's gradient over the output), and
recomputes everything else in backward, in chunks of
:obj:`CHUNK_ELEMENTS`-sized rows (a budget per device type: fine on CPU,
coarse on GPUs, whose steps are launch-bound), so that the recomputation
never holds a whole :obj:`[N, n_g, d_{ff}]` intermediate either:

* the generator output of Eq. (3): :math:`O^G = \mathbf{W}_O \Vert_h
  (\hat G^{(h)} M_c^{(h)\top} + W_{\mathrm{mix}}^{(h)}
  \mathrm{stack}_l[\gamma_l^{(h)} M_l^{(h)} \hat{\mathbf{c}}^{(h)}])`;
* optionally (a :class:`GeneratorTail`), the rest of an MZ-MAB on the
  generators: residual, the linear part of the first layer norm, the
  generator FFN with its residual and the linear part of the second layer
  norm.  Neither :math:`O^G` nor anything after it is stored.

The function gives the same values as the plain autograd composition (same
operations per row, in the same order) and first-order gradients only
(:func:`~torch.autograd.function.once_differentiable`).  Under
:func:`torch.autocast` backward recomputes under the autocast state of the
forward.  Inside a :mod:`torch.func` transform (:func:`~torch.func.vmap`
over stacked replicas, :mod:`mzattn.stacked`) it runs as that plain
composition, which autograd and the transform differentiate and batch.
"""
from contextlib import AbstractContextManager
from typing import NamedTuple

import torch
import torch.nn.functional as F
from torch import Tensor
from torch.autograd.function import FunctionCtx, once_differentiable

#: Largest number of elements of one intermediate (e.g. the generator FFN's
#: hidden layer :obj:`[rows, n_g, d_ff]`) that the function materialises at
#: once, per device type (:func:`chunk_elements`).  Every chunk dispatches
#: the path's operators again, about 190 per call forward and backward, so
#: the budget weighs memory against kernel launches.  A CPU step is
#: compute-bound: chunks of 256 KiB (float32) cost MZ-Full's step at the
#: step profile's batch (128 sets) 35,265 operators against 3,277 in one
#: chunk, for about the same time (538 against 519 ms), and keep MZ-ISAB at
#: 2.4x an ISAB's memory instead of 8.0x (docs/benchmarks.md).  A GPU step
#: is launch-bound: there a call is chunked only when its intermediates pass
#: 2^24 elements (64 MiB in float32), where a chunk's arithmetic outweighs
#: its launches.  Other accelerators take the CUDA budget.
CHUNK_ELEMENTS = {'cpu': 2**16, 'cuda': 2**24}


def chunk_elements(device: torch.device) -> int:
    r"""The chunk budget of :obj:`CHUNK_ELEMENTS` for :obj:`device`."""
    return CHUNK_ELEMENTS.get(device.type, CHUNK_ELEMENTS['cuda'])


class GeneratorTail(NamedTuple):
    r"""The generator rows of an MZ-MAB after its attention, given the
    attention's generator output :math:`O^G`:

    .. math::
        R = G_X + O^G, \quad
        H = \mathrm{LN}_1^{\mathrm{lin}}(R), \quad
        F = H + W_2\,\mathrm{ReLU}(W_1 H), \quad
        \mathrm{out} = \mathrm{LN}_2^{\mathrm{lin}}(F)

    row-wise, where :math:`\mathrm{LN}^{\mathrm{lin}}(X) = (X -
    \mathrm{mean}_d X) \odot \mathbf{s}` is the linear part of a layer norm
    with the per-token scale :math:`\mathbf{s} = \mathbf{w} / \sigma` of its
    centre (see :class:`~mzlayers.mz_blocks.ZonotopeLayerNorm`), given as
    the norm's weight :math:`\mathbf{w}` and the reciprocal
    :math:`1 / \sigma` of the centre's standard deviation: the function
    keeps :obj:`[N, 1]` per norm, not :obj:`[N, d]`.

    Attributes:
        residual (torch.Tensor): :math:`G_X`, :obj:`[N, n_g, d]`, or
            :obj:`[M, n_g, d]` for :math:`M` learned queries shared by the
            :math:`N / M` sets (output rows set-major).
        rstd1 (torch.Tensor, optional): :math:`1 / \sigma_1`, :obj:`[N, 1]`
            (:obj:`None`: no first norm).
        norm_weight1 (torch.Tensor, optional): :math:`\mathbf{w}_1`,
            :obj:`[d]` (:obj:`None`: no first norm).
        rstd2 (torch.Tensor, optional): :math:`1 / \sigma_2`, :obj:`[N, 1]`
            (:obj:`None`: no second norm).
        norm_weight2 (torch.Tensor, optional): :math:`\mathbf{w}_2`,
            :obj:`[d]` (:obj:`None`: no second norm).
        weight1 (torch.Tensor): :math:`W_1`, :obj:`[d_{ff}, d]`.
        weight2 (torch.Tensor): :math:`W_2`, :obj:`[d, d_{ff}]`.
    """
    residual: Tensor
    rstd1: Tensor | None
    norm_weight1: Tensor | None
    rstd2: Tensor | None
    norm_weight2: Tensor | None
    weight1: Tensor
    weight2: Tensor


def chunk_rows(num_rows: int, row_elements: int, multiple: int = 1, *,
               budget: int) -> list[slice]:
    r"""Consecutive row ranges :obj:`start:stop` of about
    :obj:`budget / row_elements` rows each, every range a multiple of
    :obj:`multiple` rows long (the last one included when :obj:`num_rows` is);
    one range when all rows hold at most :obj:`2 * budget` elements
    (a second pass, twice the operators, would save at most
    :obj:`budget` of them)."""
    if num_rows * row_elements <= 2 * budget:
        return [slice(0, num_rows)] if num_rows else []
    rows = max(1, budget // max(1, row_elements))
    rows = max(multiple, rows // multiple * multiple)
    return [slice(start, min(start + rows, num_rows)) for start in range(0, num_rows, rows)]


def centred(x: Tensor) -> Tensor:
    r""":math:`x - \mathrm{mean}_{\mathrm{channels}}(x)`, the projection
    (self-adjoint) behind the linear part of a layer norm."""
    return x - x.mean(-1, keepdim=True)


def _scaled(x: Tensor, scale: Tensor | None) -> Tensor:
    r"""The linear part of a layer norm on generator rows :obj:`[n, n_g, d]`
    with per-token scale :obj:`[n, d]` (the identity when :obj:`None`)."""
    return x if scale is None else centred(x) * scale.unsqueeze(-2)


def _take(x: Tensor, rows: slice) -> Tensor:
    r"""Rows :obj:`rows` of :obj:`x`: :obj:`x` itself, no operator, when
    they are all of its rows (one chunk)."""
    return x if rows.start == 0 and rows.stop >= x.size(0) else x[rows]


def _row_scale(rstd: Tensor | None, norm_weight: Tensor | None, rows: slice,
               dtype: torch.dtype) -> Tensor | None:
    r"""The scale :math:`\mathbf{w} / \sigma` :obj:`[n, d]` of a layer norm's
    linear part on rows :obj:`rows`, in :obj:`dtype` (:obj:`None`: no norm)."""
    return None if rstd is None else (norm_weight * _take(rstd, rows)).to(dtype)


def _scale_grads(g_scale: Tensor | None, rstd: Tensor | None, norm_weight: Tensor | None,
                 rows: slice) -> tuple[Tensor | None, Tensor | None]:
    r"""The gradients of :math:`1 / \sigma` on rows :obj:`rows` :obj:`[n, 1]`
    and the rows' part of that of :math:`\mathbf{w}` :obj:`[d]`, given the
    gradient of the rows' scale :obj:`[n, d]`."""
    if g_scale is None:
        return None, None
    g_scale = g_scale.to(rstd.dtype)
    return (g_scale * norm_weight).sum(-1, keepdim=True), (g_scale * _take(rstd, rows)).sum(0)


def _autocast_state(device_type: str) -> tuple[bool, torch.dtype]:
    return (torch.is_autocast_enabled(device_type),
            torch.get_autocast_dtype(device_type))


def _replay_autocast(ctx: FunctionCtx) -> AbstractContextManager:
    enabled, dtype = ctx.autocast
    return torch.autocast(ctx.device_type, dtype=dtype, enabled=enabled)


def _rows_outer(grad: Tensor, x: Tensor) -> Tensor:
    r"""The weight gradient :math:`\sum_{\mathrm{rows}} g x^{\top}`
    :obj:`[o, i]` of a linear map from rows :obj:`x` :obj:`[*, i]` with
    output gradients :obj:`grad` :obj:`[*, o]`."""
    return grad.flatten(0, -2).T @ x.flatten(0, -2)


def in_transform() -> bool:
    r"""Whether a :mod:`torch.func` transform (:func:`~torch.func.vmap`,
    :func:`~torch.func.grad`) is active: the autograd function here has
    no :obj:`setup_context`, and :func:`torch.utils.checkpoint.checkpoint`
    cannot recompute under a transform, so both run as plain autograd there."""
    return torch._C._are_functorch_transforms_active()


def _accumulate(totals: list, parts: tuple) -> list:
    return [part if total is None or part is None else total + part
            for total, part in zip(totals, parts, strict=True)]


def _chunks(agg: Tensor, mix: Tensor, tail: GeneratorTail | None) -> list[slice]:
    r"""Row chunks of the path: whole rows of its widest intermediate (the
    generator FFN's hidden layer), a multiple of the learned queries' count
    when the tail's residual holds one row per learned query; one empty
    chunk when there are no rows."""
    N, H, _, C = agg.shape
    width = H * C if tail is None else max(H * C, tail.weight1.size(0))
    multiple = 1 if tail is None or tail.residual.size(0) >= N else tail.residual.size(0)
    return chunk_rows(N, mix.size(1) * width, multiple,
                      budget=chunk_elements(agg.device)) or [slice(0, 0)]


def _join_rows(chunks: list[slice], num_rows: int, fn) -> list[Tensor | None]:
    r"""The row tensors :obj:`fn(rows)` of every chunk joined along rows into
    :obj:`[num_rows, ...]` each: those of the only chunk themselves, or
    written into one buffer each (never the chunks and their join at once)."""
    joined = None
    for rows in chunks:
        parts = fn(rows)
        if len(chunks) == 1:
            return list(parts)
        if joined is None:  # in the dtype that autocast gives the rows
            joined = [None if p is None else p.new_empty(num_rows, *p.shape[1:])
                      for p in parts]
        for out, part in zip(joined, parts, strict=True):
            if out is not None:
                out[rows] = part
    return joined


# Forward, on a chunk of rows #################################################

def _mixed(agg: Tensor, gates: Tensor, matrix_center: Tensor, matrix_generators: Tensor,
           mix: Tensor) -> tuple[Tensor, ...]:
    r"""Per head, :math:`\hat G M_c^{\top} + W_{\mathrm{mix}}
    \mathrm{stack}_l[\gamma_l M_l \hat{\mathbf{c}}]` :obj:`[H, n, n_g, C]`
    for attention outputs :obj:`agg` :obj:`[n, H, 1 + n_g, C]` (centre
    first) and gates :obj:`[n, H, L]` (the operations of
    :meth:`~mzlayers.Zonotope.mz_product_budgeted`, the gates applied to
    :math:`W_{\mathrm{mix}}`'s columns rather than to the rows
    :math:`M_l \hat{\mathbf{c}}`), with what backward reuses, all heads
    first: :math:`M_l \hat{\mathbf{c}}` :obj:`[H n, L, C]`, the gated
    mixing :math:`W_{\mathrm{mix}} \mathrm{diag}(\gamma)` :obj:`[H n, n_g,
    L]`, :math:`\hat{\mathbf{c}}` :obj:`[H, n, C]` and :math:`\gamma`
    :obj:`[H, n, 1, L]` (not the copy :math:`\hat G` :obj:`[H, n n_g, C]`:
    backward would hold it through the tail's)."""
    (n, H, _, C), G, L = agg.shape, mix.size(1), matrix_generators.size(1)
    # heads first, each product one bmm over the heads, or over heads and rows (no einsum)
    c, A = agg[:, :, 0].transpose(0, 1), _heads_first(agg[:, :, 1:])
    gamma = gates.transpose(0, 1).contiguous().unsqueeze(2)  # so that gated_mix is too
    mlc = torch.bmm(c, matrix_generators.flatten(1, 2).transpose(1, 2)).view(H * n, L, C)
    gated_mix = (mix.unsqueeze(1) * gamma).view(H * n, G, L)
    m = torch.bmm(A, matrix_center.transpose(1, 2)).view(H * n, G, C)
    m = torch.baddbmm(m, gated_mix, mlc).view(H, n, G, C)
    return m, mlc, gated_mix, c, gamma


def _heads_first(x: Tensor) -> Tensor:
    r""":obj:`[n, H, n_g, C]` -> :obj:`[H, n n_g, C]` (the batch of a bmm over heads)."""
    return x.transpose(0, 1).reshape(x.size(1), -1, x.size(-1))


def _heads_last(m: Tensor) -> Tensor:
    r""":obj:`[H, n, n_g, C]` -> :obj:`[n n_g, H C]` (heads concatenated, rows flat)."""
    H, n, G, C = m.shape
    return m.permute(1, 2, 0, 3).reshape(n * G, H * C)


def _update(m: Tensor, weight: Tensor) -> Tensor:
    r"""The generator output :math:`O^G` :obj:`[n, n_g, d]` of the mixed
    heads :obj:`m` :obj:`[H, n, n_g, C]`."""
    return (_heads_last(m) @ weight.t()).view(m.size(1), m.size(2), weight.size(0))


def _residual_rows(rows: slice, residual: Tensor, num_rows: int) -> Tensor:
    r"""The rows of :obj:`residual` that output rows :obj:`rows` of
    :obj:`num_rows` add: query :math:`i \bmod M` for :math:`M` learned
    queries (set-major; a chunk holds whole sets)."""
    if residual.size(0) == num_rows:
        return _take(residual, rows)
    return residual.repeat((rows.stop - rows.start) // residual.size(0), 1, 1)


def _tail_rows(rows: slice, update: Tensor, tail: GeneratorTail, num_rows: int
               ) -> tuple[Tensor, ...]:
    r"""The tail on output rows :obj:`rows` of :obj:`num_rows` (with their
    update :math:`O^G` :obj:`update`) up to the second norm: the residual
    sum :math:`R`, :math:`H = \mathrm{LN}_1^{\mathrm{lin}}(R)`, the FFN's
    activation :math:`A = \mathrm{ReLU}(H W_1^{\top})` and :math:`F = H + A
    W_2^{\top}`, each :obj:`[n, n_g, *]`."""
    r = _residual_rows(rows, tail.residual, num_rows) + update
    h = _scaled(r, _row_scale(tail.rstd1, tail.norm_weight1, rows, r.dtype))
    a = F.linear(h, tail.weight1).relu_()
    return r, h, a, h + F.linear(a, tail.weight2)


def _path_rows(rows: slice, agg: Tensor, gates: Tensor, params: tuple[Tensor, ...],
               tail: GeneratorTail | None) -> Tensor:
    r"""The path's output on rows :obj:`rows`, :obj:`[n, n_g, d]`."""
    Mc, Ml, mix, weight = params  # the generator output O^G of the rows, [n, n_g, d]
    update = _update(_mixed(_take(agg, rows), _take(gates, rows), Mc, Ml, mix)[0], weight)
    return update if tail is None else _tail_output_rows(rows, update, tail, agg.size(0))


def _tail_output_rows(rows: slice, update: Tensor, tail: GeneratorTail, num_rows: int
                      ) -> Tensor:
    r"""The tail's output on rows :obj:`rows` of :obj:`num_rows`, given their
    update :math:`O^G` :obj:`update` :obj:`[n, n_g, d]`."""
    f = _tail_rows(rows, update, tail, num_rows)[-1]
    return _scaled(f, _row_scale(tail.rstd2, tail.norm_weight2, rows, f.dtype))


# Backward, on a chunk of rows ################################################

def _tail_backward_rows(grad: Tensor, rows: slice, flat: Tensor, weight: Tensor,
                        tail: GeneratorTail, num_rows: int) -> tuple[Tensor, tuple]:
    r"""The tail's backward on output rows :obj:`rows`, given the chunk's
    concatenated heads :obj:`flat` :obj:`[n n_g, H C]` and
    :math:`\mathbf{W}_O` (its update :math:`O^G` is recomputed here, so that
    nothing holds it past the residual sum): the gradient of :math:`R` (that
    is, of :math:`O^G` and of the residual) :obj:`[n, n_g, d]`, and the row
    gradients of both scales :obj:`[n, d]` (:obj:`None` without the norm)
    and the chunk's parts of the gradients of :math:`W_1, W_2`.  Each
    recomputed intermediate is let go after its last use: the chunk's
    memory is a few of them, not all at once."""
    w1, w2 = tail.weight1, tail.weight2
    update = (flat @ weight.t()).view(-1, tail.residual.size(1), weight.size(0))
    r, h, a, f = _tail_rows(rows, update, tail, num_rows)
    del update
    s1 = _row_scale(tail.rstd1, tail.norm_weight1, rows, r.dtype)
    s2 = _row_scale(tail.rstd2, tail.norm_weight2, rows, f.dtype)
    g_s1 = g_s2 = None
    if s2 is not None:
        g_s2 = (grad * centred(f)).sum(-2)
        grad = centred(grad * s2.unsqueeze(-2))
    del f
    g_w2 = _rows_outer(grad, a)
    g_z = grad @ w2  # ReLU's backward, written over its input: the chunk's peak
    torch.ops.aten.threshold_backward.grad_input(g_z, a, 0, grad_input=g_z)
    del a
    g_w1 = _rows_outer(g_z, h)
    del h
    grad = grad + g_z @ w1
    del g_z
    if s1 is not None:
        g_s1 = (grad * centred(r)).sum(-2)
        grad = centred(grad * s1.unsqueeze(-2))
    return grad, (g_s1, g_s2, g_w1, g_w2)


def _update_backward_rows(grad: Tensor, agg: Tensor, params: tuple[Tensor, ...],
                          mixed: tuple[Tensor, ...], flat: Tensor, out: Tensor | None
                          ) -> tuple[Tensor, Tensor, tuple[Tensor, ...]]:
    r"""The backward of :math:`O^G` on a chunk of rows (:obj:`mixed` from
    :func:`_mixed` on the chunk's attention outputs :obj:`agg`, without its
    first entry; :obj:`flat` from :func:`_heads_last`): the gradients of
    :obj:`agg` (written into :obj:`out` when given, after the last read of
    :obj:`agg`) and the gates
    :obj:`[n, H, L]`, and the chunk's parts of the gradients of :math:`M_c,
    M_l, W_{\mathrm{mix}}, \mathbf{W}_O`."""
    Mc, Ml, mix, weight = params
    mlc, gated_mix, c, gamma = mixed  # heads first: [H (n), *]
    H, n, _, L = gamma.shape
    G, C = mix.size(1), Mc.size(-1)
    grad = grad.flatten(0, -2)  # [n n_g, d]
    g_weight = grad.T @ flat
    # heads first, [H, n, n_g, C] in memory: a batch of the heads, or of heads and rows
    g_m = (grad @ weight).view(n, G, H, C).permute(2, 0, 1, 3).contiguous()
    g_heads = g_m.view(H, n * G, C)
    g_A = torch.bmm(g_heads, Mc)
    g_mc = torch.bmm(g_heads.transpose(1, 2), _heads_first(agg[:, :, 1:]))  # [H, C, C]
    g_m = g_m.view(H * n, G, C)
    g_gated_mix = torch.bmm(g_m, mlc.transpose(1, 2)).view(H, n, G, L)
    g_mix = (g_gated_mix * gamma).sum(1)  # [H, n_g, L]
    g_gates = (g_gated_mix * mix.unsqueeze(1)).sum(2).transpose(0, 1)  # [n, H, L]
    g_mlc = torch.bmm(gated_mix.transpose(1, 2), g_m).view(H, n, L * C)
    g_ml = torch.bmm(g_mlc.transpose(1, 2), c).view(H, L, C, C)
    g_c = torch.bmm(g_mlc, Ml.flatten(1, 2))  # [H, n, C]
    g_agg = torch.cat([g_c.transpose(0, 1).unsqueeze(2),
                       g_A.view(H, n, G, C).transpose(0, 1)], dim=2, out=out)
    return g_agg, g_gates, (g_mc, g_ml, g_mix, g_weight)


def _backward_rows(grad: Tensor, rows: slice, agg: Tensor, gates: Tensor,
                   params: tuple[Tensor, ...], tail: GeneratorTail | None, overwrite: bool
                   ) -> tuple[list, list]:
    r"""The whole backward on a chunk of rows: the rows' gradients (of
    :obj:`agg`, written over the rows of :obj:`agg` when :obj:`overwrite`,
    :obj:`gates`, the residual, :math:`1 / \sigma_1` and
    :math:`1 / \sigma_2`, :obj:`None` where absent; that of a residual of
    learned queries summed over the chunk's sets), and the chunk's parts of
    the parameters' gradients (:math:`M_c, M_l, W_{\mathrm{mix}},
    \mathbf{W}_O`, norm weights, :math:`W_1, W_2`)."""
    N = agg.size(0)
    agg = _take(agg, rows)
    m, *mixed = _mixed(agg, _take(gates, rows), *params[:3])
    flat = _heads_last(m)  # what O^G maps; m itself is not needed again
    del m
    row_grads, tail_sums = [None] * 3, [None] * 4
    if tail is not None:
        grad, (g_s1, g_s2, *ffn_sums) = _tail_backward_rows(grad, rows, flat, params[3],
                                                            tail, N)
        g_rstd1, g_nw1 = _scale_grads(g_s1, tail.rstd1, tail.norm_weight1, rows)
        g_rstd2, g_nw2 = _scale_grads(g_s2, tail.rstd2, tail.norm_weight2, rows)
        M = tail.residual.size(0)
        g_res = grad if M == N else grad.view(grad.size(0) // M, M, *grad.shape[1:]).sum(0)
        row_grads, tail_sums = [g_res, g_rstd1, g_rstd2], [g_nw1, g_nw2, *ffn_sums]
    g_agg, g_gates, update_sums = _update_backward_rows(grad, agg, params, mixed, flat,
                                                        agg if overwrite else None)
    return [g_agg, g_gates, *row_grads], [*update_sums, *tail_sums]


# The function ################################################################

class _GeneratorPath(torch.autograd.Function):
    @staticmethod
    def forward(ctx, agg: Tensor, gates: Tensor, matrix_center: Tensor,
                matrix_generators: Tensor, mix: Tensor, weight: Tensor, consume: bool,
                *tail: Tensor | None) -> Tensor:
        ctx.device_type = agg.device.type
        ctx.autocast = _autocast_state(agg.device.type)
        ctx.consume = consume
        ctx.save_for_backward(agg, gates, matrix_center, matrix_generators, mix, weight,
                              *tail)
        params = (matrix_center, matrix_generators, mix, weight)
        tail = None if tail[-1] is None else GeneratorTail(*tail)
        return _join_rows(_chunks(agg, mix, tail), agg.size(0),
                          lambda rows: (_path_rows(rows, agg, gates, params, tail),))[0]

    @staticmethod
    @once_differentiable
    def backward(ctx, grad: Tensor):
        agg, gates, Mc, Ml, mix, weight, *tail = ctx.saved_tensors
        tail = None if tail[-1] is None else GeneratorTail(*tail)
        shared = tail is not None and tail.residual.size(0) < agg.size(0)
        # the gradient of agg over agg itself, unless a later backward of
        # the same graph (retain_graph) reads agg again
        overwrite = (ctx.consume and ctx.needs_input_grad[0]
                     and not torch._C._autograd._get_current_graph_task_keep_graph())
        sums = [None] * 9  # of M_c, M_l, W_mix, W_O, w_1, w_2 (norms), W_1, W_2, residual

        def rows_backward(rows):
            row_grads, chunk_sums = _backward_rows(_take(grad, rows), rows, agg, gates,
                                                   (Mc, Ml, mix, weight), tail, overwrite)
            if shared:  # a learned query's residual: a sum over the chunks
                chunk_sums.append(row_grads[2])
                row_grads[2] = None
            row_grads = [g if ctx.needs_input_grad[i] and not (i == 0 and overwrite) else None
                         for g, i in zip(row_grads, (0, 1, 7, 8, 10), strict=True)]
            sums[:] = _accumulate(sums, tuple(chunk_sums) + (None,) * (9 - len(chunk_sums)))
            return row_grads  # no buffers for those that are None

        with _replay_autocast(ctx):
            g_agg, g_gates, g_res, g_rstd1, g_rstd2 = _join_rows(
                _chunks(agg, mix, tail), agg.size(0), rows_backward)
        g_agg = agg if overwrite else g_agg
        g_res = sums[8] if shared else g_res
        grads = (g_agg, g_gates, *sums[:4], None, g_res, g_rstd1, sums[4], g_rstd2, sums[5],
                 *sums[6:8])
        return tuple(g if need else None
                     for g, need in zip(grads, ctx.needs_input_grad, strict=True))


def budgeted_generators(agg: Tensor, gates: Tensor, matrix_center: Tensor,
                        matrix_generators: Tensor, mix: Tensor, weight: Tensor,
                        tail: GeneratorTail | None = None, *, consume: bool = False,
                        recompute: bool = True) -> Tensor:
    r"""The generator rows of MZ attention after the attention weights
    (Eq. 3): per head :math:`h`, :math:`O^{G,(h)} = \hat G^{(h)}
    M_c^{(h)\top} + W_{\mathrm{mix}}^{(h)} \mathrm{stack}_l[\gamma_l^{(h)}
    M_l^{(h)} \hat{\mathbf{c}}^{(h)}]`, heads concatenated and mapped by
    :math:`\mathbf{W}_O` (no bias), followed by :obj:`tail` when given (the
    rest of an MZ-MAB, :class:`GeneratorTail`).  Backward keeps :obj:`agg`
    and the small inputs only and recomputes the rest in row chunks; with
    :obj:`consume`, it writes the gradient of :obj:`agg` over :obj:`agg`,
    chunk by chunk after the chunk's last read, so that the attention
    output and its gradient never take memory side by side.

    Args:
        agg (torch.Tensor): Attention outputs :obj:`[N, H, 1 + n_g, C]`,
            the centre :math:`\hat{\mathbf{c}}` first, then the generator
            rows :math:`\hat G`.
        gates (torch.Tensor): :math:`\gamma` per row, :obj:`[N, H, L]`.
        matrix_center (torch.Tensor): :math:`M_c`, :obj:`[H, C, C]`.
        matrix_generators (torch.Tensor): :math:`M_l`, :obj:`[H, L, C, C]`.
        mix (torch.Tensor): :math:`W_{\mathrm{mix}}`, :obj:`[H, n_g, L]`.
        weight (torch.Tensor): :math:`\mathbf{W}_O`, :obj:`[d, H C]`.
        tail (GeneratorTail, optional): The rest of an MZ-MAB on the
            generators. (default: :obj:`None`)
        consume (bool, optional): Backward may overwrite :obj:`agg`: nothing
            else reads it after this call (e.g. the output of a checkpointed
            attention, whose backward recomputes its own).  Not under
            :func:`torch.compile`, and not in a backward that keeps the
            graph (:obj:`retain_graph=True`), which may read :obj:`agg`
            again. (default: :obj:`False`)
        recompute (bool, optional): If set to :obj:`False`, the path runs
            as plain autograd operations, which store their intermediates
            for backward instead of recomputing them: fewer operators and
            less time, more memory (as under :mod:`torch.func` transforms,
            which always take this path). (default: :obj:`True`)

    Returns:
        torch.Tensor: :obj:`[N, n_g, d]`.
    """
    if not recompute or in_transform():
        return _path_rows(slice(0, agg.size(0)), agg, gates,
                          (matrix_center, matrix_generators, mix, weight), tail)
    consume = consume and not torch.compiler.is_compiling()
    return _GeneratorPath.apply(agg, gates, matrix_center, matrix_generators, mix, weight,
                                consume, *(tail or (None,) * len(GeneratorTail._fields)))


def generator_tail(update: Tensor, tail: GeneratorTail) -> Tensor:
    r"""The rest of an MZ-MAB on the generators (:class:`GeneratorTail`) after
    the attention's generator output :math:`O^G` :obj:`update`
    :obj:`[N, n_g, d]`, as plain autograd operations: what
    :func:`budgeted_generators` computes with a tail, for callers that need
    :math:`O^G` itself (an MZ-MAB whose attention has hooks), at the memory
    of stored activations.

    Returns:
        torch.Tensor: :obj:`[N, n_g, d]`.
    """
    return _tail_output_rows(slice(0, update.size(0)), update, tail, update.size(0))
