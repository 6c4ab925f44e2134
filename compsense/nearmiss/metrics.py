"""Near-miss metrics: the one definition of each number notebooks 03 and 04, the report and the README show.

A scorer s(q, d) (pooled cosine, a verifier) should score a query's positive (a paraphrase of q)
above its near-miss (a minimal edit of q that changes the meaning). Three numbers say how well it
does, and each is computed here and nowhere else:

- **near-miss AUC** (`near_miss_auc`; metric name `AUC`, "auc"): the probability that a random
  positive pair outscores a random near-miss pair, a tie counting half (ROC-AUC = Mann-Whitney U /
  (n_positive n_near_miss)). It needs no pairing, so every positive and every near-miss of a family
  count. 0.5: the scorer cannot tell them apart; 1: every positive above every near-miss; below 0.5:
  near-misses score *higher* (pooled cosine does this: a near-miss shares more words than a paraphrase).
- **pairwise accuracy** (`pairwise_accuracy`; `PAIRWISE_ACCURACY`, "pairwise_accuracy"): the same
  comparison made only within one query. For each near-miss (q, n), the share of q's positives
  (q, p) with s(q, p) > s(q, n), a tie counting half; then the mean over the near-misses that have at
  least one positive (each near-miss weighs the same, however many paraphrases its query has). It is
  the question a reranker faces, and differences between queries cannot move it. With one positive
  per near-miss, it is the share of near-misses their positive beats.
- **self-match AUC** (`self_match_auc`; metric "auc" in family `SELF_MATCH`): AUC of s(s, s) (a
  sentence against its exact copy) against s(s, x), x its paraphrase. A scorer that reads meaning puts
  the copy first (near 1). Near-misses are near-copies and paraphrases are rewordings, so a scorer can
  win the near-miss AUC by penalising shared tokens; that scorer also ranks a copy below its
  paraphrase (self-match AUC near 0) and gives itself away.
- **copy > near-miss** (metric "pairwise_accuracy" in family `COPY_VS_NEAR_MISS`): pairwise accuracy
  with the copy in the positive's place, s(s, s) against s(s, nm(s)) per sentence. No formula of its
  own, so no function of its own: `pairwise_accuracy(copy_scores, near_miss_scores)`.

Why ties count half, in both: a tie is no evidence either way, and a ranker that breaks ties at
random puts the positive first half the time. So a constant scorer scores 0.5 on all three numbers;
a strict `>` would give it pairwise accuracy 0 beside an AUC of 0.5.

Which pairs are scored (which paraphrases, which near-misses, which text is the query) is the
protocol of each notebook, not part of a metric: notebook 03's in `compsense.nearmiss.geometry`,
notebook 04's in `compsense.nearmiss.evaluation`.

Tidy tables name a number by (family, metric): `CHECKS` lists the three headline checks of
notebook 04's separation table, `LABELS` how to say each name in prose and figure axes.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
from scipy import stats
from sklearn.metrics import roc_auc_score

# Metric names, as stored in the `metric` column of every near-miss result table.
AUC = "auc"
PAIRWISE_ACCURACY = "pairwise_accuracy"
# its 95% interval resampling anchors, as metric rows of their own (`nearmiss.evaluation.near_miss_table`)
PAIRWISE_CI = (f"{PAIRWISE_ACCURACY}_ci_low", f"{PAIRWISE_ACCURACY}_ci_high")
MEAN_SCORE = "mean_score"
# Families that are not edit families: every family together, the positives themselves, and the
# two sanity checks (their positive is the sentence's exact copy).
ALL_FAMILIES = "all"
PARAPHRASE = "paraphrase"
SELF_MATCH = "self_match"
COPY_VS_NEAR_MISS = "copy_vs_near_miss"
# The headline checks (notebook 04's separation table, the report, the README): column -> (family, metric).
CHECKS = {
    AUC: (ALL_FAMILIES, AUC),
    SELF_MATCH: (SELF_MATCH, AUC),
    COPY_VS_NEAR_MISS: (COPY_VS_NEAR_MISS, PAIRWISE_ACCURACY),
}
# The separation table's and the budget curve's columns: the checks, within-anchor pairwise accuracy
# beside the AUC, and the paper's Figure 3 metric (mean near-miss score, lower is better, no positives)
# with the paraphrases' mean score beside it, since a scorer can lower both.
MEAN_NEAR_MISS = "mean_near_miss"
MEAN_PARAPHRASE = "mean_paraphrase"
SEPARATION = {
    AUC: CHECKS[AUC],
    PAIRWISE_ACCURACY: (ALL_FAMILIES, PAIRWISE_ACCURACY),
    SELF_MATCH: CHECKS[SELF_MATCH],
    COPY_VS_NEAR_MISS: CHECKS[COPY_VS_NEAR_MISS],
    MEAN_NEAR_MISS: (ALL_FAMILIES, MEAN_SCORE),
    MEAN_PARAPHRASE: (PARAPHRASE, MEAN_SCORE),
}
LABELS = {
    AUC: "near-miss AUC",
    PAIRWISE_ACCURACY: "pairwise accuracy",
    MEAN_SCORE: "mean score",
    SELF_MATCH: "self-match AUC",
    COPY_VS_NEAR_MISS: "copy > near-miss",
    MEAN_NEAR_MISS: "mean near-miss score",
    MEAN_PARAPHRASE: "mean paraphrase score",
}


def _scores(values, what: str, caller: str) -> np.ndarray:
    """A 1-d float array of finite scores, or a ValueError that says which input is wrong."""
    array = np.asarray(values, dtype=float).ravel()
    if array.size == 0:
        raise ValueError(f"{caller}: no {what} scores (an empty set); the metric needs at least one on each side")
    bad = ~np.isfinite(array)
    if bad.any():
        raise ValueError(
            f"{caller}: {int(bad.sum())} of {array.size} {what} scores are NaN or infinite "
            f"(first at position {int(np.flatnonzero(bad)[0])}); check the scorer's output"
        )
    return array


def _roc_auc(higher, lower, caller: str, higher_name: str, lower_name: str) -> float:
    """P(a score of `higher` > a score of `lower`), ties half: scikit-learn's roc_auc_score with
    `higher` as the positive class."""
    pos, neg = _scores(higher, higher_name, caller), _scores(lower, lower_name, caller)
    labels = np.r_[np.ones(len(pos)), np.zeros(len(neg))]
    return float(roc_auc_score(labels, np.r_[pos, neg]))


def near_miss_auc(positive_scores, near_miss_scores) -> float:
    """Near-miss AUC: P(s(positive pair) > s(near-miss pair)) over all pairs of the two sets, ties
    half. 0.5 = cannot tell them apart, 1 = every positive above every near-miss. Empty, NaN or
    infinite input raises ValueError."""
    return _roc_auc(positive_scores, near_miss_scores, "near_miss_auc", "positive", "near-miss")


def self_match_auc(copy_scores, other_scores) -> float:
    """Self-match AUC: P(s(s, s) > s(s, x)), ties half, with `other_scores` the sentences' pairs with
    their paraphrases (the self-match check) or near-misses. Near 1 for a scorer that reads meaning,
    near 0 for one that penalises shared tokens."""
    return _roc_auc(copy_scores, other_scores, "self_match_auc", "copy", "other")


def pairwise_accuracy(positive_scores, near_miss_scores, positive_keys=None, near_miss_keys=None) -> float:
    """Pairwise accuracy: per near-miss, the share of its query's positives that outscore it (ties
    half), averaged over near-misses that have a positive.

    Without keys, the two arrays are aligned: near-miss i is compared with positive i only. With
    keys (the query text, an example id), near-miss i is compared with every positive whose key
    equals `near_miss_keys[i]`; near-misses without one are left out (count them with
    `has_positive`). Raises ValueError when nothing can be compared.
    """
    caller = "pairwise_accuracy"
    if (positive_keys is None) != (near_miss_keys is None):
        raise ValueError(f"{caller}: give both positive_keys and near_miss_keys, or neither (aligned arrays)")
    pos, neg = _scores(positive_scores, "positive", caller), _scores(near_miss_scores, "near-miss", caller)
    if positive_keys is None:
        if len(pos) != len(neg):
            raise ValueError(
                f"{caller}: without keys the arrays are aligned pairs, but there are {len(pos)} "
                f"positive and {len(neg)} near-miss scores; pass positive_keys and near_miss_keys"
            )
        return float(np.mean((pos > neg) + 0.5 * (pos == neg)))
    pairs = _keyed_pairs(pos, neg, positive_keys, near_miss_keys)
    if pairs.empty:
        raise ValueError(
            f"{caller}: no near-miss shares a key with any positive ({len(neg)} near-misses, "
            f"{len(pos)} positives); check that both keys name the same queries"
        )
    return float(pairs.groupby("row").win.mean().mean())


def _keyed_pairs(pos: np.ndarray, neg: np.ndarray, positive_keys, near_miss_keys) -> pd.DataFrame:
    """Every (near-miss, positive of its key) pair: columns key, row (the near-miss's index), win (1 when
    the positive scores higher, 0.5 on a tie)."""
    positives = pd.DataFrame({"key": _keys(positive_keys, len(pos), "positive_keys"), "positive": pos})
    near = pd.DataFrame(
        {"key": _keys(near_miss_keys, len(neg), "near_miss_keys"), "near_miss": neg, "row": np.arange(len(neg))}
    )
    # NaN keys mean "no query": they must not match each other, as a merge on NaN would.
    pairs = near.dropna(subset=["key"]).merge(positives.dropna(subset=["key"]), on="key")
    pairs["win"] = (pairs.positive > pairs.near_miss) + 0.5 * (pairs.positive == pairs.near_miss)
    return pairs


def keyed_pairwise_accuracy_interval(
    positive_scores, near_miss_scores, positive_keys, near_miss_keys, n: int = 2000, seed: int = 0, level: float = 0.95
) -> tuple[float, float]:
    """Percentile bootstrap interval of keyed `pairwise_accuracy` (each near-miss against every positive
    of its key), resampling keys: a key's near-misses share its positives, so they are drawn together.
    The statistic is the mean over near-misses of their win rates, as `pairwise_accuracy` computes it.
    Raises ValueError when fewer than two keys have a near-miss and a positive."""
    caller = "keyed_pairwise_accuracy_interval"
    pos, neg = _scores(positive_scores, "positive", caller), _scores(near_miss_scores, "near-miss", caller)
    pairs = _keyed_pairs(pos, neg, positive_keys, near_miss_keys)
    per_row = pairs.groupby(["key", "row"], sort=True).win.mean().reset_index()
    per_key = per_row.groupby("key", sort=True).win.agg(["sum", "size"])
    return _cluster_interval(per_key, caller, n, seed, level)


def _cluster_interval(per_cluster: pd.DataFrame, caller: str, n: int, seed: int, level: float) -> tuple[float, float]:
    """Percentile bootstrap of sum(wins) / sum(sizes) over clusters drawn with replacement
    (`per_cluster`: columns sum and size, a row per cluster): `scipy.stats.bootstrap`, paired."""
    if len(per_cluster) < 2:
        raise ValueError(f"{caller} needs near-misses of at least two anchors (got {len(per_cluster)})")
    ci = stats.bootstrap(
        (per_cluster["sum"].to_numpy(float), per_cluster["size"].to_numpy(float)),
        lambda wins, sizes, axis=-1: wins.sum(axis=axis) / sizes.sum(axis=axis),
        paired=True,
        vectorized=True,
        n_resamples=n,
        method="percentile",
        confidence_level=level,
        random_state=np.random.default_rng(seed),
    ).confidence_interval
    return float(ci.low), float(ci.high)


def pairwise_accuracy_interval(
    positive_scores, near_miss_scores, anchors=None, n: int = 2000, seed: int = 0, level: float = 0.95
) -> tuple[float, float]:
    """Percentile bootstrap interval of aligned `pairwise_accuracy` (near-miss i against its anchor's
    positive i), resampling anchors: the near-misses of one anchor (`anchors`, e.g. its text; by
    default every pair is its own anchor) are drawn together, since they share the anchor's positive.

    `scipy.stats.bootstrap` with `paired=True` over per-anchor (wins, near-misses) does the cluster
    resampling; the statistic, total wins over total near-misses, is `pairwise_accuracy` on the draw."""
    caller = "pairwise_accuracy_interval"
    pos, neg = _scores(positive_scores, "positive", caller), _scores(near_miss_scores, "near-miss", caller)
    if len(pos) != len(neg):
        raise ValueError(f"{caller}: aligned pairs wanted, got {len(pos)} positive and {len(neg)} near-miss scores")
    groups = np.arange(len(neg)) if anchors is None else _keys(anchors, len(neg), "anchors")
    per_anchor = (
        pd.DataFrame({"anchor": groups, "win": (pos > neg) + 0.5 * (pos == neg)})
        .groupby("anchor", sort=True)
        .win.agg(["sum", "size"])
    )
    return _cluster_interval(per_anchor, caller, n, seed, level)


def has_positive(positive_keys, near_miss_keys) -> np.ndarray:
    """Which near-misses `pairwise_accuracy` compares: those whose key some positive shares."""
    keys = pd.Series(near_miss_keys, dtype=object)
    return (keys.isin(pd.Series(positive_keys, dtype=object).dropna()) & keys.notna()).to_numpy()


def _keys(keys, n: int, what: str) -> np.ndarray:
    array = np.asarray(keys, dtype=object).ravel()
    if len(array) != n:
        raise ValueError(f"pairwise_accuracy: {what} has {len(array)} entries for {n} scores; one key per score")
    return array


def near_miss_auc_interval(
    positive_scores, near_miss_scores, n: int = 1000, seed: int = 0, level: float = 0.95
) -> tuple[float, float]:
    """Percentile bootstrap interval of `near_miss_auc`, positives and near-misses resampled
    separately (`scipy.stats.bootstrap` over two independent samples).

    The resampled statistic is Mann-Whitney U / (n1 n2), which is `near_miss_auc` (ties half) written
    so that scipy can vectorise it over resamples; a test checks that the two agree.
    """
    caller = "near_miss_auc_interval"
    pos, neg = _scores(positive_scores, "positive", caller), _scores(near_miss_scores, "near-miss", caller)
    if len(pos) < 2 or len(neg) < 2:
        raise ValueError(
            f"{caller} needs at least two positive and two near-miss scores "
            f"(got {len(pos)} and {len(neg)}): one value cannot be resampled"
        )

    def auc(p, q, axis=-1):
        return stats.mannwhitneyu(p, q, axis=axis).statistic / (p.shape[axis] * q.shape[axis])

    ci = stats.bootstrap(
        (pos, neg),
        auc,
        n_resamples=n,
        method="percentile",
        vectorized=True,
        confidence_level=level,
        random_state=np.random.default_rng(seed),
    ).confidence_interval
    return float(ci.low), float(ci.high)
