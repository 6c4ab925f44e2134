"""Pooled-space geometry: how close minimal meaning-changing edits sit under pooled cosine.

The paper's Figure 1 shows, for Model A and Model B, the cosine between a sentence and its minimal
near-miss (negation, binding/order, spatial), next to reference pairs; it reports pictures only, and
its near-miss test has no positives. Here every family also gets numbers, against MRPC paraphrases
(the metrics are `compsense.nearmiss.metrics`'s, defined once there):

- near-miss AUC ("auc"): MRPC paraphrase cosines against the family's near-miss cosines;
- the mean near-miss cosine, its gap to the mean paraphrase cosine, and the anisotropy baseline
  (mean cosine of random sentence pairs), which says where "unrelated" sits for this encoder;
- pairwise accuracy, cos(s, paraphrase) against cos(s, near-miss), where a sentence has both.

This notebook's protocol (notebook 04's differs, see `compsense.nearmiss.evaluation`): a near-miss
pair is oriented as (anchor, near-miss) with the anchor on either side of the pair, and the anchor
gets one paraphrase, the first MRPC partner found by text or source id (`attach_paraphrases`).

Flow: `load_near_misses`, `positive_pairs`, `reference_pairs`, `sugarcrepe_caption_pairs` build pair
frames; `cosine_scores` encodes each model once and returns one row per scored pair (the score
frame); `separation_metrics` turns it into a tidy table; `write_geometry` stores both under
{work_dir}/results/03/. Figures live in `compsense.figures.geometry` and read these frames, never the
encoders. `pooled_nearmiss_auc` is notebook 02's near-miss axis of the dose-response figure.
"""

from __future__ import annotations

import hashlib
import os
import warnings
from pathlib import Path
from typing import Iterable, Mapping, Sequence

import numpy as np
import pandas as pd
from tqdm.auto import tqdm

from compsense.core.encoders import Encoding, encode_pooled, load_encoder, quiet_transformers
from compsense.core.layout import model_key, pairs_file, parse_model_key, results_file
from compsense.core.storage import append_results, read_table, stamp_commit, tidy, write_table
from compsense.data.family_names import PAPER_FAMILIES, resolve_families
from compsense.nearmiss.metrics import (
    ALL_FAMILIES,
    AUC,
    PAIRWISE_ACCURACY,
    near_miss_auc,
    near_miss_auc_interval,
    pairwise_accuracy,
    pairwise_accuracy_interval,
)

PAIR_COLUMNS = ["sentence1", "sentence2", "family", "edit", "source_id", "split"]
# Panel order: the paper's three families first (Figure 1), then other datasets' names for
# binding-style edits ("role_swap", "order"); any other family follows alphabetically.
PANEL_ORDER = (*PAPER_FAMILIES, "role_swap", "order")
# The paper family each SugarCrepe subset tests, for labels; the subset name stays the table's key.
SUGARCREPE_FAMILY = {
    "swap_att": "binding",
    "swap_obj": "binding",
    "replace_rel": "relation, incl. spatial",
    "replace_att": "attribute",
    "replace_obj": "object",
    "add_att": "addition",
    "add_obj": "addition",
}
SCORE_COLUMNS = [
    "model",
    "backbone",
    "variant",
    "seed",
    "dataset",
    "family",
    "kind",
    "cosine",
    "paraphrase_cosine",
    "anchor",
]
TABLE_KEY = ["run", "backbone", "variant", "seed", "dataset", "family", "metric"]
NEAR_MISS_DATASETS = ("negatives", "sugarcrepe")
# The columns of `geometry_summary`, in reading order: separation first, then where near-misses sit.
SUMMARY_METRICS = (
    AUC,
    PAIRWISE_ACCURACY,
    f"{PAIRWISE_ACCURACY}_ci_low",
    f"{PAIRWISE_ACCURACY}_ci_high",
    "near_miss_cos_mean",
    "gap_to_positive",
    "random_cos_mean",
    "relative_position",
)
HELDOUT = "heldout"
_SOURCE_PREFIX = r"^[A-Za-z_]+[-:]"


# ---------------------------------------------------------------------------------------------
# Cosines


