r"""The pieces around the Docker image that run without an engine: the entry
point's user switch (``mzattn.repro.docker.container``), ``docker/requirements.py``
and the checks and skip logic of ``make docker-test``
(``docker/engine_test.py``)."""
import builtins
import importlib.metadata
import importlib.util
import io
import json
import os
import subprocess
import sys
import tarfile
from pathlib import Path
from types import SimpleNamespace

import pytest
import tomllib
from mzattn.repro.docker import container
from mzattn.repro.engine.options import OUT
from packaging.requirements import Requirement

ROOT = Path(__file__).resolve().parents[3]


def load_script(name: str):
    r"""``docker/NAME.py`` as a module."""
    spec = importlib.util.spec_from_file_location(f"docker_{name}", ROOT / "docker" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def engine_test():
    return load_script("engine_test")


@pytest.fixture(scope="module")
def requirements():
    return load_script("requirements")


# ---------------------------------------------------------- the entry point


def fake_stat(monkeypatch, euid: int, owner: tuple[int, int] | None):
    monkeypatch.setattr(os, "geteuid", lambda: euid)

    def stat(path):
        if owner is None:
            raise FileNotFoundError(path)
        return SimpleNamespace(st_uid=owner[0], st_gid=owner[1])

    monkeypatch.setattr(os, "stat", stat)


@pytest.mark.parametrize("euid, owner, expected", [
    (0, (1001, 1002), (1001, 1002)),  # a non-root host user's folder
    (0, (1000, 1000), (1000, 1000)),  # the image's own volume
    (0, (0, 0), None),  # made by root or by the engine
    (0, None, None),  # no results folder
    (1234, (1001, 1002), None),  # started with --user: nothing to switch
])
def test_entry_point_runs_as_the_results_owner(monkeypatch, euid, owner, expected):
    fake_stat(monkeypatch, euid, owner)
    assert container.run_as() == expected


def test_entry_point_switches_then_execs_the_console_script(monkeypatch):
    calls = []
    fake_stat(monkeypatch, 0, (1001, 1002))  # the results folder, and the data caches (gid 1002)
    monkeypatch.setattr(container, "switch_user",
                        lambda uid, gid, groups: calls.append(("as", uid, gid, groups)))
    monkeypatch.setattr(os, "umask", lambda mask: calls.append(("umask", mask)))
    monkeypatch.setattr(os, "execvp", lambda file, args: calls.append(("exec", file, args)))
    container.main(["table28", "--profile", "smoke"])
    assert calls == [("as", 1001, 1002, [1002]), ("umask", 0o002),
                     ("exec", "mzattn-repro", ["mzattn-repro", "table28", "--profile", "smoke"])]


def test_entry_point_started_with_user_keeps_it_and_shares_the_caches(monkeypatch):
    calls = []
    fake_stat(monkeypatch, 1234, (1001, 1002))
    monkeypatch.setattr(os, "access", lambda path, mode: True)  # its results folder
    monkeypatch.setattr(container, "switch_user", lambda *args, **kwargs: calls.append("as"))
    monkeypatch.setattr(os, "umask", lambda mask: calls.append(("umask", mask)))
    monkeypatch.setattr(os, "execvp", lambda file, args: calls.append(("exec", file)))
    container.main(["list"])
    assert calls == [("umask", 0o002), ("exec", "mzattn-repro")]


@pytest.mark.parametrize("writable", [True, False])
def test_entry_point_as_a_user_says_how_to_write_a_folder_it_cannot(tmp_path, monkeypatch,
                                                                     capsys, writable):
    monkeypatch.setattr(container, "RESULTS", str(tmp_path))  # a host user's folder
    monkeypatch.setattr(os, "geteuid", lambda: 1000)  # the image's user
    monkeypatch.setattr(os, "access", lambda path, mode: writable)
    monkeypatch.setattr(os, "umask", lambda mask: None)
    monkeypatch.setattr(os, "execvp", lambda file, args: None)
    container.main(["table28"])
    hint = (f"[mzattn-repro] {tmp_path} is not writable by uid 1000: run as its owner, "
            'with docker run --user "$(id -u):$(id -g)" --group-add mzattn\n')
    assert capsys.readouterr().err == ("" if writable else hint)


def test_switch_user_sets_the_groups_then_gid_then_uid(monkeypatch):
    calls = []
    for name in ("setgroups", "setgid", "setuid"):
        monkeypatch.setattr(os, name, lambda value, name=name: calls.append((name, value)))
    container.switch_user(7, 8, groups=[1000])
    assert calls == [("setgroups", [1000]), ("setgid", 8), ("setuid", 7)]


# -------------------------------------------------------- requirements.py


def pyproject() -> dict:
    return tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]


