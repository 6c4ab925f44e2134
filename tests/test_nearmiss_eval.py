"""compsense.nearmiss.evaluation: notebook 04's near-miss test with positives (its tables, pairs and
protocol). The metrics are `compsense.nearmiss.metrics`'s, tested by hand in test_nearmiss_metrics.py."""

from dataclasses import dataclass

import numpy as np
import pandas as pd
import pytest

from compsense.figures.verifiers import figure_near_miss_scores
from compsense.nearmiss import evaluation as N
from compsense.nearmiss.metrics import CHECKS, SELF_MATCH, near_miss_auc, pairwise_accuracy


def test_near_miss_table_on_a_toy_case():
    positives = pd.DataFrame({"sentence1": ["s1", "s2", "s3"], "sentence2": ["p1", "p2", "p3"]})
    near = pd.DataFrame(
        {
            "sentence1": ["s1", "s1", "s2", "zz"],
            "sentence2": ["n1", "n2", "n3", "n4"],
            "family": ["negation", "binding", "negation", "binding"],
        }
    )
    fixed = {
        ("s1", "p1"): 0.9,
        ("s2", "p2"): 0.5,
        ("s3", "p3"): 0.7,
        ("s1", "n1"): 0.8,
        ("s1", "n2"): 0.95,
        ("s2", "n3"): 0.5,
        ("zz", "n4"): 0.1,
    }
    table = N.near_miss_table({"toy": lambda pairs: [fixed[p] for p in pairs]}, positives, near)
    get = table.set_index(["family", "metric"])["value"]
    n = table.set_index(["family", "metric"])["n"]
    assert get["paraphrase", "mean_score"] == pytest.approx(0.7)
    assert get["negation", "mean_score"] == pytest.approx(0.65)
    # AUC = P(positive > near-miss), ties count half: of the 6 comparisons, 0.9 wins 2, 0.7 wins 1, 0.5 ties 1
    assert get["negation", "auc"] == pytest.approx(3.5 / 6)
    assert get["negation", "pairwise_accuracy"] == pytest.approx((1 + 0.5) / 2)
    assert n["negation", "pairwise_accuracy"] == 2
    assert get["binding", "pairwise_accuracy"] == pytest.approx(0.0) and n["binding", "pairwise_accuracy"] == 1
    assert n["all", "pairwise_accuracy"] == 3 and n["all", "auc"] == 4
    # the table's numbers are the metrics module's, on the same scores
    assert get["all", "auc"] == near_miss_auc([0.9, 0.5, 0.7], [0.8, 0.95, 0.5, 0.1])
    assert get["all", "pairwise_accuracy"] == pairwise_accuracy(
        [0.9, 0.5, 0.7], [0.8, 0.95, 0.5, 0.1], ["s1", "s2", "s3"], ["s1", "s1", "s2", "zz"]
    )
    figure_near_miss_scores(table)  # builds without error
    with pytest.raises(ValueError, match="family"):
        N.near_miss_table({}, positives, near.drop(columns="family"))
    # a family outside the paper's is reported on its own and stays out of "all"
    more = pd.concat([near, pd.DataFrame({"sentence1": ["s3"], "sentence2": ["n5"], "family": ["numeric"]})])
    fixed[("s3", "n5")] = 0.99
    wider = N.near_miss_table({"toy": lambda pairs: [fixed[p] for p in pairs]}, positives, more)
    assert wider.set_index(["family", "metric"]).loc[("all", "auc"), "value"] == get["all", "auc"]
    assert ("numeric", "auc") in wider.set_index(["family", "metric"]).index