def pair_cosines(
    encoder, pairs: Sequence[tuple[str, str]], batch_size: int = 64, show_progress: bool = False
) -> np.ndarray:
    """Pooled cosine of each (a, b) pair; every distinct text is encoded once."""
    if len(pairs) == 0:
        return np.zeros(0, dtype=np.float32)
    texts = sorted({t for pair in pairs for t in pair})
    index = {t: i for i, t in enumerate(texts)}
    emb = encode_pooled(encoder, texts, "sentence", batch_size, show_progress).cpu().numpy()
    a = emb[[index[p[0]] for p in pairs]]
    b = emb[[index[p[1]] for p in pairs]]
    return np.sum(a * b, axis=1)


def cosine_matrix(encoder, texts: Sequence[str]) -> np.ndarray:
    """Pooled cosine of every pair of `texts` (rows and columns in the order given)."""
    emb = encode_pooled(encoder, texts, "sentence").cpu().numpy()
    return emb @ emb.T


def histogram(
    scores, bins: int | Sequence[float] = 40, density: bool = False, tolerance: float = 1e-3
) -> tuple[np.ndarray, np.ndarray]:
    """(counts, edges) of cosines over [-1, 1]; every value lands in a bin.

    The authors binned [0, 1], so negative cosines vanished from their plots without a word. Here
    the bins must cover [-1, 1]; float error just past +-1 is clipped in, while NaN or values
    clearly outside [-1, 1] (not cosines) raise. With `density`, the counts integrate to 1.
    """
    values = np.asarray(scores, dtype=float).ravel()
    if np.isnan(values).any():
        raise ValueError(f"{int(np.isnan(values).sum())} NaN cosines; check the encoder's output")
    if values.size and np.abs(values).max() > 1 + tolerance:
        raise ValueError(
            f"values up to {np.abs(values).max():.4f} in absolute value are not cosines "
            "(expected [-1, 1]); were the embeddings normalized?"
        )
    edges = np.linspace(-1.0, 1.0, bins + 1) if isinstance(bins, (int, np.integer)) else np.asarray(bins, float)
    if edges.ndim != 1 or len(edges) < 2 or edges[0] > -1 or edges[-1] < 1 or np.any(np.diff(edges) <= 0):
        raise ValueError("bins must be a count or increasing edges that cover [-1, 1]")
    counts, edges = np.histogram(np.clip(values, -1.0, 1.0), bins=edges)
    if density:
        return counts / max(values.size, 1) / np.diff(edges), edges
    return counts, edges


# ---------------------------------------------------------------------------------------------
# Pair frames (sentence1, sentence2, ...): what gets scored


def load_near_misses(
    work_dir: str | os.PathLike,
    split: str | Sequence[str] | None = HELDOUT,
    families: Sequence[str] | None = None,
    max_pairs_per_family: int | None = None,
    seed: int = 42,
) -> pd.DataFrame:
    """Notebook 01's near-miss pairs ({work_dir}/negatives/pairs.parquet), one split, some families.

    `split="heldout"` keeps every split except "train", the one Model B trained on; when there is
    none, all rows are kept with a warning (the numbers then include training near-misses).
    `max_pairs_per_family` samples each family separately (seeded) so that no family vanishes.
    """
    path = pairs_file(work_dir)
    if not path.exists():
        raise FileNotFoundError(
            f"{path} does not exist: the near-miss pairs come from notebook 01 (01_data_and_negatives). "
            f"Run it first with the same work_dir, e.g.\n  papermill notebooks/01_data_and_negatives.ipynb "
            f"/tmp/01.ipynb -p work_dir {work_dir}"
        )
    df = read_table(path)
    missing = [c for c in PAIR_COLUMNS if c not in df.columns]
    if missing:
        raise ValueError(f"{path}: missing columns {missing}; expected {PAIR_COLUMNS}. Re-run notebook 01")
    df = _select_split(df, split, path)
    families = resolve_families(families)
    if families is not None:
        unknown = sorted(set(families) - set(df.family))
        if unknown:
            raise ValueError(f"{path}: no pairs of famil(ies) {unknown}; found {sorted(df.family.unique())}")
        df = df[df.family.isin(families)]
    if max_pairs_per_family is not None:
        df = pd.concat(
            [
                g.sample(n=min(len(g), max_pairs_per_family), random_state=seed)
                for _, g in df.groupby("family", sort=True)
            ]
        )
    return df.sort_index().reset_index(drop=True)


