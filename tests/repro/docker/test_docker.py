r"""The CUDA image (``docker/Dockerfile``, ``.dockerignore``) and the
docker-py driver of ``mzattn-repro docker build|run``.

The driver is tested against a fake engine: an HTTP server on localhost
that answers the Docker API routes the driver uses and records every request
docker-py's own :class:`docker.APIClient` sends (JSON bodies, query strings,
the tar of the build context). The tests that need a real engine are marked
``docker_engine``: they build on the base image of ``--docker-base-image`` or
``$MZATTN_DOCKER_BASE_IMAGE`` and skip with the reason when no engine
answers or it lacks that image. ``make docker-test`` (``docker/engine_test.py``)
builds and runs the image on a real engine end to end."""
import importlib.metadata
import io
import json
import os
import posixpath
import re
import shlex
import shutil
import socket
import struct
import subprocess
import sys
import tarfile
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import parse_qs, unquote, urlsplit

import docker
import pytest
from mzattn.repro.core import envinfo
from mzattn.repro.docker import container as entry
from mzattn.repro.docker import docker_driver as dd
from packaging.requirements import Requirement
from packaging.version import Version

ROOT = Path(__file__).resolve().parents[3]
DOCKERFILE = ROOT / dd.DOCKERFILE
CONTAINER_ID = "c0ffee0123"


# ----------------------------------------------------- Dockerfile parsing


def parse_dockerfile(path: Path) -> list[tuple[str, str]]:
    r"""``(INSTRUCTION, arguments)`` per instruction: comments dropped,
    backslash continuations joined, ``${ARG}`` in ``FROM`` resolved from the
    ``ARG`` defaults declared before it."""
    instructions, current = [], ""
    for line in path.read_text().splitlines():
        if not current and (not line.strip() or line.lstrip().startswith("#")):
            continue
        current += line.rstrip()
        if current.endswith("\\"):
            current = current[:-1] + " "
            continue
        keyword, _, args = current.strip().partition(" ")
        instructions.append((keyword.upper(), args.strip()))
        current = ""
    assert not current, "Dockerfile ends inside a continuation"
    return _resolve_from(instructions)


def _resolve_from(instructions: list[tuple[str, str]]) -> list[tuple[str, str]]:
    args, resolved = {}, []
    for keyword, value in instructions:
        if keyword == "ARG" and "=" in value:
            name, default = value.split("=", 1)
            args[name] = default
        if keyword == "FROM":
            value = re.sub(r"\$\{(\w+)\}", lambda m: args.get(m.group(1), m.group(0)), value)
        resolved.append((keyword, value))
    return resolved


def only(instructions, keyword: str) -> list[str]:
    return [value for k, value in instructions if k == keyword]


def env_vars(instructions) -> dict[str, str]:
    env = {}
    for value in only(instructions, "ENV"):
        env.update(pair.split("=", 1) for pair in shlex.split(value))
    return env


@pytest.fixture(scope="module")
def dockerfile():
    return parse_dockerfile(DOCKERFILE)


@pytest.fixture(scope="module")
def torch_requirement() -> Requirement:
    r"""The torch requirement of the installed package (pyproject.toml)."""
    requirements = map(Requirement, importlib.metadata.requires("mzattn"))
    return next(r for r in requirements if r.name == "torch")


def test_parser_joins_continuations_and_resolves_from_args(tmp_path):
    path = tmp_path / "Dockerfile"
    path.write_text("# c\nARG BASE=a/b:1.0\nFROM ${BASE}\n\nRUN x \\\n    && y\n"
                    'ENTRYPOINT ["e"]\n')
    assert parse_dockerfile(path) == [("ARG", "BASE=a/b:1.0"), ("FROM", "a/b:1.0"),
                                      ("RUN", "x      && y"), ("ENTRYPOINT", '["e"]')]


def test_base_image_is_an_official_cuda_runtime_pinned_inside_pyproject(dockerfile,
                                                                       torch_requirement):
    (base,) = only(dockerfile, "FROM")
    match = re.fullmatch(r"pytorch/pytorch:(\d+\.\d+\.\d+)-cuda(\d+\.\d+)-cudnn(\d+)-runtime",
                         base)
    assert match, f"base image {base!r} is not an exact pytorch/pytorch CUDA runtime tag"
    assert Version(match.group(1)) in torch_requirement.specifier, (base, str(torch_requirement))
    assert Version(match.group(2)) >= Version("12.0")


