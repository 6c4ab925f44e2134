"""compsense.core.stats: the hierarchical bootstrap over seeds and queries, and Holm's correction."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from compsense.core.stats import hierarchical_bootstrap, holm, paired_deltas, seed_level_test


def test_constant_difference_has_a_point_interval():
    res = hierarchical_bootstrap(np.full((3, 50), -0.1), n=500, seed=1)
    assert res["mean_delta"] == pytest.approx(-0.1)
    assert res["ci_low"] == pytest.approx(-0.1) and res["ci_high"] == pytest.approx(-0.1)
    assert res["p_value"] < 0.01 and (res["n_seeds"], res["n_queries"]) == (3, 50)


def test_seed_noise_widens_the_interval_beyond_query_noise():
    rng = np.random.default_rng(0)
    queries = rng.normal(-0.05, 0.1, size=300)
    same_seeds = np.tile(queries, (3, 1))
    seed_effects = same_seeds + np.array([[-0.06], [0.0], [0.06]])  # training noise: one seed shifts all queries
    narrow = hierarchical_bootstrap(same_seeds, n=4000, seed=2)
    wide = hierarchical_bootstrap(seed_effects, n=4000, seed=2)
    assert narrow["mean_delta"] == pytest.approx(wide["mean_delta"])
    assert (wide["ci_high"] - wide["ci_low"]) > 1.5 * (narrow["ci_high"] - narrow["ci_low"])
    # One seed: the ordinary bootstrap over queries; same seed, same numbers.
    one = hierarchical_bootstrap(queries[None, :], n=2000, seed=3)
    assert one == hierarchical_bootstrap(queries[None, :], n=2000, seed=3)
    assert one["ci_low"] < queries.mean() < one["ci_high"]


def test_no_difference_is_not_significant_and_bad_input_raises():
    rng = np.random.default_rng(4)
    res = hierarchical_bootstrap(rng.normal(0, 0.1, size=(3, 400)), n=2000, seed=0)
    assert res["p_value"] > 0.05 and res["ci_low"] < 0 < res["ci_high"]
    with pytest.raises(ValueError, match="seeds x queries"):
        hierarchical_bootstrap(np.zeros(5))
    with pytest.raises(ValueError, match="NaN"):
        hierarchical_bootstrap(np.array([[0.1, np.nan]]))


def test_holm_against_hand_computed_values():
    # sorted p: 0.01, 0.02, 0.03, 0.5 -> x4, x3, x2, x1 = 0.04, 0.06, 0.06 (monotone), 0.5
    assert holm([0.03, 0.01, 0.5, 0.02]).tolist() == pytest.approx([0.06, 0.04, 0.5, 0.06])
    assert holm([0.9, 0.8]).tolist() == pytest.approx([1.0, 1.0])


def test_paired_deltas_pairs_on_seed_and_query():
    rows = [
        (v, s, f"q{i}", val + (0.1 if v == "B" else 0) + s / 1000)
        for v in ("A", "B")
        for s in (42, 43)
        for i, val in enumerate([0.2, 0.4, 0.6])
    ]
    pq = pd.DataFrame(rows, columns=["variant", "seed", "qid", "ndcg@10"]).assign(dataset="d")
    wide = paired_deltas(pq, "ndcg@10", "A", "B")
    assert wide.shape == (2, 3) and np.allclose(wide.to_numpy(), 0.1)
    with pytest.raises(ValueError, match="same queries"):
        paired_deltas(pq[~((pq.variant == "B") & (pq.seed == 43) & (pq.qid == "q0"))], "ndcg@10", "A", "B")
    with pytest.raises(ValueError, match="no per-query rows"):
        paired_deltas(pq, "ndcg@10", "A", "C")


def test_paired_deltas_refuses_a_query_one_variant_never_had():
    rows = [(v, s, f"q{i}", 0.5 + (0.2 if v == "B" else 0.0)) for v in ("A", "B") for s in (42, 43) for i in range(4)]
    pq = pd.DataFrame(rows, columns=["variant", "seed", "qid", "ndcg@10"]).assign(dataset="d")
    # B lacks q3 at every seed: dropping q3 would give a clean 2 x 3 matrix and a smaller design
    with pytest.raises(ValueError, match=r"'B' was not evaluated on the same queries as 'A'.*'q3'"):
        paired_deltas(pq[~((pq.variant == "B") & (pq.qid == "q3"))], "ndcg@10", "A", "B")
    with pytest.raises(ValueError, match=r"'A' was not evaluated on the same queries as 'B'"):
        paired_deltas(pq[~((pq.variant == "A") & (pq.qid == "q0"))], "ndcg@10", "A", "B")
    # both variants lack q1 at seed 43 only: the seeds disagree, which the matrix cannot hold
    with pytest.raises(ValueError, match=r"seed 43 lacks \('d', 'q1'\)"):
        paired_deltas(pq[~((pq.seed == 43) & (pq.qid == "q1"))], "ndcg@10", "A", "B")
    # a seed only A has is left out; the shared seeds are compared in full
    extra = pq[(pq.variant == "A") & (pq.seed == 42)].assign(seed=44)
    wide = paired_deltas(pd.concat([pq, extra]), "ndcg@10", "A", "B")
    assert list(wide.index) == [42, 43] and wide.shape == (2, 4) and np.allclose(wide.to_numpy(), 0.2)


def test_seed_level_test_is_scipys_paired_t_and_the_exact_sign_flip_test_with_its_floor():
    from scipy import stats as sps

    drops = np.array([-0.012, -0.030, -0.010, -0.021, -0.016])
    out = seed_level_test(drops)
    t = sps.ttest_1samp(drops, 0.0)
    assert out["t_p"] == pytest.approx(t.pvalue) and out["t_p"] < 0.05
    assert out["t_ci_low"] < drops.mean() < out["t_ci_high"] < 0
    # all five negative: the most extreme of the 32 sign patterns, so p is exactly the floor 2/32
    assert out["perm_p"] == pytest.approx(2 / 32) and out["perm_p_floor"] == pytest.approx(0.0625)
    mixed = seed_level_test(np.array([-0.02, 0.01, -0.01]))
    assert mixed["t_ci_low"] < 0 < mixed["t_ci_high"] and mixed["t_p"] > 0.5 and mixed["perm_p_floor"] == 0.25
    assert np.isnan(seed_level_test(np.array([-0.01]))["t_p"])  # one seed: nothing to test against
    with pytest.raises(ValueError, match="one finite difference per seed"):
        seed_level_test(np.array([[0.1, 0.2]]))


def test_holm_floor_and_the_resamples_that_put_it_below_the_threshold():
    from compsense.core.stats import holm_floor, resamples_for

    assert holm_floor(152, 1000) == pytest.approx(152 * 2 / 1001)  # the committed rerank table's 0.304
    n = resamples_for(152, 1000)
    assert holm_floor(152, n) <= 0.005 < holm_floor(152, n - 100)
    assert resamples_for(2, 10_000) == 10_000  # already enough: never fewer than asked
    # the floor is attained: every replicate on one side gives the bootstrap's smallest p
    d = np.full((1, 30), 0.1) + np.random.default_rng(0).normal(0, 0.001, (1, 30))
    assert hierarchical_bootstrap(d, n=n, seed=0)["p_value"] == pytest.approx(2 / (n + 1))
