"""The verifier budget curve (compsense.verifiers.budget): its plan, its folders, its table."""

import numpy as np
import pandas as pd
import pytest

from compsense.core.layout import results_file
from compsense.verifiers import architectures as V
from compsense.verifiers import budget as B
from compsense.verifiers import training as T
from compsense.verifiers.config import Compute, VerifierGrid, VerifierTraining

QUIET = Compute(show_progress=False)


def _rows(n=24):
    people = ["teacher", "pilot", "farmer", "nurse", "baker", "judge"]
    things = ["kettle", "ladder", "lamp", "bucket"]
    rows = []
    for i in range(n):
        p, t = people[i % len(people)], things[i % len(things)]
        anchor = f"The {p} carried the {t}."
        rows.append(
            dict(
                anchor=anchor,
                positive=anchor,
                negative=f"The {p} did not carry the {t}.",
                family="negation",
                source_id=str(i),
                split="train",
            )
        )
    return pd.DataFrame(rows)


def _sets(rows):
    near = rows[["anchor", "negative", "family"]].rename(columns={"anchor": "sentence1", "negative": "sentence2"})[:6]
    positives = pd.DataFrame(
        {"sentence1": near.sentence1, "sentence2": [s.replace("The", "A") for s in near.sentence1]}
    )
    return {"negatives-heldout": (positives, near, "sentence1")}


def test_plan_runs_the_whole_curve_at_the_first_seed_then_more_seeds_at_the_largest():
    curve = B.BudgetCurve(examples=(8, 16, 32))
    assert curve.plan([42, 43, 44]) == [(8, 42), (16, 42), (32, 42), (32, 43), (32, 44)]
    assert B.BudgetCurve(examples=(8, 16), seeds_at_largest=(43,)).plan([42, 43]) == [(8, 42), (16, 42), (16, 43)]
    assert B.BudgetCurve().plan([42]) == [] and not B.BudgetCurve().enabled


def test_end_to_end_trains_only_at_its_own_budgets():
    curve = B.BudgetCurve.from_params(
        {"examples": [8, 16, 32], "regimes": ["frozen", "end2end"], "end2end_examples": [16]}
    )
    assert [curve.regimes_at(b) for b in (8, 16, 32)] == [("frozen",), ("frozen", "end2end"), ("frozen",)]
    assert B.BudgetCurve(examples=(8,), regimes=("frozen", "end2end")).regimes_at(8) == ("frozen", "end2end")
    with pytest.raises(ValueError, match=r"end2end_examples: \[12\] are not budgets"):
        B.BudgetCurve.from_params({"examples": [8, 16], "end2end_examples": [12]})


@pytest.mark.parametrize(
    "params, message",
    [
        ({"examples": [16, 8]}, "ascending"),
        ({"examples": [0, 8]}, ">= 1"),
        ({"examples": 8}, "must be a list"),
        ({"budgets": [8]}, "unknown keys"),
        ({"examples": [8], "regimes": ["thawed"]}, "unknown"),
        ({"examples": [8], "verifiers": ["F9"]}, "F9"),
    ],
)
def test_from_params_refuses_a_bad_plan_naming_the_key(params, message):
    with pytest.raises(ValueError, match=message):
        B.BudgetCurve.from_params(params)


