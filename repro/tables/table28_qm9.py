r"""Table 28 (Task H, App. D.5.2): QM9 molecular property prediction on all 12
targets ($R^2$), one model per target.

Molecules are sets of atoms with 9 features (one-hot H/C/N/O/F, xyz in Å,
Gasteiger charge), built with RDKit from the PyPI package ``qm9pack``
(:class:`mzattn.datasets.QM9`). The processed cache is found in
:obj:`$MZATTN_QM9_ROOT`, else :obj:`$MZATTN_DATA/qm9`, else
:obj:`~/.cache/mzattn/qm9` (:func:`mzattn.repro.training.real_data.dataset_root`);
the first run processes all of QM9 there (minutes, once).

.. code-block:: bash

    python repro/tables/table28_qm9.py --profile quick
"""
import dataclasses

from mzattn.datasets.qm9 import QM9_TARGETS
from mzattn.repro.core.spec import QUICK, SMOKE, Claim, Column, Row, TableSpec, Verdict, full
from mzattn.repro.engine.runner import main as run_main
from mzattn.repro.report.claims import NOT_RUN, compare, verdict

ROWS = (
    Row("Deep Sets", "deep-sets"),
    Row("Slot Attention", "slot-attention"),
    Row("Set Transf.", "standard"),
    Row("ST-Large", "st-large"),
    Row("ST-XLarge", "st-xlarge"),
    Row("Perceiver", "perceiver"),
    Row("HyperNet", "hypernet-r8"),
    Row("MZAttn", "mz-full"),
    Row("MZAttn-Large", "mz-large"),
)
#: Column labels of the paper (``paper_table('table28')``) in QM9_TARGETS order.
LABELS = ("mu", "alpha", "HOMO", "LUMO", "Gap", "R2", "ZPVE", "U0", "U298", "H298", "G298",
          "Cv")
COLUMNS = tuple(Column(label, "qm9", {"targets": target.name}, normalize=True)
                for label, target in zip(LABELS, QM9_TARGETS, strict=True))
MATCHED = ("ST-Large", "Perceiver", "HyperNet")
ATTENTION = ("Set Transf.", "ST-Large", "Perceiver", "HyperNet", "MZAttn")

PROFILES = {
    # The first 200 molecules of qm9pack, processed in about a second.
    "smoke": dataclasses.replace(SMOKE, rows=("Deep Sets", "Set Transf.", "MZAttn"),
                                 columns=("mu",), data={"num_molecules": 200}),
    # One core of a 2-core CPU: 2K/250/500 molecules, at most 10 epochs, the
    # hard dipole moment, the easy polarisability and the HOMO-LUMO gap.
    "quick": dataclasses.replace(QUICK, num_train=2000, num_val=250, num_test=500,
                                 max_epochs=10, patience=4, batch_size=32, warmup_epochs=1,
                                 rows=("Deep Sets", "Set Transf.", "ST-Large", "MZAttn"),
                                 columns=("mu", "alpha", "Gap")),
    # App. D.5.2: 50K molecules split 80/10/10, 100 epochs, 3 seeds.
    "full": full(seeds=(0, 1, 2), max_epochs=100),
}


def _all(conditions: list, what: str):
    return verdict(*conditions) if conditions else Verdict(NOT_RUN, f"{what} not run")


def _within_best_matched(results, margin: float = 0.05):
    conditions = []
    for label in LABELS:
        ran = [row for row in MATCHED if results.mean(row, label) is not None]
        if ran and results.mean("MZAttn", label) is not None:
            best = max(ran, key=lambda row: results.mean(row, label))
            conditions.append(compare(results, ("MZAttn", label), ">=", (best, label),
                                      offset=-margin))
    return _all(conditions, "MZAttn and a parameter-matched baseline on one target")


def _deep_sets_lags(results, margin: float = 0.2):
    return _all([compare(results, ("Deep Sets", "mu"), "<=", (row, "mu"), offset=-margin)
                 for row in ATTENTION if results.mean(row, "mu") is not None],
                "an attention model on mu")


CLAIMS = (
    Claim("MZAttn matches the best parameter-matched attention baseline (ST-Large, Perceiver, "
          "HyperNet) within 0.05 R² on every target (we test the targets run)",
          _within_best_matched),
    Claim("MZAttn-Large tops ST-Large on HOMO and LUMO, but the parameter-matched ST-XLarge "
          "closes the gap on both",
          lambda r: verdict(*(condition for label in ("HOMO", "LUMO") for condition in (
              compare(r, ("MZAttn-Large", label), ">", ("ST-Large", label)),
              compare(r, ("ST-XLarge", label), ">=", ("MZAttn-Large", label)))))),
    Claim("Deep Sets lags every attention-based model on the dipole moment μ by >= 0.20 R² "
          "(we test the attention models run)", _deep_sets_lags),
)

SPEC = TableSpec(
    key="table28",
    title="QM9 molecular property prediction, all 12 targets (R², one model per target)",
    rows=ROWS, columns=COLUMNS, profiles=PROFILES, paper="table28", claims=CLAIMS,
    notes="Source: qm9pack's QM9 (130,831 molecules; RDKit bonds from the XYZ geometry, "
          "Gasteiger charges), not the paper's gdb9.sdf (both readers exist in "
          "mzattn.datasets.QM9). Targets in QM9's units, standardised with the training "
          "statistics for training; R² on the original scale. The molecule subset and split "
          "are fixed (seed 0) and the seeds vary the training only. The paper leaves most "
          "Deep Sets, Slot Attention and ST-XLarge cells empty; the full profile runs them "
          "anyway. Quick profile: 2K/250/500 molecules, targets μ, α and the gap, Deep "
          "Sets, Set Transformer, ST-Large and MZAttn, batch 32, peak lr 5e-4 with a 1-epoch "
          "warm-up, at most 10 epochs (patience 4), one seed: far from convergence; "
          "the paper: 40K/5K/5K, 100 epochs, 3 seeds.",
)

if __name__ == "__main__":
    raise SystemExit(run_main(SPEC))
