"""Binding: the same words, bound differently. The authors' `binding_negation` ("Modifier
Rebinding", evaluate_embeddings.py): which argument or modifier attaches to which word.

- role swap: subject and object of a verb ("The lawyer questioned the witness." -> "The witness
  questioned the lawyer."), in statements, questions and under modals or perfects;
- passive swap: patient and agent ("The thief was caught by the guard." -> "The guard was caught
  by the thief.");
- relative-clause swap: the noun a relative clause modifies and the clause's object ("The nurse
  who helped the doctor left." -> "The doctor who helped the nurse left.");
- comparison swap: the two sides of a comparison ("The river is wider than the canal.");
- modifier swap: the adjectives of two nouns ("a red box on a blue table" -> "a blue box on a red
  table").

The spans come from spaCy's dependency parse (parse.py), which word lists cannot give: where a
noun phrase ends, which noun is the passive's agent. Never moved: numbers, dates, times, amounts
(those swaps are `numeric`), pronouns (their case would break: "She called him"), wh-words, and
phrases holding punctuation or a verb (an appositive or clause would be torn). Symmetric verbs
("met", "married") and a bare coordination ("tea and coffee") are left alone: swapping keeps
their meaning. A swap that would break agreement ("The dogs chase the cat" -> "The cat chase the
dogs") is only made when both phrases have the same grammatical number. A comparison whose scale
is a distance ("Rome is closer than Paris") is spatial (spatial.py), as the authors file it.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from compsense.data.negatives.parse import doc_of
from compsense.data.negatives.ranges import AMOUNT_WORDS
from compsense.data.negatives.rules import indefinite_article
from compsense.data.negatives.text import Edit, Sentence

SYMMETRIC_VERBS = frozenset(
    """meet marry play face fight join match resemble date tie equal accompany neighbor neighbour
    border touch kiss hug""".split()
)
# Verbs whose object is rarely a participant that could take the subject's role ("The firm made
# a profit" -> "A profit made the firm"): a swap gives nonsense, not a near-miss.
LIGHT_VERBS = frozenset(
    """be have get make take give do say tell include become seem mean need want use show cost
    expect see hold keep let put set know think find feel reach total contain leave""".split()
)
# Who or what a noun names: a person (or an organisation, which acts like one), an animal, or a
# thing. A swap trades two phrases of one kind only. Across kinds ("A man is slicing a tomato" ->
# "A tomato is slicing a man", "A man is riding a horse" -> "A horse is riding a man") the result
# is implausible, and a blind bag-of-words probe spots it from the words alone ("horse is", "fish
# is": artefact AUC 0.85 on STS-B captions without this guard): a model would learn plausibility,
# not binding. The price: the authors' "The dog bit the man" is a swap this module does not make.
PERSON_NOUNS = frozenset(
    """man men woman women boy boys girl girls child children kid kids baby babies toddler person
    people player players guy guys lady ladies gentleman friend friends family father mother dad mom
    son daughter brother sister husband wife uncle aunt grandfather grandmother grandma grandpa
    parent parents officer officers police policeman policemen cop cops soldier soldiers doctor
    doctors nurse nurses teacher teachers student students worker workers driver drivers pilot
    farmer farmers chef cook waiter waitress customer customers lawyer lawyers judge jury witness
    suspect suspects thief victim victims president minister senator governor mayor leader leaders
    official officials king queen prince princess knight dragon wizard team teams company companies
    firm firms bank banks agency government council court union board army committee rebels crowd
    audience investors analysts voters fans athlete athletes runner runners rider cyclist skier
    surfer swimmer dancer dancers singer musician musicians actor actress artist photographer
    reporter journalist editor author writer scientist scientists researcher researchers engineer
    manager boss employee employees staff clerk guard guards coach referee captain sailor sailors
    fisherman hunter hiker hikers climber tourist tourists passenger passengers pedestrian
    protesters crew consultant consultants mechanic mechanics plumber electrician carpenter builder
    architect designer developer programmer analyst accountant banker broker trader dealer seller
    buyer vendor supplier client clients patient patients resident residents citizen citizens
    neighbour neighbor neighbours neighbors tenant tenants landlord owner owners partner partners
    rival rivals opponent opponents enemy enemies ally allies champion challenger winner loser
    candidate candidates voter member members chairman chairwoman chief director directors executive
    executives founder founders investor shareholder shareholders regulator regulators prosecutor
    prosecutors defendant plaintiff attorney attorneys detective inspector inspectors agent agents
    spy diplomat ambassador general commander sergeant lieutenant troops militants gunmen attacker
    attackers intern interns trainee apprentice tutor professor professors principal lecturer pupil
    pupils scholar expert experts specialist surgeon dentist therapist pharmacist paramedic
    firefighter firefighters ranger lifeguard janitor cashier bartender barber baker butcher butler
    gardener maid servant host hostess guest guests visitor visitors stranger strangers traveler
    traveller commuter shopper shoppers spectator spectators viewer viewers listener listeners
    reader readers user users consumer consumers patron subscriber goalkeeper goalie striker
    defender batter pitcher catcher quarterback boxer wrestler fighter golfer tennis skater jockey
    pirate sheriff outlaw monk priest nun bishop pope emperor empress duke duchess lord giant witch
    ghost startup startups corporation corporations agencies ministry department administration
    regime authorities hospital school university college club league federation association network
    airline airlines insurer insurers lender lenders retailer retailers manufacturer manufacturers
    publisher studio studios newspaper party parties coalition senate congress parliament cabinet""".split()
)
ANIMAL_NOUNS = frozenset(
    """dog dogs puppy puppies cat cats kitten kittens horse horses pony cow cows calf sheep lamb goat
    goats pig pigs bird birds chicken duck ducks eagle hawk owl parrot lion lions tiger bear bears
    wolf wolves fox mouse mice rat rabbit deer monkey monkeys elephant elephants giraffe zebra camel
    donkey snake fish shark sharks whale dolphin bee bees ant ants spider insect insects frog turtle
    squirrel seal seals penguin hen hens rooster falcon falcons crow crows raven pigeon pigeons
    sparrow goose geese swan heron stork ostrich peacock bull bulls ox oxen buffalo bison moose elk
    antelope gazelle leopard cheetah panther jaguar hyena rhino hippo gorilla chimpanzee ape
    kangaroo koala panda otter beaver hamster guinea lizard crocodile alligator toad octopus crab
    lobster worm butterfly moth wasp hornet mosquito fly beetle caterpillar""".split()
)
PERSON_ENTITIES = frozenset("PERSON ORG NORP GPE".split())
# Entity types a swap must not move: those edits are numbers and dates (the `numeric` family).
VALUE_ENTITIES = frozenset("DATE TIME MONEY PERCENT CARDINAL QUANTITY ORDINAL".split())
NOUN_TAGS = frozenset("NN NNS NNP NNPS".split())
PLURAL_TAGS = frozenset("NNS NNPS".split())
MAX_PHRASE_TOKENS = 7
DIRECTION_WORDS = frozenset("north south east west left right up down top bottom i".split())
DETERMINERS = frozenset("a an the this that these those my his her its our their your".split())
DISTANCE_COMPARATIVES = frozenset("closer nearer farther further".split())
# Modifier swaps trade adjectives of concrete, visible properties (the authors' "a red box on a
# blue table", evaluate_embeddings.py): after a swap each still describes a thing. Abstract or
# evaluative ones, common in news ("a substantial interest ... excellent potential" -> "an
# excellent interest ... substantial potential", "high intake of olive oil"), give nonsense or
# idioms, not a rebinding.
PROPERTY_ADJECTIVES = frozenset(
    """red blue green yellow black white brown orange purple pink grey gray silver golden gold beige
    tan dark light bright pale striped spotted plaid checkered colorful colourful small large big
    tiny huge little tall short long wide narrow thick thin fat skinny round square flat wooden
    metal metallic plastic glass steel stone brick paper leather cotton wool woolen wooden ceramic
    rubber concrete iron copper brass marble velvet silk denim old young elderly hot cold warm cool
    wet dry empty full open closed clean dirty broken heavy soft hard shiny smooth rough sharp blunt
    fresh ripe rotten raw cooked frozen asleep awake happy sad angry smiling crying hungry tired
    sleeping running barefoot shirtless bald curly blond blonde""".split()
)
# Adjectives that do not describe their noun ("the same", "other", "former"), or quantify it:
# trading them is not rebinding a property.
NOT_PROPERTIES = frozenset(
    """other same such many few own only main certain various several previous recent total full
    further additional much more most less least former latter next last first second third
    whole entire particular specific individual overall general usual possible likely
    so-called left right top bottom front back upper lower inner outer middle northern southern
    eastern western central""".split()
)


@dataclass(frozen=True)
class Span:
    start: int  # character offsets into the text
    end: int
    text: str
    plural: bool
    name: bool  # starts with a proper noun: keeps its capital wherever it goes
    first_token: int
    kind: str = "thing"  # "person", "animal" or "thing" (noun_kind)


def _bad_token(tok) -> bool:
    return (
        tok.ent_type_ in VALUE_ENTITIES
        or tok.like_num
        or (tok.pos_ in ("VERB", "AUX") and tok.dep_ not in ("amod", "compound"))  # "a sleeping baby" moves
        or tok.pos_ == "PRON"
        or tok.tag_ in ("WDT", "WP", "WP$", "WRB")
        or (tok.is_punct and not (tok.text == "-" or tok.tag_ == "POS"))  # "blue-green", "the girls' bikes"
        or tok.lower_ in ("'t", "’t", "n't", "n’t", "not")
        or (tok.lower_ == "t" and tok.i > 0 and tok.nbor(-1).text in ("'", "’"))  # MRPC's "won 't", split
        or tok.dep_ == "advmod"  # "a soccer ball outside": an adverb of the clause, not of the noun
        or tok.lower_ in ("and", "or", "but")
    )


def _span(doc, tokens: list, head) -> Span | None:
    """The phrase made of `tokens` (contiguous, headed by a noun), or None if it must not move."""
    tokens = sorted(tokens, key=lambda t: t.i)
    if not tokens or tokens[-1].i - tokens[0].i + 1 != len(tokens) or len(tokens) > MAX_PHRASE_TOKENS:
        return None
    if head.tag_ not in NOUN_TAGS or any(_bad_token(t) for t in tokens):
        return None
    # a phrase with a non-"of" prepositional phrase: the small parser often attaches it wrongly
    # ("sued the giant over the patent", "a chef in a white apron ... in a black suit")
    if any(t.dep_ == "prep" and t.lower_ != "of" for t in tokens):
        return None
    if _in_compound_word(doc, tokens[0]) or _in_compound_word(doc, tokens[-1]):  # "an e" of "e-mail"
        return None
    if len(head.text) < 2 or any(t.lower_ in AMOUNT_WORDS for t in tokens):  # "won 't" -> "t"; "half a percent"
        return None
    if head.lower_ in DIRECTION_WORDS:  # "east of the capital" is a place relation, not a participant
        return None
    start, end = tokens[0].idx, tokens[-1].idx + len(tokens[-1].text)
    # a name keeps its capital wherever it goes; the tagger sometimes calls a capital "A" a PROPN
    # and a sentence-initial capital word is a name only if the recogniser calls it an entity
    # ("Rebels attacked the convoy" -> "the convoy attacked rebels")
    first = tokens[0]
    name = first.pos_ == "PROPN" and first.lower_ not in DETERMINERS
    if name and first.i == _first_word_index(doc) and not first.ent_type_ and first.tag_ != "NNP":
        name = False
    return Span(start, end, doc.text[start:end], head.tag_ in PLURAL_TAGS, name, tokens[0].i, noun_kind(head))


def noun_kind(noun) -> str:
    """ "person" (people, organisations, named persons and groups), "animal" or "thing"."""
    words = {noun.lemma_.lower(), noun.lower_}
    if words & PERSON_NOUNS or noun.ent_type_ in PERSON_ENTITIES:
        return "person"
    return "animal" if words & ANIMAL_NOUNS else "thing"


def noun_phrase(doc, head) -> Span | None:
    """The whole phrase a noun heads (its subtree)."""
    return _span(doc, list(head.subtree), head)


def _core_phrase(doc, head) -> Span | None:
    """A noun with only what precedes it (determiner, adjectives, compounds): the antecedent of a
    relative clause without the clause."""
    return _span(doc, [t for t in head.subtree if t.i <= head.i], head)


def _first_word_index(doc) -> int:
    return next((t.i for t in doc if t.is_alpha or t.like_num), 0)


def _moved(doc, span: Span) -> str:
    """A phrase's text for its new place: "The company" loses a sentence-initial capital."""
    first_word = span.text.split()[0]
    acronym = len(first_word) > 1 and first_word.isupper()
    if span.first_token == _first_word_index(doc) and not span.name and not acronym:
        return span.text[:1].lower() + span.text[1:]
    return span.text


