r"""Timing and peak-memory primitives shared by the benchmark suites."""
import json
import platform
import statistics
import subprocess
import sys
import time
import weakref
from collections.abc import Callable
from dataclasses import dataclass

import torch
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils._pytree import tree_flatten


@dataclass(frozen=True)
class Timing:
    r"""Seconds per call: median and inter-quartile spread over repetitions."""
    median: float
    q1: float
    q3: float
    runs: int

    @classmethod
    def of(cls, samples: list[float]) -> 'Timing':
        q1, _, q3 = statistics.quantiles(samples, n=4) if len(samples) > 1 else samples * 3
        return cls(statistics.median(samples), q1, q3, len(samples))


def keep_freed_memory() -> None:
    r"""Makes glibc serve every allocation from its heap and keep freed memory
    (:obj:`M_MMAP_MAX = 0`, :obj:`M_TRIM_THRESHOLD = 2^31 - 1`), as a
    caching allocator would.  By default each CPU tensor above glibc's 32 MB
    mmap ceiling is a fresh mapping whose pages are faulted in and zeroed on
    every call; on our 2-core VM that cost 6x the arithmetic of an MZ-ISAB
    step at n = 10,000 (27.4 s instead of 4.1 s) and made time grow
    super-linearly in n.  Used for timings only: peak memory is measured in a
    child with the default allocator, whose resident size follows the live
    tensors more closely.  No-op where glibc's :obj:`mallopt` is missing."""
    import ctypes
    import ctypes.util
    try:
        mallopt = ctypes.CDLL(ctypes.util.find_library('c')).mallopt
    except (OSError, AttributeError, TypeError):
        return
    m_trim_threshold, m_mmap_max = -1, -4
    mallopt(m_mmap_max, 0)
    mallopt(m_trim_threshold, 2**31 - 1)


def environment(device: torch.device) -> dict:
    r"""The machine a measurement ran on, stored beside its numbers."""
    return {'device': str(device), 'torch': torch.__version__,
            'threads': torch.get_num_threads(), 'cpu': platform.processor() or
            platform.machine(), 'gpu': torch.cuda.get_device_name(device)
            if device.type == 'cuda' else None,
            'cpu_allocator': 'glibc heap, freed memory kept (keep_freed_memory)'}


def synchronize(device: torch.device) -> None:
    if device.type == 'cuda':
        torch.cuda.synchronize(device)


def time_interleaved(fns: dict[str, Callable[[], None]], device: torch.device,
                     repeats: int = 10, warmup: int = 2) -> dict[str, Timing]:
    r"""Times every function :obj:`repeats` times, interleaving them so that
    drifting machine load hits all of them alike, in the orders of
    :func:`balanced_orders` (one per repeat): each function directly follows
    every other about equally often.  A function timed right after a
    memory-hungry peer pays for the caches and heap that peer leaves behind;
    with one fixed order (or its rotations, which keep who follows whom), the
    row after the padded PyG anchor on the skewed set-pooling workload was
    1.3-1.6x slower than the next row, which ran the same kernels, in three
    runs."""
    for _ in range(warmup):
        for fn in fns.values():
            fn()
    names = list(fns)
    orders = balanced_orders(len(names))
    samples: dict[str, list[float]] = {name: [] for name in fns}
    for r in range(repeats):
        for name in (names[i] for i in orders[r % len(orders)]):
            fn = fns[name]
            synchronize(device)
            start = time.perf_counter()
            fn()
            synchronize(device)
            samples[name].append(time.perf_counter() - start)
    return {name: Timing.of(s) for name, s in samples.items()}


