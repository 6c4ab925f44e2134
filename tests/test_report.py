"""The run report (compsense.pipeline.report): it leads with the answer (Table 1, the separation table,
reranking against Base, the figures) and puts how the run was made after it; long tables are cut with
a count and a link to the whole table, which is written beside the report as CSV, never silently."""

from __future__ import annotations

import numpy as np
import pandas as pd
import plotly.graph_objects as go
import pytest

from compsense.core.layout import results_file
from compsense.figures import export
from compsense.nearmiss.evaluation import SEPARATION_FILE, separation_frame
from compsense.pipeline import report
from compsense.retrieval.harness import TABLE1_FILE, table1, write_result_table
from compsense.verifiers.rerank import RERANK_ANSWER_FILE, bootstrap_vs_baseline, rerank_answer


@pytest.fixture()
def work(tmp_path, monkeypatch):
    monkeypatch.setattr(report, "machine", lambda: {"device": "cpu", "python": "3", "versions": {}})
    results = tmp_path / "work" / "results"
    results.mkdir(parents=True)
    # 100 distinct geometry results: more than a report table shows
    pd.DataFrame(
        {
            "run": "m/A-seed42",
            "variant": "A",
            "seed": 42,
            "dataset": "heldout",
            "family": [f"family{i:03d}" for i in range(100)],
            "metric": "auc",
            "value": [i / 100 for i in range(100)],
        }
    ).to_parquet(results_file(results.parent, "geometry.parquet"))
    rows = []
    for seed, shift in ((42, 0.0), (43, 0.1)):
        for family, metric, value in (
            ("all", "auc", 0.6),
            ("negation", "auc", 0.9),
            ("self_match", "auc", 0.2),
            ("copy_vs_near_miss", "pairwise_accuracy", 0.3),
        ):
            rows.append(
                {
                    "run": f"m/F4-end2end-seed{seed}",
                    "variant": "F4-end2end",
                    "seed": seed,
                    "dataset": "negatives-heldout",
                    "family": family,
                    "metric": metric,
                    "value": value + shift,
                    "train_data": "balanced",
                    "size": "small",
                    "parameters": 58_433,
                    "examples_seen": 2048,
                }
            )
    pd.DataFrame(rows).to_parquet(results_file(results.parent, "verifiers.parquet"))
    # the separation table as notebook 04 writes it (the report reads it, never recomputes it)
    separation_frame(pd.DataFrame(rows)).to_parquet(results_file(results.parent, SEPARATION_FILE))
    return tmp_path / "work"


def _retrieval(results, rng):
    """Base, A and B on one zero-shot set, two seeds, 12 queries: B a little below A."""
    per_query, rows = [], []
    for seed in (42, 43):
        for variant, level in (("base", 0.60), ("A", 0.58), ("B", 0.55)):
            scores = np.clip(level + rng.normal(0, 0.05, 12), 0, 1)
            per_query += [
                {
                    "backbone": "minilm-l6",
                    "variant": variant,
                    "seed": seed,
                    "dataset": "scifact",
                    "qid": f"q{i}",
                    "ndcg@10": s,
                    "acc@1": float(s > 0.57),
                    "regime": "zero-shot",
                }
                for i, s in enumerate(scores)
            ]
            for metric, value in (("ndcg@10", scores.mean()), ("acc@1", float((scores > 0.57).mean()))):
                rows.append(
                    {
                        "run": f"m/{variant}-seed{seed}",
                        "backbone": "minilm-l6",
                        "variant": variant,
                        "seed": seed,
                        "dataset": "scifact",
                        "metric": metric,
                        "value": value,
                        "regime": "zero-shot",
                    }
                )
    pd.DataFrame(rows).to_parquet(results_file(results.parent, "retrieval.parquet"))
    pd.DataFrame(per_query).to_parquet(results_file(results.parent, "retrieval_per_query.parquet"))
    # notebook 02 writes Table 1 once; the report reads it
    t1 = table1(pd.DataFrame(rows), per_query=pd.DataFrame(per_query), n=2000, seed=0)
    write_result_table(t1, results.parent, TABLE1_FILE)


