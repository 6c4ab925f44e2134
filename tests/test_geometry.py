"""compsense.nearmiss.geometry: histograms over [-1, 1], hand-computed family numbers, pairing, tidy tables.
The metrics themselves are tested in test_nearmiss_metrics.py."""

import numpy as np
import pandas as pd
import pytest

from compsense.core.encoders import Encoding
from compsense.core.layout import results_file
from compsense.core.storage import TIDY_COLUMNS, read_table
from compsense.data.datasets import CaptionNearMiss, SentencePair
from compsense.nearmiss import geometry as g
from compsense.nearmiss.metrics import AUC, PAIRWISE_ACCURACY, near_miss_auc

SENTENCES = [
    "The committee approved the budget on Monday.",
    "Shares of the company rose sharply after the report.",
    "The dog chased the cat across the yard.",
    "She placed the book on top of the table.",
    "The senator voted for the new tax bill.",
    "Officials said the bridge will reopen next week.",
]
PARAPHRASES = [
    "On Monday the committee passed the budget.",
    "The company's stock climbed steeply following the report.",
    "Across the yard, the dog ran after the cat.",
    "She put the book on the table.",
    "The new tax bill got the senator's vote.",
    "The bridge will be open again next week, officials said.",
]
NEAR_MISSES = [
    ("The committee did not approve the budget on Monday.", "negation"),
    ("Shares of the company did not rise sharply after the report.", "negation"),
    ("The cat chased the dog across the yard.", "binding"),
    ("She placed the book under the table.", "spatial"),
    ("The senator voted against the new tax bill.", "negation"),
    ("Officials said the bridge will close next week.", "negation"),
]


def positives_frame() -> pd.DataFrame:
    return pd.DataFrame(
        {
            "sentence1": SENTENCES,
            "sentence2": PARAPHRASES,
            "id1": [f"a{i}" for i in range(6)],
            "id2": [f"b{i}" for i in range(6)],
            "source": "mrpc",
        }
    )


def pairs_frame(split="test") -> pd.DataFrame:
    return pd.DataFrame(
        {
            "sentence1": SENTENCES,
            "sentence2": [n for n, _ in NEAR_MISSES],
            "family": [f for _, f in NEAR_MISSES],
            "edit": "hand-written",
            "source_id": [f"a{i}" for i in range(6)],
            "split": split,
        }
    )


def write_pairs(work_dir, df):
    path = work_dir / "negatives" / "pairs.parquet"
    path.parent.mkdir(parents=True, exist_ok=True)
    df.to_parquet(path, index=False)
    return path


# ---------------------------------------------------------------------------------------------
# histogram


def test_histogram_keeps_negative_cosines():
    scores = [-1.0, -0.9, -0.5, -0.01, 0.0, 0.3, 1.0, 1.0000001]
    counts, edges = g.histogram(scores, bins=4)
    assert edges[0] == -1 and edges[-1] == 1
    assert counts.sum() == len(scores)  # [0, 1] bins would have dropped the four negatives
    assert counts.tolist() == [2, 2, 2, 2]  # [-1,-.5) [-.5,0) [0,.5) [.5,1]: 1.0000001 is clipped in


def test_histogram_density_integrates_to_one():
    density, edges = g.histogram(np.linspace(-0.99, 0.99, 101), bins=20, density=True)
    assert np.sum(density * np.diff(edges)) == pytest.approx(1.0)


@pytest.mark.parametrize(
    "scores, bins, message",
    [
        ([0.2, np.nan], 10, "NaN"),
        ([0.2, 1.5], 10, "not cosines"),
        ([-0.5, 0.5], [0.0, 0.5, 1.0], "cover"),
    ],
)
def test_histogram_refuses_what_it_would_drop(scores, bins, message):
    with pytest.raises(ValueError, match=message):
        g.histogram(scores, bins=bins)


# ---------------------------------------------------------------------------------------------
# numbers, computed by hand


