import warnings

import pytest
import torch

warnings.filterwarnings('ignore', category=FutureWarning)


@pytest.fixture(autouse=True)
def _seed():
    torch.manual_seed(12345)


def pytest_addoption(parser):
    parser.addoption("--docker-base-image", default=None,
                     help="base image of the docker_engine tests (default: "
                          "$MZATTN_DOCKER_BASE_IMAGE, else docker/Dockerfile's pinned tag)")
