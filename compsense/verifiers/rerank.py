"""Reranking with verifiers: pooled cosine finds the top-K, a verifier over token similarity maps
re-orders them (the paper's Figure 2), and what that costs.

Why two stages: a verifier reads a full token-token map per (query, document), far too slow for a
whole corpus but cheap for K candidates. Notebook 04 asks whether a verifier can tell near-misses
apart; this module asks whether that sensitivity survives as retrieval quality, and at what price.

- First stage: exact search by pooled cosine with `retrieval.top_k` (ties to the smaller doc id,
  documents sorted by id), the ranking `retrieval.evaluate` scores, so the encoder-only rows here
  are the harness's numbers and fusion weight 1 reproduces them.
- Second stage: score = w * pooled cosine + (1 - w) * verifier score over the top-K, re-sorted
  (stable: equal scores keep their first-stage order); w = 0 is the paper's pure rerank. The
  verifier scores the top max(K) once; every smaller K and every w re-use those scores, since the
  top-K of an exact search is a prefix of its top-100.
- Caches: the corpus's pooled embeddings and token embeddings are computed once per (encoder
  weights, corpus texts, max length, storage dtype) and kept under cache_dir, keyed by
  `simmap.cache_key`. Token embeddings (a `simmap.TokenCache`) are stored in float16 by default:
  SciFact at max length 128 is ~5,183 x 126 x 384 values, ~0.5 GB in float16 against ~1 GB in
  float32, and each end-to-end verifier has its own encoder, hence its own cache (cosines move by
  < 1e-3). On a GPU the cache sits on the device and candidates are gathered there.
- Evaluation: `retrieval.score_rankings`, the one harness. Documents below the top-K keep their
  first-stage order, so recall@100 is the first stage's whatever K.
"""

from __future__ import annotations

import logging
import os
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Sequence

import numpy as np
import pandas as pd
import pyarrow.parquet as pq
import torch
from safetensors import SafetensorError
from safetensors.torch import load_file, save_file
from tqdm.auto import tqdm

from compsense.core import layout
from compsense.core.encoders import encode_pooled, load_encoder, quiet_transformers
from compsense.core.layout import results_file, verifier_dir
from compsense.core.stats import hierarchical_bootstrap, holm, holm_floor, paired_deltas, resamples_for
from compsense.core.storage import TIDY_KEY, append_results, atomic_path, read_table, tidy
from compsense.nearmiss.evaluation import NOISE_CONTROL_BASE, noise_name, pair_noise, parse_noise_name, split_variant
from compsense.retrieval.harness import (
    HARNESS,
    MAX_K,
    METRICS,
    RetrievalResult,
    document_text,
    paired_bootstrap,
    score_rankings,
    top_k,
)
from compsense.verifiers import architectures as V
from compsense.verifiers.architectures import device_of, score_maps
from compsense.verifiers.config import REGIMES, Compute
from compsense.verifiers.simmap import (
    TokenCache,
    cache_key,
    encoder_device,
    encoder_fingerprint,
    similarity_map,
    storage_dtype,
    token_embeddings,
)

log = logging.getLogger(__name__)

RERANK_HARNESS = f"{HARNESS} + rerank v1"
KS = (10, 20, 50, 100)
# One tidy row per run x dataset x metric x reranking setting.
RERANK_KEY = [*TIDY_KEY, "verifier", "regime", "k", "weight"]
PER_QUERY_KEY = [k for k in RERANK_KEY if k != "metric"] + ["qid"]
ENCODER_ONLY = "encoder-only"
TRAINING_FREE = ("F0", "F1", "F2")


# ---------------------------------------------------------------------------------------------
# Caches


def pooled_embeddings(
    encoder, texts: Sequence[str], cache_dir=None, batch_size: int = 64, show_progress: bool = False
) -> tuple[torch.Tensor, int]:
    """L2-normalised pooled document embeddings [N, D] (float32, CPU), as `retrieval.evaluate`
    computes them, read from `cache_dir/pooled-<key>.safetensors` when there. Returns (embeddings,
    number of texts encoded: 0 when read from disk)."""
    path = None
    if cache_dir is not None:
        path = Path(cache_dir) / f"pooled-{cache_key(encoder, texts, include_special=False)}.safetensors"
        if path.exists():
            try:
                return load_file(str(path))["embeddings"], 0
            except (SafetensorError, KeyError, OSError) as err:  # a cache is rebuilt, never trusted
                log.warning("%s: unreadable embedding cache (%s); rebuilding it", path, err)
                path.unlink(missing_ok=True)
    emb = encode_pooled(encoder, texts, "document", batch_size, show_progress).cpu().contiguous()
    if path is not None:
        with atomic_path(path) as tmp:
            save_file({"embeddings": emb}, str(tmp))
    return emb, len(texts)


# ---------------------------------------------------------------------------------------------
# Two-stage retrieval


@dataclass
class Candidates:
    """First-stage top-k of each query: pooled cosines (descending) and row numbers into doc_ids."""

    qids: list[str]
    scores: torch.Tensor  # [Q, k]
    indices: torch.Tensor  # [Q, k]

    @property
    def k(self) -> int:
        return int(self.scores.shape[1])

    def top(self, k: int) -> "Candidates":
        """The top-k of a deeper search (a prefix: exact search with a stable tie order)."""
        if k > self.k:
            raise ValueError(f"asked for the top {k} of a first stage that kept {self.k}; search deeper")
        return Candidates(self.qids, self.scores[:, :k], self.indices[:, :k])