def test_requirements_are_pyprojects_core_dependencies(requirements):
    lines = requirements.requirements(pyproject(), [])
    assert lines == pyproject()["dependencies"]
    assert "torch" in {Requirement(line).name for line in lines}


def test_requirements_expand_the_projects_own_extras(requirements, capsys):
    project = {"name": "My_Pkg", "dependencies": ["a"], "optional-dependencies": {
        "x": ["b", "a"], "y": ["c"], "all": ["my-pkg[x,y]", "d"]}}
    assert requirements.requirements(project, ["all"]) == ["a", "d", "b", "c"]
    assert requirements.requirements(project, ["nope"]) == ["a"]
    assert "has no extra 'nope'" in capsys.readouterr().err


def test_requirements_script_runs_on_the_cli(tmp_path):
    done = subprocess.run([sys.executable, str(ROOT / "docker" / "requirements.py"),
                           str(ROOT / "pyproject.toml"), "all"], capture_output=True, text=True,
                          check=True)
    torch = next(line for line in pyproject()["dependencies"] if line.startswith("torch"))
    assert torch in done.stdout.splitlines()


def test_requirements_read_toml_without_tomllib(monkeypatch):
    # Python 3.10, which pyproject allows, has no tomllib: pip's parser is used.
    real_import = builtins.__import__

    def no_tomllib(name, *args, **kwargs):
        if name == "tomllib":
            raise ModuleNotFoundError(name)
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", no_tomllib)
    module = load_script("requirements")
    assert module.tomllib.__name__ == "pip._vendor.tomli"


# ------------------------------------------------------------ engine_test.py


def write_cells(results: Path, commit: str, count: int = 2) -> None:
    # as a bare `docker run ... table28` writes them into the results mount
    cells = results / "runs" / "table28" / "cells" / "smoke"
    cells.mkdir(parents=True)
    for index in range(count):
        (cells / f"c{index}.json").write_text(json.dumps({"git_commit": commit}))
    (results / "runs" / "table28" / "report.md").write_text("# report\n")


def test_results_check_counts_cells_of_the_expected_commit_and_owner(engine_test, tmp_path):
    write_cells(tmp_path, "abc")
    assert engine_test.check_results(tmp_path, os.getuid(), os.getgid(), "abc") == 2


@pytest.mark.parametrize("damage, message", [
    ("commit", "records commit 'abc', not 'def'"),
    ("json", "does not parse"),
    ("report", "no report"),
    ("owner", "not owned by"),
])
def test_results_check_fails_on_what_is_ours(engine_test, tmp_path, damage, message):
    write_cells(tmp_path, "abc")
    expected, uid = "abc", os.getuid()
    if damage == "commit":
        expected = "def"
    elif damage == "json":
        next(tmp_path.rglob("c0.json")).write_text("{")
    elif damage == "report":
        (tmp_path / "runs" / "table28" / "report.md").unlink()
    else:
        uid += 1
    with pytest.raises(engine_test.Failed, match=message):
        engine_test.check_results(tmp_path, uid, os.getgid(), expected)


