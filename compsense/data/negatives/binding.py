"""Binding: the same words, bound differently ("the company hired the consultant" ->
"the consultant hired the company"; "a red cup on a blue box" -> "a blue cup on a red box").

Six patterns, each conservative about where a noun phrase starts and ends:
- active role swap: SUBJECT VERB OBJECT with an asymmetric transitive verb (hire, beat, cause...;
  never symmetric ones like meet or marry, where the swap keeps the meaning);
- passive role swap: "A was hired by B" -> "B was hired by A";
- comparison swap: "A is larger than B" -> "B is larger than A";
- range swap: "from 5 % to 7 %" -> "from 7 % to 5 %" (amounts or names only);
- attribute swap: the adjectives of two different nouns;
- value swap (slots.py): two amounts, weekdays, months or years of one kind trade places
  ("to $ 12 million from $ 10 million", "fell on Monday and rose on Tuesday").
Bare "X and Y" coordinations are never swapped: "cats and dogs" means the same either way.
Swaps that would break agreement ("The dogs chase the cat" -> "The cat chase the dogs") are only
made when both phrases have the same grammatical number.
"""

from __future__ import annotations

from dataclasses import dataclass

from compsense.data.negatives.lexicons import (
    ASYMMETRIC_VERBS,
    AUXILIARIES,
    CLAUSE_OPENERS,
    CONJUNCTIONS,
    DETERMINERS,
    ENGLISH_FUNCTION_WORDS,
    HAVE_FORMS,
    MODALS,
    NOT_NAMES,
    NOUN_LIKE_VERBS,
    PARTICIPLE_TO_BASE,
    PAST_TO_BASE,
    PRE_VERB_ADVERBS,
    PREPOSITIONS,
    REPORTING_FORMS,
    THIRD_TO_BASE,
    VERBS,
)
from compsense.data.negatives.rules import (
    CURRENCY,
    IRREGULAR_PLURALS,
    indefinite_article,
    is_content_word,
    is_finite_verb_form,
    looks_participle,
    looks_plural,
)
from compsense.data.negatives.slots import value_swaps
from compsense.data.negatives.text import Edit, Sentence

SYMMETRIC_VERBS = frozenset("meet marry play face fight join match resemble date tie".split())
PASSIVE_AUX = {"was": "sg", "is": "sg", "were": "pl", "are": "pl"}
# Adjectives of concrete appearance: after a swap they describe the other object just as well.
# Evaluative or idiomatic ones ("long history", "warm welcome", "new economy") are left out.
SWAPPABLE_ADJECTIVES = frozenset(
    """red blue green yellow black white brown orange purple pink grey gray silver golden
    small large big tiny huge wooden metal plastic glass steel paper leather cotton wool
    ceramic""".split()
)
AMOUNT_WORDS = (
    frozenset(
        """% percent per cent million billion trillion thousand cents points pence dollars euros
    pounds degrees""".split()
    )
    | CURRENCY
)
# Past forms that are never participles or nouns ("ran", "went"): a clear sign of a new verb.
UNAMBIGUOUS_PAST = frozenset(past for past, base in PAST_TO_BASE.items() if VERBS[base]["participle"] != past)
CALENDAR_NAMES = frozenset(
    """monday tuesday wednesday thursday friday saturday sunday january february march april may
    june july august september october november december""".split()
)
# What may follow a swapped phrase. Not "of", "by", "and", "or", ",", "who", "that": those
# attach more words to the phrase, which the swap would carry along or tear off.
PHRASE_END_WORDS = (PREPOSITIONS - {"of", "by", "than", "with"}) | frozenset(
    """yesterday today tomorrow last next this earlier later because when while after before as
    overnight again instead""".split()
)
END_PUNCTUATION = frozenset(list(".;:!?)") + ['"', "”", "'"])
# A comma ends a phrase only before a new clause, not before an appositive (", 45 ,", ", who").
AFTER_COMMA = frozenset("and but while although though so as after before when because since yet".split())
# Words before "from ... to ..." that make the range a change or a path, whose direction matters
# ("rose from 5 % to 7 %", "flew from Paris to Rome"); a static span ("priced from $ 5 to $ 9")
# means the same reversed.
DIRECTIONAL_CUES = frozenset(
    """rose rise rises rising fell fall falls falling jumped jump jumps climbed climb dropped drop
    increased increase decreased decrease grew grow slipped slip improved declined cut raised
    lowered reduced boosted up down moved move went go flew fly traveled travelled travel drove
    drive walked sailed flight flights train trains trip route journey road shipped sent
    transferred moving""".split()
)


