"""compsense.verifiers.cross_encoder: a verifier with CrossEncoder's predict / rank / save / load, run by
sentence-transformers' own CrossEncoderRerankingEvaluator."""

from __future__ import annotations

import numpy as np
import pytest

from compsense.core.encoders import build_tiny_bert
from compsense.verifiers import architectures as V
from compsense.verifiers.cross_encoder import VerifierReranker

QUERY = "the cat sat on the mat"
DOCS = [
    "the cat sat on the mat",
    "a dog barked at the mailman",
    "the cat did not sit on the mat",
    "stock prices fell sharply",
]


@pytest.fixture(scope="module")
def reranker():
    return VerifierReranker(build_tiny_bert(seed=1), V.create("F1"))


def test_predict_and_rank_agree_with_score_pairs(reranker):
    scores = reranker.predict([(QUERY, d) for d in DOCS])
    direct = V.score_pairs(reranker.encoder, reranker.verifier, [(QUERY, d) for d in DOCS])
    np.testing.assert_allclose(scores, direct, rtol=1e-6)
    assert float(reranker.predict((QUERY, DOCS[1]))) == pytest.approx(float(direct[1]), rel=1e-6)
    ranked = reranker.rank(QUERY, DOCS, top_k=3, return_documents=True)
    assert [r["corpus_id"] for r in ranked] == list(np.argsort(-direct, kind="stable")[:3])
    assert ranked[0]["text"] == DOCS[ranked[0]["corpus_id"]] and len(ranked) == 3
    assert ranked[0]["corpus_id"] == 0  # MaxSim: the exact copy matches every token
    with pytest.raises(TypeError, match="list of texts"):
        reranker.rank(QUERY, DOCS[0])


def test_save_and_load_round_trip(reranker, tmp_path):
    folder = reranker.save_pretrained(tmp_path / "rr")
    again = VerifierReranker.from_pretrained(folder)
    np.testing.assert_allclose(
        again.predict([(QUERY, d) for d in DOCS]), reranker.predict([(QUERY, d) for d in DOCS]), rtol=1e-5
    )
    with pytest.raises(FileNotFoundError, match="save_pretrained"):
        VerifierReranker.from_pretrained(tmp_path / "nothing")


def test_runs_under_sentence_transformers_reranking_evaluator(reranker):
    from sentence_transformers.cross_encoder.evaluation import CrossEncoderRerankingEvaluator

    samples = [
        {"query": QUERY, "positive": [DOCS[0]], "negative": DOCS[1:]},
        {"query": "dogs bark at mail carriers", "positive": [DOCS[1]], "negative": [DOCS[3], DOCS[2]]},
    ]
    evaluator = CrossEncoderRerankingEvaluator(samples, at_k=3, name="toy", write_csv=False)
    metrics = evaluator(reranker)
    # Recompute NDCG@3 from the reranker's own scores: the evaluator ran our predict.
    from sklearn.metrics import ndcg_score

    expected = np.mean(
        [
            ndcg_score(
                [[1] + [0] * len(s["negative"])],
                [reranker.predict([(s["query"], d) for d in s["positive"] + s["negative"]])],
                k=3,
            )
            for s in samples
        ]
    )
    assert metrics["toy_ndcg@3"] == pytest.approx(expected)
    assert reranker.model_card_data.eval_results[-1]["evaluator"] == "CrossEncoderRerankingEvaluator"
