r"""Deep-feature point clouds: ImageNet ResNet layer-3 features of CIFAR-100
(paper App. D.5.6, Tables 31-33 and 26)."""
import os
import time
from collections.abc import Callable, Sequence

import numpy as np
import torch
import torch.nn.functional as F
from torch import Tensor, nn
from torch_geometric.data import Data

from mzattn.extras import require

from ._io import (
    IMAGE_SOURCES,
    SummarizedDataset,
    atomic_torch_save,
    load_images,
    load_or_set_aside,
)
from .geometric_targets import check_geometric_targets, geometric_targets, targets_tag

#: ImageNet weights per backbone: torchvision builder, weights enum member,
#: channels of layer 3 (the point dimension d).
BACKBONES: dict[str, tuple[str, str, int]] = {
    "resnet18": ("resnet18", "ResNet18_Weights.IMAGENET1K_V1", 256),
    "resnet50": ("resnet50", "ResNet50_Weights.IMAGENET1K_V1", 1024),
}
#: ImageNet normalisation of the torchvision ResNets.
IMAGENET_MEAN = (0.485, 0.456, 0.406)
IMAGENET_STD = (0.229, 0.224, 0.225)
#: Spatial grid of the pooled layer-3 map: 4 x 4 = 16 points per image.
GRID = 4
#: The SGSP targets of Table 32 in its row order.
TABLE32_TARGETS: tuple[str, ...] = ("furthest", "diameter", "knn_radius", "mst", "meb")


def weights_path(backbone: str) -> tuple[str, str]:
    r"""The expected path of the ImageNet checkpoint of :obj:`backbone` in the
    local torch hub cache (``torch.hub.get_dir()/checkpoints``) and its
    download URL."""
    torchvision = require('torchvision', 'data')

    if backbone not in BACKBONES:
        raise ValueError(f"backbone must be one of {sorted(BACKBONES)}, got {backbone!r}")
    enum_name, member = BACKBONES[backbone][1].split(".")
    url = getattr(getattr(torchvision.models, enum_name), member).url
    return os.path.join(torch.hub.get_dir(), "checkpoints", os.path.basename(url)), url


def load_backbone(backbone: str) -> nn.Module:
    r"""The ImageNet-pretrained torchvision :obj:`backbone` in eval mode, read
    from the local torch hub cache only (never downloaded)."""
    torchvision = require('torchvision', 'data')

    path, url = weights_path(backbone)
    if not os.path.exists(path):
        raise FileNotFoundError(
            f"ImageNet weights of {backbone} not found at {path}. Download {url} to that "
            f"path (e.g. `curl -L -o {path} {url}`) or set TORCH_HOME."
        )
    model = getattr(torchvision.models, BACKBONES[backbone][0])(weights=None)
    model.load_state_dict(torch.load(path, map_location="cpu", weights_only=True))
    return model.eval()


@torch.no_grad()
def layer3_point_clouds(model: nn.Module, images: Tensor, grid: int = GRID) -> Tensor:
    r"""Layer-3 feature maps of a torchvision ResNet, adaptively average-pooled
    to a :obj:`grid` x :obj:`grid` map whose cells become the points of a set.

    Args:
        model (torch.nn.Module): A torchvision ResNet (any depth).
        images (torch.Tensor): Normalised images :math:`(B, 3, H, W)`.
        grid (int, optional): Side of the pooled map. (default: :obj:`4`)

    Shapes:
        - **images** :math:`(B, 3, H, W)` -> :math:`(B, \text{grid}^2, C_3)`
          with :math:`C_3` = 256 (ResNet-18) or 1024 (ResNet-50); points in
          row-major grid order.
    """
    h = model.maxpool(model.relu(model.bn1(model.conv1(images))))
    h = model.layer3(model.layer2(model.layer1(h)))  # [B, C3, H/16, W/16]
    if min(h.shape[-2:]) < grid:
        raise ValueError(f"layer-3 map {tuple(h.shape[-2:])} is smaller than the {grid}x{grid} "
                         f"grid: use images of at least {16 * grid} pixels")
    return F.adaptive_avg_pool2d(h, grid).flatten(2).transpose(1, 2)  # [B, grid^2, C3]


