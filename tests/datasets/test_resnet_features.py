import glob
import os
import pickle

import numpy as np
import pytest
import torch
import torchvision
from mzattn.datasets._io import load_images
from mzattn.datasets.geometric_targets import geometric_targets
from mzattn.datasets.resnet_features import (
    TABLE32_TARGETS,
    ResNetFeatureClouds,
    layer3_point_clouds,
    preprocess,
    weights_path,
)
from mzattn.datasets.synthetic.geometry import furthest_first_cost, mst_weight


def write_fake_cifar100(root, num_train=6, num_test=3, seed=0):
    r"""CIFAR-100 in its on-disk format (``cifar-100-python/{train,test,meta}``
    pickles of ``data [N, 3072] uint8`` and ``fine_labels``)."""
    rng = np.random.default_rng(seed)
    folder = os.path.join(root, "cifar-100-python")
    os.makedirs(folder, exist_ok=True)
    for name, n in (("train", num_train), ("test", num_test)):
        batch = {"data": rng.integers(0, 256, size=(n, 3072), dtype=np.uint8),
                 "fine_labels": [int(v) for v in rng.integers(0, 100, size=n)],
                 "coarse_labels": [0] * n, "filenames": [f"{i}.png" for i in range(n)]}
        with open(os.path.join(folder, name), "wb") as f:
            pickle.dump(batch, f)
    with open(os.path.join(folder, "meta"), "wb") as f:
        pickle.dump({"fine_label_names": [f"c{i}" for i in range(100)],
                     "coarse_label_names": [f"s{i}" for i in range(20)]}, f)


@pytest.fixture
def fake_cifar(tmp_path, monkeypatch):
    # The MD5 sums of the real files cannot match tiny fakes: skip that check only.
    monkeypatch.setattr(torchvision.datasets.cifar, "check_integrity", lambda *args: True)
    write_fake_cifar100(str(tmp_path / "raw"))
    return tmp_path


@pytest.fixture
def fake_hub(tmp_path, monkeypatch):
    r"""A torch hub cache holding random-weight ResNet-18 'ImageNet' weights."""
    monkeypatch.setattr(torch.hub, "get_dir", lambda: str(tmp_path / "hub"))
    path, _ = weights_path("resnet18")
    os.makedirs(os.path.dirname(path))
    torch.manual_seed(0)
    torch.save(torchvision.models.resnet18(weights=None).state_dict(), path)
    return path


def test_layer3_point_clouds_matches_torchvision_layers():
    torch.manual_seed(0)
    model = torchvision.models.resnet18(weights=None).eval()
    images = torch.randn(2, 3, 96, 96)
    clouds = layer3_point_clouds(model, images)
    assert clouds.shape == (2, 16, 256)
    trunk = torch.nn.Sequential(*list(model.children())[:7])  # conv1 ... layer3
    with torch.no_grad():
        fmap = trunk(images)  # [2, 256, 6, 6]
    # 6x6 -> 4x4 adaptive pooling: cell (0, 0) averages rows/cols 0-1.
    torch.testing.assert_close(clouds[:, 0], fmap[:, :, :2, :2].mean((-2, -1)))
    torch.testing.assert_close(clouds[:, 15], fmap[:, :, 4:, 4:].mean((-2, -1)))
    with pytest.raises(ValueError, match="at least 64 pixels"):
        layer3_point_clouds(model, torch.randn(1, 3, 32, 32))


def test_preprocess_normalises_like_imagenet():
    images = np.full((2, 32, 32, 3), 255, dtype=np.uint8)
    out = preprocess(images, 64)
    assert out.shape == (2, 3, 64, 64)
    expected = (1 - torch.tensor([0.485, 0.456, 0.406])) / torch.tensor([0.229, 0.224, 0.225])
    torch.testing.assert_close(out[0, :, 10, 10], expected)


def test_geometric_targets_use_the_synthetic_geometry():
    points = torch.rand(16, 256)
    y = geometric_targets(points, ("furthest", "mst"))
    assert y.shape == (1, 2)
    P = points.double().numpy()
    torch.testing.assert_close(y, torch.tensor([[furthest_first_cost(P, 5), mst_weight(P)]],
                                               dtype=torch.float32))