def _name_like(doc, span: Span, other: Span) -> Span:
    """A bare capitalised word opening the sentence, traded with a name, is a name too: the tagger
    often calls "Federer" in "Federer beat Nadal" a common noun, and "federer" would be wrong."""
    bare = " " not in span.text and span.text[:1].isupper() and span.first_token == _first_word_index(doc)
    return replace(span, name=True) if bare and other.name and not span.name else span


def _shares_a_noun(a: Span, b: Span) -> bool:
    words = lambda s: {w.strip(".,'\"").lower() for w in s.text.split()} - DETERMINERS - {"of"}  # noqa: E731
    return bool(words(a) & words(b))


def _swap(doc, a: Span | None, b: Span | None, what: str, agree: bool, verb=None) -> Edit | None:
    """Trade phrases a (the subject, when there is one) and b. With `agree`, or a `verb` whose form
    shows a number, both must have one grammatical number; with `verb`, b must also have the number
    the verb's form shows ("A group of sheep are on a hill" -> "A hill are on ..." is refused: the
    verb agreed with "sheep")."""
    if a is None or b is None or a.text.lower() == b.text.lower():
        return None
    if a.end > b.start and b.end > a.start:  # overlapping phrases
        return None
    if a.kind != b.kind:  # a person and a thing: "A tomato is slicing a man"
        return None
    if _shares_a_noun(a, b):  # "The court reversed the decision of that court": the swap reads the same
        return None
    if agree and a.plural != b.plural:
        return None
    number = _verb_number(verb) if verb is not None else None
    if number is not None and (a.plural != b.plural or b.plural != (number == "pl")):
        return None
    a, b = _name_like(doc, a, b), _name_like(doc, b, a)
    return Edit(
        ((a.start, a.end, _moved(doc, b)), (b.start, b.end, _moved(doc, a))),
        f"swapped {what} '{a.text}' and '{b.text}'",
    )