@pytest.mark.parametrize("outcome, code, last", [
    ("skip", 0, "SKIPPED: no engine here"), ("fail", 1, "docker-test FAILED: broken"),
])
def test_main_says_skipped_or_failed_last_and_cleans_up(engine_test, monkeypatch, tmp_path,
                                                       capsys, outcome, code, last):
    def test(engine, state):
        raise (engine_test.Skipped("no engine here") if outcome == "skip"
               else engine_test.Failed("broken"))

    cleaned = []
    monkeypatch.setenv("MZATTN_DOCKER_TEST_DIR", str(tmp_path))
    monkeypatch.delenv("KEEP", raising=False)
    monkeypatch.setattr(engine_test, "test", test)
    monkeypatch.setattr(engine_test, "cleanup", lambda *args: cleaned.append(args))
    assert engine_test.main() == code
    out = capsys.readouterr()
    assert (out.err if code else out.out).strip().splitlines()[-1] == last
    assert len(cleaned) == 1


def test_base_image_tag_follows_its_inputs(engine_test, monkeypatch, tmp_path):
    tag = engine_test.base_tag()
    assert tag.startswith("mzattn-cpu-base:") and tag == engine_test.base_tag()
    changed = tmp_path / "Dockerfile"
    changed.write_text(engine_test.BASE_DOCKERFILE.read_text() + "# changed\n")
    monkeypatch.setattr(engine_test, "BASE_DOCKERFILE", changed)
    assert engine_test.base_tag() != tag


def test_unreachable_pypi_is_a_skip(engine_test, monkeypatch):
    monkeypatch.setattr(engine_test, "PYPI_PROBE", "https://127.0.0.1:9/simple/torch/")
    with pytest.raises(engine_test.Skipped, match="PyPI unreachable"):
        engine_test.probe_pypi()


def test_missing_tools_without_root_are_a_skip(engine_test, monkeypatch):
    monkeypatch.setattr(engine_test.shutil, "which", lambda tool: None)
    monkeypatch.setattr(os, "geteuid", lambda: 1000)
    with pytest.raises(engine_test.Skipped, match="debootstrap missing and not root"):
        engine_test.ensure_tools("debootstrap")


def _tar(files: dict[str, bytes]) -> bytes:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w") as tar:
        for name, data in files.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return buffer.getvalue()


@pytest.mark.parametrize("layout", ["{}/layer.tar", "blobs/sha256/{}"])  # docker < 25, OCI
def test_layers_holding_finds_a_secret_in_any_layer_of_docker_save(engine_test, monkeypatch,
                                                                    layout):
    clean = _tar({"usr/lib/x.py": b"print(1)"})
    leaky = _tar({"tmp/mzattn-src/.env": b"TOKEN=SECRET-1\n", "opt/big.bin": b"SECRET-1" * 2**14})
    saved = _tar({"manifest.json": b"[]", layout.format("a1"): clean,
                  layout.format("b2"): leaky, layout.format("c3"): b'{"config": 1}'})
    monkeypatch.setattr(engine_test.subprocess, "Popen", lambda *args, **kwargs: SimpleNamespace(
        stdout=io.BytesIO(saved), wait=lambda: 0, returncode=0))
    found = engine_test.layers_holding(SimpleNamespace(env={}), "image", "SECRET-1")
    assert found == [f"{layout.format('b2')}:tmp/mzattn-src/.env"]  # big files are not read
    assert engine_test.layers_holding(SimpleNamespace(env={}), "image", "SECRET-2") == []


def test_planted_secrets_leave_nothing_behind(engine_test, tmp_path, monkeypatch):
    monkeypatch.setattr(engine_test, "ROOT", tmp_path)
    (tmp_path / "repro").mkdir()
    (tmp_path / ".netrc").write_text("mine")
    with engine_test.planted_secrets("SECRET"):
        planted = sorted(str(p.relative_to(tmp_path)) for p in tmp_path.rglob("*") if p.is_file())
    assert planted == [".aws/credentials", ".env", ".netrc", ".ssh/id_ed25519",
                       "mzattn-engine-test.pem", "repro/.env"]
    assert sorted(p.name for p in tmp_path.rglob("*")) == [".netrc", "repro"]
    assert (tmp_path / ".netrc").read_text() == "mine"  # what was there is never touched


def test_the_engine_test_looks_for_the_cells_where_a_bare_run_writes(engine_test):
    # the results mount is /workspace/results and the image works in /workspace
    assert Path("results", engine_test.RUNS) == Path(OUT)
