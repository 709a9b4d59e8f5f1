r"""``mzattn-repro docker build|run``: builds the CUDA image of
``docker/Dockerfile`` and runs a table in it through docker-py's low-level
:class:`docker.APIClient`, with every GPU of the host when the engine can give
them (the CPU otherwise), the results folder mounted on
``/workspace/results``, the container's output streamed to ours and the
container's exit code returned as ours."""
import argparse
import codecs
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TextIO

import docker
import requests
from docker.types import DeviceRequest
from mzattn.repro.core.envinfo import GIT_COMMIT_ENV, git_commit

DEFAULT_IMAGE = "mzattn-repro"
DOCKERFILE = "docker/Dockerfile"
#: Where the image's ``mzattn-repro`` writes (``WORKDIR /workspace`` plus
#: the CLI's default ``--out results``); a ``VOLUME`` of the image.
CONTAINER_RESULTS = "/workspace/results"
#: DataLoader workers exchange batches through ``/dev/shm``, which Docker
#: limits to 64 MB unless told otherwise.
DEFAULT_SHM_SIZE = "8g"
#: The image's group of the data caches and the working folder (``docker/Dockerfile``).
DATA_GROUP = "mzattn"
#: What ``docker run --user host`` says when the caller is root.
ROOT_NOTE = ("mzattn-repro docker: you are root here, so the container runs as root (uid 0) "
             "and its files belong to root; pass --user UID:GID to run as another user.")
NVIDIA_TOOLKIT_URL = ("https://docs.nvidia.com/datacenter/cloud-native/container-toolkit/"
                      "latest/install-guide.html")
#: What ``docker run`` says when it falls back to the CPU.
NO_GPU_NOTE = ("mzattn-repro docker: the engine cannot give a container a GPU (no NVIDIA "
               "container runtime); running on the CPU. Ask for GPUs with --gpus to make "
               "this an error.")


class DockerUnavailableError(RuntimeError):
    r"""No Docker engine answers at the configured address."""


class GPURuntimeError(RuntimeError):
    r"""The engine cannot give a container a GPU (no NVIDIA container
    runtime/toolkit)."""


class BuildError(RuntimeError):
    r"""The image build failed; the message is the engine's."""


def gpu_request() -> DeviceRequest:
    r"""All GPUs of the host, as ``docker run --gpus all`` asks for them."""
    return DeviceRequest(count=-1, capabilities=[["gpu"]])


def connect(base_url: str | None = None, timeout: int = 60) -> docker.APIClient:
    r"""A low-level client of the engine at :obj:`base_url` (default: the
    ``DOCKER_HOST``/``DOCKER_TLS_VERIFY``/``DOCKER_CERT_PATH`` environment,
    else the local socket), after checking that the engine answers.

    Raises:
        DockerUnavailableError: when no engine answers there.
    """
    kwargs = docker.utils.kwargs_from_env()
    if base_url is not None:
        kwargs["base_url"] = base_url
    address = kwargs.get("base_url") or "the default socket (unix:///var/run/docker.sock)"
    try:
        api = docker.APIClient(version="auto", timeout=timeout, **kwargs)
        api.ping()
    except (docker.errors.DockerException, requests.exceptions.RequestException) as e:
        raise DockerUnavailableError(
            f"no Docker engine answers at {address}: {e}\nStart the Docker daemon (or Docker "
            "Desktop), or point DOCKER_HOST / --docker-host at a running engine; "
            "`docker info` shows whether one is reachable.") from e
    return api


def source_root(start: Path | None = None) -> Path:
    r"""The mzattn source checkout to build from: :obj:`start` (default: the
    checkout this module is imported from in an editable install, else the
    working folder), which must hold :obj:`DOCKERFILE` and ``pyproject.toml``.

    Raises:
        ValueError: when :obj:`start` is not such a checkout.
    """
    if start is None:
        checkout = Path(__file__).resolve().parents[2]
        start = checkout if (checkout / DOCKERFILE).is_file() else Path.cwd()
    if not ((start / DOCKERFILE).is_file() and (start / "pyproject.toml").is_file()):
        raise ValueError(f"context must be the mzattn source checkout with {DOCKERFILE} and "
                         f"pyproject.toml, got {str(start)!r}")
    return start.resolve()