def test_budget_curve_trains_each_budget_into_its_own_folder_beside_the_noise_line(tiny_encoder, tmp_path):
    rows = _rows()
    curve = B.BudgetCurve.from_params(
        {
            "examples": [8, 16],
            "verifiers": ["F3"],
            "sizes": ["small"],
            "size_scope": {},
            "regimes": ["frozen", "end2end"],
            "end2end_examples": [8],
            "authors_recipe": False,
        }
    )
    training, results = B.run_budget_curve(
        curve,
        {"model_b": rows},
        VerifierGrid(seeds=[1, 2]),
        tiny_encoder,
        tmp_path,
        _sets(rows),
        "tiny",
        training=VerifierTraining(
            batch_size=4, budget_examples=999
        ),  # notebook 04's own budget: the curve sets its own
        compute=QUIET,
    )
    trained = training[training.verifier == "F3-frozen"]
    assert sorted(zip(trained.budget, trained.seed, trained.examples_seen)) == [(8, 1, 8), (16, 1, 16), (16, 2, 16)]
    e2e = training[training.verifier == "F3-end2end"]
    assert list(zip(e2e.budget, e2e.seed, e2e.examples_seen)) == [(8, 1, 8)]  # end-to-end at its one budget
    for budget, seed in [(8, 1), (16, 1), (16, 2)]:
        folder = T.verifier_dir(tmp_path, f"model_b-small{B.budget_suffix(budget)}", seed, "F3-frozen")
        assert (folder / V.CONFIG_FILE).exists()
    # the noise line once per seed, at budget 0: frozen MaxSim and its noise control
    zero = results[results.budget == 0]
    assert set(zero.variant) == {"F1-frozen", "F1-frozen+noise1x", "F1-frozen+noise2x", "F1-frozen+noise4x"}
    assert set(zero.seed) == {1, 2}
    # each noise row carries its sigma (notebook 05 reranks with it); 4x is four times 1x
    sigma = zero[zero.seed == 1].groupby("variant").noise_sigma.first()
    assert np.isnan(sigma["F1-frozen"]) and sigma["F1-frozen+noise4x"] == pytest.approx(4 * sigma["F1-frozen+noise1x"])
    saved = pd.read_parquet(results_file(tmp_path, B.RESULTS))
    assert len(saved) == len(results)  # no budget overwrote another

    runs = B.budget_runs(results)
    assert {"auc", "pairwise_accuracy", "self_match", "copy_vs_near_miss", "mean_near_miss"} <= set(runs.columns)
    assert "auc:negation" in runs.columns
    noise = runs[runs.scorer.str.contains("+noise", regex=False) | (runs.scorer == "F1")]
    assert (noise.noise_excess <= 1e-9).all()  # the line's own points lie on it (or under a level beside them)
    table = B.budget_table(runs)
    largest = table[(table.scorer == "F3") & (table.budget == 16) & (table.metric == "mean_near_miss")]
    assert largest.seeds.item() == 2 and largest.ci_low.item() < largest["mean"].item() < largest.ci_high.item()
    smallest = table[(table.scorer == "F3") & (table.budget == 8) & (table.metric == "auc")].set_index("regime")
    assert sorted(smallest.index) == ["end2end", "frozen"]  # both regimes stand in one table at the shared budget
    assert (smallest.seeds == 1).all() and smallest.ci_low.isna().all()


def test_a_finished_curve_is_loaded_not_retrained(tiny_encoder, tmp_path):
    rows = _rows()
    curve = B.BudgetCurve(examples=(8,), verifiers=("F3",), sizes=("small",), size_scope={}, authors_recipe=False)
    args = (curve, {"model_b": rows}, VerifierGrid(seeds=[1]), tiny_encoder, tmp_path, _sets(rows), "tiny")
    first, _ = B.run_budget_curve(*args, training=VerifierTraining(batch_size=4), compute=QUIET)
    again, _ = B.run_budget_curve(*args, training=VerifierTraining(batch_size=4), compute=QUIET)
    assert first[first.verifier == "F3-frozen"].trained.item()
    assert again[again.verifier == "F3-frozen"].seconds.item() == first[first.verifier == "F3-frozen"].seconds.item()


def test_the_authors_recipe_point_uses_their_loss_and_special_tokens(tiny_encoder, tmp_path, monkeypatch):
    real = T.authors_recipe
    monkeypatch.setattr(T, "authors_recipe", lambda *a: {**real(*a), "budget_examples": 8, "batch_size": 4})
    rows = _rows()
    curve = B.BudgetCurve(examples=(8,), verifiers=("F4",), sizes=("small",), size_scope={})
    training, results = B.run_budget_curve(
        curve, {"model_b": rows}, VerifierGrid(seeds=[1]), tiny_encoder, tmp_path, _sets(rows), "tiny",
        training=VerifierTraining(batch_size=4),
    )  # fmt: skip
    theirs = training[training.recipe == "authors"]
    assert list(theirs.verifier) == ["F4-frozen"] and theirs["size"].item() == "paper"
    folder = T.verifier_dir(tmp_path, "model_b-paper-authors", 1, "F4-frozen")
    history = V.read_info(folder)["history"]
    assert history["include_special"] is True and history["hard_negatives"] == "own"  # their tokens, their loss
    assert (history["lr"], history["weight_decay"], history["in_batch_negatives"]) == (1e-4, 0.01, None)
    assert set(results[results.recipe == "authors"].budget) == {8}


