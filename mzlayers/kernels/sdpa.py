r""":func:`~torch.nn.functional.scaled_dot_product_attention` with memory
linear in the number of keys when the values are wider than the keys.

PyTorch's fused (flash) CPU kernel needs values as wide as the keys; MZ
values carry the centre and :math:`n_g` generator rows,
:math:`(1 + n_g) d_k` wide, so SDPA falls back to its math kernel, which
stores the whole :obj:`[*, L, S]` score matrix (6.4 GB for one MZ-SAB call
on a set of 20,000 elements).  Such a call runs here in query chunks, each
recomputed in backward instead of storing its weights
(:class:`ChunkedAttention`)."""
import torch
import torch.nn.functional as F
from torch import Tensor
from torch.autograd.function import once_differentiable

#: Largest score matrix (elements over all sets and heads of one call) that
#: a call with values wider than its keys materialises at once: 64 MB in
#: float32.
MAX_SCORE_ELEMENTS = 2**24


def sdpa(q: Tensor, k: Tensor, v: Tensor, attn_mask: Tensor | None = None,
         dropout_p: float = 0.0) -> Tensor:
    r""":obj:`scaled_dot_product_attention(q, k, v, attn_mask, dropout_p)` on
    :obj:`[*, L, d_k]`, :obj:`[*, S, d_k]`, :obj:`[*, S, d_v]`, in chunks of
    queries when :math:`d_v \neq d_k` and the scores exceed
    :obj:`MAX_SCORE_ELEMENTS` (the mask must broadcast over queries)."""
    L, S = q.size(-2), k.size(-2)
    groups = q.numel() // max(1, L * q.size(-1))  # sets x heads
    if v.size(-1) == q.size(-1) or groups * L * S <= MAX_SCORE_ELEMENTS:
        return F.scaled_dot_product_attention(q, k, v, attn_mask=attn_mask,
                                              dropout_p=dropout_p)
    chunk = max(1, MAX_SCORE_ELEMENTS // max(1, groups * S))
    return ChunkedAttention.apply(q, k, v, attn_mask, dropout_p, chunk)


def _chunks(q: Tensor, chunk: int):
    # (start, stop) of every query chunk
    L = q.size(-2)
    return [(start, min(start + chunk, L)) for start in range(0, L, chunk)]


class ChunkedAttention(torch.autograd.Function):
    r"""Attention in query chunks of :obj:`chunk` rows, each written into one
    preallocated output and recomputed in backward, where the gradients of
    the keys and values accumulate in place.  A list of chunk outputs (and
    :func:`torch.utils.checkpoint.checkpoint` per chunk) left small live
    tensors between the large freed score buffers; that fragments glibc's
    heap, and the process grew with the number of chunks, i.e. with the
    square of the set size (measured in :file:`docs/layers.md`).  Dropout
    masks are the same in backward: the random state of the forward pass is
    restored.  First-order gradients only."""
    @staticmethod
    def forward(ctx, q: Tensor, k: Tensor, v: Tensor, attn_mask: Tensor | None,
                dropout_p: float, chunk: int) -> Tensor:
        ctx.devices = [q.device] if q.device.type == 'cuda' else []
        ctx.rng = (torch.get_rng_state(), [torch.cuda.get_rng_state(d) for d in ctx.devices]) \
            if dropout_p > 0 else None
        out = v.new_empty(*q.shape[:-1], v.size(-1))
        for start, stop in _chunks(q, chunk):
            out[..., start:stop, :] = F.scaled_dot_product_attention(
                q[..., start:stop, :], k, v, attn_mask=attn_mask, dropout_p=dropout_p)
        ctx.save_for_backward(q, k, v, attn_mask)
        ctx.dropout_p, ctx.chunk = dropout_p, chunk
        return out

    @staticmethod
    @once_differentiable
    def backward(ctx, grad: Tensor):
        q, k, v, attn_mask = ctx.saved_tensors
        dq, dk, dv = torch.zeros_like(q), torch.zeros_like(k), torch.zeros_like(v)
        k, v = k.detach().requires_grad_(), v.detach().requires_grad_()
        with torch.random.fork_rng(ctx.devices, enabled=ctx.rng is not None), \
                torch.enable_grad():
            if ctx.rng is not None:
                torch.set_rng_state(ctx.rng[0])
                for device, state in zip(ctx.devices, ctx.rng[1], strict=True):
                    torch.cuda.set_rng_state(state, device)
            for start, stop in _chunks(q, ctx.chunk):
                qc = q[..., start:stop, :].detach().requires_grad_()
                out = F.scaled_dot_product_attention(qc, k, v, attn_mask=attn_mask,
                                                     dropout_p=ctx.dropout_p)
                gq, gk, gv = torch.autograd.grad(out, (qc, k, v), grad[..., start:stop, :])
                dq[..., start:stop, :] = gq
                dk += gk
                dv += gv
        return dq, dk, dv, None, None, None
