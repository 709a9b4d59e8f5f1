import os

import h5py
import numpy as np
import pytest
import torch
from mzattn.datasets._io import (
    RandomYRotateJitter,
    normalize_unit_sphere,
    sample_surface,
)
from mzattn.datasets.modelnet import HDF5_FOLDER, MODELNET40_CLASSES, ModelNet40
from mzattn.datasets.scanobjectnn import SCANOBJECTNN_CLASSES, ScanObjectNN
from torch_geometric.data import Data

# A unit cube as 12 triangles (6 quads written as "4 ..." faces below).
CUBE_VERTICES = [(x, y, z) for x in (0, 1) for y in (0, 1) for z in (0, 1)]
CUBE_QUADS = [(0, 1, 3, 2), (4, 6, 7, 5), (0, 4, 5, 1), (2, 3, 7, 6), (0, 2, 6, 4), (1, 5, 7, 3)]


def write_off(path, vertices, quads, glued_header=False):
    # ModelNet's own files sometimes glue the counts to the "OFF" keyword.
    head = [f"OFF{len(vertices)} {len(quads)} 0"] if glued_header else [
        "OFF", f"{len(vertices)} {len(quads)} 0"]
    lines = head + [" ".join(map(str, v)) for v in vertices]
    lines += ["4 " + " ".join(map(str, q)) for q in quads]
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as f:
        f.write("\n".join(lines) + "\n")


def write_h5(path, data, label):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with h5py.File(path, "w") as f:
        f["data"] = data.astype(np.float32)
        f["label"] = label


def make_off_root(root):
    raw = os.path.join(root, "raw")
    for name in MODELNET40_CLASSES:
        os.makedirs(os.path.join(raw, name, "train"), exist_ok=True)
        os.makedirs(os.path.join(raw, name, "test"), exist_ok=True)
    write_off(os.path.join(raw, "airplane", "train", "airplane_0001.off"),
              CUBE_VERTICES, CUBE_QUADS)
    stretched = [(2 * x, y, z) for x, y, z in CUBE_VERTICES]
    write_off(os.path.join(raw, "xbox", "train", "xbox_0001.off"), stretched, CUBE_QUADS,
              glued_header=True)
    # A degenerate mesh (all faces of zero area): counted as a failure.
    write_off(os.path.join(raw, "xbox", "train", "xbox_0002.off"), [(0, 0, 0)] * 8, CUBE_QUADS)
    write_off(os.path.join(raw, "bed", "test", "bed_0001.off"), CUBE_VERTICES, CUBE_QUADS)


def test_sample_surface_is_area_weighted():
    # Two triangles of area 1/2 and 9/2 in the z=0 plane: 10% of the points
    # must fall on the small one.
    pos = torch.tensor([[0.0, 0, 0], [1, 0, 0], [0, 1, 0], [10, 0, 0], [13, 0, 0], [10, 3, 0]])
    face = torch.tensor([[0, 3], [1, 4], [2, 5]])
    out = sample_surface(pos, face, 20_000, torch.Generator().manual_seed(0))
    on_small = out[:, 0] < 5
    assert abs(on_small.float().mean().item() - 0.1) < 0.01
    small = out[on_small]
    assert bool((small[:, :2] >= 0).all()) and bool((small[:, :2].sum(-1) <= 1 + 1e-6).all())
    assert torch.equal(out[:, 2], torch.zeros(20_000))


def test_sample_surface_rejects_a_flat_mesh():
    with pytest.raises(ValueError, match="positive area"):
        sample_surface(torch.zeros(3, 3), torch.tensor([[0], [1], [2]]), 4, torch.Generator())


def test_normalize_unit_sphere():
    points = torch.randn(50, 3) * 7 + 3
    out = normalize_unit_sphere(points)
    torch.testing.assert_close(out.mean(0), torch.zeros(3), atol=1e-5, rtol=0)
    torch.testing.assert_close(out.norm(dim=-1).max(), torch.tensor(1.0))


def test_random_y_rotate_jitter():
    x = torch.randn(64, 4)
    torch.manual_seed(0)
    out = RandomYRotateJitter(sigma=0.0)(Data(x=x)).x
    torch.testing.assert_close(out[:, 1], x[:, 1])  # y is the rotation axis
    torch.testing.assert_close(out[:, 3], x[:, 3])  # extra features untouched
    torch.testing.assert_close(out[:, :3].norm(dim=-1), x[:, :3].norm(dim=-1))
    assert not torch.allclose(out[:, [0, 2]], x[:, [0, 2]])
    jitter = RandomYRotateJitter(sigma=1.0, clip=0.05, max_angle=0.0)(Data(x=x)).x - x
    assert 0 < jitter.abs().max() <= 0.05 + 1e-6
    assert repr(RandomYRotateJitter()) == "RandomYRotateJitter(sigma=0.01, clip=0.05)"
    with pytest.raises(ValueError, match="sigma"):
        RandomYRotateJitter(sigma=-1)


