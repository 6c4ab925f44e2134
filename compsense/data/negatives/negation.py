"""Negation: add or remove it, with the auxiliary and verb form English requires.

Adding: "is" -> "is not", "can" -> "cannot", "has been" -> "has not been", "runs" -> "does not
run", "ran" -> "did not run", "has a" -> "does not have a", "Add the" -> "Do not add the",
"always" -> "never", "still" -> "no longer", "managed to" -> "failed to", "likely" -> "unlikely".
Removing is the mirror image ("didn't go" -> "went", "cannot" -> "can", "never" -> "always").

Removal exists so that "not" is not a label: a sentence that already holds a negation yields a
near-miss without one, and pair building balances the two directions (see pairs.py). Finite
lexical verbs are recognised from a curated verb list plus a subject to their left; a verb that
might be a participle or a noun ("hired by", "the plans") is left alone, because a wrong parse
gives an ungrammatical sentence and precision matters more than yield.
"""

from __future__ import annotations

from compsense.data.negatives.lexicons import (
    AUXILIARIES,
    BE_FORMS,
    CLAUSE_OPENERS,
    DETERMINERS,
    DO_FORMS,
    ENGLISH_FUNCTION_WORDS,
    HAVE_FORMS,
    MODALS,
    NOUN_LIKE_VERBS,
    PARTICIPLES,
    PAST_TO_BASE,
    POST_NOT_ADVERBS,
    PRE_NOT_ADVERBS,
    PRE_VERB_ADVERBS,
    QUANTIFIER_DETERMINERS,
    REPORTING_FORMS,
    STEER_VERBS,
    SUBJECT_ADVERBS,
    SUBJECT_PRONOUNS,
    THIRD_TO_BASE,
    VERBS,
    WH_WORDS,
    unlisted_regular_forms,
)
from compsense.data.negatives.parse import doc_of
from compsense.data.negatives.rules import (
    IRREGULAR_PLURALS,
    Swap,
    SwapTable,
    all_of,
    followed_by,
    is_content_word,
    is_finite_verb_form,
    is_quantity,
    looks_participle,
    looks_plural,
    not_followed_by,
    not_preceded_by,
    swap_pairs,
)
from compsense.data.negatives.text import Edit, Sentence

# Negated auxiliaries written as one token, their stems before a separate "'t" (MRPC writes
# "doesn 't"), and the positive auxiliary each stands for.
NEGATED_AUX = {
    "isn't": "is",
    "aren't": "are",
    "wasn't": "was",
    "weren't": "were",
    "don't": "do",
    "doesn't": "does",
    "didn't": "did",
    "hasn't": "has",
    "haven't": "have",
    "hadn't": "had",
    "can't": "can",
    "cannot": "can",
    "couldn't": "could",
    "won't": "will",
    "wouldn't": "would",
    "shouldn't": "should",
    "mustn't": "must",
    "mightn't": "might",
    "needn't": "need",
}
NEGATED_AUX.update({k.replace("'", "’"): v for k, v in list(NEGATED_AUX.items())})
NEGATED_STEMS = {k[:-2]: v for k, v in NEGATED_AUX.items() if k.endswith(("n't", "n’t"))}
PTB_STEMS = {"ca": "can", "wo": "will"}  # Penn Treebank writes "ca n't", "wo n't"
# Auxiliaries with a contracted negation, and the written stem before "'t".
CONTRACTION_STEMS = {
    "is": "isn",
    "are": "aren",
    "was": "wasn",
    "were": "weren",
    "has": "hasn",
    "have": "haven",
    "had": "hadn",
    "do": "don",
    "does": "doesn",
    "did": "didn",
    "can": "can",
    "could": "couldn",
    "will": "won",
    "would": "wouldn",
    "should": "shouldn",
}
# Words that need a negation before them in their clause.
NEGATIVE_POLARITY_ITEMS = frozenset("any anything anyone anybody anywhere anymore yet ever until till".split())
CLAUSE_BREAKS = frozenset(", ; : . ? ! but and because although while when".split())
NOT_TOKENS = frozenset(["not", "n't", "n’t", "'t", "’t"])
# After these, dropping "not" would leave a broken construction ("is not only X but Y").
KEEP_NOT_BEFORE = frozenset("only even much so enough just merely".split())
# What a copula or modal must not be followed by for "not" to go after it.
NO_NOT_BEFORE = NOT_TOKENS | frozenset("never no nothing none nobody neither nor some".split())
NEGATIVE_SUBJECTS = frozenset("nobody nothing none neither no never".split())
TIME_CLAUSE_OPENERS = frozenset("before after until till once since as".split())
# Objects that already carry a negative sense: "did not offer little comfort" reads as a double negative.
NEGATIVE_OBJECTS = frozenset("little few no nothing none never hardly barely".split())
# Adverbs without -ly that can stand where a subject noun would ("Allison just proves").
PLAIN_ADVERBS = frozenset(
    "just even only often always never soon still already also again now then here there too very "
    "almost quite rather ever yet once twice later earlier instead perhaps maybe".split()
)
# Verbs that take a "to"-infinitive, so "decided to go" -> "decided not to go" reads naturally.
INFINITIVE_VERBS = frozenset(
    "decide agree plan want try hope ask promise choose expect intend prefer seem appear urge "
    "warn order vote remember forget learn threaten offer".split()
)
_INFINITIVE_FORMS = frozenset(form for base in INFINITIVE_VERBS for form in (base, *VERBS[base].values()))

