"""mzattn: Matrix Zonotopic Attention — baselines, datasets and reproduction harness."""

__version__ = "0.1.0"
