import numpy as np
import pytest
from mzattn.datasets.synthetic import get_config, load_task
from mzattn.datasets.synthetic.tasks import unit_scaled
from mzattn.repro.analysis.target_statistics import (
    design,
    linear_fit_r2,
    r2_score,
    set_features,
    split_statistics,
)
from mzattn.repro.engine.runner import run_table
from mzattn.repro.report.claims import NOT_REPRODUCED, NOT_RUN, REPRODUCED
from mzattn.repro.report.report import verdicts, write_report
from mzattn.repro.report.results import Results
from mzattn.repro.report.summary import verdict_table
from mzattn.repro.report.verdicts import CONTRADICTED, INCONCLUSIVE, PIPELINE_ONLY
from mzattn.repro.tables.table03_sensitivity import (
    MEAN_POOL,
    MZ,
    PMA_ROWS,
    SPEC,
    finding_sentences,
    matching_variants,
    pattern,
    table3_lines,
)

# ------------------------------------------------------------ the data axis


def test_unit_scaled_sets_are_centred_with_unit_trace():
    P = unit_scaled(3.0 + 2.0 * np.random.default_rng(0).standard_normal((20, 8)))
    assert np.allclose(P.mean(0), 0.0) and np.isclose((P * P).sum(1).mean(), 1.0)
    assert np.allclose(unit_scaled(np.ones((4, 3))), 0.0)  # identical points: only centred


def test_unit_sets_option_and_default_cache_key(data_root):
    assert "unit_sets" not in get_config("meb").cache_fields("train")  # old caches stay valid
    assert get_config("meb", unit_sets=True).cache_fields("train")["unit_sets"] is True
    with pytest.raises(ValueError, match="'unit_sets' must be a bool"):
        get_config("meb", unit_sets=1)
    train = load_task("meb", split="train", root=data_root, log=False, num_train=8,
                      unit_sets=True)
    for data in train:
        x = data.x.double()
        assert torch_close(x.mean(0), 0.0) and abs(float((x * x).sum(1).mean()) - 1.0) < 1e-5


def torch_close(t, value, tol=1e-5):
    return bool((t - value).abs().max() < tol)


# ------------------------------------------------------------ the statistics


def test_set_features_match_a_per_set_computation():
    rng = np.random.default_rng(1)
    sets = [rng.standard_normal((n, 3)) for n in (2, 5, 4)]
    features = set_features(np.concatenate(sets), np.cumsum([0, 2, 5, 4]))
    for i, S in enumerate(sets):
        assert np.allclose(features["mean"][i], S.mean(0))
        assert np.isclose(features["trace"][i, 0], np.trace(np.cov(S.T, bias=True)))
        assert np.isclose(features["sqrt_trace"][i, 0] ** 2, features["trace"][i, 0])
        assert features["n"][i, 0] == len(S)
    assert design(features).shape == (3, 1 + 3 + 3)


def test_linear_fit_r2_is_one_on_a_linear_target_and_zero_on_noise():
    rng = np.random.default_rng(2)
    X = np.c_[np.ones(200), rng.standard_normal((200, 3))]
    y = X @ np.array([1.0, 2.0, -1.0, 0.5])
    assert linear_fit_r2((X[:100], y[:100]), (X[100:], y[100:])) == pytest.approx(1.0)
    noise = rng.standard_normal(200)
    assert linear_fit_r2((X[:100], noise[:100]), (X[100:], noise[100:])) < 0.1
    assert r2_score(y, np.full_like(y, y.mean())) == pytest.approx(0.0)
    assert np.isnan(r2_score(np.ones(3), np.ones(3)))


def test_simple_statistics_explain_the_default_radius_but_not_the_corner(data_root):
    sizes = {"num_train": 300, "num_val": 8, "num_test": 200, "d": 8}
    default = split_statistics("meb", root=data_root, **sizes)
    corner = split_statistics("meb", root=data_root, max_clusters=1, spread_min=1.0,
                              spread_max=1.0, **sizes)
    unit = split_statistics("meb", root=data_root, unit_sets=True, **sizes)
    assert default["fit_r2"] > 0.9 and default["target_std"] > 1.0
    assert corner["fit_r2_moments"] < 0.85 and corner["target_std"] < 0.5
    assert unit["fit_r2_moments"] < 0.5


# -------------------------------------------------------------- the claims


def _results(values, profile="quick"):
    records = [{"status": "ok", "profile": profile,
                "config": {"row": row, "column": column, "seed": 0},
                "metrics": {"r2": r2, "mse": 1.0}, "params": 1}
               for column, rows in values.items() for row, r2 in rows.items()]
    return Results(SPEC, records)