LEXICAL_NEGATIONS = SwapTable(
    [
        # always/never and still/no longer: the commonest negations that carry no "not".
        Swap(("always",), "never", not_preceded_by({"not", "almost", "nearly"}), "add"),
        Swap(
            ("never",),
            "always",
            all_of(not_followed_by({"before", "again", "ever", "once", "mind"}), not_preceded_by({"almost", "nearly"})),
            "remove",
        ),
        Swap(("no", "longer"), "still", None, "remove"),
        *[
            Swap((w,), new, followed_by({"to"}), d)
            for w, new, d in [
                ("managed", "failed", "add"),
                ("failed", "managed", "remove"),
                ("manages", "fails", "add"),
                ("fails", "manages", "remove"),
                ("agreed", "refused", "add"),
                ("refused", "agreed", "remove"),
                ("agrees", "refuses", "add"),
                ("refuses", "agrees", "remove"),
                ("declined", "agreed", "remove"),
            ]
        ],
        *[
            Swap((w,), new, followed_by({"that"}), d)
            for w, new, d in [
                ("confirmed", "denied", "add"),
                ("denied", "confirmed", "remove"),
                ("confirms", "denies", "add"),
                ("denies", "confirms", "remove"),
                ("admitted", "denied", "add"),
                ("admits", "denies", "add"),
            ]
        ],
    ]
)

# Adjectives whose negation is a prefix; the guard keeps them predicative or attributive
# ("is likely to", "a fair trial"), away from verbs, nouns and idioms ("clear the way", "in
# common", "in the stable"). "expected" is absent: "is expected to" has no "is unexpected to".
_ADJECTIVE_CONTEXT = BE_FORMS | frozenset(
    "be been being very more most less least seem seems seemed appear appears appeared remain "
    "remains remained become becomes became highly".split()
)
MORPHOLOGICAL_PAIRS = (
    "able>unable, likely>unlikely, possible>impossible, legal>illegal, safe>unsafe, "
    "happy>unhappy, correct>incorrect, accurate>inaccurate, clear>unclear, aware>unaware, "
    "fair>unfair, successful>unsuccessful, profitable>unprofitable, healthy>unhealthy, "
    "available>unavailable, visible>invisible, active>inactive, complete>incomplete, "
    "relevant>irrelevant, sufficient>insufficient, common>uncommon, necessary>unnecessary, "
    "popular>unpopular, consistent>inconsistent, effective>ineffective, "
    "usual>unusual, acceptable>unacceptable, reliable>unreliable, stable>unstable, "
    "significant>insignificant, responsible>irresponsible"
)


def _adjective_use(sent: Sentence, i: int, j: int) -> bool:
    prev = sent.low(i - 1)
    return prev in _ADJECTIVE_CONTEXT or (prev in DETERMINERS and is_content_word(sent, j))


