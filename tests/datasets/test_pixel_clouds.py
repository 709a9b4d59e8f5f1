import os
import struct

import numpy as np
import pytest
import torch
import torchvision
from mzattn.datasets._io import DIGITS_NUM_TRAIN, load_images
from mzattn.datasets.geometric_targets import geometric_targets
from mzattn.datasets.pixel_clouds import (
    PixelClouds,
    lifted_points,
    patch_points,
    pixel_points,
    random_affine,
)
from test_resnet_features import write_fake_cifar100  # sibling test module


def write_idx(path, array):
    r"""MNIST's IDX format: big-endian magic (0x08 = uint8, then the number
    of dimensions), the dimensions, then the raw bytes."""
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "wb") as f:
        f.write(struct.pack(">I", 0x0800 | array.ndim))
        f.write(struct.pack(f">{array.ndim}I", *array.shape))
        f.write(array.astype(np.uint8).tobytes())


def write_fake_mnist(raw, folder="MNIST", num=12, seed=0):
    rng = np.random.default_rng(seed)
    for prefix in ("train", "t10k"):
        images = np.zeros((num, 28, 28), dtype=np.uint8)
        images[:, 8:20, 10:18] = rng.integers(128, 256, size=(num, 12, 8))  # a bright bar
        write_idx(os.path.join(raw, folder, "raw", f"{prefix}-images-idx3-ubyte"), images)
        write_idx(os.path.join(raw, folder, "raw", f"{prefix}-labels-idx1-ubyte"),
                  np.arange(num) % 10)


def test_pixel_points_and_lift():
    gray = np.zeros((5, 5))
    gray[1, 3] = 1.0  # row 1, column 3
    gray[4, 0] = 0.6
    gray[2, 2] = 0.4  # below the threshold
    points = pixel_points(gray, 0.5)
    np.testing.assert_allclose(points, [[0.75, 0.75], [0.0, 0.0]])
    lifted = lifted_points(gray, 0.5)
    assert lifted.shape == (2, 8)
    np.testing.assert_allclose(lifted[:, :2], points)
    np.testing.assert_allclose(lifted[:, 2], [1.0, 0.6])
    np.testing.assert_allclose(lifted[0, 3:5], [0.0, 0.0])  # a symmetric peak: no gradient
    np.testing.assert_allclose(lifted[1, 3], (0.0 - 0.6))  # one-sided at the border
    np.testing.assert_allclose(lifted[:, 5:], np.stack([points[:, 0] ** 2, points[:, 1] ** 2,
                                                        points.prod(1)], axis=-1))


def test_patch_points():
    image = np.zeros((8, 8, 3), dtype=np.uint8)
    image[:4, :4] = (255, 0, 0)  # a red patch
    image[4:, 4:, 1] = np.tile([0, 255], (4, 2))  # striped green
    features = patch_points(image)
    assert features.shape == (4, 8)
    np.testing.assert_allclose(features[0, :3], [1.0, 0.0, 0.0])
    np.testing.assert_allclose(features[0, 3:6], 0.0)
    np.testing.assert_allclose(features[0, 6], 0.299)
    np.testing.assert_allclose(features[0, 7], 0.3 * np.hypot(1.0, 0.5))  # colourfulness
    np.testing.assert_allclose(features[1], 0.0)
    np.testing.assert_allclose(features[3, [1, 4]], [0.5, 0.5])
    assert patch_points(np.zeros((8, 8), dtype=np.uint8)).shape == (4, 8)  # grey input


def test_random_affine_is_linear_about_the_centre():
    rng = np.random.default_rng(0)
    points = rng.random((10, 2))
    out = random_affine(points, 0.3, np.random.default_rng(1))
    A = np.linalg.lstsq(points - 0.5, out - 0.5, rcond=None)[0].T
    np.testing.assert_allclose(0.5 + (points - 0.5) @ A.T, out, atol=1e-12)
    assert np.abs(A - np.eye(2)).max() <= 0.3 and not np.allclose(A, np.eye(2))


def test_load_images_digits_offline():
    from sklearn.datasets import load_digits

    train, train_labels = load_images("digits", "", train=True)
    test, test_labels = load_images("digits", "", train=False)
    assert train.shape == (DIGITS_NUM_TRAIN, 8, 8) and test.shape == (1797 - 1437, 8, 8)
    assert train.dtype == np.uint8 and train_labels.dtype == np.int64
    assert int(train.min()) == 0 and int(train.max()) == 255
    digits = load_digits()  # intensities 0-16, rescaled to 0-255 and rounded
    images = np.concatenate([train, test]).astype(np.float64) * (16.0 / 255.0)
    assert np.abs(images - digits.images).max() <= 0.5 * 16.0 / 255.0 + 1e-12
    np.testing.assert_array_equal(np.concatenate([train_labels, test_labels]), digits.target)
    with pytest.raises(ValueError, match=r"image source must be one of \['digits'"):
        load_images("svhn", "", train=True)


