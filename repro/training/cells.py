r"""One cell of a table (model × task setting × seed): train, select on the
validation split, test once, and write one JSON record atomically.

A finished cell's JSON is never recomputed; a killed cell resumes from its
last checkpoint (optimiser, scheduler, early-stopping and model-selection
state included), or from the one an earlier session parked in git
(:mod:`~mzattn.repro.training.parking`); a failed cell is recorded with its traceback and the
table goes on.
"""
import contextlib
import dataclasses
import hashlib
import json
import os
import os.path as osp
import shutil
import sys
import time
import traceback
from collections.abc import Iterator
from dataclasses import asdict, dataclass
from typing import Any

import lightning.pytorch as pl
import torch
from filelock import FileLock, Timeout
from lightning.pytorch.callbacks import EarlyStopping
from lightning.pytorch.utilities import rank_zero_only
from mzattn.datasets.batching import BATCHINGS
from mzattn.repro.core.envinfo import environment_record
from mzattn.repro.core.faults import (
    Interrupted,
    atomic_write,
    atomic_write_text,
    is_no_space,
    no_space,
    set_aside,
    stop_on_signals,
    stop_signal,
)
from mzattn.repro.core.quiet import show_progress_bar
from mzattn.repro.core.spec import Column, Profile, TableSpec

from mzlayers.mz_attention import set_recompute

from .checkpoints import AtomicCheckpointIO, CellCheckpoint, StopBetweenSteps, resumable
from .datamodule import SetDataModule
from .history import History, activations_of
from .layout import Cell, cell_path, checkpoint_dir, lock_path, log_path, stage_name
from .lightning_module import SetModule, output_channels
from .parking import remove_parked, unpark
from .progress import EpochLogger
from .stages import reach
from .twins import batching_of, find_twin, run_lock_path, run_of

RECORD_VERSION = 1
r"""Version of the cell JSON layout."""

GRADIENT_CLIP = 1.0  # App. A.1: l2-norm gradient clipping
WEIGHT_DECAY = 1e-5  # App. A.1: AdamW weight decay


@dataclass(frozen=True)
class RunOptions:
    r"""How cells are run (not what they compute).

    Args:
        accelerator (str, optional): Lightning accelerator (:obj:`"cpu"`,
            :obj:`"gpu"`, :obj:`"auto"`). (default: :obj:`"auto"`)
        devices (int | str, optional): Devices per node. (default: :obj:`1`)
        strategy (str, optional): Lightning strategy, e.g. :obj:`"ddp"`.
            (default: :obj:`"auto"`)
        precision (str, optional): Lightning precision, e.g.
            :obj:`"bf16-mixed"`. (default: :obj:`"32-true"`)
        num_nodes (int, optional): Nodes. (default: :obj:`1`)
        deterministic (bool, optional): Deterministic algorithms only.
            (default: :obj:`False`)
        compile (bool, optional): Train under :func:`torch.compile` on the
            static-shape path (:class:`~mzattn.repro.lightning_module.SetModule`).
            (default: :obj:`False`)
        num_workers (int, optional): Data-loader workers. (default: :obj:`0`)
        progress (bool, optional): Progress bar; :obj:`None` shows it in a
            terminal outside CI and prints plain epoch lines otherwise.
            (default: :obj:`None`)
        keep_checkpoints (bool, optional): Keep a finished cell's
            checkpoints. (default: :obj:`False`)
        data_root (str, optional): Dataset cache root. (default: :obj:`None`)
        seeds_together (bool, optional): Train the seeds of a cell (a row on
            a column) as one group in one process
            (:mod:`~mzattn.repro.training.together`). (default: :obj:`False`)
        store_activations (bool, optional): MZ attention stores its
            activations for backward instead of recomputing them
            (:func:`mzlayers.set_recompute`): faster, about four times the
            training memory; the record says which (:obj:`"activations"`).
            (default: :obj:`False`)
    """
    accelerator: str = "auto"
    devices: int | str = 1
    strategy: str = "auto"
    precision: str = "32-true"
    num_nodes: int = 1
    deterministic: bool = False
    compile: bool = False
    num_workers: int = 0
    progress: bool | None = None
    keep_checkpoints: bool = False
    data_root: str | None = None
    seeds_together: bool = False
    store_activations: bool = False