def test_noise_excess_measures_the_distance_above_the_line():
    runs = pd.DataFrame(
        {
            "scorer": ["F1", "F1-frozen+noise1x", "F4", "F4"],
            "regime": ["frozen", "", "frozen", "frozen"],
            "seed": [1, 1, 1, 1],
            "budget": [0, 0, 8, 16],
            "self_match": [1.0, 0.8, 0.9, 0.5],
            "auc": [0.1, 0.3, 0.6, 0.5],
        }
    )
    out = B.noise_excess(runs)
    # the line: (0.5, 0.5) - (0.8, 0.3) - (1.0, 0.1); at self-match 0.9 it is 0.2
    assert out.noise_excess.tolist() == pytest.approx([0.0, 0.0, 0.4, 0.0])


def test_budget_figure_draws_a_line_per_verifier_and_the_noise_line_as_references():
    from compsense.figures.verifiers import budget_figure

    rows = []
    for scorer, budget, seeds in [("F4", 8, 1), ("F4", 16, 3), ("F1", 0, 1), ("F1-frozen+noise2x", 0, 1)]:
        regime = "" if "noise" in scorer else "frozen"
        for metric in ("auc", "self_match"):
            rows.append(dict(scorer=scorer, regime=regime, size="small", recipe="equal", budget=budget, metric=metric,
                             mean=0.4, ci_low=0.3 if seeds > 1 else np.nan, ci_high=0.5 if seeds > 1 else np.nan,
                             seeds=seeds))  # fmt: skip
    rows.append({**rows[0], "recipe": "authors", "budget": 48, "size": "paper"})
    table = pd.DataFrame(rows)
    table.loc[(table.scorer == "F1-frozen+noise2x") & (table.metric == "auc"), "mean"] = 0.2
    fig = budget_figure(table)
    names = [t.name for t in fig.data]
    assert names.count("F4-frozen (small)") == 2 and "F4-frozen (paper, authors recipe)" in names
    assert list(fig.data[0].x) == [8, 16] and list(fig.data[0].error_y.array) == pytest.approx([0.0, 0.1])
    labels = [a.text for a in fig.layout.annotations]
    # the AUC panel labels both lines; on self-match they coincide (0.4), so only frozen MaxSim is named
    assert labels.count("frozen MaxSim") == 2 and labels.count("MaxSim + noise 2x") == 1
    assert "new text" not in labels  # plotly's default for an annotation without a text
    assert list(fig.layout.xaxis.ticktext) == ["8", "16", "48"]  # the budgets themselves, not log decades
    # the noise line scored again by a one-seed piece at another size does not move the three-seed line
    again = pd.concat([table, table[table.budget == 0].assign(size="paper", seeds=1, mean=0.9)], ignore_index=True)
    again.loc[again.budget == 0, "seeds"] = again.loc[again.budget == 0, "seeds"].where(again["size"] == "paper", 3)
    lines = [s.y0 for s in budget_figure(again).layout.shapes if s.y0 == s.y1 and s.xref.endswith("domain")]
    assert 0.9 not in lines and 0.2 in lines
    # a curve on balanced rows is a line of its own beside the model_b rows (those without the column)
    both = pd.concat([table, table[table.budget > 0].assign(train_data="balanced", mean=0.6)], ignore_index=True)
    names = [t.name for t in budget_figure(both).data]
    assert names.count("F4-frozen (small, model_b rows)") == 2 and names.count("F4-frozen (small, balanced rows)") == 2


