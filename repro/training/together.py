r"""Seeds together (:obj:`--seeds-together`): the seeds of one cell of a
table, a row on a column, trained as one group in one process on one
device, :math:`K` replicas of the model stacked into one module
(:class:`~mzattn.stacked.StackedSeeds`, :func:`torch.func.vmap`), so that
a small model fills a GPU.

Each seed keeps what it has when it trains alone
(:func:`~mzattn.repro.training.cells.train_cell`): its data and shuffling
order, its initialisation (built right after :obj:`seed_everything(seed)`),
AdamW with the warm-up and cosine schedule, its own gradient clipping, its
own early stopping (a stopped seed is frozen,
:meth:`~mzattn.stacked.StackedSeeds.freeze`, while the others go on) and its
own best epoch on the validation loss, restored for the single test, which
Lightning runs on that seed alone. Each seed gets the record it gets alone,
at its own path, with :obj:`seeds_together` (the group's size) and
:obj:`trained_with: "stacked"` added; its :obj:`wall_time_s` is its share
of the group's time, :obj:`group_wall_time_s`, and its history's
:obj:`epoch_time_s` the group's epoch.

Two things differ from training alone: the model runs on the static-shape
path (each batch padded and masked, :func:`~mzattn.stacked.stack_sets`),
whose outputs equal the ragged path's up to float rounding, and dropout
draws other masks (from the same distribution).

A killed group resumes: after every epoch it writes one checkpoint
(:mod:`~mzattn.repro.training.group_checkpoint`), and the same command
goes on from the last epoch it finished, with the same seeds. The seeds whose
records are finished are skipped; those another process holds, or whose
finished twin can be reused (:mod:`~mzattn.repro.training.twins`), are
left to :func:`~mzattn.repro.training.cells.run_cell` after the group, as
is every seed of a group that cannot train stacked (:func:`fallback_reason`).
"""
import contextlib
import math
import os
import os.path as osp
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import lightning.pytorch as pl
import torch
from filelock import FileLock, Timeout
from mzattn.repro.core.faults import Interrupted, stop_on_signals
from mzattn.repro.core.spec import Profile, TableSpec
from torch import Tensor

from mzattn.stacked import StackedSeeds, stack_sets, unstackable_reason

from .cells import (
    GRADIENT_CLIP,
    RecordError,
    RunOptions,
    build_cell,
    cell_config,
    column_profile,
    failed_fields,
    is_finished,
    new_record,
    ok_fields,
    peek_record,
    read_record,
    run_cell,
    save_record,
    test_fields,
)
from .datamodule import SetDataModule
from .group_checkpoint import group_checkpoint_path, load_group, save_group
from .history import activations_of, earlier_runs, run_entry, write_csv_atomic
from .layout import Cell, cell_path, checkpoint_dir, lock_path, log_path, stage_name
from .lightning_module import SetModule, warmup_cosine
from .stages import reach
from .twins import find_twin, run_lock_path

TRAINED_WITH = "stacked"
r"""The :obj:`trained_with` of a record of a seed trained in a group."""

SINGLE_PRECISION = ("32-true", "32")
r"""The Lightning precisions a group trains in."""


class Fallback(Exception):
    r"""A group that cannot train stacked; its message says why."""


def seed_groups(cells: Sequence[Cell]) -> list[list[Cell]]:
    r""":obj:`cells` as groups of the seeds of one cell (table, row,
    column and batching), in the order of each group's first seed."""
    groups: dict[tuple[str, str, str, str], list[Cell]] = {}
    for cell in cells:
        key = (cell.table, cell.row.label, cell.column.label, cell.batching)
        groups.setdefault(key, []).append(cell)
    return list(groups.values())