COLLAPSE = {"Standard": 0.01, "ST-Large": 0.02, MEAN_POOL: 0.75, MZ: 0.69}
EASY = {"Standard": 0.93, "ST-Large": 0.95, MEAN_POOL: 0.9, MZ: 0.78}


def test_pattern_names_the_variant_that_reproduces_it():
    results = _results({"default": EASY, "corner": COLLAPSE})
    assert pattern(results, "default").status == NOT_REPRODUCED
    assert pattern(results, "corner").status == REPRODUCED
    assert pattern(results, "unit sets").status == NOT_RUN
    assert matching_variants(results) == ["corner"]
    [(_, published)] = verdicts(SPEC, results)
    assert published.status == INCONCLUSIVE  # a study's check passes or fails, never decides
    assert "reproduced on corner" in published.detail and "the check passes" in published.detail
    assert set(PMA_ROWS) < {row.label for row in SPEC.rows}


def test_a_failed_study_claim_is_never_contradicted():
    everywhere = {column.label: EASY for column in SPEC.columns}
    for profile in ("quick", "full"):
        [(_, published)] = verdicts(SPEC, _results(everywhere, profile))
        assert published.status == INCONCLUSIVE != CONTRADICTED
        assert "no variant run reproduces it" in published.detail
    [(_, partial)] = verdicts(SPEC, _results({"default": EASY}))
    assert partial.status == INCONCLUSIVE and "not run: one cluster" in partial.detail
    [(_, nothing)] = verdicts(SPEC, _results({"default": {"Standard": 0.9}}))
    assert nothing.status == NOT_RUN
    [(_, smoke)] = verdicts(SPEC, _results({"corner": COLLAPSE}, "smoke"))
    assert smoke.status == PIPELINE_ONLY


def test_study_claims_stay_out_of_the_readme_verdict_table():
    row = {"table": "t", "claim": "c", "verdict": "reproduced", "convergence": "",
           "numbers": "", "command": "x"}
    table = verdict_table({"results/quick": [row | {"study": True}]})
    assert table.count("\n") == 1  # the header only
    assert "t: c" in verdict_table({"results/quick": [row | {"study": False}]})


# -------------------------------------------------------------- the report


def test_smoke_run_writes_the_distribution_axis_and_figure(tmp_path, options, monkeypatch):
    monkeypatch.setenv("MZATTN_DATA", options.data_root)
    records = run_table(SPEC, "smoke", models=["Standard"], columns=["corner + unit sets"],
                        out=str(tmp_path), options=options)
    assert records[0]["status"] == "ok", records[0].get("traceback")
    assert records[0]["config"]["task_overrides"]["unit_sets"] is True
    report = (tmp_path / SPEC.key / "report.md").read_text()
    assert "## Distribution axis" in report and "| corner + unit sets |" in report
    assert "**not run**" in report and "smoke profile: a pipeline check only" in report
    assert (tmp_path / SPEC.key / f"{SPEC.key}.png").exists()
    assert (tmp_path / SPEC.key / "statistics.json").exists()
    write_report(SPEC, str(tmp_path))  # rebuilt from the cached statistics


def test_finding_sentences_name_where_the_baselines_collapse():
    results = _results({"default": EASY, "corner": COLLAPSE | {MEAN_POOL: 0.1}})
    text = " ".join(finding_sentences(results))
    assert "stay at R² <= 0.05 on corner and reach default 0.950 on the others" in text
    assert "No variant run gives the paper's whole d=8 pattern" in text
    assert "corner: mean-pool 0.100, MZAttn-Full 0.690" in text
    text = " ".join(finding_sentences(_results({"default": EASY, "corner": COLLAPSE})))
    assert "appears on corner" in text
    assert finding_sentences(_results({})) == ["no variant has all four models yet."]


def test_table3_report_points_to_the_study(tmp_path):
    assert "Not run in this folder" in " ".join(table3_lines(str(tmp_path)))


def test_table3_report_names_the_profile_that_ran(monkeypatch):
    from mzattn.repro.report.results import Results
    results = _results({"batch 256": EASY}, profile="full")
    assert results.fullest_profile() == "full" and _results({}).fullest_profile() == "quick"
    monkeypatch.setattr(Results, "load", classmethod(lambda cls, spec, out: results))
    text = " ".join(table3_lines("results/full"))
    assert "`mzattn-repro table3-sensitivity --profile full --out results/full`" in text
    assert "on 1 variant with all four models (batch 256)" in text