def test_torch_of_the_base_image_is_pinned_for_pip(dockerfile):
    env = env_vars(dockerfile)
    constraint = env["PIP_CONSTRAINT"]
    assert any(constraint in run and "torch==" in run for run in only(dockerfile, "RUN"))
    # the constraint exists before the first `pip install`
    keywords = [(k, v) for k, v in dockerfile if k in ("ENV", "RUN")]
    first_pip = next(i for i, (k, v) in enumerate(keywords) if k == "RUN" and "pip install" in v)
    assert any("PIP_CONSTRAINT" in v for k, v in keywords[:first_pip] if k == "ENV")


def test_package_is_installed_from_the_context_at_build_time(dockerfile):
    copies = only(dockerfile, "COPY")
    assert "pyproject.toml README.md /tmp/mzattn-src/" in copies
    for folder in ("mzlayers", "mzattn", "baselines", "datasets", "repro", "bench"):
        assert f"{folder} /tmp/mzattn-src/{folder}" in copies
    assert any(re.search(r'pip install "/tmp/mzattn-src\[\$\{MZATTN_EXTRAS\}\]"', r)
               for r in only(dockerfile, "RUN"))


def test_dependencies_come_from_pyproject_with_the_same_extras(dockerfile):
    (extras,) = [v for v in only(dockerfile, "ARG") if v.startswith("MZATTN_EXTRAS=")]
    deps = next(r for r in only(dockerfile, "RUN") if "requirements.py" in r)
    assert "${MZATTN_EXTRAS}" in deps and "pip install -r" in deps
    assert extras == "MZATTN_EXTRAS=all"


def test_entrypoint_runs_the_console_script_through_the_user_switch(dockerfile):
    (entrypoint,) = only(dockerfile, "ENTRYPOINT")
    assert json.loads(entrypoint) == ["python", "-m", entry.__name__]
    (script,) = importlib.metadata.entry_points(group="console_scripts", name=entry.COMMAND)
    assert script.value == "mzattn.repro.cli:main"
    assert entry.RESULTS == dd.CONTAINER_RESULTS


def test_results_volume_is_where_the_cli_writes(dockerfile):
    (workdir,) = only(dockerfile, "WORKDIR")
    (volume,) = only(dockerfile, "VOLUME")
    assert workdir == "/workspace"
    # The CLI writes to results/ under the working folder (test_entrypoint_contract).
    assert json.loads(volume) == [posixpath.join(workdir, "results")] == [dd.CONTAINER_RESULTS]
    # VOLUME after the last RUN: a RUN after it would not persist changes to the volume.
    keywords = [k for k, _ in dockerfile]
    assert keywords.index("VOLUME") > max(i for i, k in enumerate(keywords) if k == "RUN")


def test_builds_and_runs_as_a_non_root_user(dockerfile):
    users = only(dockerfile, "USER")
    useradd = next(r for r in only(dockerfile, "RUN") if "useradd" in r)
    uid = int(re.search(r"--uid (\d+)", useradd).group(1))
    assert uid != 0 and re.search(rf"\b{users[0]}\b", useradd)
    assert users == ["mzattn"]  # never back to root: the container runs as mzattn by default


def test_only_what_the_build_needs_is_copied(dockerfile):
    # a `COPY .` (or ADD) would keep every file of the context, secrets included, in a layer
    sources = [value.split()[:-1] for value in only(dockerfile, "COPY") + only(dockerfile, "ADD")]
    assert sources and not [s for s in sources if {".", "./", "*"} & set(s)], sources
    assert not only(dockerfile, "ADD")


def test_nothing_is_world_writable_and_the_caches_are_shared_by_group(dockerfile):
    runs = " ".join(only(dockerfile, "RUN"))
    assert not re.search(r"chmod[^&]*(a\+[rwX]*w|o\+[rwX]*w|777|666)", runs)
    assert "groupadd --gid 1000 mzattn" in runs and "--gid mzattn" in runs
    assert "g+rwX" in runs and "g+s" in runs
    qm9 = next(r for r in only(dockerfile, "RUN") if "QM9(" in r)
    assert qm9.startswith("umask 002")
    assert dd.DATA_GROUP == "mzattn"


