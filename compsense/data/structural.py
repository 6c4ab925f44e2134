"""Where the structural near-miss data of the pipeline comes from, and where it goes.

The paper built its structural negatives from MRPC sentences. Here the train split is made from
MRPC's (GLUE) train and STS-B's train sentences; the held-out split from MRPC test, STS-B test and
dev, and the COCO captions of SugarCrepe (`caption_sentences`), so the held-out near-misses
(notebooks 02-04) come from sentences no model trained on, and a sentence with all its near-misses
sits on one side only. A user's own sentence list can be added to either side. Outputs:
{work_dir}/negatives/pairs.parquet and triplets.parquet.
"""

from __future__ import annotations

import logging
import os
import random
from pathlib import Path

import pandas as pd

from compsense.core.encoders import MOSTLY_UNKNOWN, BackboneUnavailable, load_tokenizer
from compsense.core.layout import pairs_file, purity_file, triplets_file
from compsense.core.storage import write_table
from compsense.data.datasets import load_mrpc, load_sentences, load_stsb, load_sugarcrepe
from compsense.data.negatives import make_pairs, make_triplets, read_pairs, write_pairs
from compsense.data.negatives.pairs import source_id_of
from compsense.data.purity import judge_pairs, purity_table

log = logging.getLogger(__name__)


def mrpc_sentences(split: str, data_dir=None, limit: int | None = None, seed: int = 0) -> list[tuple[str, str]]:
    """Distinct MRPC sentences of a split as (source_id, sentence), a seeded sample of `limit` of them.

    The source id is MRPC's own sentence id (`mrpc-<id>`), so results can be traced back to the corpus.
    """
    pairs = load_mrpc(split, data_dir=data_dir)
    ids = ((f"mrpc-{sid}", text) for p in pairs for sid, text in ((p.id1, p.sentence1), (p.id2, p.sentence2)))
    return _distinct_sample(ids, limit, seed)


def stsb_sentences(split: str, data_dir=None, limit: int | None = None, seed: int = 0) -> list[tuple[str, str]]:
    """Distinct STS-B sentences of a split as (source_id, sentence), like mrpc_sentences: a second
    corpus (captions, forums, news headlines) to check the families on text they were not written for."""
    texts = (text for p in load_stsb(split, data_dir=data_dir) for text in (p.sentence1, p.sentence2))
    return _distinct_sample(((f"stsb-{source_id_of(text)[1:]}", text) for text in texts), limit, seed)


def _distinct_sample(items, limit: int | None, seed: int) -> list[tuple[str, str]]:
    """(source_id, text) items, the first id of each text kept, sorted; a seeded sample of `limit`."""
    seen: dict[str, tuple[str, str]] = {}
    for sid, text in items:
        seen.setdefault(text, (sid, text))
    sentences = sorted(seen.values())
    if limit is not None and limit < len(sentences):
        sentences = sorted(random.Random(seed).sample(sentences, limit))
    return sentences


# STS-B splits on notebook 01's held-out side: test and dev, which nothing here trains on (the
# verifiers and some retrieval sources train on STS-B train). MRPC's held-out split is test.
STSB_HELDOUT_SPLITS = ("test", "dev")


def stsb_heldout_sentences(data_dir=None, limit: int | None = None, seed: int = 0) -> list[tuple[str, str]]:
    """STS-B test and dev sentences (up to `limit` of each), for the held-out side."""
    return [s for split in STSB_HELDOUT_SPLITS for s in stsb_sentences(split, data_dir, limit=limit, seed=seed)]


def caption_sentences(data_dir=None, limit: int | None = None, seed: int = 0) -> list[tuple[str, str]]:
    """The distinct COCO captions SugarCrepe was built from (its `caption` field; never its negatives)
    as (source_id, caption), a third held-out corpus: captions describe scenes, so they carry the
    agents, attributes and spatial relations that newswire lacks. Nothing here trains on them; notebook
    03 scores SugarCrepe's own edits of some of the same captions as a separate benchmark."""
    captions = (example.caption for example in load_sugarcrepe(data_dir=data_dir))
    return _distinct_sample(((f"coco-{source_id_of(text)[1:]}", text) for text in captions), limit, seed)


def heldout_paraphrase_pairs(split: str = "test", data_dir=None) -> list:
    """The labelled pairs whose paraphrases (geometry.positive_pairs) the held-out near-misses are
    compared with: MRPC `split` and STS-B `split`, plus STS-B dev when `split` is "test" (the
    corpora notebook 01 draws its held-out sentences from)."""
    stsb = STSB_HELDOUT_SPLITS if split == "test" else (split,)
    return load_mrpc(split, data_dir=data_dir) + [p for s in stsb for p in load_stsb(s, data_dir=data_dir)]


