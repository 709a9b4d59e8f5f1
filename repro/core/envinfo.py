r"""The one environment module: what every result records (versions, git
commit, time stamp: :func:`environment_record`) and what a bug report needs to
know about the machine: package versions, CUDA, GPUs, CPU threads, the git
commit and the cache folders (``mzattn-repro env``), plus the device the
reproduction uses by default."""
import argparse
import contextlib
import datetime
import functools
import importlib.metadata
import json
import os
import os.path as osp
import platform
import subprocess
import sys
from typing import Any

import torch

#: Distributions whose versions decide what a run computes.
PACKAGES: tuple[str, ...] = (
    "mzattn", "torch", "torchvision", "torch-geometric", "lightning", "torchmetrics",
    "numpy", "scipy", "rdkit", "mambapy", "qm9pack", "h5py", "scikit-learn", "matplotlib",
    "docker", "torch-scatter",
)

#: Environment variables that change where data, weights and threads come from.
ENV_VARS: tuple[str, ...] = (
    "MZATTN_DATA", "MZATTN_QM9_ROOT", "MZATTN_DATA_WORKERS", "MZATTN_GIT_COMMIT",
    "TORCH_HOME", "CUDA_VISIBLE_DEVICES", "OMP_NUM_THREADS", "MKL_NUM_THREADS",
)

#: Packages whose versions every result records.
RECORDED_PACKAGES: tuple[str, ...] = (
    "mzattn", "torch", "lightning", "torch_geometric", "torchmetrics", "numpy",
)

#: Set in the Docker image (``docker/Dockerfile``) from a build argument,
#: because the image does not contain the ``.git`` folder.
GIT_COMMIT_ENV = "MZATTN_GIT_COMMIT"


def default_device() -> str:
    r"""The device a run uses when none is given: :obj:`"cuda"` when PyTorch
    sees a GPU (a container started with ``--gpus all`` on a machine with the
    NVIDIA container runtime), :obj:`"cpu"` otherwise."""
    return "cuda" if torch.cuda.is_available() else "cpu"


@functools.cache
def checkout_commit() -> str | None:
    r"""The commit of the source tree (suffixed :obj:`-dirty` when tracked
    files are modified), or :obj:`None` outside a git checkout."""
    root = osp.dirname(osp.dirname(osp.dirname(osp.abspath(__file__))))
    try:
        commit = subprocess.run(["git", "rev-parse", "HEAD"], cwd=root, capture_output=True,
                                text=True, check=True, timeout=10).stdout.strip()
        dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"],
                               cwd=root, capture_output=True, text=True, check=True,
                               timeout=10).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return None
    return f"{commit}-dirty" if dirty else commit


def git_commit() -> str | None:
    r"""The commit of the code that runs: :obj:`$MZATTN_GIT_COMMIT` when set
    (the Docker image, which has no ``.git`` folder), else that of the source
    checkout (:func:`checkout_commit`)."""
    return os.environ.get(GIT_COMMIT_ENV) or checkout_commit()


def environment_record() -> dict[str, Any]:
    r"""What every result records: Python and :data:`RECORDED_PACKAGES`
    versions, the git commit (:func:`git_commit`), the platform, the CPU
    (:func:`cpu_name`: its times depend on it) and the UTC time."""
    found = package_versions(tuple(name.replace("_", "-") for name in RECORDED_PACKAGES))
    versions = dict(zip(RECORDED_PACKAGES, found.values(), strict=True))
    versions["python"] = platform.python_version()
    return {"versions": versions, "git_commit": git_commit(),
            "platform": platform.platform(), "cpu": cpu_name(),
            "finished_at": datetime.datetime.now(datetime.timezone.utc).isoformat()}


def package_versions(names: tuple[str, ...] = PACKAGES) -> dict[str, str | None]:
    r"""Installed version of each distribution in :obj:`names`
    (:obj:`None` when it is not installed)."""
    versions = {}
    for name in names:
        try:
            versions[name] = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            versions[name] = None
    return versions


