import dataclasses
import errno
import glob
import io
import os
import os.path as osp
import shutil

import lightning.pytorch as pl
import pytest
import torch
from mzattn.repro.core.faults import NoSpace, atomic_write
from mzattn.repro.core.spec import SMOKE
from mzattn.repro.training import parking
from mzattn.repro.training.cells import run_cell
from mzattn.repro.training.layout import checkpoint_dir, parked_dir
from mzattn.repro.training.parking import (
    TRAINING_STATE,
    ParkError,
    lean,
    park,
    parked_history,
    remove_parked,
    unpark,
)

from tests.repro.core.test_faults import _cell, faulty_table
from tests.repro.training.test_cells import SPEC
from tests.repro.training.test_cells import _cell as tiny_cell


def _files(folder: str) -> dict[str, bytes]:
    # every file of `folder`, hidden ones included, with its bytes
    return {name: open(osp.join(folder, name), "rb").read() for name in sorted(os.listdir(folder))}


def _fake_checkpoints(out: str, cell, last: bytes = b"last 1", best: bytes | None = b"best 1"):
    # written as Lightning writes them: a new file replaces the old one (os.replace)
    folder = checkpoint_dir(out, cell)
    for name, data in (("best.ckpt", best), ("last.ckpt", last)):
        if data is not None:
            atomic_write(osp.join(folder, name), lambda f, data=data: f.write(data), binary=True)
    return folder


def test_a_park_resumes_in_another_clone_with_its_best(tmp_path, options, monkeypatch):
    # Every session starts on a fresh clone at another absolute path: the parked last.ckpt's
    # callback state names best.ckpt in the first clone's ckpt/ folder, re-rooted in the
    # second's; the test then evaluates the restored best.ckpt, not the last weights.
    first, second = str(tmp_path / "a" / "results"), str(tmp_path / "b" / "results")
    one, three = (dataclasses.replace(SPEC, profiles={**SPEC.profiles, "smoke": dataclasses.replace(
        SMOKE, max_epochs=epochs, patience=5)}) for epochs in (1, 3))
    cell = tiny_cell()
    keep = dataclasses.replace(options, keep_checkpoints=True)
    trained = run_cell(one, cell, "smoke", first, keep)
    steps = iter(range(4))  # best.ckpt as if of an earlier step than last.ckpt: parked lean
    monkeypatch.setattr(parking, "_step", lambda data: next(steps))
    assert park(first, cell)
    parked, own = _files(parked_dir(first, cell)), _files(checkpoint_dir(first, cell))
    assert sorted(parked) == ["best.ckpt", "last.ckpt"]
    assert parked["last.ckpt"] == own["last.ckpt"]  # whole: the cell resumes from it
    best, whole = (torch.load(io.BytesIO(own_or_parked["best.ckpt"]), weights_only=True)
                   for own_or_parked in (parked, own))
    assert set(whole) - set(best) == set(TRAINING_STATE)  # best: what the test reads
    assert all(torch.equal(best["state_dict"][k], v) for k, v in whole["state_dict"].items())
    assert len(parked["best.ckpt"]) < len(own["best.ckpt"])
    shutil.copytree(osp.join(first, "tiny", "parked"), osp.join(second, "tiny", "parked"))
    shutil.rmtree(tmp_path / "a")  # the first clone is gone with its session

    tested, test = [], pl.Trainer.test

    def spy(trainer, *args, ckpt_path=None, **kwargs):
        tested.append((ckpt_path, ckpt_path and open(ckpt_path, "rb").read()))
        return test(trainer, *args, ckpt_path=ckpt_path, **kwargs)
    monkeypatch.setattr(pl.Trainer, "test", spy)
    record = run_cell(one, cell, "smoke", second, keep)  # at its cap: no training
    assert record["status"] == "ok" and record["resumed"] and record["epochs"] == 1
    assert record["metrics"] == trained["metrics"]  # the same best weights, tested
    assert tested == [(osp.join(osp.realpath(checkpoint_dir(second, cell)), "best.ckpt"),
                       parked["best.ckpt"])]
    assert osp.isdir(parked_dir(second, cell))  # --keep-checkpoints keeps it

    os.remove(osp.join(second, "tiny", "cells", f"{cell.cell_id}.json"))
    shutil.rmtree(checkpoint_dir(second, cell))
    [epoch_1] = parked_history(second, cell)
    record = run_cell(three, cell, "smoke", second, options)
    assert record["status"] == "ok" and record["resumed"] and record["epochs"] == 3
    assert [row["epoch"] for row in record["history"]] == [1, 2, 3]
    assert record["history"][0] == epoch_1  # from the park, not trained again
    assert record["best_val_loss"] == min(row["val_loss"] for row in record["history"])
    assert not osp.exists(osp.join(second, "tiny", "parked"))  # finished: removed


