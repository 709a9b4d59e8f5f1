r"""A :class:`~lightning.pytorch.LightningDataModule` over the synthetic set
tasks (:mod:`mzattn.datasets.synthetic`) and the real datasets of
:mod:`mzattn.repro.training.real_data`, with seeded data-loader workers and a training
loader that resumes in the middle of an epoch."""
import random
from collections.abc import Iterator
from functools import cached_property
from typing import Any

import lightning.pytorch as pl
import numpy as np
import torch
from mzattn.datasets.batching import check_batching
from mzattn.datasets.padding import PadSets, largest_set
from torch.utils.data import Dataset, Sampler
from torch_geometric.data import Batch
from torch_geometric.loader import DataLoader


def seed_worker(worker_id: int) -> None:
    r"""Seeds NumPy and :mod:`random` in a data-loader worker from the
    worker's torch seed (which the loader's generator fixes)."""
    seed = torch.initial_seed() % 2**32
    np.random.seed(seed)
    random.seed(seed)


class EpochSampler(Sampler[int]):
    r"""Visits the :obj:`num_items` items of a split in an order that is a
    function of :obj:`(seed, epoch)` only (NumPy's PCG64 seeded with both),
    so that a resumed run sees every epoch in the order it would have seen.
    Lightning calls :meth:`set_epoch` before every training epoch.

    Args:
        num_items (int): Items of the split.
        seed (int): Shuffling seed.
    """
    def __init__(self, num_items: int, seed: int) -> None:
        self.num_items, self.seed = num_items, seed
        self.epoch, self.start = 0, 0

    def set_epoch(self, epoch: int) -> None:
        r"""The epoch whose order the next iteration gives (from its first
        item, unless :obj:`epoch` is the one :attr:`start` was set for)."""
        if epoch != self.epoch:
            self.epoch, self.start = epoch, 0

    def __iter__(self) -> Iterator[int]:
        order = np.random.default_rng([self.seed, self.epoch]).permutation(self.num_items)
        start, self.start = self.start, 0  # skip once: the next epoch starts at its beginning
        return iter(order[start:].tolist())

    def __len__(self) -> int:
        return self.num_items


class ResumableLoader(DataLoader):
    r"""The training loader: a PyG :class:`~torch_geometric.loader.DataLoader`
    over an :class:`EpochSampler`, whose position Lightning keeps in every
    checkpoint (:meth:`state_dict`, :meth:`load_state_dict`). Restored from a
    checkpoint saved after :obj:`k` batches of epoch :obj:`e`, it yields the
    batches of epoch :obj:`e` after the first :obj:`k`; :obj:`len()` stays
    the epoch's full length, as Lightning expects of a resumable loader.

    :attr:`batches_done` is the number of batches of the current epoch
    already trained; the trainer's :class:`~mzattn.repro.training.checkpoints.StopBetweenSteps`
    callback sets it after every batch.

    Args:
        dataset (Dataset): The training split.
        batch_size (int): Sets per batch.
        seed (int): Shuffling seed of the :class:`EpochSampler`.
        sampler (Sampler, optional): Replaces the :class:`EpochSampler`
            (Lightning passes a distributed one; such a loader restarts
            its epoch from the beginning). (default: :obj:`None`)
        **kwargs (optional): Other arguments of
            :class:`torch.utils.data.DataLoader`.
    """
    def __init__(self, dataset: Dataset, batch_size: int, seed: int,
                 sampler: Sampler | None = None, **kwargs: Any) -> None:
        sampler = EpochSampler(len(dataset), seed) if sampler is None else sampler
        super().__init__(dataset, batch_size=batch_size, sampler=sampler, **kwargs)
        self.batches_done = 0

    def state_dict(self) -> dict[str, int]:
        r"""The position: the epoch of the sampler and the batches of it
        already trained."""
        return {"epoch": getattr(self.sampler, "epoch", 0), "batches_done": self.batches_done}

    def load_state_dict(self, state: dict[str, int]) -> None:
        r"""Starts the next iteration at the position :obj:`state` (an epoch
        whose batches are all done continues with the next epoch)."""
        epoch, done = state["epoch"], state["batches_done"]
        if done >= len(self):
            epoch, done = epoch + 1, 0
        if isinstance(self.sampler, EpochSampler):
            self.sampler.epoch, self.sampler.start = epoch, done * self.batch_size
            self.batches_done = done


