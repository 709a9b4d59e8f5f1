r"""Neural-Process image completion episodes (paper App. D.5.6, after the
Attentive Neural Process of Kim et al., 2019)."""
from collections.abc import Callable, Sequence

import numpy as np
from torch_geometric.data import Data

from ._io import load_images
from .episodes import EpisodeSets, draw_episode, episode_tokens
from .pixel_clouds import SOURCES, to_gray

#: Context pixels :math:`K` and target pixels :math:`T` per image of each
#: source: the paper's MNIST (50, 200) and CIFAR-100 (100, 300), MNIST's for
#: Fashion-MNIST, and (8, 8) of the 64 pixels of the 8x8 offline digits
#: (12.5% of the pixels as context; MNIST 6%, CIFAR-100 10%).
EPISODE_SIZES: dict[str, tuple[int, int]] = {
    "digits": (8, 8),
    "mnist": (50, 200),
    "fashion_mnist": (50, 200),
    "cifar100": (100, 300),
}


def source_images(source: str, raw_dir: str, train: bool) -> np.ndarray:
    r"""The ``uint8`` images of :obj:`source` (training or test file):
    :math:`(N, H, W)`, or :math:`(N, H, W, 3)` for CIFAR-100, as read by
    :func:`~mzattn.datasets._io.load_images` (the digits are scikit-learn's,
    the other sources are read from :obj:`raw_dir`, never downloaded)."""
    if source not in SOURCES:
        raise ValueError(f"'source' must be one of {SOURCES} (got {source!r})")
    return load_images(source, raw_dir, train)[0]


def pixel_coordinates(height: int, width: int) -> np.ndarray:
    r"""Pixel centres in :math:`[-1, 1]^2` in row-major order, :math:`x` to
    the right and :math:`y` up, shape :math:`(HW, 2)`."""
    y, x = np.meshgrid(np.linspace(1.0, -1.0, height), np.linspace(-1.0, 1.0, width),
                       indexing="ij")
    return np.stack([x.ravel(), y.ravel()], axis=-1)


class ImageCompletion(EpisodeSets):
    r"""Neural-Process image completion (App. D.5.6): each image is a function
    :math:`f: (x, y) \mapsto` intensity; an episode shows :math:`K` context
    pixels and asks for the intensity at :math:`T` other pixels, predicted
    with a Gaussian likelihood.

    The harness predicts one value per set, so each image gives :math:`T`
    sets that share its context (:class:`~mzattn.datasets.episodes.EpisodeSets`):
    :math:`K` context tokens :math:`[x, y, v, 0]` and one target token
    :math:`[x, y, 0, 1]`, label :math:`v`. Coordinates are pixel centres in
    :math:`[-1, 1]^2` (:func:`pixel_coordinates`); :math:`v` is the grey
    intensity in :math:`[0, 1]`, the luma of the RGB pixel for CIFAR-100 (the
    paper does not say how it treats colour; grey keeps one token layout and
    one Gaussian per target for every source). Context and targets are
    distinct pixels drawn uniformly per image, with a generator seeded by
    :obj:`(seed, train, image index)`: an image has the same episode in every
    subset, and the episodes are fixed across epochs.

    Sources: ``"digits"`` (scikit-learn's bundled 8x8 digits; offline) and,
    read with torchvision from ``root/raw`` without downloading,
    ``"mnist"``, ``"fashion_mnist"`` and ``"cifar100"`` (missing files raise
    a :class:`FileNotFoundError` naming the folder and the URL).

    Args:
        root (str): Root folder; the image files are in ``root/raw``.
        source (str, optional): Image source. (default: :obj:`"digits"`)
        train (bool, optional): Training or test file. (default: :obj:`True`)
        num_context (int, optional): Context pixels :math:`K`;
            :obj:`EPISODE_SIZES` of the source if :obj:`None`.
            (default: :obj:`None`)
        num_targets (int, optional): Target pixels :math:`T`;
            :obj:`EPISODE_SIZES` of the source if :obj:`None`.
            (default: :obj:`None`)
        images (Sequence[int], optional): Indices of the file's images, one
            episode each, in this order; every image if :obj:`None`.
            (default: :obj:`None`)
        seed (int, optional): Seed of the pixel draws. (default: :obj:`0`)
        transform (callable, optional): Applied to every set on access.
            (default: :obj:`None`)

    Attributes:
        images (np.ndarray): The file's image index of every episode.

    Shapes:
        - **x** :math:`(K + 1, 4)`, **y** :math:`(1, 1)`

    **STATS:**

    .. list-table::
        :widths: 20 20 10 10
        :header-rows: 1

        * - Source
          - #images (train / test)
          - image
          - :math:`(K, T)`
        * - digits
          - 1,437 / 360
          - 8x8
          - (8, 8)
        * - MNIST, Fashion-MNIST
          - 60,000 / 10,000
          - 28x28
          - (50, 200)
        * - CIFAR-100 (grey)
          - 50,000 / 10,000
          - 32x32
          - (100, 300)
    """
    def __init__(
        self,
        root: str,
        source: str = "digits",
        train: bool = True,
        num_context: int | None = None,
        num_targets: int | None = None,
        images: Sequence[int] | None = None,
        seed: int = 0,
        transform: Callable[[Data], Data] | None = None,
    ) -> None:
        super().__init__(root, transform)
        self.source, self.train, self.seed = source, train, seed
        gray = to_gray(source_images(source, self.raw_dir, train))  # [N, H, W]
        images = np.arange(len(gray)) if images is None else np.asarray(images, dtype=np.int64)
        if images.size == 0 or images.min() < 0 or images.max() >= len(gray):
            raise ValueError(f"'images' must be non-empty indices below {len(gray)} "
                             f"(the images of the {source} file)")
        default = EPISODE_SIZES[source]
        num_context = default[0] if num_context is None else num_context
        num_targets = default[1] if num_targets is None else num_targets
        coords = pixel_coordinates(*gray.shape[1:])
        values = gray.reshape(len(gray), -1)  # [N, HW]
        self.images = images
        episodes = []
        for i in images:
            rng = np.random.default_rng([seed, int(train), int(i)])
            episodes.append(episode_tokens(coords, values[i], *draw_episode(
                rng, len(coords), num_context, num_targets)))
        self.set_episodes(episodes)

    def __repr__(self) -> str:
        return (f"{type(self).__name__}({len(self)}, source={self.source!r}, "
                f"train={self.train}, images={self.num_episodes}, "
                f"num_context={self.num_context}, num_targets={self.num_targets})")