def test_commit_argument_comes_after_every_expensive_layer(dockerfile):
    keywords = list(dockerfile)
    commit_arg = keywords.index(("ARG", "MZATTN_GIT_COMMIT=unknown"))
    expensive = [i for i, (k, v) in enumerate(keywords)
                 if k in ("RUN", "COPY") and ("pip install" in v or "QM9" in v or k == "COPY")]
    assert expensive and commit_arg > max(expensive)
    assert "MZATTN_GIT_COMMIT=${MZATTN_GIT_COMMIT}" in only(dockerfile, "ENV")


def test_cpu_base_installs_the_torch_of_the_pinned_image(dockerfile, torch_requirement):
    base = parse_dockerfile(ROOT / "docker" / "cpu-base" / "Dockerfile")
    args = dict(v.split("=", 1) for v in only(base, "ARG") if "=" in v)
    (pinned,) = only(dockerfile, "FROM")
    assert pinned.startswith(f"pytorch/pytorch:{args['TORCH_VERSION']}-")
    vision = next(r for r in map(Requirement, importlib.metadata.requires("mzattn"))
                  if r.name == "torchvision")
    assert Version(args["TORCHVISION_VERSION"]) in vision.specifier
    assert Version(args["TORCH_VERSION"]) in torch_requirement.specifier


def test_caches_qm9_processing_and_torch_home(dockerfile):
    env = env_vars(dockerfile)
    assert env["TORCH_HOME"].startswith("/workspace/")
    assert env["MZATTN_QM9_ROOT"].startswith(env["MZATTN_DATA"].rstrip("/") + "/")
    keywords = [(k, v) for k, v in dockerfile]
    qm9_runs = [i for i, (k, v) in enumerate(keywords)
                if k == "RUN" and "QM9(os.environ['MZATTN_QM9_ROOT'])" in v]
    # processed as the non-root user, so the cached files are its own
    users = [[v for k, v in keywords[:i] if k == "USER"] for i in qm9_runs]
    assert qm9_runs and all(u and u[-1] not in ("root", "0") for u in users)


# -------------------------------------------------------- the fake engine


class FakeEngine(ThreadingHTTPServer):
    r"""Answers the Docker API routes the driver uses; :attr:`requests`
    records ``(method, path, query, body)`` of each request (API version
    prefix removed)."""

    daemon_threads = True

    def __init__(self):
        super().__init__(("127.0.0.1", 0), _EngineHandler)
        self.requests = []
        self.build_chunks = [{"stream": "Step 1/2 : FROM base\n"}, {"aux": {"ID": "sha256:abc"}},
                             {"stream": "Successfully built abc\n"}]
        self.logs = [b"epoch 1 \xc3", b"\xa9\n", b"done\n"]  # an "é" split across frames
        self.start_error = None
        self.exit_code = 0

    @property
    def url(self) -> str:
        return f"tcp://127.0.0.1:{self.server_address[1]}"

    def find(self, method: str, path: str) -> list[tuple]:
        return [r for r in self.requests if r[0] == method and r[1] == path]

    def route(self, method: str, path: str):
        r"""``(status, body)``: a dict/bytes body, or a list for a chunked stream."""
        containers = f"/containers/{CONTAINER_ID}"
        routes = {
            ("GET", "/version"): (200, {"ApiVersion": "1.45", "Version": "fake"}),
            ("GET", "/_ping"): (200, b"OK"),
            ("POST", "/build"): (200, [json.dumps(c).encode() + b"\r\n"
                                       for c in self.build_chunks]),
            ("POST", "/containers/create"): (201, {"Id": CONTAINER_ID, "Warnings": []}),
            ("POST", f"{containers}/start"): self.start_error or (204, b""),
            ("GET", f"{containers}/json"): (200, {"Id": CONTAINER_ID, "Config": {"Tty": False}}),
            ("GET", f"{containers}/logs"): (200, [struct.pack(">BxxxL", 1, len(b)) + b
                                                  for b in self.logs]),
            ("POST", f"{containers}/wait"): (200, {"StatusCode": self.exit_code, "Error": None}),
            ("DELETE", containers): (204, b""),
        }
        return routes.get((method, path), (404, {"message": f"no route {method} {path}"}))


