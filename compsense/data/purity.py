"""An independent check of which family a near-miss pair belongs to, and how pure each family is.

Why: the near-miss generator (compsense.data.negatives) labels each (original, near_miss) pair with
the family of the edit it meant to make. A parser slip can make a "binding" pair that really changed a
number, or a "spatial" pair that flipped a price's "up" to "down". This module judges each pair again
from the two token sequences alone and says which family the edit looks like, so a table can show,
per family, source and split, how many pairs are what their label says.

Independence: it shares no code, word list or parser with compsense.data.negatives (it imports
nothing from it) and uses no spaCy: lowercase regex tokens compared with difflib.SequenceMatcher and
its own small word lists below. A mistake of the generator's parser cannot repeat itself here.

Tokens: lowercase words (inner hyphens kept), numbers (3.5, 1,000, 5th), 's, $, %, punctuation;
"didn't", "did not", MRPC's "didn 't" and "cannot"/"can't" all become "... not". The two token lists
are compared with difflib.SequenceMatcher; its non-equal opcodes are the changed regions.

The rules, in order (the first that fires decides):
1. negation: a negation cue (not, no, never, none, nobody, nothing, nowhere, neither, nor, without)
   added, removed or exchanged for another (so "no longer" and "all" -> "none" are negation too), a
   word against itself with a negating prefix (happy -> unhappy, legal -> illegal, toxic ->
   non-toxic), or a negative verb before "to"/"that" added or removed (declined to, denied that).
2. the same tokens rearranged: the exchanged spans X ... Y are found. Numeric when a span holds a
   number, year, month, weekday, currency sign, % or amount word; binding when X and Y are single words
   before two different head words (a red cup on a blue plate: modifiers); "other" when only "and"/"or"
   stands between them (conjuncts reordered, meaning kept); spatial when a spatial word (left, above,
   behind, closer, in front of, ...) or a verb of position with "on"/"in"/"at" ("sits on") stands
   between them; temporal when
   before/after/until/since/... stands between them; otherwise binding (a role swap: "the guard was
   hit by the thief"). Two adjacent spans transposed are a move: negation, numeric or quantifier by
   what moved, else "other".
3-7. each changed region is judged by the first rule that fits:
   3 numeric: only numbers, number words, ordinals, fractions, months, weekdays or amounts changed;
   4 spatial: a spatial word replaced by another (left/right, on/under, in front of/behind, north/
     south); up/down only before a determiner and away from numbers, over/under/above/below only when
     no amount follows;
   5 temporal: before/after, first/last, yesterday/tomorrow, begin/end, former/current, daily/weekly,
     or past <-> future ("was" -> "will be");
   6 comparative: rose/fell, more/less, higher/lower, import/export, gain/loss, up/down by an amount
     or after a trend verb, above/below before an amount, most/least, any two forms of a gradable
     adjective (strong/weaker/cheapest), other -er/-est pairs before "than";
   7 quantifier: all/some/every/each/few/many/most/several/both/either/..., at least/at most,
     over/under before an amount.
   A word counts only when the two sentences hold it a different number of times, so a word that
   merely moved between regions is no change. Regions that only change an article, an auxiliary,
   punctuation or a plural ending (agreement with the edit) are ignored. When every other region is
   judged and all agree, that is the family; otherwise the pair is "other" (mixed edits).
8. otherwise "other", the reason naming the changed tokens.
"""

from __future__ import annotations

import re
from collections import Counter
from difflib import SequenceMatcher

import pandas as pd

FAMILY_JUDGED = ("negation", "binding", "spatial", "numeric", "temporal", "comparative", "quantifier", "other")

# Rewrites applied before tokenizing, so "didn't" and "did not" are the same tokens.
# Also the spaced forms of MRPC ("doesn 't") and the Penn Treebank ("does n't", "ca n't").
CONTRACTIONS = (
    (r"\bcannot\b", "can not"),
    (r"\bca ?n ?'t\b", "can not"),
    (r"\bwo ?n ?'t\b", "will not"),
    (r"\bsha ?n ?'t\b", "shall not"),
    (r"\bai ?n ?'t\b", "is not"),
    (r"n ?'t\b", " not"),
)
# Numbers (decimals, thousands commas, 5th, 1990s), words (with inner hyphens), 's, signs, punctuation.
TOKEN_RE = re.compile(r"\d+(?:[.,]\d+)*(?:[^\W\d_]+)?|[^\W\d_]+(?:-[^\W\d_]+)*|'[^\W\d_]+|[^\w\s]")

