"""`compsense crossencoder --publish` (compsense.figures.crossencoder): the cross-encoder's results under
--out/results/ into figures/, from tables a real run of the command made on the tiny BERT and the smoke
data (tests/test_joint.py's way), published into a temporary folder, never into the committed figures/."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from compsense.__main__ import main as cli
from compsense.core.stats import holm, seed_level_test
from compsense.core.storage import read_csv, read_table
from compsense.figures import crossencoder as C
from compsense.nearmiss.evaluation import parse_noise_name
from compsense.nearmiss.metrics import PAIRWISE_ACCURACY, PAIRWISE_CI
from compsense.verifiers import joint_cli
from compsense.verifiers.names import with_train_data
from tests.test_joint import SMOKE, _work_dir

REPO = Path(__file__).resolve().parents[1]
MAPS = REPO / "figures" / "tables"  # the committed map-verifier tables, read only
COMMAND = "python -m compsense crossencoder --publish --out test"


def _crossencoder(out: Path, work: Path, *extra: str) -> None:
    args = ["crossencoder", "--profile", "smoke", "--rows", "balanced", "--budget", "16", "--work-dir", str(work)]
    assert cli([*args, "--data-dir", str(SMOKE), "--out", str(out), *extra]) == 0


@pytest.fixture(scope="module")
def published(tmp_path_factory):
    """Two seeds of the default loss with SciFact reranking and the map verifiers F3/F4 frozen beside it
    (--maps), one seed of bce at another budget without either, then --publish's function into `dest`:
    {"out", "dest", "written", "source": crossencoder.parquet}."""
    tmp = tmp_path_factory.mktemp("publish")
    work, out, dest = tmp / "work", tmp / "out", tmp / "dest"
    _work_dir(work)
    maps = ["--maps", "F3,F4", "--map-regimes", "frozen"]
    _crossencoder(out, work, "--seeds", "7,8", "--ks", "5", "--cost-queries", "2", *maps)
    _crossencoder(out, work, "--seeds", "7", "--loss", "bce", "--no-rerank", "--budget", "24")
    written = C.publish(out, dest=dest, maps=MAPS, command=COMMAND, png=False)
    return {
        "out": out,
        "dest": dest,
        "written": written,
        "source": read_table(out / "results" / "crossencoder.parquet"),
    }


def _table(published, name: str) -> pd.DataFrame:
    return read_csv(published["dest"] / "tables" / C.TABLES[name])


@pytest.mark.slow
def test_publish_writes_every_table_and_the_figure_into_dest(published):
    dest = published["dest"]
    expected = {dest / "tables" / name for name in C.TABLES.values()} | {dest / f"{C.FIGURE}.html"}
    assert expected <= set(published["written"]) and all(p.is_file() for p in expected)
    assert all(dest in p.parents for p in published["written"])  # nothing outside dest (the committed figures/)


@pytest.mark.slow
def test_the_seed_rows_are_the_sources_rows_sorted(published):
    rows, source = _table(published, "rows"), published["source"]
    assert rows.columns[: len(C.ROW_ORDER) + 1].tolist() == [*C.ROW_ORDER, "value"]
    assert {"commit", "n", "size", "verifier_variant", "examples_seen"} <= set(rows.columns) and "run" not in rows
    assert len(rows) == len(source) and set(rows.variant) == {"CE-end2end"}
    assert sorted(set(zip(rows.loss, rows.seed))) == [("bce", 7), ("cmnrl", 7), ("cmnrl", 8)]
    key = ["size", "loss", "seed", "dataset", "family", "metric"]
    assert rows[key].apply(tuple, axis=1).is_monotonic_increasing  # one model (backbone, rows, budget)
    both = rows.merge(source, on=key, suffixes=("", "_source"))
    assert len(both) == len(source)
    np.testing.assert_array_equal(both.value.to_numpy(), both.value_source.to_numpy())
    assert (both["commit"] == both.commit_source).all() and rows["commit"].notna().all()


@pytest.mark.slow
def test_the_summarys_mean_is_the_mean_of_the_seed_rows_with_its_interval_named(published):
    summary, rows = _table(published, "summary"), _table(published, "rows")
    assert summary.columns.tolist() == [*C.SUMMARY_KEY, "mean", "ci_low", "ci_high", "interval", "seeds", "n", "commit"]
    assert not summary.metric.isin(PAIRWISE_CI).any()  # the carried bounds are an interval, not a metric
    values = rows[~rows.metric.isin(PAIRWISE_CI)].dropna(subset=["value"])
    means = values.groupby(C.SUMMARY_KEY).value.agg(["mean", "nunique", "count"]).reset_index()
    both = summary.merge(means, on=C.SUMMARY_KEY, suffixes=("", "_rows"))
    assert len(both) == len(summary) == len(means)
    np.testing.assert_allclose(both["mean"], both.mean_rows, rtol=1e-12)
    assert (both.seeds == both["count"]).all()
    two = summary[summary.loss == "cmnrl"]
    assert (two.seeds == 2).all() and set(two.interval) == {C.INTERVALS["seeds"]}
    row = two[(two.dataset == "negatives-heldout") & (two.family == "self_match") & (two.metric == "auc")].iloc[0]
    seeds = values[(values.loss == "cmnrl") & (values.dataset == row.dataset) & (values.family == row.family)]
    seeds = seeds[seeds.metric == "auc"].value.to_numpy()
    test = seed_level_test(seeds)
    assert (row.ci_low, row.ci_high) == pytest.approx((test["t_ci_low"], test["t_ci_high"]))


@pytest.mark.slow
def test_one_seeds_pairwise_accuracy_keeps_the_anchor_bootstrap_it_carries(published):
    summary, rows = _table(published, "summary"), _table(published, "rows")
    one = summary[summary.loss == "bce"]
    assert (one.seeds == 1).all()
    carried = one[one.interval == C.INTERVALS["anchors"]]
    assert len(carried) and (carried.metric == PAIRWISE_ACCURACY).all()
    assert set(one[one.metric != PAIRWISE_ACCURACY].interval) == {C.INTERVALS["none"]}
    assert one[one.interval == C.INTERVALS["none"]][["ci_low", "ci_high"]].isna().all().all()
    bounds = rows[(rows.loss == "bce") & rows.metric.isin(PAIRWISE_CI)]
    bounds = bounds.pivot_table(index=["dataset", "family"], columns="metric", values="value")
    got = carried.set_index(["dataset", "family"])[["ci_low", "ci_high"]]
    np.testing.assert_allclose(got.to_numpy(), bounds.loc[got.index, list(PAIRWISE_CI)].to_numpy())


@pytest.mark.slow
def test_the_cross_encoders_pairwise_accuracy_stands_beside_the_best_map_verifiers(published):
    versus, summary = _table(published, "vs_maps"), _table(published, "summary")
    assert set(zip(versus.dataset, versus.family)) == set(C.VERSUS) and len(versus) == 2 * len(C.VERSUS)
    assert {"map_verifier", "map_mean", "map_ci_low", "map_ci_high", "map_seeds", "difference"} <= set(versus)
    ours = summary[summary.metric == PAIRWISE_ACCURACY].merge(versus, on=[*C.MODEL, "dataset", "family"])
    np.testing.assert_allclose(ours.mean_x, ours.mean_y)
    # the bce model at 24 triplets had no map verifiers beside it: notebook 04's grid, unpaired
    unpaired = versus[versus.pairing == C.PAIRINGS["unpaired"]]
    assert set(unpaired.budget) == {24} and len(unpaired) == len(C.VERSUS)
    maps = read_csv(MAPS / "all_verifiers.csv")
    maps = maps[(maps.metric == PAIRWISE_ACCURACY) & maps.variant.str.match(r"F\d-(frozen|end2end)$")]
    for row in unpaired.itertuples():
        best = maps[(maps.train_data == row.train_data) & (maps.dataset == row.dataset) & (maps.family == row.family)]
        assert row.map_mean == pytest.approx(best["mean"].max())
        assert row.difference == pytest.approx(row.mean - row.map_mean)
        assert row.map_ci_low <= row.map_mean <= row.map_ci_high


@pytest.mark.slow
def test_the_map_verifiers_trained_beside_it_pair_with_it_seed_by_seed(published):
    versus, rows = _table(published, "vs_maps"), _table(published, "rows")
    beside = _table(published, "maps")
    assert set(beside.verifier_variant) == {"balanced-small-b16", "balanced-small-b0"}
    assert set(beside[beside.budget == 16].variant) == {"F3-frozen", "F4-frozen"} and set(beside.seed) == {7, 8}
    paired = versus[versus.pairing == C.PAIRINGS["paired"]]
    assert set(paired.budget) == {16} and len(paired) == len(C.VERSUS) and (paired.seeds == 2).all()
    for row in paired.itertuples():
        ce = rows[(rows.budget == 16) & (rows.loss == row.loss) & (rows.metric == PAIRWISE_ACCURACY)]
        ce = ce[(ce.dataset == row.dataset) & (ce.family == row.family)].set_index("seed").value
        candidates = beside[(beside.budget == 16) & (beside.metric == PAIRWISE_ACCURACY)]
        candidates = candidates[(candidates.dataset == row.dataset) & (candidates.family == row.family)]
        means = candidates.groupby(candidates.variant + "@" + candidates.verifier_variant).value.mean()
        assert row.map_verifier in set(means[means == means.max()].index)
        best = candidates[candidates.variant + "@" + candidates.verifier_variant == row.map_verifier]
        differences = ce.sort_index() - best.set_index("seed").value.sort_index()
        assert row.difference == pytest.approx(differences.mean()) and row.mean == pytest.approx(ce.mean())
        test = seed_level_test(differences.to_numpy())
        if np.allclose(differences, differences.iloc[0]):  # equal at both seeds: no width
            assert row.difference_ci_low == row.difference_ci_high == pytest.approx(differences.iloc[0])
        else:
            interval = (row.difference_ci_low, row.difference_ci_high)
            assert interval == pytest.approx((test["t_ci_low"], test["t_ci_high"]))
    tested = paired[paired.difference_p.notna()]
    np.testing.assert_allclose(tested.difference_p_holm, holm(tested.difference_p))


@pytest.mark.slow
def test_a_map_learning_rate_given_trains_the_encoder_at_it_in_folders_of_their_own(published, tmp_path):
    work = published["dest"].parent / "work"  # the fixture's: its cross-encoder is loaded, not trained again
    out = tmp_path / "out"
    maps = ["--maps", "F4", "--map-regimes", "end2end", "--map-lr", "0.01"]
    _crossencoder(out, work, "--seeds", "7", "--no-rerank", *maps)
    beside = read_table(out / "results" / f"{C.MAPS}.parquet")
    assert set(beside[beside.budget == 16].verifier_variant) == {"balanced-small-lr0.01-b16"}
    assert set(beside[beside.budget == 16].variant) == {"F4-end2end"}
    record = json.loads((work / "verifiers" / "balanced-small-lr0.01-b16" / "seed7" / "F4-end2end" / "verifier.json")
                        .read_text())  # fmt: skip
    assert record["settings"]["encoder_lr"] == 0.01 and record["settings"]["budget_examples"] == 16
    assert not (work / "verifiers" / "balanced-small-lr0.01-b0").exists()  # the noise line trains nothing


@pytest.mark.slow
def test_maps_only_trains_the_map_verifiers_and_no_cross_encoder(published, tmp_path):
    """--maps-only: the map verifiers at the budget and seed asked, their noise line, and nothing of a
    cross-encoder (no model folder, no results of one: --publish on the folder says it has none)."""
    work = tmp_path / "work"
    _work_dir(work)
    out = tmp_path / "out"
    _crossencoder(out, work, "--seeds", "7", "--maps", "F3", "--map-regimes", "frozen", "--maps-only")
    results = out / "results"
    assert sorted(p.name for p in results.glob("*.parquet")) == [f"{C.MAPS}.parquet"]
    beside = read_table(results / f"{C.MAPS}.parquet")
    assert set(beside[beside.budget == 16].variant) == {"F3-frozen"} and set(beside.seed) == {7}
    assert (beside.budget == 0).any()  # the noise line, as beside a cross-encoder
    assert not list((work / "verifiers").glob("*joint*"))
    with pytest.raises(FileNotFoundError, match="no cross-encoder results to publish"):
        C.publish(out, dest=tmp_path / "dest", maps=MAPS, png=False)
    # the same verifier as beside the fixture's cross-encoder (same rows, budget and seed): equal rows
    fixture = read_table(published["out"] / "results" / f"{C.MAPS}.parquet")
    key = ["variant", "verifier_variant", "seed", "dataset", "family", "metric"]
    same = beside[beside.variant == "F3-frozen"].merge(fixture, on=key, suffixes=("", "_beside"))
    assert len(same) and np.allclose(same.value, same.value_beside)
    # --map-sizes narrows the sizes (smoke trains `small` only): the authors' size alone, nothing of ours
    paper = tmp_path / "paper"
    _crossencoder(paper, work, "--seeds", "7", "--maps", "F4", "--map-regimes", "frozen", "--map-sizes", "paper",
                  "--maps-only")  # fmt: skip
    trained = read_table(paper / "results" / f"{C.MAPS}.parquet")
    assert set(trained[trained.budget == 16].verifier_variant) == {"balanced-paper-b16"}, set(trained.verifier_variant)


def test_paired_versus_picks_the_strongest_map_per_set_and_tests_the_seed_differences():
    model = dict(backbone="b", profile="p", train_data="balanced_pairs", size="joint-bce", loss="bce")
    model.update(precision="fp32", budget=8192)
    rows = pd.DataFrame(
        [{**model, "seed": s, "dataset": C.HELDOUT, "family": "binding", "metric": PAIRWISE_ACCURACY, "value": v}
         for s, v in zip((42, 43, 44), (0.2, 0.3, 0.1))]
    )  # fmt: skip

    def maps(variant, folder, budget, values):
        return [
            {"train_data": "balanced_pairs", "budget": budget, "variant": variant, "verifier_variant": folder,
             "seed": s, "dataset": C.HELDOUT, "family": "binding", "metric": PAIRWISE_ACCURACY, "value": v,
             "examples_seen": budget}
            for s, v in zip((42, 43, 44), values)
        ]  # fmt: skip

    beside = pd.DataFrame(
        maps("F3-frozen", "balanced_pairs-small-b8192", 8192, (0.5, 0.6, 0.4))
        + maps("F4-end2end", "balanced_pairs-small-b8192", 8192, (0.4, 0.4, 0.4))
        + maps("F3-frozen", "balanced_pairs-small-b2048", 2048, (0.9, 0.9, 0.9))  # another budget: never paired
        + maps("F1-frozen+noise1x", "balanced_pairs-small-b0", 8192, (0.95, 0.95, 0.95))  # not a map verifier
        + maps("F3-end2end", "balanced_pairs-small-lr0.0001-b8192", 8192, (0.99,))  # one seed of three: never paired
    )
    out = C.paired_versus(rows, beside)
    assert len(out) == 1
    row = out.iloc[0]
    assert row.map_verifier == "F3-frozen@balanced_pairs-small-b8192" and row.map_mean == pytest.approx(0.5)
    test = seed_level_test(np.array([0.2, 0.3, 0.1]) - np.array([0.5, 0.6, 0.4]))
    assert row.difference == pytest.approx(-0.3) and row.difference_p == pytest.approx(test["t_p"], nan_ok=True)
    assert row.pairing == C.PAIRINGS["paired"] and row.seeds == 3
    assert row.difference_p_holm == pytest.approx(row.difference_p, nan_ok=True)  # equal differences: no p
    # differences equal at every seed: an interval of no width, no p
    same = C.paired_versus(rows.assign(value=[0.6, 0.7, 0.5]), beside).iloc[0]
    assert same.difference_ci_low == same.difference_ci_high == pytest.approx(0.1) and np.isnan(same.difference_p)
    assert np.isnan(same.difference_p_holm)
    # a model with no maps on its rows at its budget is left to the unpaired comparison
    assert C.paired_versus(rows.assign(budget=512), beside).empty and C.paired_versus(rows, None).empty


def test_paired_points_average_seeds_and_keep_a_folders_own_rate_apart():
    rows = []
    for folder, values in (("balanced_pairs-small-b8192", (0.2, 0.4)), ("balanced_pairs-small-lr0.0001-b8192", (0.9,))):
        for seed, v in zip((42, 43), values):
            for family, metric in C.CHECKS.values():
                rows.append(
                    {"variant": "F3-end2end", "verifier_variant": folder, "train_data": "balanced_pairs",
                     "size": "small", "budget": 8192, "dataset": C.HELDOUT, "family": family, "metric": metric,
                     "value": v, "seed": seed}
                )  # fmt: skip
    points = C.paired_points(pd.DataFrame(rows)).set_index("size")
    assert set(points.index) == {"small, 8,192 triplets", "small-lr0.0001, 8,192 triplets"}
    assert points.loc["small, 8,192 triplets", "auc"] == pytest.approx(0.3)
    assert points.loc["small, 8,192 triplets", "seed"] == "mean of 2"
    assert points.loc["small-lr0.0001, 8,192 triplets", "auc"] == pytest.approx(0.9)
    assert C.paired_points(None).empty


def test_each_cross_encoder_model_gets_a_number_and_a_legend_entry_and_maps_beside_it_a_ring():
    def point(scorer, regime, train_data, size, seed, self_match, auc, **extra):
        return {"scorer": scorer, "regime": regime, "train_data": train_data, "size": size, "seed": seed,
                C.SELF_MATCH: self_match, C.AUC: auc, "copy_vs_near_miss": 0.5, **extra}  # fmt: skip

    points = pd.DataFrame(
        [
            point("CE", "end2end", "balanced_pairs", "joint-bce, 8,192 triplets", "42", 0.8, 0.7),
            point("CE", "end2end", "balanced_pairs", "joint-bce, 8,192 triplets", "43", 0.9, 0.9),
            point("CE", "end2end", "model_b", "joint-bce, 2,048 triplets", "42", 0.5, 0.4),
            point("F3", "end2end", "balanced_pairs", "small, 8,192 triplets", "mean of 2", 0.95, 0.5, beside_ce=True),
            point("F4", "frozen", "model_b", "small, 2,048 triplets", "mean of 3", 0.9, 0.2, beside_ce=False),
        ]
    )
    models = C.ce_models(points).set_index("number")
    assert list(models.index) == [1, 2]  # ordered by near-miss AUC
    assert models.loc[2, "label"] == "balanced_pairs, bce, 8,192 (2 seeds)"
    assert models.loc[2, C.AUC] == pytest.approx(0.8) and models.loc[2, C.SELF_MATCH] == pytest.approx(0.85)
    assert models.loc[1, "label"] == "model_b, bce, 2,048"
    fig = C.crossencoder_figure(points)
    names = [t.name for t in fig.data]
    assert "1: CE on model_b, bce, 2,048" in names and "2: CE on balanced_pairs, bce, 8,192 (2 seeds)" in names
    ring = next(t for t in fig.data if t.name.startswith("ring"))
    assert list(ring.x) == [0.95] and list(ring.y) == [0.5]  # only the map verifier trained beside the CE
    assert not any(t.name.startswith("ring") for t in C.crossencoder_figure(points.drop(columns="beside_ce")).data)
    assert C.ce_models(points[points.scorer != "CE"]).empty


def test_map_rows_keep_an_earlier_publications_verifiers_this_run_did_not_train(tmp_path):
    key = dict(backbone="b", profile="p", train_data="balanced_pairs", size="small", dataset=C.HELDOUT)
    key.update(family="all", metric=PAIRWISE_ACCURACY)
    earlier = pd.DataFrame(
        [{**key, "budget": 8192, "verifier_variant": "balanced_pairs-small-b8192", "variant": v, "seed": 42,
          "value": 0.1} for v in ("F3-frozen", "F4-frozen")]
    )  # fmt: skip
    new = earlier.iloc[:1].assign(value=0.7)
    new.to_parquet(tmp_path / f"{C.MAPS}.parquet")
    kept = C.map_rows(tmp_path, earlier).set_index("variant").value
    assert kept.to_dict() == {"F3-frozen": 0.7, "F4-frozen": 0.1}
    assert C.map_rows(tmp_path / "none", None) is None


@pytest.mark.slow
def test_the_rerank_table_is_notebook_05s_with_ms_per_query(published):
    rerank = _table(published, "rerank").set_index("variant")
    CE = "CE-end2end@balanced-joint-head0.001-b16"  # a cross-encoder's label names its folder, always
    results = read_table(published["out"] / "results" / "crossencoder_rerank.parquet")
    cost = read_table(published["out"] / "results" / "crossencoder_rerank_cost.parquet").set_index("variant")
    assert {"ndcg@10", "mean_delta", "ci_low", "ci_high", "p_value", "p_holm", "n_seeds", "precision"} <= set(rerank)
    assert {"first_stage_ms", "rerank_ms", "ms_per_query"} <= set(rerank)
    ce = results[(results.variant == CE) & (results.metric == "ndcg@10") & (results.k == 5)]
    assert rerank.loc[CE, "ndcg@10"] == pytest.approx(ce.value.mean())
    base = results[(results.variant == "base") & (results.metric == "ndcg@10")].value.mean()
    assert rerank.loc[CE, "mean_delta"] == pytest.approx(ce.value.mean() - base)
    assert rerank.loc[CE, "n_seeds"] == 2 and rerank.loc[CE, "precision"] == "fp32"
    assert rerank.loc[CE, "ci_low"] <= rerank.loc[CE, "mean_delta"] <= rerank.loc[CE, "ci_high"]
    ms = cost.loc[CE]
    assert rerank.loc[CE, "ms_per_query"] == pytest.approx(ms.first_stage_ms + ms.rerank_ms)
    assert rerank.loc["base", "ms_per_query"] == pytest.approx(cost.loc["base", "first_stage_ms"])
    assert np.isnan(rerank.loc["base", "mean_delta"])


@pytest.mark.slow
def test_the_record_has_each_models_run_the_command_and_the_time(published):
    record = json.loads((published["dest"] / "tables" / C.TABLES["record"]).read_text())
    assert record["command"] == COMMAND and pd.Timestamp(record["published_at"]).tzinfo is not None
    runs = read_csv(published["out"] / "results" / "crossencoder_runs.csv")
    models = pd.DataFrame(record["models"])
    assert len(models) == len(runs) == 3 and "folder" not in models
    for field in ("commit", "seed", "train_data", "loss", "precision", "budget", "steps", "train_seconds"):
        assert sorted(models[field].tolist()) == sorted(runs[field].tolist()), field


@pytest.mark.slow
def test_the_figure_puts_each_model_beside_the_map_verifiers_and_the_noise_line(published):
    points = pd.concat([C.map_points(read_csv(MAPS / "all_verifiers.csv")), C.model_points(published["source"])])
    fig = C.crossencoder_figure(points)
    names = {t.name for t in fig.data}
    assert {"CE, end2end", "F4, frozen", "noise control: frozen MaxSim + noise"} <= names
    ce = next(t for t in fig.data if t.name == "CE, end2end")
    assert len(ce.x) == 3  # cmnrl seeds 7, 8 and bce seed 7: one point each
    rows = _table(published, "rows")
    heldout = rows[(rows.dataset == "negatives-heldout") & (rows.metric == "auc")]
    assert sorted(ce.y) == pytest.approx(sorted(heldout[heldout.family == "all"].value))  # near-miss AUC
    assert sorted(ce.x) == pytest.approx(sorted(heldout[heldout.family == "self_match"].value))  # self-match AUC
    html = (published["dest"] / f"{C.FIGURE}.html").read_text()
    assert "CE, end2end" in html and "noise control" in html and 'src="plotly.min.js"' in html


@pytest.mark.slow
def test_a_later_publication_keeps_the_earlier_models_it_did_not_make(published, tmp_path):
    """A second run's folder holds only its own model (the first run's results are on another machine):
    publishing it beside the first publication keeps the first's models in every table and the record."""
    import shutil

    dest = tmp_path / "dest"
    shutil.copytree(published["dest"], dest)
    before = {name: _table({"dest": dest}, name) for name in ("rows", "rerank")}
    later, work = tmp_path / "later", tmp_path / "work"
    _work_dir(work)
    _crossencoder(later, work, "--seeds", "7", "--loss", "bce", "--head-lr", "same", "--ks", "5", "--cost-queries", "2")
    C.publish(later, dest=dest, maps=MAPS, command=COMMAND, png=False)
    rows, rerank = _table({"dest": dest}, "rows"), _table({"dest": dest}, "rerank")
    sizes = set(before["rows"]["size"])
    assert set(rows["size"]) == sizes | {"joint-bce"} and len(rows) > len(before["rows"])
    kept = rows[rows["size"].isin(sizes)].reset_index(drop=True)
    pd.testing.assert_frame_equal(kept[before["rows"].columns], before["rows"], check_dtype=False)
    summary = _table({"dest": dest}, "summary")
    assert set(summary["size"]) == sizes | {"joint-bce"}  # a model per size: the one-rate run stands apart
    new = "CE-end2end@balanced-joint-bce-b16"
    assert new in set(rerank.variant) and set(before["rerank"].variant) <= set(rerank.variant)
    assert rerank.published_at.notna().all() and rerank.variant.is_unique
    record = json.loads((dest / "tables" / C.TABLES["record"]).read_text())
    folders = {m["verifier_variant"] for m in record["models"]}
    assert "balanced-joint-bce-b16" in folders and len(folders) == 3