def _select_split(df: pd.DataFrame, split, path: Path) -> pd.DataFrame:
    if split is None:
        return df
    if split == HELDOUT:
        kept = df[df.split != "train"]
        if kept.empty:
            warnings.warn(
                f"{path}: every pair is in split 'train' (Model B's training split); scoring all "
                "of them, so Model B's numbers are on pairs it was trained on",
                stacklevel=3,
            )
            return df
        return kept
    wanted = [split] if isinstance(split, str) else list(split)
    kept = df[df.split.isin(wanted)]
    if kept.empty:
        raise ValueError(
            f"{path}: no pairs in split {wanted}; found splits {sorted(df.split.unique())} "
            f"(use split=None for all, or {HELDOUT!r} for all but 'train')"
        )
    return kept


def positive_pairs(
    pairs: Iterable, stsb_min_score: float = 4.0, limit: int | None = None, seed: int = 42
) -> pd.DataFrame:
    """Paraphrase pairs from `compsense.data.datasets.SentencePair`s: MRPC label 1, STS-B score >= `stsb_min_score`.

    Columns sentence1, sentence2, id1, id2, source; `limit` samples (seeded) without replacement.
    """
    rows = [
        {"sentence1": p.sentence1, "sentence2": p.sentence2, "id1": p.id1, "id2": p.id2, "source": p.source}
        for p in pairs
        if (p.label >= stsb_min_score if p.source == "stsb" else p.label == 1)
    ]
    if not rows:
        raise ValueError("no paraphrase pairs: expected MRPC pairs with label 1 or STS-B pairs with a high score")
    df = pd.DataFrame(rows)
    if limit is not None and limit < len(df):
        df = df.sample(n=limit, random_state=seed).sort_index()
    return df.reset_index(drop=True)


def reference_pairs(paraphrases: pd.DataFrame, n: int, seed: int = 42) -> pd.DataFrame:
    """The reference distributions of Figure 1: paraphrase pairs and random pairs, `n` of each (seeded).

    The paper overlays 10k NQ (query, positive) and (query, random) pairs from its training data;
    offline, the retrieval training data are MRPC/STS-B paraphrases (see `compsense.retrieval.training`), so
    those stand in. Random pairs join sentences of different paraphrase pairs; they are drawn from
    the same sentences as the paraphrase sample, so they cost no extra encoding. When fewer than
    `n` paraphrase pairs exist, all are used (the random sample keeps size `n`).
    Columns: kind ("reference_positive" or "reference_random"), sentence1, sentence2.
    """
    if len(paraphrases) < 2:
        raise ValueError("reference_pairs needs at least two paraphrase pairs")
    rng = np.random.default_rng(seed)
    positives = paraphrases.iloc[np.sort(rng.permutation(len(paraphrases))[:n])]
    sentences = np.r_[positives.sentence1.to_numpy(), positives.sentence2.to_numpy()]
    owner = np.r_[np.arange(len(positives)), np.arange(len(positives))]
    first, second = rng.integers(len(sentences), size=(2, n))
    # Redraw pairs that fall inside one paraphrase pair or repeat a text.
    for _ in range(100):
        bad = (owner[first] == owner[second]) | (sentences[first] == sentences[second])
        if not bad.any():
            break
        second[bad] = rng.integers(len(sentences), size=int(bad.sum()))
    keep = (owner[first] != owner[second]) & (sentences[first] != sentences[second])
    return pd.concat(
        [
            pd.DataFrame(
                {
                    "kind": "reference_positive",
                    "sentence1": positives.sentence1.to_numpy(),
                    "sentence2": positives.sentence2.to_numpy(),
                }
            ),
            pd.DataFrame(
                {"kind": "reference_random", "sentence1": sentences[first[keep]], "sentence2": sentences[second[keep]]}
            ),
        ],
        ignore_index=True,
    )


def sugarcrepe_caption_pairs(examples: Iterable, per_subset: int | None = None, seed: int = 42) -> pd.DataFrame:
    """SugarCrepe (caption, negative caption) pairs, `per_subset` sampled per subset (seeded).

    An external near-miss test nobody on this project wrote. Columns: sentence1, sentence2,
    family (the subset), example_id.

    The anchor is the caption itself and its near-miss cosines are set against MRPC paraphrase
    cosines: where near-misses sit in the pooled space. Notebook 04's
    `compsense.nearmiss.evaluation.sugarcrepe_pairs` is a different protocol (another caption of the
    same image as the query, with positives of the same image).
    """
    df = pd.DataFrame(
        [
            {"sentence1": e.caption, "sentence2": e.negative_caption, "family": e.subset, "example_id": e.example_id}
            for e in examples
        ]
    )
    if df.empty:
        raise ValueError("no SugarCrepe examples given")
    if per_subset is not None:
        df = pd.concat(
            [g.sample(n=min(len(g), per_subset), random_state=seed) for _, g in df.groupby("family", sort=True)]
        )
    return df.sort_index().reset_index(drop=True)


