"""Spatial: a directional or locative relation flipped or read the other way round. The authors'
`spatial` ("Directional Relations", evaluate_embeddings.py: left/right, above/below, in front
of/behind, closer/farther).

- word flips a table can settle ("turn left", "northern", "upstairs"; swaps.py);
- preposition flips that need the parse: "under the bench" -> "on the bench", "above the door" ->
  "below the door", "over the bridge" -> "under the bridge", "on top of" -> "underneath", "walked
  up the hill" -> "down the hill", "toward the river" -> "away from the river", "north of the
  city" -> "south of the city". The object must be a place or a thing (a noun with a determiner,
  not a date, an amount or an abstract noun: "under pressure", "over the years", "behind
  schedule" stay as they are), and "up"/"down" next to an amount are trends (comparative);
- side swaps: the two things a spatial relation links trade places ("The lamp is above the desk."
  -> "The desk is above the lamp."; "Rome is closer than Paris." -> "Paris is closer than Rome.");
- path swaps: "flew from Paris to Rome" -> "flew from Rome to Paris" (ranges.py).
Time ("before", "after") and trends ("rose", "fell", "imports") are not spatial: they are the
temporal and comparative families.
"""

from __future__ import annotations

from compsense.data.negatives.binding import (
    DISTANCE_COMPARATIVES,
    VALUE_ENTITIES,
    _swap,
    comparison_sides,
    noun_phrase,
)
from compsense.data.negatives.parse import doc_of
from compsense.data.negatives.ranges import path_swaps
from compsense.data.negatives.swaps import spatial_word_edits
from compsense.data.negatives.text import Edit, Sentence, marker_of, match_case

# One-word prepositions and their opposites. "on" -> "under" only where a thing rests on another
# (see _resting): "on Monday", "on the issue" are not places.
PREPOSITION_FLIPS = {
    "above": "below",
    "below": "above",
    "beneath": "above",
    "over": "under",
    "under": "on",
    "underneath": "on top of",
    "on": "under",
    "toward": "away from",
    "towards": "away from",
    "up": "down",
    "down": "up",
    "behind": "in front of",
    "inside": "outside",
    "outside": "inside",
    "into": "out of",
    "onto": "off",
    "across": None,  # no opposite, but it links two places: side swaps use it
}
MULTIWORD_FLIPS = {
    ("on", "top", "of"): "underneath",
    ("in", "front", "of"): "behind",
    ("out", "of"): "into",
    ("to", "the", "left", "of"): "to the right of",
    ("to", "the", "right", "of"): "to the left of",
    ("north", "of"): "south of",
    ("south", "of"): "north of",
    ("east", "of"): "west of",
    ("west", "of"): "east of",
    ("away", "from"): "toward",
}
# Verbs of resting, placing, hanging and moving: what makes "on", "over", "up" a place or a path.
LOCATIVE_VERBS = frozenset(
    """be sit stand lie rest sleep hang hover float fly park place put set lay leave stay wait
    hide perch lean kneel crouch squat balance stack pile store keep mount install fix build
    grow""".split()
)
MOTION_VERBS = frozenset(
    """walk run go come move jump step climb drive fly swim rush crawl pour drag pull push carry
    slide slip march ride roll fall drop throw kick toss lift raise lower hike cycle race hurry
    head travel sail row wander stroll skate ski sled glide descend ascend leap dive hop sneak
    bring send load insert""".split()
)
# Relations that say where a thing goes, not where it is: they need a verb of motion or placing.
PATH_WORDS = frozenset("up down toward towards away into onto out".split())
# Nouns after a preposition that make it an idiom or a measure, not a place.
NOT_PLACES = frozenset(
    """pressure control investigation review way arrest attack fire threat age law contract
    circumstances condition conditions influence impression assumption name title leadership
    direction supervision guidance command rule years year months month weeks week days day time
    period past course weekend decade century hours minutes night phone radio telephone internet
    air issue matter question subject topic plan plans deal average level levels expectations
    forecast forecasts estimate estimates target limit budget schedule scenes bars times agenda
    record list market basis behalf side hold trial strike duty sale display show television tv
    news wire board line way track edge brink verge threshold surface moon spot lot lots bit couple
    number plenty homework work situation game everything anything nothing left right top bottom
    front back side middle reach class audience public camera cameras jury weather speed summit
    peak emails email inbox""".split()
)
ABSTRACT_SUFFIXES = ("tion", "sion", "ment", "ness", "ity", "ance", "ence", "ism", "ship", "ure")
# Places and things that end like abstract nouns.
CONCRETE_NOUNS = frozenset(
    """station junction intersection fountain sculpture furniture structure picture apartment
    basement monument pavement compartment city university facility entrance fence residence
    mansion pension ship township""".split()
)
DETERMINER_DEPS = ("det", "poss")
# Verbs of position a thing and its place can trade ("the lamp hangs above the desk" -> "the desk
# hangs above the lamp"); not "sleep", "hide", "wait", which need an animate subject.
SIDE_VERBS = frozenset("be sit stand lie hang rest hover float perch lean stack pile park".split())
SIDE_RELATIONS = frozenset("above below under over beneath underneath behind inside across".split())


