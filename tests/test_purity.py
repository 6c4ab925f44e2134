"""compsense.data.purity: the independent family judge of near-miss pairs and its purity table.

Every sentence here is written for this file; none comes from the generator's fixtures or a corpus.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pandas as pd
import pytest

from compsense.data import purity
from compsense.data.purity import FAMILY_JUDGED, judge_pair, judge_pairs, purity_table, tokenize

CASES = {
    "negation": [
        ("The bakery opens on Sundays.", "The bakery does not open on Sundays."),
        ("The pilot didn't land the plane.", "The pilot landed the plane."),
        ("My neighbour can't drive.", "My neighbour can drive."),
        ("The tenant was happy with the repairs.", "The tenant was unhappy with the repairs."),
        ("Parking here is legal.", "Parking here is illegal."),
        ("The witness seemed honest.", "The witness seemed dishonest."),
        ("The shop still sells bread.", "The shop no longer sells bread."),
        ("She travels with a map.", "She travels without a map."),
        ("Kim always answers the phone.", "Kim never answers the phone."),
        ("The mayor wasn 't told .", "The mayor was told ."),  # MRPC's spaced contraction
        ("The clerk declined to sign the form.", "The clerk agreed to sign the form."),
    ],
    "binding": [
        ("The guard was hit by the thief.", "The thief was hit by the guard."),  # passive role swap
        ("The nurse thanked the surgeon.", "The surgeon thanked the nurse."),
        ("There is a red cup on a blue plate.", "There is a blue cup on a red plate."),  # modifier swap
        ("The old man fed the young horse.", "The young man fed the old horse."),
        ("Tom is taller than Anna.", "Anna is taller than Tom."),
        ("A wooden spoon lies beside a metal bowl.", "A metal spoon lies beside a wooden bowl."),
    ],
    "spatial": [
        ("The cat sat to the left of the dog.", "The cat sat to the right of the dog."),
        ("Lyon is closer to the sea than Dijon.", "Dijon is closer to the sea than Lyon."),
        ("The keys are inside the drawer.", "The keys are outside the drawer."),
        ("The lamp stands on the desk.", "The lamp stands under the desk."),
        ("The bus stopped in front of the museum.", "The bus stopped behind the museum."),
        ("The hikers walked up the trail.", "The hikers walked down the trail."),
        ("The painting hangs above the sofa.", "The painting hangs below the sofa."),
        ("The bike is behind the van.", "The van is behind the bike."),
        ("The farm lies north of the river.", "The farm lies south of the river."),
    ],
    "numeric": [
        ("Sales grew from 2000 to 2004.", "Sales grew from 2004 to 2000."),
        (
            "The firm spent $5 billion on research and $21 billion on ads.",
            "The firm spent $21 billion on research and $5 billion on ads.",
        ),
        ("The ferry leaves at 7 pm.", "The ferry leaves at 9 pm."),
        ("The fair opened in May 2011.", "The fair opened in June 2011."),
        ("Three pilots were on board.", "Five pilots were on board."),
        ("The office is closed on Monday.", "The office is closed on Thursday."),
        ("The rent is 1,250 dollars.", "The rent is 1,500 dollars."),
        ("The board met twice in March.", "The board met three times in March."),
    ],
    "temporal": [
        ("She locked the door before she left.", "She locked the door after she left."),
        ("It was her first race.", "It was her last race."),
        ("The film begins at noon.", "The film ends at noon."),
        ("The meeting was yesterday.", "The meeting is tomorrow."),
        ("The shop was open.", "The shop will be open."),
        ("He ate lunch earlier.", "He ate lunch later."),
        ("The rain started after the game ended.", "The game ended after the rain started."),
    ],
    "comparative": [
        ("Shares rose sharply on Tuesday.", "Shares fell sharply on Tuesday."),
        ("Imports of copper doubled.", "Exports of copper doubled."),
        ("The index closed up 5% at noon.", "The index closed down 5% at noon."),
        ("Rents are higher in the city.", "Rents are lower in the city."),
        ("The new engine is faster than the old one.", "The new engine is slower than the old one."),
        ("Inflation stayed above 3% all year.", "Inflation stayed below 3% all year."),
        ("The firm reported a gain for the quarter.", "The firm reported a loss for the quarter."),
        ("Prices went up.", "Prices went down."),
    ],
    "quantifier": [
        ("All students passed the exam.", "Some students passed the exam."),
        ("Every runner finished.", "Few runners finished."),
        ("At least ten guests came.", "At most ten guests came."),
        ("The fee applies to orders over $50.", "The fee applies to orders under $50."),
        ("Most voters agreed.", "Few voters agreed."),
        ("Both doors were locked.", "Either door was locked."),
    ],
    "other": [
        ("The teacher smiled.", "The farmer smiled."),
        ("The apple is red.", "The apple is green."),
        ("Ravi and Mei cooked dinner.", "Mei and Ravi cooked dinner."),  # conjuncts: same meaning
        ("The cat sat left of the red box.", "The cat sat right of the blue box."),  # two edits
        ("He did not call.", "He didn't call."),  # the same sentence
    ],
}
LABELLED = [(o, n, family) for family, pairs in CASES.items() for o, n in pairs]


@pytest.mark.parametrize(("original", "near_miss", "family"), LABELLED)
def test_judge_pair_family(original, near_miss, family):
    judged, reason = judge_pair(original, near_miss)
    assert judged == family, f"{original!r} -> {near_miss!r}: judged {judged} ({reason})"
    assert reason


TABLE_COLUMNS = ["family", "source", "split", "pairs", "pure", "purity", "judged_as", "failing_examples"]


def test_every_family_has_at_least_four_cases():
    assert set(CASES) == set(FAMILY_JUDGED)
    assert all(len(pairs) >= 4 for pairs in CASES.values())


def test_the_same_word_is_judged_by_its_neighbours():
    # up/down: a trend next to an amount, a direction before a noun phrase
    assert judge_pair("Oil went up 3% today.", "Oil went down 3% today.")[0] == "comparative"
    assert judge_pair("She ran up the stairs.", "She ran down the stairs.")[0] == "spatial"
    # over/under: a bound before an amount, a place before a noun phrase
    assert judge_pair("Tickets cost over $20.", "Tickets cost under $20.")[0] == "quantifier"
    assert judge_pair("The owl flew over the barn.", "The owl flew under the barn.")[0] == "spatial"
    # "next to" is a place, not "next" in time; "at most" is a quantifier, not the superlative
    assert judge_pair("The chair is next to the bed.", "The chair is far from the bed.")[0] == "spatial"
    assert judge_pair("Most guests stayed.", "Least guests stayed.")[0] == "comparative"


def test_reasons_name_the_edit():
    assert judge_pair("The dog bit the man.", "The man bit the dog.") == ("binding", "swapped 'dog' <-> 'man'")
    assert judge_pair("The tenant was happy.", "The tenant was unhappy.")[1] == "negating prefix 'happy' -> 'unhappy'"
    assert "'before'" in judge_pair("We ate before the show.", "We ate after the show.")[1]
    assert "closer" in judge_pair("Lyon is closer to the sea than Dijon.", "Dijon is closer to the sea than Lyon.")[1]
    assert "'teacher' -> 'farmer'" in judge_pair("The teacher smiled.", "The farmer smiled.")[1]


def test_a_word_that_only_moved_is_no_quantifier_change():
    # "several" and "one" moved with their nouns (and the nouns changed number): no quantifier was changed
    family, reason = judge_pair("Several cats and one dog slept.", "One cat and several dogs slept.")
    assert family == "other", reason


def test_tokenize_normalises_contractions_and_keeps_numbers_whole():
    assert tokenize("He didn't go.") == tokenize("He did not go.") == tokenize("He didn 't go.")
    assert tokenize("She cannot") == tokenize("She can't") == ["she", "can", "not"]
    assert tokenize("Costs rose 3.5% to $1,200.") == ["costs", "rose", "3.5", "%", "to", "$", "1,200", "."]


def test_judged_families_are_the_declared_ones():
    judged = {judge_pair(o, n)[0] for o, n, _ in LABELLED}
    assert judged <= set(FAMILY_JUDGED)
    assert FAMILY_JUDGED == (
        "negation",
        "binding",
        "spatial",
        "numeric",
        "temporal",
        "comparative",
        "quantifier",
        "other",
    )


def test_shares_no_code_with_the_generator_and_uses_no_parser():
    tree = ast.parse(Path(purity.__file__).read_text(encoding="utf-8"))
    imported = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            imported |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom):
            imported.add(node.module or "")
    assert not {m for m in imported if m.startswith(("compsense", "spacy"))}, imported


def _pairs() -> pd.DataFrame:
    rows = [
        ("The nurse thanked the surgeon.", "The surgeon thanked the nurse.", "binding", "mrpc", "train"),
        ("The old man fed the young horse.", "The young man fed the old horse.", "binding", "mrpc", "train"),
        ("The ferry leaves at 7 pm.", "The ferry leaves at 9 pm.", "binding", "mrpc", "train"),
        ("The keys are inside the drawer.", "The keys are outside the drawer.", "binding", "mrpc", "train"),
        ("The bakery opens on Sundays.", "The bakery does not open on Sundays.", "negation", "mrpc", "test"),
        ("The pilot didn't land the plane.", "The pilot landed the plane.", "negation", "user", "test"),
        ("Shares rose on Tuesday.", "Shares fell on Tuesday.", "comparative", "mrpc", "train"),
    ]
    return pd.DataFrame(rows, columns=["original", "near_miss", "family", "source", "split"]).assign(pair_id=range(7))


def test_judge_pairs_adds_judged_reason_and_pure():
    df = _pairs()
    out = judge_pairs(df)
    assert list(out.columns) == list(df.columns) + ["judged", "judge_reason", "pure"]
    assert "judged" not in df.columns  # a copy: the input is left alone
    assert out["pure"].dtype == bool
    assert out["judged"].tolist() == ["binding", "binding", "numeric", "spatial", "negation", "negation", "comparative"]
    assert out["pure"].tolist() == [True, True, False, False, True, True, True]
    assert out["pair_id"].tolist() == list(range(7))


def test_judge_pairs_names_missing_columns():
    with pytest.raises(ValueError, match=r"near_miss.*family|family.*near_miss"):
        judge_pairs(pd.DataFrame({"original": ["A dog ran."]}))


def test_purity_table_groups_counts_and_shows_failures():
    table = purity_table(_pairs(), examples=1)
    assert list(table.columns) == TABLE_COLUMNS
    assert list(zip(table["family"], table["source"], table["split"])) == [
        ("binding", "mrpc", "train"),
        ("comparative", "mrpc", "train"),
        ("negation", "mrpc", "test"),
        ("negation", "user", "test"),
    ]
    binding = table.iloc[0]
    assert (binding["pairs"], binding["pure"], binding["purity"]) == (4, 2, 0.5)
    assert binding["judged_as"] == "binding 50%, numeric 25%, spatial 25%"
    assert binding["failing_examples"] == ["The ferry leaves at 7 pm. => The ferry leaves at 9 pm. [judged: numeric]"]
    assert table.iloc[1]["failing_examples"] == [] and table.iloc[1]["purity"] == 1.0


def test_purity_table_uses_the_keys_present_and_an_existing_judgement():
    df = _pairs().drop(columns=["split", "source"])
    table = purity_table(df, examples=3)
    assert list(table["family"]) == ["binding", "comparative", "negation"]
    assert table.set_index("family")["pairs"].to_dict() == {"binding": 4, "comparative": 1, "negation": 2}
    assert len(table.iloc[0]["failing_examples"]) == 2

    judged = judge_pairs(df).assign(judged="other", pure=False)  # a judgement already made is not redone
    assert purity_table(judged, by=("family",))["pure"].tolist() == [0, 0, 0]


def test_purity_table_is_deterministic():
    df = _pairs()
    first, second = purity_table(df), purity_table(df.copy())
    pd.testing.assert_frame_equal(first, second)
    shuffled = purity_table(df.sample(frac=1, random_state=3))
    cols = ["family", "source", "split", "pairs", "pure", "purity", "judged_as"]
    pd.testing.assert_frame_equal(first[cols], shuffled[cols])


def test_purity_table_of_no_pairs():
    empty = _pairs().iloc[:0]
    table = purity_table(empty)
    assert table.empty
    assert list(table.columns) == TABLE_COLUMNS
