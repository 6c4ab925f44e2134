"""Relation flips by word tables: spatial (the words a table can settle), quantifier, comparative, temporal.

Each entry pairs a word with its opposite and, where the word has another sense, a guard on its
neighbours: "left" is flipped in "on the left" and "turn left" but not in "he left the company";
"over" only before an amount ("over 40"), never in "over the years"; "fell" not in "fell ill".
"""

from __future__ import annotations

from compsense.data.negatives.lexicons import (
    BE_FORMS,
    DETERMINERS,
    MODALS,
    PARTICIPLE_TO_BASE,
    POSSESSIVES,
    PREPOSITIONS,
    STEER_VERBS,
    VERBS,
)
from compsense.data.negatives.rules import (
    NUMBER_WORDS,
    Swap,
    SwapTable,
    all_of,
    followed_by,
    is_content_word,
    is_finite_verb_form,
    is_quantity,
    looks_participle,
    looks_plural,
    lower_case_only,
    not_followed_by,
    not_preceded_by,
    replace_words,
    swap_pairs,
)
from compsense.data.negatives.text import Edit, Sentence

THE_OR_POSSESSIVE = frozenset({"the"}) | POSSESSIVES
PLACE_PREPOSITIONS = frozenset("to on at from toward towards onto into".split())
TIME_NOUNS = frozenset(
    """day days week weeks month months year years morning afternoon evening night time quarter
    season century decade hour hours minute minutes""".split()
)
MONTHS = frozenset("january february march april june july august september october november december".split())
SEASONS = frozenset("spring summer autumn fall winter".split())
# "climbed above $90" has no mirror "climbed below": the verb already says which way.
MOVE_VERBS = frozenset(
    """climbed climb climbs rose rise rises jumped soared surged fell fall falls dropped drop dipped
    slipped sank plunged""".split()
)
APPROACH_VERBS = frozenset(
    "come came comes coming move moved moving inch inched edge edged bring brought draw drew".split()
)
AUX_BEFORE_PARTICIPLE = frozenset("has have had be been being is are was were".split())
MARKET_MOVE_BEFORE = BE_FORMS | frozenset("be been closed close ended finished traded trading opened , ;".split())


def _market_move_context(sent: Sentence, i: int, j: int) -> bool:
    """'shares were up 5 %', 'closed down 19 cents'; not 'picked up 5 points'."""
    return sent.low(i - 1) in MARKET_MOVE_BEFORE


def _amount_follows(sent: Sentence, i: int, j: int) -> bool:
    return is_quantity(sent, j) or (sent.low(j) in ("a", "an") and is_quantity(sent, j + 1))


def _word_follows(sent: Sentence, i: int, j: int) -> bool:
    """A word (not punctuation, not the end) comes next."""
    return sent.word(j)[:1].isalnum()


def _noun_phrase_follows(sent: Sentence, i: int, j: int) -> bool:
    low = sent.low(j)
    return low in DETERMINERS or sent.is_capitalised_name(j) or low in ("him", "her", "them", "it", "me", "us")


def _verb_before(sent: Sentence, i: int) -> bool:
    low = sent.low(i - 1)
    return (
        low in VERBS
        or is_finite_verb_form(low)
        or low in BE_FORMS
        or low in PARTICIPLE_TO_BASE
        or looks_participle(low)
    )


# --- spatial ---------------------------------------------------------------------------------

SIDE_NOUNS = frozenset(
    """side hand arm leg eye ear foot wing corner lane turn panel column edge field bank shoulder
    wrist knee margin pocket half""".split()
)


