r"""How the SLURM launcher learns that a cell ended, without a cluster: from
the cell's own JSON record, never from submitit's result pickles
(:obj:`{out}/{table}/slurm/` travels with the results)."""
import os
import pickle
import signal
import subprocess
import time
from types import SimpleNamespace

import pytest
from mzattn.repro.core.registry import load_spec
from mzattn.repro.engine.launch import CellRun, record_failure
from mzattn.repro.engine.options import SlurmOptions
from mzattn.repro.engine.runner import grid
from mzattn.repro.training.cells import RECORD_VERSION, RunOptions, cell_config, write_json_atomic
from mzattn.repro.training.layout import cell_path

slurm = pytest.importorskip("mzattn.repro.engine.slurm")  # needs submitit (mzattn[repro])


class _Exploit:
    def __init__(self, marker: str) -> None:
        self.marker = marker

    def __reduce__(self):
        return os.system, (f"touch {self.marker}",)


def _ended_job(tmp_path, log: str) -> SimpleNamespace:
    # a job whose task ended: a crafted result pickle that runs a command when unpickled
    result, stderr = tmp_path / "9_0_result.pkl", tmp_path / "9_0_log.err"
    result.write_bytes(pickle.dumps(("success", _Exploit(str(tmp_path / "ran")))))
    stderr.write_text(log)
    return SimpleNamespace(paths=SimpleNamespace(result_pickle=result, stderr=stderr),
                           state="COMPLETED")


def _run(out: str) -> CellRun:
    cell = grid(load_spec("table10"), "smoke", ["MZAttn (centers-only Q/K)"])[0]
    return CellRun(cell, "smoke", out, RunOptions())


def test_a_finished_cell_is_read_from_its_record_not_the_pickle(tmp_path):
    run = _run(str(tmp_path))
    record = {"version": RECORD_VERSION, "profile": "smoke", "cell_id": run.cell.cell_id,
              "status": "ok", "config": cell_config(load_spec("table10"), run.cell, "smoke"),
              "metrics": {"r2": 0.5, "mse": 1.0}}
    write_json_atomic(record, cell_path(run.out, run.cell))
    job = _ended_job(tmp_path, "")
    assert slurm._outcome(run, job, SlurmOptions()) == ("ok", None)
    assert not (tmp_path / "ran").exists()


def test_a_failed_cell_is_read_from_its_record(tmp_path):
    run = _run(str(tmp_path))
    record_failure(run.cell, "smoke", run.out, "ValueError: bad")
    assert slurm._outcome(run, _ended_job(tmp_path, ""), SlurmOptions()) == ("failed", None)
    assert not (tmp_path / "ran").exists()


def test_a_job_that_ended_without_a_record_names_its_log(tmp_path):
    run = _run(str(tmp_path))
    job = _ended_job(tmp_path, "Traceback ...\nImportError: no module named torch\n")
    status, reason = slurm._outcome(run, job, SlurmOptions())
    assert status == "failed" and "ImportError: no module named torch" in reason
    assert str(job.paths.stderr) in reason and not (tmp_path / "ran").exists()


class _Preempted:
    r"""A run that SLURM preempts: SIGUSR2 arrives while it works."""
    cell = None

    def __call__(self) -> str:
        os.kill(os.getpid(), signal.SIGUSR2)
        time.sleep(5)
        return "ok"


def _requeue_with(monkeypatch, requeue) -> None:
    # submitit's handler, as it is installed in a SLURM task before the job runs
    monkeypatch.setattr(signal, "getsignal", lambda signum: requeue)


def test_a_preempted_cell_stops_before_submitit_requeues_it(monkeypatch):
    calls = []

    def requeue(signum, frame):
        # outside the cell's stop block: SIGTERM (SLURM ending the step) is submitit's again
        calls.append((signum, signal.signal(signal.SIGTERM, signal.SIG_DFL)))
        raise SystemExit(-1)  # submitit: `scontrol requeue`, then exit
    before = signal.signal(signal.SIGTERM, signal.SIG_DFL)
    _requeue_with(monkeypatch, requeue)
    with pytest.raises(SystemExit):
        slurm.CellJob(_Preempted())()
    signal.signal(signal.SIGTERM, before)
    assert calls == [(signal.SIGUSR2, signal.SIG_DFL)]


def test_scontrol_ended_with_the_step_it_requeued_is_a_requeue(monkeypatch, capsys):
    def requeue(signum, frame):
        raise subprocess.CalledProcessError(-signal.SIGTERM, ["scontrol", "requeue", "9"])
    _requeue_with(monkeypatch, requeue)
    with pytest.raises(SystemExit) as info:
        slurm.CellJob(_Preempted())()
    assert info.value.code == -1
    assert "`scontrol requeue` ended by SIGTERM with the job step" in capsys.readouterr().err
