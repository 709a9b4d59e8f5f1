import os
import shutil
import subprocess
import sys
import tempfile

import pytest
from mzattn.repro.cli import main
from mzattn.repro.engine.options import writable_folder

TABLE = ["table3", "--profile", "smoke", "--device", "cpu"]


def _usage_error(capsys, argv: list[str]) -> str:
    # the one error line of a usage error (exit status 2) of 'mzattn-repro table3 ...'
    with pytest.raises(SystemExit) as stop:
        main([*TABLE, *argv])
    assert stop.value.code == 2
    err = capsys.readouterr().err
    errors = [line for line in err.splitlines() if ": error: " in line]
    assert err.startswith("usage: mzattn-repro table3 ") and errors == err.splitlines()[-1:]
    return errors[0].removeprefix("mzattn-repro table3: error: ")


@pytest.mark.parametrize("argv, message", [
    (["--threads", "0"], "argument --threads: must be at least 1 (got 0)"),
    (["--threads", "two"], "argument --threads: 'two' is not a number"),
    (["--seeds", "-1"],
     "argument --seeds: must be distinct integers >= 0, at least one (got '-1')"),
    (["--seeds", "0,0"], "argument --seeds: must be distinct integers >= 0"),
    (["--seeds", ","], "argument --seeds: must be distinct integers >= 0"),
    (["--precision", "8"], "argument --precision: Precision '8' is invalid"),
    (["--num-workers", "-1"], "argument --num-workers: must be at least 0 (got -1)"),
    (["--num-nodes", "0"], "argument --num-nodes: must be at least 1 (got 0)"),
    (["--strategy", "dpp"], "argument --strategy: unknown Lightning strategy 'dpp'"),
    (["--jobs", "-1"], "argument --jobs: must be at least 0 (got -1)"),
    (["--cells-per-gpu", "0"], "argument --cells-per-gpu: must be at least 1 (got 0)"),
    (["--slurm-time", "0"], "argument --slurm-time: must be at least 1 (got 0)"),
    (["--slurm-gpus", "-1"], "argument --slurm-gpus: must be at least 0 (got -1)"),
    (["--slurm-cpus", "0"], "argument --slurm-cpus: must be at least 1 (got 0)"),
    (["--slurm-mem-gb", "0"], "argument --slurm-mem-gb: must be above 0 (got 0)"),
    (["--slurm-array-parallelism", "0"],
     "argument --slurm-array-parallelism: must be at least 1 (got 0)"),
    (["--models", "mz-ful"], "did you mean 'mz-full'"),
    (["--columns", "d=9"], "unknown 'columns' ['d=9']; did you mean 'd=8'?"),
])
def test_a_bad_option_is_a_usage_error_before_anything_is_written(tmp_path, capsys, argv,
                                                                   message):
    out = tmp_path / "out"
    out.mkdir()
    assert message in _usage_error(capsys, [*argv, "--out", str(out)])
    assert not list(out.iterdir())


@pytest.mark.parametrize("option", ["--out", "--data-root"])
@pytest.mark.parametrize("path, message", [
    ("file", "is a file, not a folder"),
    ("file/sub", "is a file, not a folder"),
    ("x" * 300, "file name too long (300 bytes in one name, this file system allows 255)"),
])
def test_an_unusable_folder_is_a_usage_error(tmp_path, capsys, option, path, message):
    (tmp_path / "file").write_text("kept")
    error = _usage_error(capsys, [option, str(tmp_path / path)])
    assert error.startswith(f"argument {option}: ") and message in error
    assert sorted(os.listdir(tmp_path)) == ["file"] and (tmp_path / "file").read_text() == "kept"


def test_a_folder_to_create_is_accepted(tmp_path):
    assert writable_folder(str(tmp_path / "a" / "b")) == str(tmp_path / "a" / "b")
    assert not (tmp_path / "a").exists()


AS_NOBODY = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"]


@pytest.mark.skipif(os.geteuid() == 0 and not shutil.which("setpriv"),
                    reason="root writes anywhere, and setpriv is missing to run as another user")
def test_a_read_only_out_is_a_usage_error():
    top = tempfile.mkdtemp()
    try:
        os.chmod(top, 0o755)
        read_only = os.path.join(top, "ro")
        os.mkdir(read_only, 0o555)
        user = AS_NOBODY if os.geteuid() == 0 else []
        proc = subprocess.run([*user, sys.executable, "-m", "mzattn.repro", *TABLE, "--out",
                               os.path.join(read_only, "results")], capture_output=True,
                              text=True, timeout=300)
        assert proc.returncode == 2, proc.stderr
        assert proc.stderr.splitlines()[-1] == (
            f"mzattn-repro table3: error: argument --out: '{read_only}/results': cannot write "
            f"there (it would be created in '{read_only}'): permission denied or a read-only "
            "file system")
        assert not os.listdir(read_only)
    finally:
        shutil.rmtree(top)
