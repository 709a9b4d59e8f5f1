r"""Real datasets for the reproduction harness: QM9 (Table 28), ModelNet40 and
ScanObjectNN (Table 2, Tasks C and E), pixel point clouds (Table 31),
ResNet-feature point clouds (Tables 26, 31-33), and the Neural-Process image
completion and tabular meta-regression of the negative-transfer study
(App. D.5.6).

A table column names a provider of :obj:`REAL_DATASETS` as its :obj:`task`;
:class:`~mzattn.repro.training.datamodule.SetDataModule` then calls
:func:`load_real_splits` instead of the synthetic task generator. A provider
returns the train/val/test :class:`SetSplit` objects and takes the column's
overrides (and the profile's split sizes and :obj:`Profile.data` options) as
keyword arguments.

Nothing is downloaded. Data that must be downloaded by hand raises a
:class:`FileNotFoundError` naming the missing files and their URL; the
option :obj:`stand_in=True` of the pixel, ResNet, image-completion and
tabular providers replaces such data by an offline stand-in (scikit-learn's
digits, random-weight ResNets, scikit-learn's diabetes table), used by the
smoke profiles.
"""
import functools
import os
import os.path as osp
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import torch
from torch import Tensor
from torch.utils.data import Dataset
from torch_geometric.data import Data

from mzattn.extras import require

SPLIT_SEED = 0
r"""Seed of every split carved by this module (a validation part of a
training file, the QM9 subset): fixed, so that the seeds of a table vary the
training only and every model sees the same molecules, shapes and images."""

VAL_FRACTION = 0.1
r"""Share of a training file held out for validation (model selection) where
the dataset has no validation split (ModelNet40, ScanObjectNN, the image
sources)."""

STAND_IN_IMAGE_SIZE = 64
r"""Input side of the random-weight ResNets of the offline stand-in (the
smallest size with a 4 x 4 layer-3 map)."""


# ------------------------------------------------------------------ roots


def dataset_root(name: str, root: str | None = None) -> str:
    r"""Cache folder of the real dataset :obj:`name`: :obj:`{root}/{name}`
    when a root is given (:obj:`--data-root`); else, for QM9,
    :obj:`$MZATTN_QM9_ROOT` (the Docker image processes QM9 there); else
    :obj:`$MZATTN_DATA/{name}`; else :obj:`~/.cache/mzattn/{name}`."""
    if root is not None:
        return osp.join(root, name)
    if name == "qm9" and os.environ.get("MZATTN_QM9_ROOT"):
        return os.environ["MZATTN_QM9_ROOT"]
    base = os.environ.get("MZATTN_DATA") or osp.expanduser("~/.cache/mzattn")
    return osp.join(base, name)


# ------------------------------------------------------------------ splits


class SetSplit(Dataset):
    r"""One split of a real dataset as a list of PyG
    :class:`~torch_geometric.data.Data` sets (:obj:`x [n, F]`, :obj:`y`),
    with the attributes the harness reads (those of
    :class:`mzattn.datasets.synthetic.SyntheticSetDataset`).

    Args:
        items (Sequence[Data]): The sets, targets already normalised: a list,
            or a dataset that builds them on access
            (:class:`~mzattn.datasets.episodes.EpisodeSets`).
        target_mean (Tensor): Mean subtracted from the targets :obj:`[T]`.
        target_std (Tensor): Scale the targets were divided by :obj:`[T]`.
        num_classes (int, optional): Classes of a classification dataset
            (:obj:`y` holds class indices). (default: :obj:`None`)
        transform (callable, optional): Applied to every set on access
            (training augmentation). (default: :obj:`None`)
    """
    def __init__(
        self,
        items: Sequence[Data],
        target_mean: Tensor,
        target_std: Tensor,
        num_classes: int | None = None,
        transform: Callable[[Data], Data] | None = None,
    ) -> None:
        if not items:
            raise ValueError("'items' must hold at least one set")
        self.items, self.num_classes, self.transform = items, num_classes, transform
        self.target_mean, self.target_std = target_mean, target_std

    def __len__(self) -> int:
        return len(self.items)

    def __getitem__(self, index: int) -> Data:
        data = self.items[index]
        return data if self.transform is None else self.transform(data)

    @property
    def num_features(self) -> int:
        r"""Feature width :obj:`F` of the set elements."""
        return self.items[0].x.size(-1)

    @property
    def target_dim(self) -> int:
        r"""Target width :obj:`T` (1 for class labels)."""
        return self.target_mean.numel()

    def __repr__(self) -> str:
        return f"{self.__class__.__name__}({len(self)}, num_features={self.num_features})"


