import pandas as pd
import pytest

from compsense.verifiers import data as D

PARAPHRASES = pd.DataFrame(
    {
        "sentence1": [
            "The dog chased the cat in the park.",
            "The company hired the consultant last year.",
            "The box is on the table.",
            "She paid 40 dollars for the book.",
            "The man is not happy.",
        ],
        "sentence2": [
            "In the park, the dog ran after the cat.",
            "Last year the firm hired the consultant.",
            "The box sits on the table.",
            "She spent 40 dollars on the book.",
            "The man is unhappy.",
        ],
    }
)


def _structural(n=8):
    rows = [
        dict(
            anchor=f"The cat {i} is on the mat.",
            positive=f"The cat {i} is on the mat.",
            negative=f"The cat {i} is not on the mat.",
            family="negation" if i % 2 else "spatial",
            source_id=str(i),
            split="train",
        )
        for i in range(n)
    ]
    return pd.DataFrame(rows)


def test_token_jaccard_by_hand():
    assert D.token_jaccard("The cat sat.", "the cat ran") == pytest.approx(2 / 4)
    assert D.token_jaccard("", "") == 1.0 and D.token_jaccard("a b", "c d") == 0.0
    assert D.token_jaccard("It doesn't", "it does not") == pytest.approx(1 / 4)  # "doesn't" is one token


def test_balanced_rows_pair_each_copy_row_with_a_paraphrase_row_whose_negative_edits_the_paraphrase():
    table, counts = D.balanced_structural_rows(paraphrases=PARAPHRASES, seed=0, balance=False)
    identity, para = table[table.row_kind == "identity"], table[table.row_kind == "paraphrase"]
    assert len(identity) == len(para) == counts["pairs_with_near_misses"] > 0
    assert (identity.anchor == identity.positive).all()
    assert identity.anchor.tolist() == para.anchor.tolist()  # the same s in both kinds of row
    partner = dict(zip(PARAPHRASES.sentence1, PARAPHRASES.sentence2))
    assert all(partner[a] == p for a, p in zip(para.anchor, para.positive))
    assert (para.negative != para.positive).all() and (identity.negative != identity.anchor).all()
    # nm(p) is an edit of p (of the row's family), and nm(s) one of s.
    from compsense.data.negatives import candidates

    for frame, source in ((para, "positive"), (identity, "anchor")):
        assert all(
            n in {c.text for c in candidates(x, f)} for x, n, f in zip(frame[source], frame.negative, frame.family)
        )
    report = D.overlap_report(table).set_index("row_kind")
    # a copy against a near-copy: overlap decides (less so since binding swaps keep every word)
    assert report.loc["identity", "difference"] > 0.15
    assert abs(report.loc["paraphrase", "difference"]) < 0.1  # s-p against s-nm(p): overlap cannot
    assert report.loc["paraphrase", "n"] == len(para)
    again, _ = D.balanced_structural_rows(paraphrases=PARAPHRASES, seed=0, balance=False)
    pd.testing.assert_frame_equal(table, again)


def test_balanced_rows_say_when_nothing_can_be_edited():
    flat = pd.DataFrame({"sentence1": ["Hello there."], "sentence2": ["Hi there."]})
    with pytest.raises(ValueError, match="near-misses on both sides"):
        D.balanced_structural_rows(paraphrases=flat, balance=False)


def test_model_b_rows_mix_retrieval_and_identity_triplets_at_the_share(monkeypatch):
    retrieval = pd.DataFrame(
        {
            "anchor": [f"query {i}" for i in range(24)],
            "positive": [f"passage {i}" for i in range(24)],
            "negative": [f"passage {(i + 1) % 24}" for i in range(24)],
            "source": "toy",
        }
    )
    monkeypatch.setattr(D, "build_retrieval_triplets", lambda *a, **k: (retrieval.copy(), {}))
    table, counts = D.training_rows("model_b", _structural(), structural_share=0.25, families=["negation"], seed=1)
    assert list(table.columns) == D.ROW_COLUMNS
    assert counts["rows_by_kind"] == {"retrieval": 24, "identity": 8}  # 8 = 0.25 x 32, drawn from 4 (repeated)
    assert set(table[table.row_kind == "identity"].family) == {"negation"}
    assert (table[table.row_kind == "retrieval"].family == "").all()
    with pytest.raises(ValueError, match="train_data must be"):
        D.training_rows("nq_only", _structural())


def test_identity_rows_are_notebook_01s_triplets():
    table, counts = D.training_rows("identity", _structural())
    assert (table.anchor == table.positive).all() and set(table.row_kind) == {"identity"}
    assert counts["train_data"] == "identity" and len(table) == 8


def test_every_balanced_row_keeps_each_edit_of_each_direction_once():
    one, _ = D.balanced_structural_rows(paraphrases=PARAPHRASES, seed=0, balance=False)
    table, counts = D.every_balanced_row(paraphrases=PARAPHRASES, families=None, seed=0, balance=False)
    key = ["anchor", "positive", "negative"]
    assert not table.duplicated(key).any() and list(table.columns) == D.ROW_COLUMNS
    # every row of the one-per-pair set is here, and more: the pair read from its other side too
    assert set(map(tuple, one[key].to_numpy())) < set(map(tuple, table[key].to_numpy()))
    forward = dict(zip(PARAPHRASES.sentence1, PARAPHRASES.sentence2))
    partner = {**forward, **{p: s for s, p in forward.items()}}
    para, identity = table[table.row_kind == "paraphrase"], table[table.row_kind == "identity"]
    assert (
        all(partner[a] == p for a, p in zip(para.anchor, para.positive))
        and (identity.anchor == identity.positive).all()
    )
    assert set(para.anchor) & set(PARAPHRASES.sentence2)  # the paraphrase as anchor: the second direction
    assert counts["rows_by_kind"] == table.row_kind.value_counts().to_dict()
    negation, _ = D.every_balanced_row(paraphrases=PARAPHRASES, families=["negation"], seed=0, balance=False)
    assert set(negation.family) == {"negation"} and len(negation) < len(table)