def test_a_family_whose_queries_have_no_positive_gets_an_auc_but_no_pairwise_accuracy():
    positives = pd.DataFrame({"sentence1": ["s1"], "sentence2": ["p1"]})
    near = pd.DataFrame({"sentence1": ["s1", "zz"], "sentence2": ["n1", "n2"], "family": ["negation", "swap"]})
    table = N.near_miss_table({"len": lambda pairs: [len(b) / 10 for _, b in pairs]}, positives, near)
    swap = table[table.family == "swap"].set_index("metric")
    assert np.isnan(swap.loc["pairwise_accuracy", "value"]) and swap.loc["pairwise_accuracy", "n"] == 0
    assert swap.loc["auc", "value"] == 0.5 and swap.loc["auc", "n"] == 1  # "p1" and "n2" score the same


def test_a_scorer_that_returns_nan_is_named_not_averaged():
    positives = pd.DataFrame({"sentence1": ["s1"], "sentence2": ["p1"]})
    near = pd.DataFrame({"sentence1": ["s1"], "sentence2": ["n1"], "family": ["negation"]})
    with pytest.raises(ValueError, match="NaN"):
        N.near_miss_table({"broken": lambda pairs: [float("nan")] * len(pairs)}, positives, near)


def test_paraphrase_positives_orient_pairs_toward_near_miss_sources():
    paraphrases = pd.DataFrame(
        {"sentence1": ["a", "b", "c", "d"], "sentence2": ["a2", "s", "c2", "d2"], "label": [1, 1, 1, 0]}
    )
    near = pd.DataFrame({"sentence1": ["a", "s"], "sentence2": ["na", "ns"], "family": ["x", "x"]})
    pos = N.paraphrase_positives(paraphrases, near)
    assert set(map(tuple, pos[pos.matched][["sentence1", "sentence2"]].values)) == {("a", "a2"), ("s", "b")}
    assert list(pos[~pos.matched].sentence1) == ["c"]  # unmatched positives stay for the AUC; label 0 dropped


@dataclass(frozen=True)
class _Example:
    caption: str
    negative_caption: str
    subset: str
    example_id: str
    image: str


def test_sugarcrepe_protocol_uses_another_caption_of_the_same_image():
    examples = [
        _Example("a cat on a mat", "a mat on a cat", "swap_obj", "swap_obj/0", "1.jpg"),
        _Example("a small cat on a red mat", "a small cat on a blue mat", "replace_att", "replace_att/0", "1.jpg"),
        _Example("a lone dog", "a lone dog and a cat", "add_obj", "add_obj/0", "2.jpg"),
    ]
    positives, near = N.sugarcrepe_pairs(examples)
    assert list(near.example_id) == ["swap_obj/0", "replace_att/0"]  # 2.jpg has no other caption
    assert positives.sentence1.tolist() == ["a small cat on a red mat", "a cat on a mat"]
    assert (positives.sentence1 == near.sentence1).all() and (positives.sentence2 != positives.sentence1).all()
    assert near.family.tolist() == ["swap_obj", "replace_att"]


def test_self_match_table_catches_an_overlap_penalising_scorer():
    positives = pd.DataFrame(
        {"sentence1": ["The dog sat.", "Rain fell today."], "sentence2": ["A dog was sitting.", "It rained today."]}
    )

    def overlap(pairs):  # token overlap: copies score 1, the sane direction
        return [len(set(a.split()) & set(b.split())) / len(set(a.split()) | set(b.split())) for a, b in pairs]

    def anti_overlap(pairs):  # what a verifier learns when every near-duplicate it saw was a negative
        return [1 - x for x in overlap(pairs)]

    table = N.self_match_table({"overlap": overlap, "anti": anti_overlap}, positives)
    get = table.set_index(["scorer", "metric"])["value"]
    assert get["overlap", "auc"] == 1.0 and get["overlap", "pairwise_accuracy"] == 1.0
    assert get["anti", "auc"] == 0.0 and get["anti", "pairwise_accuracy"] == 0.0
    assert get["overlap", "mean_score"] == 1.0 and set(table.family) == {"self_match"}
    ties = N.self_match_table({"flat": lambda pairs: [0.5] * len(pairs)}, positives)
    assert ties.set_index("metric")["value"]["pairwise_accuracy"] == 0.5
    with pytest.raises(ValueError, match="positive"):
        N.self_match_table({"overlap": overlap}, positives.iloc[:0])
    near = pd.DataFrame({"sentence1": ["The dog sat."], "sentence2": ["The dog never sat."], "family": ["negation"]})
    both = N.self_match_table({"overlap": overlap, "anti": anti_overlap}, positives, near)
    get = both[both.family == "copy_vs_near_miss"].set_index(["scorer", "metric"])["value"]
    assert get["overlap", "pairwise_accuracy"] == 1.0 and get["anti", "pairwise_accuracy"] == 0.0
    assert set(both.family) == {"self_match", "copy_vs_near_miss"}


