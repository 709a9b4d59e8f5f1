r"""ModelNet40 point clouds (paper Task C)."""
import os
import time
from collections import Counter
from collections.abc import Callable

import torch
from torch_geometric.data import Data
from torch_geometric.io import read_off

from ._io import (
    SummarizedDataset,
    clouds_to_data,
    missing_files_error,
    normalize_unit_sphere,
    read_h5_clouds,
    sample_surface,
)

#: The 40 categories in label order (alphabetical, as PyG's ModelNet and
#: the ``shape_names.txt`` of the HDF5 release).
MODELNET40_CLASSES: tuple[str, ...] = (
    "airplane", "bathtub", "bed", "bench", "bookshelf", "bottle", "bowl", "car", "chair",
    "cone", "cup", "curtain", "desk", "door", "dresser", "flower_pot", "glass_box", "guitar",
    "keyboard", "lamp", "laptop", "mantel", "monitor", "night_stand", "person", "piano",
    "plant", "radio", "range_hood", "sink", "sofa", "stairs", "stool", "table", "tent",
    "toilet", "tv_stand", "vase", "wardrobe", "xbox",
)  # fmt: skip
OFF_URL = "http://modelnet.cs.princeton.edu/ModelNet40.zip"
HDF5_URL = "https://shapenet.cs.stanford.edu/media/modelnet40_ply_hdf5_2048.zip"
HDF5_FOLDER = "modelnet40_ply_hdf5_2048"
#: Number of HDF5 files per split in the ``modelnet40_ply_hdf5_2048`` release.
HDF5_NUM_FILES = {"train": 5, "test": 2}
SOURCES: tuple[str, ...] = ("off", "hdf5")