class _EngineHandler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def _handle(self):
        url = urlsplit(self.path)
        path = re.sub(r"^/v[\d.]+", "", unquote(url.path))
        self.server.requests.append((self.command, path, parse_qs(url.query), self._body()))
        status, body = self.server.route(self.command, path)
        self.send_response(status)
        if isinstance(body, list):
            self.send_header("Content-Type", "application/octet-stream")
            self.send_header("Transfer-Encoding", "chunked")
            self.end_headers()
            for chunk in body:
                self.wfile.write(f"{len(chunk):x}\r\n".encode() + chunk + b"\r\n")
            self.wfile.write(b"0\r\n\r\n")
            return
        data = json.dumps(body).encode() if isinstance(body, dict) else body
        self.send_header("Content-Type", "application/json" if isinstance(body, dict)
                         else "text/plain")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def _body(self) -> bytes:
        if self.headers.get("Transfer-Encoding", "").lower() == "chunked":
            parts = []
            while size := int(self.rfile.readline().strip() or b"0", 16):
                parts.append(self.rfile.read(size))
                self.rfile.readline()
            self.rfile.readline()
            return b"".join(parts)
        return self.rfile.read(int(self.headers.get("Content-Length") or 0))

    do_GET = do_POST = do_DELETE = _handle


@pytest.fixture
def engine():
    server = FakeEngine()
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield server
    server.shutdown()
    server.server_close()


@pytest.fixture
def api(engine):
    return dd.connect(engine.url)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


# ------------------------------------------------------------- connecting


def test_connect_negotiates_the_api_version(engine, api):
    assert api.api_version == "1.45"
    assert engine.find("GET", "/version") and engine.find("GET", "/_ping")


def test_connect_without_engine_is_a_clear_error():
    address = f"tcp://127.0.0.1:{free_port()}"
    with pytest.raises(dd.DockerUnavailableError, match="no Docker engine answers at "
                       + re.escape(address)) as info:
        dd.connect(address, timeout=5)
    assert "DOCKER_HOST" in str(info.value)


def test_cli_without_engine_exits_1_with_the_reason(capsys):
    code = dd.cli(["--docker-host", f"tcp://127.0.0.1:{free_port()}", "run", "table28"])
    assert code == 1
    assert "error: no Docker engine answers" in capsys.readouterr().err


# ------------------------------------------------------------------ build


# (path, kept in the build context?)
CONTEXT_FILES = {
    "pyproject.toml": True, "README.md": True, "mzlayers/__init__.py": True,
    "repro/cli.py": True, "datasets/qm9.py": True, "datasets/synthetic/tasks.py": True,
    "baselines/__init__.py": True, "mzattn/__init__.py": True,
    ".venv/bin/python": False, "results/table28/cell.json": False, ".git/HEAD": False,
    "data/qm9/processed/qm9.pt": False, "lightning_logs/version_0/hparams.yaml": False,
    "mzlayers/__pycache__/mab.cpython-311.pyc": False,
    "datasets/synthetic/__pycache__/tasks.cpython-311.pyc": False,
    ".pytest_cache/v/cache/lastfailed": False, ".ruff_cache/0.6/x": False,
    "mzattn.egg-info/PKG-INFO": False, "build/lib/mzlayers/mab.py": False,
    "checkpoints/last.ckpt": False, "mzlayers/old.ckpt": False, ".cache/torch/hub/x": False,
    "tests/repro/docker/test_docker.py": False, "docs/docker.md": False, ".ci/run": False,
    "docker/engine_test.py": False, "docker/cpu-base/Dockerfile": False,
    "docker/requirements.py": True,
    # secrets, at the top and deeper
    ".env": False, ".env.local": False, "repro/.env": False, "deploy.pem": False,
    "datasets/tls.key": False, ".netrc": False, "mzlayers/.netrc": False,
    ".aws/credentials": False, ".ssh/id_ed25519": False, "bench/.ssh/id_rsa": False,
    "repro/.git/config": False, "baselines/.venv/bin/python": False,
}


@pytest.fixture
def context_tree(tmp_path):
    root = tmp_path / "checkout"
    for name in CONTEXT_FILES:
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(name)
    (root / "docker").mkdir(exist_ok=True)
    shutil.copy(DOCKERFILE, root / dd.DOCKERFILE)
    shutil.copy(ROOT / ".dockerignore", root / ".dockerignore")
    return root