def _side_context(sent: Sentence, i: int, j: int) -> bool:
    """'left'/'right' as directions: 'on the left', 'turn right', 'left hand', never 'he left'."""
    prev, nxt = sent.low(i - 1), sent.low(j)
    if nxt in ("now", "away", "after", "before", "here", "there", "to", "of", "on", "back", "up"):
        return nxt in ("of", "to") and prev in THE_OR_POSSESSIVE and sent.low(i - 2) in PLACE_PREPOSITIONS
    if nxt in SIDE_NOUNS:
        return prev in THE_OR_POSSESSIVE or prev in PREPOSITIONS
    if is_content_word(sent, j) and not is_finite_verb_form(nxt):  # "on the right path"
        return False
    return (prev in THE_OR_POSSESSIVE and sent.low(i - 2) in PLACE_PREPOSITIONS) or prev in STEER_VERBS


COURT_NOUNS = frozenset("court judge committee jury congress senate parliament panel audience crowd cameras".split())


ORDER_OBJECT_WORDS = frozenset("you he she it we they i noon midnight dawn dusk lunch dinner breakfast".split())


def _ordering_context(sent: Sentence, i: int, j: int) -> bool:
    """'before'/'after' in time or order, not 'after all', 'look after', 'testified before'.

    What follows must start an event or a time: a determiner, a name, a number, a clause
    ("before you mix"), a gerund ("after eating"); "after hours of use" has no clean mirror.
    """
    nxt = sent.low(j)
    starts_event = (
        nxt in DETERMINERS
        or nxt in ORDER_OBJECT_WORDS
        or sent.is_capitalised_name(j)
        or is_quantity(sent, j)
        or (nxt.endswith("ing") and sent.is_word(j))
    )
    if not starts_event:
        return False
    prev, nxt = sent.low(i - 1), sent.low(j)
    if prev in (
        "as",
        "than",
        "ever",
        "never",
        "look",
        "looks",
        "looked",
        "looking",
        "named",
        "take",
        "takes",
        "took",
        "testified",
        "testify",
        "appeared",
        "appear",
        "brought",
    ):
        return False
    if nxt in ("all", "which") or sent.low(j + 1) in COURT_NOUNS or sent.low(j) in COURT_NOUNS:
        return False
    return True


def _near_context(sent: Sentence, i: int, j: int) -> bool:
    return (
        _noun_phrase_follows(sent, i, j)
        and sent.low(i - 1) not in DETERMINERS
        and sent.low(i - 1) not in ("in", "nowhere", "came", "come", "comes")
    )


def _both_ends_given(sent: Sentence, j: int) -> bool:
    ends = set()
    for k in range(j, len(sent)):
        if sent.low(k) in (",", ";", ".", "?", "!", "and", "but"):
            break
        if sent.low(k) in ("from", "to") and is_quantity(sent, k + 1):
            ends.add(sent.low(k))
    return ends == {"from", "to"}


def _change_context(sent: Sentence, i: int, j: int) -> bool:
    """A change verb used as a change: 'rose 5 %', 'fell sharply', 'rose to $ 4', 'rose .'.

    Not where the clause gives both ends ("rose from 5 % to 7 %"): "fell from 5 % to 7 %"
    contradicts its own numbers. Those near-misses are numeric (the ends swapped).
    """
    if _both_ends_given(sent, j):
        return False
    nxt = sent.low(j)
    if is_quantity(sent, j) or nxt in (
        "by",
        "sharply",
        "slightly",
        "steadily",
        "steeply",
        "rapidly",
        "significantly",
        "nearly",
        "almost",
        "about",
        "more",
        "less",
    ):
        return True
    if nxt in ("to", "from"):
        return is_quantity(sent, j + 1) or sent.low(j + 1) in ("a", "an", "its", "their", "the")
    # end of a clause: "prices rose ."; not a question ("When did the Wall fall?": a collapse)
    return not sent.word(j)[:1].isalnum() and sent.low(j) != "?"


def _rise_fall_noun(sent: Sentence, i: int, j: int) -> bool:
    """'a rise in' / 'the fall of the empire', not 'the fall of 2003' (autumn)."""
    return (
        sent.low(i - 1) in ("a", "the", "its", "their", "sharp", "steep", "slight")
        and sent.low(j) in ("in", "of")
        and not is_quantity(sent, j + 1)
        and sent.low(j + 1) not in MONTHS
    )


