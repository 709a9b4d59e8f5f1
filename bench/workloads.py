r"""Ragged set batches of the benchmark workloads (fixed seeds)."""
import torch

#: name -> description; sizes are drawn by :func:`set_sizes`.
WORKLOADS = {
    'uniform-10-30': '256 sets, sizes uniform in [10, 30]',
    'uniform-10-100': '256 sets, sizes uniform in [10, 100]',
    'skewed': '256 sets: 90% of size 10-30, 10% of size 500-1000',
    'large-1024': '32 sets of 1,024 elements',
}


def set_sizes(workload: str, scale: float = 1.0) -> torch.Tensor:
    r"""Set sizes of :obj:`workload`; :obj:`scale` < 1 shrinks the number of
    sets and the sizes (for the tiny run of the test suite)."""
    g = torch.Generator().manual_seed(0)
    num = max(2, int(256 * scale))
    if workload == 'uniform-10-30':
        sizes = torch.randint(10, 31, (num,), generator=g)
    elif workload == 'uniform-10-100':
        sizes = torch.randint(10, 101, (num,), generator=g)
    elif workload == 'skewed':
        sizes = torch.randint(10, 31, (num,), generator=g)
        big = torch.rand(num, generator=g) < 0.1
        big[0] = True
        sizes[big] = torch.randint(500, 1001, (int(big.sum()),), generator=g)
    elif workload == 'large-1024':
        sizes = torch.full((max(2, int(32 * scale)),), 1024)
    else:
        raise ValueError(f"unknown workload '{workload}' (choose from {list(WORKLOADS)})")
    return (sizes.float() * min(1.0, scale * 4)).clamp(min=2).long()


def ragged(sizes: torch.Tensor, channels: int, device: torch.device):
    r"""Random features :obj:`[N, channels]`, the sorted :obj:`batch` and
    the number of sets."""
    g = torch.Generator().manual_seed(1)
    batch = torch.repeat_interleave(torch.arange(sizes.numel()), sizes)
    x = torch.randn(batch.numel(), channels, generator=g)
    return x.to(device), batch.to(device), sizes.numel()


def workload_step(make_model, channels: int, job: dict):
    r"""The step of one (implementation, workload, mode) job of a suite over
    these workloads: :obj:`make_model(job['impl'])` on the job's batch (see
    :func:`mzattn.bench.measure.peak_memory_subprocess`)."""
    from .measure import inference_step, train_step
    device = torch.device(job.get('device', 'cpu'))
    torch.manual_seed(0)
    model = make_model(job['impl']).to(device)
    inputs = ragged(set_sizes(job['workload'], job.get('scale', 1.0)), channels, device)
    return (train_step if job['mode'] == 'train' else inference_step)(model, inputs)