def test_modelnet40_off(tmp_path):
    root = str(tmp_path)
    make_off_root(root)
    train = ModelNet40(root, train=True, num_points=256)
    assert len(train) == 2 and repr(train) == "ModelNet40(2, split='train', source='off')"
    assert train[0].x.shape == (256, 3) and train[0].y.dtype == torch.long
    assert [int(d.y) for d in train] == [0, MODELNET40_CLASSES.index("xbox")]
    for data in train:
        torch.testing.assert_close(data.x.norm(dim=-1).max(), torch.tensor(1.0))
    # The 2x1x1 box: every point lies on a face of the (scaled) box.
    x = train[1].x
    low, high = x.min(dim=0).values, x.max(dim=0).values
    extent = high - low
    torch.testing.assert_close(extent / extent[1], torch.tensor([2.0, 1.0, 1.0]), atol=0.02, rtol=0)
    to_face = torch.minimum((x - low).abs(), (x - high).abs()).min(dim=-1).values
    assert float(to_face.max()) < 1e-5
    summary = train.summary()
    assert summary["num_failures"] == 1
    assert summary["failures"][0]["file"] == os.path.join("xbox", "train", "xbox_0002.off")
    assert summary["class_counts"] == {"airplane": 1, "xbox": 1}
    # Cached and deterministic; another seed gives other points.
    assert torch.equal(ModelNet40(root, train=True, num_points=256)[0].x, train[0].x)
    other = ModelNet40(root, train=True, num_points=256, seed=1)
    assert not torch.equal(other[0].x, train[0].x)
    test = ModelNet40(root, train=False, num_points=256)
    assert len(test) == 1 and int(test[0].y) == MODELNET40_CLASSES.index("bed")


@pytest.mark.parametrize("train", [True, False])
def test_modelnet40_hdf5(tmp_path, train):
    rng = np.random.default_rng(0)
    split, num_files = ("train", 5) if train else ("test", 2)
    for i in range(num_files):
        write_h5(tmp_path / "raw" / HDF5_FOLDER / f"ply_data_{split}{i}.h5",
                 rng.normal(size=(3, 2048, 3)), np.array([[i], [39], [0]], dtype=np.uint8))
    dataset = ModelNet40(str(tmp_path), train=train, source="hdf5",
                         transform=RandomYRotateJitter())
    assert len(dataset) == 3 * num_files
    assert dataset[0].x.shape == (1024, 3)
    assert [int(dataset[j].y) for j in range(3)] == [0, 39, 0]
    assert dataset.summary()["class_counts"]["xbox"] == num_files


def test_a_missing_modelnet40_is_one_short_message_and_leaves_no_folder(tmp_path):
    root = tmp_path / "modelnet40"
    with pytest.raises(FileNotFoundError) as info:
        ModelNet40(str(root), source="off")
    message = str(info.value)
    assert "\n" not in message and message.count("/raw") == 2  # first class folder + target
    assert "and 39 more of the 40 expected" in message and "ModelNet40.zip" in message
    assert "--data-root" in message and "MZATTN_DATA" in message
    assert not root.exists()


def test_modelnet40_errors(tmp_path):
    with pytest.raises(FileNotFoundError, match="modelnet40_ply_hdf5_2048.zip"):
        ModelNet40(str(tmp_path), source="hdf5")
    with pytest.raises(FileNotFoundError, match="ModelNet40.zip"):
        ModelNet40(str(tmp_path), source="off")
    with pytest.raises(ValueError, match="source"):
        ModelNet40(str(tmp_path), source="ply")
    for i in range(2):
        write_h5(tmp_path / "raw" / HDF5_FOLDER / f"ply_data_test{i}.h5",
                 np.zeros((1, 2048, 3)), np.array([[40]], dtype=np.uint8))
    with pytest.raises(ValueError, match="outside"):
        ModelNet40(str(tmp_path), train=False, source="hdf5")


def test_scanobjectnn(tmp_path):
    rng = np.random.default_rng(1)
    clouds = rng.normal(size=(4, 2048, 3)) + 5.0
    write_h5(tmp_path / "raw" / "main_split" / "training_objectdataset.h5", clouds,
             np.array([0, 14, 3, 3]))
    dataset = ScanObjectNN(str(tmp_path), num_points=512)
    assert len(dataset) == 4 and dataset[1].x.shape == (512, 3)
    assert [int(d.y) for d in dataset] == [0, 14, 3, 3]
    points = dataset[0].x
    torch.testing.assert_close(points.norm(dim=-1).max(), torch.tensor(1.0))
    # The 512 points are a subset of the (normalised) 2,048 of the file.
    raw = normalize_unit_sphere(torch.from_numpy(clouds[0]).float())
    assert float(torch.cdist(points, raw).min(dim=-1).values.max()) < 0.5
    summary = dataset.summary()
    assert summary["class_counts"] == {"bag": 1, "cabinet": 2, "toilet": 1}
    assert len(SCANOBJECTNN_CLASSES) == 15
    with pytest.raises(FileNotFoundError, match="hkust-vgd.github.io/scanobjectnn"):
        ScanObjectNN(str(tmp_path), train=False)


