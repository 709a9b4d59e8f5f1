from mzattn.repro.core.evidence import column_reading
from mzattn.repro.report.claims import NOT_REPRODUCED, NOT_RUN, PARTLY_RUN, REPRODUCED
from mzattn.repro.report.results import Results
from mzattn.repro.tables.table01_depth_separation import D64, SPEC, UNDER_D64


def _results(values: dict[tuple[str, str], float]) -> Results:
    # one full-profile seed per (row, column): its R², and the residual MSE 1 - R²
    records = [{"status": "ok", "profile": "full", "metrics": {"r2": r2, "mse": 1.0 - r2},
                "config": {"row": row, "column": column, "seed": 0}, "params": 1}
               for (row, column), r2 in values.items()]
    return Results(SPEC, records)


def _checks(results: Results) -> dict[str, str]:
    return {claim.text: claim.check(results).status for claim in SPEC.claims}


def test_the_d64_claims_read_the_d64_columns_alone():
    # ST-4L flat at d = 32 and dropping at d = 64; MZAttn-1L at 0.99 everywhere
    d32 = {("ST-4L", f"L={L}"): 0.96 for L in (4, 8, 16, 24, 32)} | \
        {("MZAttn-1L", f"L={L}"): 0.99 for L in (4, 8, 16, 24, 32)}
    d64 = {("ST-4L", "L=4, d=64"): 0.9, ("ST-4L", "L=16, d=64"): 0.5,
           ("ST-4L", "L=32, d=64"): 0.4} | {("MZAttn-1L", column): 0.99 for column in D64}
    checks = _checks(_results(d32 | d64))
    degrades = [text for text in checks if "degrades with L" in text]
    assert [checks[text] for text in degrades] == [NOT_REPRODUCED, REPRODUCED]
    assert degrades[1].startswith(UNDER_D64)
    assert checks[UNDER_D64 + "a single MZAttn layer holds R² >= 0.90"] == REPRODUCED
    # the MSE gap at d = 64: 0.1 / 0.01 = 10 at L = 4, 50 and 60 at L = 16 and 32
    assert checks[UNDER_D64 + "MSE(ST-4L) / MSE(MZAttn-1L) >= 6"] == REPRODUCED
    partial = _checks(_results(d32 | {k: v for k, v in d64.items() if "L=4," not in k[1]}))
    assert partial[degrades[1]] == NOT_RUN  # the drop needs L = 4 at d = 64
    assert partial[UNDER_D64 + "a single MZAttn layer holds R² >= 0.90"] == PARTLY_RUN
    assert _checks(_results(d32))[degrades[0]] == NOT_REPRODUCED  # d = 32 as before


def test_the_d64_columns_run_a_reading_that_decides_table1():
    columns = {column.label: column for column in SPEC.columns}
    assert [column_reading(columns[label], "table1") for label in D64] == ["", "", ""]
