r"""Configurations and generators of the paper's synthetic set tasks.

Every task is a frozen dataclass holding the paper's defaults (App. A.2 and
the tables cited in each docstring) whose :meth:`~TaskConfig.sample` draws
one set :math:`x \in \mathbb{R}^{n \times F}` and its exact target
:math:`y \in \mathbb{R}^{T}` from a :class:`numpy.random.Generator`. The
targets are computed by the plain functions of
:mod:`~mzattn.datasets.synthetic.geometry`,
:mod:`~mzattn.datasets.synthetic.rotations`,
:mod:`~mzattn.datasets.synthetic.statistics` and
:mod:`~mzattn.datasets.synthetic.tdof`. :obj:`TASKS` maps every task name to
its default configuration; :func:`get_config` applies overrides.

Where the paper is silent (point scales, cluster spreads, split sizes of the
appendix tasks, how a statistic is reduced to a scalar) the choice is written
in the class docstring and fixed.
"""
import dataclasses
import math
from dataclasses import dataclass
from typing import Any, ClassVar, NamedTuple

import numpy as np
from scipy.spatial.transform import Rotation

from . import geometry, statistics, tdof
from ._validate import check_float, check_int, check_range
from .rotations import apply_rotation
from .samplers import anisotropic_gaussian, gaussian_mixture, set_size

SPLITS = ("train", "val", "test")


class Sample(NamedTuple):
    r"""One generated set: features :obj:`x` [n, F], target :obj:`y` [T] and
    whether its geometry was degenerate (e.g. a flat convex hull)."""
    x: np.ndarray
    y: np.ndarray
    degenerate: bool = False


# ------------------------------------------------------------ base classes


@dataclass(frozen=True)
class TaskConfig:
    r"""Base configuration: split sizes and the sampling interface.

    Args:
        num_train (int, optional): Training sets. (default: :obj:`1000`)
        num_val (int, optional): Validation sets. (default: :obj:`200`)
        num_test (int, optional): Test sets. (default: :obj:`200`)
    """
    FIXED: ClassVar[tuple[str, ...]] = ()  # fields set by the task name
    # fields added after the first cache files: at their default they are left out of the
    # cache key, so the sets cached before they existed stay valid
    LATER: ClassVar[tuple[str, ...]] = ()

    num_train: int = 1000
    num_val: int = 200
    num_test: int = 200

    def __post_init__(self) -> None:
        self.validate()

    def validate(self) -> None:
        r"""Raises a :class:`ValueError` for impossible parameters."""
        for split in SPLITS:
            check_int(f"num_{split}", self.num_samples(split), minimum=1)

    def num_samples(self, split: str) -> int:
        r"""Number of sets of :obj:`split` (:obj:`"train"`, :obj:`"val"` or
        :obj:`"test"`)."""
        if split not in SPLITS:
            raise ValueError(f"'split' must be one of {SPLITS} (got {split!r})")
        return getattr(self, f"num_{split}")

    def cache_fields(self, split: str) -> dict[str, Any]:
        r"""The fields that determine the sets of :obj:`split` (the other
        splits' sizes are left out, so changing them keeps this split's
        cache)."""
        fields = dataclasses.asdict(self)
        for other in SPLITS:
            fields.pop(f"num_{other}")
        defaults = {f.name: f.default for f in dataclasses.fields(self)}
        for name in self.LATER:
            if fields[name] == defaults[name]:
                fields.pop(name)
        fields["num_samples"] = self.num_samples(split)
        return fields

    @property
    def num_features(self) -> int:
        r"""Feature width :obj:`F` of every set element."""
        raise NotImplementedError

    @property
    def target_dim(self) -> int:
        r"""Target width :obj:`T`."""
        return 1

    def shared(self, rng: np.random.Generator) -> Any:
        r"""State shared by all splits (e.g. the fixed matrices of a target
        function), drawn from a split-independent generator."""
        return None

    def sample(self, rng: np.random.Generator, split: str, shared: Any) -> Sample:
        r"""Draws one set and its target."""
        raise NotImplementedError

    def sample_many(self, rng: np.random.Generator, split: str, shared: Any,
                    count: int) -> list[Sample]:
        r"""Draws :obj:`count` sets (tasks may override it to vectorise)."""
        return [self.sample(rng, split, shared) for _ in range(count)]