def test_build_sends_the_context_minus_dockerignore(engine, api, context_tree):
    log = io.StringIO()
    image_id = dd.build_image(api, context_tree, tag="mzattn-repro:test",
                              buildargs={"MZATTN_GIT_COMMIT": "abc123"}, log=log)
    assert image_id == "sha256:abc"
    assert log.getvalue() == "Step 1/2 : FROM base\nSuccessfully built abc\n"
    ((_, _, query, body),) = engine.find("POST", "/build")
    assert query["t"] == ["mzattn-repro:test"] and query["dockerfile"] == [dd.DOCKERFILE]
    assert json.loads(query["buildargs"][0]) == {"MZATTN_GIT_COMMIT": "abc123"}
    with tarfile.open(fileobj=io.BytesIO(body)) as tar:
        members = {m.name for m in tar.getmembers() if m.isfile()}
    assert dd.DOCKERFILE in members
    for name, kept in CONTEXT_FILES.items():
        assert (name in members) == kept, name


def test_build_context_of_this_checkout_has_no_environment_or_results():
    patterns = [line.strip() for line in (ROOT / ".dockerignore").read_text().splitlines()
                if line.strip() and not line.startswith("#")]
    files = docker.utils.build.exclude_paths(str(ROOT), patterns, dockerfile=dd.DOCKERFILE)
    assert {"pyproject.toml", dd.DOCKERFILE, "mzlayers/__init__.py"} <= files
    excluded = (".venv", "results", ".git", "data", "lightning_logs")
    assert not [f for f in files if f.split("/")[0] in excluded or "__pycache__" in f]
    assert sum((ROOT / f).stat().st_size for f in files if (ROOT / f).is_file()) < 20 * 2**20


def test_build_error_raises_the_engine_message(engine, api, context_tree):
    engine.build_chunks = [{"stream": "Step 1/2\n"},
                           {"error": "pip install failed\n", "errorDetail": {"code": 1}}]
    with pytest.raises(dd.BuildError, match="build of 'mzattn-repro' failed: pip install failed"):
        dd.build_image(api, context_tree, log=io.StringIO())


def test_source_root_rejects_a_folder_without_dockerfile(tmp_path):
    with pytest.raises(ValueError, match="context must be the mzattn source checkout"):
        dd.source_root(tmp_path)
    assert dd.source_root() == ROOT


# -------------------------------------------------------------------- run


def test_run_requests_gpus_volume_shm_and_returns_the_exit_code(engine, api, tmp_path):
    engine.exit_code = 3
    log = io.StringIO()
    results = tmp_path / "res"
    code = dd.run_table(api, ["table28", "--profile", "smoke"], results_dir=results,
                        user="1234:5678", volumes=["~/w:/workspace/.cache/torch:ro"], log=log)
    assert code == 3 and results.is_dir()
    assert log.getvalue() == "epoch 1 é\ndone\n"
    ((_, _, query, body),) = engine.find("POST", "/containers/create")
    create = json.loads(body)
    assert create["Image"] == "mzattn-repro"
    assert create["Cmd"] == ["table28", "--profile", "smoke"]
    assert create["User"] == "1234:5678"
    host = create["HostConfig"]
    assert host["DeviceRequests"] == [{"Driver": "", "Count": -1, "DeviceIDs": [],
                                       "Capabilities": [["gpu"]], "Options": {}}]
    assert host["Binds"] == [f"{results.resolve()}:/workspace/results:rw",
                             f"{Path('~/w').expanduser().resolve()}:/workspace/.cache/torch:ro"]
    assert host["ShmSize"] == 8 * 2**30
    assert query == {}
    (logs,) = engine.find("GET", f"/containers/{CONTAINER_ID}/logs")
    assert logs[2]["follow"] == ["1"] and logs[2]["stdout"] == logs[2]["stderr"] == ["1"]
    ((_, _, removal, _),) = engine.find("DELETE", f"/containers/{CONTAINER_ID}")
    assert removal["force"] == ["True"]


def test_run_on_cpu_requests_no_device(engine, api, tmp_path):
    assert dd.run_table(api, ["list"], results_dir=tmp_path, gpus=False,
                        log=io.StringIO()) == 0
    create = json.loads(engine.find("POST", "/containers/create")[0][3])
    assert "DeviceRequests" not in create["HostConfig"] and create.get("User") is None


NO_NVIDIA = (500, {"message": 'could not select device driver "" with capabilities: [[gpu]]'})


class StartFailsOnce(FakeEngine):
    r"""An engine whose first container start fails with :attr:`start_error`."""

    def route(self, method, path):
        answer = super().route(method, path)
        if path.endswith("/start") and self.start_error:
            self.start_error = None
        return answer


