r"""Helpers shared by the real-data loaders: atomic writes, processed-file
bookkeeping, point sampling, normalisation and augmentation."""
import contextlib
import hashlib
import json
import logging
import math
import os
import re
import tempfile
import time
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import torch
from torch import Tensor
from torch_geometric.data import Data, InMemoryDataset
from torch_geometric.transforms import BaseTransform

from mzattn.extras import require

log = logging.getLogger(__name__)

# ---------------------------------------------------------------- file writes


def atomic_write(path: str, write: Callable[[Any], None], mode: str) -> None:
    r"""Calls :obj:`write(file)` on a temporary file opened with :obj:`mode`
    in the folder of :obj:`path`, then moves it onto :obj:`path` with
    :func:`os.replace`: readers and the next run never see a partial file.
    On any error (a full disk, a signal) the temporary file is removed."""
    folder = os.path.dirname(os.path.abspath(path))
    os.makedirs(folder, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=folder, prefix=".tmp-", suffix=os.path.basename(path))
    try:
        with os.fdopen(fd, mode) as f:
            write(f)
            f.flush()
            os.fsync(f.fileno())
        os.chmod(tmp, 0o666 & ~_umask())  # mkstemp creates 0600; caches are meant to be shared
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


def _umask() -> int:
    # The process's umask (reading it means setting it): 022 gives the usual 0644 files, the
    # Docker image's 002 group-writable ones (mzattn.repro.docker.container).
    mask = os.umask(0)
    os.umask(mask)
    return mask


def set_aside(path: str, reason: str) -> str:
    r"""Renames :obj:`path` to :obj:`{path}.{reason}-{UTC time}` in the same
    folder (kept for inspection, out of every file listing that reads the
    original name) and returns the new path."""
    stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
    aside = f"{path}.{reason}-{stamp}"
    os.replace(path, aside)
    return aside


def atomic_torch_save(obj: Any, path: str) -> None:
    r"""Saves :obj:`obj` with :func:`torch.save` to a temporary file in the
    same folder, then moves it onto :obj:`path` with :func:`os.replace`, so a
    killed run never leaves a truncated file behind."""
    atomic_write(path, lambda f: torch.save(obj, f), "wb")


def atomic_write_json(obj: Any, path: str) -> None:
    r"""Writes :obj:`obj` as indented JSON to :obj:`path` atomically."""
    atomic_write(path, lambda f: json.dump(obj, f, indent=2, sort_keys=True), "w")


def index_hash(*indices: Tensor | np.ndarray) -> str:
    r"""A short SHA-256 digest of one or more integer index arrays (as
    little-endian int64), used to state which split a result was run on."""
    digest = hashlib.sha256()
    for index in indices:
        digest.update(np.asarray(index, dtype="<i8").tobytes())
        digest.update(b"|")
    return digest.hexdigest()[:16]


DATA_HINT = ("with mzattn-repro, '--data-root DIR' or $MZATTN_DATA chooses the folder that "
             "holds it (docs/datasets.md)")
r"""Where a missing dataset can go, said at the end of every missing-file
error."""


def missing_files_error(what: str, paths: Sequence[str], url: str, hint: str) -> FileNotFoundError:
    r"""A one-paragraph :class:`FileNotFoundError`: what is missing (the
    first missing path and how many), where to get it and where to put it."""
    missing = [p for p in paths if not os.path.exists(p)] or list(paths)
    more = f" and {len(missing) - 1} more of the {len(paths)} expected" if len(missing) > 1 else ""
    return FileNotFoundError(
        f"{what}: missing {missing[0]}{more}. Download it from {url} and {hint}; {DATA_HINT}.")


def _new_folders(folder: str) -> list[str]:
    # folder and its parents that do not exist yet, deepest first
    new = []
    while folder and not os.path.exists(folder):
        new.append(folder)
        folder = os.path.dirname(folder)
    return new


class CleanDownload:
    r"""Mixin for a PyG dataset that never downloads: when :meth:`download`
    raises because raw files are missing, the empty folders PyG made for
    them (:obj:`raw/`, and the root if it was new) are removed again."""

    def _download(self) -> None:
        new = _new_folders(os.path.abspath(self.raw_dir))
        try:
            super()._download()
        except FileNotFoundError:
            for folder in new:
                if os.path.isdir(folder) and not os.listdir(folder):
                    os.rmdir(folder)
            raise


# --------------------------------------------------------- processed datasets


