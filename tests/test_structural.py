"""Notebook 01's data flow (compsense.data.structural): sources -> split-fixed near-miss pairs -> files,
and the figures it draws (compsense.figures.negatives). Sentences written for this test."""

from pathlib import Path

import pandas as pd
import pytest

from compsense.core import layout
from compsense.data.negatives import edit_distance_table
from compsense.data.negatives.pairs import source_id_of
from compsense.data.structural import (
    build_pairs,
    caption_sentences,
    corpus_of,
    counts_table,
    family_purity,
    heldout_paraphrase_pairs,
    mrpc_sentences,
    read_outputs,
    stsb_heldout_sentences,
    stsb_sentences,
    user_sentences,
    write_outputs,
)

SMOKE = Path(__file__).resolve().parents[1] / "data" / "smoke"
SHARED = "The gardener thanked the plumber."
TRAIN = [
    "A lamp hangs above the kitchen table.",
    "A cable runs below the wooden floor.",
    "The kettle boils on the stove.",
    "The printer does not print in colour.",
    SHARED,
]
TEST = [
    "A shelf sits above the narrow bed.",
    "A tunnel passes below the river.",
    "The tram stops at the square.",
    "The shop does not open on Sundays.",
    SHARED,
    "The painter called the tailor.",
]


def _sources(sentences):
    return [(source_id_of(s), s) for s in sentences]


@pytest.fixture(scope="module")
def built():
    return build_pairs(_sources(TRAIN), _sources(TEST), seed=0)


def test_split_is_fixed_by_where_a_source_came_from(built):
    pairs, _ = built
    assert set(pairs.loc[pairs.split == "train", "sentence1"]) <= set(TRAIN) - {SHARED}
    assert set(pairs.loc[pairs.split == "test", "sentence1"]) <= set(TEST)
    assert pairs.groupby("source_id").split.nunique().max() == 1  # a source and its near-misses: one side


def test_a_sentence_on_both_sides_is_tested_never_trained_and_counted(built, caplog):
    pairs, stats = built
    assert stats["dropped_train_sources_also_in_test"] == 1 and stats["train_sources"] == len(TRAIN) - 1
    assert set(pairs.loc[pairs.sentence1 == SHARED, "split"]) == {"test"}  # its role swap is a test pair
    assert stats["pairs"] == len(pairs)
    for split in ("train", "test"):
        assert stats[f"{split}_sources_with_near_miss"] == pairs.loc[pairs.split == split, "source_id"].nunique()
    with caplog.at_level("WARNING"):
        build_pairs(_sources(TRAIN), _sources(TEST), seed=0)
    assert "kept them on the test side only" in caplog.text


def test_counts_table_counts_pairs_and_sources_per_family_and_split(built):
    pairs, _ = built
    counts = counts_table(pairs).set_index(["family", "split"])
    assert counts.pairs.sum() == len(pairs)
    for (family, split), row in counts.iterrows():
        chosen = pairs[(pairs.family == family) & (pairs.split == split)]
        assert (row.pairs, row.sources) == (len(chosen), chosen.source_id.nunique())


def test_no_sources_give_an_empty_table_with_the_pair_columns():
    pairs, stats = build_pairs([], [], seed=0)
    assert pairs.empty and {"sentence1", "sentence2", "family", "source_id"} <= set(pairs.columns)
    assert stats["pairs"] == 0


def test_outputs_round_trip_through_the_run_folder_layout(built, tmp_path):
    pairs, _ = built
    written = write_outputs(pairs, tmp_path)
    assert written["pairs"] == layout.pairs_file(tmp_path) and written["triplets"] == layout.triplets_file(tmp_path)
    back, triplets = read_outputs(tmp_path)
    pd.testing.assert_frame_equal(back.reset_index(drop=True), pairs.reset_index(drop=True), check_dtype=False)
    assert (triplets.anchor == triplets.positive).all()  # Model B's identity triplets
    assert triplets.negative.tolist() == pairs.sentence2.tolist()


def test_user_sentences_get_content_ids(tmp_path):
    path = tmp_path / "mine.txt"
    path.write_text("The ferry leaves before noon.\n\nA bench stands near the fountain.\n")
    assert user_sentences(path) == _sources(["The ferry leaves before noon.", "A bench stands near the fountain."])


def test_mrpc_sentences_are_distinct_traceable_and_a_seeded_sample():
    every = mrpc_sentences("train", SMOKE)
    texts = [text for _, text in every]
    assert len(texts) == len(set(texts)) and all(sid.startswith("mrpc-") for sid, _ in every)
    sample = mrpc_sentences("train", SMOKE, limit=5, seed=1)
    assert len(sample) == 5 and set(sample) <= set(every)
    assert sample == mrpc_sentences("train", SMOKE, limit=5, seed=1)
    assert sample != mrpc_sentences("train", SMOKE, limit=5, seed=2)
    assert mrpc_sentences("train", SMOKE, limit=10**6) == every


