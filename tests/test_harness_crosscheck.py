"""Our retrieval harness against the references the paper's numbers and IR practice rest on.

1. sentence-transformers' NanoBEIREvaluator (what the authors ran) and our harness, each loading
   the same NanoBEIR-layout folder this test writes (hub-snapshot layout: <config>/<NanoName>-*.parquet
   plus a dataset card naming the configs), with the same tiny random BERT: per-set and mean
   nDCG@10, MRR@10, Acc@1 and Recall@100 must agree.
2. trec_eval (pytrec_eval) on a graded fixture: nDCG@10 with graded gains, MRR@10 and Recall@100
   per query, where sentence-transformers' evaluator (binary relevance) cannot check them.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from compsense.core.encoders import TINY_CORPUS, build_tiny_bert
from compsense.data.datasets import load_nanobeir
from compsense.retrieval.harness import METRICS, evaluate_dataset, score_rankings

SETS = {"scifact": "NanoSciFact", "nfcorpus": "NanoNFCorpus"}
# Our metric name -> the key sentence-transformers' evaluator reports (cosine similarity).
ST_KEYS = {
    "ndcg@10": "cosine_ndcg@10",
    "mrr@10": "cosine_mrr@10",
    "acc@1": "cosine_accuracy@1",
    "recall@100": "cosine_recall@100",
}
# Our metric name -> trec_eval's measure, on rankings cut to the depth our metric looks at.
TREC_MEASURES = {"ndcg@10": ("ndcg_cut_10", 100), "mrr@10": ("recip_rank", 10), "recall@100": ("recall_100", 100)}


def _write_nanobeir(root: Path, seed: int) -> None:
    """Two NanoBEIR sets as a hub snapshot would hold them: 150 documents (> 100, so Recall@100 is
    not trivially 1), 30 short queries with one to three relevant documents, no titles, and qrels
    without a score column (as in NanoBEIR)."""
    rng = np.random.default_rng(seed)
    lines = [ln.strip() for ln in TINY_CORPUS.read_text().splitlines() if ln.strip()]
    configs = {"corpus": [], "queries": [], "qrels": []}
    for offset, nano in enumerate(SETS.values()):
        n = len(lines)
        docs = [f"{nano[4:].lower()}-{i:03d}" for i in range(150)]
        corpus = pd.DataFrame(
            {"_id": docs, "text": [f"{lines[(i + offset) % n]} {lines[(7 * i + 3) % n]} {i}" for i in range(150)]}
        )
        queries = pd.DataFrame(
            {
                "_id": [f"q{i}" for i in range(30)],
                "text": [" ".join(lines[(5 * i + offset) % n].split()[:3]) for i in range(30)],
            }
        )
        qrels = pd.DataFrame(
            [
                {"query-id": f"q{i}", "corpus-id": d}
                for i in range(30)
                for d in rng.choice(docs, size=rng.integers(1, 4), replace=False)
            ]
        )
        for config, frame in (("corpus", corpus), ("queries", queries), ("qrels", qrels)):
            (root / config).mkdir(parents=True, exist_ok=True)
            frame.to_parquet(root / config / f"{nano}-00000-of-00001.parquet", index=False)
            configs[config].append(nano)
    card = ["---", "configs:"]
    for config, splits in configs.items():
        card += [f"- config_name: {config}", "  data_files:"]
        card += [f"  - split: {nano}\n    path: {config}/{nano}-*.parquet" for nano in splits]
    (root / "README.md").write_text("\n".join(card + ["---", ""]))


@pytest.mark.slow
def test_harness_equals_nanobeir_evaluator_on_a_local_nanobeir_folder(tmp_path):
    pytest.importorskip("datasets")  # the reference evaluator reads through `datasets` (absent on the GPU image)
    from sentence_transformers.sentence_transformer.evaluation import NanoBEIREvaluator

    root = tmp_path / "NanoBEIR-en"
    _write_nanobeir(root, seed=0)
    model = build_tiny_bert(seed=3)
    reference = NanoBEIREvaluator(
        dataset_names=list(SETS),
        dataset_id=str(root),
        mrr_at_k=[10],
        ndcg_at_k=[10],
        accuracy_at_k=[1],
        precision_recall_at_k=[100],
        map_at_k=[100],
        batch_size=16,
        write_csv=False,
    )(model)

    ours = {}
    for nano in SETS.values():
        result = evaluate_dataset(model, load_nanobeir(nano, local_dir=root), batch_size=16, show_progress=False)
        assert result.n_queries == 30 and result.n_docs == 150
        ours[nano] = result.metrics
        for metric, key in ST_KEYS.items():
            assert result.metrics[metric] == pytest.approx(reference[f"{nano}_{key}"], abs=1e-6), (nano, metric)
    assert all(0 < m["ndcg@10"] < 1 and 0 < m["recall@100"] < 1 for m in ours.values())  # non-trivial
    for metric, key in ST_KEYS.items():
        mean = np.mean([m[metric] for m in ours.values()])
        assert mean == pytest.approx(reference[f"NanoBEIR_mean_{key}"], abs=1e-6), metric


def _graded_fixture(seed: int = 0, n_queries: int = 40, n_docs: int = 300, depth: int = 150):
    """Random rankings of `depth` documents and graded qrels (relevance 0-3, zeros included), some
    relevant documents ranked past 100 or not at all."""
    rng = np.random.default_rng(seed)
    docs = [f"d{i:03d}" for i in range(n_docs)]
    rankings, qrels = {}, {}
    for q in range(n_queries):
        qid = f"q{q}"
        rankings[qid] = [docs[i] for i in rng.permutation(n_docs)[:depth]]
        judged = rng.choice(n_docs, size=int(rng.integers(2, 12)), replace=False)
        grades = rng.integers(0, 4, size=len(judged))
        grades[0] = max(grades[0], 1)  # every query has a relevant document
        # a few relevant documents near the top, so nDCG@10 and MRR@10 are not all zero
        qrels[qid] = {docs[d]: int(g) for d, g in zip(judged, grades)}
        for d in rankings[qid][: int(rng.integers(0, 4))]:
            qrels[qid].setdefault(d, int(rng.integers(1, 4)))
    return rankings, qrels


def test_graded_metrics_equal_trec_eval():
    pytrec_eval = pytest.importorskip("pytrec_eval")  # pip install -e '.[test]' (pytrec-eval-terrier)

    rankings, qrels = _graded_fixture()
    ours = score_rankings(rankings, qrels).set_index("qid")
    assert set(METRICS) >= set(TREC_MEASURES)
    assert ours["ndcg@10"].between(0, 1, inclusive="neither").any() and (ours["recall@100"] < 1).any()
    assert ours["mrr@10"].nunique() > 2  # hits at several ranks
    for metric, (measure, depth) in TREC_MEASURES.items():
        # Distinct descending scores: trec_eval ranks by score, so no tie can reorder a ranking.
        run = {q: {d: float(depth - i) for i, d in enumerate(ranked[:depth])} for q, ranked in rankings.items()}
        trec = pytrec_eval.RelevanceEvaluator(qrels, {measure})
        per_query = {q: values[measure] for q, values in trec.evaluate(run).items()}
        assert set(per_query) == set(ours.index)
        for qid, value in per_query.items():
            assert ours.loc[qid, metric] == pytest.approx(value, abs=1e-9), (metric, qid)