SINGULAR_FORMS = frozenset("is was has does 's".split())
PLURAL_FORMS = frozenset("are were have do 're".split())


def _verb_number(verb) -> str | None:
    """ "sg" or "pl" when the verb group's finite form shows a number ("runs", "are"), else None."""
    group = [verb, *(c for c in verb.children if c.dep_ in ("aux", "auxpass"))]
    if any(t.tag_ == "MD" for t in group):  # "would have beaten": a modal shows no number
        return None
    for t in group:
        if t.tag_ == "VBZ" or t.lower_ in SINGULAR_FORMS:
            return "sg"
        if t.tag_ == "VBP" or t.lower_ in PLURAL_FORMS:
            return "pl"
    return None


def _child(tok, *deps: str):
    return next((c for c in tok.children if c.dep_ in deps), None)


def _has_coordination(tok) -> bool:
    return any(c.dep_ in ("conj", "cc") for c in tok.children)


def _role_swaps(doc) -> list[Edit]:
    edits = []
    for verb in doc:
        if verb.pos_ != "VERB" or verb.lemma_.lower() in SYMMETRIC_VERBS | LIGHT_VERBS:
            continue
        subj, obj = _child(verb, "nsubj"), _child(verb, "dobj")
        # a ditransitive ("paid the seller the full amount") would trade a giver for a thing given
        ditransitive = _child(verb, "dative") is not None
        if (
            subj is not None
            and obj is not None
            and not ditransitive
            and not (_has_coordination(subj) or _has_coordination(obj))
        ):
            edit = _swap(doc, noun_phrase(doc, subj), noun_phrase(doc, obj), "the roles of", False, verb)
            if edit:
                edits.append(edit)
        patient, agent = _child(verb, "nsubjpass"), _child(verb, "agent")
        agent_noun = _child(agent, "pobj") if agent is not None else None
        if patient is not None and agent_noun is not None and verb.lemma_.lower() not in SYMMETRIC_VERBS:
            edit = _swap(doc, noun_phrase(doc, patient), noun_phrase(doc, agent_noun), "the roles of", False, verb)
            if edit:
                edits.append(edit)
    return edits