def corpus_of(source_ids: pd.Series) -> pd.Series:
    """The corpus a source id names ("mrpc-123" -> "mrpc", "stsb-ab12" -> "stsb", "coco-cd34" -> "coco"); "user" for a
    user's own sentences (content ids, "s" + hex)."""
    prefix = source_ids.astype(str).str.extract(r"^([a-z]+)-", expand=False)
    return prefix.fillna("user")


def family_purity(pairs: pd.DataFrame, by=("family", "source", "split"), examples: int = 3) -> pd.DataFrame:
    """Each family's pairs as the independent checker (compsense.data.purity) judges them: the share
    that are what their label says, per family x source x split, with what the rest were judged."""
    judged = judge_pairs(pairs.rename(columns={"sentence1": "original", "sentence2": "near_miss"}))
    table = purity_table(judged, by=[c for c in by if c in judged.columns], examples=examples)
    table["failing_examples"] = table["failing_examples"].map(" || ".join)
    return table


def write_purity(purity: pd.DataFrame, work_dir) -> Path:
    """Notebook 01's purity table (`family_purity`) to {work_dir}/negatives/purity.parquet, atomically:
    the one copy the report and the README's purity table read."""
    return write_table(purity, purity_file(work_dir, create=True))


def user_sentences(path: str | os.PathLike) -> list[tuple[str, str]]:
    return [(source_id_of(s), s) for s in load_sentences(path)]


# What notebook 01 asks how a sentence reads to an encoder: all-MiniLM-L6-v2's tokenizer (BERT's uncased
# WordPiece vocabulary, which MiniLM-L12 and gte-small share), at the paper's 128 tokens. Where its
# package is missing, tiny-bert's (committed) tokenizer stands in, and the stats say which judged.
PAIRS_TOKENIZER, PAIRS_FALLBACK_TOKENIZER = "minilm-l6", "tiny-bert"
MAX_TOKENS = 128


def build_pairs(
    train_sources: list[tuple[str, str]],
    test_sources: list[tuple[str, str]],
    families=None,
    seed: int = 0,
    max_per_family: int = 1,
    tokenizer=PAIRS_TOKENIZER,
    max_tokens: int = MAX_TOKENS,
) -> tuple[pd.DataFrame, dict]:
    """Near-miss pairs with the split fixed by where each source came from.

    A sentence present on both sides is kept on the test side only (counted in the stats), so no
    test sentence is ever trained on. With a `tokenizer` (a backbone name, a model folder or a
    tokenizer; None: no check), pairs are made only of what the encoder can tell apart, and what is
    left out is counted in the stats and logged: a sentence longer than `max_tokens` tokens (the
    encoder reads only its start, so an edit past the cut makes a "near-miss" that is a copy), a
    sentence mostly of unknown tokens (`encoders.MOSTLY_UNKNOWN`: "🐱 🐶" and "🐶 🐱" are both
    [UNK] [UNK]), and any pair whose two sides still encode to the same tokens.
    """
    tok, tok_name = _pairs_tokenizer(tokenizer)
    train_sources, train_dropped = readable_sources(train_sources, tok, max_tokens)
    test_sources, test_dropped = readable_sources(test_sources, tok, max_tokens)
    test_texts = {text for _, text in test_sources}
    kept_train = [(sid, text) for sid, text in train_sources if text not in test_texts]
    parts = []
    for split, sources in (("train", kept_train), ("test", test_sources)):
        if sources:
            df = make_pairs(
                sources,
                families=families,
                seed=seed,
                max_per_family=max_per_family,
                test_fraction=1.0 if split == "test" else 0.0,
            )
            parts.append(df.assign(split=split))
    pairs = pd.concat(parts, ignore_index=True) if parts else make_pairs([], families=families)
    same = same_to_encoder(pairs, tok, max_tokens)
    pairs = pairs[~same].reset_index(drop=True)
    stats = {
        "train_sources": len(kept_train),
        "test_sources": len(test_sources),
        "dropped_train_sources_also_in_test": len(train_sources) - len(kept_train),
        **{f"dropped_sources_{why}": train_dropped[why] + test_dropped[why] for why in UNREADABLE},
        "dropped_pairs_same_to_the_encoder": int(same.sum()),
        "tokenizer": tok_name,
        "max_tokens": max_tokens if tok is not None else None,
        "train_sources_with_near_miss": int(pairs.loc[pairs.split == "train", "source_id"].nunique()),
        "test_sources_with_near_miss": int(pairs.loc[pairs.split == "test", "source_id"].nunique()),
        "pairs": len(pairs),
    }
    if stats["dropped_pairs_same_to_the_encoder"]:
        log.warning(
            "%d near-miss pairs left out: both sides encode to the same %s tokens (the edit falls past the "
            "%d-token cut, or only changes unknown tokens), so they would teach and test copies",
            stats["dropped_pairs_same_to_the_encoder"],
            tok_name,
            max_tokens,
        )
    if stats["dropped_train_sources_also_in_test"]:
        log.warning(
            "%d train sentences also occur in the test sources; kept them on the test side only",
            stats["dropped_train_sources_also_in_test"],
        )
    return pairs, stats


