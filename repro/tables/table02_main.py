r"""Table 2: main results on the synthetic Tasks A, B, D, F and G ($R^2$ and
MSE) and point-cloud classification on ModelNet40 (Task C) and ScanObjectNN
OBJ_BG (Task E, accuracy). Task H (QM9) is Table 28.

Columns C and E read the downloaded datasets (App. A.2: 1,024 points, random
y-axis rotation and jitter on the training sets; see
:mod:`mzattn.repro.training.real_data`, which names a missing file and its URL). The
smoke and quick profiles leave them out; the full profile runs them, and
``--columns C,E`` selects them in any profile.

.. code-block:: bash

    python repro/tables/table02_main.py --profile quick
    python repro/tables/table02_main.py --profile full --columns C,E --seeds 0,1,2,3,4
"""
import dataclasses

from mzattn.repro.core.readings import find_reading
from mzattn.repro.core.spec import (
    QUICK,
    SMOKE,
    TASK_F_NOTE,
    Claim,
    Column,
    Row,
    TableSpec,
    full,
    reading_variant,
)
from mzattn.repro.engine.runner import main as run_main
from mzattn.repro.report.claims import compare, verdict

MZ = "MZAttn (ours)"
ROWS = (
    Row("Deep Sets", "deep-sets"),
    Row("Set Transformer", "standard"),
    Row("ST + FiLM", "st-film"),
    Row("ST-Large", "st-large"),
    Row("Perceiver", "perceiver"),
    Row("HyperNet", "hypernet-r8"),
    Row(MZ, "mz-full"),
)
COLUMNS = (
    Column("A", "task_a"),
    Column("B", "task_b"),
    Column("C", "modelnet40", loss="cross_entropy", metric="acc"),
    Column("D", "task_d"),
    Column("E", "scanobjectnn", loss="cross_entropy", metric="acc"),
    TASK_F := Column("F", "task_f"),
    Column("G", "task_g"),
)
# Task F again under the reading the paper's own numbers fix (`mzattn-repro readings`; A and G
# keep ours, which they fix too), run by the `readings` campaign, with its own claim below
READINGS = (reading_variant(TASK_F, find_reading("task_f", "unaligned-sum")),)
SYNTHETIC = ("A", "B", "D", "F", "G")
POINT_CLOUDS = ("C", "E")
#: Our column label -> the paper's column of accuracies (the others: "{label} R2").
PAPER_COLUMNS = {"C": "C MN40", "E": "E Scan"}
MATCHED = ("ST-Large", "Perceiver", "HyperNet")

PROFILES = {
    "smoke": dataclasses.replace(SMOKE, columns=SYNTHETIC),
    "quick": dataclasses.replace(QUICK, columns=SYNTHETIC),
    "full": full(seeds=(0, 1, 2), columns=tuple(column.label for column in COLUMNS)),
}


def _best_of_matched(column):
    def check(results):
        return verdict(*(compare(results, (MZ, column), "<", (row, column), "mse")
                         for row in MATCHED))
    return check


def _st_large_leads_point_clouds(results, margin: float = 0.035):
    conditions = []
    for column in POINT_CLOUDS:
        if results.mean("ST-Large", column) is None:
            conditions.append((None, f"ST-Large {column} not run"))
            continue
        others = [row.label for row in ROWS if row.label != "ST-Large" and (
            row.label == MZ or results.mean(row.label, column) is not None)]
        conditions += [compare(results, ("ST-Large", column), ">=", (row, column))
                       for row in others]
        conditions.append(compare(results, (MZ, column), ">=", ("ST-Large", column),
                                  offset=-margin))
    return verdict(*conditions)


CLAIMS = (
    *(Claim(f"MZAttn has the lowest MSE among the parameter-matched attention models on "
            f"Task {task}", _best_of_matched(task)) for task in ("A", "B", "F", "G")),
    *(Claim(f"The same on {column.label}, the reading of Task F that the paper's own numbers "
            "fix (docs/readings.md)", _best_of_matched(column.label)) for column in READINGS),
    # the text's "1-3 pp" is 1.8 and 3.5 pp in the paper's own numbers
    Claim("On point-cloud classification ST-Large is best (79.9% / 72.9%) with MZAttn within "
          "1-3 pp (78.1% / 69.4%) (we test ST-Large >= every model run and MZAttn within 0.035 "
          "accuracy of it on C and E, the paper's own gap)", _st_large_leads_point_clouds),
    Claim("On few-shot retrieval (D) MZAttn exceeds the Set Transformer and ST + FiLM in R²",
          lambda r: verdict(compare(r, (MZ, "D"), ">", ("Set Transformer", "D")),
                            compare(r, (MZ, "D"), ">", ("ST + FiLM", "D")))),
)

SPEC = TableSpec(
    key="table2",
    title="Main results: synthetic Tasks A, B, D, F, G (R², MSE) and point-cloud "
          "classification C, E (accuracy)",
    rows=ROWS, columns=COLUMNS + READINGS, profiles=PROFILES, paper="table2",
    paper_cell=lambda row, column: (row, PAPER_COLUMNS.get(column, f"{column} R2")),
    claims=CLAIMS,
    notes="HyperNet is the rank-8 row. Quick profile: 1K/250/500 sets, batch 32, peak lr "
          "5e-4, at most 15 epochs (patience 5), one seed. Columns C (ModelNet40) and E "
          "(ScanObjectNN OBJ_BG) are classification (cross-entropy, test accuracy as a "
          "fraction; Ours − paper in percentage points) on 1,024 points with y-rotation and "
          "jitter on the training sets; they need the downloaded data and run in the full "
          "profile only (or with --columns C,E); validation is 10% of the training file "
          "(fixed seed). The paper uses 5 seeds on C and E (--seeds 0,1,2,3,4), 3-5 "
          "elsewhere. " + TASK_F_NOTE,
)

if __name__ == "__main__":
    raise SystemExit(run_main(SPEC))