def _sets(dataset, index: Sequence[int] | Tensor | None = None) -> list[Data]:
    # Only x and y travel: PyG collates every attribute of an item.
    index = range(len(dataset)) if index is None else index
    items = []
    for i in index:
        data = dataset[int(i)]
        items.append(Data(x=data.x, y=data.y.view(1, -1)))
    return items


def regression_splits(train: list[Data], val: list[Data], test: list[Data],
                      normalize: bool) -> tuple[SetSplit, SetSplit, SetSplit]:
    r"""Three :class:`SetSplit` objects of regression sets; with
    :obj:`normalize` the targets become :math:`(y - \bar y) / s` with the
    training split's statistics (App. D.2.4; a zero deviation becomes one)."""
    y = torch.cat([data.y for data in train]).double()  # [N, T]
    mean, std = torch.zeros(y.size(1)), torch.ones(y.size(1))
    if normalize:
        mean, std = y.mean(0).float(), y.std(0, unbiased=False).float()
        std = torch.where(std > 0, std, torch.ones_like(std))
    for data in (*train, *val, *test):
        data.y = ((data.y.double() - mean) / std).float()
    return tuple(SetSplit(items, mean, std) for items in (train, val, test))


def classification_splits(train: list[Data], val: list[Data], test: list[Data],
                          num_classes: int, transform: Callable | None = None,
                          ) -> tuple[SetSplit, SetSplit, SetSplit]:
    r"""Three :class:`SetSplit` objects of labelled sets; :obj:`transform`
    augments the training split only."""
    zero, one = torch.zeros(1), torch.ones(1)
    return (SetSplit(train, zero, one, num_classes, transform),
            SetSplit(val, zero, one, num_classes), SetSplit(test, zero, one, num_classes))


def hold_out(num_items: int, num_val: int | None, num_train: int | None
             ) -> tuple[np.ndarray, np.ndarray]:
    r"""Indices :obj:`(train, val)` of a training file of :obj:`num_items`
    sets: a fixed random permutation (:obj:`SPLIT_SEED`), the first
    :obj:`num_val` (default :obj:`VAL_FRACTION`) held out for validation and
    the next :obj:`num_train` (default: all others) for training."""
    num_val = round(VAL_FRACTION * num_items) if num_val is None else num_val
    num_train = num_items - num_val if num_train is None else num_train
    if num_val < 1 or num_train < 1 or num_val + num_train > num_items:
        raise ValueError(f"'num_train' + 'num_val' must fit in the {num_items} training sets "
                         f"(got {num_train} + {num_val})")
    perm = np.random.default_rng(SPLIT_SEED).permutation(num_items)
    return np.sort(perm[num_val:num_val + num_train]), np.sort(perm[:num_val])


def _first(items: list[Data], num: int | None) -> list[Data]:
    if num is not None and not 1 <= num <= len(items):
        raise ValueError(f"'num_test' must be in [1, {len(items)}] (got {num})")
    return items if num is None else items[:num]


def _check_sizes(num_train: int | None, num_val: int | None, num_test: int | None) -> None:
    given = [n is not None for n in (num_train, num_val, num_test)]
    if any(given) and not all(given):
        raise ValueError(f"'num_train', 'num_val' and 'num_test' must be given together "
                         f"(got {num_train}, {num_val}, {num_test})")


# --------------------------------------------------------------- providers