# Word-table flips whose sense the neighbours settle; prepositions that need the parse to tell a
# place ("under the bench") from an idiom ("under pressure") are in spatial.py.
SPATIAL = SwapTable(
    [
        *swap_pairs("left>right", _side_context),
        *swap_pairs(
            "leftmost>rightmost, clockwise>counterclockwise, horizontally>vertically, "
            "horizontal>vertical, ascending>descending, ascend>descend, ascended>descended, "
            "upstairs>downstairs, uphill>downhill, upward>downward, upwards>downwards, "
            "upstream>downstream, upwind>downwind, inner>outer, interior>exterior, "
            "northern>southern, eastern>western, northeast>southwest, northwest>southeast, "
            "northbound>southbound, eastbound>westbound, north>south, east>west",
            lower_case_only,
        ),
        Swap(("closer", "to"), "farther from", all_of(_noun_phrase_follows, not_preceded_by(APPROACH_VERBS))),
        Swap(("farther", "from"), "closer to", _noun_phrase_follows),
        Swap(("further", "from"), "closer to", _noun_phrase_follows),
        Swap(("far", "from"), "close to", _noun_phrase_follows),
        Swap(("near",), "far from", _near_context),
        *swap_pairs("top of>bottom of", lambda sent, i, j: sent.low(i - 1) == "the"),
    ]
)


def spatial_word_edits(sent: Sentence) -> list[Edit]:
    return SPATIAL.edits(sent)


# --- quantifier ------------------------------------------------------------------------------

GROUP_START = frozenset("the of these those his her its their our my your".split())
NOT_COUNTABLE_AFTER = frozenset(
    "day night week year time morning season summer along over around together but too right "
    "other so now single".split()
)


def _group_follows(sent: Sentence, i: int, j: int) -> bool:
    """A plural or definite group follows: 'all the', 'all of', 'all students', 'all new cars'."""
    nxt = sent.low(j)
    if nxt in NOT_COUNTABLE_AFTER:
        return False
    return nxt in GROUP_START or looks_plural(sent, j) or (is_content_word(sent, j) and looks_plural(sent, j + 1))


def _singular_noun_follows(sent: Sentence, i: int, j: int) -> bool:
    nxt = sent.low(j)
    return (
        is_content_word(sent, j)
        and not looks_plural(sent, j)
        and nxt not in NOT_COUNTABLE_AFTER
        and not is_finite_verb_form(nxt)
        and nxt not in VERBS
    )


def _no_singular_verb_ahead(sent: Sentence, i: int, j: int) -> bool:
    """'none of them was' must not become 'all of them was': no singular verb before the next comma."""
    for k in range(j, min(j + 8, len(sent))):
        if sent.low(k) in ("is", "was", "has", "does"):
            return False
        if not sent.word(k)[:1].isalnum():
            break
    return True


MASS_NOUNS = frozenset(
    "evidence information money time water data support interest effect impact progress damage "
    "danger risk doubt reason need sign change difference room power access".split()
)


ABSTRACT_ENDINGS = ("tion", "sion", "ence", "ance", "ment", "ness")


def _abstract_noun(sent: Sentence, k: int) -> bool:
    """'no connection', 'some resistance': abstract nouns read as mass nouns after 'no'/'some'."""
    low = sent.low(k)
    return (
        is_content_word(sent, k)
        and (low in MASS_NOUNS or low.endswith(ABSTRACT_ENDINGS))
        and not is_finite_verb_form(low)
        and low not in VERBS
        and len(low) > 5
        and sent.low(k + 1) not in ("of",)
        and not looks_plural(sent, k + 1)
    )