class Reranker:
    """One corpus under one encoder: pooled first stage and verifier reranking over cached embeddings.

    `token_encoder` (default: `encoder`) gives the token embeddings the verifier reads; an
    end-to-end verifier reads its own fine-tuned encoder's. The corpus is encoded at most once per
    encoder and cache_dir (pooled at construction, tokens on the first verifier that needs them);
    `corpus_encoded` counts the documents this object ran through an encoder.
    """

    def __init__(
        self,
        encoder,
        corpus: dict[str, dict],
        cache_dir=None,
        token_encoder=None,
        batch_size: int = 64,
        candidate_batch: int = 256,
        device=None,
        dtype="float16",
        show_progress: bool = False,
    ):
        if not corpus:
            raise ValueError("Reranker needs a non-empty corpus")
        if candidate_batch < 1 or batch_size < 1:
            raise ValueError(f"batch sizes must be >= 1, got {batch_size}, {candidate_batch}")
        self.encoder = encoder
        self.token_encoder = token_encoder if token_encoder is not None else encoder
        self.doc_ids = sorted(corpus)  # ties go to the smaller id, as in retrieval.evaluate
        self.doc_texts = [document_text(corpus[d]) for d in self.doc_ids]
        self.cache_dir = Path(cache_dir) if cache_dir is not None else None
        self.batch_size, self.candidate_batch = batch_size, candidate_batch
        self.device = torch.device(device) if device is not None else encoder_device(encoder)
        self.dtype = storage_dtype(dtype)
        self.show_progress = show_progress
        self.timings = {"corpus_pooled_s": 0.0, "corpus_tokens_s": 0.0}  # one-off encoding (or reading) cost
        start = time.perf_counter()
        self.doc_emb, self.corpus_encoded = pooled_embeddings(
            encoder, self.doc_texts, self.cache_dir, batch_size, show_progress
        )
        self.timings["corpus_pooled_s"] = time.perf_counter() - start
        self._doc_emb_device = self.doc_emb.to(self.device)
        self._tokens: dict[bool, TokenCache] = {}

    def __len__(self) -> int:
        return len(self.doc_ids)

    def release(self) -> None:
        """Drop the corpus token embeddings from memory (they stay on disk)."""
        self._tokens.clear()

    @property
    def index_megabytes(self) -> float:
        return self.doc_emb.numel() * self.doc_emb.element_size() / 2**20

    def search(self, queries: dict[str, str], k: int = MAX_K) -> Candidates:
        """Exact top-k by pooled cosine (k is capped at the corpus size)."""
        k = _check_k(k, len(self))
        if not queries:
            raise ValueError("search needs at least one query")
        qids = list(queries)
        q_emb = encode_pooled(self.encoder, [queries[q] for q in qids], "query", self.batch_size).to(self.device)
        scores, idx = top_k(q_emb, self._doc_emb_device, k)
        _sync(self.device)
        return Candidates(qids, scores.float(), idx)

    def corpus_tokens(self, include_special: bool = False) -> TokenCache:
        """The corpus's token embeddings under `token_encoder`, from disk or computed once."""
        if include_special not in self._tokens:
            start = time.perf_counter()
            cache = TokenCache(
                self.token_encoder,
                self.doc_texts,
                self.cache_dir,
                include_special=include_special,
                batch_size=self.batch_size,
                device=self.device,
                show_progress=self.show_progress,
                dtype=self.dtype,
            )
            self.timings["corpus_tokens_s"] += time.perf_counter() - start
            self.corpus_encoded += cache.encoded
            self._tokens[include_special] = cache.to(self.device) if self.device.type == "cuda" else cache
        return self._tokens[include_special]

    def verifier_scores(self, verifier, queries: dict[str, str], candidates: Candidates) -> torch.Tensor:
        """Verifier scores [Q, k] of every (query, candidate), in batches of `candidate_batch` pairs.
        A scorer that reads the two texts together (`reads_texts`: the cross-encoder of
        `verifiers.joint`) gets the texts themselves and no token maps."""
        if reads_texts(verifier):
            return self.text_scores(verifier, queries, candidates)
        docs = self.corpus_tokens(verifier.include_special)
        target = device_of(verifier, self.device)
        q_tokens = token_embeddings(
            self.token_encoder,
            [queries[q] for q in candidates.qids],
            include_special=verifier.include_special,
            batch_size=self.batch_size,
            device=self.device,
        ).to(target)
        n_q, k = candidates.indices.shape
        q_rows = torch.arange(n_q).repeat_interleave(k).tolist()
        d_rows = candidates.indices.reshape(-1).tolist()
        out = []
        for start in range(0, len(d_rows), self.candidate_batch):
            q = q_tokens.select(q_rows[start : start + self.candidate_batch])
            d = docs.batch(d_rows[start : start + self.candidate_batch], device=target)
            out.append(score_maps(verifier, *similarity_map(q, d)).float().cpu())
        _sync(target)
        return torch.cat(out).view(n_q, k)

    def text_scores(self, scorer, queries: dict[str, str], candidates: Candidates) -> torch.Tensor:
        """`scorer.score_texts` of every (query text, candidate text) [Q, k], `candidate_batch` pairs a call."""
        pairs = [
            (queries[q], self.doc_texts[i]) for q, row in zip(candidates.qids, candidates.indices.tolist()) for i in row
        ]
        scores = [
            torch.as_tensor(scorer.score_texts(pairs[start : start + self.candidate_batch]), dtype=torch.float32)
            for start in range(0, len(pairs), self.candidate_batch)
        ]
        return torch.cat(scores).view(*candidates.indices.shape)

    def rerank(
        self, verifier, queries: dict[str, str], k: int = 100, weight: float = 0.0, candidates: Candidates | None = None
    ) -> dict[str, list[tuple[str, float]]]:
        """{query id: [(doc id, fused score), ...]} for the top-k, best first.

        `candidates` (a deeper first stage) saves the search; weight 1 never calls the verifier.
        """
        _check_weight(weight)
        k = _check_k(k, len(self))
        cands = self.search(queries, k) if candidates is None else candidates.top(min(k, candidates.k))
        if weight == 1.0:
            v_scores = torch.zeros_like(cands.scores)
        else:
            if verifier is None:
                raise ValueError("rerank needs a verifier unless weight == 1 (the pooled ranking)")
            v_scores = self.verifier_scores(verifier, queries, cands)
        return ranked(cands, fuse(cands.scores, v_scores, weight), self.doc_ids)


def rerank(
    encoder,
    verifier,
    corpus: dict[str, dict],
    queries: dict[str, str],
    k: int = 100,
    weight: float = 0.0,
    cache_dir=None,
    token_encoder=None,
    compute: "Compute | None" = None,
) -> dict[str, list[tuple[str, float]]]:
    """Retrieve the top-k of each query by pooled cosine (exact search), rescore them with
    w * pooled + (1 - w) * verifier, re-sort: {query id: [(doc id, score), ...]}, best first.

    `corpus` maps doc id -> {"title", "text"} (as `retrieval.evaluate`); with `cache_dir` the
    corpus's pooled and token embeddings are encoded once and read from disk on later calls. For
    many verifiers or K over one corpus, build one `Reranker` and call its `rerank`. `compute`: how
    it runs (`Compute`; default: no progress bars).
    """
    compute = compute or Compute(show_progress=False)
    reranker = Reranker(
        encoder,
        corpus,
        cache_dir=cache_dir,
        token_encoder=token_encoder,
        batch_size=compute.batch_size,
        candidate_batch=compute.candidate_batch,
        device=compute.device,
        dtype=compute.dtype,
        show_progress=compute.show_progress,
    )
    return reranker.rerank(verifier, queries, k=k, weight=weight)


def reads_texts(verifier) -> bool:
    """Whether a reranker scores (query, document) texts together (`score_texts`, the cross-encoder of
    `verifiers.joint`) rather than a token-token map of their separate embeddings: it needs no corpus
    token cache, and its cost rows say so (token_cache_mb 0)."""
    return callable(getattr(verifier, "score_texts", None))