def test_missing_nvidia_runtime_with_gpus_asked_is_a_clear_error_and_removes_the_container(
        engine, api, tmp_path):
    engine.start_error = NO_NVIDIA
    with pytest.raises(dd.GPURuntimeError, match="NVIDIA Container Toolkit.*--cpu"):
        dd.run_table(api, ["table28"], results_dir=tmp_path, gpus=True, log=io.StringIO())
    assert engine.find("DELETE", f"/containers/{CONTAINER_ID}")
    assert len(engine.find("POST", "/containers/create")) == 1


def test_missing_nvidia_runtime_by_default_says_so_and_runs_on_the_cpu(tmp_path):
    server = StartFailsOnce()
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        server.start_error, log = NO_NVIDIA, io.StringIO()
        code = dd.run_table(dd.connect(server.url), ["list"], results_dir=tmp_path, log=log)
        creates = [json.loads(r[3])["HostConfig"] for r in server.find("POST",
                                                                       "/containers/create")]
    finally:
        server.shutdown()
        server.server_close()
    assert code == 0
    assert log.getvalue().startswith(dd.NO_GPU_NOTE + "\n")
    assert [("DeviceRequests" in host) for host in creates] == [True, False]
    assert len(server.find("DELETE", f"/containers/{CONTAINER_ID}")) == 2


def test_cli_gpus_and_cpu_flags_exclude_each_other(capsys):
    with pytest.raises(SystemExit):
        dd._parser().parse_args(["run", "--gpus", "--cpu", "list"])
    assert dd._parser().parse_args(["run", "list"]).gpus is None
    assert dd._parser().parse_args(["run", "--gpus", "list"]).gpus is True
    assert dd._parser().parse_args(["run", "--cpu", "list"]).gpus is False


def test_other_start_errors_are_not_blamed_on_the_gpu(engine, api, tmp_path):
    engine.start_error = (500, {"message": "port is already allocated"})
    with pytest.raises(docker.errors.APIError, match="port is already allocated"):
        dd.run_table(api, ["table28"], results_dir=tmp_path, log=io.StringIO())


def test_bad_volume_names_the_argument(engine, api, tmp_path):
    with pytest.raises(ValueError, match="volume must be HOST:CONTAINER"):
        dd.run_table(api, ["table28"], results_dir=tmp_path, volumes=["/only/host"])


def test_cli_run_returns_the_container_exit_code(engine, tmp_path, capsys):
    engine.exit_code = 7
    code = dd.cli(["--docker-host", engine.url, "run", "--results", str(tmp_path / "r"),
                   "--user", "image", "table28", "--profile", "smoke", "--seeds", "0"])
    assert code == 7
    assert "epoch 1 é" in capsys.readouterr().out
    create = json.loads(engine.find("POST", "/containers/create")[0][3])
    assert create["Cmd"] == ["table28", "--profile", "smoke", "--seeds", "0"]
    assert create.get("User") is None


def test_cli_run_defaults_to_the_host_user_in_the_caches_group(engine, tmp_path):
    dd.cli(["--docker-host", engine.url, "run", "--results", str(tmp_path), "list"])
    create = json.loads(engine.find("POST", "/containers/create")[0][3])
    assert create["User"] == f"{os.getuid()}:{os.getgid()}"
    assert create["HostConfig"]["GroupAdd"] == [dd.DATA_GROUP]


def test_cli_run_as_root_says_that_the_container_runs_as_root(engine, tmp_path, monkeypatch,
                                                               capsys):
    monkeypatch.setattr(os, "getuid", lambda: 0)
    monkeypatch.setattr(os, "getgid", lambda: 0)
    dd.cli(["--docker-host", engine.url, "run", "--results", str(tmp_path), "list"])
    create = json.loads(engine.find("POST", "/containers/create")[0][3])
    assert create["User"] == "0:0"
    assert dd.ROOT_NOTE in capsys.readouterr().err


def test_cli_build_passes_commit_and_base_image(engine, context_tree, capsys, monkeypatch):
    monkeypatch.setenv("MZATTN_GIT_COMMIT", "feedbeef")
    code = dd.cli(["--docker-host", engine.url, "build", "--context", str(context_tree),
                   "--base-image", "pytorch/pytorch:2.14.1-cuda13.2-cudnn9-runtime"])
    assert code == 0
    assert "built mzattn-repro (sha256:abc)" in capsys.readouterr().out
    query = engine.find("POST", "/build")[0][2]
    assert json.loads(query["buildargs"][0]) == {
        "MZATTN_GIT_COMMIT": "feedbeef",
        "BASE_IMAGE": "pytorch/pytorch:2.14.1-cuda13.2-cudnn9-runtime"}
    assert "networkmode" not in query