def test_family_metrics_by_hand():
    m = g.family_metrics(
        positive=np.array([0.9, 0.7]),
        near_miss=np.array([0.6, 0.4]),
        random=np.array([0.1, 0.3]),
        paraphrase_of_anchor=np.array([0.65, np.nan]),
    )
    assert m["n_pairs"] == 2
    assert m["near_miss_cos_mean"] == pytest.approx(0.5)
    assert m["gap_to_positive"] == pytest.approx(0.3)  # 0.8 - 0.5
    assert m["random_cos_mean"] == pytest.approx(0.2)  # the anisotropy baseline
    assert m["relative_position"] == pytest.approx(0.5)  # (0.5 - 0.2) / (0.8 - 0.2)
    assert m[AUC] == pytest.approx(1.0)
    assert m["n_matched"] == 1
    assert m[PAIRWISE_ACCURACY] == pytest.approx(1.0)  # 0.65 > 0.6
    assert m["matched_gap"] == pytest.approx(0.05)


def test_pairwise_accuracy_counts_a_tie_half_as_notebook_04_does():
    m = g.family_metrics(np.array([0.9]), np.array([0.6, 0.2]), paraphrase_of_anchor=np.array([0.6, 0.5]))
    assert m[PAIRWISE_ACCURACY] == pytest.approx((0.5 + 1) / 2)  # 0.6 ties 0.6, 0.5 beats 0.2
    assert "random_cos_mean" not in m


def test_no_matched_anchor_reports_zero_and_no_accuracy():
    m = g.family_metrics(np.array([0.9]), np.array([0.6]), paraphrase_of_anchor=np.array([np.nan]))
    assert m["n_matched"] == 0 and PAIRWISE_ACCURACY not in m


# ---------------------------------------------------------------------------------------------
# pair frames


def test_attach_paraphrases_finds_the_original_on_either_side():
    nm = pairs_frame()
    nm.loc[2, ["sentence1", "sentence2"]] = [NEAR_MISSES[2][0], SENTENCES[2]]  # original in sentence2
    nm.loc[5, ["sentence1", "source_id"]] = ["A sentence MRPC never saw.", "user-17"]
    out = g.attach_paraphrases(nm, positives_frame())
    assert out.loc[2, "anchor"] == SENTENCES[2] and out.loc[2, "near_miss"] == NEAR_MISSES[2][0]
    assert out.loc[2, "paraphrase"] == PARAPHRASES[2]
    assert out.loc[0, "paraphrase"] == PARAPHRASES[0]
    assert pd.isna(out.loc[5, "paraphrase"]) and out.loc[5, "anchor"] == "A sentence MRPC never saw."


def test_attach_paraphrases_falls_back_on_the_source_id():
    nm = pairs_frame().iloc[:1].assign(sentence1="The committee  approved the budget on Monday .", source_id="mrpc-a0")
    assert g.attach_paraphrases(nm, positives_frame()).paraphrase.tolist() == [PARAPHRASES[0]]


def test_load_near_misses_names_notebook_01_when_missing(tmp_path):
    with pytest.raises(FileNotFoundError, match="01_data_and_negatives"):
        g.load_near_misses(tmp_path)


def test_load_near_misses_checks_columns(tmp_path):
    write_pairs(tmp_path, pairs_frame().drop(columns=["family"]))
    with pytest.raises(ValueError, match="family"):
        g.load_near_misses(tmp_path)


def test_heldout_split_excludes_training_pairs(tmp_path):
    df = pairs_frame()
    df.loc[:2, "split"] = "train"
    write_pairs(tmp_path, df)
    assert set(g.load_near_misses(tmp_path).split) == {"test"}
    assert len(g.load_near_misses(tmp_path, split=None)) == 6
    with pytest.raises(ValueError, match="found splits"):
        g.load_near_misses(tmp_path, split="dev")


def test_heldout_falls_back_to_all_pairs_with_a_warning(tmp_path):
    write_pairs(tmp_path, pairs_frame(split="train"))
    with pytest.warns(UserWarning, match="Model B"):
        assert len(g.load_near_misses(tmp_path)) == 6


def test_family_filter_and_per_family_sampling(tmp_path):
    write_pairs(tmp_path, pd.concat([pairs_frame()] * 5, ignore_index=True))
    df = g.load_near_misses(tmp_path, max_pairs_per_family=3, seed=1)
    assert df.groupby("family").size().to_dict() == {"binding": 3, "negation": 3, "spatial": 3}
    assert df.equals(g.load_near_misses(tmp_path, max_pairs_per_family=3, seed=1))
    assert set(g.load_near_misses(tmp_path, families=["spatial"]).family) == {"spatial"}
    with pytest.raises(ValueError, match="comparative"):
        g.load_near_misses(tmp_path, families=["comparative"])