def fuse(pooled: torch.Tensor, verifier_scores: torch.Tensor, weight: float) -> torch.Tensor:
    """weight * pooled + (1 - weight) * verifier, exact at the ends (w = 0: verifier, w = 1: pooled)."""
    _check_weight(weight)
    if weight == 1.0:
        return pooled.clone()
    if weight == 0.0:
        return verifier_scores.clone()
    return weight * pooled + (1.0 - weight) * verifier_scores


def ranked(candidates: Candidates, scores: torch.Tensor, doc_ids: Sequence[str]) -> dict[str, list[tuple[str, float]]]:
    """Candidates re-sorted by `scores` [Q, k]; equal scores keep the first-stage order."""
    order = torch.sort(scores, dim=1, descending=True, stable=True).indices
    idx, scores = candidates.indices.gather(1, order).tolist(), scores.gather(1, order).tolist()
    return {
        q: [(doc_ids[i], float(s)) for i, s in zip(row_i, row_s)]
        for q, row_i, row_s in zip(candidates.qids, idx, scores)
    }


def full_rankings(
    reranked: dict[str, list[tuple[str, float]]], first_stage: Candidates, doc_ids: Sequence[str], depth: int = MAX_K
) -> dict[str, list[str]]:
    """Doc ids to `depth`: the reranked top-K, then the rest of the first stage in its own order."""
    out = {}
    for q, row in zip(first_stage.qids, first_stage.indices.tolist()):
        head = [d for d, _ in reranked.get(q, [])]
        seen = set(head)
        tail = [doc_ids[i] for i in row if doc_ids[i] not in seen]
        out[q] = (head + tail)[:depth]
    return out


def score_result(
    rankings: dict[str, list[str]],
    qrels: dict[str, dict[str, int]],
    name: str,
    n_docs: int,
    harness: str = RERANK_HARNESS,
) -> RetrievalResult:
    """`retrieval.score_rankings` over the judged queries, as a RetrievalResult."""
    qrels = {q: {d: r for d, r in rel.items() if r > 0} for q, rel in qrels.items()}
    qrels = {q: rel for q, rel in qrels.items() if rel}
    per_query = score_rankings(rankings, qrels)
    return RetrievalResult(
        name=name,
        metrics={m: float(per_query[m].mean()) for m in METRICS},
        per_query=per_query,
        n_docs=n_docs,
        harness=harness,
    )


# ---------------------------------------------------------------------------------------------
# What to rerank with: encoders and verifiers from notebooks 02 and 04


@dataclass
class Method:
    """One verifier in one regime, with the encoder whose token embeddings it reads."""

    label: str  # "F3-frozen": the variant name notebook 04 uses in verifiers.parquet
    name: str  # "F3"
    regime: str  # "frozen" | "end2end"
    verifier: object
    encoder: object
    source: str  # "notebook 04" or "training-free (untrained)"
    seed: int | None = None  # notebook 04's verifier seed; None: the grid's seed
    verifier_variant: str = ""  # notebook 04's folder verifiers/<train_data>-<size>[-authors]/ it came from
    noise_sigma: float = 0.0  # the noise control: seeded Gaussian noise added to the verifier's scores


def method_label(name_regime: str, verifier_variant: str, variants: Sequence[str]) -> str:
    """The label a reranker's rows carry: "F3-frozen" when notebook 05 reranks one notebook-04
    variant, "F3-frozen@balanced-small" when it reranks several (the same verifier trained on two
    data sets are two methods). `tradeoff_table` names notebook 04's rows the same way to join them."""
    return name_regime if len(variants) <= 1 or not verifier_variant else f"{name_regime}@{verifier_variant}"


def variant_folders(df: pd.DataFrame) -> pd.Series:
    """Each row's notebook-04 folder (`verifier_variant`), "" for an encoder alone, a pooled cosine,
    or a table written before the column existed."""
    if "verifier_variant" not in df.columns:
        return pd.Series("", index=df.index, dtype=object)
    return df.verifier_variant.fillna("")


def regime_rank(regime: pd.Series) -> pd.Series:
    """Each row's place in `config.REGIMES` (frozen before end2end); an unknown regime, or none
    (an encoder alone), sorts last. The one sort key for tables and figures that list regimes."""
    return regime.map({r: i for i, r in enumerate(REGIMES)}).fillna(len(REGIMES))


def _variants(variant: str | Sequence[str]) -> list[str]:
    variants = [variant] if isinstance(variant, str) else list(dict.fromkeys(variant))
    if not variants or not all(isinstance(v, str) and v for v in variants):
        raise ValueError(
            f"verifier variants must be notebook 04's folder names such as 'model_b-small', got {variant!r}"
        )
    return variants


