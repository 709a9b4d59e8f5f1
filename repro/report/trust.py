r"""Whether a readable cell record may be counted in a report, a verdict,
:obj:`SUMMARY.md` or the README's table.

A record in :obj:`{out}/{table}/cells/` is checked against

1. **its identity**: its :obj:`cell_id` is its file's name, its row, column
   and seed are the cell of that name in the table's spec, and a record
   naming another table is the same run as this table's cell (a twin, or a
   record of the demo, a view of Table 3): a record of another table or
   cell copied into :obj:`cells/` does not count;
2. **its numbers**: every metric, the parameter count, the wall time, the
   epochs, the split sizes and every validation loss of its history is a
   number (a NaN or infinite test
   metric is not a result), and the metrics are in range
   (:math:`R^2 \le 1`, :math:`\text{MSE} \ge 0`, accuracy in :math:`[0, 1]`);
3. **its consistency**, where the record stores what it takes (records
   written since issue 36): the checksum of its metrics
   (:obj:`metrics_sha256`, :func:`~mzattn.repro.training.cells.metrics_digest`), and
   :math:`R^2` against the MSE and the test targets' variance
   (:obj:`test_target_var`).

A record that fails is set aside by the report (listed with its file and the
reason), never counted and never fatal.
"""
import math
import os.path as osp
from typing import Any

from mzattn.datasets.batching import BATCHINGS
from mzattn.repro.core.spec import TableSpec
from mzattn.repro.training.cells import metrics_digest, stale_problem
from mzattn.repro.training.layout import Cell
from mzattn.repro.training.twins import batching_of

R2_TOLERANCE = 1e-4
r"""Largest gap, relative to :math:`\max(1, \text{MSE}/\text{var})`, between
:math:`1 - R^2` and :math:`\text{MSE}/\text{var}` that is float rounding (both
come from float32 sums of the same test split)."""

MIN_TOTAL_SQUARES = 1e-3
r"""Below this total sum of squares of a target over the test split,
torchmetrics sets :math:`R^2` to 0 or 1 (a near-constant target): no check."""

_ANY = (-math.inf, math.inf)
_RANGES = {"r2": (-math.inf, 1.0), "mse": (0.0, math.inf), "acc": (0.0, 1.0)}


def doubt(spec: TableSpec, record: dict[str, Any], path: str) -> str | None:
    r"""Why :obj:`record`, read from :obj:`path` under :obj:`spec`'s table,
    must not be counted, or :obj:`None` if it may (module docstring). A
    record of a configuration that the spec no longer has is not doubted
    here: it is stale (:func:`~mzattn.repro.training.cells.stale_problem`)."""
    problem = _identity(spec, record, path)
    if problem is None and record.get("status") == "ok":
        problems = _numbers(record) or _consistency(record)
        problem = "; ".join(problems) if problems else None
    return problem


def _canonical(spec: TableSpec) -> TableSpec:
    # the registered table of a view (the demo's Table 3 keeps fewer rows), else the spec
    from mzattn.repro.core.registry import TABLE_MODULES, load_spec
    return load_spec(spec.key) if spec.key in TABLE_MODULES else spec


