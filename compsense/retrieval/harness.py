"""Retrieval evaluation: one exact-cosine harness for every number compsense reports.

Why our own and not BEIR's or sentence-transformers' evaluator: we need per-query values (for the
paired bootstrap of B - A), the same code on SciFact, NanoBEIR and any BEIR folder, and a name for
the harness written next to every number so tables from different harnesses are never mixed.
The metrics agree with sentence-transformers' `InformationRetrievalEvaluator` (tests check it):
exact search over L2-normalised embeddings, ties broken by the smaller document id.

Also here: the paired bootstrap over queries, the paper's Table 1 as data, and `table1`, which
puts our mean +- std over seeds beside the paper's numbers.
"""

from __future__ import annotations

import dataclasses
import logging
import math
import os
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd
import scipy.stats
import torch
from tqdm.auto import tqdm

from compsense.core.encoders import encode_pooled, load_encoder, quiet_transformers
from compsense.core.layout import results_file
from compsense.core.stats import hierarchical_bootstrap, holm, holm_floor, paired_deltas, seed_level_test
from compsense.core.storage import append_results, read_table, stamp_commit, tidy, write_table
from compsense.data import datasets as data
from compsense.data.datasets import document_text
from compsense.retrieval.regime import overlap, read_training_keys

log = logging.getLogger(__name__)

HARNESS = "compsense.retrieval.harness exact-cosine v1"
METRICS = ("ndcg@10", "acc@1", "mrr@10", "recall@100")
MAX_K = 100

# Ralev et al. 2026, Table 1: mean NanoBEIR (13 sets) nDCG@10 and Acc@1, mean over seeds 42/43/44.
PAPER_TABLE1 = pd.DataFrame(
    [
        ("minilm-l6", "ndcg@10", 0.439, 0.401),
        ("minilm-l12", "ndcg@10", 0.467, 0.424),
        ("gte-small", "ndcg@10", 0.481, 0.442),
        ("gte-modernbert-base", "ndcg@10", 0.543, 0.324),
        ("minilm-l6", "acc@1", 0.393, 0.346),
        ("minilm-l12", "acc@1", 0.424, 0.369),
        ("gte-small", "acc@1", 0.444, 0.389),
        ("gte-modernbert-base", "acc@1", 0.493, 0.275),
    ],
    columns=["backbone", "metric", "paper_A", "paper_B"],
)


@dataclass
class RetrievalResult:
    """Mean metrics and per-query values of one encoder on one dataset, with the harness named."""

    name: str
    metrics: dict[str, float]
    per_query: pd.DataFrame  # qid + one column per metric
    n_docs: int = 0
    harness: str = HARNESS
    extra: dict = field(default_factory=dict)

    @property
    def n_queries(self) -> int:
        return len(self.per_query)

    def to_tidy(self, **labels) -> pd.DataFrame:
        """One row per metric: run/backbone/variant/seed from `labels`, dataset = this result's name."""
        rows = [{"dataset": self.name, "metric": m, "value": float(v)} for m, v in self.metrics.items()]
        return tidy(rows, **labels, harness=self.harness, n_queries=self.n_queries, n_docs=self.n_docs)

    def per_query_table(self, **labels) -> pd.DataFrame:
        """The per-query values with `labels` and the dataset name as leading columns."""
        df = self.per_query.copy()
        df.insert(0, "dataset", self.name)
        for i, (k, v) in enumerate(labels.items()):
            df.insert(i, k, v)
        return df


# ---------------------------------------------------------------------------------------------
# Ranking and metrics (separate from encoding, so both are testable on given inputs)


def top_k(query_emb, doc_emb, k: int = MAX_K, query_chunk: int = 256, doc_chunk: int = 32768):
    """Exact top-k by dot product (cosine for normalised rows), as (scores, indices) tensors.

    Memory stays at query_chunk x (k + doc_chunk) whatever the corpus size. Ties go to the smaller
    document index: a stable descending sort over [best so far, next chunk] keeps earlier indices
    first, the order sentence-transformers' evaluator uses when documents are sorted by id.
    """
    k = min(k, doc_emb.shape[0])
    all_scores, all_idx = [], []
    for qs in range(0, query_emb.shape[0], query_chunk):
        q = query_emb[qs : qs + query_chunk]
        best_s = torch.empty((q.shape[0], 0), dtype=q.dtype, device=q.device)
        best_i = torch.empty((q.shape[0], 0), dtype=torch.long, device=q.device)
        for ds in range(0, doc_emb.shape[0], doc_chunk):
            s = q @ doc_emb[ds : ds + doc_chunk].T
            i = torch.arange(ds, ds + s.shape[1], device=q.device).expand(q.shape[0], -1)
            s, i = torch.cat([best_s, s], 1), torch.cat([best_i, i], 1)
            order = torch.sort(s, dim=1, descending=True, stable=True).indices[:, :k]
            best_s, best_i = s.gather(1, order), i.gather(1, order)
        all_scores.append(best_s.cpu())
        all_idx.append(best_i.cpu())
    return torch.cat(all_scores), torch.cat(all_idx)


