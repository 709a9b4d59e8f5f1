r"""Few-shot meta-regression on real tables (paper App. D.5.6)."""
import os.path as osp
import zlib
from collections.abc import Callable, Sequence

import numpy as np
from torch_geometric.data import Data

from .episodes import EpisodeSets, draw_episode, episode_tokens
from .openml_tables import TABLE_SOURCES, csv_path, load_table, missing_tables_error

PARTS: tuple[str, ...] = ("train", "val", "test")
ROW_FRACTIONS = (0.5, 0.25, 0.25)
r"""Shares of every table's rows in the train/val/test parts (not in the
paper): a quarter of diabetes' 442 rows still holds the 100 rows of an
episode."""

#: The paper meta-trains on three tables and tests on three (which ones it
#: does not say): the first three and the last three of its list.
TRAIN_TABLES: tuple[str, ...] = ("california_housing", "diabetes", "energy_efficiency")
TEST_TABLES: tuple[str, ...] = ("abalone", "airfoil_self_noise", "boston")


def split_rows(num_rows: int, fractions: Sequence[float],
               rng: np.random.Generator) -> dict[str, np.ndarray]:
    r"""Sorted row indices of the :obj:`PARTS` of a table: a random
    permutation cut by :obj:`fractions` (train and val rounded down)."""
    perm = rng.permutation(num_rows)
    cuts = np.cumsum([int(f * num_rows) for f in fractions[:2]])
    return {part: np.sort(rows) for part, rows in zip(PARTS, np.split(perm, cuts),
                                                      strict=True)}


def standardize(features: np.ndarray, target: np.ndarray, rows: np.ndarray
                ) -> tuple[np.ndarray, np.ndarray, dict[str, np.ndarray]]:
    r"""Features and target standardised with the mean and standard deviation
    of :obj:`rows` (a zero deviation, e.g. a padded column, becomes one);
    returns them and the statistics."""
    stats = {"feature_mean": features[rows].mean(0), "feature_std": features[rows].std(0),
             "target_mean": target[rows].mean(), "target_std": target[rows].std()}
    feature_std = np.where(stats["feature_std"] > 0, stats["feature_std"], 1.0)
    target_std = stats["target_std"] if stats["target_std"] > 0 else 1.0
    return ((features - stats["feature_mean"]) / feature_std,
            (target - stats["target_mean"]) / target_std, stats)


