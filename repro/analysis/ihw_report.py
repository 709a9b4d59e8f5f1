r"""IHW uncertainty of any trained MZ checkpoint on its own dataset: the
per-sample IHW and error (CSV), the IHW bins, the Spearman / Pearson
correlation with the error, and the ECE and Gaussian NLL of the predictive
std mapped from the IHW (map fitted on the validation split), with a
reliability diagram."""
import os
import os.path as osp
from typing import Any

import numpy as np
from mzattn.repro.training.cells import write_json_atomic

from .calibration import error_bins
from .checkpoint import load_checkpoint
from .plots import reliability_plot
from .predict import predict, scalar_ihw
from .study import MZ, method_record


def ihw_analysis(checkpoint: str, out: str, num_bins: int = 5,
                 root: str | None = None) -> dict[str, Any]:
    r"""Writes :obj:`{out}/ihw_test.csv`, :obj:`{out}/ihw_summary.json` and
    :obj:`{out}/reliability.png` for an MZ :obj:`checkpoint`; returns the
    summary."""
    model, info = load_checkpoint(checkpoint)
    data = info.datamodule(root=root)
    scale = {"target_mean": info.target_mean, "target_std": info.target_std}
    val = predict([model], data.val_dataloader(), **scale)
    test = predict([model], data.test_dataloader(), **scale)
    if test.ihw is None:
        raise ValueError(f"'checkpoint' holds {info.model!r}, which returns no IHW")
    ihw = scalar_ihw(test.ihw)
    error = (test.mean - test.target).abs().mean(-1)
    record = method_record(MZ, val, test)
    summary = {"checkpoint": checkpoint, "model": info.model, "task": info.task,
               "test": {**record["calibrated"], "std_map": record["std_map"],
                        "seconds": record["seconds"],
                        "bins": error_bins(ihw, error, num_bins)}}
    table = np.column_stack([np.arange(ihw.numel()), ihw.numpy(), error.numpy(),
                             test.mean.numpy(), test.target.numpy()])
    header = "index,ihw,abs_error," + ",".join(
        [f"pred_{t}" for t in range(test.mean.size(1))]
        + [f"target_{t}" for t in range(test.target.size(1))])
    os.makedirs(out, exist_ok=True)
    np.savetxt(osp.join(out, "ihw_test.csv"), table, delimiter=",", header=header,
               comments="", fmt="%.6g")
    write_json_atomic(summary, osp.join(out, "ihw_summary.json"))
    reliability_plot({"IHW (val-fitted std map)": record["reliability"]},
                     osp.join(out, "reliability.png"), f"{info.model} on {info.task}")
    return summary

