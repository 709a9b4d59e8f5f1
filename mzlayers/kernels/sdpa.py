r""":func:`~torch.nn.functional.scaled_dot_product_attention` with memory
linear in the number of keys when the values are wider than the keys.

PyTorch's fused (flash) CPU kernel needs values as wide as the keys; MZ
values carry the centre and :math:`n_g` generator rows,
:math:`(1 + n_g) d_k` wide, so SDPA falls back to its math kernel, which
stores the whole :obj:`[*, L, S]` score matrix (6.4 GB for one MZ-SAB call
on a set of 20,000 elements).  Such a call runs here in query chunks, each
recomputed in backward (:func:`torch.utils.checkpoint.checkpoint`) instead
of storing its weights."""
import torch
import torch.nn.functional as F
from torch import Tensor
from torch.utils.checkpoint import checkpoint

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
    if not (torch.is_grad_enabled() and any(t.requires_grad for t in (q, k, v))):
        # every chunk written into one output: a list of small chunk outputs between the
        # large freed score buffers fragments glibc's heap, and the process then grows
        # with the number of chunks (quadratic in the set size; docs/layers.md)
        out = v.new_empty(*q.shape[:-1], v.size(-1))
        for start in range(0, L, chunk):
            out[..., start:start + chunk, :] = F.scaled_dot_product_attention(
                q[..., start:start + chunk, :], k, v, attn_mask=attn_mask, dropout_p=dropout_p)
        return out
    outs = [checkpoint(F.scaled_dot_product_attention, qc, k, v, attn_mask, dropout_p,
                       use_reentrant=False) for qc in q.split(chunk, dim=-2)]
    return torch.cat(outs, dim=-2)