def qm9(*, seed: int, root: str | None, normalize: bool, targets: str | Sequence[str] = "mu",
        num_train: int | None = None, num_val: int | None = None, num_test: int | None = None,
        num_molecules: int | None = None) -> tuple[SetSplit, SetSplit, SetSplit]:
    r"""QM9 (Task H, Table 28): the paper's random 50K molecules split
    80/10/10, or :obj:`num_train`/:obj:`num_val`/:obj:`num_test` molecules of
    a random subset (seed :obj:`SPLIT_SEED`); :obj:`num_molecules` limits the
    processing to the first molecules of the source (smoke runs). The cell
    seed only varies the training."""
    from mzattn.datasets.qm9 import QM9

    _check_sizes(num_train, num_val, num_test)
    dataset = QM9(dataset_root("qm9", root), targets=targets, num_molecules=num_molecules)
    if num_train is None:
        split = dataset.split(SPLIT_SEED)
    else:
        total = num_train + num_val + num_test
        if total > len(dataset):
            raise ValueError(f"'num_train' + 'num_val' + 'num_test' = {total} exceeds the "
                             f"{len(dataset)} QM9 molecules available")
        split = dataset.split(SPLIT_SEED, subset=total, fractions=(
            num_train / total, num_val / total, num_test / total))
    return regression_splits(*(_sets(dataset, index) for index in split[:3]), normalize)


def _train_test_files(build: Callable[[bool], Any], num_train: int | None,
                      num_val: int | None, num_test: int | None
                      ) -> tuple[list[Data], list[Data], list[Data]]:
    # A dataset with train and test files: validation is held out of train.
    _check_sizes(num_train, num_val, num_test)
    train_file = build(True)
    train, val = hold_out(len(train_file), num_val, num_train)
    return _sets(train_file, train), _sets(train_file, val), _first(_sets(build(False)), num_test)


def modelnet40(*, seed: int, root: str | None, normalize: bool, source: str = "off",
               num_points: int = 1024, augment: bool = True, num_train: int | None = None,
               num_val: int | None = None, num_test: int | None = None
               ) -> tuple[SetSplit, SetSplit, SetSplit]:
    r"""ModelNet40 (Task C): 1,024 surface points per shape, random y-axis
    rotation and jitter on the training split (:obj:`augment`), validation
    held out of the training file (:func:`hold_out`)."""
    from mzattn.datasets import ModelNet40, RandomYRotateJitter
    from mzattn.datasets.modelnet import MODELNET40_CLASSES

    def build(train: bool):
        return ModelNet40(dataset_root("modelnet40", root), train=train, source=source,
                          num_points=num_points)

    sets = _train_test_files(build, num_train, num_val, num_test)
    return classification_splits(*sets, len(MODELNET40_CLASSES),
                                 RandomYRotateJitter() if augment else None)


def scanobjectnn(*, seed: int, root: str | None, normalize: bool, num_points: int = 1024,
                 augment: bool = True, num_train: int | None = None,
                 num_val: int | None = None, num_test: int | None = None
                 ) -> tuple[SetSplit, SetSplit, SetSplit]:
    r"""ScanObjectNN OBJ_BG (Task E), as :func:`modelnet40`."""
    from mzattn.datasets import RandomYRotateJitter, ScanObjectNN
    from mzattn.datasets.scanobjectnn import SCANOBJECTNN_CLASSES

    def build(train: bool):
        return ScanObjectNN(dataset_root("scanobjectnn", root), train=train,
                            num_points=num_points)

    sets = _train_test_files(build, num_train, num_val, num_test)
    return classification_splits(*sets, len(SCANOBJECTNN_CLASSES),
                                 RandomYRotateJitter() if augment else None)