def find_methods(
    work_dir,
    names: Sequence[str],
    regimes: Sequence[str],
    base_encoder,
    device=None,
    max_seq_length: int | None = 128,
    fallback: bool = True,
    include_special: bool = False,
    variant: str | Sequence[str] = "identity-small",
    seed: int | Sequence[int] = 42,
) -> tuple[list[Method], list[str]]:
    """The verifiers of one notebook-04 variant or several, at one verifier seed or several
    (`layout.verifier_dir`: {work_dir}/verifiers/<variant>/seed<seed>/<name>-<regime>/), each with
    its encoder (the backbone when frozen, its own fine-tuned copy when end-to-end), its seed, its
    variant and notes. With several variants, labels name the variant (`method_label`).

    A missing frozen F0, F1 or F2 of the first variant is replaced, with `fallback`, by an untrained
    one: F0 and F1 have no parameters (notebook 04 does not train them frozen either), F2 keeps
    lam = tau = 0.1. Later variants get no stand-ins, and their saved frozen verifiers without
    parameters (F0, F1, a fixed F2) are left out with a note: they are the same functions again (and
    a paper-size variant has no F0-F2 at all: they have one size, trained under the first).
    Raises when nothing at all can rerank.
    """
    variants = _variants(variant)
    seeds = [int(seed)] if isinstance(seed, (int, np.integer)) else [int(s) for s in seed]
    if not seeds:
        raise ValueError("find_methods needs at least one verifier seed")
    for regime in regimes:
        if regime not in REGIMES:
            raise ValueError(f"regime must be one of {REGIMES}, got {regime!r}")
    methods, notes = [], []
    for folder_variant, verifier_seed, regime in ((v, s, r) for v in variants for s in seeds for r in regimes):
        for name in V.verifier_names(names):
            name_regime = f"{name}-{regime}"
            label = method_label(name_regime, folder_variant, variants)
            folder = verifier_dir(work_dir, folder_variant, verifier_seed, name_regime)
            complete = (folder / V.CONFIG_FILE).exists() and (folder / V.WEIGHTS_FILE).exists()
            # an end-to-end verifier saved without its encoder is damaged, not absent: MissingEncoder names the fix
            own = V.own_encoder_dir(folder, end2end=regime == "end2end") if complete else None
            found = dict(seed=verifier_seed, verifier_variant=folder_variant)
            if complete:
                verifier = V.load(folder, device=device)
                if regime == "frozen" and folder_variant != variants[0] and V.n_parameters(verifier) == 0:
                    # F0, F1 and a fixed F2 are one function whatever data notebook 04 "trained" them on:
                    # reranking them again under each variant would only repeat rows (and Holm's tests).
                    notes.append(f"{label}: no parameters, the same function as under {variants[0]} (reranked once)")
                    continue
                encoder = base_encoder
                if regime == "frozen":
                    notes += _encoder_mismatch(label, folder, base_encoder)
                if own is not None:
                    with quiet_transformers():
                        encoder = load_encoder(own, device=device, max_seq_length=max_seq_length)
                methods.append(Method(label, name, regime, verifier, encoder, "notebook 04", **found))
            elif fallback and folder_variant == variants[0] and regime == "frozen" and name in TRAINING_FREE:
                verifier = V.create(name, include_special=include_special).eval()
                if device is not None:
                    verifier.to(device)
                methods.append(
                    Method(label, name, regime, verifier, base_encoder, "training-free (untrained)", **found)
                )
                notes.append(
                    f"{label}: no saved verifier at {folder}; using an untrained {name} "
                    f"({'parameter-free, identical to notebook 04' if name != 'F2' else 'lam = tau = 0.1'})"
                )
            else:
                notes.append(
                    f"{label}: no saved verifier at {folder}; run notebooks/04_verifiers.ipynb for this "
                    "profile (left out)"
                )
    if not methods:
        raise FileNotFoundError(
            f"no verifier to rerank with under {verifier_dir(work_dir, variants[0], seeds[0], '')} (variants "
            f"{variants}, seeds {seeds}): run notebooks/04_verifiers.ipynb for this profile first, or include "
            "'frozen' in regimes for the training-free F0-F2"
        )
    return methods, notes


def _encoder_mismatch(label: str, folder, encoder) -> list[str]:
    """A note when a frozen verifier was trained on token embeddings of another encoder than the one
    it will now read (notebook 04 run with another backbone): it still scores, on maps it never saw."""
    trained_on = (V.read_info(folder).get("settings") or {}).get("encoder")
    here = encoder_fingerprint(encoder)[:16]
    if trained_on and trained_on != here:
        return [
            f"{label}: trained on another encoder's token embeddings (fingerprint {trained_on}, this "
            f"backbone's {here}); re-run notebooks/04_verifiers.ipynb with this backbone for comparable scores"
        ]
    return []


# ---------------------------------------------------------------------------------------------
# The grid: every encoder-only baseline and every method x K x weight, with costs


@dataclass
class GridResult:
    results: pd.DataFrame  # tidy: RERANK_KEY + value, harness, n_queries, n_docs, first_stage, ...
    per_query: pd.DataFrame  # PER_QUERY_KEY + METRICS
    cost: pd.DataFrame  # one row per method (or baseline) x dataset x K


def noise_level(label) -> tuple[str, float] | None:
    """(base scorer, noise multiple) of a noise-control reranker's label ("F1-frozen+noise2x" or, with
    its notebook-04 variant, "F1-frozen+noise2x@model_b-small": `method_label`); None for any other."""
    return parse_noise_name(str(label).split("@")[0])


def is_noise_control(variants: pd.Series) -> pd.Series:
    """Which rows are the noise control: frozen MaxSim plus noise, not a verifier, so figures and
    tables show it apart from F1 itself."""
    return variants.map(lambda v: noise_level(v) is not None).astype(bool)


def noise_methods(
    methods: Sequence[Method], work_dir, variants: str | Sequence[str] = ()
) -> tuple[list[Method], list[str]]:
    """The noise control as rerankers: for each frozen F1 (MaxSim, nothing learned) among `methods`,
    one method per noise level notebook 04 scored beside it ("F1-frozen+noise2x"), at the very sigma
    it used (the `noise_sigma` column of its verifiers.parquet) and the same seed, so a verifier's
    point on the trade-off figure can be read against what noise alone does to reranking.
    Returns (methods, notes); none, with a note, where notebook 04 left no noise rows."""
    path = results_file(work_dir, "verifiers")
    if not path.exists():
        return [], [f"noise control: {path} does not exist (run notebook 04): not reranked"]
    rows = read_table(path)
    if "noise_sigma" not in rows.columns:
        return [], [f"noise control: {path} has no noise_sigma column (re-run notebook 04): not reranked"]
    rows = rows[rows.variant.map(parse_noise_name).notna() & rows.noise_sigma.notna()]
    levels = rows.assign(folder=variant_folders(rows)).drop_duplicates(["seed", "folder", "variant"])
    listed = _variants(variants) if variants else []
    out, notes = [], []
    for method in methods:
        if f"{method.name}-{method.regime}" != NOISE_CONTROL_BASE or method.noise_sigma:
            continue
        mine = levels[(levels.seed == method.seed) & (levels.folder == method.verifier_variant)]
        if mine.empty:
            notes.append(f"noise control: no noise rows for {method.label} seed {method.seed} in {path}")
        for level in mine.sort_values("variant").itertuples(index=False):
            multiple = parse_noise_name(level.variant)[1]
            out.append(
                Method(
                    method_label(noise_name(multiple), method.verifier_variant, listed),
                    method.name,
                    method.regime,
                    method.verifier,
                    method.encoder,
                    "noise control (frozen MaxSim + seeded noise)",
                    seed=method.seed,
                    verifier_variant=method.verifier_variant,
                    noise_sigma=float(level.noise_sigma),
                )
            )
    return out, notes


@dataclass(frozen=True)
class RerankPlan:
    """What `rerank_grid` sweeps: the depths K, the fusion weights, whose top-K is reranked
    (`first_stage`), and how many queries (and repeats) its costs are timed on."""

    ks: Sequence[int] = KS
    weights: Sequence[float] = (0.0,)
    first_stage: str = "own"
    cost_queries: int | None = 20
    cost_repeats: int = 3


