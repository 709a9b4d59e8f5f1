r"""``make docker-test``: builds and runs the image of ``docker/Dockerfile`` on
a real Docker engine, from a machine that may have none.

1. Installs ``docker.io`` and ``debootstrap`` from Debian when missing, and
   uses the engine that answers (``DOCKER_HOST`` or the default socket), or
   starts its own ``dockerd`` (niced, on a private socket).
2. Builds a CPU stand-in for the ``pytorch/pytorch`` base image without any
   registry (``debootstrap`` + ``docker import``, then
   ``docker/cpu-base/Dockerfile`` with the host's CA bundle and torch from
   PyPI). It is cached: tagged by a hash of its inputs and kept.
3. Builds ``docker/Dockerfile`` on it with ``--build-arg BASE_IMAGE``.
   Secret-named files (``.env``, a ``.pem``, ``.netrc``, ``.aws``, ``.ssh``)
   are planted in the build context for that build, and no layer of the image
   may hold their content (``docker save``, every layer read).
4. Checks that the image runs as its unprivileged user by default, runs the
   README's ``docker run --user UID:GID --group-add mzattn -v
   "$PWD/results:/workspace/results" mzattn-repro table28 --profile smoke``,
   then the same table through docker-py (``mzattn-repro docker build`` and
   ``docker run``), and checks the results on the host: the cells parse and
   carry the commit, the report is there, every file belongs to the invoking
   user (and, when that is root, a folder of another uid gets files of that
   uid from a run started as root, ``--user 0``).
5. Removes what it built but the cached base image, and stops the daemon it
   started; ``KEEP=1`` keeps everything (the engine keeps running).

When the environment is missing (Debian or PyPI unreachable, no root to
start an engine, the kernel refuses it) it prints one ``SKIPPED: <reason>``
line and exits 0. Anything of ours failing exits 1. On success the last line
gives the image size, the build time and the cells written.

Environment: ``KEEP=1``; ``MZATTN_DOCKER_TEST_DIR`` (default
``/var/cache/mzattn-docker-test``: the engine's data and the logs);
``MZATTN_DOCKER_TEST_NO_CACHE=1`` also removes the base image.
"""
import contextlib
import hashlib
import json
import os
import shutil
import signal
import subprocess
import sys
import tarfile
import tempfile
import time
import urllib.request
import uuid
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
BASE_DOCKERFILE = ROOT / "docker" / "cpu-base" / "Dockerfile"
CA_BUNDLE = Path("/etc/ssl/certs/ca-certificates.crt")
SUITE = "bookworm"
MIRROR = "http://deb.debian.org/debian"
ROOTFS_PACKAGES = "python3,python3-venv,ca-certificates,passwd"
IMAGE = "mzattn-repro:engine-test"
PY_IMAGE = "mzattn-repro:engine-test-py"
TABLE = ["table28", "--profile", "smoke"]
RUNS = "runs"
r"""Where a table run writes inside the results mount: the image works in
/workspace, and ``mzattn-repro``'s default ``--out`` is ``results/runs``
(``repro/engine/options.py``, ``OUT``), so a bare run writes
``/workspace/results/runs/TABLE``."""
PYPI_PROBE = "https://pypi.org/simple/torch/"
#: An engine's API answers in about 2 s; a slow machine gets more.
ENGINE_START_S = 90
#: What RDKit/YAeHMOP bond perception prints per odd distance; the QM9
#: step must not flood the build log with it.
QM9_NOISE = "!!! Warning !!!"
#: Files a build context may hold that must reach no layer of the image
#: (.dockerignore, and the Dockerfile copies only what the build needs).
SECRETS = (".env", "repro/.env", "mzattn-engine-test.pem", ".netrc", ".aws/credentials",
           ".ssh/id_ed25519")
#: The image's user (docker/Dockerfile).
IMAGE_USER, IMAGE_UID = "mzattn", "1000"


class Skipped(Exception):
    r"""The environment is missing (not our code): the run is skipped."""


class Failed(Exception):
    r"""Something of ours (Dockerfile, driver, image, results) failed."""


def log(message: str) -> None:
    r"""One progress line, flushed (CI shows it at once)."""
    print(f"[docker-test {time.strftime('%H:%M:%S')}] {message}", flush=True)


