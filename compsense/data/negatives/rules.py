"""Shared context tests and the table-driven word swap that most families are built from.

A `Swap` says: these words, when the guard accepts their context, become those words. Families
that flip a relation (spatial, quantifier, comparative, temporal) are mostly lists of swaps, so
the precision question for them reduces to reading one table and one guard per entry.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from compsense.data.negatives.lexicons import (
    ENGLISH_FUNCTION_WORDS,
    PAST_TO_BASE,
    THIRD_TO_BASE,
)
from compsense.data.negatives.text import Edit, Sentence, marker_of

Guard = Callable[[Sentence, int, int], bool]

NUMBER_WORDS = frozenset(
    "one two three four five six seven eight nine ten eleven twelve twenty thirty forty fifty "
    "sixty seventy eighty ninety hundred hundreds thousand thousands dozen dozens half million "
    "millions billion billions".split()
)
CURRENCY = frozenset("$ € £ ¥".split())
# Plural nouns that do not end in -s.
IRREGULAR_PLURALS = frozenset("people children men women police staff mice teeth feet data".split())
_NOT_PLURAL_ENDINGS = ("ss", "us", "is", "ous", "'s")


def is_number(sent: Sentence, i: int) -> bool:
    """A numeral token ("12", "2003") or a currency sign that starts an amount ("$ 5")."""
    word = sent.word(i)
    return word.isdigit() or word in CURRENCY


def is_quantity(sent: Sentence, i: int) -> bool:
    """A number, a number word or a currency sign: what an amount phrase starts with."""
    return is_number(sent, i) or sent.low(i) in NUMBER_WORDS


def is_content_word(sent: Sentence, i: int) -> bool:
    """A free lower-case word that is not a function word or an -ly adverb."""
    low = sent.low(i)
    return sent.is_word(i) and sent.word(i).islower() and low not in ENGLISH_FUNCTION_WORDS and not low.endswith("ly")


def is_finite_verb_form(low: str) -> bool:
    return low in PAST_TO_BASE or low in THIRD_TO_BASE


def looks_participle(low: str) -> bool:
    """A regular past participle by spelling ("planned"), not "red", "need" or "hundred"."""
    return (
        len(low) > 4
        and low.endswith("ed")
        and not low.endswith("eed")
        and low not in ("hundred", "kindred", "sacred", "naked", "wicked", "rugged")
    )


def looks_plural(sent: Sentence, i: int) -> bool:
    """A lower-case noun that looks plural ("students", "people"), by spelling only."""
    low = sent.low(i)
    if low in IRREGULAR_PLURALS:
        return sent.is_word(i)
    return (
        is_content_word(sent, i)
        and len(low) > 3
        and low.endswith("s")
        and not low.endswith(_NOT_PLURAL_ENDINGS)
        and low not in PAST_TO_BASE
    )


def indefinite_article(word: str) -> str:
    """'a' or 'an' for the word that follows it (by its first letter, with the common exceptions)."""
    low = word.lower()
    if low.startswith(("uni", "use", "usu", "eu", "one", "once")):
        return "a"
    if low.startswith(("hour", "honest", "honour", "honor", "heir")):
        return "an"
    return "an" if low[:1] in set("aeiou") else "a"


def replace_words(sent: Sentence, i: int, j: int, new: str, direction: str = "swap") -> Edit:
    """Replace tokens i..j-1, fixing a preceding "a"/"an" when the new first word needs the other."""
    old = sent.substring(i, j)
    description, marker = f"'{old}' -> '{new}'", marker_of(old, new)
    if sent.low(i - 1) in ("a", "an") and sent.is_free(i - 1):
        article = indefinite_article(new)
        if article != sent.low(i - 1):
            return Edit((sent.replace(i - 1, j, f"{article} {new}"),), description, direction, marker)
    return Edit((sent.replace(i, j, new),), description, direction, marker)


@dataclass(frozen=True)
class Swap:
    """Replace the word sequence `old` by `new` wherever `guard` accepts the context."""

    old: tuple[str, ...]
    new: str
    guard: Guard | None = None
    direction: str = "swap"


def swap_pairs(pairs: str, guard: Guard | None = None, both_ways: bool = True) -> list[Swap]:
    """Swaps from "a>b, c d>e" notation; `both_ways` adds the reverse of every pair."""
    swaps = []
    for item in pairs.split(","):
        if not item.strip():
            continue
        old, new = (part.strip() for part in item.split(">"))
        swaps.append(Swap(tuple(old.split()), new, guard))
        if both_ways:
            swaps.append(Swap(tuple(new.split()), old, guard))
    return swaps


class SwapTable:
    """Swaps indexed by their first word, so a sentence is scanned once whatever the table size."""

    def __init__(self, swaps: list[Swap]):
        self.by_first: dict[str, list[Swap]] = {}
        for swap in swaps:
            self.by_first.setdefault(swap.old[0], []).append(swap)

    def edits(self, sent: Sentence) -> list[Edit]:
        out, present = [], set(sent.lows)
        for i, low in enumerate(sent.lows):
            for swap in self.by_first.get(low, ()):
                j = i + len(swap.old)
                if tuple(sent.lows[i:j]) != swap.old or not all(sent.is_free(k) for k in range(i, j)):
                    continue
                if swap.guard is not None and not swap.guard(sent, i, j):
                    continue
                if set(swap.new.split()) <= present:  # "rise and fall" -> "rise and rise"
                    continue
                out.append(replace_words(sent, i, j, swap.new, swap.direction))
        return out


def followed_by(words: set[str] | frozenset[str]) -> Guard:
    return lambda sent, i, j: sent.low(j) in words


def not_followed_by(words: set[str] | frozenset[str]) -> Guard:
    return lambda sent, i, j: sent.low(j) not in words


def not_preceded_by(words: set[str] | frozenset[str]) -> Guard:
    return lambda sent, i, j: sent.low(i - 1) not in words


def all_of(*guards: Guard) -> Guard:
    return lambda sent, i, j: all(g(sent, i, j) for g in guards)


def lower_case_only(sent: Sentence, i: int, j: int) -> bool:
    """The matched words are lower case, or capitalised only because they open the sentence.

    Keeps swaps off names ("Upper Austria", "Western Digital", "First Lady").
    """
    return sent.word(i).islower() or i == sent.first_word_index