def test_budget_figure_gives_each_verifier_its_own_colour_and_each_training_set_a_dash():
    """More lines than plotly's ten colours: a colour per scorer x regime x size, a dash per training set,
    so no two verifiers share a colour and a verifier's lines on two sets differ only in their dash."""
    from compsense.figures.verifiers import budget_figure

    verifiers = [(s, r, z) for s in ("F3", "F4") for r in ("frozen", "end2end") for z in ("small", "paper")]
    rows = [
        dict(scorer=s, regime=r, size=z, recipe="equal", budget=8, metric="auc", mean=0.5, ci_low=np.nan,
             ci_high=np.nan, seeds=1, train_data=t)
        for s, r, z in verifiers for t in ("balanced", "model_b")
    ]  # fmt: skip
    lines = [t for t in budget_figure(pd.DataFrame(rows)).data if t.line.color is not None]
    assert len(lines) == 16
    colour = {}
    for trace in lines:
        verifier = trace.name.split(",")[0]
        colour.setdefault(verifier, set()).add(trace.line.color)
        assert trace.line.dash == ("solid" if "model_b rows" in trace.name else "dash")
    assert all(len(c) == 1 for c in colour.values())  # both sets of a verifier: one colour
    assert len({c for cs in colour.values() for c in cs}) == len(verifiers)  # eight verifiers, eight colours


def test_budget_figure_keeps_an_auc_panel_on_0_to_1_when_a_two_seed_interval_runs_off_it():
    from compsense.figures.verifiers import budget_figure

    row = dict(scorer="F4", regime="end2end", size="small", recipe="equal", budget=8, seeds=2, train_data="balanced")
    table = pd.DataFrame(
        [{**row, "metric": "auc", "mean": 0.3, "ci_low": -1.0, "ci_high": 1.6},
         {**row, "metric": "noise_excess", "mean": 0.1, "ci_low": -0.7, "ci_high": 0.9}]
    )  # fmt: skip
    fig = budget_figure(table)
    assert list(fig.layout.yaxis.range) == [-0.02, 1.02]  # near-miss AUC
    assert fig.layout.yaxis2.range is None  # above the noise line: no bound, the interval drawn whole


def test_a_curve_on_training_data_notebook_04_did_not_build_is_refused():
    with pytest.raises(ValueError, match="add it to `train_data`"):
        B.run_budget_curve(
            B.BudgetCurve(examples=(8,)), {"balanced": _rows()}, VerifierGrid(), None, "unused", {}, "tiny"
        )


def test_budget_view_puts_the_interval_beside_the_mean_where_seeds_give_one():
    table = pd.DataFrame(
        [
            dict(scorer="F4", regime="frozen", size="small", recipe="equal", budget=8, metric="self_match",
                 mean=0.9, ci_low=np.nan, ci_high=np.nan, seeds=1),
            dict(scorer="F4", regime="frozen", size="small", recipe="equal", budget=16, metric="self_match",
                 mean=0.8, ci_low=0.7, ci_high=0.85, seeds=3),
            dict(scorer="F4", regime="frozen", size="small", recipe="equal", budget=16, metric="mean_near_miss",
                 mean=0.5, ci_low=0.4, ci_high=0.6, seeds=3),
        ]
    )  # fmt: skip
    view = B.budget_view(table)
    assert list(view.columns) == ["self_match"]
    assert view.self_match.tolist() == ["0.900", "0.800 [0.700, 0.850]"]


def test_where_noise_levels_share_a_self_match_the_line_is_its_highest_auc_there():
    runs = pd.DataFrame(
        {
            "scorer": ["F1", "F1-frozen+noise1x", "F1-frozen+noise4x", "F4"],
            "regime": ["frozen", "", "", "frozen"],
            "seed": [1, 1, 1, 1],
            "budget": [0, 0, 0, 8],
            "self_match": [1.0, 1.0, 0.8, 1.0],
            "auc": [0.1, 0.2, 0.3, 0.5],
        }
    )
    assert B.noise_excess(runs).noise_excess.tolist() == pytest.approx([-0.1, 0.0, 0.0, 0.3])


def _tidy(train_data, variant, budget, seed, auc, self_match):
    """Tidy held-out rows of one run, as `run_study` writes them (the columns `budget_runs` reads)."""
    run = dict(dataset=B.HELDOUT, variant=variant, size="small", recipe="equal", budget=budget, seed=seed,
               train_data=train_data)  # fmt: skip
    return [
        {**run, "family": "all", "metric": "auc", "value": auc},
        {**run, "family": "self_match", "metric": "auc", "value": self_match},
    ]