def test_self_match_table_calls_each_scorer_once():
    positives = pd.DataFrame({"sentence1": ["a b", "c d"], "sentence2": ["b a", "d c"]})
    near = pd.DataFrame({"sentence1": ["a b"], "sentence2": ["a not b"], "family": ["negation"]})
    calls = []

    def scorer(pairs):
        calls.append(len(pairs))
        return [1.0 if x == y else 0.0 for x, y in pairs]

    table = N.self_match_table({"exact": scorer}, positives, near)
    assert calls == [2 * 2 + 2 * 1]
    assert set(table[table.metric == "pairwise_accuracy"].value) == {1.0}


def _overlap_scorer(pairs):
    """Scores by how few words two texts share: separates near-misses the wrong way round."""
    return [-len(set(a.split()) & set(b.split())) for a, b in pairs]


def _copy_scorer(pairs):
    return [1.0 if a == b else 0.5 if len(a.split()) == len(b.split()) else 0.8 for a, b in pairs]


def test_evaluate_sets_and_separation_table_give_mean_and_std_over_seeds():
    positives = pd.DataFrame(
        {"sentence1": ["the cat sat", "a dog ran"], "sentence2": ["a feline rested here", "one hound sprinted off"]}
    )
    near = pd.DataFrame(
        {
            "sentence1": ["the cat sat", "a dog ran"],
            "sentence2": ["the cat stood", "a dog walked"],
            "family": ["verb", "verb"],
        }
    )
    sets = {"toy": (positives, near, "sentence1"), "other": (positives, near, "sentence1")}
    table = N.evaluate_sets({"overlap": _overlap_scorer, "copy": _copy_scorer}, sets)
    assert set(table.dataset) == {"toy", "other"}
    assert {"self_match", "copy_vs_near_miss", "verb", "all"} <= set(table.family)
    runs = [
        N.to_tidy(table, "", "bb", s, verifier_variant="balanced-small", train_data="balanced", size="small")
        for s in (1, 2)
    ]
    results = pd.concat(runs, ignore_index=True)
    assert results.run.iloc[0] == "bb/verifiers/balanced-small/seed1" and set(results.dataset) == {"toy", "other"}
    # a second seed that differs: the overlap scorer's near-miss AUC moves by 0.5
    results.loc[
        (results.seed == 2) & (results.variant == "overlap") & (results.metric == "auc") & (results.family == "all"),
        "value",
    ] -= 0.5
    sep = N.separation_table(results)
    assert sep.loc[("overlap", "", "balanced", "small"), ("toy", "auc")] == "0.750 ± 0.354"
    assert sep.loc[("overlap", "", "balanced", "small"), "seeds"].item() == 2
    # the overlap scorer ranks every copy below its paraphrase and its near-miss: self-match 0
    assert sep.loc[("overlap", "", "balanced", "small"), ("toy", "self_match")] == "0.000 ± 0.000"
    assert sep.loc[("copy", "", "balanced", "small"), ("other", "copy_vs_near_miss")] == "1.000 ± 0.000"
    renamed = runs[0].variant.map({"overlap": "F4-frozen", "copy": "F1-end2end"})
    one = N.separation_table(runs[0].assign(variant=renamed))
    assert ("F4", "frozen", "balanced", "small") in one.index and one.loc[
        ("F4", "frozen", "balanced", "small"), ("toy", "auc")
    ] == "1.000"


