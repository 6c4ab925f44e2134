"""From sentences to training data: (original, near-miss) pairs and Model B's identity triplets.

The train/test split is by source sentence: a sentence and all of its near-misses land on the
same side, so a model is never tested on an edit of a sentence it was trained on.
"""

from __future__ import annotations

import hashlib
import os
import random
from collections import Counter
from pathlib import Path
from typing import Iterable

import pandas as pd

from compsense.core.storage import read_table, write_table
from compsense.data.negatives.core import candidates, choose, family_names, perturb, prepare
from compsense.data.negatives.text import stable_hash

PAIR_COLUMNS = ["sentence1", "sentence2", "family", "edit", "source_id", "split"]
TRIPLET_COLUMNS = ["anchor", "positive", "negative", "family", "source_id", "split"]


def source_id_of(sentence: str) -> str:
    """A content id, so the same sentence gets the same id (and split) in every run and list order."""
    return "s" + hashlib.blake2b(sentence.encode("utf-8"), digest_size=6).hexdigest()


def with_ids(sentences: Iterable[str] | Iterable[tuple[object, str]]) -> list[tuple[str, str]]:
    """Accept plain sentences or (source_id, sentence) tuples; drop repeated ids."""
    out, seen = [], set()
    for item in sentences:
        source_id, sentence = (source_id_of(item), item) if isinstance(item, str) else item
        source_id = str(source_id)
        if source_id not in seen:
            seen.add(source_id)
            out.append((source_id, sentence))
    return out


def split_of(source_id: str, seed: int, test_fraction: float) -> str:
    return "test" if stable_hash(f"{seed}\x00{source_id}") / 2**64 < test_fraction else "train"


def reverse_marker(marker: str) -> str:
    old, _, new = marker.partition(">")
    return f"{new}>{old}"


def _choose_balanced(options: dict[tuple[str, str], list], k: int, seed: int) -> dict:
    """Pick near-misses per (source, family) so each marker can be matched by its reverse.

    Each marker "a>b" may be used as often as sentences can supply both it and "b>a"; sources
    are visited in a seeded order and take the marker that is most urgent (most still needed
    per sentence still able to supply it), so rare directions ("n't>" in news) are not used up
    by sentences that had alternatives.
    """
    offered = {key: {o.marker for o in opts if o.marker} for key, opts in options.items()}
    supply = Counter(m for markers in offered.values() for m in markers)
    need = {m: min(n, supply[reverse_marker(m)]) for m, n in supply.items()}
    chosen = {}
    for key in sorted(options, key=lambda key: stable_hash(f"{seed}\x00" + "\x00".join(key))):
        opts, rng = options[key], random.Random(seed + stable_hash("\x00".join(key)))
        picks = []
        for _ in range(k):
            open_ = [o for o in opts if o.marker and need[o.marker] > 0 and o not in picks]
            if not open_:  # no marker still needed: an unmarked edit (a number, a swap) if any
                unmarked = [o for o in opts if not o.marker and o not in picks]
                picks += choose(unmarked, k - len(picks), rng)
                break
            best = max(open_, key=lambda o: (need[o.marker] / supply[o.marker], rng.random()))
            need[best.marker] -= 1
            picks.append(best)
        for marker in offered[key]:
            supply[marker] -= 1
        chosen[key] = picks
    return chosen


def _equalise_markers(df: pd.DataFrame, seed: int) -> pd.DataFrame:
    """Keep, per family, as many "a>b" near-misses as "b>a" ones (and drop one-way markers).

    A marker used more often in one direction lets a model, or a bag-of-words probe, spot
    near-misses by the word alone. Which rows are kept is a deterministic function of the seed.
    """
    keep = pd.Series(True, index=df.index)
    marked = df[df["marker"] != ""]
    counts = marked.groupby(["family", "marker"]).size()
    for (family, marker), group in marked.groupby(["family", "marker"]):
        allowed = int(counts.get((family, reverse_marker(marker)), 0))
        if len(group) > allowed:
            order = group["source_id"].map(lambda s: stable_hash(f"balance\x00{seed}\x00{s}"))
            keep[order.sort_values().index[allowed:]] = False
    return df[keep].reset_index(drop=True)


def make_pairs(
    sentences: list[str] | list[tuple[object, str]],
    families=None,
    seed: int = 0,
    test_fraction: float = 0.2,
    max_per_family: int = 1,
    balance: bool = True,
) -> pd.DataFrame:
    """One row per (source sentence, near-miss).

    Columns: sentence1 (the source), sentence2 (the near-miss), family, edit, direction, marker,
    source_id, split. With `balance`, every traded-word marker ("more>less", ">not") is kept
    exactly as often as its reverse within a family, which removes the bag-of-words give-aways
    measured by artefact_auc at the cost of pairs; without it, this is perturb() on each sentence.
    """
    names = family_names(families)
    sources = with_ids(sentences)
    prepare([sentence for _, sentence in sources], names)
    if balance:
        options = {(sid, name): candidates(sentence, name) for sid, sentence in sources for name in names}
        chosen = _choose_balanced(options, max_per_family, seed)
        picked = {sid: [nm for name in names for nm in chosen[(sid, name)]] for sid, _ in sources}
    else:
        picked = {sid: perturb(sentence, names, seed=seed, max_per_family=max_per_family) for sid, sentence in sources}
    rows = []
    for source_id, sentence in sources:
        split = split_of(source_id, seed, test_fraction)
        for nm in picked[source_id]:
            rows.append(
                {
                    "sentence1": sentence,
                    "sentence2": nm.text,
                    "family": nm.family,
                    "edit": nm.edit,
                    "direction": nm.direction,
                    "marker": nm.marker,
                    "source_id": source_id,
                    "split": split,
                }
            )
    df = pd.DataFrame(rows, columns=PAIR_COLUMNS[:4] + ["direction", "marker"] + PAIR_COLUMNS[4:])
    return _equalise_markers(df, seed) if balance else df


def make_triplets(pairs: pd.DataFrame) -> pd.DataFrame:
    """Model B's identity triplets: anchor = positive = the source sentence, negative = its near-miss."""
    _check_columns(pairs, PAIR_COLUMNS, "the pairs table")
    return pd.DataFrame(
        {
            "anchor": pairs["sentence1"],
            "positive": pairs["sentence1"],
            "negative": pairs["sentence2"],
            "family": pairs["family"],
            "source_id": pairs["source_id"],
            "split": pairs["split"],
        }
    )[TRIPLET_COLUMNS].reset_index(drop=True)


def write_pairs(df: pd.DataFrame, path: str | os.PathLike) -> Path:
    """Write a pairs (or triplets) table atomically; parquet unless the suffix says .csv/.jsonl."""
    _check_columns(df, PAIR_COLUMNS if "sentence1" in df.columns else TRIPLET_COLUMNS, "the table")
    return write_table(df, path)


def read_pairs(path: str | os.PathLike) -> pd.DataFrame:
    """Read a table written by write_pairs, failing loudly if it is not one."""
    df = read_table(path)
    _check_columns(df, PAIR_COLUMNS if "anchor" not in df.columns else TRIPLET_COLUMNS, str(path))
    return df


def _check_columns(df: pd.DataFrame, required: list[str], where: str) -> None:
    missing = [c for c in required if c not in df.columns]
    if missing:
        raise ValueError(
            f"{where} lacks columns {missing} (has {list(df.columns)}); rebuild it with "
            "compsense.data.negatives.make_pairs(...) (or make_triplets) and save it with write_pairs"
        )
