"""Numeric: change one number or amount and keep its format ("12" -> "13", "1,200" -> "1,300",
"4.4 %" -> "4.5 %", "June 10" -> "June 11", "twice" -> "three times", "million" -> "billion").

Numbers are found in the raw text (tokens split "2.5" and "1,200"), and a number glued to
other characters is skipped: times (10:30), dates (6/10/2003, 2003-04), codes (F-16, 3rd, 5G).
"1" and "one" are left alone because the noun after them is singular ("1 person" -> "2 person").
"""

from __future__ import annotations

import re

from compsense.data.negatives.lexicons import MODALS
from compsense.data.negatives.rules import (
    Swap,
    SwapTable,
    all_of,
    lower_case_only,
    not_followed_by,
    swap_pairs,
)
from compsense.data.negatives.swaps import MONTHS, THE_OR_POSSESSIVE
from compsense.data.negatives.text import Edit, Sentence

NUMBER_RE = re.compile(r"(?<![\w.,/:\-])(\d{1,3}(?:,\d{3})+|\d+)(\.\d+)?(?![\w/:]|[.,\-]\d)")
ORDINAL_RE = re.compile(r"(?<![\w.,/:\-])(\d+)(st|nd|rd|th)\b")
UNIT_AFTER_ONE = ("%", "percent", "million", "billion", "trillion")

NUMBER_WORD_ORDER = "two three four five six seven eight nine ten eleven twelve".split()
TENS_ORDER = "twenty thirty forty fifty sixty seventy eighty ninety".split()
ORDINAL_WORDS = {
    "second": "third",
    "third": "second",
    "fourth": "third",
    "fifth": "fourth",
    "sixth": "fifth",
    "seventh": "sixth",
    "eighth": "seventh",
    "ninth": "eighth",
    "tenth": "ninth",
}


def _neighbours(order: list[str]) -> list[Swap]:
    """Each number word becomes the one before or after it ("three" -> "two" / "four")."""
    swaps = []
    for k, word in enumerate(order):
        for other in order[max(k - 1, 0) : k] + order[k + 1 : k + 2]:
            guard = lower_case_only
            if other == "two":  # "two times" is said "twice"
                guard = all_of(lower_case_only, not_followed_by({"times"}))
            swaps.append(Swap((word,), other, guard))
    return swaps


def _ordinal_word(sent: Sentence, i: int, j: int) -> bool:
    """'the third quarter', not the fraction 'a third of' or 'two-thirds'."""
    return sent.low(i - 1) in THE_OR_POSSESSIVE


def _verb_use(sent: Sentence, i: int, j: int) -> bool:
    return sent.low(i - 1) in MODALS or sent.low(i - 1) == "to"


NUMBER_WORD_SWAPS = SwapTable(
    [
        *_neighbours(NUMBER_WORD_ORDER),
        *_neighbours(TENS_ORDER),
        *[Swap((w,), new, _ordinal_word) for w, new in ORDINAL_WORDS.items()],
        Swap(("twice",), "three times", None),
        *swap_pairs("doubled>tripled, doubling>tripling"),
        *swap_pairs("double>triple", _verb_use),
        Swap(("halved",), "doubled", None),
        Swap(("half", "of"), "a third of", lambda sent, i, j: sent.low(i - 1) not in ("a", "one")),
        *swap_pairs("a quarter of>a third of"),
        *swap_pairs("million>billion, millions>billions, hundreds>thousands", lower_case_only),
        Swap(("dozens",), "hundreds", None),
        Swap(("trillion",), "billion", None),
    ]
)


def _with_format(value: int, template: str) -> str:
    return f"{value:,}" if "," in template else str(value)


def _integer_options(sent: Sentence, digits: str, start: int) -> list[int]:
    """New values for an integer, each keeping its digit count and plausibility."""
    n = int(digits.replace(",", ""))
    width = len(str(n))
    before = sent.text[max(start - 40, 0) : start].split()
    prev_word = before[-1].lower() if before else ""
    if prev_word in MONTHS and 1 <= n <= 31:  # a day of the month
        return [d for d in (n + 1, n - 1) if 1 <= d <= 28]
    if n == 1:
        after = sent.text[start + len(digits) : start + len(digits) + 40].split()
        unit_follows = bool(after) and after[0].lower() in UNIT_AFTER_ONE
        return [2] if unit_follows or prev_word in ("$", "€", "£") else []
    if n == 0:
        return []
    if width == 4 and "," not in digits and 1000 <= n <= 2099:  # a year: 1930 -> 1931 / 1929
        return [n + 1, n - 1]
    # Round numbers move by their last non-zero digit (1,200 -> 1,300; 50 -> 60), others by one.
    step = 10 ** (len(str(n)) - len(str(n).rstrip("0")))
    return [v for v in (n + step, n - step) if len(str(v)) == width and v > 1]


def _decimal_options(frac: str) -> list[str]:
    """'.5' -> '.6' / '.4': the last decimal digit moves by one."""
    last = int(frac[-1])
    return [frac[:-1] + str(d) for d in (last + 1, last - 1) if 0 <= d <= 9]


def _digit_edits(sent: Sentence) -> list[Edit]:
    edits = []
    present = {m.group() for m in NUMBER_RE.finditer(sent.text)}
    for m in NUMBER_RE.finditer(sent.text):
        whole, frac = m.group(1), m.group(2)
        if frac:
            for new_frac in _decimal_options(frac):
                new = whole + new_frac
                if new in present:
                    continue
                edits.append(Edit(((m.start(), m.end(), new),), f"'{m.group()}' -> '{new}'"))
            continue
        for value in _integer_options(sent, whole, m.start()):
            new = _with_format(value, whole)
            if new in present:  # "2001 , 2002" -> "2002 , 2002" would read as a typo
                continue
            edits.append(Edit(((m.start(), m.end(), new),), f"'{whole}' -> '{new}'"))
    for m in ORDINAL_RE.finditer(sent.text):
        n = int(m.group(1))
        if n == 0:
            continue
        value = n + 1 if n <= 2 else n - 1
        new = f"{value}{_ordinal_suffix(value)}"
        edits.append(Edit(((m.start(), m.end(), new),), f"'{m.group()}' -> '{new}'"))
    return edits


def _ordinal_suffix(n: int) -> str:
    if 10 <= n % 100 <= 20:
        return "th"
    return {1: "st", 2: "nd", 3: "rd"}.get(n % 10, "th")


def numeric_edits(sent: Sentence) -> list[Edit]:
    return _digit_edits(sent) + NUMBER_WORD_SWAPS.edits(sent)
