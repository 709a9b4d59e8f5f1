r"""Pixel point clouds of the systematic transfer study (paper App. D.5.6,
Table 31, tiers 1 and 2)."""
import time
from collections.abc import Callable, Sequence

import numpy as np
import torch
from torch_geometric.data import Data

from ._io import IMAGE_SOURCES, SummarizedDataset, load_images
from .geometric_targets import check_geometric_targets, geometric_targets, targets_tag

SOURCES: tuple[str, ...] = ("digits", *IMAGE_SOURCES)
CONSTRUCTIONS: tuple[str, ...] = ("pixels", "lift", "patches")
#: Point dimension of each construction.
CONSTRUCTION_DIMS = {"pixels": 2, "lift": 8, "patches": 8}
#: The geometric targets of Table 31 in its column order.
TABLE31_TARGETS: tuple[str, ...] = ("meb", "hull", "mst", "furthest")
#: ITU-R BT.601 luma weights (RGB -> intensity).
LUMA = (0.299, 0.587, 0.114)
PATCH_SIZE = 4
#: Images of a k-image mixture are shifted by offsets uniform in this square
#: (in image widths), so each image forms its own cluster.
MIXTURE_SPREAD = 2.0


# ------------------------------------------------------------ constructions


def to_gray(images: np.ndarray) -> np.ndarray:
    r"""``uint8`` images :math:`(N, H, W)` or :math:`(N, H, W, 3)` ->
    intensities in :math:`[0, 1]`, :math:`(N, H, W)` (luma for colour)."""
    gray = images.astype(np.float64) / 255.0
    return gray @ np.asarray(LUMA) if gray.ndim == 4 else gray


def _grid(shape: tuple[int, int]) -> tuple[np.ndarray, np.ndarray]:
    # Pixel centres in [0, 1]^2, x to the right and y up.
    h, w = shape
    rows, cols = np.meshgrid(np.arange(h), np.arange(w), indexing="ij")
    return cols / (w - 1), 1.0 - rows / (h - 1)


def pixel_points(gray: np.ndarray, threshold: float) -> np.ndarray:
    r"""Coordinates :math:`(n, 2)` in :math:`[0, 1]^2` of the on-pixels
    (intensity :math:`\geq` :obj:`threshold`) of one image :math:`(H, W)`,
    in row-major order."""
    x, y = _grid(gray.shape)
    on = gray >= threshold
    return np.stack([x[on], y[on]], axis=-1)


def lifted_points(gray: np.ndarray, threshold: float) -> np.ndarray:
    r"""8-d lift of the on-pixels of one image :math:`(H, W)`:
    :math:`(x, y, I, \partial_x I, \partial_y I, x^2, y^2, xy)` — position,
    intensity, central-difference gradient (per pixel) and degree-2
    monomials of the position. Shape :math:`(n, 8)`."""
    x, y = _grid(gray.shape)
    d_row, d_col = np.gradient(gray)
    on = gray >= threshold
    x, y = x[on], y[on]
    return np.stack([x, y, gray[on], d_col[on], -d_row[on], x * x, y * y, x * y], axis=-1)


def patch_points(image: np.ndarray, size: int = PATCH_SIZE) -> np.ndarray:
    r"""8-d features of the non-overlapping :obj:`size` x :obj:`size` patches
    of one image (``uint8`` :math:`(H, W, 3)`, or :math:`(H, W)` treated as
    grey RGB): mean R, G, B; std R, G, B; mean intensity (luma);
    colourfulness (Hasler and Süsstrunk, 2003). Shape
    :math:`(HW / \text{size}^2, 8)`, patches in row-major order."""
    rgb = image.astype(np.float64) / 255.0
    if rgb.ndim == 2:
        rgb = np.repeat(rgb[..., None], 3, axis=-1)
    h, w = rgb.shape[0] // size, rgb.shape[1] // size
    patches = rgb[: h * size, : w * size].reshape(h, size, w, size, 3)
    patches = patches.transpose(0, 2, 1, 3, 4).reshape(h * w, size * size, 3)  # [P, s*s, 3]
    r, g, b = patches[..., 0], patches[..., 1], patches[..., 2]
    rg, yb = r - g, 0.5 * (r + g) - b
    colourfulness = np.hypot(rg.std(1), yb.std(1)) + 0.3 * np.hypot(rg.mean(1), yb.mean(1))
    return np.concatenate([patches.mean(1), patches.std(1), (patches @ np.asarray(LUMA))
                           .mean(1, keepdims=True), colourfulness[:, None]], axis=-1)


