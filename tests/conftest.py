import os
import warnings

# Unit tests run small tensors: one torch thread per test process (and per process a test
# starts) is faster than several, and never waits at a barrier for a busy core. `make test`
# runs one test process per core (pytest-xdist). Set OMP_NUM_THREADS to choose otherwise.
os.environ.setdefault('OMP_NUM_THREADS', '1')

import pytest  # noqa: E402
import torch  # noqa: E402

torch.set_num_threads(int(os.environ['OMP_NUM_THREADS']))
warnings.filterwarnings('ignore', category=FutureWarning)


@pytest.fixture(autouse=True)
def _seed():
    torch.manual_seed(12345)


def pytest_addoption(parser):
    parser.addoption("--docker-base-image", default=None,
                     help="base image of the docker_engine tests (default: "
                          "$MZATTN_DOCKER_BASE_IMAGE, else docker/Dockerfile's pinned tag)")
