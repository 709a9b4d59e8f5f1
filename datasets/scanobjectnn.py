r"""ScanObjectNN OBJ_BG point clouds (paper Task E)."""
import time
from collections import Counter
from collections.abc import Callable

import torch

from ._io import SummarizedDataset, clouds_to_data, missing_files_error, read_h5_clouds

#: The 15 categories in label order (``shape_names.txt`` of the release).
SCANOBJECTNN_CLASSES: tuple[str, ...] = (
    "bag", "bin", "box", "cabinet", "chair", "desk", "display", "door", "shelf", "table",
    "bed", "pillow", "sink", "sofa", "toilet",
)  # fmt: skip
URL = "https://hkust-vgd.github.io/scanobjectnn/"
#: OBJ_BG (objects with background) is the ``main_split`` folder of ``h5_files``.
FILES = {
    "train": "main_split/training_objectdataset.h5",
    "test": "main_split/test_objectdataset.h5",
}


class ScanObjectNN(SummarizedDataset):
    r"""ScanObjectNN (Uy et al., 2019), variant OBJ_BG, as point clouds: the
    input of the paper's Task E (App. A.2). Every scan is a set of
    :obj:`num_points` points in :math:`\mathbb{R}^3` drawn at random from the
    2,048 points of the release and normalised to the unit sphere, with one
    of 15 labels (:obj:`SCANOBJECTNN_CLASSES`).

    Nothing is downloaded: request ``h5_files.zip`` at :obj:`URL` and put
    ``h5_files/main_split/{training,test}_objectdataset.h5`` (keys ``data``
    :math:`(N, 2048, 3)`, ``label`` :math:`(N)`) at
    ``root/raw/main_split/``. For the paper's training augmentation pass
    ``transform=RandomYRotateJitter()`` to the training set.

    Args:
        root (str): Root folder with ``raw/`` and ``processed/``.
        train (bool, optional): Training or test split. (default: :obj:`True`)
        num_points (int, optional): Points per scan. (default: :obj:`1024`)
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
          - #scans
          - #points
          - #classes
        * - train
          - 2,309
          - 1,024
          - 15
        * - test
          - 581
          - 1,024
          - 15
    """

    VERSION = 1

    def __init__(
        self,
        root: str,
        train: bool = True,
        num_points: int = 1024,
        seed: int = 0,
        transform: Callable | None = None,
        pre_transform: Callable | None = None,
        pre_filter: Callable | None = None,
        force_reload: bool = False,
    ) -> None:
        if num_points < 1:
            raise ValueError(f"num_points must be positive, got {num_points}")
        self.split = "train" if train else "test"
        self.num_points, self.seed = num_points, seed
        super().__init__(root, transform, pre_transform, pre_filter, force_reload=force_reload)
        self.load(self.processed_paths[0])

    @property
    def raw_file_names(self) -> list[str]:
        return [FILES[self.split]]

    @property
    def processed_file_names(self) -> list[str]:
        stem = f"scanobjectnn_objbg_{self.split}_n{self.num_points}_s{self.seed}_v{self.VERSION}"
        return [f"{stem}.pt", f"{stem}_summary.json"]

    def download(self) -> None:
        raise missing_files_error(
            "ScanObjectNN(OBJ_BG)", self.raw_paths, URL,
            f"put h5_files/main_split/*_objectdataset.h5 into {self.raw_dir}/main_split/",
        )

    def process(self) -> None:
        start = time.perf_counter()
        points, labels = read_h5_clouds(self.raw_paths, len(SCANOBJECTNN_CLASSES))
        generator = torch.Generator().manual_seed(self.seed)
        data_list = clouds_to_data(points, labels, self.num_points, generator)
        counts = Counter(labels.tolist())
        info = {
            "variant": "OBJ_BG",
            "split": self.split,
            "num_points": self.num_points,
            "seed": self.seed,
            "class_counts": {SCANOBJECTNN_CLASSES[c]: counts[c] for c in sorted(counts)},
            "source_files": sorted(self.raw_paths),
        }
        self.save_processed(data_list, info, start)

    def __repr__(self) -> str:
        return f"{type(self).__name__}({len(self)}, split={self.split!r}, variant='OBJ_BG')"