def test_positive_pairs_keeps_paraphrases_only():
    pairs = [
        SentencePair("a", "b", 1.0, "1", "2", "mrpc"),
        SentencePair("c", "d", 0.0, "3", "4", "mrpc"),
        SentencePair("e", "f", 4.2, "5", "6", "stsb"),
        SentencePair("g", "h", 3.0, "7", "8", "stsb"),
    ]
    assert g.positive_pairs(pairs).sentence1.tolist() == ["a", "e"]


def test_reference_pairs_are_seeded_and_random_pairs_cross_paraphrase_pairs():
    para = pd.DataFrame({"sentence1": [f"s{i}" for i in range(30)], "sentence2": [f"p{i}" for i in range(30)]})
    refs = g.reference_pairs(para, n=50, seed=3)
    assert refs.kind.value_counts().to_dict() == {"reference_positive": 30, "reference_random": 50}
    random = refs[refs.kind == "reference_random"]
    owner = lambda s: s.str[1:]  # noqa: E731 -- s3 and p3 come from one paraphrase pair
    assert (owner(random.sentence1) != owner(random.sentence2)).all()
    assert refs.equals(g.reference_pairs(para, n=50, seed=3))
    assert not refs.equals(g.reference_pairs(para, n=50, seed=4))


def test_sugarcrepe_caption_pairs_sample_per_subset():
    examples = [
        CaptionNearMiss(f"cap {i}", f"neg {i}", subset, f"{subset}/{i}")
        for subset in ("swap_att", "replace_rel")
        for i in range(5)
    ]
    df = g.sugarcrepe_caption_pairs(examples, per_subset=2, seed=0)
    assert df.groupby("family").size().to_dict() == {"replace_rel": 2, "swap_att": 2}


# ---------------------------------------------------------------------------------------------
# scoring and the tidy table (tiny-bert)


@pytest.fixture(scope="module")
def scored(tiny_encoder):
    refs = g.reference_pairs(positives_frame(), n=8, seed=0)
    sugar = g.sugarcrepe_caption_pairs(
        [
            CaptionNearMiss("a dog on a red mat", "a red dog on a mat", "swap_att", "swap_att/1"),
            CaptionNearMiss("a cat under a chair", "a cat on a chair", "replace_rel", "replace_rel/1"),
        ]
    )
    return g.cosine_scores(
        {"base-seed0": tiny_encoder, "A-seed7": tiny_encoder},
        pairs_frame(),
        positives_frame(),
        references=refs,
        sugarcrepe=sugar,
        backbone="tiny-bert",
        encoding=Encoding(show_progress=False),
    )


def test_score_frame_rows_and_cosines(scored, tiny_encoder):
    assert list(scored.columns) == g.SCORE_COLUMNS
    base = scored[scored.model == "base-seed0"]
    near = base[(base.kind == "near_miss") & (base.dataset == "negatives")]
    assert sorted(near.family.unique()) == ["binding", "negation", "spatial"]
    assert near.paraphrase_cosine.notna().all()  # every anchor here has its paraphrase
    direct = g.pair_cosines(tiny_encoder, list(zip(SENTENCES, [n for n, _ in NEAR_MISSES], strict=True)))
    assert sorted(near.cosine) == pytest.approx(sorted(direct), abs=1e-5)
    assert base[base.dataset == "sugarcrepe"].paraphrase_cosine.isna().all()
    # the same encoder under two keys scores the same; the key's seed lands in the seed column
    a = scored[scored.model == "A-seed7"]
    assert a.cosine.to_numpy() == pytest.approx(base.cosine.to_numpy(), abs=1e-5)
    assert set(a.seed) == {7} and set(a.variant) == {"A"}


def test_a_model_given_by_name_is_loaded_with_the_seed_of_its_key(tiny_encoder):
    args = (pairs_frame().iloc[:2], positives_frame())
    by_name = g.cosine_scores({"base-seed0": "tiny-bert"}, *args, encoding=Encoding(show_progress=False))
    by_object = g.cosine_scores({"base-seed0": tiny_encoder}, *args, encoding=Encoding(show_progress=False))
    assert by_name.cosine.to_numpy() == pytest.approx(by_object.cosine.to_numpy(), abs=1e-5)


