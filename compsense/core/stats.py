"""Statistics of a difference between two training variants: seeds and queries resampled together.

A difference B - A measured on one seed's models only says how sure we are about *these two
models* over the queries; a claim about the training recipe must also cover training noise. The
hierarchical (two-stage) bootstrap resamples seeds with replacement and, independently, queries with
replacement, and averages the paired per-(seed, query) differences over both samples.

Why our own and not `scipy.stats.bootstrap`: scipy resamples one axis of independent observations;
it has no two-level (crossed seeds x queries) design. Holm's step-down correction is four lines;
scipy ships only Benjamini-Hochberg (`false_discovery_control`), and our tables claim each
comparison on its own (family-wise error), which is Holm's guarantee.
"""

from __future__ import annotations

import numpy as np
import pandas as pd


def paired_deltas(per_query: pd.DataFrame, metric: str, a: str, b: str) -> pd.DataFrame:
    """Seeds x queries matrix of B - A (paired on seed, dataset and query id) for one backbone.

    Only seeds where both variants exist are kept (a variant trained at fewer seeds is compared at
    those it has). Within them, a query one variant has and the other lacks, or a query a seed lacks
    that another seed has, is an error rather than a silent shrink of the design."""
    keys = ["seed", "dataset", "qid"]
    va = per_query[per_query.variant == a].groupby(keys)[metric].mean()
    vb = per_query[per_query.variant == b].groupby(keys)[metric].mean()
    if va.empty or vb.empty:
        raise ValueError(f"paired_deltas: no per-query rows for variant {a if va.empty else b!r}")
    seeds = sorted(set(va.index.get_level_values("seed")) & set(vb.index.get_level_values("seed")))
    if not seeds:
        raise ValueError(f"paired_deltas: variants {a!r} and {b!r} share no seed")
    va = va[va.index.get_level_values("seed").isin(seeds)]
    vb = vb[vb.index.get_level_values("seed").isin(seeds)]
    fix = "re-run the evaluation so each seed of both variants has every query"
    for this, other, name, other_name in ((va, vb, a, b), (vb, va, b, a)):
        lacking = other.index.difference(this.index)
        if len(lacking):
            raise ValueError(
                f"paired_deltas: {name!r} was not evaluated on the same queries as {other_name!r}: it lacks "
                f"{len(lacking)} (seed, dataset, qid), e.g. {tuple(lacking[0])}; {fix}"
            )
    wide = (vb - va).unstack(["dataset", "qid"])
    if wide.isna().any().any():
        seed, (dataset, qid) = next((s, q) for s, row in wide.iterrows() for q, v in row.items() if pd.isna(v))
        raise ValueError(
            f"paired_deltas: {a!r} and {b!r} were not evaluated on the same queries for every seed: seed "
            f"{seed} lacks ({dataset!r}, {qid!r}), which another seed has; {fix}"
        )
    return wide


def hierarchical_bootstrap(deltas, n: int = 10000, seed: int = 0, level: float = 0.95) -> dict:
    """Mean of a seeds x queries matrix of paired differences, its percentile interval and a
    two-sided p-value, resampling seeds and queries independently with replacement.

    One bootstrap replicate draws S seeds and Q queries; its statistic is the mean of the S x Q
    cells those draws pick (with multiplicity), computed as w_s' D w_q / (S Q) from the draw counts.
    With one seed this is the ordinary bootstrap over queries. p: twice the smaller tail share of
    replicates at or beyond zero, with the +1 correction that keeps it above zero.
    """
    d = np.asarray(deltas, dtype=float)
    if d.ndim != 2 or 0 in d.shape:
        raise ValueError(f"hierarchical_bootstrap wants a non-empty seeds x queries matrix, got shape {d.shape}")
    if np.isnan(d).any():
        raise ValueError("hierarchical_bootstrap: the matrix has missing cells (NaN)")
    n_seeds, n_queries = d.shape
    rng = np.random.default_rng(seed)
    boot = np.empty(n)
    for start in range(0, n, 1000):  # bounded memory: 1000 x Q draw counts at a time
        m = min(1000, n - start)
        ws = rng.multinomial(n_seeds, np.full(n_seeds, 1 / n_seeds), size=m)
        wq = rng.multinomial(n_queries, np.full(n_queries, 1 / n_queries), size=m)
        boot[start : start + m] = np.einsum("bs,sq,bq->b", ws, d, wq) / (n_seeds * n_queries)
    alpha = (1 - level) / 2
    tail = min((boot <= 0).sum(), (boot >= 0).sum())
    return {
        "mean_delta": float(d.mean()),
        "ci_low": float(np.quantile(boot, alpha)),
        "ci_high": float(np.quantile(boot, 1 - alpha)),
        "p_value": float(min(1.0, 2 * (tail + 1) / (n + 1))),
        "n_seeds": int(n_seeds),
        "n_queries": int(n_queries),
    }


def holm(p_values) -> np.ndarray:
    """Holm-adjusted p-values (step-down, monotone, capped at 1), in the input order."""
    p = np.asarray(p_values, dtype=float)
    order = np.argsort(p)
    adjusted = np.maximum.accumulate((len(p) - np.arange(len(p))) * p[order])
    out = np.empty_like(p)
    out[order] = np.minimum(adjusted, 1.0)
    return out