@dataclass(frozen=True)
class Phrase:
    start: int
    end: int  # exclusive
    kind: str  # "det", "name", "bare"
    number: str | None  # "sg", "pl" or None when unknown


def _head_number(sent: Sentence, start: int, end: int) -> str | None:
    first, head = sent.low(start), sent.low(end - 1)
    if first in ("a", "an", "this", "that", "each", "every", "another"):
        return "sg"
    if first in ("these", "those"):
        return "pl"
    if head in IRREGULAR_PLURALS or looks_plural(sent, end - 1):
        return "pl"
    return None if head.endswith("s") else "sg"


def _is_modifier(sent: Sentence, k: int) -> bool:
    """A word inside a noun phrase: a content word or a name, never a verb form or participle."""
    low = sent.low(k)
    if not sent.is_word(k) or low in ENGLISH_FUNCTION_WORDS or is_finite_verb_form(low):
        return False
    if low in PHRASE_END_WORDS:  # "the bakery last spring"
        return False
    return not low.endswith("ly") and not looks_participle(low) and low not in CALENDAR_NAMES


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


def _clause_has_another_verb(sent: Sentence, end: int) -> bool:
    """A verb later in the same clause means the phrase was not really the object.

    "A mother arrested Saturday in Denver is accused ..." has "arrested" as a participle.
    """
    for k in range(end, len(sent)):
        low = sent.low(k)
        if not sent.word(k)[:1].isalnum() or low in CONJUNCTIONS or low in ("who", "which", "that"):
            return False
        if low in AUXILIARIES or low in UNAMBIGUOUS_PAST:
            return True
    return False


def _is_name_word(sent: Sentence, k: int) -> bool:
    return _is_name(sent, k) and sent.low(k) not in CALENDAR_NAMES


def object_phrase(sent: Sentence, start: int) -> Phrase | None:
    """The noun phrase that starts at `start` and ends at a clean boundary, or None."""
    if sent.low(start) in DETERMINERS:
        end = start + 1
        while end < len(sent) and end - start <= 4 and _is_modifier(sent, end):
            end += 1
        if end > start + 1 and _ends_cleanly(sent, end):
            return Phrase(start, end, "det", _head_number(sent, start, end))
        return None
    if _is_name_word(sent, start):
        end = start + 1
        while end < len(sent) and end - start < 4 and _is_name_word(sent, end):
            end += 1
        if _ends_cleanly(sent, end):
            return Phrase(start, end, "name", None if sent.low(end - 1).endswith("s") else "sg")
        return None
    if looks_plural(sent, start) and _ends_cleanly(sent, start + 1):
        return Phrase(start, start + 1, "bare", "pl")
    if _bare_mass_noun(sent, start) and sent.word(start + 1) == "." and start + 2 >= len(sent):
        return Phrase(start, start + 1, "bare", "sg")  # "Smoking causes cancer."
    return None


def _bare_mass_noun(sent: Sentence, k: int) -> bool:
    """A lone common noun ending the sentence ("cancer"), not a verb, adverb or time word."""
    low = sent.low(k)
    return (
        is_content_word(sent, k)
        and low not in VERBS
        and not is_finite_verb_form(low)
        and low not in PHRASE_END_WORDS
        and not looks_participle(low)
    )