def pixel_clouds(*, seed: int, root: str | None, normalize: bool, source: str = "mnist",
                 construction: str = "pixels", targets: str | Sequence[str] = "meb",
                 affine_scale: float = 0.0, mixture: int = 1,
                 num_points: tuple[int, int] | None = None, num_train: int | None = None,
                 num_val: int | None = None, num_test: int | None = None,
                 stand_in: bool = False) -> tuple[SetSplit, SetSplit, SetSplit]:
    r"""Pixel point clouds (Table 31, tiers 1-2) of
    :class:`mzattn.datasets.PixelClouds`; :obj:`stand_in` swaps the image
    source for scikit-learn's digits (offline). The sets of the training
    file are built for :obj:`num_train + num_val` sets only when sizes are
    given."""
    from mzattn.datasets import PixelClouds

    source = "digits" if stand_in else source
    kwargs = {"source": source, "construction": construction, "targets": targets,
              "affine_scale": affine_scale, "mixture": mixture,
              "num_points": None if num_points is None else tuple(num_points)}

    def build(train: bool):
        sizes = (num_train, num_val) if train else (num_test,)
        num_sets = None if num_train is None else sum(sizes)
        return PixelClouds(dataset_root("images", root), train=train,
                           num_sets=num_sets, **kwargs)

    return regression_splits(*_train_test_files(build, num_train, num_val, num_test),
                             normalize)


@functools.lru_cache(maxsize=8)
def _stand_in_features(backbone: str, num_images: int, train: bool,
                       targets: tuple[str, ...]) -> tuple[Tensor, Tensor]:
    # Offline stand-in of ResNetFeatureClouds: scikit-learn digits as grey
    # RGB images through a randomly initialised ResNet (seeded). Cached per
    # process: the data module loads its splits twice.
    torchvision = require('torchvision', 'data')
    from mzattn.datasets._io import load_images
    from mzattn.datasets.geometric_targets import geometric_targets
    from mzattn.datasets.resnet_features import BACKBONES, layer3_point_clouds, preprocess

    digits = load_images("digits", "", train)[0]  # [N, 8, 8] uint8
    if num_images > len(digits):
        raise ValueError(f"the digits stand-in has {len(digits)} images "
                         f"(got {num_images} sets)")
    images = np.repeat(digits[:num_images, ..., None], 3, axis=-1)  # [N, 8, 8, 3]
    with torch.random.fork_rng():
        torch.manual_seed(SPLIT_SEED)
        model = getattr(torchvision.models, BACKBONES[backbone][0])(weights=None).eval()
    clouds = layer3_point_clouds(model, preprocess(images, STAND_IN_IMAGE_SIZE))  # [N, 16, C]
    return clouds, torch.cat([geometric_targets(x, targets) for x in clouds])


def _stand_in_clouds(backbone: str, num_images: int, train: bool,
                     targets: tuple[str, ...]) -> list[Data]:
    clouds, y = _stand_in_features(backbone, num_images, train, targets)
    return [Data(x=x, y=target.view(1, -1)) for x, target in zip(clouds, y, strict=True)]


def resnet_features(*, seed: int, root: str | None, normalize: bool,
                    backbone: str = "resnet18", targets: str | Sequence[str] = "furthest",
                    image_size: int = 224, num_train: int | None = None,
                    num_val: int | None = None, num_test: int | None = None,
                    stand_in: bool = False) -> tuple[SetSplit, SetSplit, SetSplit]:
    r"""ResNet layer-3 point clouds of CIFAR-100 (Tables 26, 31-33) of
    :class:`mzattn.datasets.ResNetFeatureClouds` (needs CIFAR-100 and the
    ImageNet weights); :obj:`stand_in` uses scikit-learn's digits through a
    random-weight ResNet of the same width instead (offline, seconds)."""
    from mzattn.datasets import ResNetFeatureClouds

    targets = (targets,) if isinstance(targets, str) else tuple(targets)
    if stand_in:
        _check_sizes(num_train, num_val, num_test)
        if num_train is None:
            raise ValueError("the ResNet stand-in needs 'num_train', 'num_val' and 'num_test'")
        train = _stand_in_clouds(backbone, num_train + num_val, True, targets)
        sets = train[:num_train], train[num_train:], _stand_in_clouds(backbone, num_test,
                                                                      False, targets)
        return regression_splits(*sets, normalize)

    def build(train: bool):
        sizes = (num_train, num_val) if train else (num_test,)
        num_images = None if num_train is None else sum(sizes)
        return ResNetFeatureClouds(dataset_root("images", root), backbone=backbone,
                                   train=train, targets=targets, num_images=num_images,
                                   image_size=image_size)

    return regression_splits(*_train_test_files(build, num_train, num_val, num_test),
                             normalize)