class TabularMetaRegression(EpisodeSets):
    r"""Few-shot meta-regression on real tables (App. D.5.6): an episode
    draws :math:`K` context rows and :math:`T` query rows from one table;
    the model sees the context pairs and predicts the query's standardised
    target under a Gaussian likelihood.

    Each table (:obj:`~mzattn.datasets.openml_tables.TABLE_SOURCES`,
    8 features) is cut once into train/val/test row parts
    (:obj:`fractions`, a permutation seeded by :obj:`seed` and the table's
    name); features and target are standardised with the statistics of the
    table's **train rows only**, also for a table used for testing alone.
    Episodes of :obj:`part` cycle through :obj:`tables` (episode :math:`e`
    uses table :math:`e \bmod` ``len(tables)``) and draw their :math:`K + T`
    distinct rows from that table's :obj:`part` rows. As in
    :class:`~mzattn.datasets.ImageCompletion`, an episode gives :math:`T`
    sets sharing its context: :math:`K` context tokens :math:`[x, y, 0]` and
    one query token :math:`[x, 0, 1]`, label :math:`y`.

    The two splits of the paper are two uses: *same distribution* takes
    train/val/test episodes from the same tables; *held-out tables* takes
    test episodes from other tables (see
    :func:`mzattn.repro.training.real_data.tabular_meta_regression`).

    Args:
        root (str): Root folder; the OpenML CSVs are in ``root/raw``.
        tables (Sequence[str], optional): Table names. (default: :obj:`("diabetes",)`)
        part (str, optional): Rows the episodes draw from, one of
            :obj:`PARTS`. (default: :obj:`"train"`)
        num_episodes (int, optional): Episodes :math:`E`. (default: :obj:`100`)
        num_context (int, optional): Context rows :math:`K`. (default: :obj:`50`)
        num_targets (int, optional): Query rows :math:`T`. (default: :obj:`50`)
        fractions (Sequence[float], optional): Shares of the train/val/test
            rows. (default: :obj:`ROW_FRACTIONS`)
        seed (int, optional): Seed of the row parts and the episode draws.
            (default: :obj:`0`)
        transform (callable, optional): Applied to every set on access.
            (default: :obj:`None`)

    Attributes:
        row_parts (dict[str, dict[str, np.ndarray]]): Row indices of every
            part of every table.
        statistics (dict[str, dict[str, np.ndarray]]): The standardisation
            statistics of every table (from its train rows).

    Shapes:
        - **x** :math:`(K + 1, 10)`, **y** :math:`(1, 1)`

    **STATS:**

    .. list-table::
        :widths: 30 15 15
        :header-rows: 1

        * - Table (OpenML ID)
          - #rows
          - #features used (of)
        * - California Housing (44977)
          - 20,640
          - 8 (8)
        * - Diabetes (scikit-learn)
          - 442
          - 8 (10)
        * - Energy Efficiency (44960)
          - 768
          - 8 (8)
        * - Abalone (44956)
          - 4,177
          - 7 + 1 zero (7 numeric)
        * - Airfoil Self-Noise (44957)
          - 1,503
          - 5 + 3 zeros (5)
        * - Boston Housing (531)
          - 506
          - 8 (13)
    """
    def __init__(
        self,
        root: str,
        tables: Sequence[str] = ("diabetes",),
        part: str = "train",
        num_episodes: int = 100,
        num_context: int = 50,
        num_targets: int = 50,
        fractions: Sequence[float] = ROW_FRACTIONS,
        seed: int = 0,
        transform: Callable[[Data], Data] | None = None,
    ) -> None:
        unknown = [name for name in tables if name not in TABLE_SOURCES]
        if not tables or unknown or len(set(tables)) != len(tables):
            raise ValueError(f"'tables' must be distinct names of {sorted(TABLE_SOURCES)} "
                             f"(got {list(tables)})")
        if part not in PARTS:
            raise ValueError(f"'part' must be one of {PARTS} (got {part!r})")
        if num_episodes < 1:
            raise ValueError(f"'num_episodes' must be positive (got {num_episodes})")
        if len(fractions) != 3 or min(fractions) <= 0 or not np.isclose(sum(fractions), 1.0):
            raise ValueError(f"'fractions' must be three positive shares summing to 1 "
                             f"(got {tuple(fractions)})")
        self.tables, self.part, self.seed = tuple(tables), part, seed
        self.fractions = tuple(fractions)
        super().__init__(root, transform)
        self.row_parts, self.statistics, pools = {}, {}, []
        for name in self.tables:
            features, target = load_table(name, self.raw_dir)
            rng = np.random.default_rng([seed, zlib.crc32(name.encode())])
            self.row_parts[name] = split_rows(len(target), self.fractions, rng)
            features, target, self.statistics[name] = standardize(
                features, target, self.row_parts[name]["train"])
            rows = self.row_parts[name][part]
            pools.append((features[rows], target[rows]))
        episodes = []
        for e in range(num_episodes):
            features, target = pools[e % len(pools)]
            rng = np.random.default_rng([seed, PARTS.index(part), e])
            episodes.append(episode_tokens(features, target, *draw_episode(
                rng, len(target), num_context, num_targets)))
        self.set_episodes(episodes)

    @property
    def raw_file_names(self) -> list[str]:
        return [f"{name}.csv" for name in self.tables
                if TABLE_SOURCES[name].openml_id is not None]

    def download(self) -> None:
        missing = [name for name in self.tables if TABLE_SOURCES[name].openml_id is not None
                   and not osp.exists(csv_path(self.raw_dir, name))]
        if missing:  # nothing is downloaded: name the files and where to get them
            raise missing_tables_error(self.raw_dir, missing)

    def __repr__(self) -> str:
        return (f"{type(self).__name__}({len(self)}, tables={list(self.tables)}, "
                f"part={self.part!r}, episodes={self.num_episodes}, "
                f"num_context={self.num_context}, num_targets={self.num_targets})")