def safe_torch_load(path: str) -> Any:
    r"""Loads :obj:`path` with :obj:`torch.load(weights_only=True)` only:
    tensors, containers and plain values, never code (PyG's loader retries
    with :obj:`weights_only=False` on some errors). Any failure is a
    :class:`ValueError` that names :obj:`path`."""
    try:
        return torch.load(path, map_location="cpu", weights_only=True)
    except FileNotFoundError:
        raise
    except Exception as error:
        # torch's own message goes on about "your checkpoint file": keep its first sentence;
        # a truncated file raises a bare EOFError, with no message at all
        text = str(error).strip()
        first = re.split(r"(?<=\.)\s", text, maxsplit=1)[0].splitlines()[0] if text else \
            "no message: the file is empty or truncated"
        raise ValueError(f"{path}: unreadable or unsafe cache file "
                         f"({type(error).__name__}: {first})") from error


def load_or_set_aside(path: str) -> Any | None:
    r"""Reads the cache file :obj:`path` with :func:`safe_torch_load`; one
    that does not load (truncated, not a cache, unsafe) is renamed
    :obj:`{path}.corrupt-{UTC time}` (:func:`set_aside`), named in a
    warning, and :obj:`None` returned: the caller rebuilds it."""
    try:
        return safe_torch_load(path)
    except ValueError as error:
        aside = set_aside(path, "corrupt")
        log.warning("%s; moved to %s, rebuilding the cache", error, aside)
    return None


class SafeInMemoryDataset(InMemoryDataset):
    r"""An :class:`~torch_geometric.data.InMemoryDataset` whose cache files
    never execute code: :meth:`load` reads with :func:`safe_torch_load`, and
    PyG's :obj:`processed/pre_transform.pt` and :obj:`pre_filter.pt` (which
    PyG reads with :obj:`weights_only=False`) are checked first; one that
    does not load safely is removed, with a warning naming it. Caches are
    meant to be shared, so their files may come from someone else.

    A processed file that does not load (truncated by a full disk, not a
    cache, or unsafe) is set aside as :obj:`{file}.corrupt-{UTC time}`, named
    in a warning, and the cache is rebuilt (:meth:`load_cache`)."""

    def _process(self) -> None:
        for name in ("pre_transform.pt", "pre_filter.pt"):
            path = os.path.join(self.processed_dir, name)
            if os.path.exists(path):
                try:
                    safe_torch_load(path)
                except ValueError as error:
                    log.warning("%s: removed, PyG would have unpickled it", error)
                    os.remove(path)
        super()._process()

    def load_cache(self, path: str) -> Any:
        r"""Reads the processed file :obj:`path` with :func:`safe_torch_load`.
        One that does not load is set aside (:func:`load_or_set_aside`) and
        the cache rebuilt by :meth:`process`, once: a rebuilt file that
        still does not load raises the :class:`ValueError` naming it."""
        cached = load_or_set_aside(path)
        if cached is not None:
            return cached
        self.force_reload = True
        self._process()
        return safe_torch_load(path)

    def load(self, path: str, data_cls: type = Data) -> None:
        data, self.slices, *rest = self.load_cache(path)
        data_cls = rest[0] if rest else data_cls
        self.data = data_cls.from_dict(data) if isinstance(data, dict) else data


def raw_state(raw_dir: str, paths: Sequence[str]) -> dict[str, list[int]]:
    r"""Size and modification time (ns) of every raw file, by path relative
    to :obj:`raw_dir`: each of :obj:`paths`, and every file under those of
    them that are folders (sorted)."""
    files = []
    for path in sorted(paths):
        if os.path.isdir(path):
            for folder, subfolders, names in os.walk(path):
                subfolders.sort()
                files += [os.path.join(folder, name) for name in sorted(names)]
        elif os.path.exists(path):
            files.append(path)
    state = {}
    for file in files:
        stat = os.stat(file)
        state[os.path.relpath(file, raw_dir)] = [stat.st_size, stat.st_mtime_ns]
    return state


def raw_changes(recorded: dict[str, list[int]] | None, current: dict[str, list[int]]) -> str:
    r"""How :obj:`current` (:func:`raw_state`) differs from :obj:`recorded`,
    in words naming the first changed file; empty when they agree."""
    if recorded is None:
        return "it records no state of its raw files (built by an older version)"
    changed = sorted(name for name in recorded.keys() | current.keys()
                     if recorded.get(name) != current.get(name))
    if not changed:
        return ""
    first = changed[0]
    what = ("is new" if first not in recorded else "was removed" if first not in current
            else "changed (size or modification time)")
    more = f" (and {len(changed) - 1} more)" if len(changed) > 1 else ""
    return f"raw file {first} {what}{more} since it was built"


