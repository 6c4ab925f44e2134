"""compsense.nearmiss.metrics: each near-miss number on cases small enough to count by hand."""

import numpy as np
import pytest

from compsense.nearmiss.metrics import (
    AUC,
    CHECKS,
    COPY_VS_NEAR_MISS,
    LABELS,
    PAIRWISE_ACCURACY,
    SELF_MATCH,
    has_positive,
    near_miss_auc,
    near_miss_auc_interval,
    pairwise_accuracy,
    self_match_auc,
)

# ---------------------------------------------------------------------------------------------
# near-miss AUC


def test_near_miss_auc_counts_wins_over_all_cross_pairs():
    # 4 (positive, near-miss) comparisons: 0.9>0.85, 0.9>0.1, 0.8>0.1 win; 0.8<0.85 loses -> 3/4
    assert near_miss_auc([0.9, 0.8], [0.85, 0.1]) == pytest.approx(0.75)


def test_near_miss_auc_counts_a_tie_half():
    # 0.5 vs 0.5 ties (1/2), 0.5 vs 0.2 wins (1), 0.7 beats both (2): (0.5 + 1 + 2) / 4
    assert near_miss_auc([0.5, 0.7], [0.5, 0.2]) == pytest.approx(3.5 / 4)
    assert near_miss_auc([0.3, 0.3], [0.3]) == pytest.approx(0.5)  # a constant scorer is at chance


def test_near_miss_auc_below_half_when_near_misses_score_higher():
    # what pooled cosine does: near-copies above rewordings
    assert near_miss_auc([0.6, 0.7], [0.9, 0.95, 0.65]) == pytest.approx(1 / 6)


def test_near_miss_auc_with_one_score_on_a_side():
    assert near_miss_auc([0.4], [0.1, 0.5, 0.3]) == pytest.approx(2 / 3)
    assert near_miss_auc([0.2, 0.6, 0.9], [0.5]) == pytest.approx(2 / 3)


@pytest.mark.parametrize(
    "positive, near_miss, message",
    [
        ([], [0.1], "no positive scores"),
        ([0.1], [], "no near-miss scores"),
        ([0.1, np.nan], [0.2], "NaN or infinite"),
        ([0.1], [np.inf], "NaN or infinite"),
    ],
)
def test_near_miss_auc_refuses_empty_or_missing_scores(positive, near_miss, message):
    with pytest.raises(ValueError, match=message):
        near_miss_auc(positive, near_miss)


# ---------------------------------------------------------------------------------------------
# self-match AUC


def test_self_match_auc_puts_the_copy_in_the_positive_place():
    # copies 1.0 and 0.8 against paraphrases 0.9 and 0.7: 1.0 wins twice, 0.8 once -> 3/4
    assert self_match_auc([1.0, 0.8], [0.9, 0.7]) == pytest.approx(0.75)
    # an overlap-penalising scorer ranks every copy last
    assert self_match_auc([0.1, 0.2], [0.6, 0.5]) == 0.0
    assert self_match_auc([0.5], [0.5]) == pytest.approx(0.5)
    with pytest.raises(ValueError, match="self_match_auc: no copy scores"):
        self_match_auc([], [0.5])


# ---------------------------------------------------------------------------------------------
# pairwise accuracy


def test_aligned_pairwise_accuracy_counts_ties_half():
    # pair 1 won, pair 2 tied, pair 3 lost: (1 + 0.5 + 0) / 3
    assert pairwise_accuracy([0.9, 0.5, 0.2], [0.8, 0.5, 0.6]) == pytest.approx(0.5)
    assert pairwise_accuracy([0.4] * 3, [0.4] * 3) == pytest.approx(0.5)  # constant scorer: chance, as the AUC


def test_pairwise_accuracy_is_not_the_auc():
    # Two queries on different scales: within each query the positive wins, so accuracy 1, while
    # across queries query b's positive (0.3) sits below query a's near-miss (0.8): AUC 3/4.
    positive, near_miss = [0.9, 0.3], [0.8, 0.2]
    assert pairwise_accuracy(positive, near_miss) == 1.0
    assert near_miss_auc(positive, near_miss) == pytest.approx(0.75)


def test_keyed_pairwise_accuracy_compares_each_near_miss_with_every_positive_of_its_query():
    positive = [0.9, 0.6, 0.5, 0.7]
    positive_keys = ["s1", "s1", "s2", "s3"]
    near_miss = [0.8, 0.95, 0.5, 0.1]
    near_miss_keys = ["s1", "s1", "s2", "zz"]
    # near-miss 0.8 of s1: beats 0.6, loses to 0.9 -> 1/2; 0.95 of s1: beats both -> 0;
    # 0.5 of s2 ties 0.5 -> 1/2; "zz" has no positive and is left out. Mean of (1/2, 0, 1/2).
    assert pairwise_accuracy(positive, near_miss, positive_keys, near_miss_keys) == pytest.approx(1 / 3)
    assert has_positive(positive_keys, near_miss_keys).tolist() == [True, True, True, False]


