r"""Exact geometric targets of point clouds (Tables 31-32), shared by the
real-data loaders: the target names, their validation, the processed-file
tag of a selection, and the targets of one set, computed with
:mod:`mzattn.datasets.synthetic.geometry`."""
from collections.abc import Sequence

import torch
from torch import Tensor

from .synthetic import geometry

#: k of the k-center (furthest-first) and k-NN radius targets (Table 32).
KCENTER_K = 5
KNN_K = 5
#: Geometric set targets of Tables 31-32, by name, computed with
#: :mod:`mzattn.datasets.synthetic.geometry` (name of the function, extra
#: arguments); the k-NN radius is the median over the points (Table 32:
#: "k=5 median k-NN radius").
GEOMETRIC_TARGETS: dict[str, tuple[str, tuple[int, ...]]] = {
    "meb": ("meb_radius", ()),
    "hull": ("hull_volume", ()),
    "mst": ("mst_weight", ()),
    "diameter": ("diameter", ()),
    "furthest": ("furthest_first_cost", (KCENTER_K,)),
    "knn_radius": ("knn_radius", (KNN_K, "median")),
}


TARGETS_VERSION = 2
r"""Version of the target definitions, part of every processed file name that
stores targets (2: the k-NN radius became the median over the points)."""


def targets_tag(targets: Sequence[str]) -> str:
    r"""The processed-file tag of a target selection (names and
    :obj:`TARGETS_VERSION`)."""
    return "-".join(targets) + f"_t{TARGETS_VERSION}"


def check_geometric_targets(targets: Sequence[str]) -> tuple[str, ...]:
    r"""Validates a selection of :obj:`GEOMETRIC_TARGETS` names."""
    if isinstance(targets, str):
        targets = (targets,)
    unknown = [t for t in targets if t not in GEOMETRIC_TARGETS]
    if unknown or not targets:
        raise ValueError(f"targets must be a non-empty subset of {sorted(GEOMETRIC_TARGETS)}, "
                         f"got {list(targets)}")
    return tuple(targets)


def geometric_targets(points: Tensor, targets: Sequence[str]) -> Tensor:
    r"""The exact geometric targets :obj:`targets` (names of
    :obj:`GEOMETRIC_TARGETS`) of one point set :math:`(n, d)`, as a
    :math:`(1, T)` float tensor (computed in float64)."""
    P = points.double().numpy()
    values = []
    for name in targets:
        function, args = GEOMETRIC_TARGETS[name]
        values.append(getattr(geometry, function)(P, *args))
    return torch.tensor([values], dtype=torch.float32)
