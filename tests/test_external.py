"""`compsense nearmiss MODEL` (issue 50, item 1): near-miss AUC and pairwise accuracy with intervals on
CondaQA, SugarCrepe's swaps and the held-out pairs, on the smoke data and the offline tiny BERT."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from compsense.__main__ import main as cli
from compsense.core.storage import read_table, write_table
from compsense.data.structural import heldout_paraphrase_pairs
from compsense.nearmiss.external import (
    COLUMNS,
    MTEB_TASKS,
    SUGARCREPE_SUBSETS,
    external_sets,
    mteb_records,
    parse_sets,
    score_sets,
)
from compsense.nearmiss.geometry import positive_pairs

SMOKE = Path(__file__).resolve().parents[1] / "data" / "smoke"


def _toy_set():
    """Three anchors, two positives each; near-misses of two families. Keys are the anchors."""
    pos = pd.DataFrame(
        {"sentence1": ["a", "a", "b", "b", "c", "c"], "sentence2": ["pa1", "pa2", "pb1", "pb2", "pc1", "pc2"]}
    )
    neg = pd.DataFrame(
        {
            "sentence1": ["a", "b", "c", "a"],
            "sentence2": ["na", "nb", "nc", "na2"],
            "family": ["negation", "negation", "spatial", "spatial"],
        }
    )
    return {"toy": (pos, neg, "sentence1")}


def _fake_scorer(positive: float, near_miss: float):
    """Cosines we control: a pair whose second text starts with "p" (a positive) scores `positive`
    plus a little spread; every other pair `near_miss` plus spread."""

    def score(pairs):
        rng = np.random.default_rng(0)
        return np.array(
            [(positive if b.startswith("p") else near_miss) + 0.01 * rng.standard_normal() for _, b in pairs]
        )

    return score


def test_positives_above_near_misses_score_one_and_swapped_score_zero():
    right = score_sets(_fake_scorer(0.9, 0.1), _toy_set(), model="fake", n_boot=200)
    swapped = score_sets(_fake_scorer(0.1, 0.9), _toy_set(), model="fake", n_boot=200)
    assert list(right.columns) == COLUMNS
    assert (right.value == 1.0).all(), right
    assert (swapped.value == 0.0).all(), swapped
    assert set(right.family) == {"negation", "spatial", "all"}
    # counts: near-misses per family, all six positives, keys with a near-miss
    by = right.set_index(["family", "metric"])
    assert by.loc[("negation", "auc"), "n"] == 2 and by.loc[("spatial", "auc"), "n"] == 2
    assert by.loc[("all", "auc"), "n"] == 4 and by.loc[("all", "pairwise_accuracy"), "n_keys"] == 3
    assert (right.n_positives == 6).all()
    # intervals bracket the value and sit in [0, 1]
    for t in (right, swapped):
        ok = t.dropna(subset=["ci_low"])
        assert ((ok.ci_low <= ok.value + 1e-12) & (ok.value <= ok.ci_high + 1e-12)).all()
        assert ok[["ci_low", "ci_high"]].stack().between(0, 1).all()


def test_pairwise_accuracy_is_within_anchor_and_auc_is_unpaired():
    """Anchor a: positive 0.5, near-miss 0.4; anchor b: positive 0.2, near-miss 0.1. Within each anchor
    the positive wins (pairwise accuracy 1), while unpaired b's positive loses to a's near-miss (AUC 3/4)."""
    pos = pd.DataFrame({"sentence1": ["a", "b"], "sentence2": ["pa", "pb"]})
    neg = pd.DataFrame({"sentence1": ["a", "b"], "sentence2": ["na", "nb"], "family": ["negation"] * 2})
    values = {("a", "pa"): 0.5, ("b", "pb"): 0.2, ("a", "na"): 0.4, ("b", "nb"): 0.1}
    table = score_sets(lambda pairs: np.array([values[p] for p in pairs]), {"x": (pos, neg, "sentence1")}, n_boot=100)
    got = table[table.family == "negation"].set_index("metric").value
    assert got["pairwise_accuracy"] == 1.0  # each anchor's positive beats its own near-miss
    assert got["auc"] == 0.75  # unpaired: b's positive (0.2) loses to a's near-miss (0.4)


def test_parse_sets_refuses_unknown_names():
    assert parse_sets(None) == ["condaqa", "sugarcrepe", "heldout"]
    assert parse_sets("heldout, condaqa") == ["heldout", "condaqa"]
    with pytest.raises(ValueError, match="choose from condaqa, sugarcrepe, heldout"):
        parse_sets("condaqa,scifact")


def test_smoke_sets_count_their_inputs(tmp_path):
    sets, notes = external_sets(["condaqa", "sugarcrepe", "heldout"], work_dir=tmp_path, data_dir=SMOKE)
    pos, neg, key = sets["condaqa"]
    assert key == "passage_id" and len(pos) == len(neg) > 0 and set(neg.family) == {"affirmative"}
    pos, neg, key = sets["sugarcrepe"]
    assert key == "example_id" and len(pos) == len(neg) > 0 and set(neg.family) <= set(SUGARCREPE_SUBSETS)
    assert "heldout" not in sets and any("heldout: skipped" in n and "pairs.parquet" in n for n in notes)


def _pairs_parquet(work_dir: Path) -> pd.DataFrame:
    """A hand-made notebook-01 table: three held-out near-misses of smoke MRPC/STS-B test sentences
    (so they have paraphrase positives) and one train row that must be left out."""
    paraphrases = positive_pairs(heldout_paraphrase_pairs("test", data_dir=SMOKE))
    anchors = list(paraphrases.sentence1[:3])
    rows = [
        (anchors[0], "It is not the case that " + anchors[0], "negation", "not", "mrpc-1", "test"),
        (anchors[1], anchors[1] + " Under the table.", "spatial", "on->under", "mrpc-2", "test"),
        (anchors[2], " ".join(reversed(anchors[2].split())), "binding", "swap", "mrpc-3", "test"),
        (anchors[0], "Never " + anchors[0], "negation", "never", "mrpc-1", "train"),
    ]
    cols = ["sentence1", "sentence2", "family", "edit", "source_id", "split"]
    table = pd.DataFrame(rows, columns=cols)
    write_table(table, work_dir / "negatives" / "pairs.parquet")
    return table


@pytest.mark.slow
def test_cli_scores_tiny_bert_on_every_set_and_writes_files(tmp_path, capsys):
    work = tmp_path / "work"
    _pairs_parquet(work)
    out = tmp_path / "out"
    rc = cli(
        [
            "nearmiss",
            "tiny-bert",
            "--data-dir",
            str(SMOKE),
            "--work-dir",
            str(work),
            "--out",
            str(out),
            "--n-boot",
            "100",
        ]
    )
    assert rc == 0
    table = read_table(out / "results" / "nearmiss.parquet")
    assert set(table.dataset) == {"condaqa", "sugarcrepe", "heldout"}
    assert set(table.metric) == {"auc", "pairwise_accuracy"} and (table.model == "tiny-bert").all()
    assert table.value.dropna().between(0, 1).all()
    assert table[["ci_low", "ci_high"]].stack().dropna().between(0, 1).all()
    held = table[(table.dataset == "heldout") & (table.metric == "auc")].set_index("family")
    assert held.loc["all", "n"] == 3  # the train row is left out
    assert set(held.index) == {"negation", "spatial", "binding", "all"}
    sets, _ = external_sets(["condaqa", "sugarcrepe"], data_dir=SMOKE)
    for name, (pos, neg, _) in sets.items():
        rows = table[(table.dataset == name) & (table.family == "all") & (table.metric == "auc")]
        assert rows.n.item() == len(neg) and rows.n_positives.item() == len(pos)
    files = sorted(p.name for p in out.rglob("*.json"))
    assert {f"{task}.json" for task in MTEB_TASKS.values()} <= set(files), files
    record = json.loads(next(out.rglob("CondaQANearMiss.json")).read_text())
    entry = {e["hf_subset"]: e for e in record["scores"]["test"]}["all"]
    assert entry["main_score"] == entry["auc"] and 0 <= entry["pairwise_accuracy"] <= 1
    assert "tidy table:" in capsys.readouterr().out
    # a second run of the same model replaces its rows rather than adding to them
    assert cli(["nearmiss", "tiny-bert", "--sets", "condaqa", "--data-dir", str(SMOKE), "--work-dir", str(work),
                "--out", str(out), "--n-boot", "50"]) == 0  # fmt: skip
    assert len(read_table(out / "results" / "nearmiss.parquet")) == len(table)


def test_mteb_records_carry_every_family():
    table = score_sets(_fake_scorer(0.9, 0.1), _toy_set(), model="fake", n_boot=50)
    records = mteb_records(table, {"model": "fake"})
    (record,) = records.values()
    assert {e["hf_subset"] for e in record["scores"]["test"]} == {"negation", "spatial", "all"}
    assert all(e["main_score"] == 1.0 for e in record["scores"]["test"])


@pytest.mark.parametrize(
    "argv, words",
    [
        (["nearmiss", "./no-such-model-folder"], ["no such model folder"]),
        (["nearmiss", "tiny-bert", "--sets", "scifact"], ["choose from condaqa"]),
        (["nearmiss", "tiny-bert", "--sets", "condaqa", "--data-dir", "{tmp}/empty"], ["condaqa", "not found", "Fix"]),
        (["nearmiss", "tiny-bert", "--sets", "heldout", "--work-dir", "{tmp}/none"], ["pairs.parquet", "notebook 01"]),
    ],
)
def test_cli_errors_are_one_clear_line(tmp_path, capsys, argv, words):
    (tmp_path / "empty").mkdir()
    argv = [a.replace("{tmp}", str(tmp_path)) for a in argv] + ["--out", str(tmp_path / "out")]
    assert cli(argv) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and err.startswith("compsense nearmiss:"), err
    for word in words:
        assert word in err, err


@pytest.mark.slow  # imports sentence-transformers (~10 s) to look the name up
def test_an_unknown_model_is_one_line(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")  # offline: the hub is never asked
    args = ["nearmiss", "no-such-model", "--sets", "condaqa", "--data-dir", str(SMOKE), "--out", str(tmp_path / "o")]
    assert cli(args) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1, err
    assert err.startswith("compsense nearmiss: BackboneUnavailable: cannot load 'no-such-model'"), err


@pytest.mark.parametrize("out", ["figures/nearmiss", "{smoke}/out"])
def test_a_protected_out_is_refused_before_the_model_loads(out, monkeypatch, capsys):
    from compsense.nearmiss import external

    monkeypatch.setattr(external, "load_encoder", lambda *a, **k: pytest.fail("model loaded"))
    args = ["nearmiss", "tiny-bert", "--sets", "condaqa", "--data-dir", str(SMOKE), "--out", out.format(smoke=SMOKE)]
    assert cli(args) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "PermissionError" in err and "--out" in err, err