def fallback_reason(cells: Sequence[Cell], options: RunOptions) -> str | None:
    r"""Why the seeds :obj:`cells` of one cell train one after another
    rather than together, or :obj:`None` if they can train together. The
    model itself is checked once built (:func:`~mzattn.stacked.unstackable_reason`)."""
    if len(cells) < 2:
        return f"{len(cells)} seed to train"
    if options.compile:
        return "--compile trains each seed under torch.compile, a group under torch.func.vmap"
    if str(options.precision) not in SINGLE_PRECISION:
        return f"precision {options.precision}: a group trains in 32-true only"
    if str(options.devices) != "1" or options.num_nodes != 1 or options.strategy != "auto":
        return (f"devices {options.devices}, nodes {options.num_nodes}, strategy "
                f"{options.strategy}: a group trains on one device")
    return None


def _say(text: str) -> None:
    print(f"[mzattn-repro] {text}", file=sys.stderr, flush=True)


def _name(cells: Sequence[Cell]) -> str:
    seeds = ",".join(str(cell.seed) for cell in cells)
    return f"{cells[0].table} {cells[0].row.label} on {cells[0].column.label}, seeds {seeds}"


# ------------------------------------------------------------------ running
def run_seed_group(spec: TableSpec, cells: Sequence[Cell], profile: str, out: str,
                   options: RunOptions) -> list[dict[str, Any]]:
    r"""Runs the seeds :obj:`cells` of one cell together and returns their
    records in the order of :obj:`cells`, as
    :func:`~mzattn.repro.training.cells.run_cell` returns each (finished
    ones skipped, a failure recorded for every seed of the group).

    Raises:
        ~mzattn.repro.core.faults.Interrupted: SIGTERM or SIGINT arrived; no
            record of the group was written.
        ~mzattn.repro.core.faults.NoSpace: The disk is full.
    """
    records: dict[int, dict[str, Any]] = {}
    for cell in cells:
        previous = peek_record(cell_path(out, cell))
        if is_finished(previous, cell_config(spec, cell, profile)):
            records[cell.seed] = previous | {"skipped": True}
    todo = [cell for cell in cells if cell.seed not in records]
    reason = fallback_reason(todo, options) if todo else None
    if todo and reason is None:
        try:
            with stop_on_signals():
                records |= _run_claimed(spec, todo, profile, out, options)
        except Fallback as fallback:
            reason = str(fallback)
        except Interrupted as stop:
            raise stop.during(f"{_name(todo)}, trained together, before their records were "
                              "written; rerun the same command to resume the group from its "
                              "last finished epoch") from None
    if reason is not None:
        _say(f"{_name(todo)}: trained one after another, not together: {reason}")
    for cell in todo:
        if cell.seed not in records:
            records[cell.seed] = run_cell(spec, cell, profile, out, options)
    return [records[cell.seed] for cell in cells]


def _run_claimed(spec: TableSpec, cells: Sequence[Cell], profile: str, out: str,
                 options: RunOptions) -> dict[int, dict[str, Any]]:
    # the seeds this process can claim train together; the others are left to run_cell
    for cell in cells:
        reach("start", stage_name(cell))
    with contextlib.ExitStack() as locks:
        group = [cell for cell in cells if _claim(locks, spec, cell, profile, out)]
        if len(group) < 2:
            raise Fallback(f"{len(group)} seed free to train (the others are busy in another "
                           "process, twins of finished runs or unreadable records)")
        return _train_and_record(spec, group, profile, out, options)


def _claim(locks: contextlib.ExitStack, spec: TableSpec, cell: Cell, profile: str,
           out: str) -> bool:
    # takes the cell's lock and its run's lock (cells.py, twins.py) into `locks`, if the
    # cell is free, unfinished and has no finished twin
    config, metric = cell_config(spec, cell, profile), spec.metric_of(cell.column.label)
    with contextlib.ExitStack() as held:
        for path in (lock_path(out, cell), run_lock_path(out, config, metric)):
            os.makedirs(osp.dirname(path), exist_ok=True)
            lock = FileLock(path)
            try:
                lock.acquire(timeout=0)
            except Timeout:
                return False
            held.callback(lock.release)
        try:
            previous = read_record(cell_path(out, cell))
        except RecordError:
            return False
        if is_finished(previous, config) or find_twin(out, config, metric, peek_record):
            return False
        locks.enter_context(held.pop_all())
    return True