NEGATION_CUES = frozenset("not no never none nobody nothing nowhere neither nor without".split())
# Verbs that negate the clause they introduce ("declined to comment", "denied that ...").
NEGATIVE_VERBS = frozenset(
    "refuse refuses refused refusing decline declines declined declining fail fails failed failing deny denies "
    "denied denying neglect neglects neglected".split()
)
NEGATING_PREFIXES = ("non-", "non", "un", "in", "im", "il", "ir", "dis")
# Words that start like a negating prefix + a word, but are not its negation.
PREFIX_FALSE_FRIENDS = frozenset(
    "inside inform income input invest intend install insight inset inward impart import impress impose implant "
    "discover dismiss display discount dispatch disease until under union".split()
)

CURRENCY = frozenset("$ € £ ¥".split())
AMOUNT_WORDS = frozenset(
    "hundred hundreds thousand thousands million millions billion billions trillion trillions "
    "percent per-cent % dozen dozens bn mn".split()
)
NUMBER_WORDS = frozenset(
    "zero one two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen "
    "sixteen seventeen eighteen nineteen twenty thirty forty fifty sixty seventy eighty ninety once twice thrice "
    "half halves quarter quarters thirds fifths".split()
)
ORDINALS = frozenset(
    "second third fourth fifth sixth seventh eighth ninth tenth eleventh twelfth thirteenth fourteenth "
    "fifteenth sixteenth seventeenth eighteenth nineteenth twentieth".split()
)
MONTHS = frozenset(
    "january february march april may june july august september october november december "
    "jan feb mar apr jun jul aug sep sept oct nov dec".split()
)
# Month names that are also common words: months only when the other side or a neighbour is a date.
AMBIGUOUS_MONTHS = frozenset("may march mar jan sep dec".split())
WEEKDAYS = frozenset("monday tuesday wednesday thursday friday saturday sunday".split())

# Spatial words and phrases. Strong ones are spatial on their own; weak ones (plain prepositions) only
# against a strong one or their listed opposite.
SPATIAL_STRONG = (
    "left right above below over under beneath underneath behind beside besides atop near nearby far "
    "closer farther further nearer closest farthest furthest nearest north south east west northern "
    "southern eastern western northeast northwest southeast southwest inside outside into onto toward "
    "towards top bottom upstairs downstairs uphill downhill upward upwards downward downwards ascending "
    "descending indoors outdoors inner outer upper front rear leftmost rightmost left-hand right-hand "
    "clockwise counterclockwise anticlockwise beyond within north-west north-east south-west south-east upstream "
    "downstream uptown downtown inbound outbound overhead underground forward forwards backward backwards ahead "
    "interior exterior"
).split() + [
    "in front of",
    "next to",
    "on top of",
    "across from",
    "ahead of",
    "far from",
    "close to",
    "away from",
    "out of",
]
SPATIAL_WEAK = "on in off out up down back to from at".split()
SPATIAL_WEAK_PAIRS = frozenset(frozenset(p) for p in [("on", "off"), ("in", "out"), ("up", "down"), ("to", "from")])
SPATIAL_PAIRS = frozenset(frozenset(p) for p in [("upper", "lower")])
# Spatial words that, next to an amount, are a trend or a bound instead (rules 6 and 7).
AMOUNT_SENSITIVE = frozenset("up down over under above below".split())
# A spatial relation between two exchanged spans (rule 2).
SPATIAL_SWAP_CUES = (
    "left right above below over under beneath underneath behind beside near far closer farther nearer "
    "further north south east west inside outside into onto toward towards atop"
).split() + ["in front of", "next to", "on top of", "across from"]
# "X sits on Y", "X is in Y": a plain preposition after a verb of position links two places.
POSITION_VERBS = frozenset(
    "is are was were be been sit sits sat sitting stand stands stood standing lie lies lay lying "
    "rest rests rested resting hang hangs hung hanging perch perched park parked lean leans leaning".split()
)
POSITION_PREPOSITIONS = frozenset("on in at".split())
TEMPORAL_SWAP_CUES = "before after earlier later until till since prior preceded followed".split()
# Single words whose exchange before two different head words is a modifier swap (binding), even
# with a spatial word between them ("a red cup on a blue plate").
MODIFIER_WORDS = frozenset(
    "red blue green yellow black white brown gray grey orange purple pink golden silver big small large "
    "tiny huge little tall short long wide narrow thick thin old young new hot cold warm cool wooden "
    "metal plastic glass stone paper leather cotton open closed empty full wet dry clean dirty broken "
    "happy sad heavy light dark bright soft hard fast slow round square striped spotted".split()
)
# Words between two exchanged spans that make the exchange an order change of conjuncts.
CONJUNCTION_GLUE = frozenset("and or , the a an & as well".split())