def build_image(
    api: docker.APIClient,
    context: Path,
    *,
    tag: str = DEFAULT_IMAGE,
    buildargs: dict[str, str] | None = None,
    nocache: bool = False,
    network_mode: str | None = None,
    log: TextIO | None = None,
) -> str:
    r"""Builds :obj:`DOCKERFILE` of :obj:`context` (minus what its
    ``.dockerignore`` excludes) as :obj:`tag`, streaming the build output to
    :obj:`log`, and returns the image id.

    Args:
        api (docker.APIClient): A client from :func:`connect`.
        context (Path): The source checkout (:func:`source_root`).
        tag (str, optional): Image tag. (default: :obj:`"mzattn-repro"`)
        buildargs (dict[str, str], optional): ``--build-arg`` values, e.g.
            ``MZATTN_GIT_COMMIT`` and ``BASE_IMAGE``. (default: :obj:`None`)
        nocache (bool, optional): Rebuild every layer. (default: :obj:`False`)
        network_mode (str, optional): Network of the ``RUN`` steps, as
            ``docker build --network`` (e.g. :obj:`"host"` where the
            default bridge cannot reach PyPI); :obj:`None` for the engine's
            default. (default: :obj:`None`)
        log (TextIO, optional): Where the output goes; :obj:`None` for
            :obj:`sys.stdout`. (default: :obj:`None`)

    Raises:
        BuildError: with the engine's message when a step fails.
    """
    log = sys.stdout if log is None else log
    chunks = api.build(path=str(context), dockerfile=DOCKERFILE, tag=tag, buildargs=buildargs,
                       nocache=nocache, network_mode=network_mode, rm=True, forcerm=True,
                       decode=True)
    image_id = None
    for chunk in chunks:
        if "error" in chunk:
            raise BuildError(f"docker build of {tag!r} failed: {chunk['error'].strip()}")
        if "stream" in chunk:
            log.write(chunk["stream"])
        elif "status" in chunk and "progress" not in chunk:
            log.write(f"{chunk.get('id', '')} {chunk['status']}".strip() + "\n")
        image_id = chunk.get("aux", {}).get("ID", image_id)
        log.flush()
    return image_id or api.inspect_image(tag)["Id"]


def run_table(
    api: docker.APIClient,
    command: Sequence[str],
    *,
    image: str = DEFAULT_IMAGE,
    results_dir: Path = Path("results"),
    gpus: bool | None = None,
    shm_size: str = DEFAULT_SHM_SIZE,
    user: str | None = None,
    volumes: Sequence[str] = (),
    log: TextIO | None = None,
) -> int:
    r"""Runs ``mzattn-repro COMMAND...`` (the image's entry point) in a new
    container of :obj:`image`, with :obj:`results_dir` (created if missing)
    mounted on :obj:`CONTAINER_RESULTS`, streams the container's output to
    :obj:`log`, removes the container (also on Ctrl-C) and returns its exit
    code.

    Args:
        api (docker.APIClient): A client from :func:`connect`.
        command (Sequence[str]): Arguments of ``mzattn-repro``, e.g.
            ``["table28", "--profile", "quick"]``.
        image (str, optional): Image to run. (default: :obj:`"mzattn-repro"`)
        results_dir (Path, optional): Host folder for the results.
            (default: :obj:`results`)
        gpus (bool, optional): :obj:`True`: every GPU of the host, an
            error when the engine cannot give them; :obj:`False`: none;
            :obj:`None`: every GPU when the engine can give them, else the
            CPU with :data:`NO_GPU_NOTE` in :obj:`log`. (default: :obj:`None`)
        shm_size (str, optional): Size of ``/dev/shm``. (default: :obj:`"8g"`)
        user (str, optional): ``uid:gid`` to run as, in the image's group
            :data:`DATA_GROUP` too (``--group-add``), so that it can use the
            image's data caches; :obj:`None` for the image's user
            (``mzattn``, :mod:`mzattn.repro.docker.container`).
            (default: :obj:`None`)
        volumes (Sequence[str], optional): Extra mounts in ``docker run -v``
            syntax, ``HOST:CONTAINER[:ro|rw]``. (default: :obj:`()`)
        log (TextIO, optional): Where the output goes; :obj:`None` for
            :obj:`sys.stdout`. (default: :obj:`None`)

    Raises:
        GPURuntimeError: when :obj:`gpus` is :obj:`True` and the engine has
            no NVIDIA container runtime.
    """
    log = sys.stdout if log is None else log
    results_dir = Path(results_dir).resolve()
    results_dir.mkdir(parents=True, exist_ok=True)
    binds = [f"{results_dir}:{CONTAINER_RESULTS}:rw", *(_bind(v) for v in volumes)]

    def attempt(with_gpus: bool) -> int:
        host_config = api.create_host_config(
            binds=binds, shm_size=shm_size, group_add=[DATA_GROUP] if user else None,
            device_requests=[gpu_request()] if with_gpus else None)
        return _run_container(api, image, list(command), host_config, user, with_gpus, log)

    if gpus is not False:
        try:
            return attempt(True)
        except GPURuntimeError:
            if gpus:
                raise
            log.write(NO_GPU_NOTE + "\n")
    return attempt(False)


def _run_container(api: docker.APIClient, image: str, command: list[str], host_config: dict,
                   user: str | None, gpus: bool, log: TextIO) -> int:
    # One container: created, started, logs streamed, exit code; always removed.
    container = api.create_container(image, command=command, user=user,
                                     host_config=host_config)["Id"]
    try:
        _start(api, container, gpus)
        decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
        for chunk in api.logs(container, stream=True, follow=True):
            log.write(decoder.decode(chunk))
            log.flush()
        return int(api.wait(container)["StatusCode"])
    finally:
        api.remove_container(container, force=True)