def subject_phrase(sent: Sentence, end: int, object_kind: str) -> Phrase | None:
    """The noun phrase that ends just before `end` and starts a clause, or None.

    A single capitalised word opening the sentence ("Microsoft", "Officials", "Smoking") is a
    name only when the object is a name too; a sentence-initial gerund is a common noun.
    """
    j = end - 1
    first = sent.first_word_index
    k = j
    while k > first and k > j - 3 and _is_name_word(sent, k):
        k -= 1
    if k < j or _is_name_word(sent, j):
        start = (
            k
            if (_is_name_word(sent, k) or (k == first and sent.word(k)[:1].isupper() and sent.low(k) not in NOT_NAMES))
            else k + 1
        )
        if start <= j and _clause_start(sent, start):
            return Phrase(start, end, "name", None if sent.low(j).endswith("s") else "sg")
    if j == first and sent.word(j)[:1].isupper() and sent.low(j) not in NOT_NAMES:
        if sent.low(j).endswith("ing") and sent.low(j) not in VERBS:
            return Phrase(j, end, "bare", "sg")
        if object_kind == "name" and not sent.low(j).endswith("s"):
            return Phrase(j, end, "name", "sg")
        return None
    k = j
    while k > j - 4 and _is_modifier(sent, k) and sent.low(k - 1) not in DETERMINERS:
        k -= 1
    if sent.low(k - 1) in DETERMINERS and _is_modifier(sent, j) and _clause_start(sent, k - 1):
        return Phrase(k - 1, end, "det", _head_number(sent, k - 1, end))
    return None


def _clause_start(sent: Sentence, start: int) -> bool:
    before = sent.low(start - 1)
    return start == sent.first_word_index or before in CLAUSE_OPENERS or before in REPORTING_FORMS


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


def _verb_group(sent: Sentence, i: int) -> tuple[int, str | None] | None:
    """Where the verb group of an asymmetric transitive verb at i starts, and the number its
    subject must have ("sg", "pl" or None for any); None if i holds no such finite verb.

    The group is the verb plus up to three modals, forms of "have" and adverbs before it
    ("watched", "never watched", "will never watch", "has always watched", "would have beaten"),
    so a swap trades the two noun phrases around it and leaves those words in place.
    """
    start = i
    while i - start < 3 and (
        sent.low(start - 1) in MODALS or sent.low(start - 1) in HAVE_FORMS or sent.low(start - 1) in PRE_VERB_ADVERBS
    ):
        start -= 1
    auxes = [sent.low(k) for k in range(start, i) if sent.low(k) in MODALS or sent.low(k) in HAVE_FORMS]
    low = sent.low(i)
    if not auxes:
        if low in PAST_TO_BASE and PAST_TO_BASE[low] in ASYMMETRIC_VERBS:
            return start, None
        if low in THIRD_TO_BASE and THIRD_TO_BASE[low] in ASYMMETRIC_VERBS - NOUN_LIKE_VERBS:
            return start, "sg"
        return None
    if auxes[-1] in MODALS:
        return (start, None) if len(auxes) == 1 and low in ASYMMETRIC_VERBS else None
    if len(auxes) > 2 or (len(auxes) == 2 and (auxes[0] not in MODALS or auxes[1] != "have")):
        return None
    if PARTICIPLE_TO_BASE.get(low) not in ASYMMETRIC_VERBS:
        return None
    return start, {"has": "sg", "have": "pl"}.get(auxes[0])  # "had" and "will have" agree with both


def _active_swaps(sent: Sentence) -> list[Edit]:
    """SUBJECT VERB OBJECT -> OBJECT VERB SUBJECT for asymmetric transitive verbs."""
    edits = []
    for i in range(len(sent)):
        group = _verb_group(sent, i) if sent.is_word(i) else None
        if group is None:
            continue
        subject_end, number = group
        obj = object_phrase(sent, i + 1)
        if obj is None or _clause_has_another_verb(sent, obj.end):
            continue
        subj = subject_phrase(sent, subject_end, obj.kind)
        if subj is None or (number is not None and not (subj.number == obj.number == number)):
            continue
        edit = _swap(sent, subj, obj, "the roles of")
        if edit:
            edits.append(edit)
    return edits


def _passive_swaps(sent: Sentence) -> list[Edit]:
    """'A was hired by B' -> 'B was hired by A', keeping the auxiliary's number right."""
    edits = []
    for i, low in enumerate(sent.lows):
        if low != "by" or i < 3:
            continue
        base = PARTICIPLE_TO_BASE.get(sent.low(i - 1))
        if base is None or base in SYMMETRIC_VERBS:
            continue
        aux_index = i - 3 if sent.low(i - 2) == "been" else i - 2
        aux = sent.low(aux_index)
        number = PASSIVE_AUX.get(aux) or {"has": "sg", "have": "pl", "had": None}.get(aux, "none")
        if number == "none" or (sent.low(i - 2) == "been") != (aux in ("has", "have", "had")):
            continue
        agent = object_phrase(sent, i + 1)
        if agent is None or _clause_has_another_verb(sent, agent.end):
            continue
        patient = subject_phrase(sent, aux_index, agent.kind)
        if patient is None or (number is not None and not (agent.number == patient.number == number)):
            continue
        edit = _swap(sent, patient, agent, "the roles of")
        if edit:
            edits.append(edit)
    return edits