def cuda_info() -> dict[str, Any]:
    r"""The CUDA and cuDNN versions PyTorch was built with and every GPU it
    sees (name, compute capability, memory in GiB)."""
    available = torch.cuda.is_available()
    gpus = []
    for index in range(torch.cuda.device_count() if available else 0):
        props = torch.cuda.get_device_properties(index)
        gpus.append({"index": index, "name": props.name,
                     "capability": f"{props.major}.{props.minor}",
                     "memory_gib": round(props.total_memory / 2**30, 1)})
    return {"available": available, "torch_cuda": torch.version.cuda,
            "cudnn": torch.backends.cudnn.version() if available else None, "gpus": gpus}


def cpu_model() -> str:
    r"""The CPU's model name: Linux's :obj:`/proc/cpuinfo`, else what
    :mod:`platform` knows (often only the architecture)."""
    with contextlib.suppress(OSError), open("/proc/cpuinfo") as f:
        for line in f:
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    return platform.processor() or platform.machine()


def cpu_name() -> str:
    r"""The CPU's model name and the vector instructions PyTorch's CPU
    kernels use on it, e.g. :obj:`"AMD EPYC, AVX512"`: two machines of
    one model name may differ in the second (on 2026-12-07 an epoch took
    2.2x as long under :obj:`AVX2` as under :obj:`AVX512`)."""
    return f"{cpu_model()}, {torch.backends.cpu.get_cpu_capability()}"


def cpu_info() -> dict[str, Any]:
    r"""Logical CPUs of the machine, those this process may use (cgroup and
    affinity limits, as in a container started with ``--cpus``) and
    PyTorch's intra-/inter-op thread counts."""
    usable = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else None
    return {"logical_cpus": os.cpu_count(), "usable_cpus": usable,
            "torch_threads": torch.get_num_threads(),
            "torch_interop_threads": torch.get_num_interop_threads(),
            "processor": cpu_model(),
            "capability": torch.backends.cpu.get_cpu_capability()}


def collect() -> dict[str, Any]:
    r"""Everything :func:`format_report` prints, as a JSON-serialisable
    dictionary."""
    return {
        "python": sys.version.split()[0],
        "platform": platform.platform(),
        "in_container": os.path.exists("/.dockerenv"),
        "git_commit": git_commit(),
        "default_device": default_device(),
        "packages": package_versions(),
        "cuda": cuda_info(),
        "cpu": cpu_info(),
        "env": {name: os.environ.get(name) for name in ENV_VARS},
        "torch_hub_dir": torch.hub.get_dir(),
    }


def format_report(info: dict[str, Any]) -> str:
    r"""The output of :func:`collect` as plain ``key: value`` lines, ready
    to paste into a bug report."""
    lines = [f"{key}: {info[key]}" for key in
             ("python", "platform", "in_container", "git_commit", "default_device")]
    lines.append("packages:")
    lines += [f"  {name}: {version or 'not installed'}"
              for name, version in info["packages"].items()]
    cuda = info["cuda"]
    lines.append(f"cuda: available={cuda['available']} torch_cuda={cuda['torch_cuda']} "
                 f"cudnn={cuda['cudnn']}")
    lines += [f"  gpu {g['index']}: {g['name']} (sm {g['capability']}, {g['memory_gib']} GiB)"
              for g in cuda["gpus"]]
    lines.append("cpu: " + " ".join(f"{k}={v}" for k, v in info["cpu"].items()))
    env = [f"{name}={value}" for name, value in info["env"].items() if value is not None]
    lines.append("env: " + (" ".join(env) or "(none of " + ", ".join(ENV_VARS) + " set)"))
    lines.append(f"torch_hub_dir: {info['torch_hub_dir']}")
    return "\n".join(lines)


def cli(argv: list[str]) -> int:
    r"""``mzattn-repro env [--json]``: prints the report; returns 0."""
    parser = argparse.ArgumentParser(
        prog="mzattn-repro env",
        description="Print the versions, CUDA devices and CPU threads a bug report needs.")
    parser.add_argument("--json", action="store_true", help="print JSON instead of text")
    args = parser.parse_args(argv)
    info = collect()
    print(json.dumps(info, indent=2) if args.json else format_report(info))
    return 0
