import dataclasses
import glob
import os
import os.path as osp

import torch
from mzattn.repro.core.spec import Row
from mzattn.repro.training.cells import run_cell
from mzattn.repro.training.checkpoints import mismatch, safe_load
from mzattn.repro.training.layout import checkpoint_dir

from tests.repro.core.test_faults import _cell, faulty_table


def _keep(options):
    return dataclasses.replace(options, keep_checkpoints=True)


def _edit(path: str, edit) -> None:
    checkpoint = safe_load(path)
    edit(checkpoint)
    torch.save(checkpoint, path)


def test_a_checkpoint_naming_files_outside_its_folder_removes_nothing(tmp_path, options,
                                                                      capsys):
    # The attack of issue 36: a last.ckpt whose ModelCheckpoint state names a folder through
    # `..`; Lightning removes the "previous best" and "previous last" it names, recursively.
    out, victim = str(tmp_path / "out"), tmp_path / "victim"
    victim.mkdir()
    (victim / "thesis.tex").write_text("years of work")
    one, three = faulty_table.spec(1), faulty_table.spec(3)
    run_cell(one, _cell("slow", one), "smoke", out, _keep(options))
    folder = checkpoint_dir(out, _cell("slow", one))
    outside = osp.join(folder, "..", "..", "..", "..", "victim")
    assert osp.samefile(outside, victim)

    def attack(checkpoint: dict) -> None:
        for key, state in checkpoint["callbacks"].items():
            if key.startswith("ModelCheckpoint"):
                state.update(best_model_path=outside, kth_best_model_path=outside,
                             last_model_path=outside, best_k_models={outside: torch.tensor(9e9)},
                             kth_value=torch.tensor(9e9), best_model_score=torch.tensor(9e9))
    _edit(osp.join(folder, "last.ckpt"), attack)
    record = run_cell(three, _cell("slow", three), "smoke", out, _keep(options))
    assert record["status"] == "ok" and record["resumed"] and record["epochs"] >= 2
    assert (victim / "thesis.tex").read_text() == "years of work"
    assert "not a checkpoint of its own folder; ignored" in capsys.readouterr().err
    assert sorted(osp.basename(p) for p in glob.glob(osp.join(folder, "*"))) == \
        ["best.ckpt", "last.ckpt"]


def test_a_checkpoint_of_a_moved_results_folder_keeps_its_best(tmp_path, options):
    # Results folders are copied between machines: paths of the folder it was written in are
    # re-rooted in the folder where it is now, not dropped.
    out, moved = str(tmp_path / "out"), str(tmp_path / "moved")
    one, three = faulty_table.spec(1), faulty_table.spec(3)
    run_cell(one, _cell("slow", one), "smoke", out, _keep(options))
    os.rename(out, moved)
    record = run_cell(three, _cell("slow", three), "smoke", moved, _keep(options))
    assert record["status"] == "ok" and record["resumed"]
    assert record["best_val_loss"] == min(row["val_loss"] for row in record["history"])


def test_a_checkpoint_of_another_model_is_set_aside_and_the_cell_restarts(tmp_path, options,
                                                                          capsys):
    out, cell = str(tmp_path), _cell("c3")
    run_cell(faulty_table.spec(), _cell("fast"), "smoke", out, _keep(options))
    source = osp.join(checkpoint_dir(out, _cell("fast")), "last.ckpt")
    last = osp.join(checkpoint_dir(out, cell), "last.ckpt")
    os.makedirs(osp.dirname(last))

    def wider(checkpoint: dict) -> None:  # the same model at another width
        name = next(iter(checkpoint["state_dict"]))
        checkpoint["state_dict"][name] = torch.zeros(3, 3, 3)
    _edit(source, wider)
    os.rename(source, last)
    record = run_cell(faulty_table.spec(), cell, "smoke", out, _keep(options))
    assert record["status"] == "ok" and record["resumed"] is False
    err = capsys.readouterr().err
    assert "in the checkpoint; moved to" in err and "the cell restarts" in err
    assert glob.glob(last + ".mismatch-*")


class _WithExtraState(torch.nn.Linear):
    # like mzattn.stacked.StackedSeeds: a module whose state dict holds non-tensor extra state
    def get_extra_state(self) -> dict:
        return {"seeds": [0, 1, 2]}

    def set_extra_state(self, state: dict) -> None:
        self.seeds = state["seeds"]


def test_a_modules_extra_state_is_compared_by_kind_not_shape():
    module = _WithExtraState(2, 3)
    state = module.state_dict()
    assert mismatch({"state_dict": state}, module) is None
    assert mismatch({"state_dict": {**state, "_extra_state": torch.zeros(2)}}, module) == \
        "_extra_state is a dict here, a Tensor in the checkpoint"
    assert "weight has shape (3, 2) here, (2, 2)" in mismatch(
        {"state_dict": {**state, "weight": torch.zeros(2, 2)}}, module)


def _mz(epochs):
    return dataclasses.replace(faulty_table.spec(epochs), rows=(Row("MZ", "mz-slim"),))


def test_a_cell_resumed_under_the_other_activations_says_both(tmp_path, options):
    # a run stops after its first epoch with MZ attention recomputing its activations; the
    # next run resumes it storing them: the record names both runs and the modes in order
    out, one, three = str(tmp_path), _mz(1), _mz(3)
    cell = dataclasses.replace(_cell("slow", one), row=one.rows[0])
    first = run_cell(one, cell, "smoke", out, _keep(options))
    assert first["runs"] == [{"epoch": 1, "activations": "recomputed"}]
    assert first["activations"] == "recomputed"
    stored = dataclasses.replace(options, store_activations=True)
    record = run_cell(three, dataclasses.replace(cell, column=three.column("slow")), "smoke",
                      out, stored)
    assert record["status"] == "ok" and record["resumed"]
    assert record["runs"] == [{"epoch": 1, "activations": "recomputed"},
                              {"epoch": 2, "activations": "stored"}]
    assert record["activations"] == "recomputed, then stored"


def test_a_checkpoint_from_before_runs_were_kept_says_what_is_not_known(tmp_path, options):
    out, one, three = str(tmp_path), _mz(1), _mz(3)
    cell = dataclasses.replace(_cell("slow", one), row=one.rows[0])
    run_cell(one, cell, "smoke", out, _keep(options))
    _edit(osp.join(checkpoint_dir(out, cell), "last.ckpt"),
          lambda checkpoint: checkpoint["callbacks"]["History"].pop("runs"))
    record = run_cell(three, dataclasses.replace(cell, column=three.column("slow")), "smoke",
                      out, options)
    assert record["runs"] == [{"epoch": 1, "activations": "not recorded"},
                              {"epoch": 2, "activations": "recomputed"}]
    assert record["activations"] == "not recorded, then recomputed"
