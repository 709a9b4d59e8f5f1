import importlib.metadata
import json
import os
import re

import pytest
import torch
from mzattn.repro.core import envinfo


def test_default_device_follows_cuda_availability(monkeypatch):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    assert envinfo.default_device() == "cuda"
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    assert envinfo.default_device() == "cpu"


def test_git_commit_prefers_the_image_variable(monkeypatch):
    monkeypatch.setenv(envinfo.GIT_COMMIT_ENV, "0123abcd")
    assert envinfo.git_commit() == "0123abcd"
    monkeypatch.delenv(envinfo.GIT_COMMIT_ENV)
    commit = envinfo.git_commit()
    # this test runs from a git checkout (editable install)
    assert commit is not None and re.fullmatch(r"[0-9a-f]{40}(-dirty)?", commit)


def test_package_versions_match_metadata_and_flag_missing():
    versions = envinfo.package_versions(("torch", "mzattn", "no-such-distribution-xyz"))
    assert versions == {"torch": importlib.metadata.version("torch"),
                        "mzattn": importlib.metadata.version("mzattn"),
                        "no-such-distribution-xyz": None}


def test_cuda_and_cpu_info_describe_this_machine():
    cuda = envinfo.cuda_info()
    assert cuda["available"] == torch.cuda.is_available()
    assert cuda["torch_cuda"] == torch.version.cuda
    assert len(cuda["gpus"]) == (torch.cuda.device_count() if cuda["available"] else 0)
    cpu = envinfo.cpu_info()
    assert cpu["logical_cpus"] == os.cpu_count()
    assert cpu["torch_threads"] == torch.get_num_threads()
    assert 1 <= cpu["usable_cpus"] <= cpu["logical_cpus"]
    assert cpu["capability"] == torch.backends.cpu.get_cpu_capability()
    assert cpu["processor"]


def test_results_record_the_cpu_and_its_vector_instructions():
    record = envinfo.environment_record()
    model, capability = record["cpu"].rsplit(", ", 1)
    assert model == envinfo.cpu_model() and model
    assert capability == torch.backends.cpu.get_cpu_capability()  # e.g. AVX2, AVX512


def test_report_lists_every_field_and_gpu():
    info = envinfo.collect()
    info["cuda"] = {"available": True, "torch_cuda": "12.6", "cudnn": 90100,
                    "gpus": [{"index": 0, "name": "NVIDIA H100", "capability": "9.0",
                              "memory_gib": 79.1}]}
    info["env"] = dict.fromkeys(envinfo.ENV_VARS) | {"TORCH_HOME": "/workspace/.cache/torch"}
    text = envinfo.format_report(info)
    assert "cuda: available=True torch_cuda=12.6 cudnn=90100" in text
    assert "gpu 0: NVIDIA H100 (sm 9.0, 79.1 GiB)" in text
    assert "env: TORCH_HOME=/workspace/.cache/torch" in text
    assert f"  torch: {torch.__version__.split('+')[0]}" in text
    assert f"torch_threads={torch.get_num_threads()}" in text


def test_report_says_when_no_variable_is_set():
    info = envinfo.collect()
    info["env"] = dict.fromkeys(envinfo.ENV_VARS)
    assert "env: (none of MZATTN_DATA" in envinfo.format_report(info)


@pytest.mark.parametrize("as_json", [False, True])
def test_cli_prints_the_report(capsys, as_json):
    assert envinfo.cli(["--json"] if as_json else []) == 0
    out = capsys.readouterr().out
    if as_json:
        info = json.loads(out)
        assert info["packages"]["mzattn"] == importlib.metadata.version("mzattn")
        assert info["default_device"] == envinfo.default_device()
    else:
        assert out.startswith("python: ") and "packages:" in out and "cpu: logical_cpus=" in out


def test_result_records_carry_the_image_commit(monkeypatch):
    # Cells written in the Docker image (no .git) record the build's commit.
    monkeypatch.setenv(envinfo.GIT_COMMIT_ENV, "0123abcd")
    record = envinfo.environment_record()
    assert record["git_commit"] == "0123abcd"
    assert set(record["versions"]) == {*envinfo.RECORDED_PACKAGES, "python"}