def _morphological_swaps() -> list[Swap]:
    guard = _adjective_use
    out = []
    for pair in swap_pairs(MORPHOLOGICAL_PAIRS, guard, both_ways=True):
        added = len(pair.new) > len(pair.old[0])
        out.append(Swap(pair.old, pair.new, guard, "add" if added else "remove"))
    return out


MORPHOLOGICAL_NEGATIONS = SwapTable(_morphological_swaps())


def inflect(base: str, aux: str) -> str:
    """The verb form that replaces "do/does/did + base" once the negation is gone."""
    if base == "have":
        return {"do": "have", "does": "has", "did": "had"}[aux]
    if base == "do":
        return aux
    return {"do": base, "does": VERBS[base]["third"], "did": VERBS[base]["past"]}[aux]


def _without_do_support(sent: Sentence, after: int, aux: str) -> tuple[int, str, str] | None:
    """What replaces "do/does/did not [adverbs] verb" once the negation goes: (end, text, verb), or None.

    "did not specify" -> "specified", "does not immediately return" -> "immediately returns",
    "Do not be late" -> "Be late". Keeping the auxiliary ("did specify") is English, but emphatic
    and rare, so "did" alone would mark the near-miss: a blind bag-of-words learnt it (artefact
    AUC 0.72 on negation while 29% of do-removals kept it). A verb missing from the verb lists is
    accepted when spaCy tags it a base form and the -ed rule is safe for it; otherwise no edit.

    The verb joins the edit's marker ("did not specify>", its reverse ">did not specify"), so pairs
    balance adding and removing per verb: the two directions draw different verbs (news writes
    "did not respond" far more than "responded"), and a bag of words read the verb form as the
    label (negation artefact AUC 0.705 -> 0.649 when only these were balanced per verb).
    """
    k = after
    while k < after + 2 and sent.is_word(k) and (sent.low(k) in PRE_VERB_ADVERBS or _ly_adverb(sent.low(k))):
        k += 1
    verb = sent.low(k)
    if not sent.is_word(k):
        return None
    adverbs = sent.substring(after, k) + " " if k > after else ""
    if verb in VERBS or verb in ("have", "do"):
        return k + 1, adverbs + inflect(verb, aux), verb
    if not _tagged_base_verb(sent, k):
        return None
    if aux == "do":  # "do not X" -> "X"
        return k + 1, adverbs + verb, verb
    if verb == "be":  # "does not be" is no English to undo
        return None
    forms = unlisted_regular_forms(verb)
    if forms is None:
        return None
    return k + 1, adverbs + (forms[0] if aux == "does" else forms[1]), verb


def _ly_adverb(low: str) -> bool:
    return len(low) > 4 and low.endswith("ly") and low not in ("apply", "reply", "supply", "rely", "fly", "ally")


def _tagged_base_verb(sent: Sentence, k: int) -> bool:
    """spaCy tags token k as a verb's base form (VB): "specify" in "did not specify the terms"."""
    start = sent.tokens[k].start
    token = next((t for t in doc_of(sent.text) if t.idx == start), None)
    return token is not None and token.tag_ == "VB" and token.text.lower() == sent.low(k)


def _negation_removals(sent: Sentence, i: int) -> list[Edit]:
    """Edits that drop an auxiliary's negation at token i ("isn't" / "is not" / "doesn 't")."""
    low = sent.low(i)
    if low in NEGATED_AUX:
        aux, after = NEGATED_AUX[low], i + 1
    elif low in NEGATED_STEMS and sent.low(i + 1) in ("'t", "’t"):
        aux, after = NEGATED_STEMS[low], i + 2
    elif (low in AUXILIARIES or low in PTB_STEMS) and sent.low(i + 1) in NOT_TOKENS:
        aux, after = PTB_STEMS.get(low, low), i + 2
    else:
        return []
    if sent.low(after) in KEEP_NOT_BEFORE or _licenses_npi(sent, after + (sent.low(after) == "yet")):
        return []
    if _inverted(sent, i) and i == sent.first_word_index:  # "Didn't you lock it?" asks what "Did you" asks
        return []
    negation = "not" if sent.low(after - 1) == "not" else "n't"
    marker = "cannot>can" if low == "cannot" else f"{aux} {negation}>"
    end, new = after, aux
    verb = sent.low(after)
    if verb == "yet":  # "has not yet been" -> "has already been"
        end, new = after + 1, f"{aux} already"
    elif aux in DO_FORMS and sent.is_word(after) and not _inverted(sent, i):  # "Why doesn't it go": keep "does"
        support = _without_do_support(sent, after, aux)
        if support is None:
            return []
        end, new, lemma = support
        marker = f"{aux} {negation} {lemma}>"
    return [
        Edit((sent.replace(i, end, new),), f"removed negation '{sent.substring(i, end)}' -> '{new}'", "remove", marker)
    ]