def test_separation_metrics_tidy_columns(scored):
    table = g.separation_metrics(scored, profile="test")
    assert list(table.columns[: len(TIDY_COLUMNS)]) == TIDY_COLUMNS
    assert {"family", "model", "profile"} <= set(table.columns)
    assert not table.duplicated(g.TABLE_KEY).any()
    assert set(table.run) == {"tiny-bert/base-seed0", "tiny-bert/A-seed7"}
    auc = table[(table.metric == AUC) & (table.variant == "base")]
    assert set(zip(auc.dataset, auc.family, strict=True)) == {
        ("negatives", "binding"),
        ("negatives", "negation"),
        ("negatives", "spatial"),
        ("negatives", "all"),
        ("sugarcrepe", "swap_att"),
        ("sugarcrepe", "replace_rel"),
    }
    assert auc.value.between(0, 1).all()
    metrics = set(table.metric)
    assert {"positive_cos_mean", "reference_random_cos_mean", PAIRWISE_ACCURACY, "gap_to_positive"} <= metrics


def test_all_pools_the_paper_families_only_and_pairwise_accuracy_has_an_anchor_interval(scored):
    base = scored[scored.model == "base-seed0"]
    extra = base[(base.kind == "near_miss") & (base.family == "negation")].assign(family="numeric", cosine=0.99)
    table = g.separation_metrics(pd.concat([scored, extra], ignore_index=True))
    rows = table[(table.model == "base-seed0") & (table.dataset == "negatives")].set_index(["family", "metric"]).value
    paper = base[(base.kind == "near_miss") & (base.dataset == "negatives")]
    assert rows[("all", "n_pairs")] == len(paper)  # the numeric rows stay out of "all"
    assert rows[("all", AUC)] == pytest.approx(near_miss_auc(base[base.kind == "positive"].cosine, paper.cosine))
    assert ("numeric", AUC) in rows.index
    low, high = rows[("all", f"{PAIRWISE_ACCURACY}_ci_low")], rows[("all", f"{PAIRWISE_ACCURACY}_ci_high")]
    assert low <= rows[("all", PAIRWISE_ACCURACY)] <= high


def test_the_table_s_auc_is_the_metric_on_the_score_frame(scored):
    base = scored[scored.model == "base-seed0"]
    positive = base[base.kind == "positive"].cosine
    negation = base[(base.kind == "near_miss") & (base.family == "negation")].cosine
    table = g.separation_metrics(scored)
    stored = table[(table.model == "base-seed0") & (table.family == "negation") & (table.metric == AUC)].value
    assert stored.item() == pytest.approx(near_miss_auc(positive, negation))


def test_write_geometry_keeps_families_apart_and_replaces_reruns(scored, tmp_path):
    table = g.separation_metrics(scored)
    paths = g.write_geometry(table, scored, tmp_path)
    again = g.write_geometry(table.assign(value=table.value + 1), scored, tmp_path)
    stored = read_table(again["table"])
    assert len(stored) == len(table)  # same keys: replaced, and no family collapsed into another
    assert stored.value.to_numpy() == pytest.approx(table.value.to_numpy() + 1)
    assert len(read_table(paths["scores"])) == len(scored)


def test_geometry_summary_is_wide_by_metric_and_variant(scored):
    wide = g.geometry_summary(g.separation_metrics(scored), metrics=(AUC, "near_miss_cos_mean"))
    assert list(wide.columns) == [
        (AUC, "base"),
        (AUC, "A"),
        ("near_miss_cos_mean", "base"),
        ("near_miss_cos_mean", "A"),
    ]
    assert len(wide) == 6  # five families and "all" (the paper's three pooled)
    default = g.geometry_summary(g.separation_metrics(scored))
    assert list(dict.fromkeys(m for m, _ in default.columns))[:2] == [AUC, PAIRWISE_ACCURACY]
    with pytest.raises(ValueError, match="found"):
        g.geometry_summary(g.separation_metrics(scored), metrics=("separation_auc",))


def test_reference_summary_orders_variants(scored):
    wide = g.reference_summary(g.separation_metrics(scored))
    assert list(wide.columns) == ["base", "A"]
    assert ("tiny-bert", "reference", "reference_random_cos_mean") in wide.index


# ---------------------------------------------------------------------------------------------
# figures read the frames