def test_separation_table_groups_columns_by_dataset():
    rows = [
        dict(variant="F1-frozen", dataset=d, family=f, metric=m, value=0.5, seed=1, train_data="model_b", size="small")
        for d in ("held", "ext")
        for f, m in CHECKS.values()
    ]
    sep = N.separation_table(pd.DataFrame(rows))
    assert list(sep.columns) == [("seeds", "")] + [(d, c) for d in ("held", "ext") for c in CHECKS]


def test_separation_table_says_how_large_each_verifier_is_and_what_it_saw():
    rows = [
        dict(
            variant=v,
            dataset="held",
            family=f,
            metric=m,
            value=0.5,
            seed=s,
            train_data=td,
            size=size,
            parameters=p,
            examples_seen=e,
        )
        for v, td, size, p, e in [
            ("F4-frozen", "model_b", "small", 58_433, 2048),
            ("F4-frozen", "model_b", "paper", 940_065, 2048),
            ("cosine Base", None, None, None, None),
        ]
        for s in (42, 43)
        for f, m in CHECKS.values()
    ]
    sep = N.separation_table(pd.DataFrame(rows))
    assert list(sep.columns[:3]) == [("seeds", ""), ("parameters", ""), ("examples_seen", "")]
    assert sep.loc[("F4", "frozen", "model_b", "paper"), ("parameters", "")] == 940_065
    assert sep.loc[("F4", "frozen", "model_b", "small"), ("examples_seen", "")] == 2048
    assert sep.loc[("cosine Base", "", "", ""), ("parameters", "")] == ""


def _runs_frame(values):
    """Tidy rows of notebook 04 for runs {(variant, train_data, seed): (auc, self_match, copy)}."""
    rows = []
    for (variant, td, seed), checks in values.items():
        for (family, metric), value in zip(CHECKS.values(), checks, strict=True):
            rows.append(
                dict(
                    variant=variant,
                    dataset="held",
                    family=family,
                    metric=metric,
                    value=value,
                    seed=seed,
                    train_data=td,
                    size="small",
                )
            )
            # another set's rows must not leak into this one's runs
            rows.append(
                dict(
                    variant=variant,
                    dataset="ext",
                    family=family,
                    metric=metric,
                    value=9.0,
                    seed=seed,
                    train_data=td,
                    size="small",
                )
            )
    return pd.DataFrame(rows)


def test_checks_per_run_keeps_each_seed_and_splits_scorer_from_regime():
    frame = _runs_frame(
        {
            ("F4-frozen", "model_b", 42): (0.2, 0.9, 0.8),
            ("F4-frozen", "model_b", 43): (0.3, 0.8, 0.7),
            ("F4-end2end", "balanced", 42): (0.4, 0.7, 0.6),
            ("cosine Base", None, 42): (0.1, 1.0, 1.0),
        }
    )
    runs = N.checks_per_run(frame, "held")
    assert len(runs) == 4 and list(runs.columns) == [*N.RUN_KEYS, *CHECKS]
    f4 = runs[(runs.scorer == "F4") & (runs.regime == "frozen")].set_index("seed")
    assert f4.loc[43, "auc"] == 0.3 and f4.loc[42, "self_match"] == 0.9
    base = runs[runs.scorer == "cosine Base"].iloc[0]
    assert base.regime == "" and base.train_data == "" and base.copy_vs_near_miss == 1.0
    assert runs[(runs.scorer == "F4") & (runs.regime == "end2end")].train_data.tolist() == ["balanced"]
    with pytest.raises(ValueError, match="no rows for dataset 'nope'"):
        N.checks_per_run(frame, "nope")