@dataclass(frozen=True)
class SetSizeConfig(TaskConfig):
    r"""A task whose sets have :math:`n \sim \mathcal{U}\{n_{min}, \dots,
    n_{max}\}` elements; the test split may use other sizes (size
    generalisation, Table 16).

    Args:
        n_min (int, optional): Smallest set size. (default: :obj:`10`)
        n_max (int, optional): Largest set size. (default: :obj:`30`)
        test_n_min (int, optional): Smallest test-set size, :obj:`None` for
            :obj:`n_min`. (default: :obj:`None`)
        test_n_max (int, optional): Largest test-set size, :obj:`None` for
            :obj:`n_max`. (default: :obj:`None`)
    """
    n_min: int = 10
    n_max: int = 30
    test_n_min: int | None = None
    test_n_max: int | None = None

    def validate(self) -> None:
        super().validate()
        check_int("n_min", self.n_min, minimum=1, reason="sets are never empty")
        check_range("n_min", self.n_min, "n_max", self.n_max)
        low, high = self.size_range("test")
        check_int("test_n_min", low, minimum=1, reason="sets are never empty")
        check_range("test_n_min", low, "test_n_max", high)

    def size_range(self, split: str) -> tuple[int, int]:
        r"""The :obj:`(n_min, n_max)` of :obj:`split`."""
        if split == "test":
            low = self.n_min if self.test_n_min is None else self.test_n_min
            high = self.n_max if self.test_n_max is None else self.test_n_max
            return low, high
        return self.n_min, self.n_max

    def smallest_set(self) -> int:
        r"""The smallest set size any split can draw."""
        return min(self.n_min, self.size_range("test")[0])

    def cache_fields(self, split: str) -> dict[str, Any]:
        fields = super().cache_fields(split)
        fields.pop("test_n_min")
        fields.pop("test_n_max")
        fields["n_min"], fields["n_max"] = self.size_range(split)
        return fields

    def draw_size(self, rng: np.random.Generator, split: str) -> int:
        return set_size(rng, *self.size_range(split))


def _check_dim(config: Any, minimum: int = 1) -> None:
    check_int("d", config.d, minimum=minimum)


def _check_choice(name: str, value: Any, choices: tuple[str, ...]) -> None:
    if value not in choices:
        raise ValueError(f"'{name}' must be one of {choices} (got {value!r})")


CHAMFER_ALIGNMENTS = ("aligned", "unaligned")
r"""Task F's Chamfer distance: after undoing the pair's rotation
(App. A.2's "post-alignment") or between the clouds as given."""


# ---------------------------------------------------- element-wise reductions


@dataclass(frozen=True)
class SetReductionConfig(SetSizeConfig):
    r"""Sets of i.i.d. :math:`\mathcal{N}(0, I_d)` vectors with a reduction
    target (:func:`~mzattn.datasets.synthetic.statistics.set_reduction`).

    * :obj:`task_a` (Task A, App. A.2): :math:`y = \sum_i \max_j x_{ij}`,
      :math:`d = 16`, :math:`n \sim \mathcal{U}(10, 100)`, 10K/2K/2K sets.
    * :obj:`set_max`, :obj:`set_sum`, :obj:`set_median`, :obj:`set_range`
      (Tables 25, 29): the max / sum / median / range of all entries, by
      default at Table 29's scale :math:`d = 16`, :math:`n \in [10, 50]`
      (Table 25's larger scales: :obj:`TABLE25_SCALES`). The paper gives no
      split sizes for them; we use 5K/1K/1K. Nor does it say how a set of
      vectors reduces to one number: :obj:`reduction` chooses the reading
      (:obj:`~mzattn.datasets.synthetic.statistics.REDUCTION_AXES`).

    Args:
        target (str): One of
            :obj:`~mzattn.datasets.synthetic.statistics.REDUCTIONS`.
        d (int, optional): Element dimension. (default: :obj:`16`)
        reduction (str, optional): :obj:`"entries"` (over all :math:`n
            \cdot d` entries), :obj:`"per-dim-sum"` (:math:`\sum_j
            \mathrm{red}_i x_{ij}`) or :obj:`"per-element-sum"`
            (:math:`\sum_i \mathrm{red}_j x_{ij}`); Task A's target is
            already per coordinate and takes only :obj:`"entries"`.
            (default: :obj:`"entries"`)
    """
    FIXED: ClassVar[tuple[str, ...]] = ("target",)
    LATER: ClassVar[tuple[str, ...]] = ("reduction",)

    target: str = "max"
    d: int = 16
    reduction: str = "entries"
    n_max: int = 50
    num_train: int = 5000
    num_val: int = 1000
    num_test: int = 1000

    def validate(self) -> None:
        super().validate()
        _check_dim(self)
        if self.target not in statistics.REDUCTIONS:
            raise ValueError(f"'target' must be one of {statistics.REDUCTIONS} "
                             f"(got {self.target!r})")
        _check_choice("reduction", self.reduction, statistics.REDUCTION_AXES)
        if self.target == "sum_of_dimension_maxima" and self.reduction != "entries":
            raise ValueError(f"Task A's target is already summed over the coordinates: "
                             f"'reduction' must be 'entries' (got {self.reduction!r})")

    @property
    def num_features(self) -> int:
        return self.d

    def sample(self, rng, split, shared):
        X = rng.standard_normal((self.draw_size(rng, split), self.d))
        y = statistics.set_reduction(X, self.target, self.reduction)
        return Sample(X, np.array([y]))


# ------------------------------------------------------- set matching (B, F)


