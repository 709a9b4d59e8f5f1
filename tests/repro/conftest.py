import pytest
from mzattn.repro.training.cells import RunOptions


@pytest.fixture(scope="session")
def data_root(tmp_path_factory):
    r"""One dataset cache for every harness test."""
    return str(tmp_path_factory.mktemp("synthetic"))


@pytest.fixture()
def options(data_root):
    return RunOptions(accelerator="cpu", progress=False, data_root=data_root)