def _rerank(results, rng):
    """Encoder-only Base/A and F1 reranking Base's top 10 and 20 (weights 0 and 0.5) on 15 queries."""
    per_query, rows = [], []
    methods = [("base", "none", "encoder-only", 100, 1.0, 0.50), ("A", "none", "encoder-only", 100, 1.0, 0.52)]
    methods += [("F1-frozen", "F1", "frozen", k, w, 0.55 + k / 1000 + w / 100) for k in (10, 20) for w in (0.0, 0.5)]
    for variant, verifier, regime, k, weight, level in methods:
        scores = np.clip(level + rng.normal(0, 0.05, 15), 0, 1)
        per_query += [
            {
                "variant": variant,
                "verifier": verifier,
                "regime": regime,
                "k": k,
                "weight": weight,
                "dataset": "scifact",
                "qid": f"q{i}",
                "ndcg@10": s,
            }
            for i, s in enumerate(scores)
        ]
        rows.append(
            {
                "run": f"m/{variant}",
                "backbone": "minilm-l6",
                "variant": variant,
                "seed": 42,
                "dataset": "scifact",
                "metric": "ndcg@10",
                "value": scores.mean(),
                "verifier": verifier,
                "regime": regime,
                "k": k,
                "weight": weight,
            }
        )
    pd.DataFrame(rows).to_parquet(results_file(results.parent, "rerank.parquet"))
    pd.DataFrame(per_query).to_parquet(results_file(results.parent, "rerank_per_query.parquet"))
    # notebook 05 writes its answer once; the report reads it
    boot = bootstrap_vs_baseline(pd.DataFrame(per_query), baseline="base", n=200, seed=0)
    write_result_table(rerank_answer(pd.DataFrame(rows), boot), results.parent, RERANK_ANSWER_FILE)


def _section(md: str, title: str) -> str:
    return md.split(f"## {title}")[1].split("\n## ")[0]


def test_long_tables_say_how_many_rows_they_leave_out_and_link_all_of_them(work, tmp_path):
    md = report.build_report(work, tmp_path / "figs", tmp_path / "run")["md"].read_text()
    geometry = _section(md, "Pooled-space separation (notebook 03)")
    assert geometry.count("| heldout |") == report.MAX_ROWS
    assert (
        "20 more rows not shown (100 in all): the full table is [tables/all_geometry.csv](tables/all_geometry.csv)"
        in geometry
    ) and "geometry.parquet" in geometry
    full = pd.read_csv(tmp_path / "run" / "tables" / "all_geometry.csv")
    assert len(full) == 100 and sorted(full.family)[-1] == "family099"  # the rows the report left out are there


def test_report_shows_the_separation_table_with_seeds_and_families(work, tmp_path):
    md = report.build_report(work, tmp_path / "figs", tmp_path / "run")["md"].read_text()
    section = _section(md, report.SEPARATION_TITLE)
    header, _, row = section.strip().splitlines()[:3]
    assert "negatives-heldout auc" in header and "negatives-heldout self_match" in header
    assert "negatives-heldout:negation auc" in header  # each family's AUC beside the checks
    assert row.startswith("| F4 | end2end | balanced | small | 2 | 58433 | 2048 |")  # seeds, size, examples
    assert "0.650 ± 0.071" in row and "0.250 ± 0.071" in row and "0.950 ± 0.071" in row  # mean ± std over seeds
    csv = pd.read_csv(tmp_path / "run" / "tables" / "separation.csv")
    assert csv.loc[0, "negatives-heldout:negation auc"] == "0.950 ± 0.071"
    assert csv.loc[0, "parameters"] == 58_433 and "negatives-heldout:negation parameters" not in csv


