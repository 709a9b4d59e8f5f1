import warnings

import pytest
import torch

warnings.filterwarnings('ignore', category=FutureWarning)


@pytest.fixture(autouse=True)
def _seed():
    torch.manual_seed(12345)
