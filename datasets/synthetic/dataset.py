r"""The PyG dataset of a synthetic task split, cached on disk, and the
:func:`load_task` / :func:`load_splits` entry points."""
import hashlib
import json
import os
import os.path as osp
import time
from collections.abc import Callable
from typing import Any

import numpy as np
import torch
from torch import Tensor
from torch_geometric.data import Data

from .._io import SafeInMemoryDataset, atomic_torch_save
from ._validate import check_int
from .generation import generate_split
from .tasks import SPLITS, TaskConfig, canonical_name, get_config

VERSION = 1
r"""Version of the generators; part of every cache file name. Bump it when a
generator changes its output."""


def default_root() -> str:
    r"""Cache root: :obj:`$MZATTN_DATA` or :obj:`~/.cache/mzattn/synthetic`."""
    return os.environ.get("MZATTN_DATA") or osp.expanduser("~/.cache/mzattn/synthetic")


def cache_key(name: str, config: TaskConfig, seed: int, split: str) -> str:
    r"""Hash of everything that determines the sets of a split."""
    spec = {"version": VERSION, "task": name, "seed": seed, "split": split,
            "config": config.cache_fields(split)}
    return hashlib.sha256(json.dumps(spec, sort_keys=True).encode()).hexdigest()[:16]


class SyntheticSetDataset(SafeInMemoryDataset):
    r"""One split of a synthetic set task of the paper "Matrix Zonotopic
    Attention" (tasks and defaults: :obj:`mzattn.datasets.synthetic.TASKS`).

    Every item is a :class:`~torch_geometric.data.Data` with
    :obj:`x` of shape :obj:`[n, F]` (float32, :obj:`n >= 1`) and :obj:`y` of
    shape :obj:`[1, T]` (float32; computed in float64 from the points before
    they are rounded to float32). The split is generated on first use
    (deterministic for its task, configuration, seed and split) and cached in
    :obj:`{root}/{task}/processed/{split}_{hash}_v{VERSION}.pt`; a later load
    reads that file. A cache file that does not load (truncated, or unsafe)
    is set aside as :obj:`{file}.corrupt-{UTC time}`, named in a warning,
    and the split generated again.

    With :obj:`normalize=True` the targets become
    :math:`(y - \bar y_{train}) / s_{train}` with the *training* split's mean
    and standard deviation (App. D.2.4; a zero deviation is replaced by one),
    for every split; :attr:`target_mean`, :attr:`target_std` and
    :meth:`denormalize` map predictions back. Without normalisation they are
    zeros and ones.

    Args:
        root (str, optional): Cache root; :obj:`None` for
            :func:`default_root`. (default: :obj:`None`)
        name (str, optional): Task name (:obj:`TASKS` or an alias).
            (default: :obj:`"task_a"`)
        split (str, optional): :obj:`"train"`, :obj:`"val"` or :obj:`"test"`.
            (default: :obj:`"train"`)
        seed (int, optional): Non-negative seed. (default: :obj:`0`)
        config (TaskConfig, optional): Configuration; :obj:`None` for the
            task's default. (default: :obj:`None`)
        normalize (bool, optional): Normalise targets with the training
            statistics. (default: :obj:`False`)
        transform (callable, optional): Applied to every item on access.
            (default: :obj:`None`)
        log (bool, optional): Print progress while generating. (default: :obj:`True`)
        force_reload (bool, optional): Regenerate even if cached. (default: :obj:`False`)
    """
    def __init__(
        self,
        root: str | None = None,
        name: str = "task_a",
        split: str = "train",
        seed: int = 0,
        config: TaskConfig | None = None,
        normalize: bool = False,
        transform: Callable | None = None,
        log: bool = True,
        force_reload: bool = False,
    ) -> None:
        self.name = canonical_name(name)
        self.config = get_config(self.name) if config is None else config
        self.config.num_samples(split)  # validates the split name
        check_int("seed", seed, minimum=0)
        self.split, self.seed, self.normalize = split, seed, normalize
        self._generated_now = False
        root = default_root() if root is None else root
        super().__init__(osp.join(root, self.name), transform, log=log,
                         force_reload=force_reload)
        out = self.load_cache(self.processed_paths[0])
        self.data, self.slices = Data.from_dict(out["data"]), out["slices"]
        self.meta: dict[str, Any] = out["meta"]
        self.target_mean, self.target_std = self._target_stats(root, log)
        if normalize:
            self._data.y = (self._data.y - self.target_mean) / self.target_std

    # ------------------------------------------------------------ PyG hooks
    @property
    def raw_file_names(self) -> list[str]:
        return []

    @property
    def processed_file_names(self) -> list[str]:
        key = cache_key(self.name, self.config, self.seed, self.split)
        return [f"{self.split}_{key}_v{VERSION}.pt"]

    def download(self) -> None:
        pass

    def process(self) -> None:
        start = time.perf_counter()
        samples = generate_split(self.name, self.config, self.seed, self.split)
        seconds = time.perf_counter() - start
        x = torch.from_numpy(np.concatenate([s.x for s in samples]))  # [sum n, F]
        y64 = np.stack([s.y for s in samples]).astype(np.float64)  # [N, T]
        y = torch.from_numpy(y64).float()
        ptr = np.concatenate([[0], np.cumsum([len(s.x) for s in samples])])
        meta = {
            "task": self.name, "split": self.split, "seed": self.seed, "version": VERSION,
            "config": self.config.cache_fields(self.split),
            "num_degenerate": int(sum(s.degenerate for s in samples)),
            "generation_time_s": seconds,
            "y_mean": y64.mean(0).tolist(), "y_std": y64.std(0).tolist(),
        }
        slices = {"x": torch.from_numpy(ptr), "y": torch.arange(len(samples) + 1)}
        atomic_torch_save({"data": Data(x=x, y=y).to_dict(), "slices": slices,
                           "meta": meta}, self.processed_paths[0])
        self._generated_now = True

    # ------------------------------------------------------- normalisation
    def _target_stats(self, root: str, log: bool) -> tuple[Tensor, Tensor]:
        T = self.config.target_dim
        if not self.normalize:
            return torch.zeros(T), torch.ones(T)
        meta = self.meta
        if self.split != "train":
            meta = SyntheticSetDataset(root, self.name, "train", self.seed, self.config,
                                       log=log).meta
        std = torch.tensor(meta["y_std"], dtype=torch.float32)
        mean = torch.tensor(meta["y_mean"], dtype=torch.float32)
        return mean, torch.where(std > 0, std, torch.ones_like(std))

    def denormalize(self, y: Tensor) -> Tensor:
        r"""Maps (normalised) targets or predictions :obj:`y` of shape
        :obj:`[..., T]` back to the original scale."""
        return y * self.target_std.to(y) + self.target_mean.to(y)

    # ----------------------------------------------------------- reporting
    @property
    def target_dim(self) -> int:
        r"""Target width :obj:`T`."""
        return self.config.target_dim

    def summary(self) -> dict[str, Any]:
        r"""Sizes, set-size statistics, degenerate-geometry count, generation
        time and cache file of this split."""
        sizes = self.slices["x"].diff()
        return {
            "task": self.name, "split": self.split, "seed": self.seed,
            "num_samples": len(self), "num_features": self.num_features,
            "target_dim": self.target_dim,
            "set_size_min": int(sizes.min()), "set_size_max": int(sizes.max()),
            "set_size_mean": float(sizes.float().mean()),
            "num_degenerate": self.meta["num_degenerate"],
            "generation_time_s": self.meta["generation_time_s"],
            "from_cache": not self._generated_now,
            "normalized": self.normalize,
            "target_mean": self.target_mean.tolist(), "target_std": self.target_std.tolist(),
            "cache_file": self.processed_paths[0],
        }

    def __repr__(self) -> str:
        return f"{self.__class__.__name__}({self.name}, split={self.split}, {len(self)})"