TEMPORAL_TERMS = (
    "before after earlier later first last yesterday tomorrow today tonight past future previous next "
    "since until till begin begins began begun beginning end ends ended ending start starts started "
    "starting finish finishes finished finishing early late earliest latest ago formerly soon already "
    "morning afternoon evening night dawn dusk former current present recent recently daily weekly monthly "
    "yearly annual annually quarterly hourly nightly spring summer fall autumn winter"
).split() + ["prior to", "from now", "used to"]
FUTURE_CUES = frozenset("will shall 'll".split())
PAST_CUES = frozenset("was were had did".split())
MODALS = frozenset("can could may might must should would".split())

COMPARATIVE_TERMS = (
    "rose fell rise fall rises falls risen fallen rising falling increase increases increased increasing "
    "decrease decreases decreased decreasing grow grows grew grown growing shrink shrinks shrank shrunk "
    "shrinking gain gains gained loss losses lose loses lost profit surplus deficit higher lower high low "
    "more less fewer larger smaller bigger better worse best worst most least import imports imported "
    "importer importers export exports exported exporter exporters expand expands expanded contract "
    "strengthen strengthened weaken weakened climb climbed drop dropped expensive maximum minimum max min "
    "positive negative good bad superior inferior major minor difficult win wins won winning losing profits"
).split()
# Gradable adjectives: any two different forms (strong, weaker, cheapest) are a flipped scale.
SCALE_ADJECTIVES = (
    "fast slow cheap strong weak large small big high low long short tall wide narrow heavy hot cold warm cool "
    "old young great rich poor hard easy tight loose deep shallow thick thin safe quick sharp steep soft loud quiet"
).split()
TREND_VERBS = frozenset("went go goes gone going moved move moves edged ticked ticks headed trended".split())
# Linkers after which a different -er word is a comparative adjective, not a noun like "teacher".
COMPARATIVE_LEADS = frozenset(
    "much even far slightly somewhat bit lot getting got became become becomes grew is are was were be "
    "been feel feels felt look looks looked seem seems seemed the".split()
)
NOT_COMPARATIVE_ER = frozenset(
    "never over under after other water number ever however whether either neither rather together "
    "whatever whenever another order paper matter member letter".split()
)

QUANTIFIER_TERMS = (
    "all some every each few many most several both either any only half much majority minority "
    "everyone someone everybody somebody everything something anyone anybody anything always usually "
    "often sometimes rarely seldom occasionally exactly nearly almost"
).split() + ["a few", "a lot of", "lots of", "plenty of", "at least", "at most", "all of", "some of"]
AMOUNT_BOUNDS = frozenset("over under".split())
# Words that may stand between a bound (over, above) and its amount.
AMOUNT_LEADS = frozenset("the a an about around roughly nearly almost some just".split())

# Tokens a near-miss may change only to agree with its real edit.
GLUE = frozenset("a an the is are was were has have had does do did of 's , this these that those it they".split())

# Words that cannot be the head noun after a modifier (see _modifier_swap).
FUNCTION_WORDS = (
    frozenset(
        "of in on at to from by with for into onto over under near about against between among through while "
        "and or but than that which who whom whose as is are was were be been being has have had do does did "
        "will would can could may might must should shall 's not".split()
    )
    | GLUE
)

DETERMINERS = frozenset("the a an this that these those his her its their my our your one".split())


def _phrases(words) -> frozenset[tuple[str, ...]]:
    """Word lists as a set of token tuples, for phrase look-ups."""
    return frozenset(tuple(w.split()) for w in words)


def _degrees(adjective: str) -> set[str]:
    """An adjective with its comparative and superlative (big, bigger, biggest; easy, easier, easiest)."""
    if adjective.endswith("e"):
        stem = adjective[:-1]
    elif adjective.endswith("y"):
        stem = adjective[:-1] + "i"
    elif adjective[-1] not in "aeiouwy" and adjective[-2] in "aeiou" and adjective[-3] not in "aeiou":
        stem = adjective + adjective[-1]
    else:
        stem = adjective
    return {adjective, stem + "er", stem + "est"}


