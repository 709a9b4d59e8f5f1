r"""Every synthetic set task of "Matrix Zonotopic Attention", with exact
ground truth, as cached PyG datasets.

.. code-block:: python

    from mzattn.datasets.synthetic import load_task, load_splits, TASKS

    train = load_task("meb", split="train", d=16, num_train=2000)
    train, val, test = load_splits("task_g", seed=1, normalize=True)

The targets are plain NumPy functions (:mod:`.geometry`, :mod:`.rotations`,
:mod:`.statistics`, :mod:`.tdof`) that can be called on any points.
"""
from .dataset import VERSION, SyntheticSetDataset, cache_key, default_root, load_splits, load_task
from .geometry import (
    Ball,
    chamfer_distance,
    diameter,
    furthest_first_cost,
    hull_volume,
    k_smallest_sum,
    knn_radius,
    meb_radius,
    minimum_enclosing_ball,
    mst_weight,
)
from .rotations import apply_rotation, post_alignment_chamfer, rotation_matrix
from .statistics import (
    cov_frobenius,
    mahalanobis_distance,
    pca_reconstruction_error,
    set_reduction,
    sum_of_dimension_maxima,
)
from .tasks import (
    ALIASES,
    SPLITS,
    SWEEPS,
    TABLE15_NOISES,
    TABLE16_TEST_SIZES,
    TABLE25_SCALES,
    TASKS,
    TaskConfig,
    get_config,
)
from .tdof import quadratic_tdof

__all__ = [
    "ALIASES",
    "Ball",
    "SPLITS",
    "SWEEPS",
    "SyntheticSetDataset",
    "TABLE15_NOISES",
    "TABLE16_TEST_SIZES",
    "TABLE25_SCALES",
    "TASKS",
    "TaskConfig",
    "VERSION",
    "apply_rotation",
    "cache_key",
    "chamfer_distance",
    "cov_frobenius",
    "default_root",
    "diameter",
    "furthest_first_cost",
    "get_config",
    "hull_volume",
    "k_smallest_sum",
    "knn_radius",
    "load_splits",
    "load_task",
    "mahalanobis_distance",
    "meb_radius",
    "minimum_enclosing_ball",
    "mst_weight",
    "pca_reconstruction_error",
    "post_alignment_chamfer",
    "quadratic_tdof",
    "rotation_matrix",
    "set_reduction",
    "sum_of_dimension_maxima",
]