UNREADABLE = ("too_long", "mostly_unknown")  # why `readable_sources` leaves a sentence out


def readable_sources(sources, tokenizer, max_tokens: int = MAX_TOKENS) -> tuple[list[tuple[str, str]], dict]:
    """(the (source_id, sentence) items an encoder reads whole and mostly knows, {reason: count}).

    Left out, with a warning naming the first of each: a sentence longer than `max_tokens` tokens,
    special tokens included (the encoder cuts it, so a near-miss whose edit falls past the cut is a
    copy: a 9,027-character line gave "near-misses" edited at character 5,571), and one whose tokens
    are at least `MOSTLY_UNKNOWN` the unknown token (emoji, CJK in MiniLM's vocabulary: its near-misses
    read as the same placeholders). `tokenizer` None keeps everything."""
    dropped = dict.fromkeys(UNREADABLE, 0)
    if tokenizer is None or not sources:
        return list(sources), dropped
    ids = tokenizer([text for _, text in sources], truncation=False, verbose=False)["input_ids"]
    specials = tokenizer.num_special_tokens_to_add(pair=False)
    unk = tokenizer.unk_token_id
    kept, first = [], {}
    for (sid, text), row in zip(sources, ids):
        words = len(row) - specials
        unknown = sum(i == unk for i in row) if unk is not None else 0
        mostly_unknown = words > 0 and unknown >= MOSTLY_UNKNOWN * words
        why = "too_long" if len(row) > max_tokens else "mostly_unknown" if mostly_unknown else None
        if why is None:
            kept.append((sid, text))
            continue
        dropped[why] += 1
        first.setdefault(why, (sid, text, len(row), unknown, words))
    for why, (sid, text, n, unknown, words) in first.items():
        detail = (
            f"{n:,} tokens, more than the encoder's {max_tokens}: an edit past the cut would make a copy"
            if why == "too_long"
            else f"{unknown} of {words} tokens unknown to the vocabulary: its near-misses would read the same"
        )
        log.warning(
            "%d source sentence(s) left out before pairs are made, e.g. %s (%r...): %s. Fix: shorten or split "
            "such sentences in the file",
            dropped[why],
            sid,
            text[:60],
            detail,
        )
    return kept, dropped


def same_to_encoder(pairs: pd.DataFrame, tokenizer, max_tokens: int = MAX_TOKENS) -> pd.Series:
    """Per pair, whether its two sides give the encoder the same first `max_tokens` tokens: a near-miss
    the encoder cannot tell from its source (all False without a tokenizer)."""
    if tokenizer is None or pairs.empty:
        return pd.Series(False, index=pairs.index)
    texts = list(dict.fromkeys([*pairs.sentence1, *pairs.sentence2]))
    ids = tokenizer(texts, truncation=True, max_length=max_tokens, verbose=False)["input_ids"]
    seen = {text: tuple(row) for text, row in zip(texts, ids)}
    return pd.Series([seen[a] == seen[b] for a, b in zip(pairs.sentence1, pairs.sentence2)], index=pairs.index)


def _pairs_tokenizer(tokenizer) -> tuple[object | None, str | None]:
    """(tokenizer, its name for the stats) from a name, a folder or a tokenizer. The default
    (`PAIRS_TOKENIZER`) falls back to tiny-bert's where its package is missing, with a warning, rather
    than stop notebook 01; a tokenizer asked for by name must load."""
    if tokenizer is None or not isinstance(tokenizer, (str, os.PathLike)):
        return tokenizer, getattr(tokenizer, "name_or_path", None) or (type(tokenizer).__name__ if tokenizer else None)
    try:
        return load_tokenizer(tokenizer), str(tokenizer)
    except BackboneUnavailable as err:
        if tokenizer != PAIRS_TOKENIZER:
            raise
        log.warning("%s; %s's tokenizer judges the sentences instead", err, PAIRS_FALLBACK_TOKENIZER)
        return load_tokenizer(PAIRS_FALLBACK_TOKENIZER), PAIRS_FALLBACK_TOKENIZER


def counts_table(pairs: pd.DataFrame) -> pd.DataFrame:
    """Pairs and distinct source sentences per family and split."""
    grouped = pairs.groupby(["family", "split"])
    return grouped.agg(pairs=("sentence2", "size"), sources=("source_id", "nunique")).reset_index()


def write_outputs(pairs: pd.DataFrame, work_dir) -> dict[str, Path]:
    """Write pairs.parquet and triplets.parquet under {work_dir}/negatives/ (atomically)."""
    return {
        "pairs": write_pairs(pairs, pairs_file(work_dir, create=True)),
        "triplets": write_pairs(make_triplets(pairs), triplets_file(work_dir, create=True)),
    }


def read_outputs(work_dir) -> tuple[pd.DataFrame, pd.DataFrame]:
    return read_pairs(pairs_file(work_dir)), read_pairs(triplets_file(work_dir))
