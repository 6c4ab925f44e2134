"""Evaluating the training-length curve: every exported step of A, B and the control C, beside Base.

`compsense.retrieval.length` trains the authors' schedule and exports the model at chosen steps; this
module scores each exported model once and keeps the scores (`evaluate_point`):

- retrieval: SciFact test (zero-shot: no SciFact text is among the training rows) and NFCorpus test (the
  in-domain reference), nDCG@10 and Acc@1, with per-query values so that differences get a paired
  query bootstrap (`harness.paired_bootstrap`);
- near-miss separation of the pooled cosine on the held-out near-misses of each paper family (notebook
  01's pairs outside Model B's training split): near-miss AUC against the held-out paraphrases
  (`metrics.near_miss_auc`, notebook 02's axis) and within-anchor pairwise accuracy, cos(anchor, its
  paraphrase) against cos(anchor, its near-miss) where the anchor has a paraphrase
  (`geometry.attach_paraphrases`, notebook 03's protocol);
- the training loss logged nearest the step, and the learning rate the schedule had there.

`deltas` turns the points into A - Base, B - A and C - A per step with their query-bootstrap intervals.
"""

from __future__ import annotations

import json
import logging
import os
from pathlib import Path

import numpy as np
import pandas as pd
import scipy.stats

from compsense.core.encoders import load_encoder, quiet_transformers
from compsense.core.storage import exclusive, read_table, write_table
from compsense.nearmiss.geometry import attach_paraphrases, pair_cosines
from compsense.nearmiss.metrics import near_miss_auc, near_miss_auc_interval, pairwise_accuracy
from compsense.retrieval.harness import evaluate_dataset, paired_bootstrap

log = logging.getLogger(__name__)

POINTS = "length_points.parquet"  # one row per model x step x dataset x family x metric
PER_QUERY = "length_per_query.parquet"  # per-query retrieval values, for the paired bootstraps
RETRIEVAL_METRICS = ("ndcg@10", "acc@1")
PAPER_DROP = -0.038  # paper Table 1, MiniLM-L6 mean NanoBEIR nDCG@10: A 0.439 -> B 0.401
PAPER_DROP_PCT = -8.7  # the same drop relative to A (-0.038 / 0.439)
# (reference, variant): variant - reference; B-para (paraphrase positives) against A and against B
COMPARISONS = (("Base", "A"), ("A", "B"), ("A", "C"), ("C", "B"), ("A", "B-para"), ("B", "B-para"))
SHOWN = ("Base", "A", "B", "C", "B-para")  # the order `describe_curve` states the models in


def nearmiss_sets(near_misses: pd.DataFrame, paraphrases: pd.DataFrame) -> dict:
    """The pairs a point is scored on: the near-miss pairs, the paraphrase pairs (the AUC's
    positives) and, per near-miss whose anchor has a paraphrase, the (anchor, paraphrase, near-miss)
    triple of the pairwise accuracy."""
    oriented = attach_paraphrases(near_misses, paraphrases)
    triples = oriented[oriented.paraphrase.notna()][["family", "anchor", "paraphrase", "near_miss"]]
    return {"near_misses": near_misses.reset_index(drop=True), "paraphrases": paraphrases, "triples": triples}


