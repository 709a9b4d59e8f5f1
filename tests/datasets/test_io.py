import glob
import os
import time

import pytest
import torch
from mzattn.datasets._io import SummarizedDataset, atomic_write_json, safe_torch_load
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


def test_safe_torch_load_of_a_truncated_file_names_it_without_torch_advice(tmp_path):
    path = tmp_path / "cut.pt"
    torch.save({"x": torch.ones(3)}, path)
    path.write_bytes(path.read_bytes()[:-30])
    with pytest.raises(ValueError) as info:
        safe_torch_load(str(path))
    assert str(info.value) == (f"{path}: unreadable or unsafe cache file (RuntimeError: "
                               "PytorchStreamReader failed reading zip archive: failed finding "
                               "central directory.)")  # not torch's "your checkpoint file"


def test_safe_torch_load_of_a_legacy_file_cut_to_nothing_names_it(tmp_path):
    path = tmp_path / "pre_transform.pt"  # as a writer beside us leaves it, for a moment
    torch.save("None", path, _use_new_zipfile_serialization=False)
    path.write_bytes(path.read_bytes()[:4])  # a bare EOFError(), with no message
    with pytest.raises(ValueError) as info:
        safe_torch_load(str(path))
    assert str(info.value) == (f"{path}: unreadable or unsafe cache file (EOFError: no "
                               "message: the file is empty or truncated)")


def test_a_crafted_processed_cache_is_set_aside_and_rebuilt(tmp_path, caplog):
    root, marker = str(tmp_path / "tiny"), str(tmp_path / "ran")
    path = Tiny(root).processed_paths[0]
    assert len(Tiny(root)) == 2  # the cache loads safely
    _crafted_pickle(path, marker)
    assert len(Tiny(root)) == 2 and not os.path.exists(marker)
    (aside,) = glob.glob(f"{path}.corrupt-*")
    assert f"{path}: unreadable or unsafe cache file" in caplog.text
    assert f"moved to {aside}, rebuilding the cache" in caplog.text


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
    again = load_task("task_a", split="train", root=root, **SMALL)
    assert torch.equal(again.x, first.x) and not os.path.exists(marker)


def test_a_truncated_synthetic_cache_is_named_set_aside_and_regenerated(tmp_path, caplog):
    first = load_task("task_a", split="val", root=str(tmp_path), **SMALL)
    path = first.processed_paths[0]
    with open(path, "rb") as f:
        whole = f.read()
    with open(path, "wb") as f:
        f.write(whole[:-30])  # a full disk, a killed copy
    again = load_task("task_a", split="val", root=str(tmp_path), **SMALL)
    assert torch.equal(again.x, first.x) and not again.summary()["from_cache"]
    (aside,) = glob.glob(f"{path}.corrupt-*")
    assert os.path.getsize(aside) == len(whole) - 30
    assert f"{path}: unreadable or unsafe cache file (" in caplog.text
    assert f"moved to {aside}, rebuilding the cache" in caplog.text
    assert load_task("task_a", split="val", root=str(tmp_path), **SMALL).summary()["from_cache"]


def test_a_summarized_cache_records_its_raw_files(tmp_path):
    dataset = Tiny(str(tmp_path / "tiny"))
    assert dataset.summary()["raw_files"] == {}


@pytest.mark.parametrize("mask, mode", [(0o022, 0o644), (0o002, 0o664)])
def test_cache_files_follow_the_umask(tmp_path, mask, mode):
    # 002 is the Docker image's (mzattn.repro.docker.container): caches writable by the group
    old = os.umask(mask)
    try:
        atomic_write_json({"a": 1}, str(tmp_path / "cache.json"))
    finally:
        os.umask(old)
    assert os.stat(tmp_path / "cache.json").st_mode & 0o777 == mode