def write_json_atomic(obj: Any, path: str) -> None:
    r"""Writes :obj:`obj` as JSON to :obj:`path` through a temporary file in
    the same folder and :func:`os.replace`, so readers never see a partial
    file (:func:`~mzattn.repro.core.faults.atomic_write`: ENOSPC raises
    :class:`~mzattn.repro.core.faults.NoSpace`)."""
    def write(f) -> None:
        json.dump(obj, f, indent=2, sort_keys=True, default=str)
        f.write("\n")
    atomic_write(path, write)


class RecordError(ValueError):
    r"""A cell JSON that cannot be used: unreadable (truncated, not JSON) or
    foreign (another :obj:`version`, not a record). Its message names the
    file."""
    def __init__(self, path: str, reason: str) -> None:
        super().__init__(f"{path}: {reason}")
        self.path, self.reason = path, reason


_REQUIRED = {"ok": ("cell_id", "config", "profile", "metrics"),
             "failed": ("cell_id", "config")}


def record_problem(record: Any) -> str | None:
    r"""Why :obj:`record` (a parsed cell JSON) is not a record of this
    harness, or :obj:`None` if it is one."""
    if not isinstance(record, dict):
        return f"not a cell record (a JSON {type(record).__name__})"
    if record.get("version") != RECORD_VERSION:
        return f"record version {record.get('version')!r}, this harness reads {RECORD_VERSION}"
    status = record.get("status")
    if status not in _REQUIRED:
        return f"status {status!r} is neither 'ok' nor 'failed'"
    missing = [key for key in _REQUIRED[status] if key not in record]
    if missing:
        return f"{status} record without {', '.join(map(repr, missing))}"
    config = record["config"]
    if not isinstance(config, dict) or not {"row", "column"} <= set(config):
        return "'config' names no row and column"
    if batching_of(config) not in BATCHINGS:
        return f"batching {batching_of(config)!r} is not one of {', '.join(BATCHINGS)}"
    if status == "ok" and not isinstance(record["metrics"], dict):
        return "'metrics' is not an object"
    return None


def metrics_digest(record: dict[str, Any]) -> str:
    r"""SHA-256 of a record's :obj:`metrics` and :obj:`test_target_var` as
    canonical JSON, written with the record (:obj:`metrics_sha256`) so that
    a later edit of a number shows (:mod:`~mzattn.repro.report.trust`). A twin
    that reuses the record keeps it: it covers the numbers, not the cell."""
    numbers = {"metrics": record.get("metrics"), "test_target_var": record.get("test_target_var")}
    return hashlib.sha256(json.dumps(numbers, sort_keys=True).encode()).hexdigest()


def read_record(path: str) -> dict[str, Any] | None:
    r"""The record at :obj:`path`, or :obj:`None` if there is none.

    Raises:
        RecordError: The file is unreadable or foreign (:func:`record_problem`).
    """
    if not osp.exists(path):
        return None
    try:
        with open(path) as f:
            record = json.load(f)
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as error:
        raise RecordError(path, f"unreadable ({error})") from None
    problem = record_problem(record)
    if problem is not None:
        raise RecordError(path, problem)
    return record


def peek_record(path: str) -> dict[str, Any] | None:
    r"""The record at :obj:`path`, :obj:`None` if there is none or it is
    unusable (read only: an unusable file is left where it is)."""
    try:
        return read_record(path)
    except RecordError:
        return None


