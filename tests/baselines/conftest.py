import pytest
import torch


@pytest.fixture
def one_thread():
    """Runs a test with one intra-op thread (the CPU is shared)."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)