def attach_paraphrases(near_misses: pd.DataFrame, positives: pd.DataFrame) -> pd.DataFrame:
    """Orient each near-miss pair as (anchor, near_miss) and add the anchor's paraphrase where known.

    A near-miss pair's anchor is the original sentence it was edited from; its paraphrase is the
    MRPC partner of that sentence in a label-1 pair. Matching is on the sentence text, on either
    side of the pair: the negatives module may put the original in sentence2 (it balances what the
    two sides contain). When the text is not found, `source_id` ('mrpc-702876', the MRPC sentence
    id, optionally prefixed) is looked up among the pairs' ids. A sentence with several partners
    takes its first. Unmatched rows keep sentence1 as the anchor and an empty
    paraphrase.

    Notebook 04's `compsense.nearmiss.evaluation.paraphrase_positives` pairs differently, on purpose:
    sentence1 is always the query (a verifier is not symmetric) and every paraphrase of it counts.
    The metric is the same (`metrics.pairwise_accuracy`).
    """
    partner: dict[str, str] = {}
    partner_by_id: dict[str, str] = {}
    ids = (positives.id1, positives.id2) if {"id1", "id2"} <= set(positives.columns) else ([None] * len(positives),) * 2
    for a, b, id_a, id_b in zip(positives.sentence1, positives.sentence2, *ids, strict=True):
        partner.setdefault(a, b)
        partner.setdefault(b, a)
        partner_by_id.setdefault(str(id_a), b)
        partner_by_id.setdefault(str(id_b), a)
    s1_known = near_misses.sentence1.map(partner).notna()
    s2_known = near_misses.sentence2.map(partner).notna() & ~s1_known
    out = near_misses.copy()
    out["anchor"] = near_misses.sentence2.where(s2_known, near_misses.sentence1)
    out["near_miss"] = near_misses.sentence1.where(s2_known, near_misses.sentence2)
    # Fallback on the id when the text was normalised: source_id 'mrpc-702876' names MRPC sentence 702876.
    by_id = near_misses.source_id.astype(str).str.replace(_SOURCE_PREFIX, "", regex=True).map(partner_by_id)
    out["paraphrase"] = out.anchor.map(partner).fillna(by_id)
    return out


# ---------------------------------------------------------------------------------------------
# Scoring: one encoding pass per model


def cosine_scores(
    encoders: Mapping[str, object],
    near_misses: pd.DataFrame,
    positives: pd.DataFrame,
    references: pd.DataFrame | None = None,
    sugarcrepe: pd.DataFrame | None = None,
    backbone: str | None = None,
    seed: int = 42,
    encoding: Encoding | None = None,
) -> pd.DataFrame:
    """Pooled cosine of every pair under every model: the score frame (one row per model x pair).

    `encoders` maps a model key ('base-seed42', 'A-seed42', see `model_key`) to an encoder, or to a
    name or checkpoint path that is loaded here one at a time, with `encoding`'s device and
    max_seq_length (so a grid of large models never sits in memory at once); encoder objects are
    used as given. `encoding` (`compsense.core.encoders.Encoding`): batch size, device, length, bars.
    Kinds of rows:
    - near_miss: (anchor, near-miss), dataset "negatives" (family from pairs.parquet) or "sugarcrepe"
      (family = subset); `paraphrase_cosine` holds cos(anchor, paraphrase) where the anchor has one;
    - positive: the paraphrase pairs the AUC is computed against (dataset "paraphrase");
    - family_random: random (anchor, anchor) pairs within a family: its anisotropy baseline;
    - reference_positive / reference_random: the reference distributions (dataset "reference").
    Each model encodes every distinct text once. `seed` seeds the random pairs.
    """
    encoding = encoding or Encoding()
    jobs = _pair_jobs(near_misses, positives, references, sugarcrepe, seed)
    all_pairs = [pair for job in jobs for pair in job["pairs"] + job.get("paraphrase_pairs", [])]
    frames = []
    models = tqdm(list(encoders.items()), desc="encode", unit="model", disable=not encoding.show_progress)
    for key, encoder in models:
        variant, model_seed = parse_model_key(key)
        if isinstance(encoder, (str, os.PathLike)):
            encoder = load_encoder(
                encoder,
                device=encoding.device,
                max_seq_length=encoding.max_seq_length,
                seed=model_seed if model_seed is not None else seed,
            )
        cosines = pair_cosines(encoder, all_pairs, batch_size=encoding.batch_size)
        start = 0
        for job in jobs:
            n_main, n_para = len(job["pairs"]), len(job.get("paraphrase_pairs", []))
            main, para = cosines[start : start + n_main], cosines[start + n_main : start + n_main + n_para]
            start += n_main + n_para
            frames.append(
                _job_rows(job, main, para, key, backbone, variant, model_seed if model_seed is not None else seed)
            )
    scores = pd.concat(frames, ignore_index=True)
    return scores[SCORE_COLUMNS]