def _some_abstract(sent: Sentence, i: int, j: int) -> bool:
    """'some resistance' -> 'no resistance'; not 'some 50 people' or 'some of'."""
    return _abstract_noun(sent, j) and (_clause_head(sent, i, j) or sent.low(i - 1) in BE_FORMS)


CLAUSE_HEAD_BEFORE = frozenset([",", ";", ":", "that", "but", "while", "and", "because"])


def _clause_head(sent: Sentence, i: int, j: int) -> bool:
    """The quantifier opens a clause's subject ("Several courts ruled", ", each volunteer got")."""
    return i == sent.first_word_index or (sent.low(i - 1) in CLAUSE_HEAD_BEFORE and sent.low(i - 2) not in ("a", "the"))


def _several_group(sent: Sentence, i: int, j: int) -> bool:
    """'Several courts have ruled' <-> 'Few courts have ruled', as the subject of a clause.

    Elsewhere bare "few" is unidiomatic ("found few weeks later", "for few days"), and
    "several hundred", "a few", "one of several" are no group at all.
    """
    return sent.low(j) not in NUMBER_WORDS and _group_follows(sent, i, j) and _clause_head(sent, i, j)


def _no_as_determiner(sent: Sentence, i: int, j: int) -> bool:
    """'no evidence' -> 'some evidence'; not 'No,' or 'No. 1' or 'no matter'."""
    nxt = sent.low(j)
    # "three no votes", "little or no competition", "a vote of no confidence"
    if sent.low(i - 1) in ("or", "and", "of") or sent.word(i - 1).isdigit() or sent.low(i - 1) in NUMBER_WORDS:
        return False
    if not sent.is_word(j) or nxt in (
        "more",
        "less",
        "longer",
        "later",
        "sooner",
        "matter",
        "way",
        "fewer",
        "one",
        "other",
        "further",
        "such",
        "doubt",
    ):
        return False
    return (
        nxt in MASS_NOUNS
        or looks_plural(sent, j)
        or _abstract_noun(sent, j)
        or (is_content_word(sent, j) and (looks_plural(sent, j + 1) or sent.low(j + 1) in MASS_NOUNS))
    )


# "went up to 5 %" is a movement, not a bound.
MOVE_UP_VERBS = frozenset(
    "went go goes rose rise rises jumped climbed moved added adding came come shot soared".split()
)
NEARLY = frozenset("nearly almost virtually practically not".split())
DEFINITE = frozenset("the these those his her its their our my your".split())


def _plural_group(sent: Sentence, i: int, j: int) -> bool:
    """'most people', 'most of the votes'; not 'most of the damage' ('few of the damage')."""
    if sent.low(j) != "of":
        return looks_plural(sent, j)
    return any(looks_plural(sent, k) or sent.low(k) in ("them", "us") for k in range(j + 1, j + 5))


def _definite_group(sent: Sentence, i: int, j: int) -> bool:
    return sent.low(j) in DEFINITE