def _identity(spec: TableSpec, record: dict[str, Any], path: str) -> str | None:
    name, config = osp.basename(path).removesuffix(".json"), record["config"]
    if record["cell_id"] != name:
        return f"a record of cell {record['cell_id']!r} under the name {name!r}"
    table = _canonical(spec)
    rows = {r.label: r for r in (*table.rows, *spec.rows)}  # a view may add cells too
    columns = {c.label: c for c in (*table.columns, *spec.columns)}
    row, column = rows.get(config["row"]), columns.get(config["column"])
    if row is None or column is None:
        return (f"{spec.key} has no cell with row {config['row']!r} and column "
                f"{config['column']!r} (a record of table {config.get('table')!r})")
    seed = config.get("seed")
    if not isinstance(seed, int) or isinstance(seed, bool):
        return f"seed {seed!r} is not an integer"
    batching = batching_of(config)
    if batching not in BATCHINGS:
        return f"batching {batching!r} is not one of {', '.join(BATCHINGS)}"
    cell_id = Cell(spec.key, row, column, seed, batching).cell_id
    if cell_id != name:
        return f"its row, column, seed and batching are cell {cell_id!r}'s, not {name!r}'s"
    if config.get("table") != spec.key:
        problem = stale_problem(spec, record) or stale_problem(table, record)
        if problem is not None:
            return f"a record of table {config.get('table')!r}, not a run of this cell: {problem}"
    return None


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _numbers(record: dict[str, Any]) -> list[str]:
    # every number the report reads, and the metrics' ranges
    problems = []
    for name, value in sorted(record["metrics"].items()):
        if not _is_number(value):
            problems.append(f"metric {name!r} is {value!r}, not a number")
        elif not math.isfinite(value):
            problems.append(f"metric {name!r} is {value}")
        elif not _RANGES.get(name, _ANY)[0] <= value <= _RANGES.get(name, _ANY)[1]:
            problems.append(f"metric {name!r} is {value}, outside {list(_RANGES[name])}")
    for name in ("params", "wall_time_s", "epochs", "max_epochs"):
        if record.get(name) is not None and not _is_number(record[name]):
            problems.append(f"{name!r} is {record[name]!r}, not a number")
    sizes = record.get("split_sizes")
    if sizes is not None and not (isinstance(sizes, list) and all(map(_is_number, sizes))):
        problems.append(f"'split_sizes' is {sizes!r}, not a list of numbers")
    history = record.get("history") or []
    if not isinstance(history, list) or not all(
            isinstance(row, dict) and all(row.get(name) is None or _is_number(row[name])
                                          for name in ("val_loss", "epoch_time_s"))
            for row in history):
        problems.append("'history' is not a list of epochs with numeric validation losses "
                        "and times")
    return problems


def _consistency(record: dict[str, Any]) -> list[str]:
    # the checksum, then R² against the MSE and the test targets' variance
    if "metrics_sha256" in record and record["metrics_sha256"] != metrics_digest(record):
        return ["its metrics do not match the checksum written with them (metrics_sha256): "
                "edited after the run"]
    problem = _r2_problem(record["metrics"], record.get("test_target_var"),
                          (record.get("split_sizes") or [None])[-1])
    return [] if problem is None else [problem]


def _r2_problem(metrics: dict[str, Any], variance: Any, num_test: Any) -> str | None:
    if not {"r2", "mse"} <= metrics.keys() or variance is None:
        return None
    if not isinstance(variance, list) or not variance \
            or not all(_is_number(v) and math.isfinite(v) and v >= 0 for v in variance):
        return f"'test_target_var' is {variance!r}, not a list of variances"
    if not _is_number(num_test) or num_test * min(variance) < MIN_TOTAL_SQUARES:
        return None  # a near-constant target: torchmetrics' R² is 0 or 1 by convention
    r2, mse = metrics["r2"], metrics["mse"]
    # R² averages 1 - MSE_t / var_t over the targets, MSE averages MSE_t: for one target the
    # two agree exactly; for several, 1 - R² lies between MSE / max(var) and MSE / min(var)
    low, high = mse / max(variance), mse / min(variance)
    slack = R2_TOLERANCE * max(1.0, high)
    if low - slack <= 1.0 - r2 <= high + slack:
        return None
    implied = f"{1.0 - low:.6g}" if low == high else f"{1.0 - high:.6g} to {1.0 - low:.6g}"
    return (f"R² {r2:.6g} contradicts its MSE {mse:.6g} and the test targets' variance "
            f"{_format(variance)} (1 − MSE/var = {implied})")


def _format(variance: list[float]) -> str:
    return f"{variance[0]:.6g}" if len(variance) == 1 else \
        "[" + ", ".join(f"{v:.4g}" for v in variance) + "]"
