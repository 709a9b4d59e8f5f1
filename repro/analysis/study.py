r"""The uncertainty study behind Tables 19-21 (App. D.3): on set matching
(Task B) train MZAttn-Full and a Standard Set Transformer (the MC-Dropout
base and the first Deep-Ensemble member) plus further independently
initialised Standard members, predict the validation and test splits, fit
each method's affine map from its uncertainty score to a predictive std on
the validation split, and score the test split.

One JSON per seed (:obj:`{out}/uncertainty/seed{s}.json`) holds every
number the three tables report; checkpoints live beside it and a finished
seed is never recomputed.
"""
import dataclasses
import json
import os.path as osp
from dataclasses import dataclass, field
from typing import Any

import torch
from mzattn.repro.core.envinfo import environment_record
from mzattn.repro.core.spec import QUICK, SMOKE, Profile, full
from mzattn.repro.engine.launch import LaunchOptions
from mzattn.repro.engine.runs import CellName
from mzattn.repro.training.cells import RunOptions, write_json_atomic

from .calibration import (
    StdMap,
    correlations,
    error_bins,
    reliability_curve,
    uncertainty_scores,
)
from .checkpoint import load_checkpoint
from .predict import Predictions, predict, scalar_ihw
from .training import TrainingRun, train_all

TASK = "task_b"
MZ, MC, ENSEMBLE = "MZAttn (IHW)", "MC-Dropout", "Deep Ensemble"
METHODS = (MZ, MC, ENSEMBLE)
r"""Row labels of Tables 20-21, in the paper's order."""
MODELS = {MZ: "mz-full", MC: "standard", ENSEMBLE: "standard"}
r"""Registry model of each method."""


@dataclass(frozen=True)
class StudyProfile:
    r"""Sizes of the uncertainty study.

    Args:
        training (Profile): Data sizes and training budget of every model.
        num_members (int, optional): Deep-Ensemble members. (default: :obj:`5`)
        mc_passes (int, optional): MC-Dropout passes of Table 21. (default: :obj:`30`)
        table20_passes (int, optional): MC-Dropout passes of Table 20 (the
            first of the :obj:`mc_passes`). (default: :obj:`10`)
        num_bins (int, optional): IHW bins of Table 19. (default: :obj:`5`)
        model_overrides (dict, optional): Constructor overrides of every
            model (to shrink the smoke profile). (default: :obj:`{}`)
    """
    training: Profile
    num_members: int = 5
    mc_passes: int = 30
    table20_passes: int = 10
    num_bins: int = 5
    model_overrides: dict[str, Any] = field(default_factory=dict)


PROFILES = {
    "smoke": StudyProfile(dataclasses.replace(SMOKE, num_test=20), num_members=2,
                          mc_passes=3, table20_passes=2,
                          model_overrides={"channels": 16, "heads": 2, "ff_channels": 32,
                                           "num_induced_points": 4}),
    # One thread of a 2-core CPU, about 25 minutes for the 6 models.
    "quick": StudyProfile(dataclasses.replace(QUICK, num_train=1000, num_val=250,
                                              num_test=1000, max_epochs=12, patience=4)),
    # The paper: Task B's 5K/1K split, a 2K test split (5 bins x 400), 3 seeds.
    "full": StudyProfile(full(seeds=(0, 1, 2), num_test=2000)),
}


def study_dir(out: str) -> str:
    r"""Folder of the study: :obj:`{out}/uncertainty`."""
    return osp.join(out, "uncertainty")


def training_runs(profile: StudyProfile, out: str, seed: int,
                  root: str | None = None) -> dict[str, list[TrainingRun]]:
    r"""The trainings of one seed per registry model (MZ: one; Standard:
    the Deep-Ensemble members, the first also the MC-Dropout base), with
    checkpoints :obj:`{out}/uncertainty/ckpt/{name}_s{seed}_m{member}.pt`."""
    members = {"mz-full": 1, "standard": profile.num_members}
    return {name: [TrainingRun(CellName("uncertainty", f"{name}_s{seed}_m{member}"), out, name,
                               TASK, profile.training, data_seed=seed,
                               init_seed=seed + 1000 * member,
                               overrides=profile.model_overrides,
                               options=RunOptions(accelerator="cpu", data_root=root))
                   for member in range(count)]
            for name, count in members.items()}


def _predict_split(paths: dict[str, list], profile: StudyProfile, split: int,
                   root: str | None) -> dict[str, Predictions]:
    mz, info = load_checkpoint(paths["mz-full"][0])
    members = [load_checkpoint(path)[0] for path in paths["standard"]]
    data = info.datamodule(batch_size=profile.training.batch_size, root=root)
    loader = (data.train_dataloader, data.val_dataloader, data.test_dataloader)[split]
    scale = {"target_mean": info.target_mean, "target_std": info.target_std}
    torch.manual_seed(0)  # the MC-Dropout masks
    return {MZ: predict([mz], loader(), **scale),
            MC: predict(members[:1], loader(), passes=profile.mc_passes, **scale),
            ENSEMBLE: predict(members, loader(), **scale)}