def evaluate_point(encoder, eval_sets: list, sets: dict, labels: dict, batch_size: int = 64, seed: int = 42):
    """One model's rows (tidy: dataset, family, metric, value, ci_low, ci_high, plus `labels`) and its
    per-query retrieval values."""
    rows, per_query = [], []
    for ds in eval_sets:
        result = evaluate_dataset(encoder, ds, batch_size=batch_size, show_progress=False)
        for metric in RETRIEVAL_METRICS:
            rows.append({"dataset": ds.name, "family": "", "metric": metric, "value": result.metrics[metric]})
        pq = result.per_query[["qid", *RETRIEVAL_METRICS]].assign(dataset=ds.name)
        per_query.append(pq)
    nm, para, triples = sets["near_misses"], sets["paraphrases"], sets["triples"]
    pairs = list(zip(nm.sentence1, nm.sentence2))
    pos_pairs = list(zip(para.sentence1, para.sentence2))
    tri_pos = list(zip(triples.anchor, triples.paraphrase))
    tri_neg = list(zip(triples.anchor, triples.near_miss))
    cos = pair_cosines(encoder, pairs + pos_pairs + tri_pos + tri_neg, batch_size=batch_size)
    a, b, c = len(pairs), len(pairs) + len(pos_pairs), len(pairs) + len(pos_pairs) + len(tri_pos)
    nm_cos, pos_cos, tp, tn = cos[:a], cos[a:b], cos[b:c], cos[c:]
    for family, idx in nm.groupby("family").indices.items():
        low, high = (
            near_miss_auc_interval(pos_cos, nm_cos[idx], seed=seed)
            if len(idx) > 1 and len(pos_cos) > 1
            else (float("nan"), float("nan"))  # one value cannot be resampled
        )
        rows.append(
            {
                "dataset": "heldout-near-miss",
                "family": family,
                "metric": "auc",
                "value": near_miss_auc(pos_cos, nm_cos[idx]),
                "ci_low": low,
                "ci_high": high,
                "n": len(idx),
            }
        )
        rows.append(
            {
                "dataset": "heldout-near-miss",
                "family": family,
                "metric": "mean_near_miss_cosine",
                "value": float(nm_cos[idx].mean()),
                "n": len(idx),
            }
        )
    for family, idx in triples.reset_index(drop=True).groupby("family").indices.items():
        rows.append(
            {
                "dataset": "heldout-near-miss",
                "family": family,
                "metric": "pairwise_accuracy",
                "value": pairwise_accuracy(tp[idx], tn[idx]),
                "n": len(idx),
            }
        )
    out = pd.DataFrame(rows).assign(**labels)
    pq = pd.concat(per_query, ignore_index=True).assign(**labels)
    return out, pq


def evaluate_steps(models: list[dict], eval_sets, sets, results_dir, device=None, batch_size: int = 64) -> pd.DataFrame:
    """Score every model of `models` (dicts: variant, seed, step, triplets, path, loss, learning_rate,
    stamp) not yet in {results_dir}/length_points.parquet under the same stamp (its weights' digest),
    appending as each finishes, so a killed evaluation loses one model at most. Pieces that run at
    once (one per core) share the tables: each append holds the results folder's lock."""
    results_dir = Path(results_dir)
    results_dir.mkdir(parents=True, exist_ok=True)
    points_path, pq_path, lock = results_dir / POINTS, results_dir / PER_QUERY, results_dir / ".lock"
    for m in models:
        points = read_table(points_path) if points_path.exists() else None
        if points is not None and ((points.stamp == m["stamp"]) & (points.variant == m["variant"])).any():
            continue
        with quiet_transformers():
            encoder = load_encoder(str(m["path"]), device=device, max_seq_length=128, seed=int(m["seed"]))
        labels = {k: m[k] for k in ("variant", "seed", "step", "triplets", "loss", "learning_rate", "stamp")}
        rows, pq = evaluate_point(encoder, eval_sets, sets, labels, batch_size=batch_size, seed=int(m["seed"]))
        with exclusive(lock):
            old_pq = read_table(pq_path) if pq_path.exists() else None
            points = read_table(points_path) if points_path.exists() else None
            write_table(pd.concat([t for t in (old_pq, pq) if t is not None], ignore_index=True), pq_path)
            write_table(pd.concat([t for t in (points, rows) if t is not None], ignore_index=True), points_path)
        log.info("scored %s seed %s step %s", m["variant"], m["seed"], m["step"])
    return read_table(points_path)