class SummarizedDataset(CleanDownload, SafeInMemoryDataset):
    r"""An :class:`~torch_geometric.data.InMemoryDataset` whose processed
    folder holds two files, ``processed_file_names = [data, summary]``: the
    collated data and a JSON summary of how it was built (counts, failures,
    processing time, and the size and modification time of every raw file).
    Subclasses call :meth:`save_processed` at the end of :meth:`process` and
    :meth:`load` on the first processed path.

    A cache whose raw files changed since it was built (a file fixed, added
    or removed) is rebuilt, with a warning naming the first changed file,
    as if :obj:`force_reload` were set."""

    @property
    def raw_inputs(self) -> list[str]:
        r"""The raw files and folders the processed data is built from
        (:func:`raw_state`). (default: :obj:`raw_paths`)"""
        return self.raw_paths

    def _process(self) -> None:
        # the state before processing: a file changed while it ran is seen next time
        self._raw_state = raw_state(self.raw_dir, self.raw_inputs)
        if not self.force_reload and all(os.path.exists(p) for p in self.processed_paths):
            try:
                with open(self.processed_paths[1]) as f:
                    recorded = json.load(f).get("raw_files")
            except (OSError, ValueError, AttributeError):
                recorded = None
            change = raw_changes(recorded, self._raw_state)
            if change:
                log.warning("%s: %s: %s; rebuilding it", type(self).__name__,
                            self.processed_paths[0], change)
                self.force_reload = True
        super()._process()

    def save_processed(self, data_list: list[Data], info: dict, start: float) -> None:
        r"""Applies :obj:`pre_filter` and :obj:`pre_transform`, then writes the
        collated :obj:`data_list` and the summary :obj:`info` atomically (with
        the raw files' state before processing, :func:`raw_state`, as
        :obj:`"raw_files"`). :obj:`start` is the
        :func:`time.perf_counter` value when processing began."""
        if self.pre_filter is not None:
            data_list = [d for d in data_list if self.pre_filter(d)]
        if self.pre_transform is not None:
            data_list = [self.pre_transform(d) for d in data_list]
        if not data_list:
            raise ValueError(f"{type(self).__name__}: no item could be built from "
                             f"{self.raw_dir}; first failures: {info.get('failures', [])[:3]}")
        data, slices = self.collate(data_list)
        atomic_torch_save((data.to_dict(), slices, data.__class__), self.processed_paths[0])
        info = {
            **info,
            "dataset": type(self).__name__,
            "num_items": len(data_list),
            "processing_seconds": round(time.perf_counter() - start, 2),
            "raw_files": self._raw_state,
        }
        atomic_write_json(info, self.processed_paths[1])
        log.info("%s processed: %s", type(self).__name__, json.dumps(info, sort_keys=True)[:2000])

    def summary(self) -> dict:
        r"""The processing summary (counts, failures, processing time, the
        source files and the state of the raw files), as written by
        :meth:`process`."""
        with open(self.processed_paths[1]) as f:
            return json.load(f)


# ------------------------------------------------------------- point clouds


def normalize_unit_sphere(points: Tensor) -> Tensor:
    r"""Centres a cloud :obj:`[n, 3]` at its centroid and scales it so that
    the furthest point lies on the unit sphere (PointNet convention)."""
    points = points - points.mean(dim=0, keepdim=True)
    scale = points.norm(dim=-1).max()
    return points / scale.clamp_min(torch.finfo(points.dtype).tiny)


def sample_surface(
    pos: Tensor, face: Tensor, num_points: int, generator: torch.Generator
) -> Tensor:
    r"""Samples :obj:`num_points` points uniformly from the surface of a
    triangle mesh: triangles are drawn with probability proportional to their
    area, then a point uniformly inside each drawn triangle.

    Shapes:
        - **pos** :math:`(V, 3)`, **face** :math:`(3, T)` -> :math:`(\text{num\_points}, 3)`
    """
    pos = pos.double()
    a, b, c = pos[face[0]], pos[face[1]], pos[face[2]]  # [T, 3] each
    area = torch.linalg.cross(b - a, c - a).norm(dim=-1)
    if not bool(area.sum() > 0):
        raise ValueError("mesh has no triangle of positive area to sample from")
    tri = torch.multinomial(area, num_points, replacement=True, generator=generator)
    u, v = torch.rand(2, num_points, 1, dtype=pos.dtype, generator=generator)
    flip = (u + v) > 1  # reflect into the triangle
    u, v = torch.where(flip, 1 - u, u), torch.where(flip, 1 - v, v)
    out = a[tri] + u * (b[tri] - a[tri]) + v * (c[tri] - a[tri])
    return out.float()