def rerank_grid(
    datasets: Sequence,
    baselines: dict,
    methods: Sequence[Method],
    work_dir,
    backbone: str,
    seed: int,
    plan: RerankPlan = RerankPlan(),
    compute: Compute | None = None,
    write: bool = True,
    **labels,
) -> GridResult:
    """Rerank every dataset with every method at every K and weight, and evaluate the encoder-only
    baselines, through the retrieval harness. With `write`, results go to {work_dir}/results/05/
    rerank.parquet (tidy), rerank_per_query.parquet and rerank_cost.parquet (rows with the same
    key are replaced), and caches to {work_dir}/cache/rerank/.

    first_stage: "own" (as the authors' script) retrieves with the encoder the verifier reads, so
    an end-to-end verifier reranks its fine-tuned encoder's top-K and that encoder's encoder-only
    row is reported too; "base" always reranks the Base encoder's top-K.
    Costs (`time_first_stage`, `time_rerank`): ms per query on the first `cost_queries` queries,
    best of `cost_repeats` after a warm-up, for the first stage and for reranking at each K.
    Re-running after an interruption re-encodes nothing (the caches are on disk): only the
    verifier scoring is repeated.
    Verifier seeds: a method's rows carry its `Method.seed` (notebook 04's seed), the encoder-only
    baselines `seed`; methods of several seeds are reranked one by one and timed once per label.
    `plan` (`RerankPlan`) says what is swept, `compute` (`Compute`) how it runs.
    """
    compute = compute or Compute()
    ks = sorted({int(k) for k in plan.ks})
    if not ks or ks[0] < 1:
        raise ValueError(f"ks must be positive integers, got {ks}")
    for w in plan.weights:
        _check_weight(w)
    if plan.first_stage not in ("own", "base"):
        raise ValueError(f"first_stage must be 'own' or 'base', got {plan.first_stage!r}")
    if "base" not in baselines:
        raise ValueError("baselines needs the 'base' encoder: the first stage of every frozen verifier")
    rows = _GridRows(dict(backbone=backbone, **labels), seed)
    for ds in datasets:
        grid = _DatasetGrid(ds, rows, plan, compute, layout.cache_dir(work_dir, "rerank"), ks)
        for variant, encoder in baselines.items():
            grid.encoder_only(encoder, variant, ENCODER_ONLY, seed)
        for method in tqdm(methods, desc=f"rerank {ds.name}", unit="verifier", disable=not compute.show_progress):
            grid.rerank(method, baselines["base"], seed if method.seed is None else method.seed)
        log.info("%s: reranked with %d methods at K=%s", ds.name, len(methods), ks)

    results = pd.concat(rows.rows, ignore_index=True) if rows.rows else tidy([])
    per_query_df = pd.concat(rows.per_query, ignore_index=True) if rows.per_query else pd.DataFrame()
    cost_df = pd.DataFrame(rows.cost)
    if write and rows.rows:
        out = results_file(work_dir, "rerank").parent
        for name in ("rerank.parquet", "rerank_per_query.parquet", "rerank_cost.parquet"):
            set_aside_unlabelled(out / name)
        append_results(results, out / "rerank.parquet", key=RERANK_KEY)
        append_results(per_query_df, out / "rerank_per_query.parquet", key=PER_QUERY_KEY)
        append_results(cost_df, out / "rerank_cost.parquet", key=["dataset", "variant", "k"])
    return GridResult(results, per_query_df, cost_df)


@dataclass
class _GridRows:
    """What `rerank_grid` collects over its datasets: tidy rows, per-query rows and cost rows."""

    common: dict  # backbone and the caller's labels, on every row
    seed: int  # the grid's seed (the encoder-only baselines')
    rows: list = field(default_factory=list)
    per_query: list = field(default_factory=list)
    cost: list = field(default_factory=list)

    def record(self, result: RetrievalResult, variant, verifier, regime, k, weight, first, seed, folder=""):
        ident = dict(
            seed=seed,
            run=f"{self.common['backbone']}/{variant}-seed{seed}",
            variant=variant,
            verifier=verifier,
            regime=regime,
            k=int(k),
            weight=float(weight),
            first_stage=first,
            verifier_variant=folder,  # notebook 04's folder of the method; "" for an encoder alone
        )
        self.rows.append(result.to_tidy(**self.common, **ident))
        self.per_query.append(result.per_query_table(**self.common, **ident))