def test_map_points_are_the_committed_means_and_carry_the_noise_control():
    table = read_csv(MAPS / "all_verifiers.csv")
    points = C.map_points(table)
    assert not points.scorer.str.startswith("cosine").any()
    assert {"F0", "F1", "F2", "F3", "F4"} <= set(points.scorer)
    assert points.scorer.map(parse_noise_name).notna().sum() >= 3
    f4 = points[(points.scorer == "F4") & (points.train_data == "balanced") & points["size"].str.startswith("paper")]
    source = table[(table.variant == "F4-frozen") & (table.verifier_variant == "balanced-paper")]
    source = source[source.dataset == "negatives-heldout"].set_index(["family", "metric"])["mean"]
    assert f4.auc.item() == pytest.approx(source[("all", "auc")])
    assert f4.self_match.item() == pytest.approx(source[("self_match", "auc")])
    assert f4["size"].item() == "paper, 2,048 triplets" and f4.seed.item() == "mean of 3"


def test_curve_points_are_the_budget_curves_verifiers_at_the_cross_encoders_budget():
    curve = read_csv(MAPS / "verifier_budget.csv")
    points = C.curve_points(curve, {8192})
    assert len(points) and points["size"].str.endswith("8,192 triplets").all()
    assert set(zip(points.scorer, points.regime)) >= {("F4", "frozen"), ("F4", "end2end")}
    # each kind of training rows is a point of its own (model_b's and, since 2026-12-07, balanced's end to end)
    assert {"model_b", "balanced"} <= set(points.train_data[points.regime == "end2end"])
    mine = (points.scorer == "F4") & (points.regime == "end2end") & (points.train_data == "model_b")
    e2e = points[mine & points["size"].str.startswith("small")]
    curve = with_train_data(curve)
    source = curve[(curve.scorer == "F4") & (curve.regime == "end2end") & (curve["size"] == "small")]
    source = source[source.train_data == "model_b"]
    source = source[source.budget == 8192].set_index("metric")
    assert e2e.auc.item() == source.loc["auc", "mean"] and e2e.seed.item() == f"mean of {source.loc['auc', 'seeds']}"
    assert C.curve_points(curve, {16}).empty and C.curve_points(None, {8192}).empty


