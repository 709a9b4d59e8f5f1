r"""Cell checkpoints that survive faults: written atomically in their own
folder, loaded with :obj:`weights_only=True` only (a checkpoint is data,
never code), and a :obj:`last.ckpt` that does not load is set aside so that
its cell restarts instead of failing on every rerun."""
import sys
from typing import Any

import torch
from lightning.fabric.plugins.io.torch_io import TorchCheckpointIO

from .faults import atomic_write, set_aside


def safe_load(path: str, map_location: Any = "cpu") -> Any:
    r"""Loads a checkpoint with :obj:`weights_only=True`: tensors,
    containers and plain values, never arbitrary pickled objects. Any error
    is raised as a :class:`ValueError` that names :obj:`path`."""
    try:
        return torch.load(path, map_location=map_location, weights_only=True)
    except FileNotFoundError:
        raise
    except Exception as error:
        raise ValueError(f"{path}: not a loadable checkpoint "
                         f"({type(error).__name__}: {str(error).splitlines()[0]})") from error


class AtomicCheckpointIO(TorchCheckpointIO):
    r"""Lightning's checkpoint I/O, written through a temporary file in the
    checkpoint's folder and :func:`os.replace` (a full disk leaves the
    previous checkpoint intact), and read with :func:`safe_load`."""

    def save_checkpoint(self, checkpoint: dict[str, Any], path: Any,
                        storage_options: Any | None = None) -> None:
        atomic_write(str(path), lambda f: torch.save(checkpoint, f), binary=True)

    def load_checkpoint(self, path: Any, map_location: Any | None = None,
                        weights_only: bool | None = None) -> dict[str, Any]:
        return safe_load(str(path), map_location)


def resumable(path: str) -> bool:
    r"""Whether :obj:`path` exists and loads (:func:`safe_load`). One that
    exists but does not load is set aside as :obj:`{path}.corrupt-{time}`
    and named on stderr: its cell restarts from scratch."""
    try:
        safe_load(path)
    except FileNotFoundError:
        return False
    except ValueError as error:
        aside = set_aside(path, "corrupt")
        print(f"[mzattn-repro] {error}; moved to {aside}, the cell restarts",
              file=sys.stderr, flush=True)
        return False
    return True
