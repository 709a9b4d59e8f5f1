r"""The trainings of the analysis studies as runs of the harness's dispatch
(:func:`mzattn.repro.engine.launch.dispatch`): :obj:`mzattn-repro analysis
table19|table20|table21|figure3` take :obj:`--launcher`, :obj:`--jobs`,
:obj:`--cells-per-gpu` and the :obj:`--slurm-*` options of a table, train
their checkpoints in this process, on a pool of local workers or as one
SLURM job array per study, and then analyse them here.
"""
import os.path as osp
import sys
import traceback
from dataclasses import dataclass, field
from typing import Any

from mzattn.repro.core.faults import is_no_space, no_space
from mzattn.repro.core.spec import Profile
from mzattn.repro.engine.cost import training_cost
from mzattn.repro.engine.launch import LaunchOptions, dispatch
from mzattn.repro.engine.pool import pin
from mzattn.repro.engine.runs import CellName, say
from mzattn.repro.training.cells import RunOptions

from .checkpoint import train_checkpoint


@dataclass(frozen=True)
class TrainingRun:
    r"""One :func:`~.checkpoint.train_checkpoint` call as a
    :class:`~mzattn.repro.engine.runs.Run`: trains registry model :obj:`model`
    on :obj:`task` into :obj:`{out}/{cell.table}/ckpt/{cell.cell_id}.pt`
    (:attr:`path`) and returns :obj:`"ok"`, or :obj:`"failed"` (with the
    error printed) when training raised.

    Args:
        cell (CellName): The study (:obj:`table`) and the checkpoint's name.
        out (str): Results folder.
        model (str): Registry name.
        task (str): Synthetic task name.
        profile (Profile): Data sizes and training budget.
        data_seed (int, optional): Seed of the data splits. (default: :obj:`0`)
        init_seed (int, optional): Seed of the weights. (default: :obj:`0`)
        overrides (dict, optional): Model constructor overrides.
            (default: :obj:`{}`)
        task_overrides (dict, optional): Task fields. (default: :obj:`{}`)
        options (RunOptions, optional): Accelerator and dataset cache
            (:obj:`accelerator`, :obj:`data_root`). (default:
            :obj:`RunOptions(accelerator="cpu")`)
        threads (int, optional): Torch threads. (default: :obj:`None`)
        gpu (int, optional): The one GPU this process sees. (default: :obj:`None`)
    """
    cell: CellName
    out: str
    model: str
    task: str
    profile: Profile
    data_seed: int = 0
    init_seed: int = 0
    overrides: dict[str, Any] = field(default_factory=dict)
    task_overrides: dict[str, Any] = field(default_factory=dict)
    options: RunOptions = field(default_factory=lambda: RunOptions(accelerator="cpu"))
    threads: int | None = None
    gpu: str | None = None

    @property
    def path(self) -> str:
        r"""The checkpoint: :obj:`{out}/{table}/ckpt/{cell_id}.pt`."""
        return osp.join(self.out, self.cell.table, "ckpt", f"{self.cell.cell_id}.pt")

    def __call__(self) -> str:
        from mzattn.repro.core.quiet import quiet_libraries
        quiet_libraries(False)
        pin(self.gpu, self.threads)  # before CUDA starts: this process sees one GPU
        try:
            info = train_checkpoint(self.model, self.task, self.path, self.profile,
                                    data_seed=self.data_seed, init_seed=self.init_seed,
                                    overrides=self.overrides,
                                    task_overrides=self.task_overrides,
                                    root=self.options.data_root,
                                    accelerator=self.options.accelerator)
        except Exception as error:  # a failed training must not stop the others
            if is_no_space(error):
                raise no_space(error, self.out) from None
            traceback.print_exc(file=sys.stderr)
            say(f"{self.cell.table} {self.cell.cell_id}: failed: "
                f"{type(error).__name__}: {error}")
            return "failed"
        say(f"{self.cell.table} {self.cell.cell_id}: trained ({info.training})")
        return "ok"

    def finished(self) -> bool:
        r"""Whether its checkpoint exists."""
        return osp.exists(self.path)

    def outcome(self) -> str | None:
        r""":obj:`"ok"` when its checkpoint exists, else :obj:`None`."""
        return "ok" if self.finished() else None

    def fail(self, reason: str) -> str:
        r"""Prints that it failed for :obj:`reason`; no checkpoint is written."""
        say(f"{self.cell.table} {self.cell.cell_id}: failed: {reason}")
        return "failed"

    def cost(self) -> float | None:
        r"""Estimated seconds to train to the epoch cap
        (:func:`~mzattn.repro.engine.cost.training_cost`)."""
        return training_cost(model=self.model, overrides=self.overrides, task=self.task,
                             task_overrides={**self.profile.sizes(), **self.task_overrides},
                             max_epochs=self.profile.max_epochs)


class TrainingsFailed(RuntimeError):
    r"""Some trainings of a study failed (each printed why); the study
    stops before its analysis, and rerunning it retrains only those."""


def train_all(runs: list[TrainingRun], launch_options: LaunchOptions | None = None) -> None:
    r"""Trains the checkpoints of :obj:`runs` that do not exist yet, as
    :obj:`launch_options` says (default: one after another in this
    process); raises :class:`TrainingsFailed` naming those that failed."""
    if not runs:
        return
    statuses: dict[str, str] = {}
    dispatch(runs, runs[0].options, launch_options or LaunchOptions(),
             lambda cell, status: statuses.update({cell.cell_id: status}))
    failed = sorted(name for name, status in statuses.items() if status not in ("ok", "skipped"))
    if failed:
        raise TrainingsFailed(f"{len(failed)} of {len(runs)} trainings of "
                           f"{runs[0].cell.table} failed: {', '.join(failed)}")