class SetDataModule(pl.LightningDataModule):
    r"""The train/val/test splits of one synthetic task as PyG
    :class:`~torch_geometric.loader.DataLoader` objects.

    The splits are generated (and cached on disk) in :meth:`prepare_data`,
    which Lightning runs once per node, and loaded in :meth:`setup` on every
    process. The training loader (:class:`ResumableLoader`) shuffles every
    epoch in an order fixed by :obj:`seed` and the epoch, and resumes in the
    middle of an epoch; workers are seeded by :func:`seed_worker`.

    Args:
        task (str): Task name of :obj:`mzattn.datasets.synthetic.TASKS` or
            of :obj:`mzattn.repro.training.real_data.REAL_DATASETS`.
        seed (int, optional): Data seed (the sets drawn) and shuffling seed.
            (default: :obj:`0`)
        overrides (dict, optional): Task configuration fields, e.g.
            :obj:`{"d": 16, "num_train": 2000}`. (default: :obj:`None`)
        normalize (bool, optional): Normalise targets with the training
            statistics (App. D.2.4). (default: :obj:`False`)
        batch_size (int, optional): Sets per batch. (default: :obj:`128`)
        num_workers (int, optional): Loader worker processes. (default: :obj:`0`)
        root (str, optional): Dataset cache root. (default: :obj:`None`)
        batching (str, optional): How a batch holds sets of different sizes
            (:obj:`mzattn.datasets.batching.BATCHINGS`): :obj:`"masked"`, a
            ragged PyG batch; :obj:`"padded"`, every set zero-padded to the
            batch's largest set; :obj:`"padded-dataset"`, to the largest set
            of the three splits. Padded sets reach the model as sets whose
            pad rows are real elements with zero features (no mask).
            (default: :obj:`"masked"`)
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
        batching: str = "masked",
    ) -> None:
        super().__init__()
        self.batching = check_batching(batching)
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
    def _loader(self, index: int) -> DataLoader:
        self.setup()
        # the generator seeds the workers (never the global RNG, which a checkpoint restores)
        options = {"batch_size": self.batch_size, "num_workers": self.num_workers,
                   "worker_init_fn": seed_worker,
                   "generator": torch.Generator().manual_seed(self.seed),
                   "persistent_workers": self.num_workers > 0}
        if index == 0:
            loader = ResumableLoader(self.splits[0], seed=self.seed, **options)
        else:
            loader = DataLoader(self.splits[index], shuffle=False, **options)
        if self.batching != "masked":  # PyG's loader takes no collate_fn: wrap its own
            loader.collate_fn = PadSets(loader.collate_fn, self.pad_width)
        return loader

    @cached_property
    def pad_width(self) -> int | None:
        r"""The width every set is padded to: the largest set of the three
        splits under :obj:`"padded-dataset"`, :obj:`None` (each batch's
        largest set) under :obj:`"padded"` and :obj:`"masked"`."""
        if self.batching != "padded-dataset":
            return None
        self.setup()
        return largest_set(self.splits)

    def train_dataloader(self) -> DataLoader:
        return self._loader(0)

    def val_dataloader(self) -> DataLoader:
        return self._loader(1)

    def test_dataloader(self) -> DataLoader:
        return self._loader(2)

    def on_before_batch_transfer(self, batch, dataloader_idx: int):
        r"""Adds :obj:`set_sizes`, the number of elements of every set as a
        host list, to a collated batch while it is still on the CPU, and
        checks that its features are finite there: the model's layout
        (:meth:`~mzlayers.layout.SetLayout.from_sizes`) then needs no device
        read in the training step."""
        if isinstance(batch, Batch) and "set_sizes" not in batch:
            if batch.x.is_floating_point() and not torch.isfinite(batch.x).all():
                bad = batch.batch[~torch.isfinite(batch.x).all(-1)].unique().tolist()
                raise ValueError(f"The features 'x' of sets {bad[:10]} of a {self.task} "
                                 f"batch contain NaN or infinite values")
            batch.set_sizes = batch.ptr.diff().tolist()
        return batch

    def __repr__(self) -> str:
        return (f"{self.__class__.__name__}({self.task}, seed={self.seed}, "
                f"overrides={self.overrides}, batch_size={self.batch_size}, "
                f"batching={self.batching})")