def _licenses_npi(sent: Sentence, start: int) -> bool:
    """The negation licenses a word that needs one later in its clause ("didn't find any", "hasn't
    arrived yet", "won't open until"): removing it leaves broken English."""
    for k in range(start, len(sent)):
        low = sent.low(k)
        if low in CLAUSE_BREAKS:
            return False
        if low in NEGATIVE_POLARITY_ITEMS:
            return True
    return False


def _not_to_removal(sent: Sentence, i: int) -> list[Edit]:
    """'decided not to go' -> 'decided to go'."""
    if sent.low(i) == "not" and sent.low(i + 1) == "to" and sent.low(i - 1) in _INFINITIVE_FORMS:
        return [Edit((sent.replace(i, i + 2, "to"),), "removed negation 'not to' -> 'to'", "remove", "not to>to")]
    return []


def _inverted(sent: Sentence, i: int) -> bool:
    """An auxiliary placed before its subject, as in questions ("Is it", "Why does he")."""
    if not sent.is_question:
        return False
    nxt = sent.low(i + 1)
    return (
        i == sent.first_word_index
        or sent.low(i - 1) in WH_WORDS
        or nxt in SUBJECT_PRONOUNS
        or nxt in DETERMINERS
        or nxt == "there"
        or sent.is_capitalised_name(i + 1)
    )


def contracted(aux: str, style: str) -> str | None:
    """'does' -> "doesn't" (or "does n't" / "doesn 't" in tokenised text); None if English has none."""
    stem = CONTRACTION_STEMS.get(aux)
    if stem is None:
        return None
    if style == "ptb":
        return {"can": "ca", "will": "wo"}.get(aux, aux) + " n't"
    return f"{stem} 't" if style == "split" else f"{stem}'t"


def _negated_forms(sent: Sentence, i: int, end: int, aux_word: str, rest: str = "") -> list[Edit]:
    """Replace tokens i..end-1 by aux + negation + rest, in full and contracted form.

    Both forms exist so that pairs can match how often originals write "not" and "n't".
    """
    aux = aux_word.lower()
    full, marker = ("cannot", "can>cannot") if aux == "can" else (f"{aux_word} not", f">{aux} not")
    forms = [(full, marker)]
    short = contracted(aux, sent.contraction_style)
    if short:
        forms.append((short, f">{aux} n't"))
    old = sent.substring(i, end)
    edits = []
    verb = rest.lower() if rest and " " not in rest.strip() else ""
    for form, mark in forms:
        if verb and aux in DO_FORMS:  # ">did not return": balanced per verb (see _without_do_support)
            mark = f"{mark} {verb}"
        new = f"{form} {rest}".strip()
        edits.append(Edit((sent.replace(i, end, new),), f"negated '{old}' -> '{new}'", "add", mark))
    return edits


def _insert_not(sent: Sentence, i: int, aux_word: str) -> list[Edit]:
    """'is' -> 'is not' / "isn't", 'is also' -> 'is also not', 'can' -> 'cannot' / "can't"."""
    if sent.low(i + 1) in PRE_NOT_ADVERBS:
        new = f"{aux_word} {sent.word(i + 1)} not"
        return [
            Edit(
                (sent.replace(i, i + 2, new),),
                f"negated '{sent.substring(i, i + 2)}' -> '{new}'",
                "add",
                f">{aux_word.lower()} not",
            )
        ]
    return _negated_forms(sent, i, i + 1, aux_word)


