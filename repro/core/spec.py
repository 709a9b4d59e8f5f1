r"""Declarative description of one reproduced table: its rows (models), its
columns (task settings), its run profiles and its headline claims.

Every table script (:obj:`repro/tables/tableNN_*.py`) builds one :class:`TableSpec`
at the top of the file and calls :func:`mzattn.repro.engine.runner.main` with it.
"""
import dataclasses
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from mzattn.names import did_you_mean

PROFILES = ("smoke", "quick", "full")
r"""Run profiles: :obj:`smoke` (seconds, used by the tests), :obj:`quick`
(a 2-core CPU, well under an hour per table) and :obj:`full` (the paper's
protocol)."""


@dataclass(frozen=True)
class Profile:
    r"""Data sizes and training budget of one run profile.

    Args:
        num_train (int, optional): Training sets, :obj:`None` for the task's
            default (the paper's size). (default: :obj:`None`)
        num_val (int, optional): Validation sets. (default: :obj:`None`)
        num_test (int, optional): Test sets. (default: :obj:`None`)
        max_epochs (int, optional): Epoch cap. (default: :obj:`200`)
        patience (int, optional): Early-stopping patience on the validation
            loss. (default: :obj:`20`)
        batch_size (int, optional): Sets per batch. (default: :obj:`128`)
        seeds (tuple[int, ...], optional): Seeds run per cell. (default: :obj:`(0, 1, 2)`)
        warmup_epochs (int, optional): Linear warm-up epochs. (default: :obj:`5`)
        lr (float, optional): Peak learning rate. (default: :obj:`1e-4`)
        rows (tuple[str, ...], optional): Row labels run by default,
            :obj:`None` for all. (default: :obj:`None`)
        columns (tuple[str, ...], optional): Column labels run by default,
            :obj:`None` for all. (default: :obj:`None`)
        data (dict, optional): Dataset options applied after every column's
            overrides, e.g. :obj:`{"stand_in": True}` for a smoke run of a
            real-data table on offline stand-in data. (default: :obj:`{}`)
    """
    num_train: int | None = None
    num_val: int | None = None
    num_test: int | None = None
    max_epochs: int = 200
    patience: int = 20
    batch_size: int = 128
    seeds: tuple[int, ...] = (0, 1, 2)
    warmup_epochs: int = 5
    lr: float = 1e-4
    rows: tuple[str, ...] | None = None
    columns: tuple[str, ...] | None = None
    data: dict[str, Any] = field(default_factory=dict)

    def sizes(self) -> dict[str, int]:
        r"""The split-size overrides of this profile (unset sizes left out)."""
        sizes = {"num_train": self.num_train, "num_val": self.num_val,
                 "num_test": self.num_test}
        return {k: v for k, v in sizes.items() if v is not None}


SMOKE = Profile(num_train=32, num_val=16, num_test=16, max_epochs=1, patience=1,
                batch_size=16, seeds=(0,), warmup_epochs=1)
r"""The shared smoke profile: tiny data, one epoch, registry-default models."""

QUICK = Profile(num_train=1000, num_val=250, num_test=500, max_epochs=15, patience=5,
                batch_size=32, seeds=(0,), warmup_epochs=2, lr=5e-4)
r"""The default quick profile, sized for a 2-core CPU: 1K/250/500 sets, batch
32, a higher peak learning rate (5e-4) with a 2-epoch warm-up so that 15
epochs make progress, patience 5, one seed."""


def full(seeds: tuple[int, ...] = (0, 1, 2), **kwargs: Any) -> Profile:
    r"""The paper's protocol (App. A.1): the task's own split sizes, batch
    128, AdamW 1e-4, 5 warm-up epochs, 200 epochs, patience 20."""
    return Profile(seeds=seeds, **kwargs)


def transposed(row: str, column: str) -> tuple[str, str]:
    r""":obj:`paper_cell` of a table printed with models as columns."""
    return column, row