def test_checks_per_run_refuses_a_run_that_lacks_a_check():
    frame = _runs_frame({("F3-frozen", "model_b", 42): (0.2, 0.9, 0.8), ("F3-frozen", "model_b", 43): (0.3, 0.8, 0.7)})
    gap = frame[~((frame.seed == 43) & (frame.family == SELF_MATCH))]
    with pytest.raises(ValueError, match=r"lack a check.*seed=43.*\['self_match'\]"):
        N.checks_per_run(gap, "held")


def test_check_correlation_is_spearman_over_the_chosen_scorers():
    # F4's three runs fall on one line (rho = -1); Base sits off it and is left out by `scorers`
    frame = _runs_frame(
        {
            ("F4-frozen", "model_b", 42): (0.1, 0.95, 0.9),
            ("F4-frozen", "model_b", 43): (0.2, 0.85, 0.8),
            ("F4-frozen", "model_b", 44): (0.35, 0.6, 0.6),
            ("cosine Base", None, 42): (0.9, 1.0, 1.0),
        }
    )
    runs = N.checks_per_run(frame, "held")
    only_f4 = N.check_correlation(runs, scorers=["F4"])
    assert only_f4["n"] == 3 and only_f4["rho"] == pytest.approx(-1.0)
    everything = N.check_correlation(runs)
    assert everything["n"] == 4 and everything["rho"] == pytest.approx(0.2)  # 1 - 6 * 8 / (4 * 15)
    two = N.check_correlation(runs[runs.seed != 44], scorers=["F4"])
    assert two["n"] == 2 and np.isnan(two["rho"]) and np.isnan(two["p"])


def test_the_noise_control_is_seeded_per_pair_and_moves_auc_towards_chance():
    rng = np.random.default_rng(0)
    positives = pd.DataFrame({"sentence1": [f"s{i}" for i in range(200)], "sentence2": [f"p{i}" for i in range(200)]})
    near = pd.DataFrame(
        {"sentence1": [f"s{i}" for i in range(200)], "sentence2": [f"n{i}" for i in range(200)], "family": "negation"}
    )
    clean = {**{(f"s{i}", f"p{i}"): 0.8 + rng.normal(0, 0.02) for i in range(200)}}
    clean.update({(f"s{i}", f"n{i}"): 0.9 + rng.normal(0, 0.02) for i in range(200)})  # near-misses above
    base = lambda pairs: [clean[p] for p in pairs]  # noqa: E731
    sigmas = N.noise_sigmas([clean[(f"s{i}", f"p{i}")] for i in range(200)])
    assert sigmas[2.0] == pytest.approx(2 * sigmas[1.0])
    noisy = N.noisy_scorer(base, sigmas[4.0], seed=3)
    pairs = [("s1", "p1"), ("s2", "n2")]
    assert noisy(pairs).tolist() == noisy(pairs[::-1])[::-1].tolist()  # the same noise for the same pair
    assert noisy(pairs).tolist() != N.noisy_scorer(base, sigmas[4.0], seed=4)(pairs).tolist()

    def auc(scorer):
        table = N.near_miss_table({"s": scorer}, positives, near)
        return table[(table.family == "negation") & (table.metric == "auc")].value.item()

    aucs = [auc(base)] + [auc(N.noisy_scorer(base, sigmas[m], seed=0)) for m in (1.0, 4.0)]
    assert aucs[0] < 0.01 and aucs[0] < aucs[1] < aucs[2] < 0.5  # more noise: closer to chance, from below
    with pytest.raises(ValueError, match="sigma must be"):
        N.noisy_scorer(base, -1.0)