def _fixed_scale_splits(task: str, normalize: bool, *splits: Sequence[Data]
                        ) -> tuple[SetSplit, SetSplit, SetSplit]:
    # Episode targets come on their own scale (pixel intensities, targets
    # standardised per table): the splits carry the identity statistics.
    if normalize:
        raise ValueError(f"'normalize' must be False for {task}: its targets are already on "
                         f"a fixed scale")
    zero, one = torch.zeros(1), torch.ones(1)
    return tuple(SetSplit(split, zero, one) for split in splits)


def _episodes(num_sets: int | None, per_episode: int) -> int | None:
    # Episodes holding num_sets sets of per_episode sets each.
    return None if num_sets is None else -(-num_sets // per_episode)


def _first_sets(dataset, num_sets: int | None):
    return dataset if num_sets is None else dataset[:num_sets]


def image_completion(*, seed: int, root: str | None, normalize: bool, source: str = "mnist",
                     num_context: int | None = None, num_targets: int | None = None,
                     num_train: int | None = None, num_val: int | None = None,
                     num_test: int | None = None, stand_in: bool = False
                     ) -> tuple[SetSplit, SetSplit, SetSplit]:
    r"""Neural-Process image completion (App. D.5.6) of
    :class:`mzattn.datasets.ImageCompletion`: one set per target pixel.
    Validation images are held out of the training file (:func:`hold_out`
    over images); a split of :math:`n` sets is the first :math:`n` sets of
    :math:`\lceil n / T \rceil` images (every image when no sizes are
    given). Targets are intensities in :math:`[0, 1]`, never normalised.
    :obj:`stand_in` swaps the source for scikit-learn's digits (offline,
    with the digits' :math:`K, T` unless given)."""
    from mzattn.datasets import ImageCompletion
    from mzattn.datasets.image_completion import EPISODE_SIZES, source_images

    _check_sizes(num_train, num_val, num_test)
    source = "digits" if stand_in else source
    if source not in EPISODE_SIZES:
        raise ValueError(f"'source' must be one of {sorted(EPISODE_SIZES)} (got {source!r})")
    per_image = EPISODE_SIZES[source][1] if num_targets is None else num_targets
    folder = dataset_root("images", root)
    count = len(source_images(source, osp.join(folder, "raw"), True))
    train, val = hold_out(count, _episodes(num_val, per_image), _episodes(num_train, per_image))
    num_test_images = _episodes(num_test, per_image)
    test = None if num_test_images is None else range(num_test_images)

    def build(train_file: bool, images, num_sets: int | None):
        return _first_sets(ImageCompletion(folder, source, train=train_file,
                                           num_context=num_context, num_targets=num_targets,
                                           images=images, seed=SPLIT_SEED), num_sets)

    return _fixed_scale_splits("image_completion", normalize, build(True, train, num_train),
                               build(True, val, num_val), build(False, test, num_test))


TABULAR_SPLITS = ("same-distribution", "held-out-dataset")
r"""The two splits of the tabular meta-regression (App. D.5.6): test
episodes from the test rows of the training tables, or from other tables."""

TABULAR_EPISODES = (2000, 200, 400)
r"""Train/val/test episodes of the tabular meta-regression when no sizes are
given (the paper does not say)."""

TABULAR_EPISODE = (50, 50)
r"""Context and query rows :math:`(K, T)` of a tabular episode (App. D.5.6)."""

STAND_IN_TABULAR_EPISODE = (16, 4)
r""":math:`(K, T)` of the diabetes-only stand-in: a quarter of its 442 rows
holds little more than the paper's 100 rows of an episode."""


def tabular_meta_regression(*, seed: int, root: str | None, normalize: bool,
                            split: str = "same-distribution", num_context: int | None = None,
                            num_targets: int | None = None, num_train: int | None = None,
                            num_val: int | None = None, num_test: int | None = None,
                            stand_in: bool = False) -> tuple[SetSplit, SetSplit, SetSplit]:
    r"""Few-shot tabular meta-regression (App. D.5.6) of
    :class:`mzattn.datasets.TabularMetaRegression`, one set per query row:
    train and val episodes from the train/val rows of the training tables
    (:obj:`TRAIN_TABLES`), test episodes from their test rows
    (:obj:`"same-distribution"`) or from the test rows of the held-out
    tables (:obj:`"held-out-dataset"`, :obj:`TEST_TABLES`). A split of
    :math:`n` sets is the first :math:`n` sets of :math:`\lceil n / T
    \rceil` episodes (:obj:`TABULAR_EPISODES` when no sizes are given).
    Targets are standardised per table by the dataset, never here.
    :obj:`num_context` and :obj:`num_targets` default to
    :obj:`TABULAR_EPISODE`. :obj:`stand_in` restricts the tables to
    scikit-learn's diabetes (offline; the same-distribution split only;
    :obj:`STAND_IN_TABULAR_EPISODE` by default)."""
    from mzattn.datasets import TabularMetaRegression
    from mzattn.datasets.tabular_meta_regression import TEST_TABLES, TRAIN_TABLES

    _check_sizes(num_train, num_val, num_test)
    if split not in TABULAR_SPLITS:
        raise ValueError(f"'split' must be one of {TABULAR_SPLITS} (got {split!r})")
    if stand_in and split != "same-distribution":
        raise ValueError("'split' must be 'same-distribution' with 'stand_in': the held-out "
                         "tables are OpenML CSVs the user downloads")
    train_tables = ("diabetes",) if stand_in else TRAIN_TABLES
    test_tables = train_tables if split == "same-distribution" else TEST_TABLES
    default = STAND_IN_TABULAR_EPISODE if stand_in else TABULAR_EPISODE
    num_context = default[0] if num_context is None else num_context
    num_targets = default[1] if num_targets is None else num_targets
    folder = dataset_root("openml", root)

    def build(tables: tuple[str, ...], part: str, num_sets: int | None, default: int):
        episodes = _episodes(num_sets, num_targets) or default
        return _first_sets(TabularMetaRegression(
            folder, tables, part, episodes, num_context, num_targets, seed=SPLIT_SEED), num_sets)

    return _fixed_scale_splits("tabular_meta_regression", normalize,
                               build(train_tables, "train", num_train, TABULAR_EPISODES[0]),
                               build(train_tables, "val", num_val, TABULAR_EPISODES[1]),
                               build(test_tables, "test", num_test, TABULAR_EPISODES[2]))


REAL_DATASETS: dict[str, Callable[..., tuple[SetSplit, SetSplit, SetSplit]]] = {
    "qm9": qm9,
    "modelnet40": modelnet40,
    "scanobjectnn": scanobjectnn,
    "pixel_clouds": pixel_clouds,
    "resnet_features": resnet_features,
    "image_completion": image_completion,
    "tabular_meta_regression": tabular_meta_regression,
}
r"""Real-data providers by the task name a :class:`~mzattn.repro.core.spec.Column`
uses."""


def is_real(task: str) -> bool:
    r"""Whether :obj:`task` names a provider of :obj:`REAL_DATASETS`."""
    return task in REAL_DATASETS


def load_real_splits(task: str, *, seed: int = 0, root: str | None = None,
                     normalize: bool = False, **options: Any
                     ) -> tuple[SetSplit, SetSplit, SetSplit]:
    r"""The :obj:`(train, val, test)` splits of the real dataset :obj:`task`.

    Args:
        task (str): A key of :obj:`REAL_DATASETS`.
        seed (int, optional): The cell's seed. (default: :obj:`0`)
        root (str, optional): Cache root (see :func:`dataset_root`).
            (default: :obj:`None`)
        normalize (bool, optional): Normalise regression targets with the
            training statistics. (default: :obj:`False`)
        **options: The provider's keyword arguments.
    """
    if task not in REAL_DATASETS:
        raise ValueError(f"'task' must be one of {sorted(REAL_DATASETS)} (got {task!r})")
    return REAL_DATASETS[task](seed=seed, root=root, normalize=normalize, **options)