def test_curves_on_two_training_sets_stand_apart_in_one_table():
    rows = []
    for seed in (1, 2):
        for train_data, auc in (("model_b", 0.2), ("balanced", 0.6)):
            rows += _tidy(train_data, "F1-frozen", 0, seed, 0.1, 1.0)  # the noise line: MaxSim and its control
            rows += _tidy(train_data, "F1-frozen+noise1x", 0, seed, 0.3, 0.8)
            rows += _tidy(train_data, "F4-frozen", 8, seed, auc + seed / 100, 0.9)
    table = B.budget_table(B.budget_runs(pd.DataFrame(rows)))
    f4 = table[(table.scorer == "F4") & (table.metric == "auc")].set_index("train_data")
    assert f4["mean"].to_dict() == pytest.approx({"model_b": 0.215, "balanced": 0.615})  # never averaged together
    assert (f4.seeds == 2).all()
    # the noise line is the same whichever rows the curve trained on: 0.6 above it at self-match 0.9 (line 0.2)
    excess = table[(table.scorer == "F4") & (table.metric == "noise_excess")].set_index("train_data")["mean"]
    assert excess.to_dict() == pytest.approx({"model_b": 0.015, "balanced": 0.415})
    assert "train_data" in B.budget_view(table).index.names


def test_results_without_a_training_set_column_read_as_the_authors_rows():
    rows = pd.DataFrame(_tidy("model_b", "F4-frozen", 8, 1, 0.4, 0.9)).drop(columns="train_data")
    assert B.budget_runs(rows).train_data.tolist() == [B.DEFAULT_TRAIN_DATA]


def test_a_curve_on_balanced_rows_trains_into_its_own_folders_and_names_them(tiny_encoder, tmp_path):
    rows = _rows()
    para = rows.assign(positive=rows.anchor.str.replace("The", "A", n=1))  # a paraphrase as the positive
    curve = B.BudgetCurve.from_params(
        {"examples": [8], "verifiers": ["F4"], "sizes": ["small"], "size_scope": {}, "train_data": "balanced",
         "authors_recipe": False}
    )  # fmt: skip
    training, results = B.run_budget_curve(
        curve, {"model_b": rows, "balanced": para}, VerifierGrid(seeds=[1], noise_multiples=(1.0,)), tiny_encoder,
        tmp_path, _sets(rows), "tiny", training=VerifierTraining(batch_size=4), compute=QUIET,
    )  # fmt: skip
    assert set(training.train_data) == {"balanced"} and set(results.train_data) == {"balanced"}
    assert (T.verifier_dir(tmp_path, f"balanced-small{B.budget_suffix(8)}", 1, "F4-frozen") / V.CONFIG_FILE).exists()
    assert not T.verifier_dir(tmp_path, f"model_b-small{B.budget_suffix(8)}", 1, "F4-frozen").exists()
    table = B.budget_table(B.budget_runs(results))
    assert set(table.train_data) == {"balanced"} and {0, 8} == set(table.budget)


def test_with_train_data_reads_rows_without_the_column_or_with_blanks_as_the_authors_rows():
    """One rule for tables published before `train_data` existed, wherever they are read (the budget table,
    its figure, the cross-encoder's figure, the README tables)."""
    from compsense.verifiers.names import DEFAULT_TRAIN_DATA, with_train_data

    old = pd.DataFrame({"scorer": ["F3", "F4"]})
    assert with_train_data(old).train_data.tolist() == [DEFAULT_TRAIN_DATA] * 2
    assert "train_data" not in old  # the caller's table is left as it was
    mixed = pd.DataFrame({"scorer": ["F3", "F4", "F4"], "train_data": ["balanced", None, float("nan")]})
    assert with_train_data(mixed).train_data.tolist() == ["balanced", DEFAULT_TRAIN_DATA, DEFAULT_TRAIN_DATA]


def _seed_runs(seeds, aucs, commit="c0"):
    """`budget_runs` of the noise line and F4 (balanced rows, budget 8) at `seeds`, F4's AUC per seed."""
    rows = []
    for seed, auc in zip(seeds, aucs, strict=True):
        rows += _tidy("balanced", "F1-frozen", 0, seed, 0.1, 1.0)
        rows += _tidy("balanced", "F1-frozen+noise1x", 0, seed, 0.3, 0.8)
        rows += _tidy("balanced", "F4-frozen", 8, seed, auc, 0.9)
    return B.budget_runs(pd.DataFrame(rows)).assign(commit=commit)