def _verb_after(sent: Sentence, k: int) -> bool:
    """A base-form verb at k, or after one adverb ("can easily reach")."""
    if sent.low(k) in POST_NOT_ADVERBS:
        k += 1
    low = sent.low(k)
    return sent.is_word(k) and (low in VERBS or low in ("be", "have", "do", "get"))


def _awkward_to_negate(sent: Sentence, i: int) -> bool:
    """Clauses where an added negation reads wrong: after a negative subject ("Nobody was not"),
    or inside a time clause ("before you do not mix", "until the inspection isn't finished", "as
    night did not fall"), or in a sentence that already holds a "not" ("did not blame the
    ministry, not the regulator")."""
    if any(low in NOT_TOKENS for low in sent.lows):
        return True
    for k in range(i - 1, max(i - 7, -1), -1):
        low = sent.low(k)
        if low in NEGATIVE_SUBJECTS or low in TIME_CLAUSE_OPENERS:
            return True
        if not sent.word(k)[:1].isalnum():
            return False
    return False


def _copula_or_modal(sent: Sentence, i: int) -> list[Edit]:
    low = sent.low(i)
    if not sent.is_word(i) or sent.low(i + 1) in NO_NOT_BEFORE or _inverted(sent, i):
        return []
    if _awkward_to_negate(sent, i):
        return []
    if low in BE_FORMS:
        nxt = sent.word(i + 1)
        if not nxt or nxt in ",;:)" or sent.low(i - 1) in ("as", "than"):
            return []
        return _insert_not(sent, i, sent.word(i))
    if low in MODALS and sent.word(i).islower() and sent.low(i - 1) not in DETERMINERS:
        if _verb_after(sent, i + 1):
            return _insert_not(sent, i, sent.word(i))
    return []


def _have(sent: Sentence, i: int) -> list[Edit]:
    """Perfect 'has been' -> 'has not been'; possession 'has a' -> 'does not have a'."""
    low = sent.low(i)
    if low not in HAVE_FORMS or not sent.is_word(i) or _inverted(sent, i) or _awkward_to_negate(sent, i):
        return []
    nxt = sent.low(i + 1)
    if sent.is_question and sent.low(sent.first_word_index) in MODALS:  # "Might the doctor have"
        return []
    if nxt in NO_NOT_BEFORE or sent.low(i - 1) in MODALS:  # "would have": the modal takes the "not"
        return []
    # "has also been" -> "has also not been"; "has always been" -> "has not always been"
    k = i + 2 if nxt in PRE_NOT_ADVERBS or nxt in POST_NOT_ADVERBS else i + 1
    if sent.is_word(k) and (sent.low(k) in PARTICIPLES or looks_participle(sent.low(k))):
        return _insert_not(sent, i, sent.word(i))
    if sent.low(i - 1) == "to" or not _has_subject(sent, i):
        return []
    if nxt in PRE_VERB_ADVERBS or nxt in PLAIN_ADVERBS:  # "has sometimes visited" is no possession
        return []
    owns = nxt in DETERMINERS or nxt == "to" or is_quantity(sent, i + 1) or looks_plural(sent, i + 1)
    if not owns or nxt == "better":
        return []
    if low == "have" and not _plural_subject(sent, i):
        return []
    return _negated_forms(sent, i, i + 1, {"has": "does", "have": "do", "had": "did"}[low], "have")


def _subject_index(sent: Sentence, i: int) -> int:
    """Index of the word just left of the verb at i, skipping one adverb ("he also said")."""
    j = i - 1
    return j - 1 if sent.low(j) in SUBJECT_ADVERBS else j


def _noun_phrase_start_before(sent: Sentence, j: int) -> int:
    """Walk left from the head noun at j over up to four modifiers; return where the walk stops."""
    k = j - 1
    for _ in range(4):
        low = sent.low(k)
        modifier = (
            (
                low.isalpha()
                and low not in ENGLISH_FUNCTION_WORDS
                and not is_finite_verb_form(low)
                and not low.endswith("ly")
            )
            or low == "-"
            or low.isdigit()
            or sent.joins_digits(k)
        )
        if not modifier:
            break
        k -= 1
    return k