def deltas(points: pd.DataFrame, per_query: pd.DataFrame, n: int = 2000) -> pd.DataFrame:
    """Per seed, step, dataset and retrieval metric: each comparison of `COMPARISONS` (Base's single
    model stands at every step), its mean over queries, BCa interval and permutation p
    (`harness.paired_bootstrap`), and the relative change against the reference."""
    rows = []
    base = per_query[per_query.variant == "Base"]
    for (seed, step), group in per_query[per_query.variant != "Base"].groupby(["seed", "step"]):
        by_variant = {v: g for v, g in group.groupby("variant")}
        by_variant["Base"] = base[base.seed == seed] if (base.seed == seed).any() else base
        for ref, var in COMPARISONS:
            if ref not in by_variant or var not in by_variant or by_variant[ref].empty:
                continue
            for dataset in sorted(group.dataset.unique()):
                a = by_variant[ref][by_variant[ref].dataset == dataset]
                b = by_variant[var][by_variant[var].dataset == dataset]
                if a.empty or b.empty:
                    continue
                for metric in RETRIEVAL_METRICS:
                    test = paired_bootstrap(a, b, metric=metric, n=n, seed=int(seed))
                    ref_mean = float(a[metric].mean())
                    rows.append(
                        {
                            "seed": int(seed),
                            "step": int(step),
                            "triplets": int(group.triplets.iloc[0]),
                            "dataset": dataset,
                            "metric": metric,
                            "comparison": f"{var}-{ref}",  # no spaces: a README value marker filters on it
                            "reference_value": ref_mean,
                            **test,
                            "relative_pct": 100 * test["mean_delta"] / ref_mean if ref_mean else np.nan,
                        }
                    )
    return pd.DataFrame(rows)


def seed_t_tests(delta_table: pd.DataFrame, by=("step", "dataset", "metric", "comparison")) -> pd.DataFrame:
    """Where a step has three or more seeds: the paired t over seeds of each comparison's per-seed
    mean difference (a trained model is the unit of a claim about a recipe), with its 95% interval
    (scipy's one-sample t on the per-seed differences), one row per group of `by`."""
    rows = []
    for keys, g in delta_table.groupby(list(by)):
        if g.seed.nunique() < 3:
            continue
        d = g.mean_delta.to_numpy(dtype=float)
        res = scipy.stats.ttest_1samp(d, 0.0)
        ci = res.confidence_interval(0.95)
        rows.append(
            {
                **dict(zip(by, keys)),
                "n_seeds": len(d),
                "mean_delta": float(d.mean()),
                "t_ci_low": float(ci.low),
                "t_ci_high": float(ci.high),
                "t_p": float(res.pvalue),
            }
        )
    return pd.DataFrame(rows)


NEARMISS_KEYS = ("step", "dataset", "family", "metric")


def nearmiss_seed_tests(scores: pd.DataFrame) -> pd.DataFrame:
    """The near-miss scores (AUC, within-anchor pairwise accuracy) of the external sets and the held-out
    families, compared over seeds: per step, dataset, family and metric, each comparison of
    `COMPARISONS` between two trained variants scored at the same seed, as a paired t over those seeds
    (`seed_t_tests`; three seeds or more). Base stands at step 0 and is left out: its score is one model's."""
    rows = []
    trained = scores[scores.variant != "Base"]
    for (seed, *keys), g in trained.groupby(["seed", *NEARMISS_KEYS]):
        value = g.groupby("variant")["value"].first()
        for ref, var in COMPARISONS:
            if ref in value and var in value:
                key = dict(zip(NEARMISS_KEYS, keys))
                rows.append({**key, "comparison": f"{var}-{ref}", "seed": seed, "mean_delta": value[var] - value[ref]})
    if not rows:
        return pd.DataFrame()
    return seed_t_tests(pd.DataFrame(rows), by=(*NEARMISS_KEYS, "comparison"))


def read_record(path: str | os.PathLike) -> dict:
    path = Path(path)
    return json.loads(path.read_text(encoding="utf-8")) if path.exists() else {}


