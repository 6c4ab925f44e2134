"""Curated word lists for the near-miss rules.

Precision beats coverage: every list is small enough to read, and a word is in a list only when
the edit it triggers is grammatical and meaning-changing in nearly every context it appears in.
Context guards for the remaining ambiguities live with the rules in families.py.
"""

from __future__ import annotations

# --- function words --------------------------------------------------------------------------

DETERMINERS = frozenset("the a an this that these those his her its their our my your each every another".split())
POSSESSIVES = frozenset("his her its their our my your".split())
SUBJECT_PRONOUNS = frozenset("i you he she it we they".split())
OBJECT_PRONOUNS = frozenset("me you him her it us them".split())
PREPOSITIONS = frozenset(
    """of in on at by for with from to into onto over under about above below across after
    against along among around before behind beneath beside besides between beyond during except
    inside near off outside per since than through throughout toward towards until upon via
    within without""".split()
)
CONJUNCTIONS = frozenset("and or but nor so yet because although though while whereas if unless".split())
WH_WORDS = frozenset("what why how when where which who whom whose".split())
BE_FORMS = frozenset("am is are was were".split())
HAVE_FORMS = frozenset("has have had".split())
DO_FORMS = frozenset("do does did".split())
MODALS = frozenset("can could will would shall should may might must".split())
AUXILIARIES = BE_FORMS | HAVE_FORMS | DO_FORMS | MODALS | {"be", "been", "being"}

ENGLISH_FUNCTION_WORDS = (
    DETERMINERS
    | SUBJECT_PRONOUNS
    | OBJECT_PRONOUNS
    | PREPOSITIONS
    | CONJUNCTIONS
    | AUXILIARIES
    | WH_WORDS
    | frozenset(
        "not no is it this there than as also many much some all most few several any "
        "more less fewer other such own same both either neither".split()
    )
)
QUANTIFIER_DETERMINERS = frozenset("most many some all few several both any no".split())
# Function words of languages that share the Latin alphabet, to keep English rules off them.
FOREIGN_FUNCTION_WORDS = frozenset(
    """der die das und ist nicht ein eine einen dem den des mit sich auf für von zu auch wir ich
    sie er es le la les est et un une des du pas avec pour dans sur qui que el los las es y en
    del por para con una het een niet ook van zijn""".split()
) - frozenset("an in die was will also man".split())

# Adverbs placed before an inserted "not" ("is also not", "will probably not").
PRE_NOT_ADVERBS = frozenset(
    "also still currently now therefore thus probably certainly definitely clearly obviously".split()
)
# Adverbs placed after an inserted "not" ("cannot easily", "will not always").
POST_NOT_ADVERBS = frozenset(
    """easily quickly slowly fully always actually really immediately directly simply properly
    necessarily completely entirely""".split()
)
# Adverbs that may sit between a subject and its verb without blocking do-support
# ("he also said" -> "he also did not say").
SUBJECT_ADVERBS = frozenset("also still recently actually finally then later subsequently".split())
# Adverbs that sit between a subject (or an auxiliary) and its verb: "never watched", "will
# always", "has often". Kept apart from SUBJECT_ADVERBS, which licenses do-support after them:
# "he always did not say" or "she rarely did not go" would be wrong.
PRE_VERB_ADVERBS = SUBJECT_ADVERBS | frozenset(
    """never always often usually sometimes rarely seldom ever just already once even only
    frequently occasionally generally typically normally repeatedly regularly probably perhaps
    certainly clearly reportedly allegedly""".split()
)
# Verbs after which 'left'/'right' name a direction ("turn left").
STEER_VERBS = frozenset(
    """turn turns turned turning go goes went veer veered swerve swerved swipe swiped scroll
    scrolled shift shifted move moves moved look looked keep stay bear""".split()
)
# Clause openers before which a new subject may start.
CLAUSE_OPENERS = frozenset(
    [
        ",",
        ";",
        ":",
        '"',
        "(",
        "that",
        "when",
        "after",
        "before",
        "because",
        "while",
        "if",
        "since",
        "although",
        "though",
        "as",
        "where",
        "once",
    ]
)
# Common words that start sentences capitalised but are not names.
NOT_NAMES = frozenset(
    """the a an this that these those it he she they we i you there here what why how when where
    which who yesterday today tomorrow last next on in at for after before during while if as but
    and so however also although meanwhile still then now officials police people analysts
    researchers scientists investors shares prices sales profits""".split()
)

# --- verbs -----------------------------------------------------------------------------------