QUANTIFIER = SwapTable(
    [
        # "under 300 people", "in under five minutes"; not "developed over 14 months" (a duration)
        *swap_pairs("over>under", all_of(_amount_follows, lambda sent, i, j: not _verb_before(sent, i))),
        Swap(
            ("all",),
            "some",
            all_of(
                _group_follows,
                not_followed_by(DEFINITE | {"of"}),
                not_preceded_by(NEARLY | {"at", "after", "above", "of", "for", "in", "once", "with"}),
            ),
        ),
        # "all the X" needs "of" after "some": "some of the X", never "some the X".
        Swap(("all",), "some of", all_of(_definite_group, not_preceded_by(NEARLY | {"at", "for", "of"}))),
        Swap(
            ("all", "of"),
            "none of",
            all_of(
                not_preceded_by(NEARLY | {"at", "after", "above", "of", "for"}), lambda sent, i, j: sent.low(j) != "a"
            ),
        ),
        Swap(("some",), "all", lambda sent, i, j: looks_plural(sent, j)),
        # "some of the X" -> "all the X" mirrors "all the X" -> "some of the X"
        Swap(("some", "of"), "all", _definite_group),
        Swap(("some", "of"), "all of", lambda sent, i, j: not _definite_group(sent, i, j)),
        Swap(("some", "of"), "none of", None),
        Swap(("none", "of"), "some of", _no_singular_verb_ahead),
        Swap(("none", "of"), "all of", _no_singular_verb_ahead),
        Swap(("each", "of"), "none of", None),
        Swap(("every",), "no", _singular_noun_follows),
        Swap(
            ("each",),
            "no",
            all_of(_singular_noun_follows, _clause_head, lambda sent, i, j: not sent.low(j).endswith("ing")),
        ),
        *swap_pairs("several>few", _several_group),
        Swap(("some",), "no", _some_abstract),
        # "most" only right before "of" or a plural: "most wanted suspects" is a superlative.
        Swap(("most",), "few", all_of(_plural_group, not_preceded_by({"the", "at", "a", "for"}))),
        Swap(("many",), "few", all_of(_group_follows, not_preceded_by({"how", "great", "a", "not"}))),
        Swap(("a", "few"), "many", all_of(_group_follows, not_preceded_by({"quite", "only", "just"}))),
        Swap(("few",), "many", all_of(_group_follows, not_preceded_by({"a", "quite", "every"}))),
        *swap_pairs("everyone>no one, everybody>nobody, everything>nothing", not_followed_by({"but"})),
        Swap(("someone",), "no one", None),
        Swap(("something",), "nothing", not_followed_by({"like"})),
        *swap_pairs("at least>at most", _amount_follows),
        *swap_pairs("as many as>as few as, as much as>as little as", _amount_follows),
        Swap(("up", "to"), "at least", all_of(_amount_follows, not_preceded_by(MOVE_UP_VERBS))),
        Swap(("nearly",), "more than", _amount_follows),
        Swap(("almost",), "more than", _amount_follows),
        Swap(("only",), "at least", all_of(_amount_follows, not_preceded_by({"the", "an", "if", "not"}))),
        *swap_pairs("often>rarely", not_preceded_by({"how", "more", "most"})),
        Swap(("frequently",), "rarely", not_preceded_by({"how", "more", "most"})),
        Swap(("usually",), "rarely", None),
        Swap(("seldom",), "often", None),
        Swap(("no",), "some", _no_as_determiner),
    ]
)


def quantifier_edits(sent: Sentence) -> list[Edit]:
    return QUANTIFIER.edits(sent)


# --- comparative -----------------------------------------------------------------------------

# Amounts measured rather than counted take "less than": "less than seven years", "less than $ 5".
MEASURE_UNITS = frozenset(
    """% percent million billion dollars cents euros pounds years months weeks days hours minutes
    seconds miles feet kilometres kilometers metres meters tons tonnes acres""".split()
)


def _more_less(sent: Sentence) -> list[Edit]:
    """'more' -> 'fewer' before a counted plural, 'less' otherwise; 'less'/'fewer' -> 'more'.

    Skips fixed phrases ("once more", "no more", "more or less", "more and more", "many more")
    and "more than" that is not followed by an amount ("more than just").
    """
    edits = []
    for i, low in enumerate(sent.lows):
        if low not in ("more", "less", "fewer") or not sent.is_free(i):
            continue
        prev, nxt = sent.low(i - 1), sent.low(i + 1)
        if prev in ("once", "any", "no", "or", "and", "many", "what's") or nxt in ("or", "and"):
            continue
        if nxt == "than" and not is_quantity(sent, i + 2):
            continue
        if low == "more":
            counted = looks_plural(sent, i + 1) or (nxt == "than" and _counted_amount(sent, i + 2))
            new = "fewer" if counted else "less"
        else:
            new = "more"
        edits.append(replace_words(sent, i, i + 1, new))
    return edits