# ------------------------------------------------ data errors name the file


def _modelnet_h5(tmp_path, i):
    return tmp_path / "raw" / HDF5_FOLDER / f"ply_data_test{i}.h5"


def test_a_file_that_is_not_hdf5_is_named(tmp_path):
    rng = np.random.default_rng(0)
    write_h5(_modelnet_h5(tmp_path, 0), rng.normal(size=(2, 2048, 3)), np.array([0, 1]))
    good = _modelnet_h5(tmp_path, 0).read_bytes()
    _modelnet_h5(tmp_path, 1).write_bytes(good[: len(good) // 2])  # truncated download
    with pytest.raises(ValueError, match="not a readable HDF5 file") as info:
        ModelNet40(str(tmp_path), train=False, source="hdf5")
    assert str(info.value).startswith(f"{_modelnet_h5(tmp_path, 1)}: ")
    _modelnet_h5(tmp_path, 1).write_text("<html>404 Not Found</html>")
    with pytest.raises(ValueError, match="not a readable HDF5 file") as info:
        ModelNet40(str(tmp_path), train=False, source="hdf5")
    assert str(info.value).startswith(f"{_modelnet_h5(tmp_path, 1)}: ")


def test_hdf5_files_with_different_point_counts_are_named(tmp_path):
    rng = np.random.default_rng(0)
    write_h5(_modelnet_h5(tmp_path, 0), rng.normal(size=(2, 2048, 3)), np.array([0, 1]))
    write_h5(_modelnet_h5(tmp_path, 1), rng.normal(size=(2, 1024, 3)), np.array([0, 1]))
    with pytest.raises(ValueError) as info:
        ModelNet40(str(tmp_path), train=False, source="hdf5")
    assert str(info.value).startswith(
        f"{_modelnet_h5(tmp_path, 1)}: clouds of 1024 points, but "
        f"{_modelnet_h5(tmp_path, 0)} has 2048")


@pytest.mark.parametrize("rows", [[1, 3, 5, 7], [6]])
def test_a_nan_cloud_is_refused_with_file_and_row(tmp_path, rows):
    clouds = np.random.default_rng(0).normal(size=(8, 2048, 3))
    clouds[rows[0], 5, 1] = np.nan  # one NaN coordinate is enough
    clouds[rows[1:]] = np.nan  # and whole clouds of NaN
    path = tmp_path / "raw" / "main_split" / "training_objectdataset.h5"
    write_h5(path, clouds, np.arange(8))
    with pytest.raises(ValueError) as info:
        ScanObjectNN(str(tmp_path), num_points=512)
    rows_text = ", ".join(map(str, rows))
    assert str(info.value).startswith(f"{path}: {len(rows)} of 8 clouds have NaN or infinite "
                                      f"coordinates (rows {rows_text} of 'data')")
    assert not (tmp_path / "processed").exists() or not any((tmp_path / "processed").glob("*.pt"))


def test_a_fixed_off_file_rebuilds_the_cache(tmp_path, caplog):
    root = str(tmp_path)
    make_off_root(root)
    first = ModelNet40(root, train=True, num_points=64)
    assert len(first) == 2 and first.summary()["num_failures"] == 1
    assert "xbox/train/xbox_0002.off" in first.summary()["raw_files"]
    assert len(ModelNet40(root, train=True, num_points=64)) == 2  # unchanged: cached
    assert "rebuilding" not in caplog.text
    fixed = os.path.join(root, "raw", "xbox", "train", "xbox_0002.off")
    write_off(fixed, CUBE_VERTICES, CUBE_QUADS)  # the degenerate mesh, fixed
    os.utime(fixed, ns=(1, 1))  # whatever the clock: the state differs
    again = ModelNet40(root, train=True, num_points=64)
    assert len(again) == 3 and again.summary()["num_failures"] == 0
    assert (f"{again.processed_paths[0]}: raw file xbox/train/xbox_0002.off changed "
            "(size or modification time) since it was built; rebuilding it") in caplog.text
    caplog.clear()
    assert len(ModelNet40(root, train=False, num_points=64)) == 1  # the test split's own files
    os.remove(fixed)
    assert len(ModelNet40(root, train=True, num_points=64)) == 2
    assert "raw file xbox/train/xbox_0002.off was removed" in caplog.text
    assert "_test_" not in caplog.text  # the test split was not rebuilt