def run(args: list[str], *, env: dict | None = None, capture: bool = False,
        logfile: Path | None = None, check: bool = True) -> subprocess.CompletedProcess:
    r"""Runs :obj:`args`; output to :obj:`logfile` (one file per command, replaced) when given,
    captured when :obj:`capture`, else ours. Raises :class:`Failed` with the
    output's tail when :obj:`check` and it fails."""
    if logfile is not None:
        with open(logfile, "w") as out:
            done = subprocess.run(args, env=env, stdout=out, stderr=subprocess.STDOUT, text=True)
    else:
        done = subprocess.run(args, env=env, capture_output=capture, text=True)
    if check and done.returncode != 0:
        tail = logfile.read_text()[-4000:] if logfile else (done.stderr or "")[-4000:]
        raise Failed(f"`{' '.join(args)}` exited {done.returncode}:\n{tail}")
    return done


# ---------------------------------------------------------------- the engine


#: The Debian package of each tool the test needs.
PACKAGES = {"docker": "docker.io", "dockerd": "docker.io", "debootstrap": "debootstrap"}


def ensure_tools(*tools: str) -> None:
    r""":obj:`tools` (keys of :data:`PACKAGES`), installed from Debian when
    one is missing."""
    missing = [tool for tool in tools if not shutil.which(tool)]
    if not missing:
        return
    if os.geteuid() != 0:
        raise Skipped(f"{', '.join(missing)} missing and not root to install them")
    packages = sorted({PACKAGES[tool] for tool in missing})
    log(f"installing {' '.join(packages)} from Debian")
    apt = ["apt-get", "-o", "DPkg::Lock::Timeout=600", "-q", "-y"]
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    for args in (apt + ["update"], apt + ["install", *packages]):
        done = subprocess.run(args, env=env, capture_output=True, text=True)
        if done.returncode != 0:
            raise Skipped(f"Debian packages unavailable: {' '.join(args)}: "
                          f"{done.stderr.strip().splitlines()[-1:]}")


def engine_answers(env: dict) -> bool:
    r"""Whether ``docker version`` reaches an engine with :obj:`env`."""
    done = subprocess.run(["docker", "version", "--format", "{{.Server.Version}}"], env=env,
                          capture_output=True, text=True, timeout=60)
    return done.returncode == 0


class Engine:
    r"""The engine the test talks to: :attr:`env` has its ``DOCKER_HOST``.
    :meth:`start` starts a private ``dockerd`` when none answers;
    :meth:`stop` stops only that one."""

    def __init__(self, workdir: Path):
        self.workdir = workdir
        self.env = dict(os.environ)
        self.process: subprocess.Popen | None = None
        self.run_dir: Path | None = None

    def start(self) -> None:
        r"""Uses the running engine, else starts one (root only)."""
        if engine_answers(self.env):
            log(f"using the running engine ({self.env.get('DOCKER_HOST', 'default socket')})")
            return
        if os.geteuid() != 0:
            raise Skipped("no Docker engine answers and not root to start one")
        ensure_tools("dockerd")
        run_dir = self.run_dir = Path(tempfile.mkdtemp(prefix="mzattn-dockerd-", dir="/run"))
        socket = f"unix://{run_dir}/docker.sock"
        self.env["DOCKER_HOST"] = socket
        self.log_path = self.workdir / "dockerd.log"
        log(f"starting dockerd (data {self.workdir / 'engine'}, {socket})")
        with open(self.log_path, "w") as out:
            self.process = subprocess.Popen(
                ["nice", "-n", "10", "dockerd", "--data-root", str(self.workdir / "engine"),
                 "--exec-root", str(run_dir / "exec"), "--pidfile", str(run_dir / "pid"),
                 "--host", socket, "--storage-driver", "overlay2"],
                stdout=out, stderr=subprocess.STDOUT, start_new_session=True)
        self._wait(time.monotonic() + ENGINE_START_S)

    def _wait(self, deadline: float) -> None:
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                break
            if engine_answers(self.env):
                log("engine answers")
                return
            time.sleep(1)
        tail = self.log_path.read_text().strip().splitlines()[-3:]
        self.stop()
        raise Skipped(f"the engine does not start here: {' | '.join(tail)}")

    def stop(self) -> None:
        r"""Stops the daemon :meth:`start` started (its containerd with it)."""
        if self.process is None or self.process.poll() is not None:
            return
        log("stopping the dockerd this test started")
        self.process.send_signal(signal.SIGTERM)
        try:
            self.process.wait(timeout=60)
        except subprocess.TimeoutExpired:
            os.killpg(self.process.pid, signal.SIGKILL)
            self.process.wait()
        shutil.rmtree(self.run_dir, ignore_errors=True)

    def docker(self, *args: str, **kwargs) -> subprocess.CompletedProcess:
        r"""``docker ARGS`` against this engine (see :func:`run`)."""
        return run(["docker", *args], env=self.env, **kwargs)

    def has_image(self, tag: str) -> bool:
        r"""Whether the engine has :obj:`tag`."""
        return self.docker("image", "inspect", tag, capture=True, check=False).returncode == 0

    def has_nvidia(self) -> bool:
        r"""Whether the engine lists an NVIDIA runtime."""
        done = self.docker("info", "--format", "{{json .Runtimes}}", capture=True)
        return "nvidia" in done.stdout.lower()

    def image_size(self, tag: str) -> int:
        r"""The size of :obj:`tag` in bytes."""
        done = self.docker("image", "inspect", "--format", "{{.Size}}", tag, capture=True)
        return int(done.stdout.strip())