def test_notebook_01_figures_draw_the_tables_they_are_given(built):
    from compsense.figures.negatives import artefact_figure, edit_distance_figure, yield_figure

    yields = pd.DataFrame(
        {"family": ["negation", "spatial"], "yield": [0.5, 0.25], "n_with_near_miss": [2, 1], "n_sentences": [4, 4]}
    )
    fig = yield_figure(yields)
    assert list(fig.data[0].x) == ["negation", "spatial"] and list(fig.data[0].text) == ["50%", "25%"]
    aucs = pd.DataFrame({"family": ["negation", "negation"], "auc": [0.55, 0.6], "source": ["ours", "sugarcrepe"]})
    fig = artefact_figure(aucs, target=0.65)
    assert len(fig.data) == 2 and {s.y0 for s in fig.layout.shapes} == {0.65, 0.5}
    pairs, _ = built
    fig = edit_distance_figure(edit_distance_table(pairs))
    assert {trace.name for trace in fig.data} == set(pairs.family)  # one histogram per family


def test_stsb_sentences_are_distinct_traceable_and_the_heldout_side_is_test_and_dev():
    train = stsb_sentences("train", SMOKE)
    assert len({t for _, t in train}) == len(train) and all(sid.startswith("stsb-") for sid, _ in train)
    heldout = stsb_heldout_sentences(SMOKE)
    assert heldout == stsb_sentences("test", SMOKE) + stsb_sentences("dev", SMOKE)
    assert not {t for _, t in train} & {t for _, t in heldout} - {t for _, t in stsb_sentences("train", SMOKE)}
    assert len(stsb_heldout_sentences(SMOKE, limit=3, seed=0)) == 6


def test_heldout_paraphrase_pairs_come_from_the_splits_nothing_trains_on():
    from compsense.data.datasets import load_mrpc, load_stsb

    pairs = heldout_paraphrase_pairs("test", SMOKE)
    expected = load_mrpc("test", data_dir=SMOKE) + load_stsb("test", data_dir=SMOKE) + load_stsb("dev", data_dir=SMOKE)
    assert [(p.sentence1, p.sentence2) for p in pairs] == [(p.sentence1, p.sentence2) for p in expected]
    train = heldout_paraphrase_pairs("train", SMOKE)
    assert len(train) == len(load_mrpc("train", data_dir=SMOKE)) + len(load_stsb("train", data_dir=SMOKE))


def test_corpus_of_names_each_source_ids_corpus():
    ids = pd.Series(["mrpc-12", "stsb-ab12", "coco-cd34", source_id_of("My own sentence.")])
    assert corpus_of(ids).tolist() == ["mrpc", "stsb", "coco", "user"]


def test_caption_sentences_are_sugarcrepes_distinct_originals_never_its_negatives():
    from compsense.data.datasets import load_sugarcrepe

    examples = load_sugarcrepe(data_dir=SMOKE)
    captions = caption_sentences(SMOKE)
    texts = [t for _, t in captions]
    assert sorted(texts) == sorted({e.caption for e in examples}) and len(set(texts)) == len(texts)
    assert all(sid.startswith("coco-") for sid, _ in captions)
    assert not set(texts) & {e.negative_caption for e in examples} - {e.caption for e in examples}
    assert caption_sentences(SMOKE, limit=5, seed=1) == caption_sentences(SMOKE, limit=5, seed=1)
    assert len(caption_sentences(SMOKE, limit=5, seed=1)) == 5


def test_family_purity_reports_each_family_per_corpus_and_split():
    pairs = build_pairs(_sources(TRAIN), _sources(TEST), seed=0)[0].assign(source="mine")
    table = family_purity(pairs)
    assert {"family", "source", "split", "pairs", "pure", "purity", "judged_as", "failing_examples"} <= set(
        table.columns
    )
    assert (
        table.pairs
        == pairs.groupby(["family", "source", "split"])
        .size()
        .loc[list(zip(table.family, table.source, table.split))]
        .to_numpy()
    ).all()
    assert table.purity.between(0, 1).all() and table.failing_examples.map(lambda s: isinstance(s, str)).all()
    # a mislabelled pair is caught: a binding swap filed as spatial
    wrong = pairs.head(1).assign(sentence1="The dog bit the man.", sentence2="The man bit the dog.", family="spatial")
    caught = family_purity(wrong)
    assert caught.purity.iloc[0] == 0 and "binding" in caught.judged_as.iloc[0]