def _previous(path: str) -> dict[str, Any] | None:
    # The record, an unusable one set aside and named (call under the cell's lock).
    try:
        return read_record(path)
    except RecordError as error:
        with contextlib.suppress(FileNotFoundError):
            aside = set_aside(path, "unreadable")
            print(f"[mzattn-repro] {error}; moved to {aside}, the cell runs again",
                  file=sys.stderr, flush=True)
        return None


def _identity(config: dict[str, Any]) -> str:
    # everything that determines the result; the table name is the folder's
    return run_of(config, place=("table",))


def is_finished(record: dict[str, Any] | None, config: dict[str, Any]) -> bool:
    r"""Whether :obj:`record` is a successful run of exactly :obj:`config`
    (a cell whose profile, task or model changed since is run again)."""
    return record is not None and record.get("status") == "ok" \
        and _identity(record.get("config", {})) == _identity(config)


def stale_problem(spec: TableSpec, record: dict[str, Any]) -> str | None:
    r"""Why :obj:`record`, a record of one of :obj:`spec`'s cells, is not a
    run of that cell as :obj:`spec` defines it now (its profile, task, model
    or training changed since it ran), naming each field that differs with
    the recorded value and today's; :obj:`None` if it is one, or if
    :obj:`spec` has no such row or column (a view of a table, such as the
    demo's, leaves those out). The runner runs a stale cell again
    (:func:`is_finished`); reports do not count its record."""
    config = record["config"]
    row = next((r for r in spec.rows if r.label == config["row"]), None)
    if row is None or config["column"] not in {c.label for c in spec.columns}:
        return None
    if record.get("profile") not in spec.profiles:
        return f"profile {record.get('profile')!r} is not one of {sorted(spec.profiles)}"
    cell = Cell(spec.key, row, spec.column(config["column"]), config.get("seed", 0),
                batching_of(config))
    now, then = (json.loads(_identity(c))
                 for c in (cell_config(spec, cell, record["profile"]), config))
    changes = [f"{field} {old!r} (now {new!r})" for field, old, new in _changes(then, now)]
    return "stale: " + "; ".join(changes) if changes else None


def _changes(then: dict[str, Any], now: dict[str, Any],
             prefix: str = "") -> Iterator[tuple[str, Any, Any]]:
    # (dotted field, recorded value, today's value) for each field that differs
    for key in sorted(then.keys() | now.keys()):
        old, new = then.get(key), now.get(key)
        if isinstance(old, dict) and isinstance(new, dict):
            yield from _changes(old, new, f"{prefix}{key}.")
        elif old != new:
            yield f"{prefix}{key}", old, new


def cell_config(spec: TableSpec, cell: Cell, profile_name: str) -> dict[str, Any]:
    r"""Everything that determines a cell's result (stored in its JSON)."""
    profile = column_profile(spec.profile(profile_name), cell.column)
    return {
        "table": spec.key, "row": cell.row.label, "model": cell.row.model,
        "model_overrides": cell.column.overrides_for(cell.row), "column": cell.column.label,
        "task": cell.column.task, "task_overrides": task_overrides(profile, cell.column),
        "normalize": cell.column.normalize, "seed": cell.seed,
        "loss": spec.loss_of(cell.column.label), "profile": profile_name,
        "training": {k: v for k, v in asdict(profile).items()
                     if k not in ("seeds", "rows", "columns", "data")},
        "weight_decay": WEIGHT_DECAY, "gradient_clip": GRADIENT_CLIP,
        "batching": cell.batching,
    }


def task_overrides(profile: Profile, column: Column) -> dict[str, Any]:
    r"""Task fields of a cell: the profile's split sizes, then the column's,
    then the profile's dataset options (:obj:`Profile.data`)."""
    return {**profile.sizes(), **column.overrides, **profile.data}


def column_profile(profile: Profile, column: Column) -> Profile:
    r"""The profile a cell of :obj:`column` trains with: :obj:`profile` with
    the column's :obj:`training` fields replaced."""
    return dataclasses.replace(profile, **column.training) if column.training else profile