def _comparison_swaps(sent: Sentence) -> list[Edit]:
    """'A is larger than B' -> 'B is larger than A' (also 'more expensive than', 'better than')."""
    edits = []
    for i, low in enumerate(sent.lows):
        if low != "than" or i < 3:
            continue
        adjective = i - 1
        if sent.low(adjective - 1) in ("more", "less"):
            adjective -= 1
        elif not (sent.low(adjective).endswith("er") or sent.low(adjective) in ("better", "worse")):
            continue
        aux = sent.low(adjective - 1)
        if aux not in PASSIVE_AUX:
            continue
        other = object_phrase(sent, i + 1)
        if other is None or _clause_has_another_verb(sent, other.end):
            continue
        subject = subject_phrase(sent, adjective - 1, other.kind)
        if subject is None or not (subject.number == other.number == PASSIVE_AUX[aux]):
            continue
        edit = _swap(sent, subject, other, "the sides of the comparison")
        if edit:
            edits.append(edit)
    return edits


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


def _range_swaps(sent: Sentence) -> list[Edit]:
    """'from 5 % to 7 %' -> 'from 7 % to 5 %', 'from London to Paris' -> 'from Paris to London'."""
    edits = []
    for i, low in enumerate(sent.lows):
        if low != "from" or not any(sent.low(k) in DIRECTIONAL_CUES for k in range(max(i - 6, 0), i)):
            continue
        ends = _range_ends(sent, i)
        edit = ends and _swap(sent, *ends, "the ends of the range")
        if edit:
            edits.append(edit)
    return edits


def _attributive_adjectives(sent: Sentence) -> list[int]:
    """Positions of swappable adjectives directly before a noun ("the red cup")."""
    out = []
    for i, low in enumerate(sent.lows):
        if low not in SWAPPABLE_ADJECTIVES or not sent.word(i).islower() or not sent.is_word(i):
            continue
        noun = i + 1
        if (
            is_content_word(sent, noun)
            and sent.low(noun) not in SWAPPABLE_ADJECTIVES
            and not is_finite_verb_form(sent.low(noun))
        ):
            out.append(i)
    return out


def _adjective_swaps(sent: Sentence) -> list[Edit]:
    """Swap the adjectives of two different nouns: 'a red cup on a blue box' -> 'a blue cup ...'."""
    positions = _attributive_adjectives(sent)
    edits = []
    for a, b in zip(positions, positions[1:]):
        if sent.low(a) == sent.low(b) or sent.low(a + 1) == sent.low(b + 1):
            continue
        old_a, old_b = sent.word(a), sent.word(b)
        edit = Edit(
            (*_adjective_replacement(sent, a, old_b), *_adjective_replacement(sent, b, old_a)),
            f"swapped the adjectives '{old_a} {sent.word(a + 1)}' / '{old_b} {sent.word(b + 1)}'",
        )
        edits.append(edit)
    return edits


def _adjective_replacement(sent: Sentence, i: int, new: str) -> tuple[tuple[int, int, str], ...]:
    """Put `new` at i, turning a preceding "a"/"an" into the article `new` needs."""
    if sent.low(i - 1) in ("a", "an") and indefinite_article(new) != sent.low(i - 1):
        return (sent.replace(i - 1, i, indefinite_article(new)), sent.replace(i, i + 1, new))
    return (sent.replace(i, i + 1, new),)


def binding_edits(sent: Sentence) -> list[Edit]:
    return (
        _active_swaps(sent)
        + _passive_swaps(sent)
        + _comparison_swaps(sent)
        + _range_swaps(sent)
        + _adjective_swaps(sent)
        + value_swaps(sent)
    )