@dataclass(frozen=True)
class Row:
    r"""A table row: a registry model with optional constructor overrides.

    Args:
        label (str): Row label, as in the paper.
        model (str): Name for :func:`mzattn.baselines.build_model`.
        overrides (dict, optional): Constructor overrides. (default: :obj:`{}`)
    """
    label: str
    model: str
    overrides: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Column:
    r"""A table column: a synthetic task (or a real dataset of
    :obj:`mzattn.repro.training.real_data.REAL_DATASETS`) with configuration overrides.

    Args:
        label (str): Column label, as in the paper (e.g. :obj:`"d=8"`).
        task (str): Task name of :obj:`mzattn.datasets.synthetic.TASKS` or
            of :obj:`mzattn.repro.training.real_data.REAL_DATASETS`.
        overrides (dict, optional): Task fields, applied after the profile's
            split sizes. (default: :obj:`{}`)
        normalize (bool, optional): Normalise targets (App. D.2.4).
            (default: :obj:`False`)
        training (dict, optional): :class:`Profile` fields overridden in
            this column, e.g. :obj:`{"patience": 100}` (Table 26).
            (default: :obj:`{}`)
        model_overrides (dict, optional): Constructor overrides per registry
            name that depend on the column's inputs, e.g. EGNN's coordinate
            columns :obj:`{"egnn": {"coord_index": (0, 1, 2)}}`. (default: :obj:`{}`)
        metric (str, optional): Metric of this column where it differs from
            the table's, e.g. :obj:`"acc"` for the classification columns of
            a regression table (Table 2), :obj:`None` for the table's
            (:meth:`TableSpec.metric_of`). (default: :obj:`None`)
        loss (str, optional): Training objective of this column,
            :obj:`None` for the table's (:meth:`TableSpec.loss_of`).
            (default: :obj:`None`)
        reading (str, optional): Where the paper does not define this
            column's target or protocol, the choice we made, in a sentence.
            On a task with readings (:obj:`mzattn-repro readings`) the
            paper's own numbers decide whether a claim may rest on the
            column (:func:`mzattn.repro.core.evidence.column_reading`); on
            any other task a claim on such a column is "inconclusive",
            never decided. (default: :obj:`""`)
        variant_of (str, optional): Label of the column this one re-runs
            under another reading of its task (:func:`reading_variant`): its
            cells are set beside that column's paper numbers, and the
            table's claims stay on the paper's columns. (default: :obj:`""`)
    """
    label: str
    task: str
    overrides: dict[str, Any] = field(default_factory=dict)
    normalize: bool = False
    training: dict[str, Any] = field(default_factory=dict)
    model_overrides: dict[str, dict[str, Any]] = field(default_factory=dict)
    metric: str | None = None
    loss: str | None = None
    reading: str = ""
    variant_of: str = ""

    def overrides_for(self, row: "Row") -> dict[str, Any]:
        r"""Constructor overrides of :obj:`row`'s model on this column."""
        return {**row.overrides, **self.model_overrides.get(row.model, {})}


SET_SIZE_NOTE = ("Under our reading, the max and the range of a set's entries grow with its "
                 "size: the mean training target per set size alone reaches a test R² of "
                 "0.103 on max and 0.198 on range (sum -0.003, median -0.009), on the splits "
                 "the seed-0 cells use (`python -m mzattn.repro.analysis.set_size_baseline`). "
                 "A model below that predicts worse than the set size alone would let it; "
                 "attention pooling does not count elements (its softmax weights sum to one).")
r"""The note of the tables with max / sum / median / range columns (6, 29)."""

TASK_F_NOTE = ("Rotation matching (Task F) as App. A.2 reads: the Chamfer distance after "
               "undoing the pair's rotation, which varies only through the noise (test target "
               "variance 3.6e-4 at d = 8, where the paper's own Table 2 implies about 5,100: "
               "not the paper's task, so a failed check on it is inconclusive). The inputs "
               "decide it: an oracle told which points pair up, rotating by orthogonal "
               "Procrustes and calibrated linearly, reaches a held-out R² of 0.76, while the "
               "mean per set size reaches 0 (`python -m mzattn.repro.analysis.rotmatch_oracle`). "
               "So a model near R² 0 has not learnt a learnable target.")
r"""The note of the tables with Task F columns (2, 4, 6, 7)."""


def reading_variant(column: Column, reading: Any) -> Column:
    r""":obj:`column` under :obj:`reading`, a
    :class:`~mzattn.repro.core.readings.Reading` of :obj:`column`'s task
    (:obj:`mzattn-repro readings`), labelled :obj:`"{label} [{name}]"` so
    that its cell ids name the reading. The reading is chosen by the
    statistics of the paper's own numbers, before any of its cells ran
    (``docs/readings.md``), never by the verdict it gives."""
    if reading.task != column.task:
        raise ValueError(f"reading {reading.name!r} is of task {reading.task!r}, not of column "
                         f"{column.label!r}'s {column.task!r}")
    text = (f"reading '{reading.name}' ({reading.text}), the one the paper's own numbers favour "
            "(`mzattn-repro readings`, docs/readings.md)")
    return dataclasses.replace(column, label=f"{column.label} [{reading.name}]",
                               overrides={**column.overrides, **reading.overrides}, reading=text,
                               variant_of=column.label)


