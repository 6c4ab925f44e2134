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


def seed_level_test(drops, level: float = 0.95) -> dict:
    """Tests of a mean difference whose unit is the seed: one B - A value per seed (each the mean
    over queries), so training noise is the only noise and nothing is resampled from a handful of seeds.

    - paired t (scipy.stats.ttest_1samp on the per-seed differences, i.e. ttest_rel of B against A):
      its p and its `level` interval; valid when the seed differences are roughly normal, and the
      only one of the two that can reach p < 0.05 at five seeds;
    - exact sign-flip permutation over the seed differences (scipy.stats.permutation_test, all 2^S
      sign patterns): no normality assumption, but its smallest attainable two-sided p is 2 / 2^S
      (`perm_p_floor`: 0.25 at three seeds, 0.0625 at five, 0.031 at six), stated beside it.
    Why this beside the hierarchical bootstrap: with S seeds the bootstrap has few distinct seed
    resamples and shrinks the seed variance by (S - 1) / S, so its interval is too narrow at S <= 5."""
    from scipy import stats as sps

    d = np.asarray(drops, dtype=float)
    if d.ndim != 1 or np.isnan(d).any():
        raise ValueError(f"seed_level_test wants one finite difference per seed, got {drops!r}")
    out = {"n_seeds": int(len(d)), "mean_delta": float(d.mean()) if len(d) else float("nan")}
    if len(d) < 2 or np.allclose(d, d[0]):
        # one seed, or seeds that agree exactly: no spread to test against
        return {**out, "t_p": np.nan, "t_ci_low": np.nan, "t_ci_high": np.nan, "perm_p": np.nan, "perm_p_floor": np.nan}
    t = sps.ttest_1samp(d, 0.0)
    ci = t.confidence_interval(level)
    perm = sps.permutation_test((d,), np.mean, permutation_type="samples", n_resamples=np.inf, vectorized=False)
    return {
        **out,
        "t_p": float(t.pvalue),
        "t_ci_low": float(ci.low),
        "t_ci_high": float(ci.high),
        "perm_p": float(perm.pvalue),
        "perm_p_floor": float(min(1.0, 2 / 2 ** len(d))),
    }


def holm_floor(m: int, n: int) -> float:
    """The smallest Holm-corrected p a table of `m` tests can show when each test's two-sided p is
    resampled `n` times (floor 2 / (n + 1): `hierarchical_bootstrap`, scipy's permutation_test)."""
    return float(min(1.0, m * 2 / (n + 1))) if m else float("nan")


def resamples_for(m: int, n: int = 0, alpha: float = 0.05, margin: float = 10.0) -> int:
    """At least `n` resamples, and enough that Holm over `m` tests can reach alpha / margin: a table
    whose smallest attainable corrected p is above its threshold can only ever say "not significant"
    (1,000 resamples over 152 comparisons floor at 0.30)."""
    return max(int(n), int(np.ceil(2 * m * margin / alpha)) - 1)


def holm(p_values) -> np.ndarray:
    """Holm-adjusted p-values (step-down, monotone, capped at 1), in the input order."""
    p = np.asarray(p_values, dtype=float)
    order = np.argsort(p)
    adjusted = np.maximum.accumulate((len(p) - np.arange(len(p))) * p[order])
    out = np.empty_like(p)
    out[order] = np.minimum(adjusted, 1.0)
    return out