def test_noise_controls_ride_along_frozen_maxsim_on_the_heldout_set_only():
    positives = pd.DataFrame({"sentence1": ["a", "bb", "ccc"], "sentence2": ["a2", "b2", "c2"]})
    near = pd.DataFrame({"sentence1": ["a"], "sentence2": ["a3"], "family": ["negation"]})
    f1 = lambda pairs: [len(x) + len(y) / 10 for x, y in pairs]  # noqa: E731 -- any deterministic scorer
    sets = {"negatives-heldout": (positives, near, "sentence1")}
    controls = N.noise_controls({"F1-frozen": f1, "F3-frozen": f1}, sets, multiples=(1, 4), seed=0)
    assert sorted(controls) == ["F1-frozen+noise1x", "F1-frozen+noise4x"]
    assert N.noise_controls({"F3-frozen": f1}, sets) == {}  # no frozen MaxSim: no control
    assert N.noise_controls({"F1-frozen": f1}, {"toy": sets["negatives-heldout"]}) == {}


def test_separation_table_puts_pairwise_accuracy_and_the_papers_mean_score_beside_the_auc():
    from compsense.nearmiss.metrics import SEPARATION

    rows = [
        dict(variant="F4-frozen", dataset=d, family=f, metric=m, value=0.25, seed=1, train_data="b", size="small")
        for d in ("held", "ext")
        for f, m in SEPARATION.values()
    ]
    # a set where no near-miss has a paraphrase of its own sentence: no pairwise accuracy to show
    rows = [r for r in rows if not (r["dataset"] == "ext" and r["metric"] == "pairwise_accuracy")]
    rows.append(dict(rows[0], dataset="ext", metric="pairwise_accuracy", value=float("nan")))
    sep = N.separation_table(pd.DataFrame(rows))
    assert [c for d, c in sep.columns if d == "held"] == list(SEPARATION)
    assert ("ext", "pairwise_accuracy") not in sep.columns  # left out, not "nan"
    assert sep.loc[("F4", "frozen", "b", "small"), ("held", "mean_near_miss")] == "0.250"


def test_pairwise_accuracy_carries_its_interval_resampling_anchors_into_the_separation_table():
    from compsense.nearmiss.metrics import PAIRWISE_CI, keyed_pairwise_accuracy_interval

    rng = np.random.default_rng(0)
    anchors = [f"s{i}" for i in range(40)]
    positives = pd.DataFrame({"sentence1": anchors, "sentence2": [f"p{i}" for i in range(40)]})
    near = pd.DataFrame(
        {"sentence1": anchors * 2, "sentence2": [f"n{i}" for i in range(80)], "family": ["negation"] * 80}
    )
    scores = dict(zip(N.as_pairs(positives) + N.as_pairs(near), rng.random(120), strict=True))
    table = N.near_miss_table({"toy": lambda pairs: [scores[p] for p in pairs]}, positives, near)
    got = table.set_index(["family", "metric"])["value"]
    low, high = got["negation", PAIRWISE_CI[0]], got["negation", PAIRWISE_CI[1]]
    assert low < got["negation", "pairwise_accuracy"] < high and got["all", PAIRWISE_CI[0]] == low
    # the same as the metric on the same scores; an anchor's two near-misses are drawn together
    pos = [scores[p] for p in N.as_pairs(positives)]
    neg = [scores[p] for p in N.as_pairs(near)]
    assert (low, high) == keyed_pairwise_accuracy_interval(pos, neg, anchors, anchors * 2)
    with pytest.raises(ValueError, match="at least two anchors"):
        keyed_pairwise_accuracy_interval(pos[:1], neg[:2], anchors[:1], anchors[:1] * 2)
    # in the separation table: the pairwise cell with its interval, each bound averaged over seeds
    tidy = pd.concat(
        [table.assign(seed=s, value=table.value + d) for s, d in ((1, 0.0), (2, 0.02))], ignore_index=True
    ).rename(columns={"scorer": "variant"})
    sep = N.separation_table(tidy.assign(dataset="held", variant="F3-frozen"))
    cell = sep.loc[("F3", "frozen", "", ""), ("held", "pairwise_accuracy")]
    assert cell.endswith(f"[{low + 0.01:.3f}, {high + 0.01:.3f}]") and "±" in cell
    assert "[" not in sep.loc[("F3", "frozen", "", ""), ("held", "auc")]