class ModelNet40(SummarizedDataset):
    r"""ModelNet40 (Wu et al., 2015) as point clouds, the input of the paper's
    Task C (App. A.2): every shape is a set of :obj:`num_points` points in
    :math:`\mathbb{R}^3`, normalised to the unit sphere, with one of 40
    labels (:obj:`MODELNET40_CLASSES`).

    Two raw sources (nothing is downloaded; put the files in place):

    - ``"off"``: the CAD meshes of ``ModelNet40.zip`` (:obj:`OFF_URL`),
      laid out as PyG's :class:`~torch_geometric.datasets.ModelNet`:
      ``root/raw/<class>/<train|test>/*.off``. Points are sampled uniformly
      on the surface (area-weighted triangles).
    - ``"hdf5"``: PointNet's ``modelnet40_ply_hdf5_2048.zip``
      (:obj:`HDF5_URL`) extracted to ``root/raw/modelnet40_ply_hdf5_2048/``
      (``ply_data_train0-4.h5``, ``ply_data_test0-1.h5``, keys ``data``
      :math:`(N, 2048, 3)` and ``label``). :obj:`num_points` of the 2,048
      points are drawn at random.

    Sampling is seeded by :obj:`seed` and cached. For the paper's training
    augmentation (random y-axis rotation and jitter) pass
    ``transform=RandomYRotateJitter()`` to the training set.

    Args:
        root (str): Root folder with ``raw/`` and ``processed/``.
        train (bool, optional): Training or test split. (default: :obj:`True`)
        source (str, optional): ``"off"`` or ``"hdf5"``. (default: :obj:`"off"`)
        num_points (int, optional): Points per shape. (default: :obj:`1024`)
        seed (int, optional): Seed of the point sampling. (default: :obj:`0`)
        transform, pre_transform, pre_filter (callable, optional): As in
            :class:`~torch_geometric.data.InMemoryDataset`.
        force_reload (bool, optional): Reprocess even if cached.
            (default: :obj:`False`)

    Shapes:
        - **x** :math:`(\text{num\_points}, 3)`, **y** :math:`(1)` (long)

    **STATS:**

    .. list-table::
        :widths: 20 10 10 10
        :header-rows: 1

        * - Split
          - #shapes
          - #points
          - #classes
        * - train
          - 9,843
          - 1,024
          - 40
        * - test
          - 2,468
          - 1,024
          - 40
    """

    VERSION = 1

    def __init__(
        self,
        root: str,
        train: bool = True,
        source: str = "off",
        num_points: int = 1024,
        seed: int = 0,
        transform: Callable | None = None,
        pre_transform: Callable | None = None,
        pre_filter: Callable | None = None,
        force_reload: bool = False,
    ) -> None:
        if source not in SOURCES:
            raise ValueError(f"source must be one of {SOURCES}, got {source!r}")
        if num_points < 1:
            raise ValueError(f"num_points must be positive, got {num_points}")
        self.split = "train" if train else "test"
        self.source, self.num_points, self.seed = source, num_points, seed
        super().__init__(root, transform, pre_transform, pre_filter, force_reload=force_reload)
        self.load(self.processed_paths[0])

    @property
    def raw_file_names(self) -> list[str]:
        if self.source == "off":
            return list(MODELNET40_CLASSES)
        n = HDF5_NUM_FILES[self.split]
        return [f"{HDF5_FOLDER}/ply_data_{self.split}{i}.h5" for i in range(n)]

    @property
    def raw_inputs(self) -> list[str]:
        if self.source == "off":  # a split's cache depends on its own meshes only
            return [os.path.join(self.raw_dir, name, self.split) for name in MODELNET40_CLASSES]
        return self.raw_paths

    @property
    def processed_file_names(self) -> list[str]:
        stem = f"modelnet40_{self.source}_{self.split}_n{self.num_points}_s{self.seed}"
        stem += f"_v{self.VERSION}"
        return [f"{stem}.pt", f"{stem}_summary.json"]

    def download(self) -> None:
        url, hint = (
            (OFF_URL, f"move the 40 class folders of ModelNet40/ into {self.raw_dir}")
            if self.source == "off" else
            (HDF5_URL, f"extract the folder {HDF5_FOLDER}/ into {self.raw_dir}")
        )  # fmt: skip
        raise missing_files_error(f"ModelNet40(source={self.source!r})", self.raw_paths, url, hint)

    def process(self) -> None:
        start = time.perf_counter()
        generator = torch.Generator().manual_seed(self.seed)
        failures: list[dict] = []
        if self.source == "off":
            data_list = self._process_off(generator, failures)
        else:
            points, labels = read_h5_clouds(self.raw_paths, len(MODELNET40_CLASSES))
            data_list = clouds_to_data(points, labels, self.num_points, generator)
        counts = Counter(int(d.y) for d in data_list)
        info = {
            "source": self.source,
            "split": self.split,
            "num_points": self.num_points,
            "seed": self.seed,
            "num_failures": len(failures),
            "failures": failures,
            "class_counts": {MODELNET40_CLASSES[c]: counts[c] for c in sorted(counts)},
            "source_files": sorted(self.raw_paths),
        }
        self.save_processed(data_list, info, start)

    def _process_off(self, generator: torch.Generator, failures: list[dict]) -> list[Data]:
        data_list = []
        for label, name in enumerate(MODELNET40_CLASSES):
            folder = os.path.join(self.raw_dir, name, self.split)
            if not os.path.isdir(folder):
                raise FileNotFoundError(f"ModelNet40: missing folder {folder} (from {OFF_URL})")
            for file in sorted(f for f in os.listdir(folder) if f.endswith(".off")):
                path = os.path.join(folder, file)
                try:
                    mesh = read_off(path)
                    points = sample_surface(mesh.pos, mesh.face, self.num_points, generator)
                except (ValueError, IndexError, RuntimeError) as e:
                    failures.append({"file": os.path.relpath(path, self.raw_dir), "reason": str(e)})
                    continue
                data_list.append(Data(x=normalize_unit_sphere(points), y=torch.tensor([label])))
        return data_list

    def __repr__(self) -> str:
        return f"{type(self).__name__}({len(self)}, split={self.split!r}, source={self.source!r})"