def _pair_jobs(near_misses, positives, references, sugarcrepe, seed) -> list[dict]:
    """Every set of pairs to score, as {dataset, family, kind, pairs[, paraphrase_pairs]}."""
    jobs = [
        {
            "dataset": "paraphrase",
            "family": "paraphrase",
            "kind": "positive",
            "pairs": list(zip(positives.sentence1, positives.sentence2, strict=True)),
        }
    ]
    if references is not None:
        for kind, group in references.groupby("kind", sort=True):
            jobs.append(
                {
                    "dataset": "reference",
                    "family": kind,
                    "kind": kind,
                    "pairs": list(zip(group.sentence1, group.sentence2, strict=True)),
                }
            )
    oriented = attach_paraphrases(near_misses, positives)
    sources = [("negatives", oriented)]
    if sugarcrepe is not None:
        sources.append(
            (
                "sugarcrepe",
                sugarcrepe.assign(anchor=sugarcrepe.sentence1, near_miss=sugarcrepe.sentence2, paraphrase=None),
            )
        )
    rng = np.random.default_rng(seed)
    for dataset, frame in sources:
        for family, group in frame.groupby("family", sort=True):
            matched = group.paraphrase.notna().to_numpy()
            jobs.append(
                {
                    "dataset": dataset,
                    "family": family,
                    "kind": "near_miss",
                    "pairs": list(zip(group.anchor, group.near_miss, strict=True)),
                    "matched": matched,
                    "paraphrase_pairs": list(zip(group.anchor[matched], group.paraphrase[matched], strict=True)),
                }
            )
            jobs.append(
                {
                    "dataset": dataset,
                    "family": family,
                    "kind": "family_random",
                    "pairs": _random_anchor_pairs(group.anchor.unique(), rng),
                }
            )
    return jobs


def _random_anchor_pairs(anchors: np.ndarray, rng: np.random.Generator) -> list[tuple[str, str]]:
    """Each anchor with another anchor of the same family (a random cyclic shift: no self-pairs)."""
    if len(anchors) < 2:
        return []
    order = rng.permutation(len(anchors))
    return [(anchors[i], anchors[j]) for i, j in zip(order, np.roll(order, 1), strict=True)]


def _job_rows(
    job: dict, cosines: np.ndarray, paraphrase_cosines: np.ndarray, key, backbone, variant, seed
) -> pd.DataFrame:
    paraphrase_cosine = np.full(len(cosines), np.nan)
    if "matched" in job:
        paraphrase_cosine[job["matched"]] = paraphrase_cosines
    return pd.DataFrame(
        {
            "model": key,
            "backbone": backbone,
            "variant": variant,
            "seed": seed,
            "dataset": job["dataset"],
            "family": job["family"],
            "kind": job["kind"],
            "cosine": cosines.astype(float),
            "paraphrase_cosine": paraphrase_cosine,
            # the anchor a near-miss edits: intervals resample anchors, not rows
            "anchor": [a for a, _ in job["pairs"]] if job["kind"] == "near_miss" else None,
        }
    )


# ---------------------------------------------------------------------------------------------
# Numbers