def test_a_corrupt_park_is_set_aside_and_the_cell_restarts(tmp_path, options, capsys):
    out, one = str(tmp_path), faulty_table.spec(1)
    cell = _cell("slow", one)
    os.makedirs(parked_dir(out, cell))
    with open(osp.join(parked_dir(out, cell), "last.ckpt"), "wb") as f:
        f.write(b"half a checkpoint")
    record = run_cell(one, cell, "smoke", out, dataclasses.replace(options, keep_checkpoints=True))
    assert record["status"] == "ok" and record["resumed"] is False and record["epochs"] == 1
    assert "not a loadable checkpoint" in capsys.readouterr().err
    assert glob.glob(osp.join(checkpoint_dir(out, cell), "last.ckpt.corrupt-*"))


def test_park_takes_both_files_of_one_moment(tmp_path, monkeypatch):
    out, cell = str(tmp_path), _cell("fast")
    _fake_checkpoints(out, cell)
    read, reads = parking._read, []

    def read_while_training(source, name):  # the cell saves an epoch during the first copy
        reads.append(name)
        data = read(source, name)
        if len(reads) == 1:
            _fake_checkpoints(out, cell, b"last 2", b"best 2")  # os.replace-like: new files
        return data
    monkeypatch.setattr(parking, "_read", read_while_training)
    assert park(out, cell)
    assert len(reads) == 4  # copied twice
    assert _files(parked_dir(out, cell)) == {"best.ckpt": b"best 2", "last.ckpt": b"last 2"}

    def replace_last(source, name):  # the cell never stops saving
        data = read(source, name)
        _fake_checkpoints(out, cell, b"last 3", None)
        return data
    monkeypatch.setattr(parking, "_read", replace_last)
    monkeypatch.setattr(parking.time, "sleep", lambda seconds: None)
    with pytest.raises(ParkError, match="changed during each of 5 copies"):
        park(out, cell)
    assert _files(parked_dir(out, cell)) == {"best.ckpt": b"best 2", "last.ckpt": b"last 2"}


def test_a_failed_park_leaves_the_previous_one(tmp_path, monkeypatch):
    out, cell = str(tmp_path), _cell("fast")
    assert not park(out, cell) and not osp.exists(parked_dir(out, cell))  # nothing to park
    _fake_checkpoints(out, cell)
    assert park(out, cell)
    _fake_checkpoints(out, cell, b"last 2", b"best 2")
    write = parking.atomic_write

    def full_disk(path, *args, **kwargs):
        if "last" in osp.basename(path):
            raise NoSpace(osp.dirname(path))
        write(path, *args, **kwargs)
    monkeypatch.setattr(parking, "atomic_write", full_disk)
    with pytest.raises(NoSpace):
        park(out, cell)
    assert _files(parked_dir(out, cell)) == {"best.ckpt": b"best 1", "last.ckpt": b"last 1"}

    def interrupted(path, *args, **kwargs):  # a real write, broken off
        write(path, lambda f: (f.write(b"ha"), _raise(OSError(errno.ENOSPC, "full"))),
              binary=True)
    monkeypatch.setattr(parking, "atomic_write", interrupted)
    with pytest.raises(NoSpace):
        park(out, cell)
    assert _files(parked_dir(out, cell)) == {"best.ckpt": b"best 1", "last.ckpt": b"last 1"}