# ---------------------------------------------------------- the base image


def probe_pypi() -> None:
    r"""Raises :class:`Skipped` when PyPI does not answer over HTTPS."""
    try:
        with urllib.request.urlopen(PYPI_PROBE, timeout=30) as response:
            response.read(1)
    except OSError as e:
        raise Skipped(f"PyPI unreachable ({PYPI_PROBE}): {e}") from e


def base_tag() -> str:
    r"""The base image's tag: torch version and a hash of what it is made
    of (its Dockerfile, the CA bundle, the Debian suite and packages)."""
    digest = hashlib.sha256()
    for part in (BASE_DOCKERFILE.read_bytes(), CA_BUNDLE.read_bytes(),
                 f"{SUITE} {MIRROR} {ROOTFS_PACKAGES}".encode()):
        digest.update(hashlib.sha256(part).digest())
    return f"mzattn-cpu-base:{digest.hexdigest()[:12]}"


def import_rootfs(engine: Engine, tag: str) -> None:
    r"""``debootstrap --variant=minbase`` of :data:`SUITE` imported as
    :obj:`tag`. A failing debootstrap means the mirror is unreachable."""
    ensure_tools("debootstrap")
    rootfs = engine.workdir / "rootfs"
    shutil.rmtree(rootfs, ignore_errors=True)
    log(f"debootstrap {SUITE} (minbase + {ROOTFS_PACKAGES})")
    done = subprocess.run(["nice", "debootstrap", "--variant=minbase",
                           f"--include={ROOTFS_PACKAGES}", SUITE, str(rootfs), MIRROR],
                          capture_output=True, text=True)
    if done.returncode != 0:
        shutil.rmtree(rootfs, ignore_errors=True)
        raise Skipped(f"debootstrap from {MIRROR} failed: "
                      f"{(done.stdout + done.stderr).strip().splitlines()[-1:]}")
    tar = subprocess.Popen(["tar", "-C", str(rootfs), "-c", "."], stdout=subprocess.PIPE)
    imported = subprocess.run(["docker", "import", "-", tag], stdin=tar.stdout, env=engine.env,
                              capture_output=True, text=True)
    tar.wait()
    shutil.rmtree(rootfs, ignore_errors=True)
    if imported.returncode != 0:
        raise Failed(f"docker import failed: {imported.stderr.strip()}")


def check_containers_run(engine: Engine, image: str) -> None:
    r"""Raises :class:`Skipped` when the kernel refuses to run a container
    of the plain Debian :obj:`image`."""
    done = engine.docker("run", "--rm", image, "true", capture=True, check=False)
    if done.returncode != 0:
        raise Skipped(f"the engine cannot run a container here: {done.stderr.strip()[-300:]}")