def _callbacks(cell: Cell, profile: Profile, ckpt_dir: str, progress: bool,
               history: History) -> list[pl.Callback]:
    callbacks = [
        history,
        CellCheckpoint(dirpath=ckpt_dir, filename="best", monitor="val/loss", mode="min",
                       save_top_k=1, enable_version_counter=False),
        # last.ckpt after every epoch, once the best one is saved: save_last=True above writes
        # it only in the epochs where val/loss improves, so a kill in a plateau lost them
        CellCheckpoint(dirpath=ckpt_dir, filename="last", enable_version_counter=False),
        EarlyStopping(monitor="val/loss", mode="min", patience=profile.patience),
        StopBetweenSteps(osp.join(ckpt_dir, "last.ckpt"), stage_name(cell)),
    ]
    label = f"{cell.row.label} {cell.column.label} seed {cell.seed}"
    return callbacks if progress else [*callbacks, EpochLogger(label)]


def cell_data(cell: Cell, profile: Profile, options: RunOptions) -> SetDataModule:
    r"""The data of :obj:`cell` as it trains: its task and seed with the
    split sizes of :obj:`profile` (the column's, :func:`column_profile`),
    the column's overrides, and the cache root of :obj:`options`."""
    return SetDataModule(cell.column.task, seed=cell.seed,
                         overrides=task_overrides(profile, cell.column),
                         normalize=cell.column.normalize, batch_size=profile.batch_size,
                         num_workers=options.num_workers, root=options.data_root,
                         batching=cell.batching)


def build_cell(spec: TableSpec, cell: Cell, profile: Profile,
               options: RunOptions) -> tuple[SetModule, SetDataModule]:
    r"""The module and the data of :obj:`cell` at its initialisation, built
    under the global seed as it is (:func:`train_cell` seeds it first)."""
    from mzattn.baselines import build_model
    reach("data", stage_name(cell))
    data = cell_data(cell, profile, options)
    train, loss = data.train_dataset, spec.loss_of(cell.column.label)
    reach("model", stage_name(cell))
    num_classes = getattr(train, "num_classes", None) if loss == "cross_entropy" else None
    out = output_channels(loss, data.target_dim, num_classes)
    model = build_model(cell.row.model, data.in_channels, out,
                        **cell.column.overrides_for(cell.row))
    set_recompute(model, not options.store_activations)
    module = SetModule(model, loss=loss, target_dim=data.target_dim,
                       num_classes=num_classes, lr=profile.lr, weight_decay=WEIGHT_DECAY,
                       warmup_epochs=profile.warmup_epochs, max_epochs=profile.max_epochs,
                       target_mean=train.target_mean, target_std=train.target_std,
                       compile=options.compile)
    return module, data


