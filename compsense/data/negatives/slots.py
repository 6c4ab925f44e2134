"""Binding of values to slots: two amounts, days, months or years trade places.

"Revenue rose to $ 12 million from $ 10 million" -> "... to $ 10 million from $ 12 million";
"3 wins and 2 losses" -> "2 wins and 3 losses"; "it fell on Monday and rose on Tuesday" ->
"it fell on Tuesday and rose on Monday". The words stay, only which value goes with which noun
or event changes, so like the role swaps these need no marker balancing.

Only values of one kind are exchanged (two percentages, two dollar amounts in millions, two
counts of plural nouns, two weekdays), so the result is as grammatical as the original. Left
alone because the swap keeps the meaning or reads as a malformed span: lists and ranges
("5 and 7 percent", "$ 5 to $ 9", "Monday through Friday", "between X and Y", "from X to Y"
without a change verb, which the range rule in ranges.py decides), equal values, years inside
dates, fractions ("2 1 / 2"), and counts of one ("1 person" would become "3 person").
"""

from __future__ import annotations

from dataclasses import dataclass

from compsense.data.negatives.rules import CURRENCY, looks_plural
from compsense.data.negatives.text import Edit, Sentence

UNIT_WORDS = frozenset("""% percent cents points pence million billion trillion""".split())
COUNT_WORDS = frozenset("two three four five six seven eight nine ten eleven twelve".split())
WEEKDAYS = frozenset("monday tuesday wednesday thursday friday saturday sunday".split())
MONTH_NAMES = frozenset(
    # "May" is left out: it is as often the modal verb.
    "january february march april june july august september october november december".split()
)
# Gaps that make two values a list or a range rather than two separately bound slots.
LIST_GAP = frozenset(["to", "and", "or", "-", "–", "—", "through", "until", "thru", ",", "nor", "and/or", "/", "&"])
RANGE_OPENERS = frozenset("between from among".split())
# Words before a value that put both values into one span ("from March to May", "between").
SPAN_INSIDE = frozenset("to through until till and or".split())
GLUE_BEFORE = set("-/.:_@#") | {"'", "’"}


@dataclass(frozen=True)
class Value:
    start: int  # first token of the whole value phrase (currency included)
    end: int  # exclusive end of the whole phrase (unit included)
    core: tuple[int, int]  # the tokens that are swapped
    kind: tuple[str, ...]


def _char_before(sent: Sentence, i: int) -> str:
    start = sent.tokens[i].start
    return sent.text[start - 1] if start > 0 else " "


def _char_after(sent: Sentence, i: int) -> str:
    end = sent.tokens[i].end
    return sent.text[end] if end < len(sent.text) else " "


def _digits_end(sent: Sentence, start: int) -> int:
    if not sent.word(start).isdigit():
        return start
    end = start + 1
    while sent.joins_digits(end):
        end += 2
    return end


def _is_year_like(text: str) -> bool:
    return len(text) == 4 and text.isdigit() and 1000 <= int(text) <= 2099


def _amounts(sent: Sentence) -> list[Value]:
    """Amounts with a unit ("5 %", "$ 4.5 billion", "$ 22.83", "12 people", "two men")."""
    out, i = [], 0
    while i < len(sent):
        start = i
        currency = ""
        while sent.word(i) in CURRENCY:
            currency += sent.word(i)
            i += 1
        low = sent.low(i)
        if (
            not currency
            and low in COUNT_WORDS
            and sent.is_word(i)
            and looks_plural(sent, i + 1)
            and sent.is_free(i + 1)
        ):
            out.append(Value(start, i + 2, (i, i + 1), ("count-word",)))
            i += 2
            continue
        end = _digits_end(sent, i)
        if end == i:
            i = max(i, start + 1) if not currency else i
            continue
        number = sent.substring(i, end)
        before = _char_before(sent, i)
        after = _char_after(sent, end - 1)
        fraction = sent.word(end) == "/" or sent.word(i - 1) == "/" or sent.word(end).isdigit()
        glued = (
            (not currency and (before in GLUE_BEFORE or before.isalnum()))
            or after.isalnum()
            or after in "-/:"
            or (after == "." and sent.word(end + 1)[:1].isdigit())
        )
        if fraction or glued or _is_year_like(number) or sent.low(i - 1) in ("no", "nos", "no."):
            i = end
            continue
        unit = sent.low(end)
        if unit in UNIT_WORDS:
            unit_end = end + 1
            while sent.low(unit_end) in UNIT_WORDS:
                unit_end += 1
            kind = (currency, *sent.lows[end:unit_end])
        elif currency:
            unit_end, kind = end, (currency,)
        elif (
            "." not in number
            and "," not in number
            and int(number) >= 2
            and looks_plural(sent, end)
            and sent.is_free(end)
        ):
            unit_end, kind = end + 1, ("count",)
        else:
            i = end
            continue
        out.append(Value(start, unit_end, (i, end), kind))
        i = unit_end
    return out


