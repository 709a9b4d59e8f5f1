r"""Counting what a step dispatches: the aten operators (a kernel launch or
more on a GPU each, but for views and metadata, :func:`count_ops`) and the host synchronisations
(:func:`count_host_syncs`), on any device, CPU included.  The tests and
:mod:`.step_profile` use them."""
import contextlib
from collections import Counter
from dataclasses import dataclass, field

import torch
import torch.nn.functional as F
from torch import Tensor
from torch.utils._python_dispatch import TorchDispatchMode, _disable_current_modes

_SDPA = F.scaled_dot_product_attention

#: Operators that read a device value to the host: ``.item()``, ``bool()``,
#: ``int()`` of a tensor, data-dependent output shapes, and ``bincount``
#: (its CUDA kernel reads the maximum, even with ``minlength``).
SYNC_OPS = ('_local_scalar_dense', 'nonzero', 'masked_select', 'unique', '_unique2',
            'unique_consecutive', 'unique_dim', 'bincount', 'equal', 'is_nonzero')


def _reads_host(func, args, kwargs) -> bool:
    name = func.overloadpacket.__name__
    if name in SYNC_OPS:
        return True
    if name == 'repeat_interleave':  # the tensor overload without output_size
        return kwargs.get('output_size') is None and len(args) == 1
    if name == 'index':  # a boolean mask as an index: a nonzero inside
        return any(torch.is_tensor(i) and i.dtype == torch.bool for i in args[1])
    return False


def _from_host_data(func, args) -> bool:
    r"""Whether :obj:`func` makes a tensor of host data: :obj:`torch.tensor(list)`
    (``lift_fresh``), a synchronising copy to the GPU there.  A Python scalar
    is not counted: it travels as a kernel argument."""
    return func.overloadpacket.__name__ == 'lift_fresh' and args[0].dim() > 0


@dataclass
class SyncCount:
    ops: list[str] = field(default_factory=list)  # reads of device values
    tolist: int = 0
    copies: int = 0  # tensors made from host data

    @property
    def total(self) -> int:
        return len(self.ops) + self.tolist + self.copies


class _Mode(TorchDispatchMode):
    def __init__(self, count: SyncCount):
        super().__init__()
        self.count = count

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        if _reads_host(func, args, kwargs or {}):
            self.count.ops.append(func.overloadpacket.__name__)
        self.count.copies += _from_host_data(func, args)
        return func(*args, **(kwargs or {}))


#: Operators that return a view of an input without declaring it
#: (:obj:`OpOverload.is_view` is false for them).
UNDECLARED_VIEWS = ('_unsafe_view',)


class OpCount(Counter):
    r"""Aten operators by name (:func:`count_ops`), and :obj:`views`: those
    among them that only make a view or change metadata (:obj:`view`,
    :obj:`transpose`, :obj:`expand`, :obj:`detach`, ...), which launch no
    kernel on a GPU."""
    def __init__(self):
        super().__init__()
        self.views = Counter()

    @property
    def kernels(self) -> int:
        r"""The operators that run a kernel: all but :obj:`views`."""
        return sum(self.values()) - sum(self.views.values())


class _OpCounter(TorchDispatchMode):
    def __init__(self, ops: OpCount):
        super().__init__()
        self.ops = ops

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        name = func.overloadpacket.__name__
        self.ops[name] += 1
        if func.is_view or name in UNDECLARED_VIEWS:
            self.ops.views[name] += 1
        return func(*args, **(kwargs or {}))


@contextlib.contextmanager
def count_ops(*, fused_sdpa: bool = False):
    r"""Counts the aten operators dispatched inside the block, by name, in
    an :class:`OpCount` (:obj:`sum(counter.values())` is the total,
    :obj:`counter.kernels` those that run a kernel).  With :obj:`fused_sdpa`,
    every :func:`~torch.nn.functional.scaled_dot_product_attention` counts
    as CUDA's fused kernels run it (:class:`_FusedSDPA`): one operator each
    way, with their memory layouts."""
    ops = OpCount()
    with _fused_sdpa(ops) if fused_sdpa else contextlib.nullcontext(), _OpCounter(ops):
        yield ops


class _FusedSDPA(torch.autograd.Function):
    r""":func:`~torch.nn.functional.scaled_dot_product_attention` counted as
    CUDA's fused kernels (flash, memory-efficient, cuDNN) run it: one
    operator forward and one backward, the output laid out
    :obj:`[B, L, H, E]` in memory (a transposed view :obj:`[B, H, L, E]`)
    and each input's gradient strided like the input, whatever kernel the
    CPU runs inside (uncounted).  CPU's math kernel, which runs under
    dropout, returns contiguous tensors instead, so that the views around
    it copy: a copy that the CUDA path does not make."""
    @staticmethod
    def forward(ctx, ops: Counter, q: Tensor, k: Tensor, v: Tensor, attn_mask: Tensor | None,
                dropout_p: float, scale: float | None) -> Tensor:
        ops['scaled_dot_product_attention'] += 1
        ctx.ops = ops
        with _disable_current_modes(), torch.enable_grad():
            ctx.inputs = [t.detach().requires_grad_() for t in (q, k, v)]
            ctx.out = _SDPA(*ctx.inputs, attn_mask=attn_mask, dropout_p=dropout_p,
                            scale=scale)
            out = ctx.out.detach()
            if out.dim() == 4:
                out = out.transpose(1, 2).contiguous().transpose(1, 2)
        return out

    @staticmethod
    def backward(ctx, grad: Tensor):
        ctx.ops['scaled_dot_product_attention_backward'] += 1
        with _disable_current_modes():
            grads = torch.autograd.grad(ctx.out, ctx.inputs, grad)
            grads = [torch.empty_strided(t.size(), t.stride(), dtype=g.dtype,
                                         device=g.device).copy_(g)
                     for t, g in zip(ctx.inputs, grads, strict=True)]
        return None, *grads, None, None, None


@contextlib.contextmanager
def _fused_sdpa(ops: Counter):
    def fused(q, k, v, attn_mask=None, dropout_p=0.0, scale=None, **options):
        if options or not torch.is_grad_enabled():  # counted, as it is
            ops['scaled_dot_product_attention'] += 1
            with _disable_current_modes():
                return _SDPA(q, k, v, attn_mask=attn_mask, dropout_p=dropout_p,
                             scale=scale, **options)
        return _FusedSDPA.apply(ops, q, k, v, attn_mask, dropout_p, scale)

    F.scaled_dot_product_attention = fused
    try:
        yield
    finally:
        F.scaled_dot_product_attention = _SDPA


@contextlib.contextmanager
def count_host_syncs():
    r"""Counts host reads: the operators of :obj:`SYNC_OPS` through a
    dispatch mode (``.item()`` and ``bool(t)`` dispatch to
    ``_local_scalar_dense``), and :meth:`torch.Tensor.tolist`, which does
    not dispatch, by patching it; and tensors made from host data."""
    count = SyncCount()
    tolist = torch.Tensor.tolist

    def counted(self):
        count.tolist += 1
        return tolist(self)

    torch.Tensor.tolist = counted
    try:
        with _Mode(count):
            yield count
    finally:
        torch.Tensor.tolist = tolist
