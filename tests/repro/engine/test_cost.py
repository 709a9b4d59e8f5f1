import dataclasses
import os
import subprocess
import sys
import time
from dataclasses import dataclass

import mzattn.repro.engine.cost as cost_module
import mzattn.repro.engine.launch as launch_module
import pytest
import torch
from mzattn.datasets.synthetic.tasks import get_config
from mzattn.repro.core.registry import load_spec
from mzattn.repro.engine.cost import PROBE_SETS, by_cost, probe_batch, step_seconds, training_cost
from mzattn.repro.engine.launch import CellRun, launch
from mzattn.repro.engine.options import LaunchOptions, SlurmOptions
from mzattn.repro.engine.runner import grid
from mzattn.repro.training.cells import RunOptions

slurm_module = pytest.importorskip("mzattn.repro.engine.slurm")  # needs submitit (mzattn[repro])


@dataclass(frozen=True)
class _Costs:
    name: str
    estimate: float | None

    def cost(self) -> float | None:
        return self.estimate


def _runs(table, profile, models=None):
    return [CellRun(cell, profile, "unused", RunOptions())
            for cell in grid(load_spec(table), profile, models)]


def test_by_cost_starts_unknown_then_costliest():
    runs = [_Costs("a", 1.0), _Costs("b", None), _Costs("c", 5.0), _Costs("d", 1.0),
            _Costs("e", None), _Costs("f", 3.0)]
    assert [run.name for run in by_cost(runs)] == ["b", "e", "c", "f", "a", "d"]


def test_mz_full_steps_cost_more_than_deep_sets():
    x, batch = probe_batch(get_config("task_g", d=8))
    assert x.shape == (len(batch), 8) and batch.max() == PROBE_SETS - 1
    assert step_seconds("mz-full", {}, x, batch, 1) > 2 * step_seconds("deep-sets", {}, x, batch, 1)


def test_a_cell_costs_its_model_on_its_task():
    run = _runs("table6", "smoke", ["MZ-Full (n_g=8, L=4)"])[0]
    assert run.cost() > 0


def test_cost_scales_with_the_epoch_cap_and_the_training_split():
    args = dict(model="deep-sets", overrides={}, task="task_a")
    one = training_cost(**args, task_overrides={"num_train": 64}, max_epochs=1)
    assert training_cost(**args, task_overrides={"num_train": 64}, max_epochs=3) \
        == 3 * one  # the same cached probe
    assert training_cost(**args, task_overrides={"num_train": 128}, max_epochs=1) == 2 * one


def test_a_cell_that_stores_activations_is_costed_so(monkeypatch):
    # the probe builds the model as the cell runs it: MZ attention storing its activations
    # with --store-activations (faster on CPU), each mode probed and cached apart
    import mzlayers
    modes, set_recompute = [], mzlayers.set_recompute

    def recording(model, recompute):
        modes.append(recompute)
        return set_recompute(model, recompute)
    monkeypatch.setattr(mzlayers, "set_recompute", recording)
    monkeypatch.setattr(cost_module, "_STEPS", {})  # probed here, not in an earlier test
    run = _runs("table6", "smoke", ["MZ-Full (n_g=8, L=4)"])[0]
    stored = dataclasses.replace(run, options=RunOptions(store_activations=True))
    assert run.cost() > 0 and stored.cost() > 0
    assert modes == [True, False]


def test_a_real_dataset_has_no_estimate():
    run = _runs("table28", "smoke")[0]
    assert run.cost() is None


def test_the_probe_leaves_the_random_state_and_threads_alone():
    x, batch = torch.ones(6, 4), torch.tensor([0, 0, 0, 1, 1, 1])
    torch.manual_seed(3)
    expected, threads = torch.rand(1), torch.get_num_threads()
    torch.manual_seed(3)
    step_seconds("standard", {}, x, batch, 1)
    assert torch.equal(torch.rand(1), expected)
    assert torch.get_num_threads() == threads


def _started(monkeypatch, tmp_path, cells, launch_options=None, **kwargs):
    # the runs in the order the launcher hands them on, to the pool or to SLURM
    started = []
    monkeypatch.setattr(launch_module, "run_in_processes",
                        lambda runs, slots, on_done, threads, pick: started.extend(runs))
    monkeypatch.setattr(slurm_module, "run_on_slurm",
                        lambda runs, slurm, on_done: started.extend(runs))
    launch(cells, "smoke", str(tmp_path), RunOptions(accelerator="cpu"),
           launch_options or LaunchOptions(jobs=2, threads=1), **kwargs)
    return started