# base past participle, for verbs whose forms do not follow the -ed rule.
IRREGULAR_VERBS = """
arise arose arisen; beat beat beaten; become became become; begin began begun; bend bent bent;
bite bit bitten; blow blew blown; break broke broken; bring brought brought; broadcast broadcast broadcast;
build built built; buy bought bought; catch caught caught; choose chose chosen; come came come;
cost cost cost; cut cut cut; deal dealt dealt; dig dug dug; draw drew drawn; drink drank drunk;
drive drove driven; eat ate eaten; fall fell fallen; feed fed fed; feel felt felt; fight fought fought;
find found found; fit fitted fitted; flee fled fled; fly flew flown; forbid forbade forbidden;
forecast forecast forecast; forget forgot forgotten; forgive forgave forgiven; freeze froze frozen;
get got gotten; give gave given; go went gone; grow grew grown; hear heard heard; hide hid hidden;
hit hit hit; hold held held; hurt hurt hurt; keep kept kept; know knew known; lead led led;
leave left left; lend lent lent; let let let; lose lost lost; make made made; mean meant meant;
meet met met; overcome overcame overcome; oversee oversaw overseen; overtake overtook overtaken;
pay paid paid; put put put; quit quit quit; read read read; ride rode ridden; ring rang rung;
rise rose risen; run ran run; say said said; see saw seen; seek sought sought; sell sold sold;
send sent sent; set set set; shake shook shaken; shoot shot shot; show showed shown; shut shut shut;
sing sang sung; sink sank sunk; sit sat sat; sleep slept slept; slide slid slid; speak spoke spoken;
spend spent spent; spin spun spun; split split split; spread spread spread; stand stood stood;
steal stole stolen; stick stuck stuck; strike struck struck; sweep swept swept; swim swam swum;
take took taken; teach taught taught; tear tore torn; tell told told; think thought thought;
throw threw thrown; understand understood understood; undertake undertook undertaken;
upset upset upset; wake woke woken; wear wore worn; win won won; withdraw withdrew withdrawn;
write wrote written
"""
# Regular verbs; a trailing "+" marks a doubled final consonant (stop -> stopped).
REGULAR_VERBS = """
accept accuse achieve acquire act add address admire admit+ adopt affect agree aim allow announce
answer appear apply appoint approve argue arrange arrest arrive ask assess assign assist assume
attach attack attempt attend attract avoid ban+ believe belong benefit blame block boost borrow
call cancel care carry cause celebrate change charge chase check cite claim clean clear climb
close collect combine comment commit+ compare compete complain complete confirm connect consider
consist contain continue contribute control+ convince cook copy count cover crash create
criticise criticize cross damage decide declare decline decrease defend delay deliver demand
deny depend describe design destroy detect determine develop die disappear discover discuss
dismiss divide donate doubt drop+ earn elect employ enable encourage end enjoy ensure enter
escape establish estimate evaluate examine exist expand expect explain explore export express
extend fail fear fill finance finish fire fix focus follow force fund gain guarantee handle
happen hate help hire hope host identify ignore imagine improve include increase indicate
influence inform injure insist install intend interview introduce invest investigate invite
involve join judge jump kill kiss lack launch laugh learn like limit link listen live locate
look love maintain manage marry match measure mention miss mix monitor move need note notice obtain
occur+ offer open operate oppose order organise organize own pass perform permit+ pick plan+
play praise predict prefer+ prepare press prevent print produce promise promote propose protect
protest prove provide publish pull purchase push qualify raise rank reach react realise realize
receive recognise recognize recommend recover reduce refer+ reflect refuse regret+ regulate
reject relate release rely remain remember remove rent repair repeat replace reply report
represent request require rescue resign resolve respond restore retire return reveal review rule
save score search seem select serve settle share shop+ sign smile solve sponsor start stay stop+
study submit+ succeed sue suffer suggest supply support suppose surprise survive suspect suspend talk
target test thank threaten touch track trade train transfer+ travel treat trust try turn urge use
visit vote wait walk want warn wash watch welcome wish wonder work worry
"""
# Verbs whose base and -s forms are as often nouns ("home runs", "the plans", "sales work");
# they are recognised as finite verbs only in unambiguous past forms.
NOUN_LIKE_VERBS = frozenset(
    """answer attack benefit block call cancel care change charge check claim close comment
    control cost count cover crash cut damage deal decline decrease delay demand design
    doubt drink drop end estimate export fear fire fit fix focus force fund gain guarantee
    hit hope host increase interview kiss lack laugh launch lead leave limit link live look
    love mean match measure move need offer order pass pay play praise press print promise
    protest purchase rank reach release rent repair report request rescue return review ring
    rise rule run score search set share shop sign smile show spread stand start stay stop
    study supply support surprise target test thank trade train transfer travel treat trust
    turn use visit vote wait walk want watch wear welcome win wish wonder work worry arrest""".split()
)


