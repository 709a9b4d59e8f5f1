r"""Counting the device-to-host reads of a forward pass."""
import contextlib
from dataclasses import dataclass, field

import torch
from torch.utils._python_dispatch import TorchDispatchMode

#: Operators that read a device value to the host: ``.item()``, ``bool()``,
#: ``int()`` of a tensor, and data-dependent output shapes.
SYNC_OPS = ('_local_scalar_dense', 'nonzero', 'masked_select', 'unique', '_unique2',
            'unique_consecutive', 'unique_dim')


@dataclass
class SyncCount:
    ops: list[str] = field(default_factory=list)
    tolist: int = 0

    @property
    def total(self) -> int:
        return len(self.ops) + self.tolist


class _Mode(TorchDispatchMode):
    def __init__(self, count: SyncCount):
        super().__init__()
        self.count = count

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        name = func.overloadpacket.__name__
        if name in SYNC_OPS or (name == 'repeat_interleave' and
                                (kwargs or {}).get('output_size') is None
                                and len(args) == 1):
            self.count.ops.append(name)
        return func(*args, **(kwargs or {}))


@contextlib.contextmanager
def count_host_syncs():
    r"""Counts host reads: the operators of :obj:`SYNC_OPS` through a
    dispatch mode (``.item()`` and ``bool(t)`` dispatch to
    ``_local_scalar_dense``), and :meth:`torch.Tensor.tolist`, which does
    not dispatch, by patching it."""
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