@dataclass(frozen=True)
class ChamferMatchingConfig(SetSizeConfig):
    r"""Task B, Chamfer set matching (App. A.2, Tables 15, 16).

    Two clouds :math:`A, B \subset \mathbb{R}^3` of :math:`n \sim
    \mathcal{U}\{10, \dots, 30\}` points each, :math:`A \sim
    \mathcal{N}(0, I_3)`. With probability :obj:`copy_prob`, :math:`B` is a
    rotated noisy copy, :math:`b_i = R a_i + \sigma \varepsilon_i` (random
    axis, angle :math:`\mathcal{U}(-\text{max\_angle}, \text{max\_angle})`,
    our choice), otherwise an independent cloud of its own size. Input
    :math:`[a_i, 0]` and :math:`[b_j, 1]` (:math:`d_{in} = 4`), target the
    symmetric Chamfer distance
    (:func:`~mzattn.datasets.synthetic.geometry.chamfer_distance`).
    5K/1K/1K sets. Table 15 sweeps :obj:`noise` (:obj:`TABLE15_NOISES`; the
    default 0.3 is the row shared with Table 16), Table 16 tests on larger
    clouds (:obj:`test_n_min`, :obj:`test_n_max`, :obj:`TABLE16_TEST_SIZES`;
    sizes are per cloud).

    Args:
        noise (float, optional): Noise :math:`\sigma` of the copies. (default: :obj:`0.3`)
        copy_prob (float, optional): Share of rotated copies. (default: :obj:`0.5`)
        max_angle (float, optional): Largest rotation angle. (default: :obj:`pi / 4`)
        chamfer_reduction (str, optional): :obj:`"mean"` or :obj:`"sum"` over
            each direction's nearest-neighbour distances, a reading
            (:func:`~mzattn.datasets.synthetic.geometry.chamfer_distance`).
            (default: :obj:`"mean"`)
    """
    LATER: ClassVar[tuple[str, ...]] = ("chamfer_reduction",)

    noise: float = 0.3
    copy_prob: float = 0.5
    max_angle: float = math.pi / 4
    chamfer_reduction: str = "mean"
    num_train: int = 5000
    num_val: int = 1000
    num_test: int = 1000

    def validate(self) -> None:
        super().validate()
        check_float("noise", self.noise, minimum=0.0)
        check_float("copy_prob", self.copy_prob, minimum=0.0)
        if self.copy_prob > 1.0:
            raise ValueError(f"'copy_prob' is a probability and must be <= 1 "
                             f"(got {self.copy_prob})")
        check_float("max_angle", self.max_angle, minimum=0.0)
        _check_choice("chamfer_reduction", self.chamfer_reduction, geometry.CHAMFER_REDUCTIONS)

    @property
    def num_features(self) -> int:
        return 4

    def sample(self, rng, split, shared):
        A = rng.standard_normal((self.draw_size(rng, split), 3))
        if rng.random() < self.copy_prob:
            axis = rng.standard_normal(3)
            angle = rng.uniform(-self.max_angle, self.max_angle)
            R = Rotation.from_rotvec(angle * axis / np.linalg.norm(axis)).as_matrix()
            B = A @ R.T + self.noise * rng.standard_normal(A.shape)
        else:
            B = rng.standard_normal((self.draw_size(rng, split), 3))
        x = np.concatenate([np.c_[A, np.zeros(len(A))], np.c_[B, np.ones(len(B))]])
        return Sample(x, np.array([geometry.chamfer_distance(A, B, self.chamfer_reduction)]))