def query_metrics(ranked_doc_ids: list[str], relevant: dict[str, int]) -> dict[str, float]:
    """nDCG@10 (graded gain = relevance, as trec_eval), Acc@1, MRR@10 and Recall@100 of one ranking."""
    relevant = {d: r for d, r in relevant.items() if r > 0}
    if not relevant:
        raise ValueError("query_metrics: the query has no relevant document (relevance > 0)")
    gains = [relevant.get(d, 0) for d in ranked_doc_ids[:MAX_K]]
    dcg = sum(g / math.log2(i + 2) for i, g in enumerate(gains[:10]))
    ideal = sum(g / math.log2(i + 2) for i, g in enumerate(sorted(relevant.values(), reverse=True)[:10]))
    first_hit = next((i for i, g in enumerate(gains[:10]) if g > 0), None)
    return {
        "ndcg@10": dcg / ideal,
        "acc@1": float(bool(gains) and gains[0] > 0),
        "mrr@10": 0.0 if first_hit is None else 1.0 / (first_hit + 1),
        "recall@100": sum(g > 0 for g in gains) / len(relevant),
    }


def score_rankings(rankings: dict[str, list[str]], qrels: dict[str, dict[str, int]]) -> pd.DataFrame:
    """Per-query metrics (qid + METRICS columns) for rankings of the queries in `qrels`."""
    rows = []
    for qid, rel in qrels.items():
        if qid not in rankings:
            raise KeyError(f"score_rankings: no ranking for query {qid!r}; rank every query that has qrels")
        rows.append({"qid": qid, **query_metrics(rankings[qid], rel)})
    return pd.DataFrame(rows, columns=["qid", *METRICS])


# ---------------------------------------------------------------------------------------------
# Encoding + evaluation


def evaluate(
    encoder,
    corpus: dict[str, dict],
    queries: dict[str, str],
    qrels: dict[str, dict[str, int]],
    batch_size: int = 64,
    name: str = "",
    show_progress: bool = True,
) -> RetrievalResult:
    """Encode, search exactly, score. Queries are those in `qrels` with a relevant document.

    `corpus` maps doc id -> {"title", "text"} (text = title + " " + text); `encoder` is anything
    with a sentence-transformers-like `encode` (a SentenceTransformer, or a fake in tests).
    """
    qrels = {q: {d: r for d, r in rel.items() if r > 0} for q, rel in qrels.items()}
    qrels = {q: rel for q, rel in qrels.items() if rel}
    missing = [q for q in qrels if q not in queries]
    if missing:
        raise KeyError(
            f"evaluate({name!r}): {len(missing)} qrels queries (first {missing[0]!r}) have no "
            "query text; pass the queries of the same split"
        )
    if not qrels or not corpus:
        raise ValueError(
            f"evaluate({name!r}): nothing to evaluate ({len(qrels)} judged queries, {len(corpus)} documents)"
        )
    absent = sorted({d for rel in qrels.values() for d in rel if d not in corpus})
    if absent:
        raise ValueError(
            f"evaluate({name!r}): {len(absent)} relevant document(s) named by the qrels are not in "
            f"the corpus (first {absent[0]!r}); they would count as misses. Load qrels and corpus "
            "of the same dataset (compsense.data.datasets.load_beir drops and counts such qrels)"
        )
    doc_ids = sorted(corpus)  # ties then go to the smaller id, as in sentence-transformers' evaluator
    doc_texts = [document_text(corpus[d]) for d in doc_ids]
    qids = list(qrels)
    q_emb = encode_pooled(encoder, [queries[q] for q in qids], "query", batch_size, show_progress)
    d_emb = encode_pooled(encoder, doc_texts, "document", batch_size, show_progress).to(q_emb.device)
    _, idx = top_k(q_emb, d_emb, MAX_K)
    rankings = {q: [doc_ids[i] for i in row] for q, row in zip(qids, idx.tolist())}
    per_query = score_rankings(rankings, qrels)
    metrics = {m: float(per_query[m].mean()) for m in METRICS}
    return RetrievalResult(name=name, metrics=metrics, per_query=per_query, n_docs=len(doc_ids))


