r"""Counting what a step dispatches: the aten operators (each a kernel
launch or more on a GPU, :func:`count_ops`) and the host synchronisations
(:func:`count_host_syncs`), on any device, CPU included.  The tests and
:mod:`.step_profile` use them."""
import contextlib
from collections import Counter
from dataclasses import dataclass, field

import torch
from torch.utils._python_dispatch import TorchDispatchMode

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


class _OpCounter(TorchDispatchMode):
    def __init__(self, ops: Counter):
        super().__init__()
        self.ops = ops

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        self.ops[func.overloadpacket.__name__] += 1
        return func(*args, **(kwargs or {}))


@contextlib.contextmanager
def count_ops():
    r"""Counts the aten operators dispatched inside the block, by name
    (:obj:`sum(counter.values())` is the total)."""
    ops = Counter()
    with _OpCounter(ops):
        yield ops


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
