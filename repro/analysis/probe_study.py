r"""Figures 3-4 (App. D.1): train MZ models with generator budgets
:math:`L` on the quadratic-TDOF target of known TDOF, probe the first MZ
attention layer of each on test contexts, and draw the panels.

Outputs in :obj:`{out}/figure3/`: :obj:`probe.json` (every number),
:obj:`figure3.png`, :obj:`figure4.png` and :obj:`report.md`.
"""
import dataclasses
import os.path as osp
from dataclasses import dataclass, field
from typing import Any

from mzattn.repro.core.spec import QUICK, SMOKE, Profile, full
from mzattn.repro.engine.launch import LaunchOptions
from mzattn.repro.engine.runs import CellName
from mzattn.repro.training.cells import RunOptions, write_json_atomic

from .checkpoint import load_checkpoint
from .output import markdown_table, write_text
from .plots import figure3, figure4
from .probing import context_gates, mz_attention_layers, probe
from .training import TrainingRun, train_all

TASK = "quadratic_tdof"


@dataclass(frozen=True)
class ProbeProfile:
    r"""Sizes of the probing study.

    Args:
        training (Profile): Data sizes and training budget per model.
        budgets (tuple[int, ...]): Generator budgets :math:`L` swept.
        probed (int): The budget whose model gives Figure 3 and the
            basis panels of Figure 4.
        tdof (int): TDOF of the target (its :obj:`L`).
        rank_contexts (int, optional): Contexts whose operators give the
            effective rank. (default: :obj:`200`)
        model_overrides (dict, optional): Constructor overrides.
            (default: :obj:`{}`)
    """
    training: Profile
    budgets: tuple[int, ...]
    probed: int
    tdof: int
    rank_contexts: int = 200
    model_overrides: dict[str, Any] = field(default_factory=dict)


PROFILES = {
    "smoke": ProbeProfile(SMOKE, budgets=(2, 4), probed=4, tdof=4, rank_contexts=16,
                          model_overrides={"channels": 16, "heads": 2, "ff_channels": 32,
                                           "num_induced_points": 4}),
    "quick": ProbeProfile(dataclasses.replace(QUICK, num_test=1000), budgets=(2, 4, 8, 16),
                          probed=8, tdof=8),
    "full": ProbeProfile(full(seeds=(0,), num_test=1000), budgets=(4, 8, 16, 32), probed=8,
                         tdof=8),
}


def probe_checkpoint(path: str, layer: int = 0, pair: tuple[int, int] = (0, 1),
                     head: int = 0, rank_contexts: int | None = None, batch_size: int = 128,
                     root: str | None = None) -> dict[str, Any]:
    r"""Probes MZ attention layer number :obj:`layer` of a checkpoint on
    every test set of its dataset (:func:`~.probing.probe`; the effective
    rank on the first :obj:`rank_contexts`)."""
    model, info = load_checkpoint(path)
    layers = mz_attention_layers(model)
    if not 0 <= layer < len(layers):
        raise ValueError(f"'layer' must be in [0, {len(layers)}) (got {layer})")
    name, module = layers[layer]
    loader = info.datamodule(batch_size=batch_size, root=root).test_dataloader()
    gates = context_gates(model, module, loader)
    return {"layer": name, "model": info.model, "task": info.task,
            **probe(module, gates, pair, head, rank_contexts)}


def training_runs(profile: ProbeProfile, out: str,
                  root: str | None = None) -> list[TrainingRun]:
    r"""One training per generator budget, with checkpoints
    :obj:`{out}/figure3/ckpt/mz-full_L{budget}.pt`."""
    return [TrainingRun(CellName("figure3", f"mz-full_L{budget}"), out, "mz-full", TASK,
                        profile.training,
                        overrides={**profile.model_overrides, "num_matrix_generators": budget},
                        task_overrides={"L": profile.tdof},
                        options=RunOptions(accelerator="cpu", data_root=root))
            for budget in profile.budgets]


def run_probe_study(profile_name: str, out: str, root: str | None = None,
                    launch_options: LaunchOptions | None = None) -> str:
    r"""Trains (or reuses) one model per budget, as :obj:`launch_options`
    says (:func:`~.training.train_all`; default: one after another here),
    probes them, writes the figures, :obj:`probe.json` and
    :obj:`report.md`; returns the report path."""
    profile = PROFILES[profile_name]
    folder = osp.join(out, "figure3")
    runs = training_runs(profile, out, root)
    train_all(runs, launch_options)
    ranks = []
    probed = None
    for budget, run in zip(profile.budgets, runs, strict=True):
        result = probe_checkpoint(run.path, rank_contexts=profile.rank_contexts, root=root)
        ranks.append((budget, result["soft_effective_rank"]))
        if budget == profile.probed:
            probed = result
    record = {"profile": profile_name, "tdof": profile.tdof, "probe": probed,
              "effective_rank": ranks}
    write_json_atomic(record, osp.join(folder, "probe.json"))
    figure3(probed, osp.join(folder, "figure3.png"))
    figure4(probed, ranks, osp.join(folder, "figure4.png"), tdof=profile.tdof)
    return write_text(_report(record), osp.join(folder, "report.md"))


def _report(record: dict[str, Any]) -> str:
    p = record["probe"]
    head = p["head"]
    lines = [f"# Figures 3-4: generator probing ({record['profile']} profile)", "",
             f"Model `{p['model']}` trained on `{p['task']}` (TDOF {record['tdof']}), layer "
             f"`{p['layer']}`, head {head}, {p['num_contexts']} test contexts.", "",
             "| Probe | Ours | Paper |", "| --- | --- | --- |",
             f"| relative operator change ||M(mu_A) - M(mu_B)||_F / ||M_c||_F | "
             f"{100 * p['relative_change'][head]:.2f}% | 8.0% |",
             f"| gate sign flips between the two contexts | {p['sign_flips'][head]} of "
             f"{p['num_matrix_generators']} | 5 of 8 |",
             f"| gate activity (|gamma| >= 0.1) | {100 * p['gate_activity']:.1f}% | 78.6% |",
             f"| soft effective rank of the probed model (head {head}) | "
             f"{p['soft_effective_rank']:.2f} | — |", "",
             "## Soft effective rank against the generator budget", ""]
    lines += markdown_table(["L", "soft effective rank"],
                            [[str(L), f"{r:.2f}"] for L, r in record["effective_rank"]])
    lines += ["", "![Figure 3](figure3.png)", "", "![Figure 4](figure4.png)"]
    return "\n".join(lines) + "\n"