SPATIAL_VOCAB = _phrases(SPATIAL_STRONG + SPATIAL_WEAK + ["lower"])
SPATIAL_SWAP_VOCAB = _phrases(SPATIAL_SWAP_CUES)
TEMPORAL_VOCAB = _phrases(TEMPORAL_TERMS)
TEMPORAL_SWAP_VOCAB = _phrases(TEMPORAL_SWAP_CUES)
COMPARATIVE_VOCAB = _phrases(COMPARATIVE_TERMS + sorted(set().union(*map(_degrees, SCALE_ADJECTIVES))))
QUANTIFIER_VOCAB = _phrases(QUANTIFIER_TERMS)


def tokenize(text: str) -> list[str]:
    """Lowercase tokens: words, numbers (with decimals and commas), 's, %, currency signs, punctuation."""
    text = str(text).lower().replace("\u2019", "'").replace("\u2018", "'")
    for pattern, replacement in CONTRACTIONS:
        text = re.sub(pattern, replacement, text)
    return TOKEN_RE.findall(text)


def _quote(tokens) -> str:
    """Tokens as one quoted string for a reason."""
    return "'" + " ".join(tokens) + "'"


def _is_number_word(token: str) -> bool:
    """'seven', 'twenty-one', 'third' and friends."""
    parts = token.split("-")
    return all(p in NUMBER_WORDS or p in ORDINALS for p in parts)


def _is_numeric(token: str, neighbours=()) -> bool:
    """A digit token, number word, ordinal, month, weekday, currency sign, % or amount word.

    Ambiguous month names (may, march) count only beside another numeric token.
    """
    if token[:1].isdigit() or token in CURRENCY or token in AMOUNT_WORDS or token in WEEKDAYS:
        return True
    if _is_number_word(token):
        return True
    if token in MONTHS:
        return token not in AMBIGUOUS_MONTHS or any(_is_numeric(n) for n in neighbours if n not in AMBIGUOUS_MONTHS)
    return False


def _near_amount(tokens: list[str], start: int, end: int, before: int = 2, after: int = 3) -> bool:
    """Whether a numeric token lies within `before` tokens before or `after` tokens after tokens[start:end]."""
    window = tokens[max(0, start - before) : start] + tokens[end : end + after]
    return any(_is_numeric(t) for t in window)


def _before_amount(tokens: list[str], end: int) -> bool:
    """Whether an amount follows position `end` ('over $5', 'below 3%', 'above the 9,000 mark').

    One approximator or article may come first; a number opening a compound ('the 64-bit chip') is no amount.
    """
    pos = end + 1 if tokens[end : end + 1] and tokens[end] in AMOUNT_LEADS else end
    if pos >= len(tokens) or not _is_numeric(tokens[pos]):
        return False
    return tokens[pos + 1 : pos + 2] != ["-"]


def _find_terms(tokens: list[str], start: int, end: int, vocab) -> list[tuple[str, int, int]]:
    """(phrase, start, end) for every phrase of `vocab` in `tokens` that covers a token of [start, end)."""
    found = []
    longest = max((len(p) for p in vocab), default=1)
    for size in range(longest, 0, -1):
        for pos in range(max(0, start - size + 1), min(end, len(tokens) - size + 1)):
            phrase = tuple(tokens[pos : pos + size])
            inside = any(s <= pos < e or pos <= s < pos + size for _, s, e in found)
            if phrase in vocab and not inside:
                found.append((" ".join(phrase), pos, pos + size))
    return sorted(found, key=lambda f: f[1])


class _Diff:
    """Two token sequences and the regions where they differ (SequenceMatcher opcodes)."""

    def __init__(self, original: str, near_miss: str):
        self.a = tokenize(original)
        self.b = tokenize(near_miss)
        matcher = SequenceMatcher(None, self.a, self.b, autojunk=False)
        self.changes = [(i1, i2, j1, j2) for tag, i1, i2, j1, j2 in matcher.get_opcodes() if tag != "equal"]

    def removed(self, change) -> list[str]:
        """Tokens of the original in a changed region."""
        return self.a[change[0] : change[1]]

    def added(self, change) -> list[str]:
        """Tokens of the near-miss in a changed region."""
        return self.b[change[2] : change[3]]

    def describe(self, change) -> str:
        """'x' -> 'y', added 'y' or removed 'x'."""
        removed, added = self.removed(change), self.added(change)
        if not removed:
            return f"added {_quote(added)}"
        if not added:
            return f"removed {_quote(removed)}"
        return f"{_quote(removed)} -> {_quote(added)}"


# Rule 1: negation -----------------------------------------------------------------------------------