def _place(tok) -> bool:
    """A noun naming a place or a thing: 'the bench', 'his desk', 'the hills'; not 'pressure'."""
    low = tok.lemma_.lower()
    # the tagger sometimes calls a preposition's object an adjective ("into the oven/JJ")
    nominal = tok.pos_ in ("NOUN", "PROPN") or (tok.dep_ == "pobj" and tok.tag_ == "JJ")
    return (
        nominal
        and tok.ent_type_ not in VALUE_ENTITIES
        and not tok.like_num
        and low not in NOT_PLACES
        and tok.lower_ not in NOT_PLACES
        and (low in CONCRETE_NOUNS or not low.endswith(ABSTRACT_SUFFIXES))
        and (tok.pos_ == "PROPN" or any(c.dep_ in DETERMINER_DEPS for c in tok.children))
    )


# Lemmas the small pipeline gets wrong for verbs this module cares about ("riding" -> "rid").
LEMMA_FIXES = {"rid": "ride"}


def _has_child(tok, word: str) -> bool:
    """'leapt from the roof onto the shed': with a source given, "off the shed" breaks the path."""
    return any(c.lower_ == word for c in tok.children)


def _governor_allows(prep, word: str) -> bool:
    head = prep.head
    lemma = LEMMA_FIXES.get(head.lemma_.lower(), head.lemma_.lower())
    if head.pos_ in ("VERB", "AUX"):
        if word in ("into", "onto", "out", "away", "toward", "towards"):  # "jumped into", not "keep into"
            return lemma in MOTION_VERBS and not _has_child(head, "from")
        if word in PATH_WORDS:
            return lemma in MOTION_VERBS or lemma in LOCATIVE_VERBS
        if word in ("on", "over"):
            return lemma in LOCATIVE_VERBS | MOTION_VERBS
        return True
    # a noun modified by the phrase: "the lamp over the table", "a cat on the mat"
    # "the lamp over the table" but also "sued the giant over the patent": nouns take no "over"
    return head.pos_ in ("NOUN", "PROPN") and word not in PATH_WORDS | {"over"}


# Paths that lead the same way up or down ("walked down the street" = "up the street").
LEVEL_PATHS = frozenset("street road hall corridor hallway lane aisle block avenue path".split())
# Words before a relation that only fit its direction: "high above", "deep inside", "well behind".
DIRECTION_BOUND = frozenset("deep well high low".split())


def _flip_allowed(doc, first: int, new: str, obj) -> bool:
    """The opposite must not be in the sentence already ("behind the hotel or in front of it"
    -> "in front of the hotel or in front of it"), nor a level path or a direction-bound adverb."""
    key = set(new.split()) - {"in", "of", "on", "to", "the", "from", "at"}
    if key and key <= {t.lower_ for t in doc}:
        return False
    if doc[first].lower_ in ("up", "down") and obj.lemma_.lower() in LEVEL_PATHS:
        return False
    return not (first > 0 and doc[first - 1].lower_ in DIRECTION_BOUND)


def _flip(doc, first, last, old: str, new: str, description: str) -> Edit:
    start, end = doc[first].idx, doc[last].idx + len(doc[last].text)
    return Edit(
        ((start, end, match_case(doc.text[start:end], new)),),
        f"{description} '{doc.text[start:end]}' -> '{new}'",
        marker=marker_of(old, new),
    )


