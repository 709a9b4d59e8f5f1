r"""The checkpoint of a group of seeds trained together
(:mod:`~mzattn.repro.training.together`), so that a killed group resumes
from its last epoch rather than from scratch.

A group writes, after every epoch, one file in its first seed's checkpoint
folder, named by its seeds (:func:`group_checkpoint_path`): the stacked
parameters (frozen replicas included), the optimiser and the schedule, the
global RNG state, the configuration of every seed, and each seed's history,
best epoch (its weights) and early-stopping counters. It is written
atomically (:func:`~mzattn.repro.core.faults.atomic_write`) and read with
:obj:`weights_only=True` (:func:`~mzattn.repro.training.checkpoints.safe_load`):
data, never code. One that does not load, or that another group or
configuration wrote, is set aside under a new name and the group starts
from scratch. The first seed's finished record removes its folder, and the
file with it.
"""
import os.path as osp
from collections.abc import Sequence
from typing import Any

import torch
from mzattn.repro.core.faults import atomic_write

from .checkpoints import safe_load, set_aside_checkpoint
from .layout import Cell, checkpoint_dir

VERSION = 1
r"""Format of a group checkpoint; another one is set aside."""


def group_checkpoint_path(out: str, cells: Sequence[Cell]) -> str:
    r""":obj:`{out}/{table}/ckpt/{first cell id}/group__s{seeds}.ckpt`, e.g.
    :obj:`group__s0+1+2.ckpt`."""
    seeds = "+".join(str(cell.seed) for cell in cells)
    return osp.join(checkpoint_dir(out, cells[0]), f"group__s{seeds}.ckpt")


def save_group(path: str, state: dict[str, Any]) -> None:
    r"""Writes :obj:`state` (tensors, containers and plain values) to
    :obj:`path` atomically, with :obj:`VERSION`."""
    atomic_write(path, lambda f: torch.save({"version": VERSION} | state, f), binary=True)


def load_group(path: str, configs: Sequence[dict[str, Any]]) -> dict[str, Any] | None:
    r"""The state that :func:`save_group` wrote to :obj:`path` for seeds of
    configurations :obj:`configs`, or :obj:`None` when there is none, or it
    does not load or belongs to another group (then it is set aside, and a
    line on stderr says why)."""
    if not osp.exists(path):
        return None
    try:
        state = safe_load(path)
    except ValueError as error:
        return _set_aside(path, "corrupt", str(error))
    if not isinstance(state, dict) or state.get("version") != VERSION:
        return _set_aside(path, "mismatch", f"{path}: not a version {VERSION} group checkpoint")
    if state.get("configs") != list(configs):
        return _set_aside(path, "mismatch", f"{path}: written for other configurations")
    return state


def _set_aside(path: str, reason: str, problem: str) -> None:
    set_aside_checkpoint(path, reason, problem, then="the group starts from scratch")