def _train_and_record(spec: TableSpec, cells: Sequence[Cell], profile: str, out: str,
                      options: RunOptions) -> dict[int, dict[str, Any]]:
    start = time.perf_counter()
    try:
        fields = [ok_fields(trained) for trained in train_group(spec, cells, profile, out,
                                                                 options)]
    except Fallback:
        raise
    except Exception as error:  # a failed group must not stop the table
        fields = [failed_fields(error, out, _name(cells))] * len(cells)
    seconds = time.perf_counter() - start
    group = {"seeds_together": len(cells), "trained_with": TRAINED_WITH,
             "wall_time_s": seconds / len(cells), "group_wall_time_s": seconds}
    return {cell.seed: save_record(new_record(cell, profile, cell_config(spec, cell, profile))
                                   | trained | group, out, cell, options)
            for cell, trained in zip(cells, fields, strict=True)}


# ----------------------------------------------------------------- training
@dataclass
class _Seed:
    # one seed of a group: what it trains with, and its early stopping and best epoch
    cell: Cell
    module: SetModule
    data: SetDataModule
    loaders: tuple[Any, Any]  # training and validation, made once (their workers persist)
    rows: list[dict[str, Any]] = field(default_factory=list)
    best_val: float = math.inf
    best_state: dict[str, Tensor] | None = None  # the weights of its best epoch
    early_best: float = math.inf
    wait: int = 0
    stopped_epoch: int | None = None


def train_group(spec: TableSpec, cells: Sequence[Cell], profile_name: str, out: str,
                options: RunOptions) -> list[dict[str, Any]]:
    r"""Trains the seeds :obj:`cells` of one cell together, tests each at
    its best epoch, and returns what
    :func:`~mzattn.repro.training.cells.train_cell` returns for each.

    Raises:
        Fallback: The model cannot be stacked.
    """
    profile = column_profile(spec.profile(profile_name), cells[0].column)
    seeds = [_build(spec, cell, profile, options) for cell in cells]
    reason = unstackable_reason(seeds[0].module.model)
    if reason is not None:
        raise Fallback(reason)
    if options.deterministic:  # as Lightning's Trainer(deterministic=True) sets it
        os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")
        torch.use_deterministic_algorithms(True)
    device = _device(options)
    stacked = StackedSeeds([seed.module.model for seed in seeds]).to(device)
    for seed in seeds:
        seed.module.to(device)
    optimizer = torch.optim.AdamW(stacked.parameters(), lr=profile.lr,
                                  weight_decay=seeds[0].module.weight_decay)
    scheduler = torch.optim.lr_scheduler.LambdaLR(
        optimizer, lambda epoch: warmup_cosine(epoch, profile.warmup_epochs, profile.max_epochs))
    stacked.keep_frozen(optimizer)
    metric = spec.metric_of(cells[0].column.label)
    training = (stacked, optimizer, scheduler, seeds)
    path = group_checkpoint_path(out, cells)
    configs = [cell_config(spec, cell, profile_name) for cell in cells]
    state = load_group(path, configs)
    start = _resume(state, *training)
    runs = _runs(state, seeds[0].module.model) + [run_entry(start + 1, seeds[0].module.model)]
    for epoch in range(start, profile.max_epochs):
        if len(stacked.frozen) == len(seeds):
            break
        _epoch(stacked, seeds, optimizer, epoch=epoch, profile=profile, metric=metric,
               out=out, device=device)
        scheduler.step()
        save_group(path, _state(epoch + 1, configs, *training) | {"runs": runs})
    fields = {"resumed": start > 0, "runs": runs} | activations_of(runs)
    return [_test(seed, profile, out, options) | fields for seed in seeds]


_SEED_FIELDS = ("rows", "best_val", "best_state", "early_best", "wait", "stopped_epoch")
r"""What a group checkpoint keeps of each seed (:class:`_Seed`)."""