def test_cli_build_passes_the_network(engine, context_tree):
    assert dd.cli(["--docker-host", engine.url, "build", "--context", str(context_tree),
                   "--network", "host"]) == 0
    assert engine.find("POST", "/build")[0][2]["networkmode"] == ["host"]


# ------------------------------------------------------ real engine (opt-in)


@pytest.fixture(scope="module")
def real_api():
    try:
        return dd.connect(timeout=10)
    except dd.DockerUnavailableError as e:
        pytest.skip(f"no Docker engine answers: {e}".splitlines()[0])


@pytest.fixture(scope="module")
def base_image(request, real_api) -> str:
    r"""The base image of the engine tests: ``--docker-base-image``, else
    ``$MZATTN_DOCKER_BASE_IMAGE``, else the Dockerfile's pinned tag; skips
    when the engine does not have it (no registry is pulled from)."""
    tag = (request.config.getoption("--docker-base-image")
           or os.environ.get("MZATTN_DOCKER_BASE_IMAGE")
           or only(parse_dockerfile(DOCKERFILE), "FROM")[0])
    try:
        real_api.inspect_image(tag)
    except docker.errors.ImageNotFound:
        pytest.skip(f"the engine has no base image {tag!r}: pull it, or build a CPU one with "
                    "`KEEP=1 make docker-test` and pass --docker-base-image")
    return tag


@pytest.fixture(scope="module")
def real_image(real_api, base_image):
    r"""The image built on :func:`base_image` with the commit that
    ``mzattn-repro docker build`` passes, so that it shares its layers."""
    tag = "mzattn-repro:pytest"
    dd.build_image(real_api, ROOT, tag=tag, buildargs={
        "BASE_IMAGE": base_image, envinfo.GIT_COMMIT_ENV: envinfo.git_commit() or "unknown"})
    yield tag
    real_api.remove_image(tag, force=True)


@pytest.mark.docker_engine
@pytest.mark.parametrize("gpus", [False, None], ids=["cpu", "auto"])
def test_real_engine_runs_table28_smoke(real_api, real_image, tmp_path, gpus):
    code = dd.run_table(real_api, ["table28", "--profile", "smoke"], image=real_image,
                        results_dir=tmp_path, gpus=gpus, user=f"{os.getuid()}:{os.getgid()}")
    assert code == 0
    cells = list((tmp_path / "table28" / "cells").rglob("*.json"))
    assert cells and (tmp_path / "table28" / "report.md").is_file()
    commits = {json.loads(c.read_text())["git_commit"] for c in cells}
    assert commits == {envinfo.git_commit() or "unknown"}
    assert {p.stat().st_uid for p in tmp_path.rglob("*")} == {os.getuid()}


# ---------------------------------------------------- entrypoint contract


def _console_script() -> str:
    return str(Path(sys.executable).with_name("mzattn-repro"))


@pytest.mark.slow
def test_entrypoint_contract_table28_smoke(tmp_path):
    r"""What the container does: ``mzattn-repro table28 --profile smoke`` in
    the working folder, no ``--out``, results under ``./results`` (the
    image's volume). Slow: a smoke table trains every model of its grid
    (``table3 --profile smoke`` took 385 s on our 2 shared cores)."""
    pytest.importorskip("mzattn.repro.cli", reason="the harness CLI (mzattn.repro.cli) "
                        "is not in this checkout")
    listing = subprocess.run([_console_script(), "list"], capture_output=True, text=True,
                             timeout=120)
    assert listing.returncode == 0, listing.stderr
    if "table28" not in listing.stdout.split():
        pytest.skip("`mzattn-repro list` does not list table28 (QM9 table not in the harness)")
    run = subprocess.run([_console_script(), "table28", "--profile", "smoke"], cwd=tmp_path,
                         capture_output=True, text=True, timeout=900)
    assert run.returncode == 0, run.stdout[-2000:] + run.stderr[-4000:]
    assert list((tmp_path / "results").rglob("*.json"))
    assert list((tmp_path / "results").rglob("report.md"))