def _bind(volume: str) -> str:
    # "HOST:CONTAINER[:MODE]" with the host path made absolute, as the API wants.
    host, sep, rest = volume.partition(":")
    if not sep or not host or not rest:
        raise ValueError(f"volume must be HOST:CONTAINER[:ro|rw], got {volume!r}")
    return f"{Path(host).expanduser().resolve()}:{rest}"


def _start(api: docker.APIClient, container: str, gpus: bool) -> None:
    try:
        api.start(container)
    except docker.errors.APIError as e:
        message = str(e.explanation or e)
        if gpus and ("device driver" in message or "nvidia" in message.lower()):
            raise GPURuntimeError(
                f"the Docker engine cannot give the container a GPU: {message}\nInstall the "
                f"NVIDIA Container Toolkit ({NVIDIA_TOOLKIT_URL}) and restart Docker, or run "
                "on the CPU with `mzattn-repro docker run --cpu ...` (without --gpus, "
                "`docker run` falls back to the CPU by itself).") from e
        raise


def _host_user() -> str | None:
    # Files in the mounted results folder then belong to the caller; root is said aloud.
    if not hasattr(os, "getuid"):
        return None
    if os.getuid() == 0:
        print(ROOT_NOTE, file=sys.stderr)
    return f"{os.getuid()}:{os.getgid()}"


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="mzattn-repro docker",
        description="Build the CUDA image and run reproduction tables in it (docker-py).")
    parser.add_argument("--docker-host", default=None,
                        help="engine address (default: $DOCKER_HOST or the local socket)")
    sub = parser.add_subparsers(dest="action", required=True)

    build = sub.add_parser("build", help=f"build {DOCKERFILE} of the source checkout")
    build.add_argument("--tag", default=DEFAULT_IMAGE, help="image tag (default: %(default)s)")
    build.add_argument("--context", type=Path, default=None,
                       help="source checkout (default: the one mzattn is installed from)")
    build.add_argument("--base-image", default=None,
                       help="override the pinned base image (e.g. a CUDA 13 build for Blackwell)")
    build.add_argument("--no-cache", action="store_true", help="rebuild every layer")
    build.add_argument("--network", default=None,
                       help="network of the RUN steps, as `docker build --network` "
                            "(e.g. host; default: the engine's)")

    run = sub.add_parser("run", help="run `mzattn-repro COMMAND ...` in the image")
    run.add_argument("--image", default=DEFAULT_IMAGE, help="image (default: %(default)s)")
    run.add_argument("--results", type=Path, default=Path("results"),
                     help=f"host folder mounted on {CONTAINER_RESULTS} (default: %(default)s)")
    devices = run.add_mutually_exclusive_group()
    devices.add_argument("--gpus", dest="gpus", action="store_const", const=True, default=None,
                         help="request every GPU; an error when the engine cannot give them "
                              "(default: every GPU when it can, else the CPU)")
    devices.add_argument("--cpu", dest="gpus", action="store_const", const=False,
                         help="do not request GPUs")
    run.add_argument("--shm-size", default=DEFAULT_SHM_SIZE,
                     help="/dev/shm size for DataLoader workers (default: %(default)s)")
    run.add_argument("--user", default="host",
                     help="'host' (your uid:gid, default), 'image' (the image's user) or UID:GID")
    run.add_argument("-v", "--volume", action="append", default=[],
                     help="extra mount HOST:CONTAINER[:ro], e.g. "
                          "~/.cache/torch:/workspace/.cache/torch:ro (repeatable)")
    run.add_argument("command", help="table or mzattn-repro command, e.g. table28")
    run.add_argument("args", nargs=argparse.REMAINDER, help="its arguments")
    return parser


def cli(argv: list[str]) -> int:
    r"""``mzattn-repro docker build [...]`` and ``mzattn-repro docker run
    [...] COMMAND [ARGS...]``; returns the exit code (the container's for
    ``run``), 1 with a message on stderr when Docker cannot do it."""
    args = _parser().parse_args(argv)
    try:
        api = connect(args.docker_host)
        if args.action == "build":
            buildargs = {GIT_COMMIT_ENV: git_commit() or "unknown"}
            if args.base_image:
                buildargs["BASE_IMAGE"] = args.base_image
            image_id = build_image(api, source_root(args.context), tag=args.tag,
                                   buildargs=buildargs, nocache=args.no_cache,
                                   network_mode=args.network)
            print(f"built {args.tag} ({image_id})")
            return 0
        user = {"host": _host_user(), "image": None}.get(args.user, args.user)
        return run_table(api, [args.command, *args.args], image=args.image,
                         results_dir=args.results, gpus=args.gpus, shm_size=args.shm_size,
                         user=user, volumes=args.volume)
    except docker.errors.ImageNotFound as e:
        print(f"error: {e.explanation}; build it first with `mzattn-repro docker build`",
              file=sys.stderr)
    except (DockerUnavailableError, GPURuntimeError, BuildError, ValueError,
            docker.errors.DockerException) as e:
        print(f"error: {e}", file=sys.stderr)
    return 1