@dataclass(frozen=True)
class Verdict:
    r"""Outcome of one headline claim.

    A claim's check returns :obj:`status` :obj:`"reproduced"`,
    :obj:`"not reproduced"`, :obj:`"partly run"` or :obj:`"not run"` with
    :obj:`detail`, the numbers it was decided on; when it failed, the
    :obj:`cells` (:obj:`(row, column)`) of each failing condition, one
    tuple per condition (:obj:`None`: every cell the check read, as one
    condition); and, for a check built by
    :func:`~mzattn.repro.report.claims.verdict`, how many of its distinct conditions
    did not run, of how many (:obj:`not_run`).
    :func:`mzattn.repro.report.verdicts.decide` publishes it as :obj:`"reproduced"`,
    :obj:`"contradicted"`, :obj:`"inconclusive"`, :obj:`"not run"` or
    :obj:`"pipeline check only"`, with the convergence of
    those cells in :obj:`convergence` and every cell the check read in
    :obj:`read`."""
    status: str
    detail: str
    cells: tuple[tuple[tuple[str, str], ...], ...] | None = None
    convergence: str = ""
    read: tuple[tuple[str, str], ...] = ()
    not_run: tuple[int, int] = (0, 0)

    @property
    def failing_cells(self) -> tuple[tuple[str, str], ...]:
        r"""The cells of every failing condition, each once, in order
        (none when the check names none)."""
        return tuple(dict.fromkeys(cell for cells in self.cells or () for cell in cells))


@dataclass(frozen=True)
class Claim:
    r"""A headline claim of a table and the check deciding it on our
    aggregated results (:class:`mzattn.repro.report.results.Results`).

    Args:
        text (str): The claim, in the paper's words.
        check (callable): :obj:`check(results) -> Verdict`.
    """
    text: str
    check: Callable[[Any], Verdict]


def slug(label: str) -> str:
    r"""The file-system safe form of a row or column label in cell ids:
    every run of other characters than :obj:`A-Za-z0-9.+-` becomes one
    :obj:`_` (so a slug never holds :obj:`__`, the separator of a cell id)."""
    return re.sub(r"[^A-Za-z0-9.+-]+", "_", label).strip("_")


def _check_slugs(key: str, kind: str, labels: list[str]) -> None:
    # Distinct slugs keep cell ids injective: "A B" and "A/B" would share one.
    seen: dict[str, str] = {}
    for label in labels:
        other = seen.setdefault(slug(label), label)
        if other != label:
            raise ValueError(f"'{kind}' of {key}: {other!r} and {label!r} give the same "
                             f"cell id part {slug(label)!r}; rename one of them")