def test_the_report_reads_the_separation_table_notebook_04_wrote_and_never_recomputes_it(work, tmp_path):
    written = pd.read_parquet(results_file(work, SEPARATION_FILE))
    written.loc[0, "negatives-heldout auc"] = "0.123 ± 0.004"  # what the notebook wrote is what is shown
    written.to_parquet(results_file(work, SEPARATION_FILE))
    md = report.build_report(work, tmp_path / "figs", tmp_path / "run")["md"].read_text()
    assert "0.123 ± 0.004" in _section(md, report.SEPARATION_TITLE)
    results_file(work, SEPARATION_FILE).unlink()  # verifiers.parquet alone: no table made up from it
    md = report.build_report(work, tmp_path / "figs", tmp_path / "run2")["md"].read_text()
    assert "No separation table: notebook 04 did not write separation.parquet" in _section(md, report.SEPARATION_TITLE)
    assert not (tmp_path / "run2" / "tables" / "separation.csv").exists()


def test_the_answer_comes_first_and_the_run_metadata_after_it(work, tmp_path, monkeypatch):
    rng = np.random.default_rng(0)
    _retrieval(work / "results", rng)
    _rerank(work / "results", rng)
    monkeypatch.setattr(export, "_png_engine_available", lambda: False)
    export.save_figure(go.Figure(go.Bar(x=["a"], y=[1])), "02_bars", tmp_path / "figs")
    summary = {
        "profile": None,
        "commit": "c0ffee1",
        "experiment": "study-02-sweep-a",
        "stages": {"02": {"status": "ok", "seconds": 3.0}},
    }
    md = report.build_report(work, tmp_path / "figs", tmp_path / "run", summary=summary)["md"].read_text()
    assert "git commit (at the run's start) | c0ffee1" in _section(md, "Run metadata")  # not HEAD at the end
    assert "experiment (dvc exp run -n) | study-02-sweep-a" in _section(md, "Run metadata")  # a narrowed run says so
    order = [
        report.TABLE1_TITLE,
        report.SEPARATION_TITLE,
        report.RERANK_TITLE,
        "## Figures",
        "Retrieval, every model",
        "## Run metadata",
        "## Stages",
    ]
    positions = [md.index(title) for title in order]
    assert positions == sorted(positions), order
    assert "- [02_bars](../figs/02_bars.html)" in _section(md, "Figures")  # no PNG engine: the HTML is linked
    table1 = pd.read_csv(tmp_path / "run" / "tables" / "table1.csv")
    assert list(table1.metric) == ["acc@1", "ndcg@10"] and table1.ci_low.notna().all()
    assert (table1.B_mean < table1.A_mean).all()


def test_rerank_answer_is_the_largest_k_pure_rerank_against_base():
    rng = np.random.default_rng(1)
    per_query, rows = [], []
    for variant, verifier, regime, k, weight, level in [
        ("base", "none", "encoder-only", 100, 1.0, 0.5),
        ("F1-frozen", "F1", "frozen", 10, 0.0, 0.6),
        ("F1-frozen", "F1", "frozen", 20, 0.0, 0.7),
        ("F1-frozen", "F1", "frozen", 20, 0.5, 0.4),
    ]:
        scores = np.clip(level + rng.normal(0, 0.02, 20), 0, 1)
        per_query += [
            {
                "variant": variant,
                "verifier": verifier,
                "regime": regime,
                "k": k,
                "weight": weight,
                "dataset": "d",
                "qid": i,
                "ndcg@10": s,
            }
            for i, s in enumerate(scores)
        ]
        rows.append(
            {
                "variant": variant,
                "verifier": verifier,
                "regime": regime,
                "k": k,
                "weight": weight,
                "dataset": "d",
                "metric": "ndcg@10",
                "value": scores.mean(),
            }
        )
    boot = bootstrap_vs_baseline(pd.DataFrame(per_query), baseline="base", n=200, seed=0)
    answer = rerank_answer(pd.DataFrame(rows), boot)
    assert list(answer.variant) == ["base", "F1-frozen"]
    f1 = answer.set_index("variant").loc["F1-frozen"]
    assert f1.k == 20 and f1.weight == 0.0 and f1["ndcg@10"] == pytest.approx(0.7, abs=0.02)
    assert f1.mean_delta == pytest.approx(0.2, abs=0.03) and f1.ci_low > 0.1 and 0 <= f1.p_holm <= 1
    assert np.isnan(answer.set_index("variant").loc["base", "mean_delta"])