def train_cell(spec: TableSpec, cell: Cell, profile_name: str, out: str,
               options: RunOptions) -> dict[str, Any]:
    r"""Trains and tests one cell; returns the metrics part of its record.

    The model with the lowest validation loss is restored before the single
    test evaluation. A :obj:`last.ckpt` left by a killed run is resumed,
    in the middle of an epoch when a signal stopped it there
    (:class:`~mzattn.repro.training.checkpoints.StopBetweenSteps`), and
    without one a park of an earlier session
    (:func:`~mzattn.repro.training.parking.unpark`).
    """
    profile = column_profile(spec.profile(profile_name), cell.column)
    pl.seed_everything(cell.seed, workers=True, verbose=False)
    module, data = build_cell(spec, cell, profile, options)
    ckpt_dir = checkpoint_dir(out, cell)
    progress = show_progress_bar(options.progress)
    history = History(spec.metric_of(cell.column.label), csv_path=log_path(out, cell))
    trainer = pl.Trainer(
        max_epochs=profile.max_epochs, accelerator=options.accelerator,
        devices=options.devices, strategy=options.strategy, num_nodes=options.num_nodes,
        precision=options.precision, deterministic=options.deterministic,
        gradient_clip_val=GRADIENT_CLIP,
        callbacks=_callbacks(cell, profile, ckpt_dir, progress, history),
        logger=False, enable_progress_bar=progress, enable_model_summary=False,
        default_root_dir=ckpt_dir, num_sanity_val_steps=0,
        plugins=[AtomicCheckpointIO(stage_name(cell))])
    last = osp.join(ckpt_dir, "last.ckpt")
    unpark(out, cell)  # a park of an earlier session, when the cell has no last.ckpt here
    resumed = resumable(last, module)  # a corrupt or foreign one is set aside: a restart
    # AtomicCheckpointIO loads with weights_only=True whatever Lightning asks for
    trainer.fit(module, datamodule=data, ckpt_path=last if resumed else None)
    checkpoint = trainer.checkpoint_callback
    best = checkpoint.best_model_path or None
    # read before testing: loading the best checkpoint also restores the callbacks' states
    # as they were at the best epoch (a shorter history, early stopping not yet fired)
    early = next(cb for cb in trainer.callbacks if isinstance(cb, EarlyStopping))
    stopped_early, curve, runs = early.stopped_epoch > 0, list(history.rows), list(history.runs)
    reach("test", stage_name(cell))
    test = trainer.test(module, datamodule=data, ckpt_path=best, verbose=False)[0]
    return test_fields(test, module, data, trainer, profile) | {
        "best_val_loss": None if checkpoint.best_model_score is None
        else float(checkpoint.best_model_score),
        "epochs": trainer.current_epoch, "stopped_early": stopped_early,
        "history": curve, "resumed": resumed, "runs": runs,
    } | activations_of(runs)


def test_fields(test: dict[str, Any], module: SetModule, data: SetDataModule,
                trainer: pl.Trainer, profile: Profile) -> dict[str, Any]:
    r"""The fields of a record that the test (:obj:`test`, what
    :meth:`~lightning.pytorch.Trainer.test` returned), the data, the
    trainer and the profile give."""
    return {
        "metrics": {k.removeprefix("test/"): float(v) for k, v in test.items()},
        "test_target_var": module.test_target_var,
        "max_epochs": profile.max_epochs, "patience": profile.patience,
        "split_sizes": [len(split) for split in data.splits],
        "params": sum(p.numel() for p in module.model.parameters() if p.requires_grad),
        "device": device_name(trainer.strategy.root_device),
        "world_size": trainer.world_size, "precision": str(trainer.precision),
    }


def device_name(device: torch.device) -> str:
    r"""A record's :obj:`device`, e.g. :obj:`"cpu (1 threads)"`."""
    if device.type == "cuda":
        return f"cuda ({torch.cuda.get_device_name(device)})"
    return f"{device.type} ({torch.get_num_threads()} threads)"


def _remove_checkpoints(out: str, cell: Cell) -> None:
    folder = checkpoint_dir(out, cell)
    shutil.rmtree(folder, ignore_errors=True)
    with contextlib.suppress(OSError):  # the table's ckpt/ folder, once empty
        os.rmdir(osp.dirname(folder))
    remove_parked(out, cell)


def _better(new: dict[str, Any], old: dict[str, Any] | None) -> bool:
    # A record never replaces a better one of the same configuration: ok beats failed.
    return old is None or old.get("status") != "ok" or new.get("status") == "ok" \
        or _identity(old.get("config", {})) != _identity(new.get("config", {}))