def balanced_orders(n: int) -> list[list[int]]:
    r"""A Williams design: orders of :obj:`range(n)` in which every item
    directly follows every other item equally often (:obj:`n` orders for
    even :obj:`n`; :obj:`2n`, each order and its reverse, for odd :obj:`n`)."""
    first = [0] + [(j + 1) // 2 if j % 2 else n - j // 2 for j in range(1, n)]
    orders = [[(x + shift) % n for x in first] for shift in range(n)]
    return orders if n % 2 == 0 else orders + [order[::-1] for order in orders]


def _loss(out) -> torch.Tensor:
    r"""A scalar touching every output (tensors, :obj:`(pred, ihw)` tuples
    and zonotopes): :math:`\sum_t \langle t, \mathrm{sg}(t) \rangle`.  Its
    backward hands each output one dense gradient of the output's size — what
    a following layer would pass back — and allocates nothing else, so the
    peak memory of a block is the block's, not the loss's (a squared mean
    made four output-sized temporaries in backward)."""
    from mzlayers import Zonotope
    if isinstance(out, tuple):
        out = out[0]
    parts = [out.center, out.generators] if isinstance(out, Zonotope) else [out]
    return sum(torch.dot(t.reshape(-1).float(), t.detach().reshape(-1).float())
               for t in parts)


def train_step(model: torch.nn.Module, inputs: tuple, **kwargs) -> Callable[[], None]:
    r"""One forward + backward of :obj:`model` on :obj:`inputs` (and keyword
    arguments :obj:`kwargs`), gradients discarded."""
    def step():
        _loss(model(*inputs, **kwargs)).backward()
        model.zero_grad(set_to_none=True)
    return step


def inference_step(model: torch.nn.Module, inputs: tuple) -> Callable[[], None]:
    r"""One forward under :func:`torch.inference_mode`."""
    def step():
        with torch.inference_mode():
            model(*inputs)
    return step


def peak_memory_cuda(fn: Callable[[], None], device: torch.device) -> int:
    r"""Peak bytes allocated on :obj:`device` by one call of :obj:`fn`."""
    synchronize(device)
    torch.cuda.reset_peak_memory_stats(device)
    base = torch.cuda.memory_allocated(device)
    fn()
    synchronize(device)
    return torch.cuda.max_memory_allocated(device) - base


class _LiveStorages(TorchDispatchMode):
    r"""Counts the bytes of every tensor storage that an aten op allocates
    while the mode is active (outputs that alias none of the op's inputs:
    not views, not in-place results) until the storage is freed (a
    :func:`weakref.finalize` on it), and their high-water mark."""
    def __init__(self):
        super().__init__()
        self.live = self.peak = 0
        self.storages: dict[int, weakref.finalize] = {}

    def _freed(self, key: int, nbytes: int) -> None:
        self.storages.pop(key, None)
        self.live -= nbytes

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        out = func(*args, **(kwargs or {}))
        inputs = {t.untyped_storage().data_ptr() for t in tree_flatten((args, kwargs))[0]
                  if isinstance(t, torch.Tensor)}
        for t in tree_flatten(out)[0]:
            if not isinstance(t, torch.Tensor):
                continue
            storage = t.untyped_storage()
            key, nbytes = storage.data_ptr(), storage.nbytes()
            if nbytes and key not in inputs and key not in self.storages:
                self.storages[key] = weakref.finalize(storage, self._freed, key, nbytes)
                self.live += nbytes
                self.peak = max(self.peak, self.live)
        return out


def peak_memory_dispatch(fn: Callable[[], None]) -> int:
    r"""Peak bytes of the tensors that one call of :obj:`fn` allocates and
    holds at once, counted op by op with a
    :class:`~torch.utils._python_dispatch.TorchDispatchMode` (forward and
    backward: the CPU autograd engine runs backward in the calling thread).

    The CPU analogue of :func:`peak_memory_cuda`: torch's CPU allocator
    keeps no statistics, and the resident size of a process
    (:func:`peak_memory_subprocess`) also moves with glibc's heap (freed
    chunks kept or returned, fragmentation) and with the one-off
    allocations of a first call (thread pools, kernel caches), by several
    MB at the sizes of our blocks.  This count sees exactly the tensors
    autograd keeps and the temporaries of every op, the same on every run;
    it does not see scratch memory that a kernel allocates internally
    without returning it as a tensor (BLAS and oneDNN workspaces)."""
    mode = _LiveStorages()
    with mode:
        fn()
    return mode.peak


def peak_memory_subprocess(module: str, job: dict) -> int:
    r"""Peak resident-memory growth (bytes) of one call, measured in a fresh
    interpreter so that earlier allocations cannot hide it: the child builds
    the job with :obj:`module.build(job) -> fn`, resets the kernel's
    high-water mark (:file:`/proc/self/clear_refs`), calls :obj:`fn` once and
    reports :obj:`VmHWM` minus the resident size before the call.  Linux, CPU
    only."""
    out = subprocess.run([sys.executable, '-m', 'mzattn.bench.measure', module,
                          json.dumps(job)], capture_output=True, text=True, check=True)
    return int(out.stdout.strip().splitlines()[-1])


def _status_kib(field: str) -> int:
    with open('/proc/self/status') as f:
        for line in f:
            if line.startswith(field + ':'):
                return int(line.split()[1])
    raise RuntimeError(f'{field} is not in /proc/self/status')


def _child(module: str, job: str) -> None:
    import importlib
    torch.set_num_threads(1)
    fn = importlib.import_module(module).build(json.loads(job))
    with open('/proc/self/clear_refs', 'w') as f:
        f.write('5')  # reset VmHWM to the current resident size
    before = _status_kib('VmRSS')
    fn()
    print((_status_kib('VmHWM') - before) * 1024)


if __name__ == '__main__':
    _child(sys.argv[1], sys.argv[2])