def _has_subject(sent: Sentence, i: int) -> bool:
    """Is the word left of the verb at i the end of a subject?

    Accepted: a subject or relative pronoun, a name, or a noun phrase that starts at a
    determiner, a possessive, a quantifier, or the start of a clause ("The new chief executive
    said", "Shares rose", "the company 's sales fell"). Anything else (a preposition, an adjective
    after a verb, an auxiliary) would make the verb a participle or a noun.
    """
    j = _subject_index(sent, i)
    low = sent.low(j)
    if low in SUBJECT_PRONOUNS or low in ("who", "that", "which") or sent.is_capitalised_name(j):
        return True
    head_is_noun = (
        low.isalpha()
        and low not in ENGLISH_FUNCTION_WORDS
        and low not in WH_WORDS
        and low not in PLAIN_ADVERBS
        and not low.endswith("ly")
        and low not in PAST_TO_BASE
        and (low not in THIRD_TO_BASE or THIRD_TO_BASE[low] in NOUN_LIKE_VERBS)
    )
    return head_is_noun and _opens_clause(sent, j)


def _opens_clause(sent: Sentence, j: int) -> bool:
    """Does the noun phrase ending at j start a clause (so it can be a subject, not an object)?

    "the company 's sales" is walked back to "the company"; the phrase must then open the
    sentence or follow a clause opener or a reporting verb ("said the company ..."). This rejects
    reduced relatives such as "matching a record high hit in 1999".
    """
    k = _noun_phrase_start_before(sent, j)
    if sent.low(k) in ("'s", "’s"):
        k = _noun_phrase_start_before(sent, k - 1)
    if sent.low(k) in ("more", "fewer", "less", "no"):  # "Fewer tourists didn't visit ... than"
        return False
    if sent.low(k) in DETERMINERS or sent.low(k) in QUANTIFIER_DETERMINERS:
        k -= 1
    before = sent.low(k)
    return (
        k < sent.first_word_index
        or before in CLAUSE_OPENERS
        or before in REPORTING_FORMS
        or before in ("and", "but", "so", "whereas")
    )


def _plural_subject(sent: Sentence, i: int) -> bool:
    j = _subject_index(sent, i)
    if sent.low(j) in ("i", "you", "we", "they"):
        return _at_clause_start(sent, j)
    return looks_plural(sent, j) and _has_subject(sent, i)


def _singular_subject(sent: Sentence, i: int) -> bool:
    """he/she/it, a name, or a singular noun phrase: then "cut" / "hit" / "put" must be past tense."""
    j = _subject_index(sent, i)
    if sent.low(j) in ("he", "she", "it") or sent.is_capitalised_name(j):
        return True
    if sent.low(j) in ("who", "that", "which"):  # "Children who read": number unknown
        return False
    return _has_subject(sent, i) and not looks_plural(sent, j) and sent.low(j) not in IRREGULAR_PLURALS


def _already_negated(sent: Sentence, i: int) -> bool:
    prev = sent.low(i - 1)
    return prev in NOT_TOKENS or prev == "never" or (prev == "longer" and sent.low(i - 2) == "no")


def _finite_lexical_verb(sent: Sentence, i: int) -> list[Edit]:
    """'runs' -> 'does not run', 'ran' -> 'did not run', 'they run' -> 'they do not run'."""
    low = sent.low(i)
    if not sent.is_word(i) or i == sent.first_word_index or _already_negated(sent, i):
        return []
    nxt = sent.low(i + 1)
    if nxt in AUXILIARIES or nxt in NOT_TOKENS or nxt == "by" or is_finite_verb_form(nxt):
        return []  # "The knife set includes": "set" is not the verb
    if not _has_subject(sent, i) or _awkward_to_negate(sent, i):
        return []
    if low == "left" and sent.low(i - 1) in STEER_VERBS:  # "turn left" is a direction
        return []
    if nxt in NEGATIVE_OBJECTS or _parenthetical(sent, i):
        return []
    pronoun_subject = sent.low(_subject_index(sent, i)) in ("he", "she", "it", "who")
    if low in THIRD_TO_BASE and (THIRD_TO_BASE[low] not in NOUN_LIKE_VERBS or pronoun_subject):
        base, aux = THIRD_TO_BASE[low], "does"
    elif low in PAST_TO_BASE:
        base, aux = PAST_TO_BASE[low], "did"
        forms = VERBS[base]
        if forms["past"] == base and not _singular_subject(sent, i):
            return []  # "they cut" may be present tense
        if forms["past"] == forms["participle"] and not _clearly_finite_past(sent, i):
            return []
    elif low in VERBS and low not in NOUN_LIKE_VERBS and not sent.is_question and _plural_subject(sent, i):
        base, aux = low, "do"
    else:
        return []
    return _negated_forms(sent, i, i + 1, aux, base)