def test_digits_pixel_clouds_offline(tmp_path):
    dataset = PixelClouds(str(tmp_path), num_sets=None, train=False)
    summary = dataset.summary()
    assert summary["num_items"] + summary["num_failures"] == 1797 - 1437
    data = dataset[0]
    assert data.x.shape[1] == 2 and data.y.shape == (1, 4) and data.label.shape == (1, 1)
    assert float(data.x.min()) >= 0 and float(data.x.max()) <= 1
    torch.testing.assert_close(data.y, geometric_targets(data.x, ("meb", "hull", "mst",
                                                                  "furthest")))
    assert repr(dataset).startswith("PixelClouds(")


@pytest.mark.parametrize("options, dim", [
    ({"construction": "lift", "num_points": (6, 9), "targets": ["mst", "furthest"]}, 8),
    ({"mixture": 3, "num_sets": 8, "targets": ["meb", "hull"]}, 2),
    ({"affine_scale": 0.3, "num_sets": 8}, 2),
    ({"construction": "patches", "mixture": 2, "num_sets": 4, "targets": ["meb"]}, 8),
])
def test_digits_constructions(tmp_path, options, dim):
    dataset = PixelClouds(str(tmp_path), **options)
    summary = dataset.summary()
    assert summary["dim"] == dim and len(dataset) > 0
    data = dataset[0]
    assert data.x.shape[1] == dim
    torch.testing.assert_close(data.y, geometric_targets(data.x, dataset.targets))
    if "num_points" in options:
        assert 6 <= summary["set_size"]["min"] <= summary["set_size"]["max"] <= 9
    if options.get("mixture", 1) > 1:
        assert data.label.shape == (1, options["mixture"])
        assert data.label.unique().numel() == options["mixture"]  # distinct classes
    again = PixelClouds(str(tmp_path), force_reload=True, **options)
    assert torch.equal(again[0].x, data.x)  # seeded


def test_too_small_sets_are_listed(tmp_path):
    dataset = PixelClouds(str(tmp_path), num_points=(2, 3), num_sets=20, targets=["hull"])
    summary = dataset.summary()
    assert 0 < summary["num_failures"] < 20 and len(dataset) + summary["num_failures"] == 20
    assert all(f["num_points"] == 2 and "n > d" in f["reason"] for f in summary["failures"])
    assert all(d.x.size(0) == 3 for d in dataset)
    with pytest.raises(ValueError, match="no item could be built"):
        PixelClouds(str(tmp_path), num_points=(2, 2), num_sets=3, targets=["hull"])


def test_mnist_files(tmp_path):
    write_fake_mnist(str(tmp_path / "raw"))
    dataset = PixelClouds(str(tmp_path), source="mnist", targets=["mst"])
    assert len(dataset) == 12
    points = dataset[0].x  # the 12x8 bar, rows 8-19, columns 10-17
    assert points.shape == (96, 2)
    torch.testing.assert_close(points[:, 0].min(), torch.tensor(10 / 27))
    assert dataset[3].label.tolist() == [[3]]
    write_fake_mnist(str(tmp_path / "raw"), folder="FashionMNIST")
    assert len(PixelClouds(str(tmp_path), source="fashion_mnist", train=False,
                           targets=["mst"])) == 12


def test_cifar100_patches_and_pixels(tmp_path, monkeypatch):
    # The MD5 sums of the real files cannot match tiny fakes: skip that check only.
    monkeypatch.setattr(torchvision.datasets.cifar, "check_integrity", lambda *args: True)
    write_fake_cifar100(str(tmp_path / "raw"))
    patches = PixelClouds(str(tmp_path), source="cifar100", construction="patches",
                          targets=["meb"])
    assert len(patches) == 6 and patches[0].x.shape == (64, 8)
    pixels = PixelClouds(str(tmp_path), source="cifar100", train=False, targets=["mst"])
    assert len(pixels) == 3 and pixels[0].x.shape[1] == 2


def test_missing_files_and_bad_options(tmp_path):
    with pytest.raises(FileNotFoundError, match="ossci-datasets.s3.amazonaws.com/mnist"):
        PixelClouds(str(tmp_path), source="mnist")
    with pytest.raises(FileNotFoundError, match="cifar-100-python.tar.gz"):
        PixelClouds(str(tmp_path), source="cifar100", construction="patches")
    with pytest.raises(ValueError, match="affine_scale"):
        PixelClouds(str(tmp_path), construction="lift", affine_scale=0.2)
    with pytest.raises(ValueError, match="construction"):
        PixelClouds(str(tmp_path), construction="voxels")
    with pytest.raises(ValueError, match="targets"):
        PixelClouds(str(tmp_path), targets=["volume"])
    with pytest.raises(ValueError, match="num_points"):
        PixelClouds(str(tmp_path), num_points=(5, 2))