def random_affine(points: np.ndarray, scale: float, rng: np.random.Generator) -> np.ndarray:
    r"""A per-set affine perturbation with 4 degrees of freedom (TDOF-4):
    :math:`p \mapsto c + A (p - c)` with :math:`A = I + U(-s, s)^{2 \times 2}`
    about the image centre :math:`c = (0.5, 0.5)`."""
    A = np.eye(2) + rng.uniform(-scale, scale, size=(2, 2))
    return 0.5 + (points - 0.5) @ A.T


# ------------------------------------------------------------------ dataset


class PixelClouds(SummarizedDataset):
    r"""Point clouds made of image pixels, tiers 1 and 2 of the systematic
    transfer study (App. D.5.6, Table 31), with exact geometric targets.

    Constructions (:obj:`construction`), per image:

    - ``"pixels"`` (tier 1, :math:`d = 2`): coordinates in :math:`[0, 1]^2`
      of the on-pixels (grey intensity :math:`\geq` :obj:`threshold`);
      optionally a per-set affine perturbation (:obj:`affine_scale`, TDOF-4).
    - ``"lift"`` (tier 2, :math:`d = 8`): the on-pixels lifted to position,
      intensity, gradient and degree-2 position monomials.
    - ``"patches"`` (tier 2, :math:`d = 8`): the 4x4 patches of the image as
      mean/std RGB, intensity and colourfulness.

    :obj:`mixture` :math:`= k > 1` builds each set from :math:`k` images of
    distinct classes (the 3-digit mixtures and class-mixture patches); their
    pixel coordinates are shifted by random offsets in
    :math:`[0, 2)^2` so that each image is a cluster. :obj:`num_points`
    :math:`= (a, b)` subsamples each set to :math:`n \sim U\{a..b\}` points
    (variable-size sets). Sets whose targets are undefined (too few points,
    e.g. a hull needs :math:`n > d`) are listed in :meth:`summary`, never
    dropped silently.

    Sources: ``"digits"`` (scikit-learn's bundled 8x8 digits; works offline,
    first 1,437 images = train), and, read with torchvision from
    ``root/raw`` without downloading, ``"mnist"``, ``"fashion_mnist"`` and
    ``"cifar100"`` (URLs in :obj:`~mzattn.datasets._io.IMAGE_SOURCES` and in
    the error raised when files are missing).

    Args:
        root (str): Root folder with ``raw/`` and ``processed/``.
        source (str, optional): Image source. (default: :obj:`"digits"`)
        construction (str, optional): ``"pixels"``, ``"lift"`` or
            ``"patches"``. (default: :obj:`"pixels"`)
        train (bool, optional): Training or test images. (default: :obj:`True`)
        targets (Sequence[str], optional): Geometric target names, the
            columns of ``data.y``. (default: :obj:`TABLE31_TARGETS`)
        affine_scale (float, optional): Scale :math:`s` of the per-set affine
            perturbation; :obj:`0` disables it. Only for ``"pixels"``.
            (default: :obj:`0.0`)
        mixture (int, optional): Images per set. (default: :obj:`1`)
        num_points (tuple[int, int], optional): Subsample each set to a
            uniform size in this range; keep all points if :obj:`None`.
            (default: :obj:`None`)
        num_sets (int, optional): Number of sets; every image once (in order)
            if :obj:`None` and :obj:`mixture` is 1, else images // mixture.
            (default: :obj:`None`)
        threshold (float, optional): On-pixel intensity threshold.
            (default: :obj:`0.5`)
        seed (int, optional): Seed of mixtures, perturbations and
            subsampling. (default: :obj:`0`)
        transform, pre_transform, pre_filter (callable, optional): As in
            :class:`~torch_geometric.data.InMemoryDataset`.
        force_reload (bool, optional): Reprocess even if cached.
            (default: :obj:`False`)

    Shapes:
        - **x** :math:`(n, d)` with :math:`d` = 2 or 8, **y** :math:`(1, T)`,
          **label** :math:`(1, k)` (class of each image in the set)

    **STATS:**

    .. list-table::
        :widths: 20 10 10 10
        :header-rows: 1

        * - Source
          - #images (train / test)
          - image
          - #points (pixels, threshold 0.5)
        * - digits
          - 1,437 / 360
          - 8x8
          - ~20
        * - MNIST, Fashion-MNIST
          - 60,000 / 10,000
          - 28x28
          - ~100-400
        * - CIFAR-100
          - 50,000 / 10,000
          - 32x32x3
          - varies; 64 patches
    """

    VERSION = 1

    def __init__(
        self,
        root: str,
        source: str = "digits",
        construction: str = "pixels",
        train: bool = True,
        targets: Sequence[str] = TABLE31_TARGETS,
        affine_scale: float = 0.0,
        mixture: int = 1,
        num_points: tuple[int, int] | None = None,
        num_sets: int | None = None,
        threshold: float = 0.5,
        seed: int = 0,
        transform: Callable | None = None,
        pre_transform: Callable | None = None,
        pre_filter: Callable | None = None,
        force_reload: bool = False,
    ) -> None:
        if source not in SOURCES:
            raise ValueError(f"source must be one of {SOURCES}, got {source!r}")
        if construction not in CONSTRUCTIONS:
            raise ValueError(f"construction must be one of {CONSTRUCTIONS}, got {construction!r}")
        if affine_scale < 0 or (affine_scale > 0 and construction != "pixels"):
            raise ValueError(f"affine_scale must be >= 0 and applies to construction='pixels' "
                             f"only, got {affine_scale} with {construction!r}")
        if mixture < 1:
            raise ValueError(f"mixture must be >= 1, got {mixture}")
        if num_points is not None and not 1 <= num_points[0] <= num_points[1]:
            raise ValueError(f"num_points must be a range (a, b) with 1 <= a <= b, "
                             f"got {num_points}")
        if num_sets is not None and num_sets < 1:
            raise ValueError(f"num_sets must be positive, got {num_sets}")
        self.targets = check_geometric_targets(targets)
        self.source, self.construction = source, construction
        self.split = "train" if train else "test"
        self.affine_scale, self.mixture, self.num_points = affine_scale, mixture, num_points
        self.num_sets, self.threshold, self.seed = num_sets, threshold, seed
        super().__init__(root, transform, pre_transform, pre_filter, force_reload=force_reload)
        self.load(self.processed_paths[0])

    @property
    def raw_file_names(self) -> list[str]:
        if self.source == "digits":
            return []  # bundled with scikit-learn
        folder = IMAGE_SOURCES[self.source][1]
        if self.source == "cifar100":
            return [f"{folder}/{name}" for name in ("meta", "test", "train")]
        return sorted(f"{folder}/{prefix}-{kind}-idx{dim}-ubyte"
                      for prefix in ("train", "t10k")
                      for kind, dim in (("images", 3), ("labels", 1)))

    @property
    def processed_file_names(self) -> list[str]:
        size = "all" if self.num_points is None else f"{self.num_points[0]}-{self.num_points[1]}"
        sets = "all" if self.num_sets is None else self.num_sets
        stem = (f"pixelclouds_{self.source}_{self.construction}_{self.split}"
                f"_affine{self.affine_scale}_mix{self.mixture}_n{size}_sets{sets}"
                f"_thr{self.threshold}_s{self.seed}_{targets_tag(self.targets)}_v{self.VERSION}")
        return [f"{stem}.pt", f"{stem}_summary.json"]

    def download(self) -> None:
        if self.source != "digits":  # raises, naming the folder and the URL
            load_images(self.source, self.raw_dir, self.split == "train")

    def _groups(self, labels: np.ndarray, rng: np.random.Generator) -> list[np.ndarray]:
        # Image indices of every set: each image in order, or k images of
        # distinct classes drawn at random.
        if self.mixture == 1 and self.num_sets is None:
            return [np.array([i]) for i in range(len(labels))]
        num_sets = self.num_sets or len(labels) // self.mixture
        classes = np.unique(labels)
        if len(classes) < self.mixture:
            raise ValueError(f"mixture={self.mixture} needs as many classes, "
                             f"the images have {len(classes)}")
        by_class = {c: np.flatnonzero(labels == c) for c in classes}
        return [np.array([rng.choice(by_class[c])
                          for c in rng.choice(classes, self.mixture, replace=False)])
                for _ in range(num_sets)]

    def _points(self, image: np.ndarray, offset: np.ndarray) -> np.ndarray:
        if self.construction == "patches":
            return patch_points(image)
        gray = to_gray(image[None])[0]
        if self.construction == "pixels":
            return pixel_points(gray, self.threshold) + offset
        lifted = lifted_points(gray, self.threshold)
        x, y = lifted[:, 0] + offset[0], lifted[:, 1] + offset[1]
        lifted[:, [0, 1, 5, 6, 7]] = np.stack([x, y, x * x, y * y, x * y], axis=-1)
        return lifted

    def process(self) -> None:
        start = time.perf_counter()
        images, labels = load_images(self.source, self.raw_dir, self.split == "train")
        rng = np.random.default_rng(self.seed)
        data_list, failures = [], []
        for index, group in enumerate(self._groups(labels, rng)):
            offsets = (np.zeros((1, 2)) if len(group) == 1 else
                       rng.uniform(0.0, MIXTURE_SPREAD, size=(len(group), 2)))
            points = np.concatenate([self._points(images[i], o)
                                     for i, o in zip(group, offsets, strict=True)])
            if self.affine_scale > 0:
                points = random_affine(points, self.affine_scale, rng)
            if self.num_points is not None:
                n = int(rng.integers(self.num_points[0], self.num_points[1] + 1))
                points = points[np.sort(rng.permutation(len(points))[:n])]
            x = torch.from_numpy(points).float()
            try:
                y = geometric_targets(x, self.targets)
            except ValueError as e:
                failures.append({"set": index, "images": group.tolist(),
                                 "num_points": len(points), "reason": str(e)})
                continue
            data_list.append(Data(x=x, y=y, label=torch.from_numpy(labels[group])[None]))
        sizes = [d.x.size(0) for d in data_list]
        info = {
            "source": self.source,
            "construction": self.construction,
            "split": self.split,
            "dim": CONSTRUCTION_DIMS[self.construction],
            "targets": list(self.targets),
            "num_failures": len(failures),
            "failures": failures,
            "set_size": {"min": min(sizes, default=0), "max": max(sizes, default=0),
                         "mean": round(float(np.mean(sizes)), 2) if sizes else 0.0},
            "source_files": sorted(self.raw_paths) or ["sklearn.datasets.load_digits"],
        }
        self.save_processed(data_list, info, start)

    def __repr__(self) -> str:
        return (f"{type(self).__name__}({len(self)}, source={self.source!r}, "
                f"construction={self.construction!r}, targets={list(self.targets)})")
