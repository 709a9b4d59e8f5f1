r"""Cell checkpoints that survive faults: written atomically in their own
folder, loaded with :obj:`weights_only=True` only (a checkpoint is data,
never code), a :obj:`last.ckpt` that does not load, or holds another
model, is set aside so that its cell restarts instead of failing on every
rerun, the callback state it restores names no file outside the cell's
folder, and a signal stops a cell between two training steps with a
checkpoint of the step just done."""
import os
import os.path as osp
import sys
from typing import IO, Any

import lightning.pytorch as pl
import torch
from lightning.fabric.plugins.io.torch_io import TorchCheckpointIO
from lightning.pytorch.callbacks import ModelCheckpoint
from mzattn.repro.core.faults import (
    Interrupted,
    atomic_write,
    hold_signals,
    pending_signal,
    release_signals,
    set_aside,
)

from .datamodule import ResumableLoader
from .stages import PausingFile, pausing, reach


def safe_load(path: str | IO[bytes], map_location: Any = "cpu") -> Any:
    r"""Loads a checkpoint (a file, or its bytes in a file object) with
    :obj:`weights_only=True`: tensors, containers and plain values, never
    arbitrary pickled objects. Any error is raised as a :class:`ValueError`
    that names :obj:`path`."""
    try:
        return torch.load(path, map_location=map_location, weights_only=True)
    except FileNotFoundError:
        raise
    except Exception as error:
        raise ValueError(f"{path}: not a loadable checkpoint "
                         f"({type(error).__name__}: {str(error).splitlines()[0]})") from error


class AtomicCheckpointIO(TorchCheckpointIO):
    r"""Lightning's checkpoint I/O, written through a temporary file in the
    checkpoint's folder and :func:`os.replace` (a full disk or a signal
    leaves the previous checkpoint intact), and read with :func:`safe_load`.

    Args:
        name (str, optional): The cell, for stage :obj:`"checkpoint"`
            (:mod:`~mzattn.repro.training.stages`). (default: :obj:`"cell"`)
    """
    def __init__(self, name: str = "cell") -> None:
        super().__init__()
        self.name = name

    def save_checkpoint(self, checkpoint: dict[str, Any], path: Any,
                        storage_options: Any | None = None) -> None:
        def write(f) -> None:
            torch.save(checkpoint, PausingFile(f, self.name) if pausing("checkpoint") else f)
        atomic_write(str(path), write, binary=True)

    def load_checkpoint(self, path: Any, map_location: Any | None = None,
                        weights_only: bool | None = None) -> dict[str, Any]:
        return safe_load(str(path), map_location)

    def remove_checkpoint(self, path: Any) -> None:
        r"""Removes the checkpoint file :obj:`path`, never a folder (Lightning's
        own removal is recursive)."""
        path = str(path)
        if osp.isdir(path) and not osp.islink(path):
            raise ValueError(f"{path}: a folder, not a checkpoint file; not removed")
        if osp.lexists(path):
            os.remove(path)