def load_task(name: str, *, split: str, seed: int = 0, root: str | None = None,
              normalize: bool = False, log: bool = True, force_reload: bool = False,
              **overrides: Any) -> SyntheticSetDataset:
    r"""Loads (generating and caching on first use) one split of a task.

    Args:
        name (str): Task name, see :obj:`TASKS` (alias :obj:`"mst"`).
        split (str): :obj:`"train"`, :obj:`"val"` or :obj:`"test"`.
        seed (int, optional): Non-negative seed. (default: :obj:`0`)
        root (str, optional): Cache root. (default: :obj:`$MZATTN_DATA` or
            :obj:`~/.cache/mzattn/synthetic`)
        normalize (bool, optional): Normalise targets with the training
            split's statistics. (default: :obj:`False`)
        log (bool, optional): Print progress while generating. (default: :obj:`True`)
        force_reload (bool, optional): Regenerate even if cached. (default: :obj:`False`)
        **overrides: Configuration fields, e.g. :obj:`d=16`,
            :obj:`num_train=2000`, :obj:`noise=0.5`, :obj:`L=8`.

    Example:
        >>> train = load_task("meb", split="train", d=16, num_train=2000)
        >>> train[0]
        Data(x=[17, 16], y=[1, 1])
    """
    if split not in SPLITS:
        raise ValueError(f"'split' must be one of {SPLITS} (got {split!r})")
    config = get_config(name, **overrides)
    return SyntheticSetDataset(root, name, split, seed, config, normalize, log=log,
                               force_reload=force_reload)


def load_splits(name: str, *, seed: int = 0, root: str | None = None,
                normalize: bool = False, log: bool = True, force_reload: bool = False,
                **overrides: Any) -> tuple[SyntheticSetDataset, ...]:
    r"""The :obj:`(train, val, test)` splits of a task; arguments as in
    :func:`load_task`."""
    return tuple(load_task(name, split=split, seed=seed, root=root, normalize=normalize,
                           log=log, force_reload=force_reload, **overrides)
                 for split in SPLITS)