class _DatasetGrid:
    """One dataset's part of `rerank_grid`: a first stage per encoder (searched once, shared by the
    methods that read it), the encoder-only rows, each method's reranked rows, and the costs, timed
    once per method label and regime (a cost is the method's, not its seed's)."""

    def __init__(self, ds, rows: _GridRows, plan: RerankPlan, compute: Compute, cache_dir: Path, ks: list[int]):
        self.ds, self.rows, self.plan, self.compute, self.cache_dir, self.ks = ds, rows, plan, compute, cache_dir, ks
        self.queries = {q: ds.queries[q] for q in ds.qrels if q in ds.queries}
        n = plan.cost_queries
        self.timed = dict(list(self.queries.items())[:n]) if n else self.queries
        self.depth = max(MAX_K, ks[-1])
        self.first_stages: dict[tuple[int, int], tuple[Reranker, Candidates]] = {}
        self.timed_methods: set[tuple[str, str]] = set()

    def stage(self, encoder, token_encoder=None) -> tuple[Reranker, Candidates]:
        key = (id(encoder), id(token_encoder))
        if key not in self.first_stages:
            c = self.compute
            reranker = Reranker(
                encoder,
                self.ds.corpus,
                self.cache_dir,
                token_encoder=token_encoder,
                batch_size=c.batch_size,
                candidate_batch=c.candidate_batch,
                device=c.device,
                dtype=c.dtype,
                show_progress=c.show_progress,
            )
            self.first_stages[key] = (reranker, reranker.search(self.queries, self.depth))
        return self.first_stages[key]

    def encoder_only(self, encoder, variant, regime, seed, folder="") -> None:
        reranker, cands = self.stage(encoder)
        rankings = {q: [reranker.doc_ids[i] for i in row[:MAX_K]] for q, row in zip(cands.qids, cands.indices.tolist())}
        result = score_result(rankings, self.ds.qrels, self.ds.name, len(reranker), harness=HARNESS)
        self.rows.record(result, variant, "none", regime, MAX_K, 1.0, variant, seed, folder)
        if (variant, regime) not in self.timed_methods:
            self.timed_methods.add((variant, regime))
            first_ms = time_first_stage(reranker, self.timed, self.depth, self.plan.cost_repeats)
            self._cost(variant, folder, "none", regime, MAX_K, first_ms, 0.0, reranker, 0.0)

    def rerank(self, method: Method, base, seed: int) -> None:
        """`method`'s rows at every K and weight, over its first stage's top max(K) scored once."""
        if method.encoder is base:
            (reranker, cands), first = self.stage(base), "base"
        elif self.plan.first_stage == "own":
            self.encoder_only(method.encoder, f"{method.label}/encoder", method.regime, seed, method.verifier_variant)
            (reranker, cands), first = self.stage(method.encoder), f"{method.label}/encoder"
        else:
            (reranker, cands), first = self.stage(base, token_encoder=method.encoder), "base"
        deepest = cands.top(min(self.ks[-1], cands.k))
        v_scores = reranker.verifier_scores(method.verifier, self.queries, deepest)
        if method.noise_sigma:  # the noise control: the same noise for a (query, document) at every K
            pairs = [
                (self.queries[q], reranker.doc_ids[i])
                for q, row in zip(deepest.qids, deepest.indices.tolist())
                for i in row
            ]
            noise = pair_noise(pairs, method.noise_sigma, seed).reshape(tuple(v_scores.shape))
            v_scores = v_scores + torch.as_tensor(noise, dtype=v_scores.dtype, device=v_scores.device)
        for k in self.ks:
            top = cands.top(min(k, cands.k))
            for w in self.plan.weights:
                fused = fuse(top.scores, v_scores[:, : top.k], w)
                rankings = full_rankings(ranked(top, fused, reranker.doc_ids), cands, reranker.doc_ids)
                result = score_result(rankings, self.ds.qrels, self.ds.name, len(reranker))
                self.rows.record(
                    result, method.label, method.name, method.regime, k, w, first, seed, method.verifier_variant
                )
        if (method.label, method.regime) not in self.timed_methods:
            self.timed_methods.add((method.label, method.regime))
            first_ms = time_first_stage(reranker, self.timed, self.depth, self.plan.cost_repeats)
            tokens_mb = (
                0.0
                if reads_texts(method.verifier)
                else reranker.corpus_tokens(method.verifier.include_special).megabytes
            )
            for k in self.ks:
                rerank_ms = time_rerank(reranker, method.verifier, self.timed, k, self.plan.cost_repeats)
                self._cost(
                    method.label,
                    method.verifier_variant,
                    method.name,
                    method.regime,
                    k,
                    first_ms,
                    rerank_ms,
                    reranker,
                    tokens_mb,
                )
        if method.encoder is not base:
            reranker.release()  # an end-to-end encoder serves this one method: free its token cache

    def _cost(self, variant, folder, verifier, regime, k, first_ms, rerank_ms, reranker, tokens_mb) -> None:
        self.rows.cost.append(
            dict(
                dataset=self.ds.name,
                variant=variant,
                verifier_variant=folder,
                verifier=verifier,
                regime=regime,
                k=int(k),
                first_stage_ms=first_ms,
                rerank_ms=rerank_ms,
                n_timed=len(self.timed),
                index_mb=reranker.index_megabytes,
                token_cache_mb=tokens_mb,
                device=str(reranker.device),
            )
        )


def set_aside_unlabelled(path: Path) -> Path | None:
    """Rename a results table notebook 05 wrote before it recorded each reranker's notebook-04 variant
    (no `verifier_variant` column) to `<name>.before-variants<n>.parquet`, so its rows, labelled
    "F3-frozen" whatever data the verifier trained on, are not read beside the new ones (where one
    run reranks several variants they are "F3-frozen@balanced-small", ...). Nothing is deleted: the
    copy stays beside it and the warning names it. Returns the new path, or None when kept."""
    path = Path(path)
    if not path.exists():
        return None
    columns = pq.read_schema(path).names  # the column names only, not the table
    if "verifier_variant" in columns or "verifier" not in columns:
        return None
    n = 1
    while (aside := path.with_name(f"{path.stem}.before-variants{n}{path.suffix}")).exists():
        n += 1
    path.rename(aside)
    log.warning(
        "%s was written before notebook 05 recorded each verifier's notebook-04 variant; moved to %s so its "
        "rows are not mixed with this run's (re-run notebook 05 for every variant you want in the report)",
        path,
        aside,
    )
    return aside


def time_first_stage(reranker: Reranker, queries: dict[str, str], k: int = MAX_K, repeats: int = 3) -> float:
    """Milliseconds per query of the first stage (pooled query encoding + exact search), best of
    `repeats` (the minimum is the least disturbed by other processes on a shared machine)."""
    return 1000 * _best_of(lambda: reranker.search(queries, k), repeats) / len(queries)


def time_rerank(reranker: Reranker, verifier, queries: dict[str, str], k: int, repeats: int = 3) -> float:
    """Milliseconds per query of reranking K candidates (query token embeddings, maps, verifier),
    best of `repeats`, the corpus token cache already loaded."""
    cands = reranker.search(queries, k)
    if not reads_texts(verifier):
        reranker.corpus_tokens(verifier.include_special)
    return 1000 * _best_of(lambda: reranker.verifier_scores(verifier, queries, cands), repeats) / len(queries)


def _best_of(fn, repeats: int) -> float:
    fn()  # warm-up: lazy initialisation and allocator caches stay out of the timing
    best = float("inf")
    for _ in range(max(1, repeats)):
        start = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - start)
    return best


# ---------------------------------------------------------------------------------------------
# Tables and statistics


def bootstrap_vs_baseline(
    per_query: pd.DataFrame, baseline: str = "base", metric: str = "ndcg@10", n: int = 1000, seed: int = 0
) -> pd.DataFrame:
    """Paired bootstrap (reranked - encoder-only `baseline`) per method, K and weight, queries paired
    on (dataset, qid): mean delta, 95% CI, p-value, and `p_holm`, Holm-adjusted over every row of the
    table (it makes many comparisons: ~80 in the paper profile), the noise-control rerankers
    (`noise_methods`) in a family of their own. Empty when the baseline has no rows.
    Each test draws at least `n` resamples and enough that the smallest Holm p the table can show,
    `p_floor_holm` (`core.stats.holm_floor`), is 0.005 or below (`core.stats.resamples_for`).

    A method reranked with one verifier seed gets the BCa interval over queries and a permutation
    p-value (`harness.paired_bootstrap`); with several (notebook 05's `verifier_seeds`), the
    hierarchical bootstrap over seeds and queries (`core.stats.hierarchical_bootstrap`), so the
    interval covers the verifier's training noise too. `n_seeds` says which."""
    base = per_query[(per_query.variant == baseline) & (per_query.verifier == "none")]
    reranked = per_query[per_query.verifier != "none"]
    columns = [
        "variant",
        "verifier",
        "regime",
        "k",
        "weight",
        "baseline",
        "metric",
        "mean_delta",
        "ci_low",
        "ci_high",
        "p_value",
        "p_holm",
        "n_queries",
        "n_seeds",
        "n_resamples",
        "p_floor_holm",
    ]
    if base.empty or reranked.empty:
        return pd.DataFrame(columns=columns)
    rows = []
    groups = reranked.groupby(["variant", "verifier", "regime", "k", "weight"], sort=False)
    # Enough resamples that Holm over every row can reach 0.005, whatever `n` asked for.
    n = resamples_for(groups.ngroups, n)
    for (variant, verifier, regime, k, weight), grp in groups:
        if "seed" in grp.columns and grp.seed.nunique() > 1:
            stats = hierarchical_bootstrap(_seed_deltas(base, grp, metric), n=n, seed=seed)
        else:
            stats = {**paired_bootstrap(base, grp, metric=metric, n=n, seed=seed), "n_seeds": 1}
        rows.append(
            dict(
                variant=variant,
                verifier=verifier,
                regime=regime,
                k=int(k),
                weight=float(weight),
                baseline=baseline,
                metric=metric,
                **stats,
            )
        )
    out = pd.DataFrame(rows)
    # The noise control ("F1-frozen+noise2x") answers another question (what noise alone does): it is
    # corrected in a family of its own, so it neither dilutes nor joins the verifiers' comparisons.
    control = is_noise_control(out.variant)
    out["p_holm"], out["p_floor_holm"] = np.nan, np.nan
    for family in (control, ~control):
        if family.any():
            out.loc[family, "p_holm"] = holm(out.p_value[family])
            out.loc[family, "p_floor_holm"] = holm_floor(int(family.sum()), n)
    out["n_resamples"] = n
    if "verifier_variant" in reranked.columns:  # notebook 04's folder of each method (one per label)
        folders = reranked.groupby("variant", sort=False).verifier_variant.first()
        out.insert(1, "verifier_variant", out.variant.map(folders).fillna(""))
        columns = [columns[0], "verifier_variant", *columns[1:]]
    return out[columns]