def _relative_clause_swaps(doc) -> list[Edit]:
    """'The nurse who helped the doctor' -> 'The doctor who helped the nurse'."""
    edits = []
    for verb in doc:
        if verb.dep_ != "relcl" or verb.lemma_.lower() in SYMMETRIC_VERBS | LIGHT_VERBS:
            continue
        rel, obj = _child(verb, "nsubj"), _child(verb, "dobj")
        if rel is None or rel.lower_ not in ("who", "that", "which") or obj is None:
            continue
        # only a subject antecedent: "repaid the donor who funded the wing" -> "the wing who ..." breaks
        # (a noun ROOT is how the small parser reads a subject whose verb it misses: "left" as VBN)
        if verb.head.dep_ not in ("nsubj", "nsubjpass", "ROOT"):
            continue
        # the antecedent agrees with the clause's verb and with its own clause's verb: same number
        edit = _swap(doc, _core_phrase(doc, verb.head), noun_phrase(doc, obj), "the roles of", True)
        if edit:
            edits.append(edit)
    return edits


def comparison_sides(doc):
    """(subject, other side, comparative word) for every 'A is ADJ-er than B' and 'A VERBs ADV-er
    than B' ("Copper conducts heat better than steel") in the sentence."""
    out = []
    for than in doc:
        if than.lower_ != "than" or than.dep_ != "prep":
            continue
        other = _child(than, "pobj")
        comparative = than.head
        if comparative.lower_ in ("more", "less") and comparative.head.pos_ == "ADJ":
            comparative = comparative.head
        if other is None or comparative.tag_ not in ("JJR", "RBR", "JJ"):
            continue
        verb = comparative.head
        subj = _child(verb, "nsubj") if verb.pos_ in ("VERB", "AUX") else None
        if subj is not None:
            out.append((subj, other, comparative))
    return out