def evaluate_dataset(encoder, dataset, batch_size: int = 64, show_progress: bool = True) -> RetrievalResult:
    """`evaluate` on a `compsense.data.datasets.BeirDataset`, named after it."""
    return evaluate(
        encoder,
        dataset.corpus,
        dataset.queries,
        dataset.qrels,
        batch_size=batch_size,
        name=dataset.name,
        show_progress=show_progress,
    )


# ---------------------------------------------------------------------------------------------
# Evaluation datasets


def subsample(dataset, max_queries: int | None, extra_docs: int = 300, seed: int = 0):
    """A smaller copy of a BeirDataset: `max_queries` random judged queries, all their relevant
    documents, plus `extra_docs` random other documents as distractors (the smoke profile's eval).

    Metrics on a subsample are not comparable with full-corpus ones; the name says so ("@q<n>").
    """
    if max_queries is None or max_queries >= len(dataset.qrels):
        return dataset
    rng = np.random.default_rng(seed)
    qids = sorted(dataset.qrels)
    keep_q = sorted(rng.choice(len(qids), size=max_queries, replace=False).tolist())
    qids = [qids[i] for i in keep_q]
    relevant = {d for q in qids for d in dataset.qrels[q] if d in dataset.corpus}
    others = sorted(set(dataset.corpus) - relevant)
    n_extra = min(extra_docs, len(others))
    distractors = {others[i] for i in rng.choice(len(others), size=n_extra, replace=False).tolist()}
    keep_docs = relevant | distractors
    changes = dict(
        name=f"{dataset.name}@q{max_queries}",
        corpus={d: v for d, v in dataset.corpus.items() if d in keep_docs},
        queries={q: dataset.queries[q] for q in qids},
        qrels={q: dict(dataset.qrels[q]) for q in qids},
    )
    return dataclasses.replace(dataset, **changes)


def is_nanobeir(name) -> bool:
    """Whether `load_eval_datasets` reads `name` as a NanoBEIR set rather than a BEIR folder."""
    key = str(name).lower()
    return key.startswith("nanobeir:") or (key.startswith("nano") and "/" not in key)


def load_eval_datasets(
    names: list[str],
    data_dir=None,
    split: str = "test",
    max_queries: int | None = None,
    extra_docs: int = 300,
    seed: int = 0,
    nanobeir_dataset_id: str = "sentence-transformers/NanoBEIR-en",
) -> list:
    """Each name is a NanoBEIR set ("NanoSciFact", "nanobeir:scifact", read from `nanobeir_dataset_id`
    on the hub unless a local copy exists under `<data folder>/nanobeir`) or a BEIR folder name/path
    ("scifact" under the data folder); `max_queries` subsamples (see `subsample`). Each dataset's
    `source` says where it came from."""
    out = []
    for name in names:
        key = str(name)
        if is_nanobeir(key):
            ds = data.load_nanobeir(key.split(":", 1)[-1], dataset_id=nanobeir_dataset_id, data_dir=data_dir)
        else:
            ds = data.load_beir(key, split=split, data_dir=data_dir)
        out.append(subsample(ds, max_queries, extra_docs=extra_docs, seed=seed))
        log.info("eval dataset %s: %d queries, %d docs", out[-1].name, len(out[-1].qrels), len(out[-1].corpus))
    return out


