"""The perturbation entry points: which edits a family offers, and which of them perturb() picks."""

from __future__ import annotations

import random
from dataclasses import dataclass

from compsense.data.negatives.families import FAMILIES
from compsense.data.negatives.parse import parse_many
from compsense.data.negatives.text import Edit, Sentence, apply_edit, looks_english, stable_hash


@dataclass(frozen=True)
class NearMiss:
    """A minimally edited sentence: its text, the family that made it, and what was changed."""

    text: str
    family: str
    edit: str
    direction: str = "swap"  # "add" / "remove" for polarity edits, "swap" otherwise
    marker: str = ""  # the words traded, "old>new" ("more>less", ">not"); "" for swaps and numbers


def family_names(families: str | list[str] | None = None) -> list[str]:
    """Resolve a family selection (None = all, a name, or a list) and reject unknown names."""
    if families is None:
        return list(FAMILIES)
    names = [families] if isinstance(families, str) else list(families)
    unknown = [n for n in names if n not in FAMILIES]
    if unknown:
        raise ValueError(f"unknown near-miss families {unknown}; choose from {list(FAMILIES)}")
    return names


def prepare(sentences: list[str], families: list[str]) -> None:
    """Parse many sentences in one batch when a family needs the parse: ~5x faster than one by one."""
    if any(FAMILIES[name].parsed for name in families):
        parse_many(sentences)


def _english_sentence(sentence: str) -> Sentence | None:
    """The token view of `sentence`, or None when the English rules do not apply to it."""
    if not isinstance(sentence, str):
        raise TypeError(f"perturb() takes a str, got {type(sentence).__name__}")
    sent = Sentence(sentence)
    return sent if sent.tokens and looks_english(sent) else None


def family_edits(sent: Sentence, family: str) -> list[Edit]:
    """The distinct edits one family can make to a sentence, in sentence order (not yet applied)."""
    out, seen = [], set()
    for edit in FAMILIES[family].edits(sent):
        key = tuple(sorted(edit.replacements))
        changes = any(sent.text[start:end] != new for start, end, new in key)
        if changes and key not in seen:
            seen.add(key)
            out.append(edit)
    return out


def candidates(sentence: str, family: str) -> list[NearMiss]:
    """Every near-miss one family can make from a sentence (for inspection and balancing)."""
    sent = _english_sentence(sentence)
    if sent is None:
        return []
    return [_near_miss(sentence, family, edit) for edit in family_edits(sent, family)]


def _near_miss(sentence: str, family: str, edit: Edit) -> NearMiss:
    return NearMiss(apply_edit(sentence, edit), family, edit.description, edit.direction, edit.marker)


def choose(options: list, k: int, rng: random.Random) -> list:
    """Pick k edits (or near-misses), removals first: a sentence that holds a negation loses it."""
    removals = [o for o in options if o.direction == "remove"]
    others = [o for o in options if o.direction != "remove"]
    chosen = rng.sample(removals, min(k, len(removals)))
    return chosen + rng.sample(others, min(k - len(chosen), len(others)))


def perturb(
    sentence: str, families: str | list[str] | None = None, seed: int = 0, max_per_family: int = 1
) -> list[NearMiss]:
    """Near-misses of `sentence`: up to `max_per_family` per family, chosen deterministically.

    Returns [] for text the rules do not apply to (empty, non-English, no editable construction).
    """
    names = family_names(families)
    sent = _english_sentence(sentence)
    if sent is None:
        return []
    out = []
    for name in names:
        options = family_edits(sent, name)
        rng = random.Random(seed + stable_hash(f"{name}\x00{sentence}"))
        out.extend(_near_miss(sentence, name, e) for e in choose(options, max_per_family, rng))
    return [nm for nm in out if nm.text.strip() and nm.text != sentence]
