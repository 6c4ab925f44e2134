"""Each notebook ends with its result in words, generated from its own tables (issue 52), honest at
the smoke profile: with the random tiny BERT the sentence says that the numbers mean nothing."""

from __future__ import annotations

import pandas as pd
import pytest

from compsense.figures import endings as E

RANDOM = "mean nothing"


def test_wilson_interval_stays_inside_0_1_and_covers_the_proportion():
    low, high = E.wilson(1435, 1461)
    assert low < 1435 / 1461 < high and (round(low, 3), round(high, 3)) == (0.974, 0.988)
    assert E.wilson(10, 10)[1] == 1.0 and 0.69 < E.wilson(10, 10)[0] < 0.73
    assert all(v != v for v in E.wilson(0, 0))  # NaN without pairs


def _problem_table():
    return pd.DataFrame(
        {
            "anchor": ["a"] * 3 + ["b"] * 3,
            "other": ["a para", "a swap", "a not", "b para", "b right", "b not"],
            "kind": ["paraphrase", "near-miss: binding", "near-miss: negation"] * 2,
            "cosine": [0.990123, 0.995166, 0.97, 0.80, 0.95, 0.79],
        }
    )


def test_problem_result_counts_the_near_misses_a_cosine_cannot_tell_apart():
    text = E.problem_result(_problem_table(), "minilm-l6")
    assert "sentence-transformers/all-MiniLM-L6-v2" in text and RANDOM not in text
    assert "2 of the 4 near-misses" in text and "binding 2 of 2, negation 0 of 2" in text
    assert '"b right" (near-miss: binding) at 0.950 against' in text and "0.800" in text  # the widest gap
    assert "0.995166" not in text and "2 hand-written anchors" in text


def test_problem_result_with_random_weights_says_the_numbers_mean_nothing():
    assert E.problem_result(_problem_table(), "tiny-bert").startswith("With tiny-bert (a tiny BERT with random weights")


def _negatives_tables():
    counts = pd.DataFrame({"test": [256, 52, 113], "train": [204, 178, 106]}, index=["binding", "negation", "spatial"])
    precision = pd.DataFrame(
        {
            "family": ["binding", "negation", "temporal", "all"],
            "judged": [203, 612, 104, 1461],
            "accepted": [199, 605, 100, 1435],
            "precision": [199 / 203, 605 / 612, 100 / 104, 1435 / 1461],
        }
    )
    purity = pd.DataFrame(
        {
            "family": ["binding", "binding", "negation", "spatial"],
            "source": ["coco", "mrpc", "mrpc", "coco"],
            "split": ["test", "train", "train", "test"],
            "pairs": [143, 95, 86, 89],
            "pure": [112, 88, 86, 89],
            "purity": [112 / 143, 88 / 95, 1.0, 1.0],
        }
    )
    aucs = pd.DataFrame(
        {
            "family": ["all", "binding", "negation", "temporal"] * 2,
            "source": ["balanced (written)"] * 4 + ["unbalanced"] * 4,
            "auc": [0.684, 0.747, 0.551, 0.931, 0.855, 0.747, 0.975, 0.990],
        }
    )
    return counts, precision, purity, aucs


def test_negatives_result_quotes_each_table_with_its_interval():
    text = E.negatives_result(*_negatives_tables(), profile="local")
    assert "909 near-miss pairs (421 test, 488 train) over 3 families" in text
    assert "98.2% [97.4%, 98.8%] of 1,461 near-misses are correct" in text
    assert "weakest family is temporal at 96.2%" in text
    assert "binding 84.0% [" in text and "lowest cell is binding on coco test at 78.3% of 143 pairs" in text
    assert "AUC 0.684 over all families (unbalanced: 0.855), above the 0.65 target" in text
    assert "temporal 0.931, binding 0.747" in text and "negation 0.551" not in text
    assert "smoke" not in text


def test_negatives_result_at_smoke_says_what_the_sentences_are():
    text = E.negatives_result(*_negatives_tables(), profile="smoke")
    assert text.startswith(
        "At the smoke profile the source sentences are the few hundred that scripts/make_smoke_data.py"
    )


def test_explorer_result_compares_only_the_cosine_scale_scorers():
    scores = {"pooled cosine": 0.982, "F1 MaxSim": 1.0, "F2 alignment": 0.93, "F4 (trained)": -0.3}
    table = pd.DataFrame(
        {
            "family": ["(itself)", "negation", "binding"],
            "text": ["A", "not A", "swapped A"],
            "pooled cosine": [1.0, 0.96, 0.98],
            "F1 MaxSim": [1.0, 0.99, 1.0],
            "F2 alignment": [1.0, 0.90, 0.80],
            "F4 (trained)": [2.0, -1.0, 0.5],
        }
    )
    cosine = ["pooled cosine", "F0 mean", "F1 MaxSim", "F2 alignment"]
    text = E.explorer_result("A", "B", scores, table, "minilm-l6", cosine)
    assert "pooled cosine 0.982, F1 MaxSim 1.000, F2 alignment 0.930" in text and "F4" not in text
    assert "F1 MaxSim by 0.005, pooled cosine by 0.030, F2 alignment by 0.150" in text
    assert "(F1 MaxSim least)" in text and RANDOM not in text
    assert RANDOM in E.explorer_result("A", "B", scores, None, "tiny-bert", cosine)