def test_over_seeds_of_a_runs_own_seeds_gives_back_its_table_through_a_csv(tmp_path):
    runs = _seed_runs([42, 43], [0.61, 0.67])
    curve = B.budget_table(runs.drop(columns="commit")).assign(commit="c0")
    runs.to_csv(tmp_path / "runs.csv", index=False)
    again = B.over_seeds(curve, pd.read_csv(tmp_path / "runs.csv"))
    pd.testing.assert_frame_equal(again.reset_index(drop=True), curve.reset_index(drop=True))


def test_seeds_trained_on_two_machines_make_one_point_with_a_seed_interval():
    first, second = _seed_runs([42], [0.61], "aaa"), _seed_runs([43], [0.67], "bbb")
    curve = B.budget_table(second.drop(columns="commit")).assign(commit="bbb")  # the second machine's own table
    assert (curve.seeds == 1).all()
    both = B.over_seeds(curve, pd.concat([first, second]))
    f4 = both[(both.scorer == "F4") & (both.metric == "auc")].iloc[0]
    assert f4.seeds == 2 and f4["mean"] == pytest.approx(0.64) and f4.ci_low < 0.61 and f4.ci_high > 0.67
    assert f4.commit == "aaa+bbb"  # each seed's commit, in seed order
    assert len(both) == len(curve) and list(both.columns) == list(curve.columns)
    # a point no run of the table names is left as it is
    other = curve.assign(scorer=curve.scorer.replace({"F4": "F3"}))
    kept = B.over_seeds(other, first)
    pd.testing.assert_frame_equal(
        kept[kept.scorer == "F3"].reset_index(drop=True), other[other.scorer == "F3"].reset_index(drop=True)
    )


def test_a_one_seed_point_published_before_its_runs_becomes_that_seeds_run():
    curve = B.budget_table(_seed_runs([42], [0.61]).drop(columns="commit")).assign(commit="aaa", piece="p42")
    runs = B.runs_from_table(curve, 42)
    assert set(runs.seed) == {42} and set(runs.piece) == {"p42"} and set(runs.commit) == {"aaa"}
    f4 = runs[runs.scorer == "F4"].iloc[0]
    assert f4.auc == pytest.approx(0.61) and f4.self_match == pytest.approx(0.9)
    # joined by a second seed, the point is the mean of both
    later = _seed_runs([43], [0.67], "bbb")
    both = B.over_seeds(B.budget_table(later.drop(columns="commit")), pd.concat([runs, later]))
    assert both[(both.scorer == "F4") & (both.metric == "auc")]["mean"].tolist() == pytest.approx([0.64])
    with pytest.raises(ValueError, match="only the values of a point of one seed, or of two"):
        B.runs_from_table(B.budget_table(_seed_runs([42, 43], [0.6, 0.7]).drop(columns="commit")), 42)


def test_a_two_seed_point_holds_its_pair_and_a_third_seed_joins_it_as_if_all_three_were_published():
    truth = _seed_runs([42, 43, 44], [0.61, 0.67, 0.70])
    two = B.budget_table(truth[truth.seed < 44].drop(columns="commit")).assign(commit="aaa")
    pair = B.runs_from_table(two, [42, 43])
    f4 = pair[pair.scorer == "F4"].sort_values("seed")
    assert f4.auc.tolist() == pytest.approx([0.61, 0.67], abs=1e-3) and f4.self_match.tolist() == pytest.approx(
        [0.9, 0.9]
    )
    assert pair.source.str.startswith("the pair in the published two-seed mean").all()
    third = truth[truth.seed == 44]
    joined = B.over_seeds(B.budget_table(third.drop(columns="commit")), pd.concat([pair, third]))
    whole = B.budget_table(truth.drop(columns="commit"))
    for frame in (joined, whole):
        frame.set_index(["scorer", "budget", "metric"], inplace=True)
    columns = ["mean", "ci_low", "ci_high", "seeds"]
    pd.testing.assert_frame_equal(joined.loc[whole.index, columns], whole[columns], atol=2e-3)
    with pytest.raises(ValueError, match="seeds \\[42, 43, 44\\] for points of \\[2\\] seeds"):
        B.runs_from_table(two, [42, 43, 44])