def test_each_near_miss_weighs_the_same_however_many_positives_its_query_has():
    # s1 has three positives that all win, s2 one that loses: (1 + 0) / 2, not 3 / 4
    assert pairwise_accuracy([0.9, 0.8, 0.7, 0.1], [0.5, 0.5], ["s1", "s1", "s1", "s2"], ["s1", "s2"]) == 0.5


def test_keyed_pairwise_accuracy_with_one_positive_each_equals_the_aligned_one():
    positive, near_miss = [0.9, 0.5, 0.2], [0.8, 0.5, 0.6]
    keys = ["a", "b", "c"]
    assert pairwise_accuracy(positive, near_miss, keys, keys) == pairwise_accuracy(positive, near_miss)
    # the order of the positives does not matter once they carry keys
    assert pairwise_accuracy(positive[::-1], near_miss, keys[::-1], keys) == pairwise_accuracy(positive, near_miss)


def test_missing_keys_never_match_each_other():
    assert has_positive(["a", None], [None, "a"]).tolist() == [False, True]
    assert pairwise_accuracy([0.9, 0.1], [0.5, 0.5], ["a", None], [None, "a"]) == 1.0


@pytest.mark.parametrize(
    "args, message",
    [
        (([], []), "no positive scores"),
        (([0.5], [0.4, 0.3]), "aligned pairs"),
        (([0.5], [0.4], ["a"], None), "both positive_keys and near_miss_keys"),
        (([0.5], [0.4], ["a"], ["b"]), "no near-miss shares a key"),
        (([0.5, 0.6], [0.4], ["a"], ["a"]), "one key per score"),
        (([0.5], [np.nan]), "NaN"),
    ],
)
def test_pairwise_accuracy_says_what_is_wrong(args, message):
    with pytest.raises(ValueError, match=message):
        pairwise_accuracy(*args)


# ---------------------------------------------------------------------------------------------
# the bootstrap interval of the near-miss AUC


def test_the_bootstrap_statistic_is_the_near_miss_auc():
    from scipy import stats

    rng = np.random.default_rng(3)
    pos, neg = rng.normal(0.6, 0.1, 30).round(2), rng.normal(0.5, 0.1, 25).round(2)  # rounded: ties happen
    assert stats.mannwhitneyu(pos, neg).statistic / (len(pos) * len(neg)) == pytest.approx(near_miss_auc(pos, neg))


def test_interval_brackets_the_auc_narrows_with_more_pairs_and_is_seeded():
    rng = np.random.default_rng(0)
    small = rng.normal(0.6, 0.1, 40), rng.normal(0.5, 0.1, 40)
    big = rng.normal(0.6, 0.1, 800), rng.normal(0.5, 0.1, 800)
    lo, hi = near_miss_auc_interval(*small, n=500, seed=1)
    assert lo < near_miss_auc(*small) < hi
    lo2, hi2 = near_miss_auc_interval(*big, n=500, seed=1)
    assert lo2 < near_miss_auc(*big) < hi2 and (hi2 - lo2) < (hi - lo) / 2
    assert near_miss_auc_interval(*small, n=500, seed=1) == (lo, hi)
    with pytest.raises(ValueError, match="two positive"):
        near_miss_auc_interval([0.5], [0.1, 0.2])


# ---------------------------------------------------------------------------------------------
# the names


def test_the_headline_checks_name_stored_families_and_metrics():
    assert CHECKS == {
        AUC: ("all", AUC),
        SELF_MATCH: (SELF_MATCH, AUC),
        COPY_VS_NEAR_MISS: (COPY_VS_NEAR_MISS, PAIRWISE_ACCURACY),
    }
    assert set(CHECKS) <= set(LABELS)


def test_pairwise_accuracy_interval_resamples_anchors_and_covers_the_estimate():
    from compsense.nearmiss.metrics import pairwise_accuracy_interval

    rng = np.random.default_rng(3)
    pos, neg = rng.normal(0.5, 1, 200), rng.normal(0, 1, 200)
    low, high = pairwise_accuracy_interval(pos, neg, seed=1)
    assert low < pairwise_accuracy(pos, neg) < high and (low, high) == pairwise_accuracy_interval(pos, neg, seed=1)
    # every anchor's near-misses all win or all lose: 20 anchors carry the evidence of 20, not of 200
    anchors = np.repeat(np.arange(20), 10)
    tied = np.repeat(rng.random(20) < 0.6, 10)
    clustered = pairwise_accuracy_interval(tied.astype(float), np.full(200, 0.5), anchors, seed=1)
    naive = pairwise_accuracy_interval(tied.astype(float), np.full(200, 0.5), seed=1)
    assert clustered[1] - clustered[0] > 2 * (naive[1] - naive[0])
    with pytest.raises(ValueError, match="at least two anchors"):
        pairwise_accuracy_interval(pos[:3], neg[:3], anchors=["a", "a", "a"])