def _score(method: str, predictions: Predictions):
    return scalar_ihw(predictions.ihw) if method == MZ else predictions.spread


def method_record(method: str, val: Predictions, test: Predictions) -> dict[str, Any]:
    r"""The Table 20-21 record of one method: its std map fitted on
    :obj:`val`, the scores on :obj:`test` (calibrated; baselines also with
    their raw spread; and a constant std, the validation RMSE, as the
    reference an informative uncertainty must beat), the reliability
    curves and the inference time."""
    residual = val.target - val.mean
    std_map = StdMap.fit(_score(method, val), residual)
    score = _score(method, test)
    std = std_map(score).unsqueeze(-1).expand_as(test.mean)
    constant = residual.pow(2).mean().sqrt().expand_as(test.mean)
    record = {"passes": test.samples.size(0) if method == MC else 1,
              "models": test.samples.size(0) if method == ENSEMBLE else 1,
              "seconds": test.seconds, "std_map": std_map.to_dict(),
              "calibrated": uncertainty_scores(test.mean, std, score, test.target),
              "constant": uncertainty_scores(test.mean, constant, score, test.target),
              "reliability": reliability_curve(test.mean, std, test.target).tolist()}
    if method != MZ:  # the method's own predictive std, no fitted map
        raw = score.unsqueeze(-1).expand_as(test.mean)
        record["raw"] = uncertainty_scores(test.mean, raw, score, test.target)
        record["raw_reliability"] = reliability_curve(test.mean, raw, test.target).tolist()
    return record


def analyse(val: dict[str, Predictions], test: dict[str, Predictions],
            profile: StudyProfile) -> dict[str, Any]:
    r"""Every number of Tables 19-21 from the predictions of the three
    methods on the validation and test splits."""
    methods = {method: method_record(method, val[method], test[method]) for method in METHODS}
    table20_mc = test[MC].head(profile.table20_passes)
    methods["MC-Dropout (Table 20)"] = {
        "passes": profile.table20_passes, "models": 1, "seconds": table20_mc.seconds,
        "raw": uncertainty_scores(table20_mc.mean, table20_mc.spread.unsqueeze(-1),
                                  table20_mc.spread, table20_mc.target)}
    mz = test[MZ]
    ihw = scalar_ihw(mz.ihw)
    error = (mz.mean - mz.target).abs().mean(-1)
    return {"methods": methods, "ihw_bins": error_bins(ihw, error, profile.num_bins),
            "ihw_spearman": {"prediction": correlations(ihw, mz.mean.mean(-1))["spearman"],
                             "target": correlations(ihw, mz.target.mean(-1))["spearman"]},
            "num_test": int(mz.target.size(0))}


def finished_seed(profile_name: str, seed: int, out: str) -> dict[str, Any] | None:
    r"""The record :obj:`{out}/uncertainty/seed{seed}.json` of
    :obj:`profile_name`, or :obj:`None` if there is none."""
    path = osp.join(study_dir(out), f"seed{seed}.json")
    if not osp.exists(path):
        return None
    with open(path) as f:
        record = json.load(f)
    return record if record.get("profile") == profile_name else None


def run_seed(profile_name: str, seed: int, out: str, root: str | None = None) -> dict[str, Any]:
    r"""Analyses the trained models of one seed (:func:`run_study` trains
    them) and writes :obj:`{out}/uncertainty/seed{seed}.json`; a finished
    record of the same profile is returned as is."""
    record = finished_seed(profile_name, seed, out)
    if record is not None:
        return record
    profile = PROFILES[profile_name]
    paths = {name: [run.path for run in group]
             for name, group in training_runs(profile, out, seed, root).items()}
    val = _predict_split(paths, profile, 1, root)
    test = _predict_split(paths, profile, 2, root)
    trained = [load_checkpoint(p)[1].training for ps in paths.values() for p in ps]
    record = {"profile": profile_name, "seed": seed, "task": TASK,
              "training": dataclasses.asdict(profile.training),
              "training_wall_time_s": sum(t.get("wall_time_s", 0.0) for t in trained),
              "epochs": [t.get("epochs") for t in trained],
              **analyse(val, test, profile), **environment_record()}
    write_json_atomic(record, osp.join(study_dir(out), f"seed{seed}.json"))
    return record


def run_study(profile_name: str, out: str, seeds: list[int] | None = None,
              root: str | None = None,
              launch_options: LaunchOptions | None = None) -> list[dict[str, Any]]:
    r"""Trains the models of every unfinished seed (the profile's by
    default) together, as :obj:`launch_options` says
    (:func:`~.training.train_all`; default: one after another here), then
    runs :func:`run_seed` for every seed."""
    if profile_name not in PROFILES:
        raise ValueError(f"'profile' must be one of {sorted(PROFILES)} (got {profile_name!r})")
    profile = PROFILES[profile_name]
    seeds = list(profile.training.seeds) if seeds is None else seeds
    train_all([run for seed in seeds if finished_seed(profile_name, seed, out) is None
               for group in training_runs(profile, out, seed, root).values() for run in group],
              launch_options)
    return [run_seed(profile_name, seed, out, root) for seed in seeds]