def _dates(sent: Sentence) -> list[Value]:
    """Weekday, month and year names, each swapped only with one of its own kind."""
    out = []
    for i, low in enumerate(sent.lows):
        if not sent.is_free(i) or not sent.word(i)[:1].isupper() and not low.isdigit():
            continue
        if low in WEEKDAYS:
            out.append(Value(i, i + 1, (i, i + 1), ("weekday",)))
        elif low in MONTH_NAMES and (
            sent.word(i + 1).isdigit()
            or sent.low(i - 1)
            in ("in", "since", "until", "by", "from", "of", "early", "late", "mid", "last", "next", "this", "through")
        ):
            out.append(Value(i, i + 1, (i, i + 1), ("month",)))
        elif (
            _is_year_like(low)
            and sent.low(i - 1) in ("in", "since", "until", "by", "of", "fiscal")
            and sent.word(i - 1) != ","
            and not sent.word(i - 2).isdigit()
        ):
            out.append(Value(i, i + 1, (i, i + 1), ("year",)))
    return out


def _list_or_range(sent: Sentence, a: Value, b: Value) -> bool:
    """The two values form one list or span, where their order carries no binding."""
    gap = sent.lows[a.end : b.start]
    if all(t in LIST_GAP for t in gap):
        return True
    window = sent.lows[max(a.start - 3, 0) : a.start]
    if any(t in RANGE_OPENERS for t in window) and any(t in SPAN_INSIDE for t in gap[:6]):
        return True
    return False


def _swap_values(sent: Sentence, a: Value, b: Value, what: str) -> Edit | None:
    old_a, old_b = sent.substring(*a.core), sent.substring(*b.core)
    if old_a.lower() == old_b.lower():
        return None
    (sa, ea), (sb, eb) = sent.span(*a.core), sent.span(*b.core)
    words = a.kind == ("count-word",)  # "Two men ... three women": case follows the position
    new_a, new_b = (old_b.lower(), old_a.lower()) if words else (old_b, old_a)
    return Edit(((sa, ea, new_a), (sb, eb, new_b)), f"swapped {what} '{old_a}' and '{old_b}'")


def value_swaps(sent: Sentence) -> list[Edit]:
    """Swap neighbouring values of the same kind that are bound to different slots."""
    edits = []
    for values, what in ((_amounts(sent), "the amounts"), (_dates(sent), "the dates")):
        by_kind: dict[tuple[str, ...], list[Value]] = {}
        for value in values:
            key = ("count",) if value.kind == ("count",) else value.kind
            by_kind.setdefault(key, []).append(value)
        for group in by_kind.values():
            texts = [sent.substring(*v.core).lower() for v in group]
            for a, b in zip(group, group[1:]):
                old = (sent.substring(*a.core).lower(), sent.substring(*b.core).lower())
                # a third "Friday" would make "on Thursday and Friday" read "on Friday and Friday"
                if _list_or_range(sent, a, b) or any(texts.count(t) > 1 for t in old):
                    continue
                edit = _swap_values(sent, a, b, what)
                if edit:
                    edits.append(edit)
    return edits