def _affix_negated(word: str, base: str) -> bool:
    """Whether `word` is `base` with a negating prefix (unhappy/happy, illegal/legal, non-toxic/toxic)."""
    if len(base) < 3 or word in PREFIX_FALSE_FRIENDS:
        return False
    return any(word == prefix + base for prefix in NEGATING_PREFIXES)


def _negation(diff: _Diff) -> str | None:
    """The reason when a negation cue or a negating prefix was added, removed or exchanged."""
    only_a = Counter(diff.a) - Counter(diff.b)
    only_b = Counter(diff.b) - Counter(diff.a)
    removed = [t for t in only_a if t in NEGATION_CUES]
    added = [t for t in only_b if t in NEGATION_CUES]
    if removed and added:
        return f"negation {_quote(removed)} -> {_quote(added)}"
    if added:
        return f"added negation {_quote(added)}"
    if removed:
        return f"removed negation {_quote(removed)}"
    for x in only_a:
        for y in only_b:
            if _affix_negated(y, x) or _affix_negated(x, y):
                return f"negating prefix '{x}' -> '{y}'"
    for tokens, only, verb in ((diff.a, only_a, "removed"), (diff.b, only_b, "added")):
        for i, t in enumerate(tokens):
            if t in only and t in NEGATIVE_VERBS and tokens[i + 1 : i + 2] in (["to"], ["that"]):
                return f"{verb} negative verb '{t} {tokens[i + 1]}'"
    return None


# Rule 2: the same tokens rearranged -------------------------------------------------------------------


def _swap_split(am: list[str], bm: list[str]) -> tuple[int, int] | None:
    """(len X, len Y) with am = X M Y and bm = Y M X, the longest M first; None when no such split."""
    n = len(am)
    best = None
    for lx in range(1, n):
        if am[:lx] != bm[n - lx :]:
            continue
        for ly in range(1, n - lx + 1):
            if am[n - ly :] == bm[:ly] and am[lx : n - ly] == bm[ly : n - lx]:
                if best is None or lx + ly < sum(best):
                    best = (lx, ly)
                break
    return best


def _has_cue(tokens: list[str], vocab) -> str | None:
    """The first phrase of `vocab` in `tokens`, or None."""
    terms = _find_terms(tokens, 0, len(tokens), vocab)
    return terms[0][0] if terms else None


def _modifier_swap(x: list[str], y: list[str], head_x: str, head_y: str) -> bool:
    """Whether single words x and y, each before its own different head word, are exchanged modifiers.

    'a red cup on a blue plate': red and blue sit before the content words cup and plate. With the same
    head ('the small box left of the big box') the exchange moves the two boxes, as a role swap does.
    """
    if len(x) != 1 or len(y) != 1 or head_x == head_y:
        return False
    if x[0] in MODIFIER_WORDS and y[0] in MODIFIER_WORDS:
        return True
    return all(h[:1].isalpha() and h not in FUNCTION_WORDS for h in (head_x, head_y))


def _position_cue(middle: list[str]) -> str:
    """'sits on' / 'is in' between the spans: a locative relation with a plain preposition."""
    for verb, prep in zip(middle, middle[1:]):
        if verb in POSITION_VERBS and prep in POSITION_PREPOSITIONS:
            return f"{verb} {prep}"
    return ""


def _judge_swap(a: list[str], start: int, x: list[str], middle: list[str], y: list[str]) -> tuple[str, str]:
    """Family and reason for spans x and y exchanged around `middle`, x starting at a[start]."""
    swapped = f"swapped {_quote(x)} <-> {_quote(y)}"
    end = start + len(x) + len(middle) + len(y)
    if any(_is_numeric(t, x + y) for t in x + y):
        return "numeric", swapped
    head_x, head_y = (middle[:1] or [""])[0], (a[end : end + 1] or [""])[0]
    if _modifier_swap(x, y, head_x, head_y):
        return "binding", swapped + (" (modifiers)" if x[0] in MODIFIER_WORDS and y[0] in MODIFIER_WORDS else "")
    if all(t in CONJUNCTION_GLUE for t in middle) and set(middle) & {"and", "or", "&", ","}:
        return "other", f"{swapped} (conjuncts: order only)"
    # Only a relation word between the spans links them: "into" after the second span is where a
    # role swap's action goes ("The egg breaks a woman into a pan" is a role swap).
    cue = _has_cue(middle, SPATIAL_SWAP_VOCAB) or _position_cue(middle)
    if cue:
        return "spatial", f"{swapped} around '{cue}'"
    cue = _has_cue(middle, TEMPORAL_SWAP_VOCAB)
    if cue:
        return "temporal", f"{swapped} around '{cue}'"
    return "binding", swapped