@pytest.mark.parametrize("backbones", ["tiny-bert", ["minilm-l6", "tiny-bert"]])
def test_random_caveat_names_the_random_encoder(backbones):
    assert "tiny-bert" in E.random_caveat(backbones) and E.random_caveat("minilm-l6") == ""


def _geometry_rows(seeds=(42,)):
    rows = []
    values = {"base": (0.40, 0.32), "A": (0.36, 0.27), "B": (0.62, 0.58)}
    for variant, (auc, pairwise) in values.items():
        for k, seed in enumerate(seeds if variant != "base" else seeds[:1]):
            shift = 0.02 * k
            for family, metric, value in [
                ("all", "auc", auc + shift),
                ("all", "pairwise_accuracy", pairwise + shift),
                ("all", "pairwise_accuracy_ci_low", pairwise - 0.1),
                ("all", "pairwise_accuracy_ci_high", pairwise + 0.1),
                ("negation", "auc", auc + 0.1),
                ("binding", "auc", auc - 0.3),
            ]:
                rows.append(("minilm-l6", variant, seed, "negatives", family, metric, value))
            for subset, value in (("swap_att", 0.02), ("add_att", 0.9)):
                rows.append(("minilm-l6", variant, seed, "sugarcrepe", subset, "auc", value))
    return pd.DataFrame(rows, columns=["backbone", "variant", "seed", "dataset", "family", "metric", "value"])


def test_geometry_result_gives_each_model_its_auc_and_interval():
    text = E.geometry_result(_geometry_rows(), ["minilm-l6"])
    assert "AUC base 0.400, A 0.360, B 0.620" in text and RANDOM not in text
    assert "base 0.320 [0.220, 0.420], A 0.270 [0.170, 0.370], B 0.580 [0.480, 0.680]" in text
    assert "Model B − Model A: +0.260 AUC" in text and "binding 0.060 → 0.320, negation 0.460 → 0.720" in text
    assert "base 0.460, A 0.460, B 0.460 over 2 subsets, lowest for B on swap_att (0.020)" in text


def test_geometry_result_over_seeds_gives_the_seeds_range_not_an_averaged_interval():
    text = E.geometry_result(_geometry_rows(seeds=(42, 43)), "minilm-l6")
    assert "mean over 2 seeds" in text and "B 0.590 (seeds 0.580–0.600)" in text
    assert RANDOM in E.geometry_result(_geometry_rows().assign(backbone="tiny-bert"), ["tiny-bert"])


def _verifier_rows():
    """Tidy notebook-04 results: pooled Base, and F3/F4 trained at two seeds, on two sets."""
    runs = {  # variant, train_data, seed -> (near-miss AUC, self-match, copy > near-miss)
        ("cosine Base", None, 42): (0.25, 1.0, 0.98),
        ("F3-frozen", "model_b", 42): (0.10, 1.0, 0.97),
        ("F3-frozen", "model_b", 43): (0.12, 0.99, 0.96),
        ("F4-frozen", "model_b", 42): (0.40, 0.70, 0.90),
        ("F4-frozen", "model_b", 43): (0.44, 0.62, 0.88),
        ("F4-end2end", "balanced", 42): (0.30, 0.80, 0.91),
    }
    rows = []
    for dataset in ("negatives-heldout", "condaqa"):
        for (variant, train_data, seed), (auc, self_match, copy) in runs.items():
            for family, metric, value in (
                ("all", "auc", auc),
                ("self_match", "auc", self_match),
                ("copy_vs_near_miss", "pairwise_accuracy", copy),
            ):
                size = "small" if train_data else None
                rows.append((variant, seed, dataset, family, metric, value, train_data, size))
    columns = ["variant", "seed", "dataset", "family", "metric", "value", "train_data", "size"]
    return pd.DataFrame(rows, columns=columns).assign(backbone="minilm-l6")