@dataclass(frozen=True)
class TableSpec:
    r"""One reproduced table: the grid rows × columns × seeds, the metrics
    reported, the profiles, the claims and the optional figure.

    Args:
        key (str): CLI name, e.g. :obj:`"table3"`.
        title (str): One-line description.
        rows (tuple[Row, ...]): Models, in the paper's order.
        columns (tuple[Column, ...]): Task settings.
        profiles (dict[str, Profile]): One :class:`Profile` per name of
            :obj:`PROFILES`.
        metric (str, optional): Metric of the table (:obj:`"r2"`,
            :obj:`"mse"`, :obj:`"acc"`, :obj:`"nll"`); a column may set its
            own (:meth:`metric_of`). (default: :obj:`"r2"`)
        loss (str, optional): Training objective of
            :obj:`mzattn.repro.training.lightning_module.LOSSES`; a column may set its
            own (:meth:`loss_of`). (default: :obj:`"mse"`)
        paper (str, optional): Key of the table in
            :obj:`mzattn.repro.report.paper_values.TABLES`. (default: :obj:`None`)
        paper_cell (callable, optional): :obj:`paper_cell(row, column)` maps
            our cell to the paper's :obj:`(row, column)` labels, or
            :obj:`None` where the paper has no number. (default: identity)
        claims (tuple[Claim, ...], optional): Headline claims. (default: :obj:`()`)
        figure (callable, optional): :obj:`figure(results, path)` draws the
            paper's figure as a PNG. (default: :obj:`None`)
        notes (str, optional): Deviations and choices, printed in the
            report. (default: :obj:`""`)
        sections (callable, optional): :obj:`sections(results, folder)`
            returns extra Markdown lines printed after the verdicts (e.g. the
            target statistics of Table 3's sensitivity study).
            (default: :obj:`None`)
        study (bool, optional): An analysis table (a sensitivity study, not
            a paper table): its claims are published by
            :func:`mzattn.repro.report.verdicts.decide_study`, so a failed check is
            never "contradicted". (default: :obj:`False`)
    """
    key: str
    title: str
    rows: tuple[Row, ...]
    columns: tuple[Column, ...]
    profiles: dict[str, Profile]
    metric: str = "r2"
    loss: str = "mse"
    paper: str | None = None
    paper_cell: Callable[[str, str], tuple[str, str] | None] | None = None
    claims: tuple[Claim, ...] = ()
    figure: Callable[[Any, str], None] | None = None
    notes: str = ""
    sections: Callable[[Any, str], list[str]] | None = None
    study: bool = False

    def __post_init__(self) -> None:
        missing = set(PROFILES) - set(self.profiles)
        if missing:
            raise ValueError(f"'profiles' of {self.key} lacks {sorted(missing)}")
        for kind, items in (("rows", self.rows), ("columns", self.columns)):
            labels = [item.label for item in items]
            if not labels or len(set(labels)) != len(labels):
                raise ValueError(f"'{kind}' of {self.key} must be non-empty and unique "
                                 f"(got {labels})")
            _check_slugs(self.key, kind, labels)

    def profile(self, name: str) -> Profile:
        r"""The :class:`Profile` called :obj:`name`."""
        if name not in self.profiles:
            raise ValueError(f"'profile' must be one of {PROFILES} (got {name!r})")
        return self.profiles[name]

    def paper_label(self, row: str, column: str) -> tuple[str, str] | None:
        r"""The paper's :obj:`(row, column)` of our cell (see :obj:`paper_cell`;
        a reading variant has the numbers of the column it re-runs)."""
        column = next((c.variant_of for c in self.columns if c.label == column and c.variant_of),
                      column)
        return (row, column) if self.paper_cell is None else self.paper_cell(row, column)

    def column(self, label: str) -> Column:
        r"""The column labelled :obj:`label`."""
        for column in self.columns:
            if column.label == label:
                return column
        raise ValueError(f"'column' must be one of {[c.label for c in self.columns]} "
                         f"(got {label!r})")

    def metric_of(self, column: str) -> str:
        r"""The metric of the column labelled :obj:`column`: its own
        :obj:`Column.metric`, else the table's :obj:`metric`."""
        return self.column(column).metric or self.metric

    def loss_of(self, column: str) -> str:
        r"""The training objective of the column labelled :obj:`column`: its
        own :obj:`Column.loss`, else the table's :obj:`loss`."""
        return self.column(column).loss or self.loss

    def mixes_metrics(self) -> bool:
        r"""Whether the columns report more than one metric."""
        return len({self.metric_of(column.label) for column in self.columns}) > 1

    def select_rows(self, names: list[str] | None,
                    profile: str | None = None) -> tuple[Row, ...]:
        r"""Rows whose label or registry name is in :obj:`names` (if
        :obj:`None`: the rows of :obj:`profile`, else all); an unknown name
        raises a :class:`ValueError`."""
        if names is None and profile is not None:
            names = _list(self.profile(profile).rows)
        return _select(self.rows, names, "models", lambda r: (r.label, r.model))

    def select_columns(self, names: list[str] | None,
                       profile: str | None = None) -> tuple[Column, ...]:
        r"""Columns whose label is in :obj:`names` (if :obj:`None`: the
        columns of :obj:`profile`, else all)."""
        if names is None and profile is not None:
            names = _list(self.profile(profile).columns)
        return _select(self.columns, names, "columns", lambda c: (c.label,))


def _rejoin(names: list[str], known: set[str]) -> list[str]:
    r""":obj:`names` as split at every comma (:obj:`--models a,b`), with the
    pieces of a label that has commas itself (:obj:`"MZ-Slim (n_g=2, L=1)"`)
    joined again: the longest run of pieces that makes a known label wins."""
    joined, start = [], 0
    while start < len(names):
        label, start = next(((label, end) for end in range(len(names), start + 1, -1)
                             for label in _joins(names[start:end]) if label in known),
                            (names[start], start + 1))
        joined.append(label)
    return joined


def _joins(pieces: list[str]) -> tuple[str, str]:
    # the stripped pieces of "a, b" or "a,b"
    return ", ".join(pieces), ",".join(pieces)


def _list(labels: tuple[str, ...] | None) -> list[str] | None:
    return None if labels is None else list(labels)


def _select(items: tuple, names: list[str] | None, what: str, keys: Callable) -> tuple:
    if names is None:
        return items
    known = {key for item in items for key in keys(item)}
    names = _rejoin(names, known)
    unknown = [name for name in names if name not in known]
    if unknown:
        hint = "".join(did_you_mean(name, known) for name in unknown)
        raise ValueError(f"unknown '{what}' {unknown}{hint} (choose from {sorted(known)})")
    return tuple(item for item in items if set(keys(item)) & set(names))