def _seed_deltas(base: pd.DataFrame, reranked: pd.DataFrame, metric: str) -> np.ndarray:
    """Verifier seeds x queries matrix of reranked - baseline `metric`, paired on (dataset, qid): the
    baseline (an encoder alone) is the same at every verifier seed, so it is repeated at each and
    `core.stats.paired_deltas` pairs them. A seed, or the baseline, that lacks a query the others
    have is an error, not a smaller design."""
    seeds = sorted(reranked.seed.unique())
    cols = ["dataset", "qid", metric]
    both = pd.concat(
        [
            *(base[cols].assign(seed=s, variant="baseline") for s in seeds),
            reranked[["seed", *cols]].assign(variant="reranked"),
        ],
        ignore_index=True,
    )
    try:
        return paired_deltas(both, metric, "baseline", "reranked").to_numpy(dtype=float)
    except ValueError as err:
        raise ValueError(
            f"rerank seeds {seeds}: not every verifier seed (and the baseline) was reranked on the same "
            f"queries ({err}); re-run notebook 05 so each seed covers every query"
        ) from err


def rerank_summary(results: pd.DataFrame, metric: str = "ndcg@10", weight: float = 0.0) -> pd.DataFrame:
    """Methods x K (mean over datasets) at one weight, encoder-only rows in the K = 100 column's place."""
    df = results[results.metric == metric]
    reranked = df[(df.verifier != "none") & np.isclose(df.weight.astype(float), weight)]
    wide = reranked.pivot_table(index=["variant", "regime"], columns="k", values="value", aggfunc="mean", sort=False)
    wide.columns = [f"K={k}" for k in wide.columns]
    only = df[df.verifier == "none"].groupby(["variant", "regime"], sort=False).value.mean().rename("encoder only")
    return pd.concat([only.to_frame(), wide]).reset_index()


def cost_table(cost: pd.DataFrame) -> pd.DataFrame:
    """Per method: first-stage ms per query, rerank ms per query at each K, total at the largest K,
    and the memory (MB) of the pooled index and of the cached corpus token embeddings.
    Means over datasets."""
    if cost.empty:
        return cost
    first = cost.groupby("variant", sort=False).agg(
        regime=("regime", "first"),
        first_stage_ms=("first_stage_ms", "mean"),
        index_mb=("index_mb", "mean"),
        token_cache_mb=("token_cache_mb", "max"),
        device=("device", "first"),
    )
    reranked = cost[cost.verifier != "none"]
    if not reranked.empty:
        per_k = reranked.pivot_table(index="variant", columns="k", values="rerank_ms", aggfunc="mean", sort=False)
        per_k.columns = [f"rerank_ms@{k}" for k in per_k.columns]
        first = first.join(per_k)
        first[f"total_ms@{max(reranked.k)}"] = first.first_stage_ms + first[f"rerank_ms@{max(reranked.k)}"]
    return first.reset_index()


def tradeoff_table(
    results: pd.DataFrame,
    separation: pd.DataFrame,
    k: int | None = None,
    weight: float = 0.0,
    metric: str = "ndcg@10",
    auc_dataset: str = "negatives-heldout",
    family: str = "all",
) -> pd.DataFrame:
    """One row per method: near-miss separation AUC (notebook 04's verifiers.parquet) beside
    reranked `metric` at K and weight (encoder-only for the pooled Base / A / B).

    Columns: label, verifier (F0-F4, "" for pooled), kind (pooled / frozen / end2end / noise: the
    noise control, `noise_methods`),
    verifier_variant ("" for pooled), auc,
    auc_std, seeds, value. AUC is the mean over the seeds notebook 04 trained (`auc_std` their
    standard deviation, NaN for one seed); `auc_dataset` picks the near-miss set (negatives-heldout,
    sugarcrepe, condaqa). Where `results` say which notebook-04 variants were reranked (its
    `verifier_variant` column), only those variants' separation rows are read, named as notebook 05
    names them (`method_label`); otherwise `separation` must hold one variant."""
    sep = separation[(separation.dataset == auc_dataset) & (separation.metric == "auc")]
    if "family" in sep.columns:
        sep = sep[sep.family == family]
    folders = variant_folders(sep)
    reranked_folders = [v for v in dict.fromkeys(variant_folders(results)) if v]
    if reranked_folders:
        keep = folders.isin(["", *reranked_folders])
        sep, folders = sep[keep], folders[keep]
    rename = {"cosine Base": "base", "cosine Model A": "A", "cosine Model B": "B"}
    labels = [rename.get(v, method_label(v, f, reranked_folders)) for v, f in zip(sep.variant, folders, strict=True)]
    per_seed = sep.assign(label=labels, verifier_variant=folders)
    if per_seed.groupby("label").verifier_variant.nunique().gt(1).any():
        raise ValueError(
            "tradeoff_table: the separation rows hold several notebook-04 variants under one label; pass "
            "results with a verifier_variant column (notebook 05 writes it) or keep one variant"
        )
    of_label = per_seed.groupby("label")[["variant", "verifier_variant"]].first()
    stats = per_seed.groupby("label").value.agg(["mean", "std", "count"])
    auc = stats.rename(columns={"mean": "auc", "std": "auc_std", "count": "seeds"})
    df = results[results.metric == metric]
    reranked = df[df.verifier != "none"]
    k = int(k if k is not None else (reranked.k.max() if not reranked.empty else MAX_K))
    reranked = reranked[(reranked.k == k) & np.isclose(reranked.weight.astype(float), weight)]
    pooled = df[df.regime == ENCODER_ONLY]
    value = pd.concat([pooled.groupby("variant").value.mean(), reranked.groupby("variant").value.mean()])
    out = pd.concat([auc, value.rename("value")], axis=1, join="inner").reset_index(names="label")
    out = out.join(of_label, on="label")
    parts = [split_variant(v) for v in out.variant]
    noise = [parse_noise_name(v) for v in out.variant]
    out["verifier"] = [
        split_variant(n[0])[0] if n else name if regime else "" for (name, regime), n in zip(parts, noise, strict=True)
    ]
    # "cosine Base" has no regime; the noise control (frozen MaxSim + noise) is a kind of its own
    out["kind"] = ["noise" if n else regime or "pooled" for (_, regime), n in zip(parts, noise, strict=True)]
    return out[["label", "verifier", "kind", "verifier_variant", "auc", "auc_std", "seeds", "value"]]


