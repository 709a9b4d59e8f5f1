r"""Seeds together in the harness (issue 34, item 6): one cell's :math:`K`
seeds trained by :obj:`mzattn-repro TABLE --seeds-together` (one stacked
group, :mod:`mzattn.repro.training.together`) against the same seeds
trained one after another (the default), both through
:func:`~mzattn.repro.engine.runner.run_table` in this process.

.. code-block:: text

    python -m mzattn.bench.seed_groups [--table table3] [--model standard]
                                       [--column d=8] [--seeds 0,1,2]
                                       [--profile quick] [--epochs 5]
                                       [--repeats 2] [--device cpu]
                                       [--out bench/results/seed_groups.json]

Each run trains every seed into a fresh results folder, test and records
included: the whole of what a table run does for the cell. The seeds' data
are generated before the clock starts. :obj:`--epochs` replaces the
profile's epoch cap (early stopping stays on). The two modes are timed
interleaved (:func:`~.measure.time_interleaved`, one warm-up each); the
JSON holds each mode's median seconds, the ratio sequential / together
(above 1: together is faster), the records' largest relative difference
in the test metrics, and the load average before and after.
"""
import argparse
import dataclasses
import json
import os
import tempfile

import torch

from .measure import environment, time_interleaved
from .report import write_text_atomic


def _spec(table: str, profile: str, epochs: int | None):
    from mzattn.repro.core.registry import load_spec
    spec = load_spec(table)
    if epochs is None:
        return spec
    capped = dataclasses.replace(spec.profile(profile), max_epochs=epochs)
    return dataclasses.replace(spec, profiles={**spec.profiles, profile: capped})


def measure(table: str, model: str, column: str, seeds: list[int], profile: str,
            epochs: int | None, repeats: int, device: str) -> dict:
    r"""Times both modes and returns the JSON's content."""
    from mzattn.repro.engine.runner import grid, run_table
    from mzattn.repro.training.cells import RunOptions, cell_data, column_profile
    spec = _spec(table, profile, epochs)
    root = tempfile.mkdtemp(prefix="seed-groups-")
    base = RunOptions(accelerator=device, progress=False, data_root=os.path.join(root, "data"))
    for cell in grid(spec, profile, [model], [column], seeds):  # untimed: the data
        cell_data(cell, column_profile(spec.profile(profile), cell.column), base).setup()
    last: dict[str, list[dict]] = {}

    def mode(name: str, together: bool):
        def run() -> None:
            out = tempfile.mkdtemp(dir=root)
            options = dataclasses.replace(base, seeds_together=together)
            last[name] = run_table(spec, profile, [model], [column], seeds, out, options)
        return run
    load = os.getloadavg()
    timings = time_interleaved({"sequential": mode("sequential", False),
                                "together": mode("together", True)},
                               torch.device(device), repeats=repeats, warmup=1)
    diffs = [abs(g["metrics"][k] - s["metrics"][k]) / max(abs(s["metrics"][k]), 1e-12)
             for s, g in zip(last["sequential"], last["together"], strict=True)
             for k in s["metrics"]]
    return {"table": table, "model": model, "column": column, "seeds": seeds,
            "profile": profile, "epochs": epochs, "repeats": repeats,
            "seconds": {name: dataclasses.asdict(t) for name, t in timings.items()},
            "together_speed": timings["sequential"].median / timings["together"].median,
            "max_metric_rel_diff": max(diffs),
            "epochs_run": [r["epochs"] for r in last["together"]],
            "load_before": load, "load_after": os.getloadavg(),
            "environment": environment(torch.device(device))}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m mzattn.bench.seed_groups",
                                     description=__doc__.split("\n\n")[0])
    parser.add_argument("--table", default="table3")
    parser.add_argument("--model", default="standard")
    parser.add_argument("--column", default="d=8")
    parser.add_argument("--seeds", default="0,1,2")
    parser.add_argument("--profile", default="quick")
    parser.add_argument("--epochs", type=int, default=5)
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--out", default="bench/results/seed_groups.json")
    args = parser.parse_args(argv)
    from mzattn.repro.core.quiet import quiet_libraries
    quiet_libraries(False)
    result = measure(args.table, args.model, args.column,
                     [int(s) for s in args.seeds.split(",")], args.profile, args.epochs,
                     args.repeats, args.device)
    write_text_atomic(args.out, json.dumps(result, indent=2) + "\n")
    print(json.dumps({k: result[k] for k in ("seconds", "together_speed",
                                             "max_metric_rel_diff")}, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
