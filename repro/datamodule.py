r"""A :class:`~lightning.pytorch.LightningDataModule` over the synthetic set
tasks (:mod:`mzattn.datasets.synthetic`) and the real datasets of
:mod:`mzattn.repro.real_data`, with seeded data-loader workers."""
import random
from typing import Any

import lightning.pytorch as pl
import numpy as np
import torch
from torch_geometric.loader import DataLoader


def seed_worker(worker_id: int) -> None:
    r"""Seeds NumPy and :mod:`random` in a data-loader worker from the
    worker's torch seed (which the loader's generator fixes)."""
    seed = torch.initial_seed() % 2**32
    np.random.seed(seed)
    random.seed(seed)


class SetDataModule(pl.LightningDataModule):
    r"""The train/val/test splits of one synthetic task as PyG
    :class:`~torch_geometric.loader.DataLoader` objects.

    The splits are generated (and cached on disk) in :meth:`prepare_data`,
    which Lightning runs once per node, and loaded in :meth:`setup` on every
    process. The training loader shuffles with a generator seeded by
    :obj:`seed`; workers are seeded by :func:`seed_worker`.

    Args:
        task (str): Task name of :obj:`mzattn.datasets.synthetic.TASKS` or
            of :obj:`mzattn.repro.real_data.REAL_DATASETS`.
        seed (int, optional): Data seed (the sets drawn) and shuffling seed.
            (default: :obj:`0`)
        overrides (dict, optional): Task configuration fields, e.g.
            :obj:`{"d": 16, "num_train": 2000}`. (default: :obj:`None`)
        normalize (bool, optional): Normalise targets with the training
            statistics (App. D.2.4). (default: :obj:`False`)
        batch_size (int, optional): Sets per batch. (default: :obj:`128`)
        num_workers (int, optional): Loader worker processes. (default: :obj:`0`)
        root (str, optional): Dataset cache root. (default: :obj:`None`)
    """
    def __init__(
        self,
        task: str,
        seed: int = 0,
        overrides: dict[str, Any] | None = None,
        normalize: bool = False,
        batch_size: int = 128,
        num_workers: int = 0,
        root: str | None = None,
    ) -> None:
        super().__init__()
        if batch_size < 1:
            raise ValueError(f"'batch_size' must be positive (got {batch_size})")
        if num_workers < 0:
            raise ValueError(f"'num_workers' must be non-negative (got {num_workers})")
        self.task, self.seed, self.normalize = task, seed, normalize
        self.overrides = dict(overrides or {})
        self.batch_size, self.num_workers, self.root = batch_size, num_workers, root
        self.splits: tuple | None = None

    def _load(self) -> tuple:
        from mzattn.datasets.synthetic import load_splits

        from .real_data import is_real, load_real_splits
        if is_real(self.task):
            return load_real_splits(self.task, seed=self.seed, root=self.root,
                                    normalize=self.normalize, **self.overrides)
        return load_splits(self.task, seed=self.seed, root=self.root, normalize=self.normalize,
                           log=False, **self.overrides)

    def prepare_data(self) -> None:
        self._load()

    def setup(self, stage: str | None = None) -> None:
        if self.splits is None:
            self.splits = self._load()

    # ------------------------------------------------------------ shapes
    @property
    def train_dataset(self):
        r"""The training split (loaded on first access)."""
        self.setup()
        return self.splits[0]

    @property
    def in_channels(self) -> int:
        r"""Feature width :obj:`F` of the set elements."""
        return self.train_dataset.num_features

    @property
    def target_dim(self) -> int:
        r"""Target width :obj:`T`."""
        return self.train_dataset.target_dim

    # ----------------------------------------------------------- loaders
    def _loader(self, index: int, shuffle: bool) -> DataLoader:
        self.setup()
        generator = torch.Generator().manual_seed(self.seed)
        return DataLoader(self.splits[index], batch_size=self.batch_size, shuffle=shuffle,
                          num_workers=self.num_workers, worker_init_fn=seed_worker,
                          generator=generator, persistent_workers=self.num_workers > 0)

    def train_dataloader(self) -> DataLoader:
        return self._loader(0, shuffle=True)

    def val_dataloader(self) -> DataLoader:
        return self._loader(1, shuffle=False)

    def test_dataloader(self) -> DataLoader:
        return self._loader(2, shuffle=False)

    def __repr__(self) -> str:
        return (f"{self.__class__.__name__}({self.task}, seed={self.seed}, "
                f"overrides={self.overrides}, batch_size={self.batch_size})")
