"""compsense.retrieval.harness: metrics on hand-computed rankings, agreement with sentence-transformers'
evaluator, the bootstrap, the eval subsample and Table 1."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import torch
from scipy import stats

from compsense.retrieval import harness as retrieval
from compsense.retrieval.harness import (
    HARNESS,
    PAPER_TABLE1,
    dose_response,
    evaluate,
    paired_bootstrap,
    query_metrics,
    subsample,
    table1,
    top_k,
    variant_table,
    with_auc_gain,
)

TINY_CORPUS = Path(retrieval.__file__).resolve().parents[1] / "resources" / "tiny_corpus.txt"


class FakeEncoder:
    """Texts are looked up in a table of fixed vectors: the ranking is known in advance."""

    def __init__(self, vectors: dict[str, list[float]]):
        self.vectors = vectors

    def encode(self, texts, **kwargs):
        return torch.tensor([self.vectors[t] for t in texts], dtype=torch.float32)


def test_query_metrics_hand_computed():
    m = query_metrics(["d2", "d1", "d4", "d3"], {"d1": 1, "d3": 1, "d9": 0})
    ideal = 1 + 1 / math.log2(3)
    assert m["ndcg@10"] == pytest.approx((1 / math.log2(3) + 1 / math.log2(5)) / ideal)
    assert m["ndcg@10"] == pytest.approx(0.650921, abs=1e-6)
    assert m["acc@1"] == 0.0
    assert m["mrr@10"] == 0.5
    assert m["recall@100"] == 1.0


def test_query_metrics_graded_and_cutoffs():
    # Graded gains as trec_eval: the best ranking scores 1.0 even with mixed grades.
    assert query_metrics(["a", "b"], {"a": 2, "b": 1})["ndcg@10"] == pytest.approx(1.0)
    assert query_metrics(["b", "a"], {"a": 2, "b": 1})["ndcg@10"] < 1.0
    # A relevant document at rank 11 counts for recall@100 but not for nDCG@10 or MRR@10.
    ranking = [f"x{i}" for i in range(10)] + ["rel"]
    m = query_metrics(ranking, {"rel": 1})
    assert (m["ndcg@10"], m["mrr@10"], m["recall@100"]) == (0.0, 0.0, 1.0)
    with pytest.raises(ValueError, match="no relevant"):
        query_metrics(["a"], {"a": 0})


def test_evaluate_on_fake_encoder_known_ranking_and_ties():
    corpus = {
        "d1": {"title": "", "text": "one"},
        "d2": {"title": "T", "text": "two"},
        "d0": {"title": "", "text": "zero"},
    }
    vectors = {"one": [1, 0], "T two": [0.6, 0.8], "zero": [1, 0], "q": [1, 0], "p": [0, 1]}
    result = evaluate(
        FakeEncoder(vectors),
        corpus,
        {"q1": "q", "q2": "p"},
        {"q1": {"d1": 1}, "q2": {"d2": 1}},
        name="fake",
        show_progress=False,
    )
    pq = result.per_query.set_index("qid")
    # q1 ties between d0 and d1 (identical vectors): the smaller id d0 ranks first.
    assert pq.loc["q1", "acc@1"] == 0.0 and pq.loc["q1", "mrr@10"] == 0.5
    assert pq.loc["q2", "acc@1"] == 1.0  # title + " " + text was encoded
    assert result.metrics["acc@1"] == 0.5 and result.harness == HARNESS
    tidy = result.to_tidy(run="r", backbone="fake", variant="A", seed=1)
    assert list(tidy.columns[:7]) == ["run", "backbone", "variant", "seed", "dataset", "metric", "value"]
    assert set(tidy.metric) == set(retrieval.METRICS) and (tidy.harness == HARNESS).all()


def test_top_k_chunked_equals_full_sort_with_ties():
    g = torch.Generator().manual_seed(0)
    docs = torch.randint(0, 3, (57, 4), generator=g).float()  # many exact ties
    queries = torch.randint(0, 3, (9, 4), generator=g).float()
    s_small, i_small = top_k(queries, docs, k=20, query_chunk=4, doc_chunk=7)
    full = queries @ docs.T
    i_full = torch.sort(full, dim=1, descending=True, stable=True).indices[:, :20]
    assert torch.equal(i_small, i_full)
    assert torch.allclose(s_small, full.gather(1, i_full))


@pytest.mark.slow
def test_agrees_with_sentence_transformers_evaluator():
    from sentence_transformers.sentence_transformer.evaluation import InformationRetrievalEvaluator

    from compsense.core.encoders import build_tiny_bert

    model = build_tiny_bert(seed=3)
    lines = [ln.strip() for ln in TINY_CORPUS.read_text().splitlines() if ln.strip()]
    n = len(lines)
    # 160 documents (> 100, so Recall@100 is not trivially 1), short queries, two relevant docs each.
    corpus = {f"doc{i:03d}": {"title": "", "text": f"{lines[i % n]} {lines[(7 * i + 3) % n]}"} for i in range(160)}
    queries = {f"q{i}": " ".join(lines[(5 * i) % n].split()[:3]) for i in range(40)}
    qrels = {f"q{i}": {f"doc{(11 * i) % 160:03d}": 1, f"doc{(13 * i + 5) % 160:03d}": 1} for i in range(40)}
    ours = evaluate(model, corpus, queries, qrels, batch_size=16, show_progress=False).metrics
    assert 0 < ours["ndcg@10"] < 1 and 0 < ours["recall@100"] < 1  # a non-trivial case
    st = InformationRetrievalEvaluator(
        queries,
        {d: v["text"] for d, v in corpus.items()},
        {q: set(r) for q, r in qrels.items()},
        mrr_at_k=[10],
        ndcg_at_k=[10],
        accuracy_at_k=[1],
        precision_recall_at_k=[100],
        map_at_k=[100],
        show_progress_bar=False,
        batch_size=16,
    )(model)
    assert ours["ndcg@10"] == pytest.approx(st["cosine_ndcg@10"], abs=1e-6)
    assert ours["mrr@10"] == pytest.approx(st["cosine_mrr@10"], abs=1e-6)
    assert ours["acc@1"] == pytest.approx(st["cosine_accuracy@1"], abs=1e-6)
    assert ours["recall@100"] == pytest.approx(st["cosine_recall@100"], abs=1e-6)


def test_paired_bootstrap():
    rng = np.random.default_rng(0)
    a = pd.DataFrame({"qid": [f"q{i}" for i in range(200)], "ndcg@10": rng.uniform(size=200)})
    shifted = a.assign(**{"ndcg@10": a["ndcg@10"] - 0.1})
    res = paired_bootstrap(a, shifted, n=500, seed=1)
    assert res["mean_delta"] == pytest.approx(-0.1)
    assert res["ci_low"] == pytest.approx(-0.1) and res["ci_high"] == pytest.approx(-0.1)
    assert res["p_value"] < 0.01 and res["n_queries"] == 200
    noisy = a.assign(**{"ndcg@10": a["ndcg@10"] + rng.normal(0, 0.3, 200)})
    r1, r2 = paired_bootstrap(a, noisy, seed=7), paired_bootstrap(a, noisy, seed=7)
    assert r1 == r2 and r1["ci_low"] < r1["mean_delta"] < r1["ci_high"]
    same = paired_bootstrap(a, a, n=100)
    assert same["mean_delta"] == 0 and same["p_value"] == 1.0
    with pytest.raises(ValueError, match="no query in common"):
        paired_bootstrap(a, a.assign(qid="other"))


@dataclass(frozen=True)
class _Beir:
    name: str
    corpus: dict
    queries: dict
    qrels: dict
    split: str = "test"
    skipped: dict = field(default_factory=dict)


def test_subsample_keeps_relevant_docs_and_is_deterministic():
    corpus = {f"d{i}": {"title": "", "text": f"doc {i}"} for i in range(1000)}
    qrels = {f"q{i}": {f"d{i}": 1, f"d{i + 500}": 1} for i in range(100)}
    ds = _Beir("toy", corpus, {q: q for q in qrels}, qrels)
    small = subsample(ds, 10, extra_docs=50, seed=4)
    assert len(small.qrels) == 10 and set(small.queries) == set(small.qrels)
    relevant = {d for rel in small.qrels.values() for d in rel}
    assert relevant <= set(small.corpus) and len(small.corpus) == len(relevant) + 50
    assert small.name == "toy@q10" and small == subsample(ds, 10, extra_docs=50, seed=4)
    assert subsample(ds, None) is ds and subsample(ds, 1000) is ds


def _results(rows, regime="zero-shot"):
    df = pd.DataFrame(rows, columns=["backbone", "variant", "seed", "dataset", "metric", "value"])
    return df.assign(regime=regime)


def test_table1_means_drops_and_paper_columns():
    rows = []
    for seed, (a, b) in {42: (0.5, 0.4), 43: (0.7, 0.5)}.items():
        for ds in ("d1", "d2"):
            rows += [
                ("minilm-l6", "A", seed, ds, "ndcg@10", a),
                ("minilm-l6", "B", seed, ds, "ndcg@10", b),
                ("minilm-l6", "base", seed, ds, "ndcg@10", 0.45),
            ]
    t = table1(_results(rows)).set_index(["backbone", "metric"]).loc[("minilm-l6", "ndcg@10")]
    assert t.A_mean == pytest.approx(0.6) and t.B_mean == pytest.approx(0.45)
    assert t.A_std == pytest.approx(np.std([0.5, 0.7], ddof=1))
    assert t["drop"] == pytest.approx(-0.15) and t.drop_pct == pytest.approx(-25.0)
    assert t.paper_A == 0.439 and t.paper_B == 0.401 and t.paper_drop == pytest.approx(-0.038)
    assert t.n_seeds == 2 and t.n_datasets == 2 and t.base_mean == pytest.approx(0.45)
    # seed-level test over the two seed drops (-0.1, -0.2): the paired t of B against A
    assert t.t_p == pytest.approx(stats.ttest_rel([0.4, 0.5], [0.5, 0.7]).pvalue) and t.perm_p_floor == 0.5
    html = retrieval.style_table1(table1(_results(rows))).to_html()
    assert "p (paired t)" in html and "sign flips" in html
    # a second metric: the seed-level t p-values are Holm-adjusted over the table's rows
    extra = [(bb, v, seed, ds, "acc@1", val * 0.9 + 0.01 * (seed - 42)) for bb, v, seed, ds, _, val in rows]
    both = table1(_results(rows + extra)).set_index("metric")
    from compsense.core.stats import holm

    assert list(both.t_p_holm) == pytest.approx(list(holm(both.t_p))) and (both.t_p_holm >= both.t_p).all()
    assert set(PAPER_TABLE1.backbone) == {"minilm-l6", "minilm-l12", "gte-small", "gte-modernbert-base"}


def test_table1_holds_only_zero_shot_sets():
    rows = [
        ("minilm-l6", v, 42, ds, "ndcg@10", val)
        for ds, (a, b) in {"zs": (0.6, 0.5), "in": (0.9, 0.9)}.items()
        for v, val in (("A", a), ("B", b), ("base", 0.4))
    ]
    df = _results(rows)
    df.loc[(df.dataset == "in") & (df.variant != "base"), "regime"] = "in-domain"  # base is zero-shot there
    t = table1(df).set_index(["backbone", "metric"]).loc[("minilm-l6", "ndcg@10")]
    assert t.A_mean == pytest.approx(0.6) and t.base_mean == pytest.approx(0.4) and t.n_datasets == 1
    with pytest.raises(ValueError, match="regime"):
        table1(df.drop(columns="regime"))


def _per_query(deltas: dict, seeds=(42, 43, 44), n_queries=40, seed=0):
    rng = np.random.default_rng(seed)
    base = rng.uniform(0.2, 0.8, size=n_queries)
    rows = []
    for s in seeds:
        for variant, delta in deltas.items():
            noise = rng.normal(0, 0.02, size=n_queries) if variant != "A" else 0
            for i, v in enumerate(base + delta + noise):
                rows.append(("m", variant, s, "zs", f"q{i}", v))
    pq = pd.DataFrame(rows, columns=["backbone", "variant", "seed", "dataset", "qid", "ndcg@10"])
    return pq.assign(regime="zero-shot")


def test_variant_table_tests_each_variant_against_a_with_holm():
    pq = _per_query({"A": 0.0, "B": -0.1, "C-identity": -0.02, "B-all": -0.1})
    results = (
        pq.groupby(["backbone", "variant", "seed", "dataset", "regime"], as_index=False)["ndcg@10"]
        .mean()
        .rename(columns={"ndcg@10": "value"})
        .assign(metric="ndcg@10", families="", retrieval_rows=100, structural_rows=0, structural_share=0.19)
    )
    table = variant_table(results, pq, n=2000, seed=1).set_index("variant")
    assert table.loc["B", "mean_delta"] == pytest.approx(-0.1, abs=0.01) and table.loc["B", "ci_high"] < 0
    assert table.loc["B", "n_seeds"] == 3 and pd.isna(table.loc["A", "mean_delta"])
    tests = table.attrs["tests"].set_index(["reference", "variant"])
    assert tests.loc[("C-identity", "B"), "mean_delta"] == pytest.approx(-0.08, abs=0.01)  # B's cost beyond C's
    assert (tests.p_holm >= tests.p_value).all() and len(tests) == 4
    # beside each bootstrap, the seed-level tests over the per-seed differences (three seeds here)
    from compsense.core.stats import seed_level_test

    deltas = (
        pq[pq.variant == "B"].set_index(["seed", "qid"])["ndcg@10"]
        - pq[pq.variant == "C-identity"].set_index(["seed", "qid"])["ndcg@10"]
    )
    expected = seed_level_test(deltas.groupby("seed").mean().to_numpy())
    for column in ("t_p", "t_ci_low", "t_ci_high", "perm_p", "perm_p_floor"):
        assert tests.loc[("C-identity", "B"), column] == pytest.approx(expected[column])
    assert tests.loc[("C-identity", "B"), "perm_p_floor"] == pytest.approx(0.25)  # 2 / 2^3
    assert table.loc["B", "t_ci_high"] < 0  # the variant table carries them for each variant vs A


def test_dose_response_pairs_each_variant_with_a_of_its_seed():
    results = pd.DataFrame(
        [
            ("m", v, s, "zs", "ndcg@10", val, sh, "zero-shot")
            for s, off in ((42, 0.0), (43, 0.1))
            for v, val, sh in (("A", 0.6 + off, 0.0), ("B", 0.5 + off, 0.19))
        ],
        columns=["backbone", "variant", "seed", "dataset", "metric", "value", "structural_share", "regime"],
    )
    nearmiss = pd.DataFrame(
        [("m", v, s, "all", auc) for s in (42, 43) for v, auc in (("A", 0.3), ("B", 0.7))],
        columns=["backbone", "variant", "seed", "family", "value"],
    )
    dose = dose_response(results, nearmiss).set_index(["variant", "seed"])
    assert dose.loc[("B", 43), "drop"] == pytest.approx(-0.1) and dose.loc[("B", 42), "auc_gain"] == pytest.approx(0.4)
    assert dose.loc[("A", 42), "drop"] == 0


def test_with_auc_gain_adds_each_variants_mean_gain_over_a_of_the_same_seed():
    results = pd.DataFrame(
        [("m", v, s, "zs", "ndcg@10", 0.5, 0.19, "zero-shot") for s in (42, 43) for v in ("A", "B", "C-identity")],
        columns=["backbone", "variant", "seed", "dataset", "metric", "value", "structural_share", "regime"],
    )
    aucs = {("A", 42): 0.3, ("A", 43): 0.4, ("B", 42): 0.7, ("B", 43): 0.6, ("C-identity", 42): 0.3}
    nearmiss = pd.DataFrame(
        [("m", v, s, "all", auc) for (v, s), auc in aucs.items()],
        columns=["backbone", "variant", "seed", "family", "value"],
    )
    variants = pd.DataFrame({"backbone": "m", "variant": ["A", "B", "C-identity", "B-all"], "mean": 0.5})
    table = with_auc_gain(variants, results, nearmiss).set_index("variant")
    assert list(table.index) == ["A", "B", "C-identity", "B-all"]  # every row of the variants table, in order
    assert table.loc["B", "auc_gain"] == pytest.approx(0.3)  # (0.4 + 0.2) / 2: paired by seed, then averaged
    assert table.loc["C-identity", "auc_gain"] == pytest.approx(0.0)  # only seed 42 was scored
    assert table.loc["A", "auc_gain"] == 0 and pd.isna(table.loc["B-all", "auc_gain"])  # no scores: no gain


def test_evaluate_refuses_qrels_naming_absent_documents():
    vectors = {"q": [1.0, 0.0], "doc one": [1.0, 0.0]}
    with pytest.raises(ValueError, match="not in the corpus"):
        evaluate(
            FakeEncoder(vectors),
            {"d1": {"title": "", "text": "doc one"}},
            {"q1": "q"},
            {"q1": {"d1": 1, "d404": 1}},
            show_progress=False,
        )


def test_describe_result_states_the_interval_and_the_control():
    pq = _per_query({"A": 0.0, "B": -0.1, "C-identity": -0.02})
    results = (
        pq.groupby(["backbone", "variant", "seed", "dataset", "regime"], as_index=False)["ndcg@10"]
        .mean()
        .rename(columns={"ndcg@10": "value"})
        .assign(metric="ndcg@10", families="", retrieval_rows=100, structural_rows=0, structural_share=0.19)
    )
    t1 = table1(results, metrics=("ndcg@10",), per_query=pq, n=2000, seed=1)
    text = retrieval.describe_result(t1, variant_table(results, pq, n=2000, seed=1))
    assert "B − A = -0.10" in text and "a cost" in text and "3 seed(s)" in text
    assert "C-identity" in text and "B − C = -0.08" in text
    assert retrieval.describe_result(t1.iloc[0:0]) == "No zero-shot A/B comparison in these results."


def test_nanobeir_sets_come_from_the_named_dataset_id(monkeypatch):
    from compsense.data import datasets as data

    asked = []

    def fake(set_name, dataset_id="sentence-transformers/NanoBEIR-en", local_dir=None, data_dir=None):
        asked.append((set_name, dataset_id))
        return _Beir(data.nanobeir_name(set_name), {"d": {"text": "x"}}, {"q": "y"}, {"q": {"d": 1}})

    monkeypatch.setattr(data, "load_nanobeir", fake)
    retrieval.load_eval_datasets(["NanoSciFact", "nanobeir:fiqa2018"], nanobeir_dataset_id="lightonai/NanoBEIR-en")
    assert asked == [("NanoSciFact", "lightonai/NanoBEIR-en"), ("fiqa2018", "lightonai/NanoBEIR-en")]


def test_evaluate_runs_skips_only_a_split_with_the_same_content(tmp_path, monkeypatch):
    from compsense.core.paths import ENV_COMMIT
    from compsense.data.datasets import BeirDataset

    vectors = {"q one": [1.0, 0.0], "q two": [0.0, 1.0], "alpha": [1.0, 0.1], "beta": [0.1, 1.0], "gamma": [0.0, 1.0]}
    loads = []
    monkeypatch.setattr(retrieval, "load_encoder", lambda *a, **k: loads.append(a) or FakeEncoder(vectors))

    def split(texts):
        corpus = {f"d{i}": {"title": "", "text": t} for i, t in enumerate(texts)}
        return BeirDataset("toy", corpus, {"q1": "q one", "q2": "q two"}, {"q1": {"d0": 1}, "q2": {"d1": 1}}, "test")

    runs = pd.DataFrame(
        [
            {
                "backbone": "m",
                "variant": "base",
                "seed": 0,
                "model": "m",
                "model_stamp": "pretrained",
                "structural_share": None,
            }
        ]
    )
    monkeypatch.setenv(ENV_COMMIT, "aaaaaaa")  # the commit each run's kernels compute at
    first, _ = retrieval.evaluate_runs(runs, [split(["alpha", "beta"])], tmp_path)
    monkeypatch.setenv(ENV_COMMIT, "bbbbbbb")
    again, _ = retrieval.evaluate_runs(runs, [split(["alpha", "beta"])], tmp_path)
    assert len(loads) == 1 and again.value.tolist() == first.value.tolist()  # same content: read back
    assert set(again.commit) == {"aaaaaaa"}  # ... with the commit that computed it, not this run's
    # the same size and ids, other texts: d0 now loses to nothing relevant -> scored again, new numbers
    edited, per_query = retrieval.evaluate_runs(runs, [split(["gamma", "alpha"])], tmp_path)
    ndcg = lambda t: t[t.metric == "ndcg@10"].value.item()  # noqa: E731
    assert len(loads) == 2 and ndcg(edited) < ndcg(first) and edited.data_sha1.nunique() == 1
    assert set(per_query.data_sha1) == set(edited.data_sha1)  # no row of the old content comes back
    assert set(edited.commit) == set(per_query.commit) == {"bbbbbbb"}


def test_table1_and_the_variant_tests_take_their_seed_level_values_from_one_computation():
    # two datasets of unequal size: the mean over datasets differs from the mean over all queries,
    # so a second computation pooling queries would disagree with Table 1's drop
    from compsense.retrieval.harness import ab_tests, seed_drops, seed_means

    pq = pd.concat(
        [
            _per_query({"A": 0.0, "B": -0.05}, seeds=(42, 43, 44, 45), n_queries=n, seed=i).assign(dataset=name)
            for i, (name, n) in enumerate((("small", 10), ("large", 90)))
        ],
        ignore_index=True,
    )
    pq.loc[(pq.dataset == "small") & (pq.variant == "B"), "ndcg@10"] -= 0.2  # B loses more on the small set
    results = (
        pq.groupby(["backbone", "variant", "seed", "dataset", "regime"], as_index=False)["ndcg@10"]
        .mean()
        .rename(columns={"ndcg@10": "value"})
        .assign(metric="ndcg@10")
    )
    from_results = seed_drops(seed_means(results, ["ndcg@10"]), "A", "B")
    from_queries = seed_drops(seed_means(pq, ["ndcg@10"]), "A", "B")
    pd.testing.assert_series_equal(from_results, from_queries)
    pooled = (
        pq[pq.variant == "B"].groupby("seed")["ndcg@10"].mean()
        - pq[pq.variant == "A"].groupby("seed")["ndcg@10"].mean()
    )
    assert from_results.mean() == pytest.approx(-0.05 - 0.2 / 2, abs=0.01)
    assert abs(pooled.mean() - from_results.mean()) > 0.05  # pooling queries would weigh the large set 9:1
    t1 = table1(results, metrics=("ndcg@10",), per_query=pq, n=500).iloc[0]
    tests = ab_tests(pq, [("A", "B")], n=500).iloc[0]
    for column in ("t_p", "t_ci_low", "t_ci_high", "perm_p"):
        assert t1[column] == pytest.approx(tests[column], rel=1e-9)
    assert t1["drop"] == pytest.approx(from_results.mean())