def _counted_amount(sent: Sentence, k: int) -> bool:
    """'more than 300 people' counts things ('fewer than'); '... 5 %' or '$ 3' measures ('less')."""
    if not is_quantity(sent, k) or sent.word(k) in ("$", "€", "£"):
        return False
    after = k + 1
    while sent.word(after).isdigit() or sent.joins_digits(after):
        after += 1
    return looks_plural(sent, after) and sent.low(after) not in MEASURE_UNITS


def _comparative_adjective(sent: Sentence, i: int, j: int) -> bool:
    """'higher'/'lower' as adjectives or adverbs, not the verb in 'does exercise lower ...'."""
    if sent.low(i) in ("higher", "highest"):
        return True
    prev = sent.low(i - 1)
    return (
        prev in DETERMINERS
        or prev in BE_FORMS
        or sent.low(j) == "than"
        or prev in ("be", "been", "much", "far", "even", "slightly", "significantly", "still", "no")
    )


def _adjective_context(sent: Sentence, i: int, j: int) -> bool:
    """An adjective, not a noun: predicative ('is high') or attributive ('high prices')."""
    prev = sent.low(i - 1)
    if prev in BE_FORMS or prev in (
        "be",
        "been",
        "very",
        "so",
        "too",
        "quite",
        "remains",
        "remained",
        "seems",
        "became",
        "becomes",
    ):
        return True
    return is_content_word(sent, j) and not is_finite_verb_form(sent.low(j))


CONTEST_NOUNS = frozenset(
    """game games match matches election elections race races case cases battle war vote votes
    seat seats title championship final finals lawsuit appeal bid contract series tournament
    trial""".split()
)


def _contest_follows(sent: Sentence, i: int, j: int) -> bool:
    """'won the election' <-> 'lost the election', never 'lost his keys'."""
    k = j + 1 if sent.low(j) in DETERMINERS else j
    if sent.low(k) not in CONTEST_NOUNS:
        k += 1
    return sent.low(k) in CONTEST_NOUNS and sent.low(k + 1) != "to"  # "lost the final to X"


RAISABLE = frozenset(
    """price prices rate rates forecast forecasts estimate estimates target targets outlook rating
    dividend tax taxes fares fees limit limits wages salaries guidance""".split()
)


def _raisable_follows(sent: Sentence, i: int, j: int) -> bool:
    k = j + 1 if sent.low(j) in DETERMINERS else j
    return sent.low(k) in RAISABLE or sent.low(k + 1) in RAISABLE


def _financial_noun(sent: Sentence, i: int, j: int) -> bool:
    prev = sent.low(i - 1)
    return prev in DETERMINERS or prev in (
        "net",
        "operating",
        "quarterly",
        "annual",
        "pretax",
        "gross",
        "posted",
        "reported",
        "of",
    )