def _raise(error: Exception) -> None:
    raise error


def test_unpark_only_where_the_cell_has_no_last_checkpoint(tmp_path):
    out, cell = str(tmp_path), _cell("fast")
    assert not unpark(out, cell)  # nothing parked
    folder = _fake_checkpoints(out, cell, b"last 1", None)
    assert park(out, cell)
    assert _files(parked_dir(out, cell)) == {"last.ckpt": b"last 1"}
    _fake_checkpoints(out, cell, b"last 2", b"best 2")
    assert not unpark(out, cell)  # its own is newer
    assert _files(folder) == {"best.ckpt": b"best 2", "last.ckpt": b"last 2"}
    os.remove(osp.join(folder, "last.ckpt"))
    assert unpark(out, cell)  # and a best.ckpt of another moment goes
    assert _files(folder) == {"last.ckpt": b"last 1"}
    remove_parked(out, cell)
    assert not osp.exists(osp.dirname(parked_dir(out, cell)))


def test_two_ranks_unpark_at_once(tmp_path, monkeypatch):
    # The ranks of a DDP run each call train_cell, and so unpark, at the same moment: a second
    # rank whose copy runs between the first rank's staging and renaming must not take (or
    # replace) the first rank's staged files.
    out, cell = str(tmp_path), _cell("fast")
    _fake_checkpoints(out, cell, b"last 1", b"best 1")
    assert park(out, cell)
    shutil.rmtree(checkpoint_dir(out, cell))
    replace, interleaved = os.replace, []

    def second_rank_first(source, target):
        # a staged file (not atomic_write's own temporary one) renamed into place: the first
        # rank has staged both of its files, and the second rank runs in full now
        staged = source.endswith(".staged") and not osp.basename(source).startswith(".tmp-")
        if staged and not interleaved:
            interleaved.append(True)
            assert unpark(out, cell)
        replace(source, target)
    monkeypatch.setattr(parking.os, "replace", second_rank_first)
    assert unpark(out, cell)
    assert _files(checkpoint_dir(out, cell)) == {"best.ckpt": b"best 1", "last.ckpt": b"last 1"}


def _saved(obj) -> bytes:
    buffer = io.BytesIO()
    torch.save(obj, buffer)
    return buffer.getvalue()


def test_lean_leaves_out_the_training_state_only():
    saved = _saved
    weights = {"state_dict": {"w": torch.arange(3.0)}, "epoch": 4, "callbacks": {"History": {}}}
    whole = weights | {"optimizer_states": [{"state": {0: {"exp_avg": torch.ones(3)}}}],
                       "lr_schedulers": [{"last_epoch": 4}]}
    kept = torch.load(io.BytesIO(lean(saved(whole))), weights_only=True)
    assert set(kept) == set(weights) and torch.equal(kept["state_dict"]["w"], torch.arange(3.0))
    assert lean(saved(weights)) == saved(weights)  # nothing to leave out: the same bytes
    assert lean(b"best 1") == b"best 1"  # does not load: parked as it is, for the test to name


@pytest.mark.parametrize("best_step", [7, 4])
def test_a_best_of_an_earlier_step_is_parked_lean(tmp_path, best_step):
    # of the same step as last.ckpt, best.ckpt is parked whole: git stores it as a small
    # delta of last.ckpt, which it would not do for a lean one of a third of its size
    out, cell = str(tmp_path), _cell("fast")
    moments = {"optimizer_states": [{"state": {0: {"exp_avg": torch.ones(64)}}}]}
    best = _saved({"global_step": best_step, "state_dict": {"w": torch.zeros(64)}} | moments)
    last = _saved({"global_step": 7, "state_dict": {"w": torch.ones(64)}} | moments)
    _fake_checkpoints(out, cell, last, best)
    assert park(out, cell)
    parked = _files(parked_dir(out, cell))
    assert parked["last.ckpt"] == last
    assert lean(best) != best  # the two cases differ
    assert parked["best.ckpt"] == (best if best_step == 7 else lean(best))