def test_every_balanced_row_keeps_a_pair_with_an_edit_on_one_side_only():
    one_sided = pd.DataFrame({"sentence1": ["Hello there."], "sentence2": ["The box is on the table."]})
    table, _ = D.every_balanced_row(paraphrases=one_sided, families=None, seed=0, balance=False)
    # "Hello there." has no edit: no copy row of it, but its partner's near-miss still makes a paraphrase row
    assert set(zip(table.anchor, table.row_kind)) == {
        ("Hello there.", "paraphrase"),
        ("The box is on the table.", "identity"),
    }
    with pytest.raises(ValueError, match="has a near-miss"):
        D.every_balanced_row(paraphrases=one_sided.assign(sentence2="Hi there."), families=None, balance=False)


def test_balanced_all_trains_on_every_balanced_row_mixed_with_retrieval_rows(monkeypatch):
    """`balanced_all` resolves to the enlarged set (`every_balanced_row`), not the one-row-per-pair one."""
    real = D.every_balanced_row
    calls = []

    def enlarged(data_dir=None, **kwargs):  # the fixture's pairs instead of MRPC/STS-B train
        calls.append(kwargs)
        return real(paraphrases=PARAPHRASES, balance=False, **kwargs)

    monkeypatch.setattr(D, "every_balanced_row", enlarged)
    pool, _ = real(paraphrases=PARAPHRASES, families=None, seed=1, balance=False)
    retrieval = pd.DataFrame(
        {
            "anchor": [f"query {i}" for i in range(len(pool))],
            "positive": [f"passage {i}" for i in range(len(pool))],
            "negative": [f"passage {i + 1}" for i in range(len(pool))],
            "source": "toy",
        }
    )
    monkeypatch.setattr(D, "build_retrieval_triplets", lambda *a, **k: (retrieval.copy(), {}))
    # share 0.5 over as many retrieval rows as the pool has: every pool row is drawn once
    table, counts = D.training_rows("balanced_all", _structural(), structural_share=0.5, seed=1)
    assert "balanced_all" in D.TRAIN_DATA and counts["train_data"] == "balanced_all"
    assert list(table.columns) == D.ROW_COLUMNS
    key = ["anchor", "positive", "negative", "row_kind", "family"]
    structural = table[table.row_kind != "retrieval"]
    assert sorted(map(tuple, structural[key].to_numpy())) == sorted(map(tuple, pool[key].to_numpy()))
    one, _ = D.balanced_structural_rows(paraphrases=PARAPHRASES, seed=1, balance=False)
    assert len(structural) > len(one)  # enlarged: both directions, every edit
    assert counts["pool_rows"] == len(pool) and counts["pool_rows_by_kind"] == pool.row_kind.value_counts().to_dict()
    assert counts["rows_by_kind"] == {"retrieval": len(pool), **pool.row_kind.value_counts().to_dict()}
    # `families` and `max_paraphrase_pairs` reach it, "paper" read as the authors' three
    table, counts = D.training_rows(
        "balanced_all", _structural(), structural_share=0.5, families="paper", max_paraphrase_pairs=4, seed=1
    )
    assert calls[-1] == {"families": D.PAPER_FAMILIES, "max_pairs": 4, "seed": 1}
    assert set(table[table.row_kind != "retrieval"].family) <= set(D.PAPER_FAMILIES)
    assert counts["paraphrase_pairs"] == 4


def test_balanced_pairs_are_balanceds_structural_rows_without_retrieval_rows(monkeypatch):
    real = D.balanced_structural_rows
    monkeypatch.setattr(
        D, "balanced_structural_rows", lambda data_dir=None, **k: real(paraphrases=PARAPHRASES, balance=False, **k)
    )
    monkeypatch.setattr(D, "build_retrieval_triplets", lambda *a, **k: pytest.fail("read retrieval rows"))
    table, counts = D.training_rows("balanced_pairs", _structural(), structural_share=0.19, seed=1)
    pool, _ = real(paraphrases=PARAPHRASES, seed=1, balance=False)
    assert list(table.columns) == D.ROW_COLUMNS and set(table.row_kind) == {"identity", "paraphrase"}
    assert table[D.ROW_COLUMNS].equals(pool[D.ROW_COLUMNS].reset_index(drop=True))
    assert counts["train_data"] == "balanced_pairs" and counts["rows_by_kind"] == pool.row_kind.value_counts().to_dict()


def test_every_balanced_row_reads_at_most_max_pairs_pairs():
    every, _ = D.every_balanced_row(paraphrases=PARAPHRASES, families=None, seed=0, balance=False)
    some, counts = D.every_balanced_row(paraphrases=PARAPHRASES, families=None, max_pairs=2, seed=0, balance=False)
    assert counts["paraphrase_pairs"] == 2 and len(some) < len(every)
    assert set(map(tuple, some.to_numpy())) <= set(map(tuple, every.to_numpy()))