COMPARATIVE = SwapTable(
    [
        # trends and trade: a direction on a scale, not in space
        *swap_pairs(
            "rose>fell, rises>falls, rise>fall, risen>fallen, rising>falling",
            all_of(_change_context, not_preceded_by(DETERMINERS)),
        ),
        *swap_pairs("rise>fall", _rise_fall_noun),
        *swap_pairs("import>export, imports>exports, imported>exported, importing>exporting", lower_case_only),
        *swap_pairs("up>down", all_of(_amount_follows, _market_move_context)),
        # "store below 8 degrees", "above 5 %": a threshold on a scale
        *swap_pairs("above>below", all_of(_amount_follows, not_preceded_by({"as", "see", "the"} | MOVE_VERBS))),
        *swap_pairs("the most>the least", all_of(_word_follows, lambda sent, i, j: not looks_plural(sent, j))),
        Swap(("least",), "most", all_of(not_preceded_by({"at", "not", "the"}), _word_follows)),
        *swap_pairs(
            "higher>lower, highest>lowest",
            all_of(lower_case_only, not_followed_by({"education"}), _comparative_adjective),
        ),
        *swap_pairs(
            "larger>smaller, largest>smallest, "
            "faster>slower, fastest>slowest, "
            "stronger>weaker, strongest>weakest, better>worse, best>worst, heavier>lighter, "
            "richer>poorer, wealthier>poorer, hotter>colder, warmer>cooler, wider>narrower, "
            "deeper>shallower, thicker>thinner, taller>shorter, louder>quieter, "
            "cheaper>more expensive",
            all_of(
                lower_case_only, not_preceded_by({"no", "any", "at", "had", "get", "got"}), not_followed_by({"known"})
            ),
        ),
        Swap(("easier",), "harder", lower_case_only),
        # "shorter" is no adverb: "lives longer" has no mirror "lives shorter"
        *swap_pairs("longer>shorter", all_of(lower_case_only, _adjective_context, not_preceded_by({"no", "any"}))),
        # "smaller" goes back to "larger" only, so it never turns into a synonym of a word nearby
        *[
            Swap((w,), new, lower_case_only)
            for w, new in [("bigger", "smaller"), ("biggest", "smallest"), ("greater", "smaller")]
        ],
        # "older model" has no mirror "younger model"; "younger" is always about age
        Swap(("younger",), "older", lower_case_only),
        Swap(("youngest",), "oldest", lower_case_only),
        *swap_pairs(
            "high>low",
            all_of(
                lower_case_only, _adjective_context, not_followed_by({"school", "schools", "court", "street", "five"})
            ),
        ),
        *swap_pairs(
            "increase>decrease, increases>decreases, increased>decreased, "
            "increasing>decreasing, maximum>minimum, positive>negative, cheap>expensive, "
            "strong>weak, easy>difficult",
            lower_case_only,
        ),
        # not in compounds ("heart failure") or before "to" ("failure to act" has no mirror)
        *swap_pairs(
            "success>failure, successes>failures",
            all_of(lower_case_only, lambda sent, i, j: not is_content_word(sent, i - 1), not_followed_by({"to"})),
        ),
        *swap_pairs("true>false", not_preceded_by({"come", "came", "comes", "coming"})),
        *swap_pairs("hot>cold, wet>dry, rich>poor", all_of(_adjective_context, not_followed_by({"dog", "dogs"}))),
        *swap_pairs("won>lost, win>lose, wins>loses, winning>losing", _contest_follows),
        *swap_pairs("raised>lowered, raises>lowers", _raisable_follows),
        *swap_pairs("raise>lower", all_of(_raisable_follows, lambda sent, i, j: sent.low(i - 1) in MODALS | {"to"})),
        *swap_pairs("gained>lost, gain>lose, gains>loses", _change_context),
        *swap_pairs(
            "grew>shrank, grows>shrinks, grow>shrink, growing>shrinking",
            all_of(_change_context, not_followed_by({"up", "into", "out"})),
        ),
        *swap_pairs("profit>loss, profits>losses", _financial_noun),
    ]
)


def comparative_edits(sent: Sentence) -> list[Edit]:
    return COMPARATIVE.edits(sent) + _more_less(sent)


# --- temporal --------------------------------------------------------------------------------


def _time_follows(sent: Sentence, i: int, j: int) -> bool:
    """'early 2003', 'late June', 'early in the day', 'late last year', 'early stages'."""
    nxt = sent.low(j)
    return (
        sent.word(j).isdigit()
        or nxt in MONTHS
        or nxt in SEASONS
        or nxt in TIME_NOUNS
        or nxt in ("in", "this", "last", "next", "stage", "stages", "afternoon", "evening")
        or (nxt[:-1].isdigit() and nxt.endswith("s"))
    )