def _rearranged(diff: _Diff) -> tuple[str, str] | None:
    """Rule 2: family and reason when the near-miss has exactly the original's tokens in another order."""
    a, b = diff.a, diff.b
    if a == b or Counter(a) != Counter(b):
        return None
    p = 0
    while a[p] == b[p]:
        p += 1
    s = 0
    while a[-1 - s] == b[-1 - s]:
        s += 1
    am, bm = a[p : len(a) - s], b[p : len(b) - s]
    split = _swap_split(am, bm)
    if split is None:
        if any(_is_numeric(t, am) for t in am):
            return "numeric", f"rearranged {_quote(am)} -> {_quote(bm)}"
        return "binding", f"rearranged {_quote(am)} -> {_quote(bm)}"
    lx, ly = split
    x, middle, y = am[:lx], am[lx : len(am) - ly], am[len(am) - ly :]
    if not middle:  # two adjacent spans transposed: something moved, no roles exchanged
        moved = x if len(x) <= len(y) else y
        if set(moved) & NEGATION_CUES:
            return "negation", f"moved negation {_quote(moved)}"
        if any(_is_numeric(t, am) for t in moved):
            return "numeric", f"moved {_quote(moved)}"
        if _has_cue(moved, QUANTIFIER_VOCAB):
            return "quantifier", f"moved quantifier {_quote(moved)}"
        return "other", f"moved {_quote(moved)} (order only)"
    return _judge_swap(a, p, x, middle, y)


# Rules 3-7: one changed region at a time -----------------------------------------------------------


def _numeric_change(diff: _Diff, change) -> str | None:
    """Rule 3: only numbers, number words, ordinals, months, weekdays or amounts changed."""
    removed, added = diff.removed(change), diff.added(change)
    tokens = [t for t in removed + added if t not in {"and", "-", ",", "a", "an", "of", "times"}]
    if tokens and all(_is_numeric(t, removed + added) for t in tokens):
        return f"number {diff.describe(change)}"
    return None


def _spatial_terms(tokens: list[str], start: int, end: int) -> list[str]:
    """Spatial phrases covering tokens[start:end], less those that act on an amount or lack an object."""
    terms = []
    for term, s, e in _find_terms(tokens, start, end, SPATIAL_VOCAB):
        if term in ("up", "down") and (_near_amount(tokens, s, e, before=1, after=2) or tokens[e : e + 1] == []):
            continue
        if term in ("up", "down") and tokens[e] not in DETERMINERS:
            continue
        if term in AMOUNT_SENSITIVE and _before_amount(tokens, e):
            continue
        terms.append(term)
    return terms


def _temporal_terms(tokens: list[str], start: int, end: int) -> list[str]:
    """Time words covering tokens[start:end]; 'next to' and 'walked past' are places, not times."""
    terms = []
    for term, s, e in _find_terms(tokens, start, end, TEMPORAL_VOCAB):
        if term == "next" and tokens[e : e + 1] == ["to"]:
            continue
        if term == "past" and (not s or tokens[s - 1] not in DETERMINERS):
            continue
        terms.append(term)
    return terms


def _scale_terms(tokens: list[str], start: int, end: int) -> list[str]:
    """Scale words covering tokens[start:end]: rose/fell, more/less, up/down by an amount, above 5%."""
    terms = []
    for term, s, _ in _find_terms(tokens, start, end, COMPARATIVE_VOCAB):
        if not (term in ("most", "least") and s and tokens[s - 1] == "at"):  # "at most" is a quantifier
            terms.append(term)
    for term, s, e in _find_terms(tokens, start, end, _phrases(AMOUNT_SENSITIVE)):
        if term in ("up", "down") and (_near_amount(tokens, s, e) or (s and tokens[s - 1] in TREND_VERBS)):
            terms.append(term)
        elif term in ("above", "below") and _before_amount(tokens, e):
            terms.append(term)
    return terms


def _quantifier_terms(tokens: list[str], start: int, end: int) -> list[str]:
    """Quantifiers covering tokens[start:end], with over/under only before an amount."""
    terms = [t for t, _, _ in _find_terms(tokens, start, end, QUANTIFIER_VOCAB)]
    terms += [t for t, _, e in _find_terms(tokens, start, end, _phrases(AMOUNT_BOUNDS)) if _before_amount(tokens, e)]
    return terms


