import os
import time

import pytest
import torch
from mzattn.datasets._io import SummarizedDataset, safe_torch_load
from mzattn.datasets.synthetic import load_task
from torch_geometric.data import Data

SMALL = {"num_train": 8, "num_val": 4, "num_test": 4}


class Tiny(SummarizedDataset):
    def __init__(self, root: str) -> None:
        super().__init__(root, log=False)
        self.load(self.processed_paths[0])

    @property
    def raw_file_names(self) -> list[str]:
        return []

    @property
    def processed_file_names(self) -> list[str]:
        return ["data.pt", "summary.json"]

    def process(self) -> None:
        self.save_processed([Data(x=torch.ones(2, 3)), Data(x=torch.zeros(1, 3))], {},
                            time.perf_counter())


def _crafted_pickle(path: str, marker: str) -> None:
    # a file whose unpickling runs a command that creates :obj:`marker`
    class Exploit:
        def __reduce__(self):
            return os.system, (f"touch {marker}",)
    torch.save(Exploit(), path)


def test_safe_torch_load_refuses_code_and_names_the_file(tmp_path):
    path, marker = str(tmp_path / "evil.pt"), str(tmp_path / "ran")
    _crafted_pickle(path, marker)
    with pytest.raises(ValueError, match=f"{path}: unreadable or unsafe cache file"):
        safe_torch_load(path)
    assert not os.path.exists(marker)


def test_a_crafted_processed_cache_is_refused(tmp_path):
    root, marker = str(tmp_path / "tiny"), str(tmp_path / "ran")
    path = Tiny(root).processed_paths[0]
    assert len(Tiny(root)) == 2  # the cache loads safely
    _crafted_pickle(path, marker)
    with pytest.raises(ValueError, match="delete it to rebuild the cache") as info:
        Tiny(root)
    assert path in str(info.value) and not os.path.exists(marker)


@pytest.mark.parametrize("name", ["pre_transform.pt", "pre_filter.pt"])
def test_pyg_pre_transform_files_are_never_unpickled(tmp_path, name):
    root, marker = str(tmp_path / "tiny"), str(tmp_path / "ran")
    evil = os.path.join(Tiny(root).processed_dir, name)
    _crafted_pickle(evil, marker)
    assert len(Tiny(root)) == 2
    assert not os.path.exists(marker) and not os.path.exists(evil)


def test_synthetic_caches_are_never_unpickled(tmp_path):
    root, marker = str(tmp_path), str(tmp_path / "ran")
    first = load_task("task_a", split="train", root=root, **SMALL)
    evil = os.path.join(first.processed_dir, "pre_transform.pt")
    _crafted_pickle(evil, marker)
    load_task("task_a", split="train", root=root, **SMALL)
    assert not os.path.exists(marker) and not os.path.exists(evil)
    _crafted_pickle(first.processed_paths[0], marker)
    with pytest.raises(ValueError, match=first.processed_paths[0]):
        load_task("task_a", split="train", root=root, **SMALL)
    assert not os.path.exists(marker)