def run_cell(spec: TableSpec, cell: Cell, profile: str, out: str,
             options: RunOptions | None = None) -> dict[str, Any]:
    r"""Runs one cell unless its JSON already holds a finished run of the
    same configuration (:func:`is_finished`), and returns its record (with
    :obj:`"skipped": True` when it was not rerun). A cell whose finished
    twin, the same run in another table, is in :obj:`out`
    (:mod:`~mzattn.repro.training.twins`) takes the twin's record, with
    :obj:`"reused_from"` naming its file; while a twin trains in another
    process, the cell waits for it. Any exception is recorded
    as a failed cell with its traceback instead of propagating. Only global
    rank zero writes.

    A cell runs under a lock (:func:`lock_path`, an OS file lock that dies
    with its owner): when another live process holds it, the cell is left
    to that process and its record says :obj:`"status": "busy"`. A JSON
    that is unreadable or foreign (:class:`RecordError`) is set aside and
    the cell runs again.

    Raises:
        ~mzattn.repro.core.faults.Interrupted: SIGTERM or SIGINT arrived; no
            record was written and the checkpoints are kept, so that the
            same command resumes the cell.
        ~mzattn.repro.core.faults.NoSpace: The disk is full; nothing partial
            was written.
    """
    options = options or RunOptions()
    config = cell_config(spec, cell, profile)
    previous = peek_record(cell_path(out, cell))
    if is_finished(previous, config):
        return previous | {"skipped": True}
    try:
        with stop_on_signals():
            reach("start", stage_name(cell))
            return _run_exclusive(spec, cell, profile, out, options, config)
    except Interrupted as stop:
        raise stop.during(_resume_hint(out, cell)) from None


def _reuse(out: str, cell: Cell, config: dict[str, Any], path: str, twin: dict[str, Any],
           keep_checkpoints: bool) -> dict[str, Any]:
    # the twin's record (and learning curve) as this cell's, naming its file; the cell's own
    # checkpoints and park, of a run begun before the twin finished, go as a finished cell's do
    source = osp.relpath(path, out)
    record = twin | {"config": config, "cell_id": cell.cell_id, "reused_from": source}
    if rank_zero_only.rank == 0:
        curve = osp.join(osp.dirname(osp.dirname(path)), "logs",
                         osp.basename(path).removesuffix(".json") + ".csv")
        if osp.exists(curve):
            with open(curve, encoding="utf-8") as f:
                text = f.read()
            atomic_write_text(text, log_path(out, cell))
        write_json_atomic(record, cell_path(out, cell))  # last: the record marks it done
        if not keep_checkpoints:
            _remove_checkpoints(out, cell)
        print(f"[mzattn-repro] {cell.table} {cell.cell_id}: the same run as {source} "
              "(twins.py); its record is reused", file=sys.stderr, flush=True)
    return record


def _resume_hint(out: str, cell: Cell) -> str:
    last = osp.join(checkpoint_dir(out, cell), "last.ckpt")
    where = f"from {last}" if osp.exists(last) else "from scratch (no training step had finished)"
    return (f"cell {cell.cell_id} of {cell.table} before its record was written; rerun the "
            f"same command to resume it {where}")


def _run_exclusive(spec: TableSpec, cell: Cell, profile: str, out: str, options: RunOptions,
                   config: dict[str, Any]) -> dict[str, Any]:
    metric = spec.metric_of(cell.column.label)
    if rank_zero_only.rank != 0 or torch.distributed.is_initialized():
        return _reuse_or_train(spec, cell, profile, out, options, config, metric)
    try:
        os.makedirs(osp.dirname(lock_path(out, cell)), exist_ok=True)
        with FileLock(lock_path(out, cell), timeout=0):
            previous = _previous(cell_path(out, cell))  # finished while we waited?
            if is_finished(previous, config):
                return previous | {"skipped": True}
            with _run_lock(out, cell, config, metric):
                return _reuse_or_train(spec, cell, profile, out, options, config, metric)
    except Timeout:
        return {"status": "busy", "cell_id": cell.cell_id, "config": config}
    except OSError as error:
        if is_no_space(error):
            raise no_space(error, out) from None
        raise