def subsample(points: Tensor, num_points: int, generator: torch.Generator) -> Tensor:
    r"""Draws :obj:`num_points` rows of :obj:`points` without replacement."""
    if points.size(0) < num_points:
        raise ValueError(f"cannot draw {num_points} points from a cloud of {points.size(0)}")
    return points[torch.randperm(points.size(0), generator=generator)[:num_points]]


class RandomYRotateJitter(BaseTransform):
    r"""Training augmentation for point clouds (PointNet/DGCNN convention): a
    random rotation about the y (up) axis, then Gaussian jitter
    :math:`\mathcal{N}(0, \sigma^2)` clipped to :math:`[-c, c]`, applied to the
    coordinates in ``data.x[:, :3]``.

    Args:
        sigma (float, optional): Jitter standard deviation. (default: :obj:`0.01`)
        clip (float, optional): Jitter clip value. (default: :obj:`0.05`)
        max_angle (float, optional): Rotation angles are uniform in
            :math:`[0, \text{max\_angle})` radians. (default: :math:`2\pi`)
    """

    def __init__(self, sigma: float = 0.01, clip: float = 0.05, max_angle: float = 2 * math.pi):
        if sigma < 0 or clip < 0:
            raise ValueError(f"sigma and clip must be >= 0, got {sigma} and {clip}")
        self.sigma, self.clip, self.max_angle = sigma, clip, max_angle

    def forward(self, data: Data) -> Data:
        x = data.x
        theta = float(torch.rand(()) * self.max_angle)
        cos, sin = math.cos(theta), math.sin(theta)
        rot = x.new_tensor([[cos, 0.0, sin], [0.0, 1.0, 0.0], [-sin, 0.0, cos]])
        xyz = x[:, :3] @ rot.T
        xyz = xyz + (torch.randn_like(xyz) * self.sigma).clamp(-self.clip, self.clip)
        data = data.clone()
        data.x = torch.cat([xyz, x[:, 3:]], dim=-1)
        return data

    def __repr__(self) -> str:
        return f"{type(self).__name__}(sigma={self.sigma}, clip={self.clip})"


def read_h5_clouds(paths: Sequence[str], num_classes: int) -> tuple[np.ndarray, np.ndarray]:
    r"""Reads the ``data`` :math:`(N, P, 3)` and ``label`` :math:`(N)` or
    :math:`(N, 1)` arrays of the point-cloud HDF5 releases (PointNet's
    ``modelnet40_ply_hdf5_2048``, ScanObjectNN's ``h5_files``) and
    concatenates them over :obj:`paths`.

    Every problem raises a :class:`ValueError` that names the file: not an
    HDF5 file (or a truncated one), missing keys, wrong shapes, labels
    outside ``[0, num_classes)``, a point count :math:`P` that differs from
    the first file's, and clouds with a NaN or infinite coordinate (listed
    by their row in ``data``; such a cloud is refused, never dropped)."""
    h5py = require('h5py', 'data')

    points, labels = [], []
    for path in paths:
        try:
            with h5py.File(path, "r") as f:
                missing = sorted({"data", "label"} - set(f.keys()))
                if missing:
                    raise ValueError(f"{path}: HDF5 keys {missing} missing "
                                     f"(found {sorted(f.keys())})")
                data, label = np.asarray(f["data"]), np.asarray(f["label"]).reshape(-1)
        except FileNotFoundError:
            raise
        except OSError as error:
            reason = str(error).splitlines()[0] if str(error) else type(error).__name__
            raise ValueError(f"{path}: not a readable HDF5 file, truncated or of another "
                             f"format ({reason})") from error
        if data.ndim != 3 or data.shape[-1] < 3 or data.shape[0] != label.shape[0]:
            raise ValueError(f"{path}: expected data [N, P, 3] and label [N], "
                             f"got {data.shape} and {label.shape}")
        if points and data.shape[1] != points[0].shape[1]:
            raise ValueError(f"{path}: clouds of {data.shape[1]} points, but {paths[0]} has "
                             f"{points[0].shape[1]}; every file of a split must have the same "
                             "point count")
        bad = sorted(set(label.tolist()) - set(range(num_classes)))
        if bad:
            raise ValueError(f"{path}: labels {bad} outside [0, {num_classes})")
        broken = np.flatnonzero(~np.isfinite(data[..., :3]).all(axis=(1, 2)))
        if broken.size:
            rows = ", ".join(map(str, broken[:10])) + (", ..." if broken.size > 10 else "")
            raise ValueError(f"{path}: {broken.size} of {len(data)} clouds have NaN or infinite "
                             f"coordinates (rows {rows} of 'data'); a damaged download? "
                             "Replace the file")
        points.append(data[..., :3])
        labels.append(label)
    return np.concatenate(points), np.concatenate(labels).astype(np.int64)


