r"""mzattn.repro.analysis: uncertainty and analysis of trained checkpoints
(Sec. 3.3, 5.3-5.4, App. D.1-D.3 of "Matrix Zonotopic Attention").

* IHW uncertainty (:mod:`.calibration`, :mod:`.predict`, :mod:`.study`,
  :mod:`.ihw_report`): per-sample IHW, binned errors (Table 19),
  Spearman / Pearson with the error (Table 20), ECE and Gaussian NLL with a
  validation-fitted IHW-to-std map against MC-Dropout and a Deep Ensemble
  (Table 21), reliability diagrams.
* Generator probing (:mod:`.probing`, :mod:`.probe_study`): operators
  :math:`M(\mu)`, relative change, gate sign flips and activity, generator
  cosines and norms, soft effective rank (Figures 3-4).
* TDOF (:mod:`.tdof`, :mod:`.tdof_tables`): per-task TDOF assignments,
  the Spearman of Figure 2 (right) and its perturbation robustness
  (Table 14).
* Readings (:mod:`.readings`, :obj:`mzattn-repro readings`): which reading
  of an under-specified task the paper's own numbers fix, without training.

Command line: :obj:`mzattn-repro analysis ...` (:func:`cli`).
"""
from .calibration import (
    StdMap,
    absolute_error,
    correlations,
    error_bins,
    gaussian_nll,
    regression_ece,
)
from .checkpoint import CheckpointInfo, load_checkpoint, save_checkpoint, train_checkpoint
from .commands import cli
from .predict import Predictions, predict, scalar_ihw
from .probing import (
    context_gates,
    gate_activity,
    generator_cosines,
    generator_norms,
    mz_attention_layers,
    operators,
    probe,
    relative_change,
    sign_flips,
    soft_effective_rank,
)
from .tdof import SETTINGS, mse_reduction, perturbation_robustness, spearman

__all__ = [
    "StdMap", "absolute_error", "correlations", "error_bins", "gaussian_nll",
    "regression_ece", "CheckpointInfo", "load_checkpoint", "save_checkpoint",
    "train_checkpoint", "Predictions", "predict", "scalar_ihw", "context_gates",
    "gate_activity", "generator_cosines", "generator_norms", "mz_attention_layers",
    "operators", "probe", "relative_change", "sign_flips", "soft_effective_rank",
    "SETTINGS", "mse_reduction", "perturbation_robustness", "spearman", "cli",
]