def test_jobs_start_the_costliest_first(monkeypatch, tmp_path):
    cells = grid(load_spec("table6"), "smoke", ["Standard", "MZ-Full (n_g=8, L=4)"])
    started = _started(monkeypatch, tmp_path, cells)
    costs = [run.cost() for run in started]
    assert costs == sorted(costs, reverse=True)
    assert started[0].cell.row.model == "mz-full"
    assert sorted(run.cell.cell_id for run in started) == sorted(c.cell_id for c in cells)


@pytest.mark.parametrize("parallelism,costliest_first", [(2, True), (64, False)])
def test_a_capped_slurm_array_starts_the_costliest_first(monkeypatch, tmp_path, parallelism,
                                                        costliest_first):
    cells = grid(load_spec("table6"), "smoke", ["Standard", "MZ-Full (n_g=8, L=4)"])
    slurm = LaunchOptions(launcher="slurm", slurm=SlurmOptions(parallelism=parallelism))
    started = _started(monkeypatch, tmp_path, cells, slurm)
    assert sorted(run.cell.cell_id for run in started) == sorted(c.cell_id for c in cells)
    if costliest_first:  # more cells than run at once
        costs = [run.cost() for run in started]
        assert costs == sorted(costs, reverse=True) and started[0].cell.row.model == "mz-full"
    else:  # all start at once: the table's order, and no probe
        assert [run.cell.cell_id for run in started] == [cell.cell_id for cell in cells]


def test_an_analysis_training_costs_its_profile(tmp_path):
    from dataclasses import replace

    from mzattn.repro.analysis.training import TrainingRun
    from mzattn.repro.core.spec import SMOKE
    from mzattn.repro.engine.runs import CellName
    run = TrainingRun(CellName("study", "standard"), str(tmp_path), "standard", "task_a", SMOKE)
    longer = replace(run, profile=replace(SMOKE, max_epochs=2 * SMOKE.max_epochs))
    assert longer.cost() == 2 * run.cost() > 0


def test_a_campaign_keeps_its_order(monkeypatch, tmp_path):
    cells = grid(load_spec("table6"), "smoke", ["Standard", "MZ-Full (n_g=8, L=4)"])
    started = _started(monkeypatch, tmp_path, cells, keep_order=True)
    assert [run.cell.cell_id for run in started] == [cell.cell_id for cell in cells]


def test_the_probe_times_the_step_not_the_load():
    # three busy processes a core make a wall-clock step 3-5 times longer; one core's time for
    # the step stays about the same, so the estimate holds on a loaded machine
    x, batch = probe_batch(get_config("quadratic_tdof", L=8))
    idle = step_seconds("mz-full", {}, x, batch, 1)
    busy = [subprocess.Popen([sys.executable, "-c", "while True: pass"])
            for _ in range(3 * (os.cpu_count() or 1))]
    try:
        time.sleep(0.5)
        loaded = step_seconds("mz-full", {}, x, batch, 1)
    finally:
        for process in busy:
            process.kill()
            process.wait()
    assert loaded < 2 * idle


def test_a_padded_cell_is_probed_on_padded_sets(monkeypatch):
    # padded batching gives the model every set zero-padded to the batch's largest: more
    # rows than the ragged sets, so a padded cell's probe pads its sets too
    config = get_config("task_a", d=8)
    x, batch = probe_batch(config)
    x_pad, batch_pad = probe_batch(config, padded=True)
    sizes, padded_sizes = torch.bincount(batch), torch.bincount(batch_pad)
    assert (padded_sizes == sizes.max()).all() and sizes.min() < sizes.max()
    starts = torch.cat([sizes.new_zeros(1), padded_sizes.cumsum(0)[:-1]])
    rows = torch.cat([start + torch.arange(n) for start, n in zip(starts, sizes, strict=True)])
    assert torch.equal(x_pad[rows], x)  # the sets themselves, in order
    assert x_pad.abs().sum() == x.abs().sum()  # the rest is zeros
    cell = grid(load_spec("table29"), "smoke", ["Deep Sets"], batching="padded")[0]
    probed = []
    original = cost_module.probe_batch

    def recording(config, *args, **kwargs):
        probed.append(kwargs.get("padded"))
        return original(config, *args, **kwargs)
    monkeypatch.setattr(cost_module, "probe_batch", recording)
    monkeypatch.setattr(cost_module, "_STEPS", {})
    for batching in ("padded", "masked"):  # probed and cached apart
        CellRun(dataclasses.replace(cell, batching=batching), "smoke", "unused",
                RunOptions()).cost()
    assert probed == [True, False]
