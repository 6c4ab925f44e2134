"""Ranges and paths: "from X to Y" read the other way round.

- amounts: "rose from 5 % to 7 %" -> "rose from 7 % to 5 %" (numeric: the values trade places);
- places: "flew from Paris to Rome" -> "flew from Rome to Paris" (spatial: the path reverses).
Only after a change or motion word ("rose", "flew", "route"): a static span ("priced from $ 5 to
$ 9") means the same reversed, and reversed years ("from 1995 to 2002") are a malformed period.
"""

from __future__ import annotations

from dataclasses import dataclass

from compsense.data.negatives.lexicons import PREPOSITIONS
from compsense.data.negatives.rules import CURRENCY
from compsense.data.negatives.text import Edit, Sentence

AMOUNT_WORDS = (
    frozenset(
        """% percent per cent million billion trillion thousand cents points pence dollars euros
    pounds degrees""".split()
    )
    | CURRENCY
)
CALENDAR_NAMES = frozenset(
    """monday tuesday wednesday thursday friday saturday sunday january february march april may
    june july august september october november december""".split()
)
# What may follow a swapped end. Not "of", "by", "and", "or", ",": those attach more words to it.
PHRASE_END_WORDS = (PREPOSITIONS - {"of", "by", "than", "with"}) | frozenset(
    """yesterday today tomorrow last next this earlier later because when while after before as
    overnight again instead""".split()
)
END_PUNCTUATION = frozenset(list(".;:!?)") + ['"', "”", "'"])
# A comma ends a phrase only before a new clause, not before an appositive (", 45 ,", ", who").
AFTER_COMMA = frozenset("and but while although though so as after before when because since yet".split())
# Words before "from ... to ..." that make the range a change or a path, whose direction matters.
CHANGE_CUES = frozenset(
    """rose rise rises rising fell fall falls falling jumped jump jumps climbed climb dropped drop
    increased increase decreased decrease grew grow slipped slip improved declined cut raised
    lowered reduced boosted up down moved move""".split()
)
MOTION_CUES = frozenset(
    """went go flew fly traveled travelled travel drove drive walked sailed flight flights train
    trains trip route journey road shipped sent transferred moving moved move""".split()
)


@dataclass(frozen=True)
class Phrase:
    start: int
    end: int  # exclusive
    kind: str  # "det", "name", "bare"
    number: str | None  # "sg", "pl" or None when unknown


def _is_name(sent: Sentence, k: int) -> bool:
    return sent.is_capitalised_name(k) or (sent.word(k).isupper() and len(sent.word(k)) > 1)


def _ends_cleanly(sent: Sentence, end: int) -> bool:
    """Nothing more belongs to the phrase: the clause ends, or a preposition or time word follows."""
    nxt = sent.word(end)
    if not nxt:
        return True
    if nxt == ".":  # a full stop, not the dot of "Dr." or "U.S."
        return all(not t[:1].isalnum() for t in (sent.word(end + 1), sent.word(end + 2)) if t)
    if nxt == ",":
        return sent.low(end + 1) in AFTER_COMMA
    return nxt in END_PUNCTUATION or sent.low(end) in PHRASE_END_WORDS


def _is_name_word(sent: Sentence, k: int) -> bool:
    return _is_name(sent, k) and sent.low(k) not in CALENDAR_NAMES


def _moved(sent: Sentence, phrase: Phrase) -> str:
    """A phrase's text for its new position: "The company" loses its sentence-initial capital."""
    text = sent.substring(phrase.start, phrase.end)
    if phrase.start == sent.first_word_index and phrase.kind != "name":
        return text[0].lower() + text[1:]
    return text


def _swap(sent: Sentence, a: Phrase, b: Phrase, what: str) -> Edit | None:
    old_a, old_b = sent.substring(a.start, a.end), sent.substring(b.start, b.end)
    if old_a.lower() == old_b.lower():
        return None
    (sa, ea), (sb, eb) = sent.span(a.start, a.end), sent.span(b.start, b.end)
    return Edit(((sa, ea, _moved(sent, b)), (sb, eb, _moved(sent, a))), f"swapped {what} '{old_a}' and '{old_b}'")


def _number_core_end(sent: Sentence, start: int) -> int:
    """End of the currency sign and number at `start` ("$ 2.5", "4.4"), or `start` if none.

    Years are not amounts here: "from 1995 to 2002" reversed is a malformed period, not a
    different one. Neither is "2 1 / 2" (MRPC's spaced fractions).
    """
    end = start
    while sent.word(end) in CURRENCY:
        end += 1
    number_start = end
    while sent.word(end).isdigit() or sent.joins_digits(end):
        end += 1
    number = sent.substring(number_start, end) if end > number_start else ""
    if not number or sent.word(end).isdigit() or _is_year(number):
        return start
    return end


def _units_end(sent: Sentence, start: int) -> int:
    end = start
    while sent.low(end) in AMOUNT_WORDS:
        end += 1
    return end


def _is_year(number: str) -> bool:
    return len(number) == 4 and number.isdigit() and 1000 <= int(number) <= 2099


def _name_end(sent: Sentence, start: int) -> int:
    end = start
    while end < len(sent) and end - start < 3 and _is_name_word(sent, end):
        end += 1
    return end


def _range_ends(sent: Sentence, i: int) -> tuple[Phrase, Phrase] | None:
    """The two ends of 'from X to Y' at i: amounts (their numbers only) or names."""
    a_end = _number_core_end(sent, i + 1)
    if a_end > i + 1:
        to = _units_end(sent, a_end)
        b_end = _number_core_end(sent, to + 1) if sent.low(to) == "to" else to + 1
        if sent.low(to) == "to" and b_end > to + 1 and _ends_cleanly(sent, _units_end(sent, b_end)):
            return Phrase(i + 1, a_end, "det", None), Phrase(to + 1, b_end, "det", None)
        return None
    a_end = _name_end(sent, i + 1)
    if a_end > i + 1 and sent.low(a_end) == "to":
        b_end = _name_end(sent, a_end + 1)
        if b_end > a_end + 1 and _ends_cleanly(sent, b_end):
            return Phrase(i + 1, a_end, "name", None), Phrase(a_end + 1, b_end, "name", None)
    return None


def _range_swaps(sent: Sentence, cues: frozenset[str], kind: str) -> list[Edit]:
    edits = []
    for i, low in enumerate(sent.lows):
        if low != "from" or not any(sent.low(k) in cues for k in range(max(i - 6, 0), i)):
            continue
        ends = _range_ends(sent, i)
        if ends and ends[0].kind == kind:
            edit = _swap(sent, *ends, "the ends of the range" if kind == "det" else "the ends of the path")
            if edit:
                edits.append(edit)
    return edits


def amount_range_swaps(sent: Sentence) -> list[Edit]:
    """'rose from 5 % to 7 %' -> 'rose from 7 % to 5 %' (numeric)."""
    return _range_swaps(sent, CHANGE_CUES, "det")


def path_swaps(sent: Sentence) -> list[Edit]:
    """'flew from London to Paris' -> 'flew from Paris to London' (spatial)."""
    return _range_swaps(sent, MOTION_CUES, "name")
