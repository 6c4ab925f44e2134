"""compsense.verifiers.rerank: a hand-made corpus where pooled cosine ranks wrongly and MaxSim does not,
the fusion weight, K bounds, the corpus caches, and agreement with the retrieval harness."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
import torch
import torch.nn as nn

from compsense.core import stats as S
from compsense.core.layout import results_file
from compsense.figures import rerank as FR
from compsense.retrieval.harness import HARNESS, evaluate
from compsense.verifiers import architectures as V
from compsense.verifiers import rerank as R
from compsense.verifiers.training import verifier_dir

QUIET = R.Compute(show_progress=False)

# Unit word vectors: pooled cosine ranks "w" (the direction of x + y) first for the query "x y",
# while the relevant document holds x and y verbatim among noise tokens z.
WORDS = {
    "x": [1, 0, 0, 0],
    "y": [0, 1, 0, 0],
    "z": [0, 0, 1, 0],
    "w": [1 / math.sqrt(2), 1 / math.sqrt(2), 0, 0],
    "v": [0, 0, 0, 1],
}
CORPUS = {
    "d_rel": {"title": "", "text": "x y z z z z"},  # pooled cos 0.33, MaxSim 1.0
    "d_w": {"title": "", "text": "w"},  # pooled cos 1.0, MaxSim 0.71
    "d_x": {"title": "", "text": "x"},  # pooled cos 0.71, MaxSim 0.5
    "d_y": {"title": "", "text": "y v"},  # pooled cos 0.5, MaxSim 0.5
    "d_z": {"title": "", "text": "z z"},  # pooled cos 0, MaxSim 0
    "d_v": {"title": "", "text": "v"},
}
QUERIES = {"q1": "x y", "q2": "v"}
QRELS = {"q1": {"d_rel": 1}, "q2": {"d_v": 1}}


class WordTokenizer:
    """Whitespace tokens; [PAD] [CLS] [SEP] [UNK] are the special ids 0-3."""

    specials = ["[PAD]", "[CLS]", "[SEP]", "[UNK]"]

    def __init__(self, words):
        self.vocab = self.specials + list(words)
        self.ids = {t: i for i, t in enumerate(self.vocab)}
        self.all_special_ids, self.unk_token_id = [0, 1, 2, 3], 3

    def __len__(self):
        return len(self.vocab)

    def convert_ids_to_tokens(self, ids):
        return [self.vocab[i] for i in ids]

    def __call__(self, texts):
        rows = [[1] + [self.ids.get(t, 3) for t in text.split()] + [2] for text in texts]
        length = max(len(r) for r in rows)
        ids = torch.tensor([r + [0] * (length - len(r)) for r in rows])
        return {"input_ids": ids, "attention_mask": (ids != 0).long()}


class WordEncoder(nn.Module):
    """A SentenceTransformer-shaped encoder whose token vectors are the fixed WORDS (specials are
    zero) and whose sentence embedding is their mean. Counts the texts it encodes."""

    def __init__(self, words=WORDS):
        super().__init__()
        self.tokenizer = WordTokenizer(words)
        weight = torch.zeros(len(self.tokenizer), len(next(iter(words.values()))))
        weight[4:] = torch.tensor(list(words.values()), dtype=torch.float32)
        self.embed = nn.Embedding.from_pretrained(weight, freeze=True)
        self.max_seq_length = 128
        self.texts_encoded = 0

    @property
    def device(self):
        return self.embed.weight.device

    def preprocess(self, texts):
        return self.tokenizer(list(texts))

    def forward(self, features):
        self.texts_encoded += len(features["input_ids"])
        return {**features, "token_embeddings": self.embed(features["input_ids"])}

    def encode(self, texts, convert_to_tensor=True, normalize_embeddings=True, **kwargs):
        features = self.preprocess(texts)
        out = self.forward(features)
        mask = features["attention_mask"][:, :, None].float()
        pooled = (out["token_embeddings"] * mask).sum(1) / mask.sum(1)
        return torch.nn.functional.normalize(pooled, dim=-1) if normalize_embeddings else pooled


@pytest.fixture
def encoder():
    return WordEncoder()


def _ids(ranking):
    return [d for d, _ in ranking]


def test_maxsim_reorders_what_pooled_cosine_ranks_wrongly(encoder, tmp_path):
    reranker = R.Reranker(encoder, CORPUS, tmp_path, dtype="float32")
    pooled = reranker.rerank(None, QUERIES, k=6, weight=1.0)
    assert _ids(pooled["q1"])[:4] == ["d_w", "d_x", "d_y", "d_rel"]
    maxsim = reranker.rerank(V.create("F1"), QUERIES, k=6, weight=0.0)
    assert _ids(maxsim["q1"])[:2] == ["d_rel", "d_w"]
    assert [s for _, s in maxsim["q1"]][:2] == pytest.approx([1.0, 1 / math.sqrt(2)], abs=1e-6)
    # Through the harness: nDCG@10 of q1 goes from rank 4 to rank 1.
    cands = reranker.search(QUERIES, 6)
    before = R.score_result(R.full_rankings(pooled, cands, reranker.doc_ids), QRELS, "toy", len(reranker))
    after = R.score_result(R.full_rankings(maxsim, cands, reranker.doc_ids), QRELS, "toy", len(reranker))
    q1 = lambda res: res.per_query.set_index("qid").loc["q1"]  # noqa: E731
    assert q1(before)["ndcg@10"] == pytest.approx(1 / math.log2(5)) and q1(after)["ndcg@10"] == 1.0


def test_weight_one_reproduces_the_pooled_ranking_and_the_harness(encoder):
    reranker = R.Reranker(encoder, CORPUS)
    cands = reranker.search(QUERIES, 100)
    fused = reranker.rerank(V.create("F1"), QUERIES, k=100, weight=1.0)
    for row, q in enumerate(cands.qids):
        assert _ids(fused[q]) == [reranker.doc_ids[i] for i in cands.indices[row].tolist()]
    # The encoder-only numbers are retrieval.evaluate's.
    result = R.score_result(R.full_rankings(fused, cands, reranker.doc_ids), QRELS, "toy", len(reranker), HARNESS)
    reference = evaluate(encoder, CORPUS, QUERIES, QRELS, show_progress=False)
    assert result.metrics == pytest.approx(reference.metrics)


def test_fusion_is_the_weighted_sum(encoder):
    reranker = R.Reranker(encoder, CORPUS)
    cands = reranker.search(QUERIES, 6)
    f1 = V.create("F1")
    v = reranker.verifier_scores(f1, QUERIES, cands)
    mixed = reranker.rerank(f1, QUERIES, k=6, weight=0.25)
    expected = 0.25 * cands.scores + 0.75 * v
    row = cands.qids.index("q1")
    by_doc = {reranker.doc_ids[i]: float(s) for i, s in zip(cands.indices[row].tolist(), expected[row].tolist())}
    assert dict(mixed["q1"]) == pytest.approx(by_doc)
    with pytest.raises(ValueError, match=r"\[0, 1\]"):
        reranker.rerank(f1, QUERIES, k=6, weight=1.5)


def test_k_bounds_which_candidates_can_move(encoder):
    reranker = R.Reranker(encoder, CORPUS)
    f1 = V.create("F1")
    # d_rel is 4th by pooled cosine: reranking the top 3 cannot reach it, the top 4 can.
    for k, top in ((1, "d_w"), (2, "d_w"), (3, "d_w"), (4, "d_rel")):
        out = reranker.rerank(f1, QUERIES, k=k)
        assert len(out["q1"]) == k and _ids(out["q1"])[0] == top
        assert set(_ids(out["q1"])) == set(_ids(reranker.rerank(None, QUERIES, k=k, weight=1.0)["q1"]))
    assert len(reranker.rerank(f1, QUERIES, k=100)["q1"]) == len(CORPUS)  # capped at the corpus
    for bad in (0, -1, 2.5):
        with pytest.raises(ValueError, match="positive integer"):
            reranker.rerank(f1, QUERIES, k=bad)
    # A deeper first stage sliced to K is the same as searching K.
    deep = reranker.search(QUERIES, 6)
    assert reranker.rerank(f1, QUERIES, k=3, candidates=deep) == reranker.rerank(f1, QUERIES, k=3)


def test_batched_scores_match_verifiers_score_pairs(encoder):
    reranker = R.Reranker(encoder, CORPUS, candidate_batch=4, dtype="float32")
    cands = reranker.search(QUERIES, 6)
    for name in ("F0", "F1", "F2", "F3", "F4"):
        verifier = V.create(name, seed=0)
        scores = reranker.verifier_scores(verifier, QUERIES, cands)
        pairs = [(QUERIES[q], reranker.doc_texts[i]) for q, row in zip(cands.qids, cands.indices.tolist()) for i in row]
        expected = V.score_pairs(encoder, verifier, pairs, batch_size=3)
        np.testing.assert_allclose(scores.reshape(-1).numpy(), expected, atol=1e-5, err_msg=name)


def test_corpus_is_encoded_once_then_read_from_disk(encoder, tmp_path):
    first = R.Reranker(encoder, CORPUS, tmp_path)
    first.rerank(V.create("F1"), QUERIES, k=3)
    assert first.corpus_encoded == 2 * len(CORPUS)  # pooled + tokens
    before = encoder.texts_encoded
    second = R.Reranker(encoder, CORPUS, tmp_path)
    out = second.rerank(V.create("F1"), QUERIES, k=3)
    assert second.corpus_encoded == 0
    assert encoder.texts_encoded - before == 2 * len(QUERIES)  # only the queries: pooled + tokens
    assert out == first.rerank(V.create("F1"), QUERIES, k=3)
    assert sorted(p.name.split("-")[0] for p in tmp_path.rglob("*.safetensors")) == ["pooled", "tokens"]
    assert second.corpus_tokens().values.dtype == torch.float16  # stored half precision by default


def test_cache_key_changes_with_the_encoder_or_the_corpus(encoder, tmp_path):
    R.Reranker(encoder, CORPUS, tmp_path).corpus_tokens()
    files = set(tmp_path.rglob("*.safetensors"))
    more = {**CORPUS, "d_new": {"title": "", "text": "x z"}}
    assert R.Reranker(encoder, more, tmp_path).corpus_encoded == len(more)  # another corpus: encoded afresh
    tuned = WordEncoder()
    with torch.no_grad():
        tuned.embed.weight[4] += 0.1  # a "fine-tuned" encoder must not read the old cache
    changed = R.Reranker(tuned, CORPUS, tmp_path)
    changed.corpus_tokens()
    assert changed.corpus_encoded == 2 * len(CORPUS)
    assert len(set(tmp_path.rglob("*.safetensors")) - files) == 3  # pooled (new corpus), pooled + tokens (tuned)
    key = R.cache_key(encoder, R.Reranker(encoder, CORPUS).doc_texts, False)
    assert key != R.cache_key(tuned, R.Reranker(encoder, CORPUS).doc_texts, False)


def test_float16_cache_barely_moves_scores(encoder, tmp_path):
    cands = R.Reranker(encoder, CORPUS).search(QUERIES, 6)
    half = R.Reranker(encoder, CORPUS, tmp_path / "a", dtype="float16").verifier_scores(V.create("F1"), QUERIES, cands)
    full = R.Reranker(encoder, CORPUS, tmp_path / "b", dtype="float32").verifier_scores(V.create("F1"), QUERIES, cands)
    torch.testing.assert_close(half, full, atol=2e-3, rtol=0)


def test_rerank_function_with_a_real_sentence_transformer(tiny_encoder, tmp_path):
    corpus = {
        f"d{i}": {"title": "", "text": t}
        for i, t in enumerate(
            ["A dog bites a man.", "A man bites a dog.", "The cat is not on the mat.", "The cat is on the mat."]
        )
    }
    queries = {"q": "Did the dog bite the man?"}
    for name in V.NAMES:
        out = R.rerank(tiny_encoder, V.create(name, seed=0), corpus, queries, k=3, cache_dir=tmp_path)
        assert len(out["q"]) == 3 and all(math.isfinite(s) for _, s in out["q"])
        scores = [s for _, s in out["q"]]
        assert scores == sorted(scores, reverse=True)


def test_find_methods_falls_back_to_training_free_verifiers(encoder, tmp_path):
    methods, notes = R.find_methods(tmp_path, V.NAMES, ["frozen", "end2end"], encoder)
    assert [m.label for m in methods] == ["F0-frozen", "F1-frozen", "F2-frozen"]
    assert all(m.source.startswith("training-free") and m.encoder is encoder for m in methods)
    assert sum("04_verifiers" in n for n in notes) == 7  # F3/F4 frozen, all five end2end
    with pytest.raises(FileNotFoundError, match="04_verifiers"):
        R.find_methods(tmp_path, ["F3"], ["frozen"], encoder)
    V.save(V.create("F3", seed=0), verifier_dir(tmp_path, "balanced-paper", 43, "F3-frozen"))
    with pytest.raises(FileNotFoundError, match="04_verifiers"):  # another variant's or seed's folder
        R.find_methods(tmp_path, ["F3"], ["frozen"], encoder, variant="balanced-paper", seed=42)
    methods, _ = R.find_methods(tmp_path, ["F3"], ["frozen"], encoder, variant="balanced-paper", seed=43)
    assert methods[0].source == "notebook 04" and methods[0].verifier.name == "F3"


def test_grid_tables_bootstrap_and_figures(encoder, tmp_path):
    from compsense.data.datasets import BeirDataset

    ds = BeirDataset("toy", CORPUS, QUERIES, QRELS, "test")
    methods, _ = R.find_methods(tmp_path, ["F0", "F1"], ["frozen"], encoder)
    grid = R.rerank_grid(
        [ds],
        {"base": encoder},
        methods,
        tmp_path,
        "fake",
        42,
        plan=R.RerankPlan(ks=[2, 4], weights=[0.0, 1.0], cost_queries=2),
        compute=R.Compute(show_progress=False),
    )
    res = grid.results
    assert set(R.RERANK_KEY) <= set(res.columns) and results_file(tmp_path, "rerank.parquet").exists()
    ndcg = res[res.metric == "ndcg@10"].set_index(["variant", "k", "weight"]).value
    assert ndcg[("F1-frozen", 4, 0.0)] > ndcg[("base", 100, 1.0)]
    assert ndcg[("F1-frozen", 4, 1.0)] == pytest.approx(ndcg[("base", 100, 1.0)])  # w = 1: the pooled ranking
    recall = res[res.metric == "recall@100"]
    assert recall.value.nunique() == 1  # reranking the top-K never changes recall@100
    assert set(res[res.verifier == "none"].harness) == {HARNESS}
    boot = R.bootstrap_vs_baseline(grid.per_query, n=200)
    assert len(boot) == 2 * 2 * 2 and boot.ci_low.le(boot.mean_delta).all()
    assert (boot.p_holm >= boot.p_value).all() and (boot.p_holm <= 1).all()  # Holm over the table's 8 tests
    # 200 resamples asked, but Holm over 8 tests needs more to reach 0.005: the table can say "significant"
    assert (boot.n_resamples > 200).all() and (boot.p_floor_holm <= 0.005).all()
    cost = R.cost_table(grid.cost)
    assert {"first_stage_ms", "rerank_ms@2", "rerank_ms@4", "token_cache_mb"} <= set(cost.columns)
    assert (cost.set_index("variant").loc["F1-frozen", "token_cache_mb"]) > 0
    separation = pd.DataFrame(
        {
            "dataset": "negatives-heldout",
            "family": "all",
            "metric": "auc",
            "variant": ["cosine Base", "F0-frozen", "F1-frozen", "F1-frozen"],
            "seed": [42, 42, 42, 43],
            "value": [0.5, 0.55, 0.7, 0.9],
        }
    )
    table = R.tradeoff_table(res, separation)
    assert set(table.label) == {"base", "F0-frozen", "F1-frozen"}
    f1 = table.set_index("label").loc["F1-frozen"]
    assert (f1.auc, f1.seeds) == (pytest.approx(0.8), 2) and f1.auc_std == pytest.approx(0.1414, abs=1e-4)
    assert f1.value == pytest.approx(ndcg[("F1-frozen", 4, 0.0)])  # the reranked nDCG@10 at the largest K
    fig = FR.figure_tradeoff(table)
    assert any(t.error_x is not None and t.error_x.array is not None for t in fig.data)  # seeds' std as error bars
    assert table.set_index("label").kind.to_dict() == {"base": "pooled", "F0-frozen": "frozen", "F1-frozen": "frozen"}
    for fig in (FR.figure_rerank(res), FR.figure_k_sweep(res), FR.figure_tradeoff(table)):
        assert fig.data
    # a table of one seed each and no std column (an older notebook-05 output) still draws, to AUC 0.9
    one_seed = table.drop(columns=["auc_std", "verifier"])
    wide = FR.figure_tradeoff(
        one_seed.assign(auc=one_seed.label.map({"base": 0.5, "F0-frozen": 0.55, "F1-frozen": 0.9}))
    )
    assert wide.layout.xaxis.range[1] == pytest.approx(0.93)


def test_find_methods_notes_a_frozen_verifier_trained_on_another_encoder(encoder, tiny_encoder, tmp_path):
    from compsense.verifiers.simmap import encoder_fingerprint

    folder = verifier_dir(tmp_path, "identity-small", 42, "F3-frozen")
    V.save(V.create("F3", seed=0), folder, extra={"settings": {"encoder": encoder_fingerprint(encoder)[:16]}})
    _, notes = R.find_methods(tmp_path, ["F3"], ["frozen"], encoder)
    assert not any("another encoder" in n for n in notes)
    methods, notes = R.find_methods(tmp_path, ["F3"], ["frozen"], tiny_encoder)
    assert methods[0].label == "F3-frozen"  # still offered, with a note that names the fix
    assert any("another encoder" in n and "04_verifiers" in n for n in notes)


def test_grid_reranks_with_each_verifier_seed_and_the_bootstrap_covers_seeds(encoder, tmp_path):
    from compsense.data.datasets import BeirDataset

    ds = BeirDataset("toy", CORPUS, QUERIES, QRELS, "test")
    for s in (42, 43):  # an F3 per seed, different weights: the seeds must rank differently somewhere
        V.save(V.create("F3", seed=s), verifier_dir(tmp_path, "model_b-small", s, "F3-frozen"))
    methods, notes = R.find_methods(tmp_path, ["F1", "F3"], ["frozen"], encoder, variant="model_b-small", seed=[42, 43])
    assert [(m.label, m.seed) for m in methods] == [
        ("F1-frozen", 42),
        ("F3-frozen", 42),
        ("F1-frozen", 43),
        ("F3-frozen", 43),
    ]
    grid = R.rerank_grid(
        [ds], {"base": encoder}, methods, tmp_path, "fake", 42, R.RerankPlan(ks=[4], cost_queries=2), QUIET
    )
    res = grid.results
    seeds = res[res.metric == "ndcg@10"].groupby("variant").seed.unique().map(sorted).to_dict()
    assert seeds == {"base": [42], "F1-frozen": [42, 43], "F3-frozen": [42, 43]}  # Base once, at the grid's seed
    assert len(grid.cost[grid.cost.variant == "F3-frozen"]) == 1  # cost is the method's: timed once, not per seed
    boot = R.bootstrap_vs_baseline(grid.per_query, n=200).set_index("variant")
    assert boot.n_seeds.to_dict() == {"F1-frozen": 2, "F3-frozen": 2}
    per_seed = grid.per_query[grid.per_query.variant == "F3-frozen"].groupby("seed")["ndcg@10"].mean()
    base = grid.per_query[grid.per_query.variant == "base"]["ndcg@10"].mean()
    assert boot.loc["F3-frozen", "mean_delta"] == pytest.approx(per_seed.mean() - base)
    answer = R.rerank_summary(res).set_index("variant")
    assert answer.loc["F3-frozen", "K=4"] == pytest.approx(
        res[(res.variant == "F3-frozen") & (res.metric == "ndcg@10")].value.mean()
    )


def test_several_notebook04_variants_are_separate_methods_through_every_table(encoder, tmp_path):
    from compsense.data.datasets import BeirDataset
    from scripts import load_script

    readme_tables = load_script("readme_tables")

    ds = BeirDataset("toy", CORPUS, QUERIES, QRELS, "test")
    V.save(V.create("F3", seed=1), verifier_dir(tmp_path, "model_b-small", 42, "F3-frozen"))
    V.save(V.create("F3", seed=2), verifier_dir(tmp_path, "balanced-small", 42, "F3-frozen"))
    V.save(V.create("F4", seed=3, size="paper"), verifier_dir(tmp_path, "balanced-paper", 42, "F4-frozen"))
    for folder in ("model_b-small", "balanced-small"):  # notebook 04 saves F1 frozen under each variant
        V.save(V.create("F1"), verifier_dir(tmp_path, folder, 42, "F1-frozen"))
    variants = ["model_b-small", "balanced-small", "balanced-paper"]
    methods, notes = R.find_methods(tmp_path, ["F1", "F3", "F4"], ["frozen"], encoder, variant=variants, seed=42)
    # F1 (no parameters) is reranked once, under the first variant; each trained verifier is its variant's.
    assert [(m.label, m.verifier_variant, m.source[:8]) for m in methods] == [
        ("F1-frozen@model_b-small", "model_b-small", "notebook"),
        ("F3-frozen@model_b-small", "model_b-small", "notebook"),
        ("F3-frozen@balanced-small", "balanced-small", "notebook"),
        ("F4-frozen@balanced-paper", "balanced-paper", "notebook"),
    ]
    assert sum("left out" in n for n in notes) == 4  # F4 of two small variants, F1 and F3 of the paper one
    assert any(n.startswith("F1-frozen@balanced-small: no parameters") for n in notes)
    methods_alone, _ = R.find_methods(tmp_path, ["F1"], ["frozen"], encoder, variant="balanced-small")
    assert [m.source for m in methods_alone] == ["notebook 04"]  # first (only) variant: reranked
    methods_fallback, _ = R.find_methods(tmp_path, ["F0"], ["frozen"], encoder, variant=variants)
    assert [m.label for m in methods_fallback] == ["F0-frozen@model_b-small"]  # a stand-in under the first only
    with pytest.raises(ValueError, match="folder names"):
        R.find_methods(tmp_path, ["F3"], ["frozen"], encoder, variant=["model_b-small", ""])
    grid = R.rerank_grid(
        [ds], {"base": encoder}, methods, tmp_path, "fake", 42, R.RerankPlan(ks=[4], cost_queries=1), QUIET
    )
    res = grid.results
    folders = res[res.metric == "ndcg@10"].set_index("variant").verifier_variant.to_dict()
    assert folders == {
        "base": "",
        "F1-frozen@model_b-small": "model_b-small",
        "F3-frozen@model_b-small": "model_b-small",
        "F3-frozen@balanced-small": "balanced-small",
        "F4-frozen@balanced-paper": "balanced-paper",
    }
    boot = R.bootstrap_vs_baseline(grid.per_query, n=100).set_index("variant")
    assert boot.loc["F3-frozen@balanced-small", "verifier_variant"] == "balanced-small"
    separation = pd.DataFrame(
        {
            "dataset": "negatives-heldout",
            "family": "all",
            "metric": "auc",
            "variant": ["cosine Base", "F3-frozen", "F3-frozen", "F3-frozen", "F4-frozen"],
            "verifier_variant": [None, "model_b-small", "balanced-small", "identity-small", "balanced-paper"],
            "seed": 42,
            "value": [0.5, 0.1, 0.3, 0.9, 0.4],
        }
    )
    table = R.tradeoff_table(res, separation).set_index("label")
    # Each variant's AUC beside its own rerank; a variant not reranked here (identity-small) is not read.
    assert table.auc.to_dict() == {
        "base": 0.5,
        "F3-frozen@balanced-small": 0.3,
        "F3-frozen@model_b-small": 0.1,
        "F4-frozen@balanced-paper": 0.4,
    }
    assert table.loc["F4-frozen@balanced-paper", "kind"] == "frozen"
    assert table.loc["F3-frozen@balanced-small", "value"] == pytest.approx(
        res[(res.variant == "F3-frozen@balanced-small") & (res.metric == "ndcg@10")].value.mean()
    )
    with pytest.raises(ValueError, match="several notebook-04 variants"):  # results that cannot say which
        R.tradeoff_table(res.drop(columns="verifier_variant"), separation)
    assert table.verifier.to_dict() == {
        "base": "",
        "F3-frozen@balanced-small": "F3",
        "F3-frozen@model_b-small": "F3",
        "F4-frozen@balanced-paper": "F4",
    }
    fig = FR.figure_tradeoff(table.reset_index())
    # colour = verifier, symbol = variant; the pooled Base is a line named in the legend, not a point
    points = {t.name for t in fig.data if t.mode == "markers"}
    assert points == {"F3, model_b-small", "F3, balanced-small", "F4, balanced-paper"}
    base = ("Base encoder only (AUC 0.50)", table.loc["base", "value"])
    assert [(t.name, t.y[0]) for t in fig.data if t.mode == "lines"] == [base]
    bars = FR.figure_rerank(res)
    assert {t.name for t in bars.data if t.type == "bar"} == {
        "frozen, model_b-small",
        "frozen, balanced-small",
        "frozen, balanced-paper",
    }
    # the encoder alone is a legend line, not text on the plot; the y axis fits the bars and that line
    assert [t.name for t in bars.data if t.type == "scatter"] == ["Base encoder only (0.715)"]
    low, high = bars.layout.yaxis.range
    assert 0 < low < min(min(t.y) for t in bars.data if t.type == "bar") and high > 0.715
    answer = R.rerank_answer(res, R.bootstrap_vs_baseline(grid.per_query, n=100))
    assert answer.variant.tolist() == [
        "base",
        "F1-frozen@model_b-small",
        "F3-frozen@model_b-small",
        "F3-frozen@balanced-small",
        "F4-frozen@balanced-paper",
    ]
    markdown = readme_tables.rerank(answer)
    assert "| F3 CNN (balanced, small) | frozen |" in markdown and "| F4 Transformer (balanced, paper) |" in markdown
    one = R.rerank_answer(res[res.verifier_variant.isin(["", "model_b-small"])])
    assert "(model_b, small)" not in readme_tables.rerank(one)  # one variant: labels as before


def test_results_written_before_variants_were_recorded_are_set_aside_not_mixed(encoder, tmp_path, caplog):
    from compsense.data.datasets import BeirDataset

    ds = BeirDataset("toy", CORPUS, QUERIES, QRELS, "test")
    results = results_file(tmp_path, "rerank").parent  # notebook 05's tables: results/05/
    old = pd.DataFrame({"variant": ["F1-frozen"], "verifier": ["F1"], "metric": ["ndcg@10"], "value": [0.5]})
    old.to_parquet(results / "rerank.parquet")
    (results / "rerank.before-variants1.parquet").write_bytes(b"an earlier copy")
    methods, _ = R.find_methods(tmp_path, ["F1"], ["frozen"], encoder, variant="model_b-small")
    with caplog.at_level("WARNING"):
        R.rerank_grid(
            [ds], {"base": encoder}, methods, tmp_path, "fake", 42, R.RerankPlan(ks=[4], cost_queries=1), QUIET
        )
    aside = results / "rerank.before-variants2.parquet"
    assert pd.read_parquet(aside).equals(old) and str(aside) in caplog.text  # kept, named, never overwritten
    assert (results / "rerank.before-variants1.parquet").read_bytes() == b"an earlier copy"
    new = pd.read_parquet(results / "rerank.parquet")
    assert new.verifier_variant.notna().all() and set(new.variant) == {"base", "F1-frozen"}
    assert R.set_aside_unlabelled(results / "rerank.parquet") is None  # a table with the column stays


def test_seed_bootstrap_is_hierarchical_and_refuses_a_seed_missing_queries():
    qids = [f"q{i}" for i in range(30)]
    rng = np.random.default_rng(0)
    base = pd.DataFrame({"dataset": "d", "qid": qids, "ndcg@10": rng.uniform(0, 1, 30)})

    def method(seed, shift):
        rows = base.assign(**{"ndcg@10": base["ndcg@10"] + shift + rng.normal(0, 0.01, 30)})
        return rows.assign(seed=seed)

    deltas = R._seed_deltas(base, pd.concat([method(1, 0.1), method(2, 0.3)]), "ndcg@10")
    assert deltas.shape == (2, 30) and deltas[0].mean() == pytest.approx(0.1, abs=0.01)
    per_query = pd.concat(
        [
            base.assign(variant="base", verifier="none", regime=R.ENCODER_ONLY, k=100, weight=1.0, seed=42),
            *(
                m.assign(variant="F4-frozen", verifier="F4", regime="frozen", k=10, weight=0.0)
                for m in (method(1, 0.1), method(2, 0.3))
            ),
        ]
    )
    row = R.bootstrap_vs_baseline(per_query, n=2000).iloc[0]
    assert row.n_seeds == 2 and row.mean_delta == pytest.approx(0.2, abs=0.01)
    # two seeds 0.2 apart: the interval spans the seeds' spread, far wider than the queries' noise alone
    assert row.ci_low < 0.12 and row.ci_high > 0.28
    with pytest.raises(ValueError, match="same queries"):
        R._seed_deltas(base, pd.concat([method(1, 0.1), method(2, 0.3).iloc[:-1]]), "ndcg@10")
    # a query no seed reranked, which the baseline has: an error, not a design one query smaller
    with pytest.raises(ValueError, match="same queries.*'q29'"):
        R._seed_deltas(base, pd.concat([method(1, 0.1).iloc[:-1], method(2, 0.3).iloc[:-1]]), "ndcg@10")


def test_regime_rank_puts_frozen_before_end2end_and_unknown_last():
    ranks = R.regime_rank(pd.Series(["end2end", None, "frozen", "later"]))
    assert ranks.tolist() == [1.0, 2.0, 0.0, 2.0]
    rows = pd.DataFrame({"regime": ["end2end", "frozen"], "v": [1, 2]})
    assert rows.sort_values("regime", key=R.regime_rank).v.tolist() == [2, 1]


def test_the_noise_control_reranks_at_notebook_04s_sigma_and_draws_a_line_on_the_tradeoff(encoder, tmp_path):
    from compsense.data.datasets import BeirDataset

    ds = BeirDataset("toy", CORPUS, QUERIES, QRELS, "test")
    methods, _ = R.find_methods(tmp_path, ["F1"], ["frozen"], encoder, variant="model_b-small")
    assert R.noise_methods(methods, tmp_path)[0] == []  # no notebook 04 yet: nothing, with a note
    sep = []
    for variant, auc, sigma in [
        ("F1-frozen", 0.1, None),
        ("F1-frozen+noise1x", 0.3, 0.05),
        ("F1-frozen+noise4x", 0.45, 5.0),
    ]:
        for dataset in ("negatives-heldout",):
            sep.append(dict(variant=variant, dataset=dataset, family="all", metric="auc", value=auc, seed=42,
                            verifier_variant="model_b-small", noise_sigma=sigma))  # fmt: skip
    separation = pd.DataFrame(sep)
    (tmp_path / "results").mkdir(exist_ok=True)
    separation.to_parquet(results_file(tmp_path, "verifiers.parquet"))
    noisy, notes = R.noise_methods(methods, tmp_path, "model_b-small")
    assert [(m.label, m.noise_sigma, m.seed) for m in noisy] == [
        ("F1-frozen+noise1x", 0.05, 42),
        ("F1-frozen+noise4x", 5.0, 42),
    ] and not notes

    def run():
        return R.rerank_grid(
            [ds], {"base": encoder}, methods + noisy, tmp_path, "fake", 42, R.RerankPlan(ks=[4], cost_queries=1), QUIET
        ).results

    res = run()
    ndcg = res[res.metric == "ndcg@10"].set_index("variant").value
    assert ndcg["F1-frozen"] == pytest.approx(1.0)  # MaxSim puts d_rel first
    assert ndcg["F1-frozen+noise4x"] < ndcg["F1-frozen"]  # noise far above the scores' spread reorders
    again = run()
    pd.testing.assert_series_equal(res.value, again.value)  # seeded: the same noise for the same pair
    table = R.tradeoff_table(res, separation)
    assert set(table[table.kind == "noise"].label) == {"F1-frozen+noise1x", "F1-frozen+noise4x"}
    line = R.tradeoff_noise_line(table)
    assert line.multiple.tolist() == [0.0, 1.0, 4.0] and line.auc.tolist() == [0.1, 0.3, 0.45]
    fig = FR.figure_tradeoff(table)
    drawn = [t for t in fig.data if t.name == "noise control: frozen MaxSim + noise"]
    assert len(drawn) == 1 and list(drawn[0].x) == [0.1, 0.3, 0.45]
    assert not any(t.name and "noise" in str(t.name) and t.mode == "markers" for t in fig.data)  # not a point


def test_the_noise_control_is_holm_corrected_in_a_family_of_its_own():
    rng = np.random.default_rng(0)
    base = pd.DataFrame({"dataset": "toy", "qid": [f"q{i}" for i in range(40)], "ndcg@10": rng.uniform(0.2, 0.8, 40)})
    rows = [base.assign(variant="base", verifier="none", regime=R.ENCODER_ONLY, k=100, weight=1.0)]
    labels = ["F3-frozen", "F4-frozen", "F1-frozen+noise1x", "F1-frozen+noise2x@model_b-small"]
    for i, label in enumerate(labels):
        shifted = base["ndcg@10"] + 0.02 * (i + 1) + rng.normal(0, 0.05, 40)
        name, regime = ("F1", "frozen") if "noise" in label else (label[:2], "frozen")
        rows.append(base.assign(**{"ndcg@10": shifted}, variant=label, verifier=name, regime=regime, k=10, weight=0.0))
    boot = R.bootstrap_vs_baseline(pd.concat(rows), n=500).set_index("variant")
    for family in (labels[:2], labels[2:]):
        part = boot.loc[family]
        assert np.allclose(part.p_holm, np.minimum(S.holm(part.p_value), 1.0))  # two tests per family, not four
        assert set(part.p_floor_holm) == {S.holm_floor(2, int(part.n_resamples.iloc[0]))}


def test_figure_2_shows_the_spread_over_verifier_seeds():
    rows = [
        dict(
            variant=f"{v}-frozen",
            verifier=v,
            regime="frozen",
            k=10,
            weight=0.0,
            metric="ndcg@10",
            dataset="d",
            seed=s,
            value=x,
        )
        for v, values in (("F1", (0.70, 0.72)), ("F3", (0.74, 0.80)))
        for s, x in zip((42, 43), values)
    ]
    rows.append(
        dict(
            variant="base",
            verifier="none",
            regime=R.ENCODER_ONLY,
            k=100,
            weight=1.0,
            metric="ndcg@10",
            dataset="d",
            seed=42,
            value=0.71,
        )
    )
    fig = FR.figure_rerank(pd.DataFrame(rows))
    (bar,) = [t for t in fig.data if t.type == "bar"]
    assert list(bar.y) == pytest.approx([0.71, 0.77])
    assert list(bar.error_y.array) == pytest.approx([np.std([0.70, 0.72], ddof=1), np.std([0.74, 0.80], ddof=1)])


def test_figure_2_leaves_the_noise_control_out_of_f1s_bar():
    # the noise control's rows carry F1's name and regime: averaged in, they pulled F1's bar from its
    # own 0.78 to 0.41 in a local run
    rows = [
        dict(variant=f"{name}@model_b-small", verifier="F1", regime="frozen", k=100, weight=0.0, metric="ndcg@10",
             dataset="d", seed=42, value=value, verifier_variant="model_b-small")
        for name, value in (("F1-frozen", 0.78), ("F1-frozen+noise1x", 0.50), ("F1-frozen+noise4x", 0.10))
    ]  # fmt: skip
    assert R.is_noise_control(pd.Series([r["variant"] for r in rows])).tolist() == [False, True, True]
    (bar,) = [t for t in FR.figure_rerank(pd.DataFrame(rows)).data if t.type == "bar"]
    assert list(bar.y) == pytest.approx([0.78])


def test_describe_cache_sums_megabytes_by_kind(tmp_path):
    (tmp_path / "scifact" / "seed42").mkdir(parents=True)
    (tmp_path / "pooled-base.safetensors").write_bytes(b"\0" * 2**19)  # 0.5 MB of pooled vectors
    (tmp_path / "scifact" / "seed42" / "tokens-base.safetensors").write_bytes(b"\0" * 2**20)
    (tmp_path / "scifact" / "pooled-A.safetensors").write_bytes(b"\0" * 2**18)
    (tmp_path / "scifact" / "notes.json").write_text("{}")  # not a cache file: not counted
    assert R.describe_cache(tmp_path) == {"pooled": 0.75, "tokens": 1.0}
    assert R.describe_cache(tmp_path / "absent") == {"pooled": 0.0, "tokens": 0.0}