def _comparison_swaps(doc) -> list[Edit]:
    edits = []
    for subj, other, comparative in comparison_sides(doc):
        if comparative.lower_ in DISTANCE_COMPARATIVES:
            continue
        edit = _swap(doc, noun_phrase(doc, subj), noun_phrase(doc, other), "the sides of the comparison", True)
        if edit:
            edits.append(edit)
    return edits


def _clause_verb(noun):
    """The verb whose clause a noun belongs to, up through prepositions and the nouns it modifies
    (the sentence's root in a caption with no verb); None when it is too far up to tell."""
    tok = noun
    for _ in range(6):
        if tok.pos_ in ("VERB", "AUX") or tok.head.i == tok.i:
            return tok
        tok = tok.head
    return None


def _in_compound_word(doc, tok) -> bool:
    """Part of a hyphenated word ("blue-chip", "20-year-old"): trading it breaks the word."""
    before = doc[tok.i - 1] if tok.i > 0 else None
    after = doc[tok.i + 1] if tok.i + 1 < len(doc) else None
    return (before is not None and before.text == "-" and before.idx + 1 == tok.idx) or (
        after is not None and after.text == "-" and tok.idx + len(tok.text) == after.idx
    )


def _property_adjectives(doc) -> list:
    """Adjectives that describe a common noun ("red" in "a red box"), in sentence order."""
    out = []
    for adj in doc:
        noun = adj.head
        if (
            adj.dep_ == "amod"
            and adj.tag_ in ("JJ", "VBG", "VBN")  # "a sleeping baby", "a striped cat"
            and adj.is_alpha
            and adj.text.islower()
            and adj.lower_ not in NOT_PROPERTIES
            and adj.lower_ in PROPERTY_ADJECTIVES
            and noun.tag_ in ("NN", "NNS")
            and noun.ent_type_ not in VALUE_ENTITIES
            and adj.i < noun.i
            and not _in_compound_word(doc, adj)
            and adj.ent_type_ not in VALUE_ENTITIES  # "seventh term"
            and adj.dep_ != "conj"
            and not any(c.dep_ in ("cc", "conj") for c in adj.children)  # "a black and white dog"
        ):
            out.append(adj)
    return out