def separation_metrics(scores: pd.DataFrame, **labels) -> pd.DataFrame:
    """Tidy table (run, backbone, variant, seed, dataset, metric, value, family, model) from a score frame.

    Per model, dataset and family of near-misses:
    - n_pairs; near_miss_cos_mean, near_miss_cos_std;
    - auc (`metrics.near_miss_auc`): paraphrase ('positive') cosines against near-miss cosines;
    - gap_to_positive: mean paraphrase cosine minus mean near-miss cosine (higher is better);
    - random_cos_mean: mean cosine of random anchor pairs of the family (anisotropy baseline);
    - relative_position: (near-miss mean - random mean) / (paraphrase mean - random mean):
      0 = near-misses look as unrelated as random pairs, 1 = as close as paraphrases;
    - n_matched, pairwise_accuracy (`metrics.pairwise_accuracy`: cos(s, paraphrase) against
      cos(s, near-miss), ties half) with its 95% interval resampling anchors
      (pairwise_accuracy_ci_low/high, `metrics.pairwise_accuracy_interval`), matched_gap (mean of
      the difference): only where anchors have paraphrases.
    Families: each on its own, and on dataset "negatives" family "all", the paper's families
    (`PAPER_FAMILIES`) pooled; the other families never enter "all".
    Per model, family "all": n_positive, positive_cos_mean (dataset "paraphrase"), and
    reference_positive_cos_mean, reference_random_cos_mean (the overall anisotropy baseline) and
    reference_auc (dataset "reference"). `labels` become extra constant columns.
    """
    rows = []
    for model, group in scores.groupby("model", sort=False):
        ident = {
            "model": model,
            "backbone": group.backbone.iloc[0],
            "variant": group.variant.iloc[0],
            "seed": int(group.seed.iloc[0]),
        }
        ident["run"] = f"{ident['backbone']}/{ident['variant']}-seed{ident['seed']}"
        positive = group.loc[group.kind == "positive", "cosine"].to_numpy()
        if len(positive) == 0:
            raise ValueError(f"{model}: the score frame has no 'positive' rows to compare near-misses against")
        rows += [
            _row(ident, "paraphrase", "all", "n_positive", len(positive)),
            _row(ident, "paraphrase", "all", "positive_cos_mean", positive.mean()),
        ]
        rows += _reference_rows(ident, group)
        near = group[group.kind == "near_miss"]
        randoms = group[group.kind == "family_random"]
        # Each family on its own, and "all": the paper's families pooled (only they; the others are
        # families Model B never trained on, which would dilute the headline).
        paper = near[(near.dataset == "negatives") & near.family.isin(PAPER_FAMILIES)]
        pooled = [(("negatives", ALL_FAMILIES), paper)] if not paper.empty else []
        for (dataset, family), fam in [*near.groupby(["dataset", "family"], sort=True), *pooled]:
            families = PAPER_FAMILIES if family == ALL_FAMILIES else (family,)
            random = randoms.loc[(randoms.dataset == dataset) & randoms.family.isin(families), "cosine"].to_numpy()
            metrics = family_metrics(
                positive,
                fam.cosine.to_numpy(),
                random,
                fam.paraphrase_cosine.to_numpy(),
                anchors=fam.anchor.to_numpy() if "anchor" in fam else None,
                seed=ident["seed"],
            )
            rows += [_row(ident, dataset, family, m, v) for m, v in metrics.items()]
    table = tidy(rows, **labels)
    table["seed"] = table["seed"].astype(int)
    return table


def family_metrics(
    positive: np.ndarray,
    near_miss: np.ndarray,
    random: np.ndarray | None = None,
    paraphrase_of_anchor: np.ndarray | None = None,
    anchors: np.ndarray | None = None,
    seed: int = 0,
) -> dict[str, float]:
    """The numbers of one family under one model (see `separation_metrics`); NaN paraphrase
    cosines mark near-misses whose anchor has no paraphrase; `anchors` (one per near-miss) are what
    the pairwise-accuracy interval resamples (default: each near-miss its own anchor)."""
    near_miss = np.asarray(near_miss, float)
    metrics = {
        "n_pairs": len(near_miss),
        "near_miss_cos_mean": near_miss.mean(),
        "near_miss_cos_std": near_miss.std(),
        AUC: near_miss_auc(positive, near_miss),
        "gap_to_positive": np.mean(positive) - near_miss.mean(),
    }
    if random is not None and len(random):
        metrics["random_cos_mean"] = float(np.mean(random))
        span = np.mean(positive) - metrics["random_cos_mean"]
        metrics["relative_position"] = (near_miss.mean() - metrics["random_cos_mean"]) / span if span else np.nan
    if paraphrase_of_anchor is not None:
        para = np.asarray(paraphrase_of_anchor, float)
        matched = ~np.isnan(para)
        metrics["n_matched"] = int(matched.sum())
        if matched.any():
            # One paraphrase per anchor here, so the pairs are aligned.
            metrics[PAIRWISE_ACCURACY] = pairwise_accuracy(para[matched], near_miss[matched])
            metrics["matched_gap"] = float(np.mean(para[matched] - near_miss[matched]))
            groups = None if anchors is None else np.asarray(anchors, dtype=object)[matched]
            if len(set(range(matched.sum())) if groups is None else set(groups)) >= 2:
                low, high = pairwise_accuracy_interval(para[matched], near_miss[matched], groups, seed=seed)
                metrics[f"{PAIRWISE_ACCURACY}_ci_low"], metrics[f"{PAIRWISE_ACCURACY}_ci_high"] = low, high
    return {k: float(v) for k, v in metrics.items()}