def test_verifiers_result_names_the_best_verifier_its_cost_and_the_noise_line():
    curve = pd.DataFrame(
        [
            ("F4", "frozen", "small", "equal", 2048, "noise_excess", 0.05, -0.01, 0.11, 3),
            ("F4", "frozen", "small", "equal", 48000, "noise_excess", 0.16, 0.14, 0.19, 3),
            ("F4", "frozen", "paper", "authors", 48000, "noise_excess", 0.09, float("nan"), float("nan"), 1),
            ("F4", "frozen", "small", "equal", 48000, "auc", 0.26, 0.22, 0.29, 3),
        ],
        columns=["scorer", "regime", "size", "recipe", "budget", "metric", "mean", "ci_low", "ci_high", "seeds"],
    )
    text = E.verifiers_result(_verifier_rows(), "minilm-l6", curve)
    assert RANDOM not in text
    assert "pooled cosine (cosine Base) has near-miss AUC 0.250 (0.5 = chance), self-match 1.000" in text
    assert "best is F4 frozen (model_b, small): near-miss AUC 0.420 ± 0.028 over 2 seeds" in text
    assert "self-match 0.660, copy > near-miss 0.890" in text
    assert "Over the 5 F3/F4 runs" in text and "Spearman ρ = -1.00" in text and "as penalising overlap would" in text
    assert "none reads the edit by this test" in text
    assert "F4 frozen small at 48,000 triplets +0.160 [+0.140, +0.190] over 3 seeds, above the line" in text
    assert "F4 frozen paper (authors recipe) at 48,000 triplets +0.090 (one seed, no interval), not shown" in text
    assert "2,048" not in text  # each curve at its largest budget


def test_verifiers_result_lists_a_scorer_that_passes_every_check_on_every_set():
    rows = _verifier_rows()
    good = (rows.variant == "F4-end2end") & (rows.family == "all")
    text = E.verifiers_result(rows.assign(value=rows.value.where(~good, 0.7)), "tiny-bert")
    assert RANDOM in text and "(negatives-heldout, condaqa): F4 end2end balanced small." in text


def _rerank_answer():
    columns = ["variant", "verifier", "regime", "k", "ndcg@10", "mean_delta", "ci_low", "ci_high", "p_holm"]
    rows = [
        ("base", "none", "encoder-only", None, 0.624, None, None, None, None),
        ("B", "none", "encoder-only", None, 0.579, None, None, None, None),
        ("F1-frozen@model_b-small", "F1", "frozen", 100, 0.675, 0.051, 0.013, 0.090, 0.04),
        ("F3-frozen@model_b-small", "F3", "frozen", 100, 0.681, 0.057, 0.020, 0.094, 0.025),
        ("F4-frozen@model_b-small", "F4", "frozen", 100, 0.537, -0.087, -0.13, -0.05, 0.001),
        ("F4-end2end@model_b-small", "F4", "end2end", 100, 0.610, -0.014, -0.05, 0.02, 0.6),
        ("F1-frozen+noise1x@model_b-small", "F1", "frozen", 100, 0.39, -0.23, -0.28, -0.18, 0.001),
        ("F1-frozen+noise4x@model_b-small", "F1", "frozen", 100, 0.30, -0.32, -0.37, -0.27, 0.001),
    ]
    table = pd.DataFrame(rows, columns=columns)
    return table.assign(n_queries=[None, None] + [150] * 6, n_seeds=[None, None] + [3] * 6)


def test_rerank_result_gives_the_best_and_worst_reranker_with_intervals():
    text = E.rerank_result(_rerank_answer(), "minilm-l6")
    assert "Encoders alone, ndcg@10: base 0.624, B 0.579." in text and RANDOM not in text
    assert "over 150 queries and 3 verifier seeds" in text
    assert "the best is F3-frozen@model_b-small +0.057 [+0.020, +0.094] (Holm p 0.025)" in text
    assert "the worst F4-frozen@model_b-small -0.087 [-0.130, -0.050]" in text
    above = "Of 4 rerankers, 2 are above Base with the interval (F3-frozen@model_b-small, F1-frozen@model_b-small)"
    assert above in text
    assert "1 below it" in text and "moves ndcg@10 by -0.230 to -0.320" in text
    assert RANDOM in E.rerank_result(_rerank_answer().iloc[:2], "tiny-bert")


ENDINGS = {
    "00_the_problem": "problem_result",
    "02_training_ab": "describe_result",
    "01_data_and_negatives": "negatives_result",
    "03_pooled_geometry": "geometry_result",
    "04_verifiers": "verifiers_result",
    "05_reranking": "rerank_result",
    "06_explorer": "explorer_result",
}


@pytest.mark.parametrize("stem", sorted(ENDINGS))
def test_each_notebook_ends_with_its_result_in_words(stem):
    """The last cell prints the notebook's sentence from compsense.figures.endings, under a heading."""
    import json

    from compsense.core.paths import repo_root

    cells = json.loads((repo_root() / "notebooks" / f"{stem}.ipynb").read_text())["cells"]
    heading, last = cells[-2], cells[-1]
    assert last["cell_type"] == "code" and f"print({ENDINGS[stem]}(" in "".join(last["source"])
    assert heading["cell_type"] == "markdown" and "".join(heading["source"]).startswith("## The result in words")
    imports = "".join(line for cell in cells if cell["cell_type"] == "code" for line in cell["source"])
    if stem == "02_training_ab":  # 02's sentence is the harness's, beside the tables it reads
        block = imports.split("from compsense.retrieval.harness import (", 1)[1].split(")", 1)[0]
        assert f"{ENDINGS[stem]}," in block
    else:
        assert f"from compsense.figures.endings import {ENDINGS[stem]}" in imports