def test_missing_weights_name_path_and_url(tmp_path, monkeypatch):
    monkeypatch.setattr(torch.hub, "get_dir", lambda: str(tmp_path / "hub"))
    path, url = weights_path("resnet50")
    assert path == str(tmp_path / "hub" / "checkpoints" / "resnet50-0676ba61.pth")
    write_fake_cifar100(str(tmp_path / "raw"))
    monkeypatch.setattr(torchvision.datasets.cifar, "check_integrity", lambda *args: True)
    with pytest.raises(FileNotFoundError) as info:
        ResNetFeatureClouds(str(tmp_path), backbone="resnet50", image_size=64)
    assert path in str(info.value) and url in str(info.value)


def test_missing_cifar_names_folder_and_url(tmp_path):
    with pytest.raises(FileNotFoundError, match="cifar-100-python.tar.gz") as info:
        ResNetFeatureClouds(str(tmp_path))
    assert os.path.join(str(tmp_path), "raw", "cifar-100-python") in str(info.value)
    with pytest.raises(FileNotFoundError, match="cifar-100-python"):
        load_images("cifar100", str(tmp_path), train=True)


def test_resnet_feature_clouds(fake_cifar, fake_hub):
    root = str(fake_cifar)
    dataset = ResNetFeatureClouds(root, num_images=5, image_size=64, device="cpu")
    assert len(dataset) == 5
    data = dataset[0]
    assert data.x.shape == (16, 256) and data.y.shape == (1, len(TABLE32_TARGETS))
    assert bool((data.x >= 0).all())  # post-ReLU features
    images, labels = load_images("cifar100", os.path.join(root, "raw"), train=True)
    assert data.label.tolist() == [int(labels[0])]
    # Features equal a direct forward pass of the cached weights.
    model = torchvision.models.resnet18(weights=None)
    model.load_state_dict(torch.load(fake_hub, weights_only=True))
    expected = layer3_point_clouds(model.eval(), preprocess(images[:1], 64))[0]
    torch.testing.assert_close(data.x, expected, atol=1e-4, rtol=1e-4)
    torch.testing.assert_close(data.y, geometric_targets(data.x, TABLE32_TARGETS))
    summary = dataset.summary()
    assert summary["num_items"] == 5 and summary["dim"] == 256 and summary["num_points"] == 16
    # Another target selection reuses the cached features (weights not needed).
    os.remove(fake_hub)
    other = ResNetFeatureClouds(root, targets=["diameter"], num_images=5, image_size=64)
    assert other[0].y.shape == (1, 1) and torch.equal(other[0].x, data.x)
    with pytest.raises(FileNotFoundError, match="resnet18-f37072fd.pth"):
        ResNetFeatureClouds(root, train=False, num_images=2, image_size=64)
    with pytest.raises(ValueError, match="hull"):
        ResNetFeatureClouds(root, targets=["hull"])
    with pytest.raises(ValueError, match="image_size"):
        ResNetFeatureClouds(root, image_size=32)


def test_table32_knn_radius_is_the_median_over_points():
    from mzattn.datasets.synthetic import knn_radius
    points = torch.randn(16, 6, dtype=torch.float64)
    value = geometric_targets(points, ["knn_radius"]).item()
    P = points.numpy()
    assert value == pytest.approx(knn_radius(P, 5, "median"), rel=1e-6)
    assert value != pytest.approx(knn_radius(P, 5, "mean"), rel=1e-6)


def test_a_truncated_feature_cache_is_set_aside_and_computed_again(fake_cifar, fake_hub, caplog):
    root = str(fake_cifar)
    first = ResNetFeatureClouds(root, num_images=3, image_size=64, device="cpu")
    features = first._features_path
    with open(features, "rb") as f:
        whole = f.read()
    with open(features, "wb") as f:
        f.write(whole[:-30])
    other = ResNetFeatureClouds(root, targets=["diameter"], num_images=3, image_size=64,
                                device="cpu")  # reads the feature cache
    torch.testing.assert_close(other.x, first.x)
    (aside,) = glob.glob(f"{features}.corrupt-*")
    assert f"{features}: unreadable or unsafe cache file" in caplog.text
    assert f"moved to {aside}, rebuilding the cache" in caplog.text