def build_base(engine: Engine) -> tuple[str, float | None]:
    r"""The CPU base image's tag, built unless cached, and its build time
    (:obj:`None` when cached)."""
    tag = base_tag()
    rootfs_tag = tag.replace("mzattn-cpu-base:", "mzattn-rootfs:")
    if engine.has_image(tag):
        log(f"base image {tag} cached")
        return tag, None
    probe_pypi()
    if not engine.has_image(rootfs_tag):
        import_rootfs(engine, rootfs_tag)
    check_containers_run(engine, rootfs_tag)
    log(f"building the CPU base image {tag} (torch from PyPI)")
    start = time.monotonic()
    with tempfile.TemporaryDirectory() as context:
        shutil.copy(CA_BUNDLE, Path(context) / "ca-certificates.crt")
        engine.docker("build", "-t", tag, "-f", str(BASE_DOCKERFILE),
                      "--build-arg", f"ROOTFS_IMAGE={rootfs_tag}", context,
                      logfile=engine.workdir / "base-build.log")
    return tag, time.monotonic() - start


# ----------------------------------------------------------- the image


def git_commit() -> str:
    r"""The commit the image is built from, as ``mzattn-repro docker build``
    passes it (so that its build hits the same cache)."""
    done = subprocess.run([sys.executable, "-c", "from mzattn.repro.core.envinfo import git_commit;"
                           "print(git_commit() or 'unknown')"], cwd=ROOT, capture_output=True,
                          text=True, check=True)
    return done.stdout.strip()


@contextlib.contextmanager
def planted_secrets(marker: str):
    r"""The files of :data:`SECRETS` that do not exist, made in the build
    context and holding :obj:`marker` for the duration of the block; what
    was there is never touched."""
    planted = []  # what to remove: a file, or the one folder made for it
    try:
        for name in SECRETS:
            path = ROOT / name
            made = path if path.parent.exists() else path.parent
            if path.exists() or not made.parent.exists():
                continue
            path.parent.mkdir(exist_ok=True)
            planted.append(made)
            path.write_text(f"{marker}\n")
        yield
    finally:
        for path in planted:
            if path.is_dir():
                shutil.rmtree(path)
            else:
                path.unlink(missing_ok=True)


def layers_holding(engine: Engine, image: str, marker: str) -> list[str]:
    r"""``LAYER:PATH`` of every file of :obj:`image`'s layers (``docker
    save``, streamed) that holds :obj:`marker`; only files under 64 KiB are
    read (secrets are small)."""
    save = subprocess.Popen(["docker", "save", image], stdout=subprocess.PIPE, env=engine.env)
    found, needle = [], marker.encode()
    with tarfile.open(fileobj=save.stdout, mode="r|") as saved:
        for member in saved:
            if not member.isfile() or not (member.name.endswith("layer.tar")
                                            or member.name.startswith("blobs/")):
                continue
            try:
                with tarfile.open(fileobj=saved.extractfile(member), mode="r|") as layer:
                    found += [f"{member.name}:{entry.name}" for entry in layer
                              if entry.isfile() and entry.size < 2**16
                              and needle in layer.extractfile(entry).read()]
            except tarfile.ReadError:  # a blob that is not a layer (the image config)
                continue
    if save.wait() != 0:
        raise Failed(f"`docker save {image}` exited {save.returncode}")
    return found


def build_image(engine: Engine, base: str, commit: str) -> float:
    r"""``docker build`` of ``docker/Dockerfile`` on :obj:`base` as
    :data:`IMAGE`, with secrets planted in the build context
    (:func:`planted_secrets`); returns the seconds it took. The QM9 step must
    not flood the log with RDKit warnings, and no layer may hold a secret."""
    log(f"docker build -t {IMAGE} --build-arg BASE_IMAGE={base} -f docker/Dockerfile .")
    logfile = engine.workdir / "image-build.log"
    marker = f"MZATTN-ENGINE-TEST-SECRET-{uuid.uuid4().hex}"
    start = time.monotonic()
    with planted_secrets(marker):
        engine.docker("build", "-t", IMAGE, "--build-arg", f"BASE_IMAGE={base}",
                      "--build-arg", f"MZATTN_GIT_COMMIT={commit}", "-f", "docker/Dockerfile",
                      str(ROOT), logfile=logfile)
    seconds = time.monotonic() - start
    log(f"docker save {IMAGE}: no layer may hold the planted secrets")
    leaked = layers_holding(engine, IMAGE, marker)
    if leaked:
        raise Failed(f"{len(leaked)} files of the image hold a secret of the build context, "
                     f"e.g. {leaked[0]}")
    noise = logfile.read_text().count(QM9_NOISE)
    if noise:
        raise Failed(f"the build log has {noise} lines of {QM9_NOISE!r} ({logfile})")
    return seconds