def tradeoff_noise_line(table: pd.DataFrame) -> pd.DataFrame:
    """The noise control's points of a `tradeoff_table`, ordered by noise: frozen MaxSim itself
    ("0x", the frozen F1 row of the first variant), then each noise level. Empty without them."""
    noise = table[table.kind == "noise"]
    if noise.empty:
        return pd.DataFrame(columns=["auc", "value", "multiple", "multiple_label"])
    multiples = [parse_noise_name(label.split("@")[0])[1] for label in noise.label]
    line = noise.assign(multiple=multiples)
    base = table[(table.label.str.split("@").str[0] == NOISE_CONTROL_BASE) & table.kind.eq("frozen")]
    if "verifier_variant" in table.columns and not base.empty:
        base = base[variant_folders(base).isin(set(variant_folders(noise)))]
    line = pd.concat([base.head(1).assign(multiple=0.0), line], ignore_index=True).sort_values("multiple")
    return line.assign(multiple_label=[f"{m:g}x" for m in line.multiple])[
        ["auc", "value", "multiple", "multiple_label"]
    ]


# ---------------------------------------------------------------------------------------------
# Small helpers


def _check_k(k: int, n_docs: int) -> int:
    if int(k) != k or k < 1:
        raise ValueError(f"k must be a positive integer, got {k!r}")
    return min(int(k), n_docs)


def _check_weight(weight: float) -> None:
    if not 0.0 <= float(weight) <= 1.0:
        raise ValueError(f"fusion weight must be in [0, 1] (score = w * pooled + (1 - w) * verifier), got {weight}")


def _sync(device) -> None:
    if torch.device(device).type == "cuda":
        torch.cuda.synchronize(device)


def describe_cache(path: str | os.PathLike) -> dict:
    """Size on disk (MB) of the cache files under `path`, by kind (pooled / tokens)."""
    path = Path(path)
    sizes = {"pooled": 0.0, "tokens": 0.0}
    for f in path.rglob("*.safetensors"):
        kind = "pooled" if f.name.startswith("pooled-") else "tokens"
        sizes[kind] += f.stat().st_size / 2**20
    return sizes


# Notebook 05's answer table, written once into {work_dir}/results/05/ (the report and README read it).
RERANK_ANSWER_FILE = "rerank_answer.parquet"
# The columns of a bootstrap test carried beside a reranking result.
BOOT_COLUMNS = (
    "mean_delta",
    "ci_low",
    "ci_high",
    "p_value",
    "p_holm",
    "p_floor_holm",
    "n_resamples",
    "n_queries",
    "n_seeds",
)


def rerank_answer(results: pd.DataFrame, boot: pd.DataFrame | None = None, metric: str = "ndcg@10") -> pd.DataFrame:
    """Notebook 05's answer: each encoder alone and each verifier reranking at the largest K (pure
    rerank, weight 0, when it ran), `metric` as the mean over datasets, and each reranker against
    Base from `boot`, the notebook's `bootstrap_vs_baseline` table (paired over queries, and over
    verifier seeds too where there are several; Holm over every K and weight the notebook ran)."""
    missing = sorted({"variant", "verifier", "regime", "k", "weight", "metric", "value"} - set(results.columns))
    if missing:
        raise KeyError(f"rerank results lack columns {missing}; notebook 05 writes them (re-run it)")
    df = results[results.metric == metric]
    reranked = df[df.verifier != "none"]
    alone = (
        df[df.regime == ENCODER_ONLY]
        .groupby(["variant"], sort=False, as_index=False)
        .value.mean()
        .assign(verifier="none", regime=ENCODER_ONLY, k=np.nan, weight=np.nan)
    )
    if reranked.empty:
        return alone.rename(columns={"value": metric})
    k = int(reranked.k.max())
    weights = sorted(reranked.weight.astype(float).unique())
    weight = 0.0 if 0.0 in weights else weights[0]
    at = reranked[(reranked.k == k) & np.isclose(reranked.weight.astype(float), weight)]
    # Notebook 04's variant (training data, size) of each reranker, when notebook 05 says it.
    at = at.assign(verifier_variant=variant_folders(at))
    top = (
        at.groupby(["variant", "verifier", "regime"], sort=False, as_index=False)
        .agg(value=("value", "mean"), verifier_variant=("verifier_variant", "first"))
        .assign(k=k, weight=weight)
    )
    # Per variant in the order reranked: F0 frozen, F0 end2end, F1 frozen, ...
    folder_order = {v: i for i, v in enumerate(dict.fromkeys(top.verifier_variant))}
    top = (
        top.assign(_f=top.verifier_variant.map(folder_order), _r=regime_rank(top.regime))
        .sort_values(["_f", "verifier", "_r"], kind="stable")
        .drop(columns=["_f", "_r"])
    )
    out = pd.concat([alone.assign(verifier_variant=""), top], ignore_index=True).rename(columns={"value": metric})
    if boot is not None and not boot.empty:
        boot = boot[(boot.metric == metric) & (boot.k == k) & np.isclose(boot.weight.astype(float), weight)]
        out = out.merge(
            boot[["variant", *BOOT_COLUMNS]],
            on="variant",
            how="left",
        )
    return out[
        ["variant", "verifier_variant", "verifier", "regime", "k", "weight", metric]
        + [c for c in BOOT_COLUMNS if c in out]
    ]