@dataclass(frozen=True)
class RotationMatchingConfig(SetSizeConfig):
    r"""Task F, rotation-dependent set matching (App. A.2, Table 4, D.4.3).

    :math:`A \sim \mathcal{N}(0, I_d)` with :math:`n \sim \mathcal{U}\{10,
    \dots, 30\}` points (the paper gives no size; we use Task B's), and
    :math:`B = A R^\top + \varepsilon`, :math:`\varepsilon \sim
    \mathcal{N}(0, 0.1^2 I)` (drawn as :math:`\varepsilon = E R^\top` with
    :math:`E \sim \mathcal{N}(0, 0.1^2 I)`, the same law), where :math:`R` is the product of Givens
    rotations in all :math:`d(d-1)/2` planes with angles
    :math:`\mathcal{U}(-\text{max\_angle}, \text{max\_angle})` drawn per set
    (:mod:`~mzattn.datasets.synthetic.rotations`). Input :math:`[a_i, 0]`,
    :math:`[b_i, 1]` (:math:`d_{in} = d + 1`); target the Chamfer distance
    after undoing :math:`R`
    (:func:`~mzattn.datasets.synthetic.rotations.post_alignment_chamfer`),
    as App. A.2 reads, or, with :obj:`chamfer="unaligned"`, between
    :math:`A` and :math:`B` as given; :obj:`chamfer_reduction` chooses the
    mean or the summed form
    (:func:`~mzattn.datasets.synthetic.geometry.chamfer_distance`). Both
    are readings (``docs/readings.md``).
    5K/1K/2K sets; :math:`d \in \{8, \dots, 512\}` (:obj:`SWEEPS`).

    Args:
        d (int, optional): Dimension, :obj:`d >= 2`. (default: :obj:`8`)
        noise (float, optional): Noise standard deviation. (default: :obj:`0.1`)
        max_angle (float, optional): Largest Givens angle. (default: :obj:`pi`)
        chamfer (str, optional): :obj:`"aligned"` (after undoing :math:`R`) or
            :obj:`"unaligned"`. (default: :obj:`"aligned"`)
        chamfer_reduction (str, optional): :obj:`"mean"` or :obj:`"sum"`.
            (default: :obj:`"mean"`)
    """
    LATER: ClassVar[tuple[str, ...]] = ("chamfer", "chamfer_reduction")

    d: int = 8
    noise: float = 0.1
    max_angle: float = math.pi
    chamfer: str = "aligned"
    chamfer_reduction: str = "mean"
    num_train: int = 5000
    num_val: int = 1000
    num_test: int = 2000

    # Sets rotated together in one vectorised pass (bounds the memory of the
    # [batch, d (d - 1) / 2] angle array at d = 512 to ~34 MB).
    BATCH: ClassVar[int] = 32

    def validate(self) -> None:
        super().validate()
        _check_dim(self, minimum=2)
        check_float("noise", self.noise, minimum=0.0)
        check_float("max_angle", self.max_angle, minimum=0.0)
        _check_choice("chamfer", self.chamfer, CHAMFER_ALIGNMENTS)
        _check_choice("chamfer_reduction", self.chamfer_reduction, geometry.CHAMFER_REDUCTIONS)

    @property
    def num_features(self) -> int:
        return self.d + 1

    def sample(self, rng, split, shared):
        return self.sample_many(rng, split, shared, 1)[0]

    def sample_many(self, rng, split, shared, count):
        out = []
        for start in range(0, count, self.BATCH):
            out.extend(self._sample_batch(rng, split, min(self.BATCH, count - start)))
        return out

    def _sample_batch(self, rng, split, count):
        sizes = [self.draw_size(rng, split) for _ in range(count)]
        A = np.zeros((count, max(sizes), self.d))  # zero-padded
        for i, n in enumerate(sizes):
            A[i, :n] = rng.standard_normal((n, self.d))
        angles = rng.uniform(-self.max_angle, self.max_angle,
                             (count, self.d * (self.d - 1) // 2))
        # B = (A + E) R^T = A R^T + E R^T with E R^T ~ N(0, noise^2 I) exactly
        # (isotropy), so the aligned cloud B R = A + E needs no second rotation.
        aligned = A + self.noise * rng.standard_normal(A.shape)
        B = apply_rotation(aligned, angles)
        other = aligned if self.chamfer == "aligned" else B
        out = []
        for i, n in enumerate(sizes):
            x = np.concatenate([np.c_[A[i, :n], np.zeros(n)], np.c_[B[i, :n], np.ones(n)]])
            y = geometry.chamfer_distance(A[i, :n], other[i, :n], self.chamfer_reduction)
            out.append(Sample(x, np.array([y])))
        return out


# ------------------------------------------------ point-cloud geometry tasks


def unit_scaled(P: np.ndarray) -> np.ndarray:
    r"""The set :obj:`P` of shape :obj:`[n, d]` centred on its mean and
    divided by its root-mean-square distance to it, so that the trace of its
    (biased) covariance is 1; a set of identical points is only centred."""
    P = P - P.mean(0)
    rms = float(np.sqrt((P * P).sum(1).mean()))
    return P / rms if rms > 0 else P


@dataclass(frozen=True)
class PointCloudConfig(SetSizeConfig):
    r"""A geometric target on a Gaussian-mixture point cloud
    (:func:`~mzattn.datasets.synthetic.samplers.gaussian_mixture`: 1 to
    :obj:`max_clusters` clusters, centres :math:`\mathcal{N}(0,
    \text{center\_scale}^2 I)`, spreads :math:`\mathcal{U}(\text{spread\_min},
    \text{spread\_max})`). The paper gives no split sizes outside Task G; we
    use Task G's 5K/1K/2K for all of them.

    Args:
        d (int, optional): Dimension. (default: :obj:`8`)
        max_clusters (int, optional): Largest number of clusters. (default: :obj:`3`)
        center_scale (float, optional): Spread of the cluster centres. (default: :obj:`3.0`)
        spread_min (float, optional): Smallest cluster spread. (default: :obj:`0.5`)
        spread_max (float, optional): Largest cluster spread. (default: :obj:`1.5`)
        unit_sets (bool, optional): Centre every set on its mean and scale it
            to unit root-mean-square distance from it (its covariance trace
            becomes 1) before the target is computed; one of the readings of
            the paper's MEB distribution studied by
            :obj:`mzattn-repro table3-sensitivity`. (default: :obj:`False`)
    """
    d: int = 8
    max_clusters: int = 3
    center_scale: float = 3.0
    spread_min: float = 0.5
    spread_max: float = 1.5
    LATER: ClassVar[tuple[str, ...]] = ("unit_sets",)

    unit_sets: bool = False
    num_train: int = 5000
    num_val: int = 1000
    num_test: int = 2000

    def validate(self) -> None:
        super().validate()
        _check_dim(self)
        check_int("max_clusters", self.max_clusters, minimum=1)
        check_float("center_scale", self.center_scale, minimum=0.0)
        check_float("spread_min", self.spread_min, minimum=0.0)
        check_range("spread_min", self.spread_min, "spread_max", self.spread_max)
        if not isinstance(self.unit_sets, bool):
            raise ValueError(f"'unit_sets' must be a bool (got {self.unit_sets!r})")

    @property
    def num_features(self) -> int:
        return self.d

    def points(self, rng: np.random.Generator, split: str) -> np.ndarray:
        r"""Draws one point cloud of shape :obj:`[n, d]`."""
        P = gaussian_mixture(rng, self.draw_size(rng, split), self.d,
                             max_clusters=self.max_clusters,
                             center_scale=self.center_scale,
                             spread_range=(self.spread_min, self.spread_max))
        return unit_scaled(P) if self.unit_sets else P

    def with_target(self, P: np.ndarray) -> Sample:
        r"""The set :obj:`P` with its target."""
        raise NotImplementedError

    def sample(self, rng, split, shared):
        return self.with_target(self.points(rng, split))


@dataclass(frozen=True)
class MSTConfig(PointCloudConfig):
    r"""Task G, minimum-spanning-tree weight (App. A.2, Tables 17, 23):
    :math:`n \sim \mathcal{U}\{10, \dots, 30\}` points of a 1-3 cluster
    mixture in :math:`\mathbb{R}^d`, target
    :func:`~mzattn.datasets.synthetic.geometry.mst_weight`; 5K/1K/2K sets,
    :math:`d \in \{8, \dots, 256\}`."""

    def with_target(self, P):
        return Sample(P, np.array([geometry.mst_weight(P)]))


@dataclass(frozen=True)
class MEBConfig(PointCloudConfig):
    r"""Minimum-enclosing-ball radius (Table 3, App. D.4.1): mixtures of
    Gaussians with :math:`n \in [10, 30]`, :math:`d \in \{8, 16, 32\}`,
    target :func:`~mzattn.datasets.synthetic.geometry.meb_radius` (exact)."""

    def with_target(self, P):
        return Sample(P, np.array([geometry.meb_radius(P)]))


@dataclass(frozen=True)
class HullConfig(PointCloudConfig):
    r"""Convex-hull volume (Tables 18, 22, App. D.4.2): :math:`n \in [15, 35]`
    points in :math:`\mathbb{R}^d`, :math:`d \in \{3, 6, 9\}`, volume by
    Qhull (:func:`~mzattn.datasets.synthetic.geometry.hull_volume`). A flat
    cloud gets volume 0 and is counted as degenerate."""
    d: int = 3
    n_min: int = 15
    n_max: int = 35

    def validate(self) -> None:
        super().validate()
        _check_dim(self, minimum=2)
        check_int("n_min", self.smallest_set(), minimum=self.d + 1,
                  reason=f"a hull in d={self.d} needs more than d points")

    def with_target(self, P):
        degenerate = geometry.affine_dimension(P) < self.d
        return Sample(P, np.array([geometry.hull_volume(P)]), degenerate)


SGSP_TARGETS = ("diameter", "knn_radius", "k_smallest_sum", "furthest_first")


@dataclass(frozen=True)
class SGSPConfig(PointCloudConfig):
    r"""Sparse geometric set predicates (Table 24, App. D.4.5) on 1-3 cluster
    mixtures with :math:`n \in [10, 30]`, :math:`d \in \{8, 16, 32\}`:
    :func:`~mzattn.datasets.synthetic.geometry.diameter`,
    :func:`~mzattn.datasets.synthetic.geometry.knn_radius`,
    :func:`~mzattn.datasets.synthetic.geometry.k_smallest_sum` and
    :func:`~mzattn.datasets.synthetic.geometry.furthest_first_cost`. The paper
    gives neither :math:`n` nor :math:`k`; we use :math:`k = 5` (its
    real-data :math:`k`-center uses :math:`k = 5`).

    Args:
        target (str): One of :obj:`SGSP_TARGETS`.
        k (int, optional): Neighbour rank / pair count / centre count. (default: :obj:`5`)
    """
    FIXED: ClassVar[tuple[str, ...]] = ("target",)

    target: str = "diameter"
    k: int = 5

    def validate(self) -> None:
        super().validate()
        if self.target not in SGSP_TARGETS:
            raise ValueError(f"'target' must be one of {SGSP_TARGETS} (got {self.target!r})")
        n = self.smallest_set()
        limit = {"diameter": None, "knn_radius": n - 1,
                 "k_smallest_sum": n * (n - 1) // 2, "furthest_first": n}[self.target]
        check_int("k", self.k, minimum=1, maximum=limit,
                  reason=f"{self.target} on sets of n_min={n} points")

    def target_value(self, P: np.ndarray) -> float:
        if self.target == "diameter":
            return geometry.diameter(P)
        if self.target == "knn_radius":
            return geometry.knn_radius(P, self.k)
        if self.target == "k_smallest_sum":
            return geometry.k_smallest_sum(P, self.k)
        return geometry.furthest_first_cost(P, self.k)

    def with_target(self, P):
        return Sample(P, np.array([self.target_value(P)]))


# ------------------------------------------------------- statistical targets


STATISTICS_TARGETS = ("cov_frobenius", "mahalanobis", "pca_reconstruction")


@dataclass(frozen=True)
class StatisticsConfig(SetSizeConfig):
    r"""Statistical targets of Table 7 on random anisotropic Gaussian sets
    (:func:`~mzattn.datasets.synthetic.samplers.anisotropic_gaussian`; random
    mean, orientation and log-uniform spectrum), :math:`n \in [10, 30]`:

    * :obj:`cov_frobenius` (:math:`d = 8`):
      :func:`~mzattn.datasets.synthetic.statistics.cov_frobenius`.
    * :obj:`mahalanobis` (:math:`d = 8`): the set holds :math:`n` context
      points :math:`[x_i, 0]` and one query :math:`[q, 1]` drawn from the same
      Gaussian (the last row); the target is the query's Mahalanobis distance
      from the context points
      (:func:`~mzattn.datasets.synthetic.statistics.mahalanobis_distance`,
      ridge :obj:`ridge`). Our reduction to a scalar: a per-point average
      would be constant (:math:`\frac1n\sum_i (x_i-\mu)^\top \hat\Sigma^{-1}
      (x_i-\mu) = d`), so one query point is scored.
    * :obj:`pca_reconstruction` (:math:`d = 16`): mean squared error of the
      rank-:obj:`k` PCA reconstruction
      (:func:`~mzattn.datasets.synthetic.statistics.pca_reconstruction_error`).

    The paper gives no sizes; we use 5K/1K/2K sets.

    Args:
        target (str): One of :obj:`STATISTICS_TARGETS`.
        d (int, optional): Dimension. (default: :obj:`8`)
        k (int, optional): PCA components kept. (default: :obj:`4`)
        ridge (float, optional): Mahalanobis covariance ridge. (default: :obj:`1e-2`)
        log_scale (float, optional): Half-width of the log standard
            deviations of the covariance spectrum. (default: :obj:`1.0`)
    """
    FIXED: ClassVar[tuple[str, ...]] = ("target",)

    target: str = "cov_frobenius"
    d: int = 8
    k: int = 4
    ridge: float = 1e-2
    log_scale: float = 1.0
    num_train: int = 5000
    num_val: int = 1000
    num_test: int = 2000

    def validate(self) -> None:
        super().validate()
        _check_dim(self)
        if self.target not in STATISTICS_TARGETS:
            raise ValueError(f"'target' must be one of {STATISTICS_TARGETS} "
                             f"(got {self.target!r})")
        if self.target == "pca_reconstruction":
            check_int("k", self.k, minimum=1, maximum=self.d - 1,
                      reason=f"keeping all d={self.d} components leaves no error")
        check_float("ridge", self.ridge, positive=True)
        check_float("log_scale", self.log_scale, minimum=0.0)

    @property
    def num_features(self) -> int:
        return self.d + 1 if self.target == "mahalanobis" else self.d

    def sample(self, rng, split, shared):
        n = self.draw_size(rng, split)
        if self.target == "mahalanobis":
            X = anisotropic_gaussian(rng, n + 1, self.d, log_scale=self.log_scale)
            y = statistics.mahalanobis_distance(X[:n], X[n], ridge=self.ridge)
            return Sample(np.c_[X, np.arange(n + 1) == n], np.array([y]))
        X = anisotropic_gaussian(rng, n, self.d, log_scale=self.log_scale)
        if self.target == "cov_frobenius":
            return Sample(X, np.array([statistics.cov_frobenius(X)]))
        return Sample(X, np.array([statistics.pca_reconstruction_error(X, self.k)]))


# ----------------------------------------------------- TDOF-controlled tasks


@dataclass(frozen=True)
class QuadraticTDOFConfig(SetSizeConfig):
    r"""The quadratic-TDOF target of Eq. 4 (Tables 1, 7, 12) and its
    sequence version (Table 13).

    Fixed per seed (shared by all splits): Frobenius-orthogonal
    :math:`M_0, \dots, M_L` with :math:`\|M_l\|_F = \sqrt{d}`
    (:func:`~mzattn.datasets.synthetic.tdof.frobenius_orthogonal_basis`) and a
    unit read-out :math:`w`. Per set: a mean :math:`m \sim \mathcal{N}(0,
    I_d)` and :math:`n \sim \mathcal{U}\{10, \dots, 30\}` elements
    :math:`x_i = m + \text{spread}\,\varepsilon_i`, so :math:`\mu(S)` is close
    to the standard Gaussian of Theorem 2. The target is
    :func:`~mzattn.datasets.synthetic.tdof.quadratic_tdof` of the set mean,
    or, for the sequence version, of the position-weighted mean
    :math:`\sum_i \omega_i x_i`
    (:func:`~mzattn.datasets.synthetic.tdof.position_weights`), which depends
    on the order. :math:`d = 32` for every :math:`L \in \{4, 8, 16, 24, 32\}`
    (Eq. 4 needs :math:`d \ge L`), so only the TDOF changes along the sweep;
    the paper gives no :math:`d`, and :obj:`d=64` (:math:`\ge 2L` for every
    :math:`L` of Table 1) is the other reading we run.
    Sizes (not in the paper): 10K/2K/2K.

    Args:
        L (int, optional): Generator matrices = TDOF, :obj:`L <= d`. (default: :obj:`4`)
        d (int, optional): Dimension. (default: :obj:`32`)
        spread (float, optional): Element noise around the set mean. (default: :obj:`1.0`)
        sequence (bool, optional): Position-weighted version. (default: :obj:`False`)
    """
    FIXED: ClassVar[tuple[str, ...]] = ("sequence",)

    L: int = 4
    d: int = 32
    spread: float = 1.0
    sequence: bool = False
    num_train: int = 10000
    num_val: int = 2000
    num_test: int = 2000

    def validate(self) -> None:
        super().validate()
        _check_dim(self)
        check_int("L", self.L, minimum=1, maximum=self.d,
                  reason=f"Eq. 4 reads the first L coordinates of mu in d={self.d}")
        check_float("spread", self.spread, minimum=0.0)

    @property
    def num_features(self) -> int:
        return self.d

    def shared(self, rng):
        M = tdof.frobenius_orthogonal_basis(rng, self.d, self.L)
        w = rng.standard_normal(self.d)
        return M, w / np.linalg.norm(w)

    def sample(self, rng, split, shared):
        n = self.draw_size(rng, split)
        X = rng.standard_normal(self.d) + self.spread * rng.standard_normal((n, self.d))
        summary = tdof.position_weights(n) @ X if self.sequence else X.mean(0)
        return Sample(X, np.array([tdof.quadratic_tdof(summary, *shared)]))


@dataclass(frozen=True)
class MetaRegressionConfig(TaskConfig):
    r"""Few-shot meta-regression (App. D.5.1, Table 27).

    A shared basis :math:`M_1, \dots, M_L \in \mathbb{R}^{8 \times 8}` (fixed
    per seed, :func:`~mzattn.datasets.synthetic.tdof.meta_regression_basis`);
    per task :math:`c \sim \mathcal{N}(0, I_L)`, :math:`A = \sum_l c_l M_l`,
    :math:`K = 30` support pairs :math:`(x_i, A x_i)` and one query
    :math:`x_q`, all :math:`x \sim \mathcal{N}(0, I)`. The set holds rows
    :math:`[x_i, y_i, 0]` and, last, :math:`[x_q, 0, 1]`
    (:math:`F = d_{in} + d_{out} + 1`); the target is :math:`A x_q`
    (:math:`T = d_{out}`). Sizes (not in the paper): 10K/2K/2K.

    Args:
        L (int, optional): Basis size, swept over :math:`\{4, 8, 16, 32\}`.
            (default: :obj:`32`, the setting of Table 27)
        num_support (int, optional): Support pairs :math:`K`. (default: :obj:`30`)
        d_in (int, optional): Input dimension. (default: :obj:`8`)
        d_out (int, optional): Output dimension. (default: :obj:`8`)
    """
    L: int = 32
    num_support: int = 30
    d_in: int = 8
    d_out: int = 8
    num_train: int = 10000
    num_val: int = 2000
    num_test: int = 2000

    def validate(self) -> None:
        super().validate()
        for name in ("L", "num_support", "d_in", "d_out"):
            check_int(name, getattr(self, name), minimum=1)

    @property
    def num_features(self) -> int:
        return self.d_in + self.d_out + 1

    @property
    def target_dim(self) -> int:
        return self.d_out

    def shared(self, rng):
        return tdof.meta_regression_basis(rng, self.L, self.d_in, self.d_out)

    def sample(self, rng, split, shared):
        A = tdof.task_operator(rng.standard_normal(self.L), shared)
        X = rng.standard_normal((self.num_support + 1, self.d_in))
        Y = X @ A.T
        flag = np.arange(self.num_support + 1) == self.num_support
        x = np.c_[X, np.where(flag[:, None], 0.0, Y), flag]
        return Sample(x, Y[-1])


# --------------------------------------------------- few-shot retrieval (D)


@dataclass(frozen=True)
class FewShotRetrievalConfig(TaskConfig):
    r"""Task D, few-shot set retrieval (App. A.2).

    Per set: :obj:`num_classes` class prototypes :math:`\mathcal{N}(0, I_8)`
    and a noise scale :math:`\sigma \sim \mathcal{U}(0.3, 1.5)`; :math:`K = 5`
    support elements of the target class and 20 queries, of which
    :math:`k \sim \mathcal{U}\{0, \dots, 20\}` belong to the target class and
    the rest to the other classes (uniformly); every element is its
    prototype plus :math:`\sigma\,\mathcal{N}(0, I_8)`. Rows are
    :math:`[x, 1]` for support and :math:`[x, 0]` for queries (support first,
    queries shuffled), :math:`d_{in} = 9`; the target is :math:`k / 20`.
    The number of classes and the law of :math:`k` are our choices.
    8K/1.5K/1.5K sets.

    Args:
        num_support (int, optional): Support size :math:`K`. (default: :obj:`5`)
        num_query (int, optional): Query size. (default: :obj:`20`)
        d (int, optional): Feature dimension. (default: :obj:`8`)
        num_classes (int, optional): Classes per set, :obj:`>= 2`. (default: :obj:`5`)
        noise_min (float, optional): Smallest noise scale. (default: :obj:`0.3`)
        noise_max (float, optional): Largest noise scale. (default: :obj:`1.5`)
    """
    num_support: int = 5
    num_query: int = 20
    d: int = 8
    num_classes: int = 5
    noise_min: float = 0.3
    noise_max: float = 1.5
    num_train: int = 8000
    num_val: int = 1500
    num_test: int = 1500

    def validate(self) -> None:
        super().validate()
        _check_dim(self)
        check_int("num_support", self.num_support, minimum=1)
        check_int("num_query", self.num_query, minimum=1)
        check_int("num_classes", self.num_classes, minimum=2,
                  reason="queries need a target class and at least one other")
        check_float("noise_min", self.noise_min, minimum=0.0)
        check_range("noise_min", self.noise_min, "noise_max", self.noise_max)

    @property
    def num_features(self) -> int:
        return self.d + 1

    def sample(self, rng, split, shared):
        prototypes = rng.standard_normal((self.num_classes, self.d))
        sigma = rng.uniform(self.noise_min, self.noise_max)
        hits = int(rng.integers(0, self.num_query + 1))
        others = rng.integers(1, self.num_classes, size=self.num_query - hits)
        labels = np.concatenate([np.zeros(self.num_support + hits, int), others])
        X = prototypes[labels] + sigma * rng.standard_normal((len(labels), self.d))
        query = self.num_support + rng.permutation(self.num_query)
        X = np.concatenate([X[: self.num_support], X[query]])
        flag = np.arange(len(X)) < self.num_support
        return Sample(np.c_[X, flag], np.array([hits / self.num_query]))


# ------------------------------------------------------------------ registry


TASKS: dict[str, TaskConfig] = {
    "task_a": SetReductionConfig(target="sum_of_dimension_maxima", n_max=100, num_train=10000,
                                 num_val=2000, num_test=2000),
    "task_b": ChamferMatchingConfig(),
    "task_d": FewShotRetrievalConfig(),
    "task_f": RotationMatchingConfig(),
    "task_g": MSTConfig(),
    "meb": MEBConfig(),
    "hull": HullConfig(),
    "sgsp_diameter": SGSPConfig(target="diameter"),
    "sgsp_knn_radius": SGSPConfig(target="knn_radius"),
    "sgsp_k_smallest_sum": SGSPConfig(target="k_smallest_sum"),
    "sgsp_furthest_first": SGSPConfig(target="furthest_first"),
    "quadratic_tdof": QuadraticTDOFConfig(),
    "quadratic_tdof_seq": QuadraticTDOFConfig(sequence=True),
    "set_max": SetReductionConfig(target="max"),
    "set_sum": SetReductionConfig(target="sum"),
    "set_median": SetReductionConfig(target="median"),
    "set_range": SetReductionConfig(target="range"),
    "cov_frobenius": StatisticsConfig(target="cov_frobenius"),
    "mahalanobis": StatisticsConfig(target="mahalanobis"),
    "pca_reconstruction": StatisticsConfig(target="pca_reconstruction", d=16),
    "meta_regression": MetaRegressionConfig(),
}
r"""Default configuration (the paper's settings) of every task, by name."""

ALIASES = {"mst": "task_g"}
r"""Other names of tasks: :obj:`mst` is Task G."""

TABLE15_NOISES = (0.05, 0.1, 0.3, 0.5, 1.0)
TABLE16_TEST_SIZES = ((10, 30), (30, 50), (50, 80), (80, 120))
TABLE25_SCALES = ((16, 10, 50), (64, 200, 500), (128, 500, 1000))  # (d, n_min, n_max)

SWEEPS: dict[str, dict[str, tuple]] = {
    "task_b": {"noise": TABLE15_NOISES},
    "task_f": {"d": (8, 16, 32, 64, 128, 256, 512)},
    "task_g": {"d": (8, 16, 32, 64, 128, 256)},
    "meb": {"d": (8, 16, 32)},
    "hull": {"d": (3, 6, 9)},
    **{name: {"d": (8, 16, 32)} for name in TASKS if name.startswith("sgsp_")},
    "quadratic_tdof": {"L": (4, 8, 16, 24, 32)},
    "quadratic_tdof_seq": {"L": (4, 8, 16, 24, 32)},
    "meta_regression": {"L": (4, 8, 16, 32)},
}
r"""The parameter values each task is swept over in the paper's tables."""


def canonical_name(name: str) -> str:
    r"""Resolves an alias (:obj:`"mst"`) and checks the task exists."""
    name = ALIASES.get(name, name)
    if name not in TASKS:
        raise ValueError(f"unknown task {name!r}; known tasks: "
                         f"{sorted(TASKS) + sorted(ALIASES)}")
    return name


def get_config(name: str, **overrides: Any) -> TaskConfig:
    r"""The configuration of task :obj:`name` with :obj:`overrides` applied
    (e.g. :obj:`d=16`, :obj:`num_train=2000`). An unknown or fixed field
    raises a :class:`ValueError` naming it; impossible values raise one from
    the configuration's validation."""
    config = TASKS[canonical_name(name)]
    fields = {f.name for f in dataclasses.fields(config)} - set(config.FIXED)
    for key in overrides:
        if key in config.FIXED:
            raise ValueError(f"'{key}' is fixed by the task name {name!r}; "
                             f"pick the task with the {key} you want")
        if key not in fields:
            raise ValueError(f"unknown parameter '{key}' for task {name!r}; "
                             f"valid: {sorted(fields)}")
    return dataclasses.replace(config, **overrides)