def _regular_forms(base: str) -> tuple[str, str]:
    """(3rd person singular, past) of a regular verb."""
    doubled = base.endswith("+")
    base = base.rstrip("+")
    if base.endswith(("s", "x", "z", "ch", "sh", "o")):
        third = base + "es"
    elif base.endswith("y") and base[-2] not in "aeiou":
        third = base[:-1] + "ies"
    else:
        third = base + "s"
    if doubled:
        past = base + base[-1] + "ed"
    elif base.endswith("e"):
        past = base + "d"
    elif base.endswith("y") and base[-2] not in "aeiou":
        past = base[:-1] + "ied"
    else:
        past = base + "ed"
    return third, past


# Irregular verbs that the verb lists above leave out: a verb outside VERBS is conjugated by the
# regular rules only when it is not one of these and does not end in an irregular base ("undergo",
# "withstand", "rebuild"), so "did not bind" never becomes "binded".
UNLISTED_IRREGULAR = frozenset(
    """bear bind breed cling dwell fling grind hang kneel lay light mislead shine shrink sling slit
    sow spit spring sting stink stride string strive swear swell swing thrust tread weave weep wind
    wring""".split()
)
_VOWELS = "aeiou"


def unlisted_regular_forms(base: str) -> tuple[str, str] | None:
    """(3rd person, past) of a verb missing from VERBS, or None when the -ed rule may be wrong.

    Written here rather than taken from an inflection library because the only doubt is the
    doubled consonant ("stop" -> "stopped", "visit" -> "visited", "admit" -> "admitted"), which
    depends on stress: a base that ends consonant-vowel-consonant is refused unless its ending is
    one English never doubles (-en, -er but -fer, -on: "happen", "answer", "reckon").
    """
    if not base.isalpha() or len(base) < 3 or base in UNLISTED_IRREGULAR:
        return None
    if base.endswith(_IRREGULAR_BASES):
        return None
    a, b, c = base[-3], base[-2], base[-1]
    cvc = a not in _VOWELS and b in _VOWELS and c not in _VOWELS and c not in "wxy"
    if cvc and not (base.endswith(("en", "on")) or (base.endswith("er") and not base.endswith("fer"))):
        return None
    return _regular_forms(base)


def _irregular_entries() -> list[tuple[str, str, str]]:
    """(base, past, participle) of each IRREGULAR_VERBS entry."""
    return [tuple(entry.split()) for entry in IRREGULAR_VERBS.replace("\n", " ").split(";") if entry.strip()]


def _build_verbs() -> dict[str, dict[str, str]]:
    """base -> {"third": ..., "past": ..., "participle": ...} for every verb above."""
    verbs: dict[str, dict[str, str]] = {}
    for base, past, participle in _irregular_entries():
        third = _regular_forms(base)[0]
        verbs[base] = {"third": third, "past": past, "participle": participle}
    for raw in REGULAR_VERBS.split():
        third, past = _regular_forms(raw)
        verbs[raw.rstrip("+")] = {"third": third, "past": past, "participle": past}
    verbs["go"]["third"] = "goes"
    return verbs


VERBS = _build_verbs()
_IRREGULAR_BASES = tuple(base for base, _, _ in _irregular_entries())
THIRD_TO_BASE = {forms["third"]: base for base, forms in VERBS.items()}
PAST_TO_BASE = {forms["past"]: base for base, forms in VERBS.items()}
PARTICIPLE_TO_BASE = {forms["participle"]: base for base, forms in VERBS.items()}
PARTICIPLES = frozenset(PARTICIPLE_TO_BASE) | {"been"}

# Verbs that introduce a clause with its own subject ("said the company hired").
REPORTING_VERBS = frozenset(
    "say believe think report announce add note argue claim find show know suggest expect hope "
    "fear warn feel insist confirm estimate predict reveal indicate mean ensure realize assume "
    "suppose deny admit".split()
)
REPORTING_FORMS = frozenset(form for base in REPORTING_VERBS for form in (base, *VERBS[base].values()))

# Transitive verbs whose two arguments cannot be exchanged without changing who did what to whom.
# Symmetric verbs (meet, marry, play, face, fight, tie, join, match, resemble) are absent on purpose.
ASYMMETRIC_VERBS = frozenset(
    """accuse acquire admire appoint arrest ask attack beat bite blame block buy catch cause
    charge chase cite control convince criticise criticize defeat elect employ eat endorse feed
    fire follow fund help hire hit hurt influence inform injure interview investigate invite kill
    lead love hate monitor oppose overtake pay praise predict protect pull push purchase regulate
    replace rescue select sell sponsor succeed sue support target teach thank threaten track
    train treat trust urge visit warn watch""".split()
)