def describe_curve(
    delta_table: pd.DataFrame, points: pd.DataFrame, dataset: str = "scifact", external: pd.DataFrame | None = None
) -> str:
    """The curve in words, generated from its own tables (notebook 02 prints it; the README restates it):
    per seed, B - A and A - Base on `dataset` nDCG@10 at the first and the longest step with their query
    bootstrap intervals beside the paper's drop, the steps where an interval excludes 0, and per paper
    family the held-out near-miss AUC of Base, A, B and C at the longest step."""
    d = delta_table[(delta_table.dataset == dataset) & (delta_table.metric == "ndcg@10")]
    if d.empty:
        return f"No scored step has {dataset} nDCG@10 yet."
    lines = []
    for seed, ds in d.groupby("seed"):
        steps = sorted(ds.step.unique())
        first, last = steps[0], steps[-1]
        n_first, n_last = (int(ds[ds.step == s].triplets.iloc[0]) for s in (first, last))
        for comp in ("B-A", "A-Base", "C-A", "B-para-A"):
            c = ds[ds.comparison == comp].set_index("step")
            if c.empty:
                continue
            ends = [
                f"{_signed(c.mean_delta[s])} {_interval(c.loc[s])} at {n:,} triplets"
                for s, n in ((first, n_first), (last, n_last))
                if s in c.index
            ]
            excludes = [int(s) for s, r in c.iterrows() if r.ci_low > 0 or r.ci_high < 0]
            where = (
                f"its interval excludes 0 at step(s) {', '.join(map(str, excludes))}"
                if excludes
                else "its interval holds 0 at every step"
            )
            lines.append(f"Seed {seed}, {dataset} nDCG@10 {comp}: " + " -> ".join(ends) + f"; {where}.")
        lines.append(
            f"(The paper's B - A: {PAPER_DROP:+.3f}, {PAPER_DROP_PCT:+.1f}% of A, after 432,000 triplets; the longest "
            f"step here is {n_last / 432_000:.1%} of that.)"
        )
        nm = points[(points.dataset == "heldout-near-miss") & (points.metric == "auc") & (points.seed == seed)]
        at_last = nm[nm.step == last]
        base = points[(points.dataset == "heldout-near-miss") & (points.metric == "auc") & (points.variant == "Base")]
        for family, g in at_last.groupby("family"):
            auc = g.set_index("variant").value
            b = base[base.family == family].value
            parts = ([f"Base {b.iloc[0]:.2f}"] if len(b) else []) + [f"{v} {auc[v]:.2f}" for v in SHOWN[1:] if v in auc]
            lines.append(f"Held-out near-miss AUC, {family}, step {last}: " + ", ".join(parts) + " (0.5 = chance).")
        lines += _describe_external(external, seed, last)
    return "\n".join(lines)


def _describe_external(external: pd.DataFrame | None, seed: int, step: int) -> list[str]:
    """On text nobody here wrote (`compsense nearmiss` of each model, `length_run.score_external`): the
    pooled near-miss AUC of every set at `step`, each with its interval over pairs."""
    if external is None or external.empty:
        return []
    rows = external[(external.family == "all") & (external.metric == "auc")]
    rows = rows[((rows.seed == seed) & (rows.step == step)) | (rows.variant == "Base")]
    lines = []
    for dataset, g in rows.groupby("dataset"):
        by = g.set_index("variant")
        parts = [f"{v} {by.value[v]:.3f} [{by.ci_low[v]:.3f}, {by.ci_high[v]:.3f}]" for v in SHOWN if v in by.index]
        n = int(by.n.max())
        lines.append(f"{dataset} near-miss AUC at step {step} ({n} near-misses): " + ", ".join(parts) + ".")
    return lines


def _signed(x: float) -> str:
    return f"{x:+.3f}"


def _interval(row) -> str:
    return f"[{row.ci_low:+.3f}, {row.ci_high:+.3f}]"