def _adjective_replacement(doc, adj, new: str) -> tuple[tuple[int, int, str], ...]:
    """Put `new` in place of `adj`, turning a preceding "a"/"an" into the article `new` needs."""
    out = [(adj.idx, adj.idx + len(adj.text), new)]
    before = doc[adj.i - 1] if adj.i > 0 else None
    if before is not None and before.lower_ in ("a", "an") and indefinite_article(new) != before.lower_:
        article = indefinite_article(new)
        article = article.capitalize() if before.text[0].isupper() else article
        out.insert(0, (before.idx, before.idx + len(before.text), article))
    return tuple(out)


def _modifier_swaps(doc) -> list[Edit]:
    """The first property adjective of each of two neighbouring nouns trade places ("a large brown
    dog ... a small white cat" -> "a small brown dog ... a large white cat")."""
    by_noun: dict[int, list] = {}
    for adj in _property_adjectives(doc):
        by_noun.setdefault(adj.head.i, []).append(adj)
    firsts = [adjs[0] for _, adjs in sorted(by_noun.items())]
    edits = []
    for a, b in zip(firsts, firsts[1:]):
        if a.lower_ == b.lower_ or a.head.lemma_ == b.head.lemma_ or noun_kind(a.head) != noun_kind(b.head):
            continue  # "a young boy with a red ball" -> "a red boy with a young ball": kinds differ
        # two nouns of one clause ("a red box on a blue table"), not two adjectives of one noun
        # phrase ("the international atomic energy agency") nor of two clauses
        if b.i < a.head.i or _clause_verb(a.head) is None or _clause_verb(a.head) != _clause_verb(b.head):
            continue
        if b.lower_ in {x.lower_ for x in by_noun[a.head.i]} or a.lower_ in {x.lower_ for x in by_noun[b.head.i]}:
            continue  # "a small red car" would become "a red red car"
        edits.append(
            Edit(
                (*_adjective_replacement(doc, a, b.text), *_adjective_replacement(doc, b, a.text)),
                f"swapped the adjectives '{a.text} {a.head.text}' / '{b.text} {b.head.text}'",
            )
        )
    return edits


def binding_edits(sent: Sentence) -> list[Edit]:
    doc = doc_of(sent.text)
    return _role_swaps(doc) + _relative_clause_swaps(doc) + _comparison_swaps(doc) + _modifier_swaps(doc)