def _early_late(sent: Sentence, i: int, j: int) -> bool:
    """'arrived late' / 'too early' / 'early 2003'; never 'the late president'."""
    if _time_follows(sent, i, j):
        return True
    ends_clause = not sent.word(j)[:1].isalnum()
    return ends_clause and (sent.low(i - 1) in ("too", "very", "so") or _verb_before(sent, i))


def _former_current(sent: Sentence, i: int, j: int) -> bool:
    noun_follows = is_content_word(sent, j) or sent.is_capitalised_name(j)
    return noun_follows and not is_finite_verb_form(sent.low(j))


def _ordinal_context(sent: Sentence, i: int, j: int) -> bool:
    """'the first time' <-> 'the last time'; not 'at first', 'last week', 'First Lady'."""
    return sent.low(i - 1) in THE_OR_POSSESSIVE and lower_case_only(sent, i, j)


def _not_first_time_since(sent: Sentence, i: int, j: int) -> bool:
    """'for the first time since 2014' is an idiom; 'for the last time since 2014' is not English."""
    return not (sent.low(j) == "time" and sent.low(j + 1) in ("since", "in"))


def _begin_end_verb(sent: Sentence, i: int, j: int) -> bool:
    """'the war began in 1939' <-> 'ended in 1939', not 'began to' or 'ended up'."""
    nxt = sent.low(j)
    return nxt not in ("to", "up", "with") and not nxt.endswith("ing") and sent.low(i - 1) not in DETERMINERS


def _not_a_baseline(sent: Sentence, i: int, j: int) -> bool:
    """'up 5 % from a year earlier' names a fixed point of comparison; 'a year later' there is
    nonsense, and news uses "a year earlier" almost only that way."""
    return not (sent.low(i - 1) in TIME_NOUNS and sent.low(i - 2) in ("a", "the", "one"))


def _no_today(sent: Sentence, i: int, j: int) -> bool:
    return "today" not in sent.lows


TEMPORAL = SwapTable(
    [
        *swap_pairs("before>after", _ordering_context),
        *swap_pairs("earlier>later", all_of(not_preceded_by({"or", "sooner", "no"}), lower_case_only, _not_a_baseline)),
        *swap_pairs("earliest>latest", lower_case_only),
        *swap_pairs("first>last", all_of(_ordinal_context, _not_first_time_since)),
        *swap_pairs("early>late", all_of(_early_late, not_preceded_by({"the", "his", "her"}))),
        Swap(("previous",), "following", followed_by(TIME_NOUNS)),
        Swap(("preceding",), "following", followed_by(TIME_NOUNS)),
        *[Swap(("following",), "previous", followed_by(TIME_NOUNS))],
        *[Swap(("next",), "previous", all_of(followed_by(TIME_NOUNS), lambda s, i, j: s.low(i - 1) == "the"))],
        *swap_pairs("former>current", all_of(_former_current, lower_case_only)),
        *swap_pairs("outgoing>incoming", lower_case_only),
        Swap(("began",), "ended", _begin_end_verb),
        Swap(("ended",), "began", all_of(_begin_end_verb, not_preceded_by(AUX_BEFORE_PARTICIPLE))),
        *swap_pairs("the beginning of>the end of"),
        Swap(("the", "start", "of"), "the end of", None),
        *swap_pairs("morning>evening, mornings>evenings, dawn>dusk, sunrise>sunset, summer>winter", lower_case_only),
        *swap_pairs("daily>weekly, monthly>yearly", lower_case_only),
        Swap(("annual",), "quarterly", lower_case_only),
        # "reports quarterly" is an adverb; "annual" cannot be one
        Swap(("quarterly",), "annual", all_of(lower_case_only, lambda sent, i, j: is_content_word(sent, j))),
        Swap(("yesterday",), "today", _no_today),
        Swap(("tomorrow",), "today", _no_today),
    ]
)


def temporal_edits(sent: Sentence) -> list[Edit]:
    return TEMPORAL.edits(sent)