def _state(epochs: int, configs: list[dict[str, Any]], stacked: StackedSeeds,
           optimizer: torch.optim.Optimizer, scheduler: Any,
           seeds: list[_Seed]) -> dict[str, Any]:
    # what a group resumes from after `epochs` epochs (group_checkpoint.py)
    return {"epochs": epochs, "configs": configs, "stacked": stacked.state_dict(),
            "optimizer": optimizer.state_dict(), "scheduler": scheduler.state_dict(),
            "rng": torch.get_rng_state(),
            "seeds": [{name: getattr(seed, name) for name in _SEED_FIELDS} for seed in seeds]}


def _runs(state: dict[str, Any] | None, model: torch.nn.Module) -> list[dict[str, Any]]:
    # the runs before this one, as History keeps them (history.earlier_runs)
    return earlier_runs((state or {}).get("runs"), model, restored=state is not None)


def _resume(state: dict[str, Any] | None, stacked: StackedSeeds,
            optimizer: torch.optim.Optimizer, scheduler: Any, seeds: list[_Seed]) -> int:
    # the group as `state` left it (nothing without one); returns the epochs it had done
    if state is None:
        return 0
    stacked.load_state_dict(state["stacked"])
    optimizer.load_state_dict(state["optimizer"])
    scheduler.load_state_dict(state["scheduler"])
    torch.set_rng_state(state["rng"])
    for seed, fields in zip(seeds, state["seeds"], strict=True):
        for name in _SEED_FIELDS:
            setattr(seed, name, fields[name])
    _say(f"{_name([seed.cell for seed in seeds])}: resumed after epoch {state['epochs']}")
    return state["epochs"]


def _build(spec: TableSpec, cell: Cell, profile: Profile, options: RunOptions) -> _Seed:
    # as train_cell builds it: the same global seed, so the same initialisation
    pl.seed_everything(cell.seed, workers=True, verbose=False)
    module, data = build_cell(spec, cell, profile, options)
    return _Seed(cell, module, data, (data.train_dataloader(), data.val_dataloader()))


def _device(options: RunOptions) -> torch.device:
    # Lightning's accelerators: "gpu" and "cuda" name CUDA, "auto" takes it when it is there
    cuda = options.accelerator in ("gpu", "cuda") or (options.accelerator == "auto"
                                                      and torch.cuda.is_available())
    return torch.device("cuda" if cuda else "cpu")


def _epoch(stacked: StackedSeeds, seeds: list[_Seed], optimizer: torch.optim.Optimizer, *,
           epoch: int, profile: Profile, metric: str, out: str, device: torch.device) -> None:
    # one training epoch of every seed still training, its validation, then each seed's
    # history row, best epoch and early stopping
    active = [k for k in range(len(seeds)) if k not in stacked.frozen]
    lr, start = optimizer.param_groups[0]["lr"], time.perf_counter()
    for seed in seeds:
        seed.loaders[0].sampler.set_epoch(epoch)
    train = _Means()
    stacked.train()
    for batches in zip(*(seed.loaders[0] for seed in seeds), strict=True):
        losses = _losses(stacked, seeds, batches, active, "train", device)
        optimizer.zero_grad(set_to_none=True)
        sum(losses.values()).backward()
        stacked.clip_grad_norm_(GRADIENT_CLIP)
        optimizer.step()
        train.add(losses, batches[0].num_graphs)
    val = _Means()
    stacked.eval()
    with torch.no_grad():
        for batches in zip(*(seed.loaders[1] for seed in seeds), strict=True):
            val.add(_losses(stacked, seeds, batches, active, "val", device),
                    batches[0].num_graphs)
    seconds = time.perf_counter() - start
    for k in active:
        seed = seeds[k]
        seed.module.metrics["train_metrics"].reset()
        metrics = seed.module.metrics["val_metrics"]
        scores = {"loss": val.mean(k)} | {name: float(v) for name, v in metrics.compute().items()}
        metrics.reset()
        seed.rows.append({"epoch": epoch + 1, "train_loss": train.mean(k),
                          "val_loss": scores["loss"], "val_metric": scores.get(metric),
                          "lr": lr, "epoch_time_s": seconds})
        write_csv_atomic(seed.rows, log_path(out, seed.cell))
        _select(stacked, seed, k, epoch, profile.patience)
    _say(f"{_name([seeds[k].cell for k in active])}: epoch {epoch + 1}/{profile.max_epochs} "
         f"lr={lr:.3g} val/loss=" + ",".join(f"{val.mean(k):.4g}" for k in active))