def _flip(diff: _Diff, change, find) -> tuple[list[str], list[str]]:
    """The terms `find` sees in a changed region, original's side and near-miss's side.

    A term counts only when the whole sentences hold it a different number of times, so a word that
    merely moved from one region to another is no change.
    """
    i1, i2, j1, j2 = change
    in_a = Counter(find(diff.a, 0, len(diff.a)))
    in_b = Counter(find(diff.b, 0, len(diff.b)))
    old = [t for t in find(diff.a, i1, i2) if in_a[t] > in_b[t]]
    new = [t for t in find(diff.b, j1, j2) if in_b[t] > in_a[t]]
    return old, new


def _spatial_opposites(x: str, y: str) -> bool:
    """Whether two different spatial terms make a spatial flip: a strong one against any, or a listed pair."""
    pair = frozenset((x, y))
    if pair in SPATIAL_WEAK_PAIRS or pair in SPATIAL_PAIRS:
        return True
    weak = set(SPATIAL_WEAK) | {"lower"}
    return "lower" not in pair and not pair <= weak


def _spatial_change(diff: _Diff, change) -> str | None:
    """Rule 4: a spatial word replaced by another one."""
    old, new = _flip(diff, change, _spatial_terms)
    for x in old:
        for y in new:
            if x != y and _spatial_opposites(x, y):
                return f"spatial '{x}' -> '{y}'"
    return None


def _temporal_change(diff: _Diff, change) -> str | None:
    """Rule 5: a time word replaced by another (before/after, first/last, begin/end), or past <-> future."""
    old, new = _flip(diff, change, _temporal_terms)
    if old and new:
        return f"temporal {_quote(old)} -> {_quote(new)}"
    removed, added = set(diff.removed(change)), set(diff.added(change))
    for x, y in ((removed, added), (added, removed)):
        past = y & PAST_CUES or any(t.endswith("ed") for t in y)
        if x & FUTURE_CUES and past and not y & (FUTURE_CUES | MODALS):
            return f"tense {diff.describe(change)}"
    return None


def _comparative_er(diff: _Diff, change) -> bool:
    """Whether the region exchanges one -er (-est) adjective for another ('faster than' -> 'slower than')."""
    i1, i2, j1, j2 = change
    if i2 - i1 != 1 or j2 - j1 != 1:
        return False
    x, y = diff.a[i1], diff.b[j1]
    for suffix in ("er", "est"):
        if x.endswith(suffix) and y.endswith(suffix) and min(len(x), len(y)) > len(suffix) + 2:
            if x in NOT_COMPARATIVE_ER or y in NOT_COMPARATIVE_ER:
                return False
            lead = diff.a[i1 - 1] if i1 else ""
            if "than" in diff.a[i2 : i2 + 6]:
                return True
            return lead in COMPARATIVE_LEADS and (suffix == "est" or lead != "the")
    return False


def _comparative_change(diff: _Diff, change) -> str | None:
    """Rule 6: a scale flipped: rose/fell, more/less, import/export, up/down by an amount, -er words."""
    old, new = _flip(diff, change, _scale_terms)
    if old and new:
        return f"comparative {_quote(old)} -> {_quote(new)}"
    if _comparative_er(diff, change):
        return f"comparative {_quote(diff.removed(change))} -> {_quote(diff.added(change))}"
    return None


def _quantifier_change(diff: _Diff, change) -> str | None:
    """Rule 7: a quantifier added, removed or exchanged (all/some/every/few, at least/at most, over 5)."""
    old, new = _flip(diff, change, _quantifier_terms)
    if old and new:
        return f"quantifier {_quote(old)} -> {_quote(new)}"
    if old:
        return f"removed quantifier {_quote(old)}"
    if new:
        return f"added quantifier {_quote(new)}"
    return None


CHANGE_RULES = (
    ("numeric", _numeric_change),
    ("spatial", _spatial_change),
    ("temporal", _temporal_change),
    ("comparative", _comparative_change),
    ("quantifier", _quantifier_change),
)


def _stem(token: str) -> str:
    """A crude stem so 'students'/'student' and 'passes'/'pass' agree."""
    for suffix in ("ies", "es", "s"):
        if token.endswith(suffix) and len(token) > len(suffix) + 2:
            return token[: -len(suffix)] + ("y" if suffix == "ies" else "")
    return token


def _is_punctuation(token: str) -> bool:
    """A punctuation mark (not a currency sign or %, which are numeric)."""
    return not token[0].isalnum() and token not in CURRENCY and token != "%" and not token.startswith("'")