def check_default_user(engine: Engine) -> None:
    r"""The image runs as :data:`IMAGE_USER` (not root) unless told
    otherwise, and its entry point works so (``list``)."""
    user = engine.docker("image", "inspect", "--format", "{{.Config.User}}", IMAGE,
                         capture=True).stdout.strip()
    uid = engine.docker("run", "--rm", "--entrypoint", "id", IMAGE, "-u",
                        capture=True).stdout.strip()
    if user != IMAGE_USER or uid != IMAGE_UID:
        raise Failed(f"the image runs as user {user!r} (uid {uid}), not {IMAGE_USER} "
                     f"({IMAGE_UID})")
    log(f"default user {user} (uid {uid}): docker run {IMAGE} list")
    engine.docker("run", "--rm", IMAGE, "list", logfile=engine.workdir / "default-user.log")


def readme_run(engine: Engine, results: Path, uid: int, gid: int) -> float:
    r"""The README's ``docker run`` of :data:`TABLE` with :obj:`results`
    mounted, as :obj:`uid`/:obj:`gid`; returns the seconds it took."""
    log(f"docker run --user {uid}:{gid} --group-add mzattn -v {results}:/workspace/results "
        f"{IMAGE} {' '.join(TABLE)}")
    logfile = engine.workdir / "readme-run.log"
    start = time.monotonic()
    engine.docker("run", "--rm", "--shm-size", "1g", "--user", f"{uid}:{gid}", "--group-add",
                  "mzattn", "-v", f"{results}:/workspace/results", IMAGE, *TABLE,
                  logfile=logfile)
    return time.monotonic() - start


def foreign_owner_run(engine: Engine, cells_from: Path, results: Path) -> None:
    r"""A results folder of another uid (a non-root host user) gets files of
    that uid from a container started as root (``--user 0``, which the entry
    point narrows to the folder's owner): ``mzattn-repro report`` on a copy
    of :obj:`cells_from`."""
    uid = gid = 4321
    shutil.copytree(cells_from, results)
    for path in [results, *results.rglob("*")]:
        os.chown(path, uid, gid)
    for report in results.rglob("report.md"):
        report.unlink()
    log(f"docker run --user 0 on a results folder of uid {uid}: mzattn-repro report")
    engine.docker("run", "--rm", "--user", "0", "-v", f"{results}:/workspace/results", IMAGE,
                  "report", logfile=engine.workdir / "foreign-run.log")
    check_results(results, uid, gid, expect_commit=None)


def driver_run(engine: Engine, base: str, commit: str, results: Path) -> None:
    r"""``mzattn-repro docker build`` and ``docker run`` (docker-py) of
    :data:`TABLE` into :obj:`results`. The build gets :obj:`commit` (through
    ``$MZATTN_GIT_COMMIT``) so that it is the commit of the first build."""
    cli = [sys.executable, "-m", "mzattn.repro", "docker"]
    log(f"mzattn-repro docker build --tag {PY_IMAGE} --base-image {base}")
    run([*cli, "build", "--tag", PY_IMAGE, "--base-image", base, "--context", str(ROOT)],
        env={**engine.env, "MZATTN_GIT_COMMIT": commit},
        logfile=engine.workdir / "driver-build.log")
    log(f"mzattn-repro docker run --image {PY_IMAGE} --results {results} {' '.join(TABLE)}")
    logfile = engine.workdir / "driver-run.log"
    run([*cli, "run", "--image", PY_IMAGE, "--shm-size", "1g", "--results", str(results), *TABLE],
        env=engine.env, logfile=logfile)
    no_gpu = not (engine.has_nvidia() or Path("/dev/nvidiactl").exists())
    if no_gpu and "running on the CPU" not in logfile.read_text():
        raise Failed(f"no GPU and no NVIDIA runtime here, and `docker run` did not say that it "
                     f"fell back to the CPU ({logfile})")


# ---------------------------------------------------------------- results