def _multiword_at(doc, i: int):
    for words, new in MULTIWORD_FLIPS.items():
        if tuple(t.lower_ for t in doc[i : i + len(words)]) == words:
            return words, new
    return None


def _relation_object(doc, last: int):
    """The noun object of a (multi-word) preposition ending at token `last`."""
    return next((c for c in doc[last].children if c.dep_ == "pobj"), None)


def _preposition_flips(doc) -> list[Edit]:
    edits = []
    taken: set[int] = set()
    for tok in doc:
        if tok.i in taken:
            continue
        multi = _multiword_at(doc, tok.i)
        if multi is not None:
            words, new = multi
            last = tok.i + len(words) - 1
            obj = _relation_object(doc, last)
            taken.update(range(tok.i, last + 1))
            if (
                new
                and obj is not None
                and _place(obj)
                and _governor_allows(tok, words[0])
                and _flip_allowed(doc, tok.i, new, obj)
            ):
                if words == ("on", "top", "of") and tok.head.lemma_.lower() in ("stay", "keep", "get"):
                    continue  # "stay on top of your emails" is an idiom
                edits.append(_flip(doc, tok.i, last, " ".join(words), new, "flipped the relation"))
            continue
        new = PREPOSITION_FLIPS.get(tok.lower_)
        # "climbing down a ladder": the small parser calls "down" a particle with an object
        if new is None or tok.dep_ not in ("prep", "prt") or not tok.text.islower():
            continue
        obj = _relation_object(doc, tok.i)
        if obj is None or not _place(obj) or not _governor_allows(tok, tok.lower_):
            continue
        if tok.lower_ == "on" and not _resting(tok):
            continue
        if not _flip_allowed(doc, tok.i, new, obj):
            continue
        edits.append(_flip(doc, tok.i, tok.i, tok.lower_, new, "flipped the relation"))
    return edits


def _resting(prep) -> bool:
    """'sat on the bench', 'a cup on the table': a thing on top of another."""
    head = prep.head
    return head.lemma_.lower() in LOCATIVE_VERBS - {"be"} or (
        head.pos_ in ("NOUN",) and head.dep_ in ("nsubj", "ROOT", "dobj", "attr")
    )


def _relation_word(doc, prep) -> str | None:
    """The spatial relation a preposition opens ('above', 'in front of'), or None."""
    multi = _multiword_at(doc, prep.i)
    if multi is not None:
        return " ".join(multi[0])
    return prep.lower_ if prep.lower_ in SIDE_RELATIONS | {"on"} else None


def _side_swaps(doc) -> list[Edit]:
    """'The lamp is above the desk.' -> 'The desk is above the lamp.'"""
    edits = []
    for verb in doc:
        if verb.lemma_.lower() not in SIDE_VERBS:
            continue
        subj = next((c for c in verb.children if c.dep_ == "nsubj"), None)
        if subj is None:
            continue
        for prep in verb.children:
            if prep.dep_ != "prep":
                continue
            relation = _relation_word(doc, prep)
            if relation is None:
                continue
            last = prep.i + len(relation.split()) - 1
            obj = _relation_object(doc, last)
            if obj is None or not _place(obj) or not _place_subject(subj):
                continue
            edit = _swap(doc, noun_phrase(doc, subj), noun_phrase(doc, obj), "the sides of the relation", True, verb)
            if edit:
                edits.append(edit)
    for subj, other, comparative in comparison_sides(doc):
        if comparative.lower_ in DISTANCE_COMPARATIVES:
            edit = _swap(
                doc,
                noun_phrase(doc, subj),
                noun_phrase(doc, other),
                "the sides of the distance",
                True,
                comparative.head,
            )
            if edit:
                edits.append(edit)
    return edits


def _place_subject(tok) -> bool:
    """A subject that can sit on either side of a place relation: a thing or a name."""
    return tok.pos_ in ("NOUN", "PROPN") and tok.ent_type_ not in VALUE_ENTITIES and not tok.like_num


def spatial_edits(sent: Sentence) -> list[Edit]:
    doc = doc_of(sent.text)
    return spatial_word_edits(sent) + _preposition_flips(doc) + _side_swaps(doc) + path_swaps(sent)