def _reference_rows(ident: dict, group: pd.DataFrame) -> list[dict]:
    ref_pos = group.loc[group.kind == "reference_positive", "cosine"].to_numpy()
    ref_rand = group.loc[group.kind == "reference_random", "cosine"].to_numpy()
    rows = []
    if len(ref_pos):
        rows.append(_row(ident, "reference", "all", "reference_positive_cos_mean", ref_pos.mean()))
    if len(ref_rand):
        rows.append(_row(ident, "reference", "all", "reference_random_cos_mean", ref_rand.mean()))
    if len(ref_pos) and len(ref_rand):
        # The same AUC with random pairs in the near-misses' place: how far apart the two yardsticks sit.
        rows.append(_row(ident, "reference", "all", "reference_auc", near_miss_auc(ref_pos, ref_rand)))
    return rows


def _row(ident: dict, dataset: str, family: str, metric: str, value) -> dict:
    return {**ident, "dataset": dataset, "family": family, "metric": metric, "value": float(value)}


def geometry_summary(table: pd.DataFrame, metrics: Sequence[str] = SUMMARY_METRICS) -> pd.DataFrame:
    """Wide view of `separation_metrics`' table for reading: rows (backbone, dataset, family),
    columns (metric, variant), mean over seeds."""
    sub = table[table.metric.isin(metrics) & table.dataset.isin(NEAR_MISS_DATASETS)]
    if sub.empty:
        raise ValueError(f"no rows with metrics {list(metrics)} in the table; found {sorted(table.metric.unique())}")
    wide = sub.pivot_table(
        index=["backbone", "dataset", "family"], columns=["metric", "variant"], values="value", aggfunc="mean"
    )
    order = [(m, v) for m in metrics for v in variant_order(sub.variant.unique()) if (m, v) in wide.columns]
    return wide[order]


def reference_summary(table: pd.DataFrame) -> pd.DataFrame:
    """The per-model yardsticks (paraphrase and reference means, anisotropy, reference AUC):
    rows (backbone, dataset, metric), one column per variant, mean over seeds."""
    sub = table[table.family == "all"]
    wide = sub.pivot_table(index=["backbone", "dataset", "metric"], columns="variant", values="value", aggfunc="mean")
    return wide[variant_order(wide.columns)]


def variant_order(variants: Iterable[str]) -> list[str]:
    """base first, then A, B, then anything else (sweep points) by name."""
    rank = {"base": 0, "A": 1, "B": 2}
    return sorted(set(variants), key=lambda v: (rank.get(v, 3), v))


# ---------------------------------------------------------------------------------------------
# Writing


def write_geometry(table: pd.DataFrame, scores: pd.DataFrame | None, work_dir) -> dict[str, Path]:
    """Merge `table` into {work_dir}/results/03/geometry.parquet (rows with the same run, dataset,
    family and metric are replaced) and store `scores` as geometry_scores.parquet, replacing the
    rows of the same backbones, so figures can be redrawn without encoding anything."""
    written = {"table": results_file(work_dir, "geometry")}
    append_results(table, written["table"], key=TABLE_KEY)
    if scores is not None:
        written["scores"] = results_file(work_dir, "geometry_scores")
        scores = stamp_commit(scores)  # the scores beside the rows they give, with the same commit
        if written["scores"].exists():
            old = read_table(written["scores"])
            scores = pd.concat([old[~old.backbone.isin(scores.backbone.unique())], scores], ignore_index=True)
        write_table(scores, written["scores"])
    return written


