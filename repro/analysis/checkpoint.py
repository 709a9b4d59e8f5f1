r"""Trained-model checkpoints for the analyses: one file that holds the
model's registry name, constructor arguments, weights, the dataset it was
trained on and the target normalisation, so that any analysis can rebuild
the model and its data from the path alone.

A checkpoint is written by :func:`train_checkpoint` (the harness's
:class:`~mzattn.repro.training.lightning_module.SetModule` and
:class:`~mzattn.repro.training.datamodule.SetDataModule`, App. A.1 optimisation,
model selected on the validation loss) or :func:`save_checkpoint`, and read
by :func:`load_checkpoint`. A harness cell trained with
:obj:`--keep-checkpoints` is read with :func:`load_cell_checkpoint`.
"""
import json
import os.path as osp
import tempfile
import time
from dataclasses import asdict, dataclass, field
from typing import Any

import lightning.pytorch as pl
import torch
from lightning.pytorch.callbacks import EarlyStopping, ModelCheckpoint
from mzattn.repro.core.faults import atomic_write
from mzattn.repro.core.spec import Profile
from mzattn.repro.training.cells import GRADIENT_CLIP
from mzattn.repro.training.checkpoints import safe_load
from mzattn.repro.training.datamodule import SetDataModule
from mzattn.repro.training.lightning_module import SetModule, output_channels
from mzattn.repro.training.twins import batching_of

FORMAT = "mzattn-analysis-checkpoint-1"


@dataclass
class CheckpointInfo:
    r"""What a checkpoint was trained on.

    Args:
        model (str): Registry name (:func:`mzattn.baselines.build_model`).
        in_channels (int): Input width.
        out_channels (int): Prediction width.
        task (str): Synthetic task name.
        data_seed (int): Seed of the dataset splits.
        overrides (dict, optional): Model constructor overrides. (default: :obj:`{}`)
        task_overrides (dict, optional): Task fields (split sizes included).
            (default: :obj:`{}`)
        normalize (bool, optional): Targets normalised in training.
            (default: :obj:`False`)
        init_seed (int, optional): Seed of the weight initialisation.
            (default: :obj:`0`)
        target_mean (list[float], optional): Mean of the targets.
            (default: :obj:`None`)
        target_std (list[float], optional): Std of the targets.
            (default: :obj:`None`)
        training (dict, optional): Training record (epochs, best
            validation loss, wall time). (default: :obj:`{}`)
        batching (str, optional): How its sets were batched
            (:obj:`mzattn.datasets.batching.BATCHINGS`); the data module
            batches them the same way. (default: :obj:`"masked"`)
    """
    model: str
    in_channels: int
    out_channels: int
    task: str
    data_seed: int
    overrides: dict[str, Any] = field(default_factory=dict)
    task_overrides: dict[str, Any] = field(default_factory=dict)
    normalize: bool = False
    init_seed: int = 0
    target_mean: list[float] | None = None
    target_std: list[float] | None = None
    training: dict[str, Any] = field(default_factory=dict)
    batching: str = "masked"

    def build(self) -> torch.nn.Module:
        r"""A freshly initialised model of this configuration."""
        from mzattn.baselines import build_model
        return build_model(self.model, self.in_channels, self.out_channels, **self.overrides)

    def datamodule(self, batch_size: int = 128, root: str | None = None) -> SetDataModule:
        r"""The dataset splits the model was trained on."""
        return SetDataModule(self.task, seed=self.data_seed, overrides=self.task_overrides,
                             normalize=self.normalize, batch_size=batch_size, root=root,
                             batching=self.batching)


def save_checkpoint(model: torch.nn.Module, info: CheckpointInfo, path: str) -> None:
    r"""Writes :obj:`model`'s weights with :obj:`info` to :obj:`path`
    atomically."""
    state = {"format": FORMAT, "info": asdict(info), "state_dict": model.state_dict()}
    atomic_write(path, lambda f: torch.save(state, f), binary=True)


def load_checkpoint(path: str) -> tuple[torch.nn.Module, CheckpointInfo]:
    r"""The model (in evaluation mode) and its :class:`CheckpointInfo`."""
    state = safe_load(path)
    if not isinstance(state, dict) or state.get("format") != FORMAT:
        raise ValueError(f"'path' is not an analysis checkpoint ({FORMAT}): {path}")
    info = CheckpointInfo(**state["info"])
    model = info.build()
    model.load_state_dict(state["state_dict"])
    return model.eval(), info