class CellCheckpoint(ModelCheckpoint):
    r"""Lightning's :class:`~lightning.pytorch.callbacks.ModelCheckpoint`
    whose state, restored from a checkpoint, names no file outside its own
    folder.

    A checkpoint is untrusted input (results folders are copied between
    machines and mounted into containers), and Lightning removes the files
    its restored state names (the previous best, recursively) after
    checking them against :obj:`dirpath` without resolving :obj:`..`. Here
    each path of the state (best, k-th best, last, the best k) is kept only
    when it names a :obj:`*.ckpt` file directly in the folder the state
    says it was written to, and is then re-rooted in this callback's folder
    (where the results folder is now); any other is dropped, with its score.
    Its state is stored under Lightning's own key, so that checkpoints of
    either class resume with the other.
    """
    @property
    def state_key(self) -> str:
        return super().state_key.replace(type(self).__qualname__, "ModelCheckpoint", 1)

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        written_in = str(state_dict.get("dirpath") or "")
        own = {key: self._own(state_dict.get(key), written_in) for key in
               ("best_model_path", "kth_best_model_path", "last_model_path")}
        best_k = {self._own(path, written_in): score
                  for path, score in dict(state_dict.get("best_k_models") or {}).items()}
        best_k.pop("", None)
        score = state_dict.get("best_model_score")
        if state_dict.get("best_model_path") and not own["best_model_path"]:
            score = None  # its file was dropped: the next validation sets the best again
        super().load_state_dict({**state_dict, **own, "dirpath": self.dirpath,
                                 "best_k_models": best_k, "best_model_score": score})

    def _own(self, path: Any, written_in: str) -> str:
        # `path` re-rooted here when it names a *.ckpt file directly in `written_in`, else ""
        if not isinstance(path, str) or not path or not written_in:
            return ""
        name = osp.basename(path)
        inside = osp.normpath(osp.dirname(path)) == osp.normpath(written_in)
        if not inside or not name.endswith(".ckpt") or name.startswith("."):
            print(f"[mzattn-repro] a restored checkpoint names {path!r}, not a checkpoint of "
                  f"its own folder; ignored", file=sys.stderr, flush=True)
            return ""
        return osp.join(self.dirpath, name)


def resumable(path: str, module: torch.nn.Module | None = None) -> bool:
    r"""Whether :obj:`path` exists, loads (:func:`safe_load`) and holds the
    parameters of :obj:`module` (the same names and shapes), if given. One
    that exists but does not load, or holds another model (another width,
    another table's model), is set aside as :obj:`{path}.corrupt-{time}`
    or :obj:`{path}.mismatch-{time}` and named on stderr: its cell restarts
    from scratch."""
    try:
        checkpoint = safe_load(path)
    except FileNotFoundError:
        return False
    except ValueError as error:
        set_aside_checkpoint(path, "corrupt", str(error))
        return False
    problem = None if module is None else mismatch(checkpoint, module)
    if problem is not None:
        set_aside_checkpoint(path, "mismatch", f"{path}: {problem}")
        return False
    return True


def mismatch(checkpoint: Any, module: torch.nn.Module) -> str | None:
    r"""How :obj:`checkpoint`'s :obj:`state_dict` differs from the
    parameters and buffers of :obj:`module`, :obj:`None` if it does not."""
    state = checkpoint.get("state_dict") if isinstance(checkpoint, dict) else None
    if not isinstance(state, dict):
        return "it holds no state_dict"
    ours = module.state_dict()
    if missing := sorted(set(ours) - set(state)):
        return f"it lacks {missing[0]} (and {len(missing) - 1} more) of this cell's model"
    if extra := sorted(set(state) - set(ours)):
        return f"it holds {extra[0]} (and {len(extra) - 1} more) that this cell's model lacks"
    for name, value in ours.items():
        theirs = state[name]
        if not isinstance(value, torch.Tensor):  # a module's extra state (get_extra_state)
            if type(theirs) is not type(value):
                return (f"{name} is a {type(value).__name__} here, a {type(theirs).__name__} "
                        "in the checkpoint")
        elif not isinstance(theirs, torch.Tensor) or theirs.shape != value.shape:
            shape = tuple(theirs.shape) if isinstance(theirs, torch.Tensor) else type(theirs)
            return f"{name} has shape {tuple(value.shape)} here, {shape} in the checkpoint"
    return None


def set_aside_checkpoint(path: str, reason: str, problem: str,
                         then: str = "the cell restarts") -> None:
    r"""Moves the checkpoint :obj:`path` aside as :obj:`{path}.{reason}-{time}`
    and says on stderr what was wrong (:obj:`problem`) and what happens
    :obj:`then`."""
    aside = set_aside(path, reason)
    print(f"[mzattn-repro] {problem}; moved to {aside}, {then}", file=sys.stderr, flush=True)