def _losses(stacked: StackedSeeds, seeds: list[_Seed], batches: Sequence[Any],
            active: list[int], stage: str, device: torch.device) -> dict[int, Tensor]:
    # each active seed's loss on its own batch (the metrics of `stage` updated)
    batches = [seed.data.on_before_batch_transfer(batch, 0)
               for seed, batch in zip(seeds, batches, strict=True)]
    sizes = {batch.num_graphs for batch in batches}
    if len(sizes) > 1:
        raise ValueError(f"The seeds' batches hold {sorted(sizes)} sets: a group needs splits "
                         "of one size")
    x, mask = stack_sets([batch.x for batch in batches], [batch.batch for batch in batches],
                         dim_size=batches[0].num_graphs)  # [K, B, n, F], [K, B, n]
    x = x.to(device, torch.float32) if x.is_floating_point() else x.to(device)
    out = stacked(x, mask=mask.to(device))
    out = (out[0] if isinstance(out, tuple) else out).float()  # [K, B, out]
    return {k: seeds[k].module.objective(out[k], batches[k].y.to(device), stage) for k in active}


class _Means:
    # per seed, the mean of a loss over an epoch's batches, weighted by their sets, summed on
    # the device (no read on the host until the epoch ends)
    def __init__(self) -> None:
        self.sums: dict[int, Tensor] = {}
        self.count = 0

    def add(self, losses: dict[int, Tensor], num_sets: int) -> None:
        for k, loss in losses.items():
            self.sums[k] = self.sums.get(k, 0.0) + loss.detach().double() * num_sets
        self.count += num_sets

    def mean(self, k: int) -> float | None:
        return float(self.sums[k]) / self.count if self.count else None


def _select(stacked: StackedSeeds, seed: _Seed, k: int, epoch: int, patience: int) -> None:
    # the best epoch (Lightning's ModelCheckpoint) and early stopping (its EarlyStopping:
    # strict improvement, a non-finite loss stops); a stopped seed is frozen
    val = seed.rows[-1]["val_loss"]
    if seed.best_state is None or val < seed.best_val:
        seed.best_val, seed.best_state = val, stacked.replica(k).state_dict()
    if math.isfinite(val) and val < seed.early_best:
        seed.early_best, seed.wait = val, 0
        return
    seed.wait += 1
    if not math.isfinite(val) or seed.wait >= patience:
        seed.stopped_epoch = epoch
        stacked.freeze(k)


def _test(seed: _Seed, profile: Profile, out: str, options: RunOptions) -> dict[str, Any]:
    # the seed at its best epoch, tested by Lightning alone
    seed.module.model.load_state_dict(seed.best_state)
    folder = checkpoint_dir(out, seed.cell)
    trainer = pl.Trainer(accelerator=options.accelerator, devices=1, precision=options.precision,
                         deterministic=options.deterministic, logger=False,
                         enable_progress_bar=False, enable_model_summary=False,
                         enable_checkpointing=False, default_root_dir=folder)
    reach("test", stage_name(seed.cell))
    test = trainer.test(seed.module, datamodule=seed.data, verbose=False)[0]
    if options.keep_checkpoints:
        trainer.save_checkpoint(osp.join(folder, "best.ckpt"), weights_only=True)
    stopped = seed.stopped_epoch
    return test_fields(test, seed.module, seed.data, trainer, profile) | {
        "best_val_loss": seed.best_val,
        "epochs": profile.max_epochs if stopped is None else stopped + 1,
        "stopped_early": stopped is not None and stopped > 0,
        "history": seed.rows,
    }