def load_cell_checkpoint(record: str, checkpoint: str, root: str | None = None,
                         ) -> tuple[torch.nn.Module, CheckpointInfo]:
    r"""The model of a harness cell: its JSON :obj:`record` (for the model
    and task configuration) and a Lightning :obj:`checkpoint` of its
    :class:`~mzattn.repro.training.lightning_module.SetModule` (kept with
    :obj:`--keep-checkpoints`); :obj:`root` is the dataset cache."""
    with open(record) as f:
        config = json.load(f)["config"]
    state = safe_load(checkpoint)["state_dict"]
    weights = {k.removeprefix("model."): v for k, v in state.items() if k.startswith("model.")}
    data = SetDataModule(config["task"], seed=config["seed"],
                         overrides=config["task_overrides"], normalize=config["normalize"],
                         root=root)
    num_classes = getattr(data.train_dataset, "num_classes", None) \
        if config["loss"] == "cross_entropy" else None
    info = CheckpointInfo(
        model=config["model"], in_channels=data.in_channels,
        out_channels=output_channels(config["loss"], data.target_dim, num_classes),
        task=config["task"], data_seed=config["seed"], overrides=config["model_overrides"],
        task_overrides=config["task_overrides"], normalize=config["normalize"],
        init_seed=config["seed"], target_mean=state["target_mean"].tolist(),
        target_std=state["target_std"].tolist(), batching=batching_of(config))
    model = info.build()
    model.load_state_dict(weights)
    return model.eval(), info


def train_checkpoint(model: str, task: str, path: str, profile: Profile, *,
                     data_seed: int = 0, init_seed: int = 0,
                     overrides: dict[str, Any] | None = None,
                     task_overrides: dict[str, Any] | None = None, normalize: bool = False,
                     root: str | None = None, accelerator: str = "cpu") -> CheckpointInfo:
    r"""Trains registry model :obj:`model` on :obj:`task` with the
    harness's optimisation (MSE loss, :obj:`profile`'s sizes, epochs,
    batch size, learning rate, warm-up and patience), restores the weights
    with the lowest validation loss and saves them to :obj:`path`.

    The data splits depend on :obj:`data_seed` only and the weights on
    :obj:`init_seed` only, so Deep-Ensemble members share one dataset.
    An existing :obj:`path` is not retrained. :obj:`accelerator` is
    Lightning's (e.g. :obj:`"gpu"`); the weights are saved on the CPU.
    """
    if osp.exists(path):
        return load_checkpoint(path)[1]
    task_overrides = {**profile.sizes(), **(task_overrides or {})}
    data = SetDataModule(task, seed=data_seed, overrides=task_overrides, normalize=normalize,
                         batch_size=profile.batch_size, root=root)
    train = data.train_dataset
    pl.seed_everything(init_seed, workers=True, verbose=False)
    info = CheckpointInfo(model, data.in_channels, output_channels("mse", data.target_dim),
                          task, data_seed, dict(overrides or {}), task_overrides, normalize,
                          init_seed, train.target_mean.view(-1).tolist(),
                          train.target_std.view(-1).tolist())
    module = SetModule(info.build(), target_dim=data.target_dim, lr=profile.lr,
                       warmup_epochs=profile.warmup_epochs, max_epochs=profile.max_epochs,
                       target_mean=train.target_mean, target_std=train.target_std)
    start = time.perf_counter()
    with tempfile.TemporaryDirectory() as folder:
        selector = ModelCheckpoint(dirpath=folder, monitor="val/loss", mode="min", save_top_k=1)
        trainer = pl.Trainer(
            max_epochs=profile.max_epochs, accelerator=accelerator, logger=False,
            gradient_clip_val=GRADIENT_CLIP, enable_progress_bar=False,
            enable_model_summary=False, num_sanity_val_steps=0,
            callbacks=[selector, EarlyStopping(monitor="val/loss", patience=profile.patience)])
        trainer.fit(module, datamodule=data)
        best = safe_load(selector.best_model_path)
        module.load_state_dict(best["state_dict"])
    info.training = {"epochs": trainer.current_epoch, "wall_time_s": time.perf_counter() - start,
                     "best_val_loss": float(selector.best_model_score)}
    save_checkpoint(module.model.cpu(), info, path)
    return info