class StopBetweenSteps(pl.Callback):
    r"""Stops a training cell on SIGTERM or SIGINT between two training
    steps, so that at most the step in progress is lost.

    While the cell trains (single process), the signal is held
    (:func:`~mzattn.repro.core.faults.hold_signals`) until the step in progress
    ends. After a step in the middle of an epoch, the trainer's state is
    saved to :obj:`path` (the cell's :obj:`last.ckpt`) and the run stops
    with :class:`~mzattn.repro.core.faults.Interrupted`. A signal during the last
    step of an epoch or its validation stops the run once the epoch's own
    :obj:`last.ckpt` is written (at the next epoch's start, or at the end of
    training). Resumed from the end of the epoch where early stopping fired,
    the cell stops before training again, as it would have without the
    signal.

    Resuming from a mid-epoch checkpoint continues the epoch with its
    remaining batches, in the same order (:class:`ResumableLoader` records
    its position), with the global torch RNG (CPU and CUDA) as it was, which
    this callback keeps in every checkpoint, and with the epoch's running
    training loss (:class:`~mzattn.repro.training.history.History`). Not restored:
    the training metrics that :class:`~mzattn.repro.training.lightning_module.SetModule`
    accumulates over the epoch (they then cover the batches after the
    resume; no record uses them), and the random streams of data-loader
    worker processes.

    Args:
        path (str): The checkpoint written at a mid-epoch stop.
        name (str, optional): The cell, for stage :obj:`"training"`
            (:mod:`~mzattn.repro.training.stages`), reached after the first step
            this process trains. (default: :obj:`"cell"`)
    """
    def __init__(self, path: str, name: str = "cell") -> None:
        self.path, self.name = path, name
        self._rng: dict[str, Any] | None = None
        self._trained = False

    def on_train_start(self, trainer: pl.Trainer, module: pl.LightningModule) -> None:
        early = trainer.early_stopping_callback
        if early is not None and early.stopped_epoch > 0:
            # restored from the end of the epoch where early stopping fired (a signal came
            # during it): Lightning keeps the counters, not the decision, so stop here
            trainer.should_stop = True
        if self._rng is not None:  # restored from a checkpoint
            torch.set_rng_state(self._rng["cpu"])
            if self._rng["cuda"] and len(self._rng["cuda"]) == torch.cuda.device_count():
                torch.cuda.set_rng_state_all(self._rng["cuda"])
            self._rng = None
        if trainer.world_size == 1:
            hold_signals()

    def on_train_epoch_start(self, trainer: pl.Trainer, module: pl.LightningModule) -> None:
        signum = pending_signal()
        if signum is not None:  # held during the last epoch's end: its last.ckpt is written
            raise Interrupted(signum)

    def on_train_batch_end(self, trainer: pl.Trainer, module: pl.LightningModule,
                           outputs: Any, batch: Any, batch_idx: int) -> None:
        loader = trainer.train_dataloader
        if isinstance(loader, ResumableLoader):
            loader.batches_done = batch_idx + 1
        if not self._trained:
            self._trained = True
            reach("training", self.name)
        signum = pending_signal()
        if signum is not None and batch_idx + 1 < trainer.num_training_batches:
            trainer.save_checkpoint(self.path)
            raise Interrupted(signum)

    def on_train_end(self, trainer: pl.Trainer, module: pl.LightningModule) -> None:
        signum = release_signals()
        if signum is not None:
            raise Interrupted(signum)

    def on_exception(self, trainer: pl.Trainer, module: pl.LightningModule,
                     exception: BaseException) -> None:
        release_signals()

    def state_dict(self) -> dict[str, Any]:
        cuda = torch.cuda.get_rng_state_all() if torch.cuda.is_initialized() else []
        return {"cpu": torch.get_rng_state(), "cuda": cuda}

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        self._rng = state_dict