def clouds_to_data(points: np.ndarray, labels: np.ndarray, num_points: int,
                   generator: torch.Generator) -> list[Data]:
    r"""Turns :math:`(N, P, 3)` clouds into ``Data(x=[num_points, 3], y=[1])``
    items: a random subset of :obj:`num_points` points, normalised to the
    unit sphere."""
    return [
        Data(x=normalize_unit_sphere(subsample(torch.from_numpy(p).float(), num_points, generator)),
             y=torch.tensor([int(c)]))
        for p, c in zip(points, labels, strict=True)
    ]


# ------------------------------------------------------------ image sources

#: torchvision image datasets the loaders read (never download): class name,
#: the folder torchvision expects under the root, and where to get the files.
IMAGE_SOURCES: dict[str, tuple[str, str, str]] = {
    "mnist": ("MNIST", "MNIST/raw", "https://ossci-datasets.s3.amazonaws.com/mnist/"),
    "fashion_mnist": ("FashionMNIST", "FashionMNIST/raw",
                      "http://fashion-mnist.s3-website.eu-central-1.amazonaws.com/"),
    "cifar100": ("CIFAR100", "cifar-100-python",
                 "https://www.cs.toronto.edu/~kriz/cifar-100-python.tar.gz"),
}
#: scikit-learn's digits (the offline image source) have no official split:
#: the first 80% train.
DIGITS_NUM_TRAIN = 1437


def _digits_images(train: bool) -> tuple[np.ndarray, np.ndarray]:
    # scikit-learn's bundled 8x8 digits, intensities 0-16 rescaled to 0-255.
    load_digits = require('sklearn.datasets', 'data').load_digits

    digits = load_digits()
    images = np.round(digits.images * (255.0 / 16.0)).astype(np.uint8)
    part = slice(None, DIGITS_NUM_TRAIN) if train else slice(DIGITS_NUM_TRAIN, None)
    return images[part], digits.target[part].astype(np.int64)


def load_images(name: str, root: str, train: bool) -> tuple[np.ndarray, np.ndarray]:
    r"""Reads an image source: ``uint8`` images in :math:`[0, 255]` of shape
    :math:`(N, H, W)` (digits, MNIST, Fashion-MNIST) or :math:`(N, H, W, 3)`
    (CIFAR-100, fine labels) and the ``int64`` labels :math:`(N)`.

    ``"digits"`` is scikit-learn's bundled 8x8 digits (offline, :obj:`root`
    unused; intensities rescaled from 0-16 to 0-255 and rounded; the first
    :obj:`DIGITS_NUM_TRAIN` = 1,437 images train, the other 360 test). The
    :obj:`IMAGE_SOURCES` are read by torchvision from :obj:`root` with
    ``download=False``; missing files raise a :class:`FileNotFoundError`
    naming the expected folder and the download URL."""
    if name == "digits":
        return _digits_images(train)
    if name not in IMAGE_SOURCES:
        raise ValueError(f"image source must be one of {['digits', *sorted(IMAGE_SOURCES)]}, "
                         f"got {name!r}")
    torchvision = require('torchvision', 'data')

    cls_name, folder, url = IMAGE_SOURCES[name]
    try:
        dataset = getattr(torchvision.datasets, cls_name)(root, train=train, download=False)
    except RuntimeError as e:  # torchvision: "Dataset not found or corrupted"
        raise FileNotFoundError(
            f"{cls_name}: no valid dataset files in {os.path.join(root, folder)}. "
            f"Download them from {url} and extract them there; {DATA_HINT}."
        ) from e
    images = np.asarray(dataset.data, dtype=np.uint8)
    return images, np.asarray(dataset.targets, dtype=np.int64)
