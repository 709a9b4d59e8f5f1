r"""Versions, git commit and time stamp stored with every result."""
import datetime
import functools
import os.path as osp
import platform
import subprocess
from importlib import metadata
from typing import Any

PACKAGES = ("mzattn", "torch", "lightning", "torch_geometric", "torchmetrics", "numpy")
r"""Packages whose versions every result records."""


def _version(package: str) -> str | None:
    try:
        return metadata.version(package.replace("_", "-"))
    except metadata.PackageNotFoundError:
        return None


@functools.cache
def git_commit() -> str | None:
    r"""The commit of the source tree (suffixed :obj:`-dirty` when tracked
    files are modified), or :obj:`None` outside a git checkout."""
    root = osp.dirname(osp.dirname(osp.abspath(__file__)))
    try:
        commit = subprocess.run(["git", "rev-parse", "HEAD"], cwd=root, capture_output=True,
                                text=True, check=True, timeout=10).stdout.strip()
        dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"],
                               cwd=root, capture_output=True, text=True, check=True,
                               timeout=10).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return None
    return f"{commit}-dirty" if dirty else commit


def environment_record() -> dict[str, Any]:
    r"""Python and package versions, git commit and the UTC time."""
    versions = {name: _version(name) for name in PACKAGES}
    versions["python"] = platform.python_version()
    return {"versions": versions, "git_commit": git_commit(),
            "platform": platform.platform(),
            "finished_at": datetime.datetime.now(datetime.timezone.utc).isoformat()}
