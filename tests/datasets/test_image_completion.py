import numpy as np
import pytest
import torch
import torchvision
from mzattn.datasets.image_completion import (
    EPISODE_SIZES,
    ImageCompletion,
    pixel_coordinates,
    source_images,
)
from mzattn.datasets.pixel_clouds import to_gray
from test_pixel_clouds import write_fake_mnist  # sibling test modules
from test_resnet_features import write_fake_cifar100


def _pixel(gray, xy):
    # (x, y) in [-1, 1]^2 (x right, y up) -> the intensity of that pixel.
    h, w = gray.shape
    col = int(round((xy[0] + 1) / 2 * (w - 1)))
    row = int(round((1 - xy[1]) / 2 * (h - 1)))
    return gray[row, col]


def test_pixel_coordinates():
    coords = pixel_coordinates(3, 2)
    np.testing.assert_allclose(coords, [[-1, 1], [1, 1], [-1, 0], [1, 0], [-1, -1], [1, -1]])


def test_digits_episodes_hold_the_image_pixels(tmp_path):
    dataset = ImageCompletion(str(tmp_path), train=False, images=[4, 0])
    K, T = EPISODE_SIZES["digits"]
    assert len(dataset) == 2 * T and dataset.images.tolist() == [4, 0]
    gray = to_gray(source_images("digits", "", train=False))
    for index in range(len(dataset)):
        data, image = dataset[index], gray[dataset.images[index // T]]
        assert data.x.shape == (K + 1, 4) and data.y.shape == (1, 1)
        assert data.x[:K, 3].eq(0).all() and data.x[K].tolist()[2:] == [0.0, 1.0]
        assert data.y.item() == pytest.approx(_pixel(image, data.x[K, :2].tolist()), abs=1e-6)
        for token in data.x[:K]:  # the context values are the image's too
            assert token[2].item() == pytest.approx(_pixel(image, token[:2].tolist()), abs=1e-6)
        assert not (data.x[:K, :2] == data.x[K, :2]).all(-1).any()  # target not in the context
    targets = dataset[:T]
    assert len({tuple(d.x[K, :2].tolist()) for d in targets}) == T  # distinct targets
    assert all(torch.equal(d.x[:K], targets[0].x[:K]) for d in targets)  # shared context


def test_episodes_are_seeded_per_image(tmp_path):
    T = EPISODE_SIZES["digits"][1]
    full = ImageCompletion(str(tmp_path), images=range(6))
    subset = ImageCompletion(str(tmp_path), images=[5, 2])
    assert torch.equal(subset[0].x, full[5 * T].x) and torch.equal(subset[T].x, full[2 * T].x)
    other = ImageCompletion(str(tmp_path), images=[5, 2], seed=1)
    assert not torch.equal(other[0].x, subset[0].x)
    test = ImageCompletion(str(tmp_path), train=False, images=[5])
    assert not torch.equal(test[0].x[:, :2], subset[0].x[:, :2])  # own draws per file


def test_invalid_arguments(tmp_path):
    with pytest.raises(ValueError, match="'source' must be one of"):
        ImageCompletion(str(tmp_path), source="svhn")
    with pytest.raises(ValueError, match="exceeds the 64 items"):
        ImageCompletion(str(tmp_path), num_context=60, images=[0])
    with pytest.raises(ValueError, match="'images' must be non-empty indices below 360"):
        ImageCompletion(str(tmp_path), train=False, images=[360])


def test_mnist_files_and_missing_files(tmp_path):
    with pytest.raises(FileNotFoundError, match="ossci-datasets.s3.amazonaws.com/mnist"):
        ImageCompletion(str(tmp_path), source="mnist")
    write_fake_mnist(str(tmp_path / "raw"), num=3)
    dataset = ImageCompletion(str(tmp_path), source="mnist")
    assert len(dataset) == 3 * 200 and dataset[0].x.shape == (51, 4)
    assert repr(dataset) == ("ImageCompletion(600, source='mnist', train=True, images=3, "
                             "num_context=50, num_targets=200)")


def test_cifar100_in_grey(tmp_path, monkeypatch):
    # The MD5 sums of the real files cannot match tiny fakes: skip that check only.
    monkeypatch.setattr(torchvision.datasets.cifar, "check_integrity", lambda *args: True)
    write_fake_cifar100(str(tmp_path / "raw"), num_train=2, num_test=1)
    dataset = ImageCompletion(str(tmp_path), source="cifar100", num_targets=4)
    rgb = source_images("cifar100", str(tmp_path / "raw"), train=True)[1]
    data = dataset[4]  # image 1, target 0
    luma = rgb.astype(np.float64) @ (0.299, 0.587, 0.114) / 255.0
    assert data.x.shape == (101, 4)
    assert data.y.item() == pytest.approx(_pixel(luma, data.x[-1, :2].tolist()), abs=1e-6)