def check_results(results: Path, uid: int, gid: int, expect_commit: str | None) -> int:
    r"""Checks :obj:`results` of :data:`TABLE`: every cell JSON parses (and
    records :obj:`expect_commit` when given), ``report.md`` exists, and
    every file belongs to :obj:`uid`/:obj:`gid`. Returns the cell count."""
    table = results / RUNS / TABLE[0]
    cells = sorted((table / "cells").rglob("*.json"))
    if not cells:
        raise Failed(f"no cell JSON under {table / 'cells'}")
    for cell in cells:
        try:
            record = json.loads(cell.read_text())
        except ValueError as e:
            raise Failed(f"{cell} does not parse: {e}") from e
        commit = record.get("git_commit")
        if expect_commit is not None and commit != expect_commit:
            raise Failed(f"{cell} records commit {commit!r}, not {expect_commit!r}")
    if not (table / "report.md").is_file():
        raise Failed(f"no report at {table / 'report.md'}")
    foreign = [p for p in [results, *results.rglob("*")]
               if (p.lstat().st_uid, p.lstat().st_gid) != (uid, gid)]
    if foreign:
        raise Failed(f"{len(foreign)} paths not owned by {uid}:{gid}, e.g. {foreign[0]} "
                     f"({foreign[0].lstat().st_uid}:{foreign[0].lstat().st_gid})")
    return len(cells)


# ------------------------------------------------------------------- main


def cleanup(engine: Engine, base: str | None, results: list[Path]) -> None:
    r"""Removes the test's images and results; the base image too with
    ``MZATTN_DOCKER_TEST_NO_CACHE=1``; stops the daemon the test started."""
    for folder in results:
        shutil.rmtree(folder, ignore_errors=True)
    tags = [IMAGE, PY_IMAGE]
    if base and os.environ.get("MZATTN_DOCKER_TEST_NO_CACHE") == "1":
        tags += [base, base.replace("mzattn-cpu-base:", "mzattn-rootfs:")]
    with contextlib.suppress(Exception):
        engine.docker("image", "rm", "-f", *tags, capture=True, check=False)
        engine.docker("builder", "prune", "-f", capture=True, check=False)
    engine.stop()


def test(engine: Engine, state: dict) -> str:
    r"""Every step; returns the summary line. :obj:`state` collects what
    :func:`cleanup` removes."""
    ensure_tools("docker")
    engine.start()
    base, base_seconds = build_base(engine)
    state["base"] = base
    commit = git_commit()
    build_seconds = build_image(engine, base, commit)
    uid, gid = os.getuid(), os.getgid()
    readme, driver, foreign = (Path(tempfile.mkdtemp(prefix=f"mzattn-{name}-"))
                               for name in ("readme", "driver", "foreign"))
    state["results"] += [readme, driver, foreign]
    foreign.rmdir()
    check_default_user(engine)
    run_seconds = readme_run(engine, readme, uid, gid)
    cells = check_results(readme, uid, gid, commit)
    if uid == 0:
        foreign_owner_run(engine, readme, foreign)
    driver_run(engine, base, commit, driver)
    cells += check_results(driver, uid, gid, commit)
    base_note = "cached" if base_seconds is None else f"built in {base_seconds:.0f} s"
    return (f"docker-test OK: image {IMAGE} {engine.image_size(IMAGE) / 1e9:.1f} GB, "
            f"build {build_seconds:.0f} s (CPU base {base_note}), table28 smoke run "
            f"{run_seconds:.0f} s, cells written {cells} (docker run + docker-py)")


def main() -> int:
    r"""Runs :func:`test`: 0 on success or skip, 1 on failure."""
    workdir = Path(os.environ.get("MZATTN_DOCKER_TEST_DIR", "/var/cache/mzattn-docker-test"))
    workdir.mkdir(parents=True, exist_ok=True)
    engine, state = Engine(workdir), {"base": None, "results": []}
    keep = os.environ.get("KEEP") == "1"
    try:
        summary, code = test(engine, state), 0
    except Skipped as e:
        summary, code = f"SKIPPED: {e}", 0
    except Failed as e:
        summary, code = f"docker-test FAILED: {e}", 1
    finally:
        if keep:
            log(f"KEEP=1: kept images, results {[str(p) for p in state['results']]} and the "
                f"engine (DOCKER_HOST={engine.env.get('DOCKER_HOST', 'default')})")
        else:
            cleanup(engine, state["base"], state["results"])
    print(summary, file=sys.stderr if code else sys.stdout, flush=True)
    return code

if __name__ == "__main__":
    sys.exit(main())