def _parenthetical(sent: Sentence, i: int) -> bool:
    """', he continued ,' reports speech; negating it reads as a different kind of sentence."""
    return sent.low(i + 1) in (",", ".", "!", "?") and sent.low(_subject_index(sent, i) - 1) == ","


def _clearly_finite_past(sent: Sentence, i: int) -> bool:
    """A past form that could be a participle counts as finite only with a bare subject before it.

    Rejects "was hired", "has recently hired", "arrested and charged with", "Founded in".
    """
    prev = sent.low(_subject_index(sent, i))
    if prev in ("and", "or", ",") or prev in AUXILIARIES or prev in ("get", "got", "gets"):
        return False
    return not sent.low(i - 1).endswith("ly") or sent.low(i - 1) in SUBJECT_ADVERBS


def _at_clause_start(sent: Sentence, i: int) -> bool:
    return i == sent.first_word_index or sent.low(i - 1) in CLAUSE_OPENERS or sent.low(i - 1) in ("and", "but", "so")


def _imperative(sent: Sentence, i: int) -> list[Edit]:
    """'Add the flour.' -> 'Do not add the flour.' (a verb opening a statement, then its object)."""
    start = sent.first_word_index
    if sent.low(start) == "please":
        start += 1
    low = sent.low(i)
    if i != start or sent.is_question or low not in VERBS or not sent.is_word(i):
        return []
    nxt = sent.low(i + 1)
    if not (nxt in DETERMINERS or nxt in ("it", "them", "all", "any", "some") or is_quantity(sent, i + 1)):
        return []
    return _negated_forms(sent, i, i + 1, "do", low)


def _add_not_to(sent: Sentence, i: int) -> list[Edit]:
    """'decided to leave' -> 'decided not to leave'."""
    if sent.low(i) != "to" or sent.low(i - 1) not in _INFINITIVE_FORMS or not _verb_after(sent, i + 1):
        return []
    if sent.low(i - 2) in NOT_TOKENS or sent.low(i - 2) == "never" or sent.low(i - 3) in NOT_TOKENS:
        return []  # "don't want not to go" is a double negative
    return [Edit((sent.replace(i, i + 1, "not to"),), "negated 'to' -> 'not to'", "add", "to>not to")]


def _still(sent: Sentence, i: int) -> list[Edit]:
    """'is still open' -> 'is no longer open'; 'still works' -> 'no longer works'."""
    if sent.low(i) != "still" or not sent.is_word(i) or i == sent.first_word_index:
        return []
    prev, nxt = sent.low(i - 1), sent.low(i + 1)
    verb_follows = nxt in THIRD_TO_BASE or nxt in PAST_TO_BASE
    if (prev in AUXILIARIES and prev not in ("be", "being")) or (verb_follows and _has_subject(sent, i)):
        if not nxt.endswith("er") and nxt not in ("more", "less", "not", "n't", "no"):
            return [
                Edit((sent.replace(i, i + 1, "no longer"),), "negated 'still' -> 'no longer'", "add", "still>no longer")
            ]
    return []


def negation_edits(sent: Sentence) -> list[Edit]:
    edits = LEXICAL_NEGATIONS.edits(sent) + MORPHOLOGICAL_NEGATIONS.edits(sent)
    for i in range(len(sent)):
        for rule in (
            _negation_removals,
            _not_to_removal,
            _copula_or_modal,
            _have,
            _finite_lexical_verb,
            _imperative,
            _add_not_to,
            _still,
        ):
            edits += rule(sent, i)
    return edits