def _is_agreement(diff: _Diff, change) -> bool:
    """Whether a region only changes articles, auxiliaries, punctuation or a plural ending (agreement)."""
    removed, added = diff.removed(change), diff.added(change)
    if all(t in GLUE or _is_punctuation(t) for t in removed + added):
        return True
    if len(removed) == len(added):
        return all(x == y or _stem(x) == _stem(y) or (x in GLUE and y in GLUE) for x, y in zip(removed, added))
    return False


def _by_region(diff: _Diff) -> tuple[str, str]:
    """Rules 3-8: judge every changed region; one family if they agree, 'other' when mixed or unknown."""
    judged, unexplained = [], []
    for change in diff.changes:
        for family, rule in CHANGE_RULES:
            reason = rule(diff, change)
            if reason:
                judged.append((family, reason))
                break
        else:
            unexplained.append(change)
    unexplained = [c for c in unexplained if not (judged and _is_agreement(diff, c))]
    families = sorted({f for f, _ in judged}, key=FAMILY_JUDGED.index)
    if judged and not unexplained and len(families) == 1:
        return families[0], "; ".join(r for _, r in judged)
    if judged and (len(families) > 1 or unexplained):
        parts = [r for _, r in judged] + [diff.describe(c) for c in unexplained]
        return "other", "mixed edits: " + "; ".join(parts[:4])
    return "other", "no family cue in: " + "; ".join(diff.describe(c) for c in diff.changes[:3])


def judge_pair(original: str, near_miss: str) -> tuple[str, str]:
    """(family, reason) for one pair, from its tokens alone; family is one of FAMILY_JUDGED."""
    diff = _Diff(original, near_miss)
    if not diff.changes:
        return "other", "no change"
    reason = _negation(diff)
    if reason:
        return "negation", reason
    rearranged = _rearranged(diff)
    if rearranged:
        return rearranged
    return _by_region(diff)


def _require(df: pd.DataFrame, columns) -> None:
    """Raise a ValueError naming the columns `df` lacks."""
    missing = [c for c in columns if c not in df.columns]
    if missing:
        raise ValueError(f"the pairs table lacks column(s) {missing}; it has {list(df.columns)}")


def judge_pairs(df: pd.DataFrame) -> pd.DataFrame:
    """A copy of `df` (original, near_miss, family, ...) with columns judged, judge_reason and pure."""
    _require(df, ("original", "near_miss", "family"))
    out = df.copy()
    verdicts = [judge_pair(o, n) for o, n in zip(out["original"], out["near_miss"])]
    out["judged"] = [v[0] for v in verdicts]
    out["judge_reason"] = [v[1] for v in verdicts]
    out["pure"] = (out["judged"] == out["family"]).astype(bool)
    return out


def _judged_as(judged: pd.Series) -> str:
    """'binding 90%, numeric 10%': the judged families of a group by share, largest first."""
    counts = judged.value_counts()
    order = sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))
    return ", ".join(f"{family} {round(100 * n / len(judged))}%" for family, n in order)


def purity_table(df: pd.DataFrame, by=("family", "source", "split"), examples: int = 3) -> pd.DataFrame:
    """Per group of the `by` columns present in df: pairs, pure, purity, judged_as and failing_examples.

    Judges the pairs first when df has no `judged` column. failing_examples holds up to `examples`
    strings "original => near_miss [judged: x]" for the group's impure pairs, in the order of df.
    Rows are sorted by the group keys.
    """
    if "judged" not in df.columns:
        df = judge_pairs(df)
    elif "pure" not in df.columns:
        _require(df, ("family",))
        df = df.assign(pure=df["judged"] == df["family"])
    _require(df, ("original", "near_miss"))
    keys = [c for c in by if c in df.columns]
    columns = keys + ["pairs", "pure", "purity", "judged_as", "failing_examples"]
    if df.empty:
        return pd.DataFrame(columns=columns)
    groups = df.groupby(keys, sort=True, dropna=False) if keys else [((), df)]
    rows = []
    for key, group in groups:
        key = key if isinstance(key, tuple) else (key,)
        impure = group[~group["pure"].astype(bool)].head(examples)
        failing = [
            f"{o} => {n} [judged: {j}]" for o, n, j in zip(impure["original"], impure["near_miss"], impure["judged"])
        ]
        pure = int(group["pure"].astype(bool).sum())
        rows.append([*key, len(group), pure, pure / len(group), _judged_as(group["judged"]), failing])
    return pd.DataFrame(rows, columns=columns).reset_index(drop=True)