# ---------------------------------------------------------------------------------------------
# The training grid's near-miss axis (notebook 02's dose-response figure)

NEARMISS_TABLE = "nearmiss_pooled.parquet"


def pooled_nearmiss_auc(
    runs: pd.DataFrame,
    near_misses: pd.DataFrame,
    paraphrases: pd.DataFrame,
    work_dir,
    device: str | None = None,
    batch_size: int = 64,
    max_seq_length: int | None = 128,
    force: bool = False,
) -> pd.DataFrame:
    """Near-miss AUC of pooled cosine (paraphrase pairs vs held-out near-miss pairs; metric "auc",
    `metrics.near_miss_auc`) for every model of `runs` (rows of `training.run_grid`), overall (family
    "all") and per family, with a 95% bootstrap interval over pairs (`metrics.near_miss_auc_interval`):
    the near-miss axis of the dose-response figure. Appended to {work_dir}/results/02/nearmiss_pooled.parquet;
    a model already scored on the same pairs (same model stamp, and the same pair texts: `pairs_sha1`)
    is not encoded again."""
    if near_misses.empty or paraphrases.empty:
        raise ValueError("pooled_nearmiss_auc needs near-miss pairs (notebook 01) and paraphrase pairs")
    path = results_file(work_dir, NEARMISS_TABLE)
    done = read_table(path) if path.exists() and not force else None
    nm_pairs = list(zip(near_misses.sentence1, near_misses.sentence2, strict=True))
    pos_pairs = list(zip(paraphrases.sentence1, paraphrases.sentence2, strict=True))
    # Keyed on content, not counts: other pairs of the same number (a changed generator or source)
    # must be scored again, not read back.
    sizes = dict(n_near_miss=len(nm_pairs), n_paraphrase=len(pos_pairs), pairs_sha1=_pairs_sha1(nm_pairs, pos_pairs))
    for run in tqdm(runs.to_dict("records"), desc="near-miss AUC", unit="model"):
        key = model_key(run["variant"], run["seed"])
        name = f"{run['backbone']}/{key}"
        if (
            done is not None
            and {"ci_low", "pairs_sha1"} <= set(done.columns)
            and (
                (done.run == name)
                & (done.metric == AUC)
                & (done.model_stamp == run["model_stamp"])
                & done.ci_low.notna()
                & (done.pairs_sha1 == sizes["pairs_sha1"])
            ).any()
        ):
            continue
        with quiet_transformers():
            encoder = load_encoder(run["model"], device=device, max_seq_length=max_seq_length, seed=int(run["seed"]))
        cos = pair_cosines(encoder, nm_pairs + pos_pairs, batch_size=batch_size)
        nm_cos, pos_cos = cos[: len(nm_pairs)], cos[len(nm_pairs) :]
        rows = []
        for family, idx in [(ALL_FAMILIES, np.arange(len(nm_cos))), *near_misses.groupby("family").indices.items()]:
            low, high = (
                near_miss_auc_interval(pos_cos, nm_cos[idx], seed=int(run["seed"]))
                if len(idx) > 1 and len(pos_cos) > 1
                else (float("nan"), float("nan"))
            )
            rows.append(
                {
                    **_row({}, "heldout-near-miss", family, AUC, near_miss_auc(pos_cos, nm_cos[idx])),
                    "ci_low": low,
                    "ci_high": high,
                }
            )
        share = run.get("structural_share")
        table = tidy(
            rows,
            run=name,
            backbone=run["backbone"],
            variant=run["variant"],
            seed=run["seed"],
            structural_share=float("nan") if share is None else float(share),
            model_stamp=run["model_stamp"],
            **sizes,
        )
        append_results(table, path, key=TABLE_KEY)
    table = read_table(path)
    names = {f"{r['backbone']}/{model_key(r['variant'], r['seed'])}" for r in runs.to_dict("records")}
    return table[table.run.isin(names) & (table.metric == AUC) & (table.pairs_sha1 == sizes["pairs_sha1"])].reset_index(
        drop=True
    )


def _pairs_sha1(*pair_lists) -> str:
    """One digest of the texts of every pair, in order (lists separated), for keying cached scores."""
    h = hashlib.sha1()
    for pairs in pair_lists:
        for a, b in pairs:
            h.update(a.encode("utf-8") + b"\x1f" + b.encode("utf-8") + b"\x1e")
        h.update(b"\x1d")
    return h.hexdigest()