def evaluate_runs(
    runs: pd.DataFrame,
    datasets: list,
    work_dir: str | os.PathLike,
    device: str | None = None,
    batch_size: int = 64,
    max_seq_length: int | None = 128,
    force: bool = False,
    show_progress: bool = False,
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Evaluate every model in `runs` (rows of `train.run_grid`: backbone, variant, seed,
    structural_share, model, model_stamp) on every dataset, appending to
    {work_dir}/results/02/retrieval.parquet (tidy) and retrieval_per_query.parquet.

    A (model, dataset) pair already in the table with the same harness, model stamp and dataset
    content (`BeirDataset.content_sha1`, stored as data_sha1) is skipped unless `force`: re-running
    the notebook costs nothing, and an edited corpus is scored again, never read back.
    Every row carries `regime` ("zero-shot" or "in-domain", `compsense.retrieval.regime.overlap` of the
    run's training texts, `train_keys`, with this dataset; base models trained on nothing here are
    zero-shot), the overlap counts, and the training rows the run saw (retrieval_rows, structural_rows).
    Returns the tidy and per-query rows of these runs and datasets.
    """
    tidy_path, pq_path = results_file(work_dir, "retrieval"), results_file(work_dir, "retrieval_per_query")
    done = read_table(tidy_path) if tidy_path.exists() and not force else None
    digests = {ds.name: ds.content_sha1() for ds in datasets}
    for run in tqdm(runs.to_dict("records"), desc="evaluate", unit="model"):
        labels = {k: run[k] for k in ("backbone", "variant", "seed")}
        labels["run"] = f"{run['backbone']}/{run['variant']}-seed{run['seed']}"
        todo = [ds for ds in datasets if not _already_done(done, labels, run["model_stamp"], ds, digests[ds.name])]
        if not todo:
            continue
        keys_path = run.get("train_keys")
        if run["variant"] != "base" and not (isinstance(keys_path, str) and keys_path):
            raise ValueError(
                f"{labels['run']}: no `train_keys` (the hashes of its training texts), so its regime "
                "cannot be computed; pass the rows returned by train.run_grid"
            )
        train_keys = read_training_keys(keys_path) if run["variant"] != "base" else set()
        with quiet_transformers():
            encoder = load_encoder(run["model"], device=device, max_seq_length=max_seq_length, seed=int(run["seed"]))
        for ds in todo:
            result = evaluate_dataset(encoder, ds, batch_size=batch_size, show_progress=show_progress)
            share = run["structural_share"]
            extra = dict(
                structural_share=float("nan") if share is None else float(share),
                model_stamp=run["model_stamp"],
                data_sha1=digests[ds.name],
                **overlap(train_keys, ds),
                source=ds.source,
                families=run.get("families") or "",
                retrieval_rows=int(run.get("retrieval_rows") or 0),
                structural_rows=int(run.get("structural_rows") or 0),
            )
            append_results(result.to_tidy(**labels, **extra), tidy_path)
            pq = result.per_query_table(**labels, **extra)
            append_results(pq, pq_path, key=["run", "dataset", "qid"])
            log.info("%s on %s: nDCG@10 %.4f", labels["run"], ds.name, result.metrics["ndcg@10"])
    if not tidy_path.exists() or not pq_path.exists():
        return pd.DataFrame(), pd.DataFrame()
    names = {ds.name for ds in datasets}
    run_names = {f"{r['backbone']}/{r['variant']}-seed{r['seed']}" for r in runs.to_dict("records")}
    tables = []
    for path in (tidy_path, pq_path):
        df = read_table(path)
        current = df.data_sha1.isin(set(digests.values())) if "data_sha1" in df else True
        tables.append(df[df.run.isin(run_names) & df.dataset.isin(names) & current].reset_index(drop=True))
    return tables[0], tables[1]


def _already_done(done: pd.DataFrame | None, labels: dict, stamp: str, dataset, digest: str) -> bool:
    """Whether this model (its stamp) was scored on this very content of the split (`digest`:
    `BeirDataset.content_sha1`); a result without a digest predates the check and is redone."""
    if done is None or not {"model_stamp", "regime", "data_sha1"} <= set(done.columns):
        return False
    hit = done[
        (done.run == labels["run"])
        & (done.dataset == dataset.name)
        & (done.harness == HARNESS)
        & (done.model_stamp == stamp)
        & done.regime.notna()
        & (done.data_sha1 == digest)
    ]
    return set(METRICS) <= set(hit.metric)


# ---------------------------------------------------------------------------------------------
# Statistics and tables


def paired_bootstrap(
    per_query_a: pd.DataFrame, per_query_b: pd.DataFrame, metric: str = "ndcg@10", n: int = 1000, seed: int = 0
) -> dict:
    """Mean of B - A over queries, its 95% BCa bootstrap interval (`scipy.stats.bootstrap`) and the
    two-sided p-value of a paired permutation test (`scipy.stats.permutation_test`: random sign flips
    of the per-query differences, the null of exchangeable A and B).

    Queries are paired on (dataset, qid) when both tables have a dataset column, else on qid.
    One seed's models; `ab_tests` (hierarchical over seeds and queries) is the test of a recipe.
    """
    keys = ["dataset", "qid"] if {"dataset"} <= set(per_query_a) & set(per_query_b) else ["qid"]
    a = per_query_a.groupby(keys, as_index=False)[metric].mean()
    b = per_query_b.groupby(keys, as_index=False)[metric].mean()
    paired = a.merge(b, on=keys, suffixes=("_a", "_b"))
    if paired.empty:
        raise ValueError(f"paired_bootstrap: no query in common between A and B (paired on {keys})")
    if len(paired) < max(len(a), len(b)):
        log.warning("paired_bootstrap: %d of %d/%d queries paired", len(paired), len(a), len(b))
    delta = (paired[f"{metric}_b"] - paired[f"{metric}_a"]).to_numpy(dtype=float)
    mean = float(delta.mean())
    if np.ptp(delta) <= 1e-12 or len(delta) < 3:  # BCa is undefined without spread: the interval is the point
        low = high = mean
    else:
        ci = scipy.stats.bootstrap(
            (delta,), np.mean, n_resamples=n, method="BCa", vectorized=True, random_state=np.random.default_rng(seed)
        ).confidence_interval
        low, high = float(ci.low), float(ci.high)
    perm = scipy.stats.permutation_test(
        (delta,),
        np.mean,
        permutation_type="samples",
        n_resamples=n,
        vectorized=True,
        alternative="two-sided",
        random_state=np.random.default_rng(seed + 1),
    )
    return {
        "mean_delta": mean,
        "ci_low": low,
        "ci_high": high,
        "p_value": float(perm.pvalue),
        "n_queries": int(len(delta)),
    }


def zero_shot(results: pd.DataFrame) -> pd.DataFrame:
    """The rows of the datasets that are zero-shot for every model in a results or per-query table
    (`compsense.retrieval.regime`): only these go beside the paper's Table 1. A set that is in-domain for any
    model is left out for all, so every variant's mean covers the same sets (the untrained base is
    zero-shot everywhere). A table written before regimes were computed is an error."""
    if "regime" not in results.columns:
        raise ValueError(
            "this results table has no `regime` column (written before zero-shot was checked); "
            "re-run notebook 02's evaluation (force=True) to compute it"
        )
    in_domain = set(results.dataset[results.regime != "zero-shot"])
    return results[~results.dataset.isin(in_domain)]


def ab_tests(
    per_query: pd.DataFrame, comparisons, metric: str = "ndcg@10", n: int = 10000, seed: int = 0, correct: bool = True
) -> pd.DataFrame:
    """One hierarchical-bootstrap test per backbone and (reference, variant) pair on the zero-shot
    sets, and beside it the seed-level tests (`core.stats.seed_level_test`: paired t and the exact
    sign flip over the per-seed differences, each the mean over datasets of the mean over queries, as
    Table 1's drop); with `correct`, Holm-adjusted bootstrap p-values over all the table's tests."""
    pq = zero_shot(per_query)
    rows = []
    for backbone, grp in pq.groupby("backbone", sort=False):
        for a, b in comparisons:
            if not {a, b} <= set(grp.variant):
                continue
            stats = hierarchical_bootstrap(paired_deltas(grp, metric, a, b), n=n, seed=seed)
            seed_tests = seed_level_test(seed_drops(seed_means(grp, [metric]), a, b).to_numpy())
            seed_tests = {k: v for k, v in seed_tests.items() if k not in ("n_seeds", "mean_delta")}
            rows.append({"backbone": backbone, "metric": metric, "reference": a, "variant": b, **stats, **seed_tests})
    out = pd.DataFrame(rows)
    if correct and not out.empty:
        out["p_holm"] = holm(out.p_value)
        out["p_floor_holm"] = holm_floor(len(out), n)  # the smallest p_holm this table can show
    return out


def variant_table(
    results: pd.DataFrame,
    per_query: pd.DataFrame,
    metric: str = "ndcg@10",
    reference: str = "A",
    n: int = 10000,
    seed: int = 0,
) -> pd.DataFrame:
    """Every trained variant against `reference` on the zero-shot sets: mean ± std over seeds, the
    training rows it saw, and B − reference with a hierarchical-bootstrap interval and a
    Holm-adjusted p over every comparison in the table. Includes B vs C-identity when both exist:
    the part of B's cost that the near-misses, not the dilution, account for."""
    zs = zero_shot(results)
    zs = zs[(zs.metric == metric) & (zs.variant != "base")]
    per_seed = zs.groupby(["backbone", "variant", "seed"], as_index=False).agg(
        value=("value", "mean"),
        structural_share=("structural_share", "first"),
        families=("families", "first"),
        retrieval_rows=("retrieval_rows", "first"),
        structural_rows=("structural_rows", "first"),
    )
    summary = per_seed.groupby(["backbone", "variant"], as_index=False).agg(
        structural_share=("structural_share", "first"),
        families=("families", "first"),
        retrieval_rows=("retrieval_rows", "first"),
        structural_rows=("structural_rows", "first"),
        mean=("value", "mean"),
        std=("value", "std"),
        n_seeds=("seed", "nunique"),
    )
    variants = [v for v in summary.variant.unique() if v != reference]
    comparisons = [(reference, v) for v in variants]
    if {"B", "C-identity"} <= set(variants):
        comparisons.append(("C-identity", "B"))
    tests = ab_tests(per_query, comparisons, metric=metric, n=n, seed=seed)
    out = (
        summary.merge(
            tests[tests.reference == reference].drop(columns=["reference", "metric", "n_seeds"]),
            on=["backbone", "variant"],
            how="left",
        )
        if not tests.empty
        else summary
    )
    out.insert(2, "metric", metric)
    out.attrs["tests"] = tests
    return out.sort_values(["backbone", "structural_share", "variant"]).reset_index(drop=True)


def dose_response(
    results: pd.DataFrame, nearmiss: pd.DataFrame, metric: str = "ndcg@10", reference: str = "A"
) -> pd.DataFrame:
    """Per backbone x variant x seed: the zero-shot drop of `metric` against the reference of the
    same seed, and the held-out near-miss AUC gain over it (`nearmiss`: tidy rows of
    `geometry.pooled_nearmiss_auc`, family "all"). One point of the dose-response figure each."""
    zs = zero_shot(results)
    score = (
        zs[zs.metric == metric]
        .groupby(["backbone", "variant", "seed"])
        .agg(value=("value", "mean"), structural_share=("structural_share", "first"))
    )
    auc = nearmiss[(nearmiss.family == "all")].groupby(["backbone", "variant", "seed"]).value.mean().rename("auc")
    df = score.join(auc, how="inner").reset_index()
    ref = df[df.variant == reference].set_index(["backbone", "seed"])[["value", "auc"]]
    df = df.join(ref, on=["backbone", "seed"], rsuffix="_ref").dropna(subset=["value_ref"])
    df["drop"] = df["value"] - df["value_ref"]
    df["auc_gain"] = df["auc"] - df["auc_ref"]
    return df.rename(columns={"value": metric})[
        ["backbone", "variant", "seed", "structural_share", metric, "drop", "auc", "auc_gain"]
    ]


def seed_means(table: pd.DataFrame, metrics) -> pd.DataFrame:
    """Per backbone x variant x seed x metric: the mean over datasets of each dataset's mean over
    queries (the paper's 'mean NanoBEIR'; datasets weigh equally). `table` is a results table (tidy:
    one `value` per dataset and metric) or a per-query table (one column per metric); both give the
    same numbers, so Table 1 and the variant tests draw their seed-level values from this one place."""
    keys = ["backbone", "variant", "seed", "dataset"]
    if "metric" in table.columns:
        per_dataset = table[table.metric.isin(metrics)].groupby([*keys, "metric"]).value.mean()
    else:
        per_dataset = table.groupby(keys)[list(metrics)].mean().rename_axis(columns="metric").stack()
    per_dataset = per_dataset.rename("value").reset_index()
    return per_dataset.groupby(["backbone", "variant", "seed", "metric"], as_index=False).agg(
        value=("value", "mean"), n_datasets=("dataset", "nunique")
    )


def seed_drops(per_seed: pd.DataFrame, a: str, b: str) -> pd.Series:
    """b - a per backbone x metric x seed from `seed_means` rows, at the seeds both variants have
    (the unit of `core.stats.seed_level_test`)."""
    paired = per_seed.pivot_table(index=["backbone", "metric", "seed"], columns="variant", values="value")
    if not {a, b} <= set(paired.columns):
        return pd.Series(dtype=float, index=paired.index[:0])
    return (paired[b] - paired[a]).dropna()


def table1(
    results: pd.DataFrame,
    metrics=("ndcg@10", "acc@1"),
    per_query: pd.DataFrame | None = None,
    n: int = 10000,
    seed: int = 0,
) -> pd.DataFrame:
    """Table 1: per backbone and metric, mean and std over seeds of base, A and B (each the mean
    over datasets), the drop B - A (absolute and % of A), and the paper's A, B and drop beside.
    Zero-shot rows only (`zero_shot`): the paper's Table 1 is zero-shot."""
    per_seed = seed_means(zero_shot(results), metrics)
    stats = per_seed.groupby(["backbone", "metric", "variant"]).value.agg(["mean", "std", "count"])
    wide = stats.unstack("variant")
    out = pd.DataFrame(index=wide.index)
    for v in ("base", "A", "B"):
        if ("mean", v) in wide.columns:
            out[f"{v}_mean"], out[f"{v}_std"] = wide[("mean", v)], wide[("std", v)]
        else:
            out[f"{v}_mean"] = out[f"{v}_std"] = np.nan
    # The drop is computed per seed (B and A of the same seed), then averaged.
    drops = seed_drops(per_seed, "A", "B")
    if len(drops):
        drop = drops.groupby(["backbone", "metric"]).agg(["mean", "std"])
        out["drop"], out["drop_std"] = drop["mean"], drop["std"]
        # The seed-level tests (the unit is a trained model): what the README's conclusion rests on.
        seed_tests = pd.DataFrame(
            [
                {"backbone": backbone, "metric": metric, **seed_level_test(grp.to_numpy())}
                for (backbone, metric), grp in drops.groupby(["backbone", "metric"])
            ]
        ).set_index(["backbone", "metric"])
        out = out.join(seed_tests.drop(columns=["n_seeds", "mean_delta"]))
        # Holm over the table's seed-level t tests (every backbone x metric), as the bootstrap's p_holm below
        tested = out.t_p.notna()
        out["t_p_holm"] = np.nan
        out.loc[tested, "t_p_holm"] = holm(out.t_p[tested])
    else:
        out["drop"] = out["drop_std"] = np.nan
    out["drop_pct"] = 100 * out["drop"] / out["A_mean"]
    out["n_seeds"] = wide[("count", "A")] if ("count", "A") in wide.columns else 0
    out["n_datasets"] = per_seed.groupby(["backbone", "metric"]).n_datasets.max()
    out = out.reset_index().merge(PAPER_TABLE1, on=["backbone", "metric"], how="left")
    out["paper_drop"] = out.paper_B - out.paper_A
    out["paper_drop_pct"] = 100 * out.paper_drop / out.paper_A
    if per_query is not None:
        # B - A interval over seeds and queries together, Holm over every backbone x metric of the table.
        tests = pd.concat(
            [ab_tests(per_query, [("A", "B")], metric=m, n=n, seed=seed, correct=False) for m in metrics],
            ignore_index=True,
        )
        if not tests.empty:
            tests["p_holm"] = holm(tests.p_value)
            tests["p_floor_holm"] = holm_floor(len(tests), n)  # the smallest p_holm this table can show
            out = out.merge(
                tests[["backbone", "metric", "ci_low", "ci_high", "p_value", "p_holm", "p_floor_holm", "n_queries"]],
                on=["backbone", "metric"],
                how="left",
            )
    return out


# Result tables notebook 02 writes once into {work_dir}/results/02/ (the report and README read them).
TABLE1_FILE, VARIANTS_FILE = "table1.parquet", "variants.parquet"
DOSE_FILE = "dose_response.parquet"  # one row per backbone x variant x seed: the dose-response figure's points
VARIANT_TESTS_FILE = "variant_tests.parquet"  # every comparison of the variant table, B vs C-identity included


def write_result_table(table: pd.DataFrame, work_dir, file: str) -> Path:
    """A notebook's result table to {work_dir}/results/<stage>/<file> (`layout.results_file`), atomically
    (pandas `attrs` are not kept), each row with the commit that computed it (`storage.stamp_commit`):
    such a table is computed whole from the tidy results each time its notebook runs, so that is the
    commit running now."""
    out = stamp_commit(table.reset_index(drop=True))
    out.attrs = {}  # variant_table keeps its tests there: a table of its own, not parquet metadata
    return write_table(out, results_file(work_dir, file))


def with_auc_gain(variants: pd.DataFrame, results: pd.DataFrame, nearmiss: pd.DataFrame) -> pd.DataFrame:
    """`variant_table` with each variant's held-out near-miss AUC gain over Model A of the same seed
    (`dose_response`), mean over seeds: the variants table as notebook 02 writes it."""
    gain = dose_response(results, nearmiss).groupby(["backbone", "variant"], as_index=False).auc_gain.mean()
    return variants.merge(gain, on=["backbone", "variant"], how="left")


def style_table1(table: pd.DataFrame):
    """Table 1 for display: 'mean ± std' cells, ours beside the paper's, drops coloured."""

    def pm(mean, std):
        if pd.isna(mean):
            return "–"
        return f"{mean:.3f}" if pd.isna(std) else f"{mean:.3f} ± {std:.3f}"

    shown = pd.DataFrame(
        {
            "backbone": table.backbone,
            "metric": table.metric,
            "base": [pm(m, s) for m, s in zip(table.base_mean, table.base_std)],
            "A (ours)": [pm(m, s) for m, s in zip(table.A_mean, table.A_std)],
            "B (ours)": [pm(m, s) for m, s in zip(table.B_mean, table.B_std)],
            "B − A (ours)": table["drop"],
            "drop % (ours)": table.drop_pct,
            "A (paper)": table.paper_A,
            "B (paper)": table.paper_B,
            "B − A (paper)": table.paper_drop,
            "drop % (paper)": table.paper_drop_pct,
            "seeds": table.n_seeds,
            "datasets": table.n_datasets,
        }
    )
    if "ci_low" in table:
        shown.insert(
            6,
            "95% CI (seeds × queries)",
            [f"[{lo:+.3f}, {hi:+.3f}]" if pd.notna(lo) else "–" for lo, hi in zip(table.ci_low, table.ci_high)],
        )
        shown.insert(7, "p (Holm)", table.p_holm)
    if "t_p" in table:
        at = shown.columns.get_loc("drop % (ours)") + 1
        shown.insert(
            at,
            "95% CI (paired t over seeds)",
            [f"[{lo:+.3f}, {hi:+.3f}]" if pd.notna(lo) else "–" for lo, hi in zip(table.t_ci_low, table.t_ci_high)],
        )
        shown.insert(at + 1, "p (paired t)", table.t_p)
        shown.insert(
            at + 2, "p (sign flips; floor)", [_p_with_floor(p, f) for p, f in zip(table.perm_p, table.perm_p_floor)]
        )
    num = ["B − A (ours)", "A (paper)", "B (paper)", "B − A (paper)"]
    return (
        shown.style.hide(axis="index")
        .format(
            {
                **{c: "{:.3f}" for c in num},
                "drop % (ours)": "{:+.1f}%",
                "drop % (paper)": "{:+.1f}%",
                **({"p (Holm)": "{:.4f}"} if "p (Holm)" in shown else {}),
                **({"p (paired t)": "{:.4f}"} if "p (paired t)" in shown else {}),
            },
            na_rep="–",
        )
        .map(_drop_colour, subset=["B − A (ours)", "B − A (paper)"])
    )


def _p_with_floor(p: float, floor: float) -> str:
    return "–" if pd.isna(p) else f"{p:.4f} (≥ {floor:.4f})"


def _drop_colour(value) -> str:
    """Red for a drop, blue for a gain, stronger with size (no matplotlib needed)."""
    if pd.isna(value):
        return ""
    alpha = min(abs(float(value)) / 0.25, 1.0) * 0.6
    rgb = "214, 39, 40" if value < 0 else "31, 119, 180"
    return f"background-color: rgba({rgb}, {alpha:.2f})"


def describe_result(t1: pd.DataFrame, variants: pd.DataFrame | None = None, metric: str = "ndcg@10") -> str:
    """The A/B result in words, from Table 1 (with intervals) and the variant table: what a reader
    should take away, generated from the numbers so that it cannot drift from them."""
    lines = []
    for r in t1[t1.metric == metric].itertuples():
        ci = (
            f", 95% CI [{r.ci_low:+.3f}, {r.ci_high:+.3f}] over seeds and queries, Holm p = {r.p_holm:.3g}"
            if "ci_low" in t1 and pd.notna(getattr(r, "ci_low", np.nan))
            else ""
        )
        verdict = (
            "a cost"
            if getattr(r, "ci_high", 0) < 0
            else "a gain"
            if getattr(r, "ci_low", 0) > 0
            else "no difference the interval can tell from zero"
        )
        paper = f"; the paper: {r.paper_drop:+.3f} ({r.paper_drop_pct:+.1f}%)" if pd.notna(r.paper_drop) else ""
        lines.append(
            f"{r.backbone}: zero-shot {metric} B − A = {r.drop:+.3f} ({r.drop_pct:+.1f}% of A = {r.A_mean:.3f}, "
            f"{int(r.n_seeds)} seed(s)){ci}: {verdict}{paper}."
        )
    if variants is not None and "mean_delta" in variants:
        tests = variants.attrs.get("tests")
        for backbone, grp in variants.groupby("backbone", sort=False):
            by = grp.set_index("variant")
            if {"B", "C-identity"} <= set(by.index) and tests is not None and not tests.empty:
                bc = tests[(tests.backbone == backbone) & (tests.reference == "C-identity") & (tests.variant == "B")]
                c = by.loc["C-identity"]
                if not bc.empty:
                    bc = bc.iloc[0]
                    lines.append(
                        f"{backbone}: the control C-identity (same identity rows, random negatives) costs "
                        f"{c.mean_delta:+.3f} [{c.ci_low:+.3f}, {c.ci_high:+.3f}] against A; "
                        f"B − C = {bc.mean_delta:+.3f} [{bc.ci_low:+.3f}, {bc.ci_high:+.3f}] is the part the "
                        "near-misses themselves account for."
                    )
    return "\n".join(lines) if lines else "No zero-shot A/B comparison in these results."