def test_a_missing_results_folder_is_one_line_naming_it_and_its_command(tmp_path, capsys):
    with pytest.raises(FileNotFoundError, match="no such folder") as err:
        C.publish(tmp_path / "none", dest=tmp_path / "dest")
    assert str(tmp_path / "none" / "results") in str(err.value) and "compsense crossencoder --out" in str(err.value)
    assert not (tmp_path / "dest").exists()
    assert cli(["crossencoder", "--publish", "--out", str(tmp_path / "none")]) == 2
    line = capsys.readouterr().err.strip()
    assert len(line.splitlines()) == 1 and line.startswith("compsense crossencoder: FileNotFoundError:"), line
    assert str(tmp_path / "none" / "results") in line and f"crossencoder --out {tmp_path / 'none'}" in line
    (tmp_path / "half" / "results").mkdir(parents=True)
    with pytest.raises(FileNotFoundError, match="no crossencoder.parquet or crossencoder_runs.parquet"):
        C.publish(tmp_path / "half", dest=tmp_path / "dest")


@pytest.mark.slow
def test_the_command_line_publishes_and_names_each_file(published, tmp_path, monkeypatch, capsys):
    real = C.publish
    monkeypatch.setattr(C, "publish", lambda out, dest=None, **k: real(out, dest=tmp_path, maps=MAPS, png=False, **k))
    assert cli(["crossencoder", "--publish", "--out", str(published["out"])]) == 0
    out = capsys.readouterr().out
    assert f"wrote {tmp_path / 'tables' / C.TABLES['summary']}" in out
    record = json.loads((tmp_path / "tables" / C.TABLES["record"]).read_text())
    assert record["command"] == f"python -m compsense crossencoder --publish --out {published['out']}"
    assert (tmp_path / "tables" / C.TABLES["rows"]).read_bytes() == (
        published["dest"] / "tables" / C.TABLES["rows"]
    ).read_bytes()


def test_the_publisher_reads_the_files_joint_writes():
    from compsense.verifiers import joint as J

    assert (C.RESULTS, C.RUNS) == (J.RESULTS, J.RUNS)
    assert C.RERANK_FILES == joint_cli.RERANK_FILES and C.RERANK_FILES[0] == f"{J.RESULTS}_rerank"