def test_the_same_tables_give_the_same_csv_bytes(work, tmp_path):
    report.build_report(work, tmp_path / "figs", tmp_path / "one")
    report.build_report(work, tmp_path / "figs", tmp_path / "two")
    one, two = sorted((tmp_path / "one" / "tables").iterdir()), sorted((tmp_path / "two" / "tables").iterdir())
    assert [p.name for p in one] == [p.name for p in two] and one
    assert all(a.read_bytes() == b.read_bytes() for a, b in zip(one, two, strict=True))


def test_a_report_rebuilt_in_its_folder_keeps_no_table_of_the_earlier_one(work, tmp_path):
    report.build_report(work, tmp_path / "figs", tmp_path / "run")
    assert (tmp_path / "run" / "tables" / "separation.csv").exists()
    results_file(work, "verifiers.parquet").unlink()
    report.build_report(work, tmp_path / "figs", tmp_path / "run")
    assert not (tmp_path / "run" / "tables" / "separation.csv").exists()  # publish would copy a stale table
    assert (tmp_path / "run" / "tables" / "all_geometry.csv").exists()


def test_notebook_01s_purity_table_is_read_into_the_report_not_recomputed(work, tmp_path):
    from compsense.data.structural import write_purity

    purity = pd.DataFrame(
        {
            "family": ["binding"],
            "source": ["mrpc"],
            "split": ["train"],
            "pairs": [10],
            "pure": [7],  # not what a recomputation from pairs would give: there are no pairs here
            "purity": [0.7],
            "judged_as": ["binding 70%"],
            "failing_examples": ["a => b"],
        }
    )
    write_purity(purity, work)
    md = report.build_report(work, tmp_path / "figs", tmp_path / "run")["md"].read_text()
    assert report.PURITY_TITLE in md
    pd.testing.assert_frame_equal(pd.read_csv(tmp_path / "run" / "tables" / "purity.csv"), purity)


def test_without_notebook_02s_table_the_report_says_how_to_make_it_and_computes_nothing(work, tmp_path):
    rng = np.random.default_rng(0)
    _retrieval(work / "results", rng)
    results_file(work, TABLE1_FILE).unlink()
    md = report.build_report(work, tmp_path / "figs", tmp_path / "run")["md"].read_text()
    assert "No Table 1 yet" in md and "make reproduce ONLY=02" in md
    assert not (tmp_path / "run" / "tables" / "table1.csv").exists()


def test_a_set_some_model_trained_on_is_not_named_zero_shot(work, tmp_path):
    rng = np.random.default_rng(0)
    _retrieval(work / "results", rng)
    table = pd.read_parquet(results_file(work, "retrieval.parquet"))
    in_domain = table.assign(dataset="nfcorpus", regime=np.where(table.variant == "base", "zero-shot", "in-domain"))
    pd.concat([table, in_domain]).to_parquet(results_file(work, "retrieval.parquet"))
    md = report.build_report(work, tmp_path / "figs", tmp_path / "run")["md"].read_text()
    assert "Zero-shot sets: scifact (" in md  # Base is zero-shot on NFCorpus too, A and B are not


def test_notebook_04s_budget_curve_is_read_into_the_report_not_recomputed(work, tmp_path, monkeypatch):
    from compsense.core.paths import ENV_COMMIT
    from compsense.retrieval.harness import write_result_table
    from compsense.verifiers.budget import CURVE_FILE

    curve = pd.DataFrame(
        {
            "scorer": ["F4", "F1"],
            "regime": ["frozen", "frozen"],
            "size": ["paper", "small"],
            "recipe": ["equal", "equal"],
            "budget": [48000, 0],
            "metric": ["noise_excess", "self_match"],
            "mean": [0.123, 0.97],  # no results to recompute them from: the report can only read them
            "ci_low": [0.05, np.nan],
            "ci_high": [0.2, np.nan],
            "seeds": [3, 1],
        }
    )
    monkeypatch.setenv(ENV_COMMIT, "abc1234")
    write_result_table(curve, work, CURVE_FILE)  # each row with the commit that computed it
    md = report.build_report(work, tmp_path / "figs", tmp_path / "run")["md"].read_text()
    assert report.BUDGET_TITLE in md
    expected = curve.assign(commit="abc1234")
    pd.testing.assert_frame_equal(pd.read_csv(tmp_path / "run" / "tables" / "verifier_budget.csv"), expected)


