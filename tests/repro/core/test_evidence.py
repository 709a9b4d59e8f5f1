import json
from dataclasses import replace

import pytest
from mzattn.repro.analysis.readings import assess_group, evidence_of
from mzattn.repro.core.evidence import (
    EVIDENCE,
    CheckEvidence,
    GroupEvidence,
    column_reading,
    load_evidence,
    save_evidence,
)
from mzattn.repro.core.readings import load_readings
from mzattn.repro.tables.table02_main import SPEC as TABLE2
from mzattn.repro.tables.table06_parameter_efficiency import SPEC as TABLE6
from mzattn.repro.tables.table29_slot_attention import SPEC as TABLE29


def _check(table: str, **passes: bool) -> CheckEvidence:
    return CheckEvidence(f"set-size-r2 · {table}", table, "≤ weakest 0.5 + 0.05",
                         values=dict.fromkeys(passes, 0.1), passes=passes)


def test_implied_readings_pass_the_most_checks_and_every_check_of_the_table():
    group = GroupEvidence("g", ("a", "b", "c"), (
        _check("table6", a=True, b=True, c=False),
        _check("table25", a=False, b=True, c=False),
        _check("table25", a=False, b=False, c=True),
        _check("table29", a=True, b=True, c=True)))
    assert group.favoured() == ("b",)  # 3 of 4
    assert group.implied("table6") == ("b",) and group.implied("table2") == ("b",)
    assert group.implied("table25") == ()  # b fails one of table25's checks
    assert [c.table for c in group.failed("a")] == ["table25", "table25"]
    tied = GroupEvidence("g", ("a", "b"), (_check("table1", a=True, b=True),))
    assert tied.implied("table1") == ("a", "b")
    none = GroupEvidence("g", ("a",), (_check("table1", a=False),))
    assert none.favoured() == () and none.implied("table1") == ()


def test_columns_decide_only_under_the_reading_the_papers_numbers_imply():
    # the committed evidence (`mzattn-repro readings --write`), as the reports read it
    assert column_reading(TABLE29.column("Max [per-dim-sum]"), "table29") == ""
    reason = column_reading(TABLE29.column("Max"), "table29")
    assert reason.startswith("max read as entries (max over all n·d entries")
    assert "the paper's numbers imply per-dim-sum" in reason
    assert "it fails set-size-r2 · table25 Max d=64, n=200-500: 0.0398" in reason
    assert column_reading(TABLE29.column("Sum"), "table29") == ""  # entries is consistent
    assert "no reading of it passes any check" in column_reading(TABLE29.column("Median"),
                                                                 "table29")
    assert column_reading(TABLE2.column("F [unaligned-sum]"), "table2") == ""
    assert "imply unaligned-sum" in column_reading(TABLE2.column("F"), "table2")
    assert column_reading(TABLE2.column("G"), "table2") == ""  # the mixture: 4 of 4 checks
    assert column_reading(TABLE2.column("D"), "table2") == ""  # no reading: the paper's task
    assert column_reading(TABLE6.column("RotMatch [unaligned-sum]"), "table6") == ""


def _same(fresh: GroupEvidence, stored: GroupEvidence) -> bool:
    # the statistics to 1e-9 (they come from BLAS, whose rounding differs from one CPU's
    # instruction set to another's: 1e-14 between AVX2 and AVX-512), all else exactly
    values = [check.values for check in fresh.checks]
    return values == [pytest.approx(check.values, rel=1e-9, abs=1e-12)
                      for check in stored.checks] and fresh == GroupEvidence(
        stored.group, stored.readings,
        tuple(replace(old, values=new) for old, new in zip(stored.checks, values,
                                                             strict=True)))


def test_the_committed_evidence_is_what_the_analysis_computes():
    # one group in full (the cheap one); `test_every_group_is_recomputed` does them all (slow)
    stored = json.load(open(EVIDENCE, encoding="utf-8"))
    spec = load_readings()
    assert list(stored["groups"]) == list(spec.groups)
    fresh = evidence_of("sum", assess_group(spec, "sum", stored["sets"], stored["seed"]))
    assert _same(fresh, load_evidence()["sum"])


@pytest.mark.slow
def test_every_group_is_recomputed():
    stored, spec = json.load(open(EVIDENCE, encoding="utf-8")), load_readings()
    evidence = load_evidence()
    for group in spec.groups:
        fresh = evidence_of(group, assess_group(spec, group, stored["sets"], stored["seed"]))
        assert _same(fresh, evidence[group]), group


def test_stale_or_broken_evidence_names_the_file_and_the_command(tmp_path):
    data = tmp_path / "readings.toml"
    data.write_text("# v1\n")
    path = str(tmp_path / "evidence.json")
    group = GroupEvidence("g", ("a",), (_check("table1", a=True),))
    save_evidence([group], sets=20, seed=0, path=path, data=str(data))
    assert load_evidence(path, str(data)) == {"g": group}
    data.write_text("# v2\n")
    with pytest.raises(ValueError, match=r"evidence.json: computed from another version .*"
                                         r"mzattn-repro readings --write"):
        load_evidence(path, str(data))
    (tmp_path / "evidence.json").write_text("{")
    with pytest.raises(ValueError, match="evidence.json: no readable evidence"):
        load_evidence(path, str(data))
    with pytest.raises(ValueError, match="no readable evidence"):
        load_evidence(str(tmp_path / "missing.json"), str(data))