def test_near_miss_figure_facets_and_reference_menu(scored):
    from compsense.figures.geometry import near_miss_figure

    fig = near_miss_figure(scored)
    titles = [a.text for a in fig.layout.annotations]
    assert [t.split(" ")[0] for t in titles] == ["negation", "binding", "spatial"]
    assert fig.layout.xaxis.range == (-1, 1)
    assert len(fig.layout.updatemenus[0].buttons) == 2  # references of Base / Model A
    shaded = [t for t in fig.data if t.fill == "tozeroy"]
    assert shaded and all(t.visible is True or t.visible is False for t in shaded)
    # each curve scaled to its own peak (a common density axis flattened the references); the
    # densities themselves stay in the hover
    assert all(max(t.y) == pytest.approx(1.0) for t in fig.data) and fig.layout.yaxis.range == (0, 1.05)
    raw = near_miss_figure(scored, scale="density")
    assert [list(t.y) for t in raw.data] == [list(t.customdata) for t in fig.data]
    with pytest.raises(ValueError, match="scale='log'"):
        near_miss_figure(scored, scale="log")
    # it takes the width of the window (a fixed 1,200 px was cut off in JupyterLab); its PNG is drawn wide
    assert fig.layout.width is None and fig.layout.autosize and fig.layout.meta["export_width"] == 900


def test_separation_auc_figure_groups_bars_by_variant(scored):
    from compsense.figures.geometry import separation_auc_figure

    fig = separation_auc_figure(g.separation_metrics(scored), metric=AUC)
    bars = [t for t in fig.data if t.type == "bar"]
    assert [b.name for b in bars] == ["Base", "Model A", "Base", "Model A"]  # negatives, then SugarCrepe
    assert list(bars[0].x) == ["negation", "binding", "spatial", "all"]  # "all": the three pooled
    assert fig.layout.width is None and fig.layout.meta["export_width"] >= 560


def test_pooled_nearmiss_auc_per_family_with_intervals_and_cache(tmp_path, monkeypatch):
    near = pd.DataFrame(
        {
            "sentence1": ["the cat sat on the mat", "the dog ran left", "prices rose today", "a red cup"],
            "sentence2": ["the cat did not sit on the mat", "the dog ran right", "prices fell today", "a blue cup"],
            "family": ["negation", "spatial", "negation", "binding"],
        }
    )
    para = pd.DataFrame(
        {
            "sentence1": ["the cat sat on the mat", "a red cup", "the dog ran left"],
            "sentence2": ["a cat was sitting on the mat", "one red cup", "the dog went to the left"],
        }
    )
    runs = pd.DataFrame(
        [
            {
                "backbone": "tiny-bert",
                "variant": "base",
                "seed": 42,
                "model": "tiny-bert",
                "model_stamp": "pretrained",
                "structural_share": None,
            }
        ]
    )
    loads = []
    real = g.load_encoder  # patched where geometry looks it up
    monkeypatch.setattr(g, "load_encoder", lambda *a, **k: loads.append(a) or real(*a, **k))
    table = g.pooled_nearmiss_auc(runs, near, para, tmp_path)
    assert set(table.family) == {"all", "negation", "spatial", "binding"} and len(loads) == 1
    assert set(table.metric) == {AUC}
    has_ci = table[table.family.isin(["all", "negation"])]
    assert (has_ci.ci_low <= has_ci.value).all() and (has_ci.value <= has_ci.ci_high).all()
    assert table[table.family == "spatial"].ci_low.isna().all()  # one pair: no interval, said as NaN
    assert table.n_near_miss.iloc[0] == 4 and table.run.iloc[0] == "tiny-bert/base-seed42"
    again = g.pooled_nearmiss_auc(runs, near, para, tmp_path)  # cached: not encoded again
    assert len(loads) == 1 and again.value.tolist() == table.value.tolist()
    # other pairs of the same number and family mix: scored again, never the cached numbers
    swapped = near.assign(sentence2=["the cat sat under the mat", "the dog ran up", "prices held today", "a red mug"])
    fresh = g.pooled_nearmiss_auc(runs, swapped, para, tmp_path)
    assert len(loads) == 2 and fresh.pairs_sha1.nunique() == 1 and fresh.pairs_sha1.iloc[0] != table.pairs_sha1.iloc[0]
    assert len(g.read_table(results_file(tmp_path, g.NEARMISS_TABLE))) == len(table)  # replaced, not added beside
    with pytest.raises(ValueError, match="near-miss pairs"):
        g.pooled_nearmiss_auc(runs, near.iloc[0:0], para, tmp_path)