def test_notebook_02s_variant_tests_are_read_into_the_report(work, tmp_path):
    from compsense.retrieval.harness import VARIANT_TESTS_FILE

    tests = pd.DataFrame(
        {
            "backbone": ["minilm-l6"],
            "metric": ["ndcg@10"],
            "reference": ["C-identity"],
            "variant": ["B"],
            "mean_delta": [-0.004],
            "t_p": [0.41],
            "perm_p_floor": [0.25],
        }
    )
    write_result_table(tests, work, VARIANT_TESTS_FILE)
    md = report.build_report(work, tmp_path / "figs", tmp_path / "run")["md"].read_text()
    assert "## Tests between variants" in md and "perm_p_floor = 2 / 2^S" in md
    assert pd.read_csv(tmp_path / "run" / report.TABLES_DIR / "variant_tests.csv").reference.tolist() == ["C-identity"]


def test_notebook_02s_dose_points_are_read_into_the_report(work, tmp_path):
    from compsense.retrieval.harness import DOSE_FILE

    rng = np.random.default_rng(0)
    _retrieval(work / "results", rng)
    dose = pd.DataFrame(
        {
            "backbone": "m",
            "variant": ["A", "B"],
            "seed": 42,
            "structural_share": [0.0, 0.19],
            "ndcg@10": [0.6, 0.59],
            "drop": [0.0, -0.01],
            "auc": [0.3, 0.4],
            "auc_gain": [0.0, 0.1],
        }
    )
    write_result_table(dose, work, DOSE_FILE)
    md = report.build_report(work, tmp_path / "figs", tmp_path / "run")["md"].read_text()
    assert "Dose-response points" in md
    assert pd.read_csv(tmp_path / "run" / report.TABLES_DIR / "dose_response.csv")["drop"].tolist() == [0.0, -0.01]


def test_notebook_02s_held_out_near_miss_aucs_are_a_table_of_the_report(work, tmp_path):
    rows = [
        {"run": f"m/{v}-seed{s}", "backbone": "m", "variant": v, "seed": s, "dataset": "heldout-near-miss",
         "metric": "auc", "family": "negation", "value": val + s / 1000, "ci_low": val - s / 1000,
         "ci_high": val + 0.03, "model_stamp": f"{v}{s}"}
        for v, val in (("A", 0.2), ("B", 0.8)) for s in (42, 43)
    ]  # fmt: skip
    pd.DataFrame(rows).to_parquet(results_file(work, "nearmiss_pooled.parquet"))
    report.build_report(work, tmp_path / "figs", tmp_path / "run")
    table = pd.read_csv(tmp_path / "run" / "tables" / "all_nearmiss_pooled.csv")
    b = table[table.variant == "B"]
    assert len(b) == 2 and sorted(b["mean"]) == pytest.approx([0.842, 0.843])  # a row per seed (its own interval)
    assert (b["count"] == 1).all() and b["mean"].mean() == pytest.approx(0.8425)  # the README's `m` reads their mean


def test_seeds_computed_at_other_commits_are_still_one_result():
    table = pd.DataFrame(
        {"run": ["A-seed42", "A-seed43"], "seed": [42, 43], "variant": ["A", "A"], "metric": ["auc", "auc"]}
    ).assign(value=[0.4, 0.6], commit=["aaaaaaa", "bbbbbbb"])  # seed 43 trained and scored later
    summary = report.summarize(table)
    assert len(summary) == 1 and summary["count"].item() == 2 and "commit" not in summary