@contextlib.contextmanager
def _run_lock(out: str, cell: Cell, config: dict[str, Any], metric: str) -> Iterator[None]:
    # the run's lock (twins.py), waiting for a twin that trains it in another process
    path = run_lock_path(out, config, metric)
    os.makedirs(osp.dirname(path), exist_ok=True)
    lock = FileLock(path)
    try:
        lock.acquire(timeout=0)
    except Timeout:
        print(f"[mzattn-repro] {cell.table} {cell.cell_id}: its twin, the same run in another "
              "table, is training in another process (twins.py); waiting for it",
              file=sys.stderr, flush=True)
        lock.acquire()  # SIGTERM and SIGINT still stop the wait (stop_on_signals)
    try:
        yield
    finally:
        lock.release()


def _reuse_or_train(spec: TableSpec, cell: Cell, profile: str, out: str, options: RunOptions,
                    config: dict[str, Any], metric: str) -> dict[str, Any]:
    twin = find_twin(out, config, metric, peek_record)
    if twin is not None:
        return _reuse(out, cell, config, *twin, keep_checkpoints=options.keep_checkpoints)
    return _run_locked(spec, cell, profile, out, options, config)


def _run_locked(spec: TableSpec, cell: Cell, profile: str, out: str, options: RunOptions,
                config: dict[str, Any]) -> dict[str, Any]:
    record = new_record(cell, profile, config)
    start = time.perf_counter()
    try:
        record |= ok_fields(train_cell(spec, cell, profile, out, options))
    except Exception as error:  # a failed cell must not stop the table
        record |= failed_fields(error, out, f"cell {cell.cell_id}")
    record |= {"wall_time_s": time.perf_counter() - start}
    return save_record(record, out, cell, options)


def new_record(cell: Cell, profile: str, config: dict[str, Any]) -> dict[str, Any]:
    r"""The fields of :obj:`cell`'s record that name the run."""
    return {"version": RECORD_VERSION, "profile": profile, "config": config,
            "cell_id": cell.cell_id}


def ok_fields(trained: dict[str, Any]) -> dict[str, Any]:
    r"""The fields of a finished run's record: :obj:`trained` (what
    :func:`train_cell` returns), its status and :obj:`metrics_sha256`."""
    fields = trained | {"status": "ok"}
    return fields | {"metrics_sha256": metrics_digest(fields)}


def failed_fields(error: Exception, out: str, what: str) -> dict[str, Any]:
    r"""The fields of a failed run's record, said on stderr as :obj:`what`
    failed (call in the :obj:`except` block that caught :obj:`error`).

    Raises:
        ~mzattn.repro.core.faults.NoSpace: The disk is full: the run did not fail.
        ~mzattn.repro.core.faults.Interrupted: A stop signal broke off a write.
    """
    if is_no_space(error):
        raise no_space(error, out) from None
    if (signum := stop_signal()) is not None:
        raise Interrupted(signum) from error
    fields = {"status": "failed", "error": f"{type(error).__name__}: {error}",
              "traceback": traceback.format_exc()}
    print(f"[mzattn-repro] {what} failed: {fields['error']}", file=sys.stderr, flush=True)
    return fields


def save_record(record: dict[str, Any], out: str, cell: Cell,
                options: RunOptions) -> dict[str, Any]:
    r"""Adds the environment to :obj:`record` and writes it as :obj:`cell`'s
    JSON (global rank zero, unless the JSON holds a better one), removing a
    finished cell's checkpoints, parked ones included
    (:func:`~mzattn.repro.training.parking.remove_parked`), unless
    :obj:`options` keeps them; returns it."""
    record |= environment_record()
    if rank_zero_only.rank == 0 and _better(record, peek_record(cell_path(out, cell))):
        write_json_atomic(record, cell_path(out, cell))
        if record["status"] == "ok" and not options.keep_checkpoints:
            _remove_checkpoints(out, cell)
    return record