def preprocess(images: np.ndarray, image_size: int) -> Tensor:
    r"""``uint8`` RGB images :math:`(B, H, W, 3)` -> ImageNet-normalised
    float images :math:`(B, 3, \text{image\_size}, \text{image\_size})`
    (bilinear resize with antialiasing)."""
    x = torch.from_numpy(images).permute(0, 3, 1, 2).float() / 255.0
    x = F.interpolate(x, size=(image_size, image_size), mode="bilinear", antialias=True,
                      align_corners=False)
    mean, std = torch.tensor(IMAGENET_MEAN), torch.tensor(IMAGENET_STD)
    return (x - mean[:, None, None]) / std[:, None, None]


class ResNetFeatureClouds(SummarizedDataset):
    r"""Deep-feature point clouds of App. D.5.6 (Tables 31-33, Table 26):
    every CIFAR-100 image becomes a set of :math:`n = 16` points in
    :math:`\mathbb{R}^{d}` — the layer-3 feature map of an ImageNet-pretrained
    ResNet, adaptively average-pooled to :math:`4 \times 4` — with the exact
    sparse-geometric (SGSP) targets of Table 32 computed on the points.

    ========  ====  ==========================================================
    backbone  d     checkpoint (torchvision ``IMAGENET1K_V1``)
    ========  ====  ==========================================================
    resnet18  256   ``<torch hub>/checkpoints/resnet18-f37072fd.pth``
    resnet50  1024  ``<torch hub>/checkpoints/resnet50-0676ba61.pth``
    ========  ====  ==========================================================

    Nothing is downloaded: CIFAR-100 is read by torchvision from
    ``root/raw/cifar-100-python/`` and the weights from the local torch hub
    cache (:func:`weights_path`); missing files raise a
    :class:`FileNotFoundError` with the path and URL. Images are resized to
    :obj:`image_size` (so that layer 3 has at least a 4x4 map; 32-pixel
    inputs give only 2x2) and ImageNet-normalised. Features are cached per
    (backbone, split, :obj:`num_images`, :obj:`image_size`) and shared by
    every target selection.

    Targets (names of :obj:`~mzattn.datasets.geometric_targets.GEOMETRIC_TARGETS`):
    ``furthest`` (k=5 furthest-first k-center cost), ``diameter``,
    ``knn_radius`` (k=5), ``mst`` (MST weight), ``meb`` (minimum enclosing
    ball radius; degenerate for :math:`n \le d + 1`, as the paper notes).
    ``hull`` is undefined here (:math:`n = 16 \le d`).

    Args:
        root (str): Root folder with ``raw/cifar-100-python`` and
            ``processed/``.
        backbone (str, optional): ``"resnet18"`` or ``"resnet50"``.
            (default: :obj:`"resnet18"`)
        train (bool, optional): CIFAR-100 training or test images.
            (default: :obj:`True`)
        targets (Sequence[str], optional): Target names, the columns of
            ``data.y``. (default: :obj:`TABLE32_TARGETS`)
        num_images (int, optional): Use the first :obj:`num_images` images of
            the split (all if :obj:`None`). (default: :obj:`None`)
        image_size (int, optional): Side of the resized input images.
            (default: :obj:`224`)
        batch_size (int, optional): Images per forward pass. (default: :obj:`256`)
        device (str, optional): Device of the feature extraction; CUDA when
            available if :obj:`None`. (default: :obj:`None`)
        transform, pre_transform, pre_filter (callable, optional): As in
            :class:`~torch_geometric.data.InMemoryDataset`.
        force_reload (bool, optional): Reprocess even if cached.
            (default: :obj:`False`)

    Shapes:
        - **x** :math:`(16, d)`, **y** :math:`(1, T)`, **label** :math:`(1)`
          (CIFAR-100 fine label)

    **STATS:**

    .. list-table::
        :widths: 20 10 10 10 10
        :header-rows: 1

        * - Backbone
          - #sets (train / test)
          - #points
          - d
          - #targets
        * - ResNet-18
          - 50,000 / 10,000
          - 16
          - 256
          - 5
        * - ResNet-50
          - 50,000 / 10,000
          - 16
          - 1,024
          - 5
    """

    VERSION = 1

    def __init__(
        self,
        root: str,
        backbone: str = "resnet18",
        train: bool = True,
        targets: Sequence[str] = TABLE32_TARGETS,
        num_images: int | None = None,
        image_size: int = 224,
        batch_size: int = 256,
        device: str | None = None,
        transform: Callable | None = None,
        pre_transform: Callable | None = None,
        pre_filter: Callable | None = None,
        force_reload: bool = False,
    ) -> None:
        if backbone not in BACKBONES:
            raise ValueError(f"backbone must be one of {sorted(BACKBONES)}, got {backbone!r}")
        self.targets = check_geometric_targets(targets)
        if "hull" in self.targets:
            raise ValueError("the 'hull' target needs n > d points; ResNet clouds have "
                             "n = 16 points in d >= 256 dimensions")
        if num_images is not None and num_images < 1:
            raise ValueError(f"num_images must be positive, got {num_images}")
        if image_size < 16 * GRID:
            raise ValueError(f"image_size must be >= {16 * GRID} for a {GRID}x{GRID} layer-3 "
                             f"map, got {image_size}")
        self.backbone, self.split = backbone, "train" if train else "test"
        self.num_images, self.image_size, self.batch_size = num_images, image_size, batch_size
        self.device = device or ("cuda" if torch.cuda.is_available() else "cpu")
        super().__init__(root, transform, pre_transform, pre_filter, force_reload=force_reload)
        self.load(self.processed_paths[0])

    @property
    def raw_file_names(self) -> list[str]:
        folder = IMAGE_SOURCES["cifar100"][1]
        return [f"{folder}/{name}" for name in ("meta", "test", "train")]

    @property
    def _features_path(self) -> str:
        n = "all" if self.num_images is None else self.num_images
        name = f"features_{self.backbone}_{self.split}_{n}_px{self.image_size}_v{self.VERSION}.pt"
        return os.path.join(self.processed_dir, name)

    @property
    def processed_file_names(self) -> list[str]:
        stem = os.path.basename(self._features_path)[len("features_"):-len(".pt")]
        stem = f"clouds_{stem}_{targets_tag(self.targets)}"
        return [f"{stem}.pt", f"{stem}_summary.json"]

    def download(self) -> None:
        # torchvision's own check gives the error naming the folder and URL.
        load_images("cifar100", self.raw_dir, self.split == "train")

    def extract_features(self) -> tuple[Tensor, Tensor]:
        r"""Layer-3 point clouds :math:`(N, 16, d)` and fine labels
        :math:`(N)` of the selected images (cached in ``processed/``; a
        cache that does not load is set aside and computed again)."""
        if os.path.exists(self._features_path) and not self.force_reload:
            cached = load_or_set_aside(self._features_path)
            if cached is not None:
                return cached
        model = load_backbone(self.backbone).to(self.device)
        images, labels = load_images("cifar100", self.raw_dir, self.split == "train")
        images, labels = images[: self.num_images], labels[: self.num_images]
        clouds = torch.cat([
            layer3_point_clouds(model, preprocess(images[i : i + self.batch_size],
                                                  self.image_size).to(self.device)).cpu()
            for i in range(0, len(images), self.batch_size)
        ])
        out = (clouds, torch.from_numpy(labels))
        atomic_torch_save(out, self._features_path)
        return out

    def process(self) -> None:
        start = time.perf_counter()
        clouds, labels = self.extract_features()
        feature_seconds = time.perf_counter() - start
        data_list = [
            Data(x=x, y=geometric_targets(x, self.targets), label=label.view(1))
            for x, label in zip(clouds, labels, strict=True)
        ]
        info = {
            "backbone": self.backbone,
            "weights": weights_path(self.backbone)[0],
            "split": self.split,
            "image_size": self.image_size,
            "num_points": clouds.size(1),
            "dim": clouds.size(2),
            "targets": list(self.targets),
            "feature_seconds": round(feature_seconds, 2),
            "source_files": sorted(self.raw_paths),
        }
        self.save_processed(data_list, info, start)

    def __repr__(self) -> str:
        return (f"{type(self).__name__}({len(self)}, backbone={self.backbone!r}, "
                f"split={self.split!r}, targets={list(self.targets)})")
