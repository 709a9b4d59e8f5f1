r"""Suite 4: wall time of one training epoch of Task G (MST weight, d = 8) at
the default configuration, for every registry model."""
import time

import torch
from torch_geometric.loader import DataLoader

BATCH_SIZE = 128


def epoch_seconds(name: str, loader: DataLoader, in_channels: int,
                  device: torch.device) -> float:
    r"""Seconds of one AdamW epoch of registry model :obj:`name`."""
    from mzattn.baselines import build_model
    torch.manual_seed(0)
    model = build_model(name, in_channels, 1).to(device)
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4, weight_decay=1e-5)
    start = time.perf_counter()
    for data in loader:
        data = data.to(device)
        out = model(data.x, data.batch, data.num_graphs)
        out = out[0] if isinstance(out, tuple) else out
        loss = torch.nn.functional.mse_loss(out, data.y.view_as(out))
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    if device.type == 'cuda':
        torch.cuda.synchronize(device)
    return time.perf_counter() - start


def task_g_loader(num_train: int | None, root: str | None) -> tuple[DataLoader, int]:
    from mzattn.datasets.synthetic import load_task
    overrides = {} if num_train is None else {'num_train': num_train}
    train = load_task('task_g', split='train', seed=0, root=root, **overrides)
    return DataLoader(train, batch_size=BATCH_SIZE, shuffle=True), train.num_features
