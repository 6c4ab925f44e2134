"""Zero-shot or in-domain: computed from the texts a model trained on, never declared.

An evaluation set is zero-shot for a model when none of its judged queries and none of its corpus
documents occurs among that model's training texts (anchors, positives and negatives, structural
rows included), compared as normalised text hashes; otherwise it is in-domain, and the overlap
counts say how much. The paper's Table 1 is a zero-shot result, so only zero-shot rows stand beside it.

Training writes the hashes of its texts beside the model (`write_training_keys`); evaluation reads
them back (`read_training_keys`) and calls `overlap`. Hashes, not texts: licensed dataset text is
never copied into a run folder twice, and a key set of a few thousand rows stays small.
"""

from __future__ import annotations

import hashlib
import os
import re
import unicodedata
from pathlib import Path
from typing import Iterable

from compsense.core.storage import read_json, write_json
from compsense.data.datasets import document_text

ZERO_SHOT, IN_DOMAIN = "zero-shot", "in-domain"
KEYS_FILE = "train_text_keys.json"
_SPACE = re.compile(r"\s+")


def normalise(text: str) -> str:
    """NFKC, case-folded, whitespace collapsed: a re-typed or re-spaced copy is the same text."""
    return _SPACE.sub(" ", unicodedata.normalize("NFKC", str(text)).casefold()).strip()


def text_key(text: str) -> str:
    """16 hex digits of the SHA-1 of the normalised text (collisions: ~1e-10 for 10^5 texts)."""
    return hashlib.sha1(normalise(text).encode("utf-8")).hexdigest()[:16]


def text_keys(texts: Iterable[str]) -> set[str]:
    return {text_key(t) for t in texts if str(t).strip()}


def dataset_keys(dataset) -> tuple[set[str], set[str]]:
    """(judged query keys, corpus document keys) of a `compsense.data.datasets.BeirDataset`."""
    queries = text_keys(dataset.queries[q] for q in dataset.qrels if q in dataset.queries)
    docs = text_keys(document_text(d) for d in dataset.corpus.values())
    return queries, docs


def training_keys(train_df, columns=("anchor", "positive", "negative")) -> set[str]:
    """Keys of every text in a training frame's text columns."""
    return set().union(*(text_keys(train_df[c]) for c in columns if c in train_df.columns))


def write_training_keys(path: str | os.PathLike, train_df) -> Path:
    keys = sorted(training_keys(train_df))
    return write_json(
        path, {"normalisation": "NFKC casefold, whitespace collapsed; sha1[:16]", "n_texts": len(keys), "keys": keys}
    )


def read_training_keys(path: str | os.PathLike) -> set[str]:
    path = Path(path)
    rerun = "delete it and re-run run_grid, which rewrites it from the training rows"
    if not path.exists():
        raise FileNotFoundError(
            f"{path}: the training-text keys of this model are missing; re-run its "
            "training cell (run_grid writes them, also for finished runs)"
        )
    data = read_json(path, recover=rerun)
    try:
        return set(data["keys"])
    except (KeyError, TypeError) as err:
        raise ValueError(f"{path}: not a training-key file ({err}); {rerun}") from None


def overlap(train_keys: set[str], dataset) -> dict:
    """regime, overlap_queries (judged queries among the training texts) and overlap_docs (corpus
    documents among them) of one evaluation set for one model."""
    queries, docs = dataset_keys(dataset)
    n_q, n_d = len(queries & train_keys), len(docs & train_keys)
    return {"regime": IN_DOMAIN if n_q or n_d else ZERO_SHOT, "overlap_queries": n_q, "overlap_docs": n_d}


def base_name(dataset_name: str) -> str:
    """'scifact@q30' -> 'scifact'; 'NanoSciFact' stays: the name a training source would carry."""
    return str(dataset_name).split("@", 1)[0].lower()
