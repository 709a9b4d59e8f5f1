r"""Mamba's selective scan (the S6 recurrence) as one autograd function that
runs over time step by step, for the CPU.

:mod:`mambapy` computes the scan in parallel over time: it materialises the
:obj:`[B, L, E, N]` tensors :math:`\exp(\Delta A)` and :math:`\Delta B x`,
pads the length to a power of two, and records every step for autograd.
That suits a GPU. On a CPU each of those passes streams tens of megabytes
through memory: the three scans took most of a Mamba + PMA training step on
Table 3's sets. Here the state :math:`h_t` (:obj:`[B, E, N]`, a few
megabytes) stays in cache from one step to the next, the backward pass is
written out (it recomputes :math:`\exp(\Delta_t A)` rather than storing
it), and only the states themselves are kept for it. The training step is
2.85 times faster (``docs/baselines.md``, "CPU cost"). Gradients of
gradients are not supported.
"""
import functools

import torch
from torch import Tensor
from torch.autograd.function import once_differentiable


def selective_scan(x: Tensor, delta: Tensor, A: Tensor, B: Tensor, C: Tensor,
                   D: Tensor) -> Tensor:
    r"""The selective scan of Mamba's S6 layer (Gu and Dao, 2024, Alg. 2),
    with zero initial state:

    .. math::
        \mathbf{h}_t = \exp(\Delta_t A) \odot \mathbf{h}_{t-1}
            + (\Delta_t \odot \mathbf{x}_t) B_t^\top, \qquad
        \mathbf{y}_t = \mathbf{h}_t C_t + D \odot \mathbf{x}_t,

    per batch row, with :math:`\Delta_t, \mathbf{x}_t \in \mathbb{R}^E`
    broadcast over the :math:`N` state columns. The same function as
    :meth:`mambapy.mamba.MambaBlock.selective_scan` (tested to 1e-12 in
    float64, with its gradients).

    Shapes:
        - **input:** :obj:`x`, :obj:`delta` :obj:`[B, L, E]`; :obj:`A`
          :obj:`[E, N]`; :obj:`B`, :obj:`C` :obj:`[B, L, N]`; :obj:`D`
          :obj:`[E]`
        - **output:** :obj:`y` :obj:`[B, L, E]`

    Under mixed precision the inputs are promoted to their widest dtype
    (:math:`A` and :math:`D` are parameters: float32) and the recurrence runs
    outside autocast, so the state does not accumulate bfloat16 rounding.
    """
    inputs = (x, delta, A, B, C, D)
    dtype = functools.reduce(torch.promote_types, (t.dtype for t in inputs))
    with torch.autocast(x.device.type, enabled=False):
        return _SelectiveScan.apply(*(t.to(dtype) for t in inputs))


class _SelectiveScan(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x: Tensor, delta: Tensor, A: Tensor, B: Tensor, C: Tensor,
                D: Tensor) -> Tensor:
        steps = _time_major(delta * x, delta, B, C)  # [L, B, *]
        dx, dt, bt, ct = steps
        hs = x.new_empty(x.size(1), x.size(0), x.size(2), A.size(1))  # h_t: [L, B, E, N]
        y = x.new_empty(x.size(1), x.size(0), x.size(2))  # [L, B, E]
        for t in range(x.size(1)):
            h = dx[t, :, :, None] * bt[t, :, None, :]
            if t:
                h.addcmul_(torch.exp(dt[t, :, :, None] * A), hs[t - 1])
            hs[t] = h
            torch.matmul(h, ct[t, :, :, None], out=y[t, :, :, None])
        ctx.save_for_backward(x, A, D, hs, *steps)
        return y.transpose(0, 1).addcmul(D, x)

    @staticmethod
    @once_differentiable
    def backward(ctx, grad_y: Tensor) -> tuple[Tensor, ...]:
        x, A, D, hs, dx, dt, bt, ct = ctx.saved_tensors
        gy, = _time_major(grad_y)
        grad_dx = torch.empty_like(dx)  # d loss / d(delta x_t): [L, B, E]
        grad_dA = torch.zeros_like(dx)  # d loss / d(delta_t) through exp(delta_t A)
        grad_B, grad_C = torch.empty_like(bt), torch.empty_like(ct)
        grad_A = torch.zeros_like(hs[0])  # summed over the batch at the end
        carry = None  # d loss / d h_t through h_{t+1}
        for t in reversed(range(x.size(1))):
            torch.matmul(gy[t, :, None, :], hs[t], out=grad_C[t, :, None, :])
            grad_h = gy[t, :, :, None] * ct[t, :, None, :]
            if carry is not None:
                grad_h += carry
            torch.matmul(grad_h, bt[t, :, :, None], out=grad_dx[t, :, :, None])
            torch.matmul(dx[t, :, None, :], grad_h, out=grad_B[t, :, None, :])
            if t:
                carry = grad_h * torch.exp(dt[t, :, :, None] * A)
                grad_exponent = carry * hs[t - 1]  # d loss / d(delta_t A): [B, E, N]
                torch.sum(grad_exponent * A, -1, out=grad_dA[t])
                grad_A.addcmul_(grad_exponent, dt[t, :, :, None])
        grad_dx, grad_dA = grad_dx.transpose(0, 1), grad_dA.transpose(0, 1)
        delta = dt.transpose(0, 1)
        return (grad_y * D + grad_dx * delta, grad_dA + grad_dx * x, grad_A.sum(0),
                grad_B.transpose(0, 1), grad_C.transpose(0, 1), (grad_y * x).sum((0, 1)))


def _time_major(*tensors: Tensor) -> list[Tensor]:
    # [B, L, *] -> contiguous [L, B, *]: each step reads one contiguous slice
    return [tensor.transpose(0, 1).contiguous() for tensor in tensors]
