"""Issue 51, item 2: a trained model's or verifier encoder's recorded sha256 is checked wherever it is
loaded, not only when training decides whether to reuse it. A model damaged in place (100 kB of its
weights overwritten, the size unchanged, so it still loads) was used silently by stage 03, the explorer,
reranking, evaluation and `compsense evaluate`; each load path now refuses it in one line that names the
file and the command that retrains it. Every damage here is made in a temporary copy (tiny-bert)."""

from __future__ import annotations

import json
import shutil

import pandas as pd
import pytest

from compsense.__main__ import main as cli
from compsense.core import layout, storage
from compsense.core.encoders import (
    DamagedModel,
    Encoding,
    check_model_digests,
    load_encoder,
    weight_digests,
)
from compsense.retrieval.training import _weight_digests
from compsense.verifiers import architectures as V

SENTENCES = ["The dog chased the cat.", "The man sat on the chair."]


def _trained(work, variant="A", seed=42):
    """A model folder as notebook 02 leaves it: final/ and, beside it, DONE.json with the weights'
    sha256 as `training.train_model` records them (its own `_weight_digests`)."""
    final = layout.final_model_dir(work, "tiny-bert", variant, seed)
    load_encoder("tiny-bert", seed=seed).save(str(final))
    (final.parent / "DONE.json").write_text(json.dumps({"final_sha256": _weight_digests(final)}))
    return final


def _damage(folder, name="model.safetensors"):
    """Overwrite up to 100 kB in the middle of the weights in place: the size and header stay, so the
    file still loads (the probe's case); only the digest tells."""
    weights = folder / name
    size = weights.stat().st_size
    n = min(100_000, size // 3)
    with open(weights, "r+b") as fh:
        fh.seek(size // 2)
        fh.write(b"\x00" * n)
    assert weights.stat().st_size == size
    return weights


def _one_line(text: str) -> bool:
    return len(str(text).strip().splitlines()) == 1


def test_the_digests_recorded_are_the_ones_training_records(tmp_path):
    final = _trained(tmp_path)
    assert weight_digests(final) == _weight_digests(final) and list(weight_digests(final)) == ["model.safetensors"]


def test_an_intact_model_loads_and_a_damaged_one_is_refused_naming_the_file_and_the_retrain_command(tmp_path):
    final = _trained(tmp_path)
    load_encoder(final)  # intact: loads
    weights = _damage(final)
    with pytest.raises(DamagedModel) as err:
        load_encoder(final)
    message = str(err.value)
    assert str(weights) in message and "DONE.json" in message and _one_line(message)
    assert "dvc repro --force --single-item PROFILE-02" in message and str(tmp_path) in message
    # the layout's loaders (notebooks 03-05's Base/A/B) refuse it rather than note it as missing
    with pytest.raises(DamagedModel):
        layout.load_model(tmp_path, "tiny-bert", "A", 42)
    with pytest.raises(DamagedModel):
        layout.load_models(tmp_path, "tiny-bert", 42, ("base", "A"))


def test_a_link_to_a_damaged_model_is_refused_too(tmp_path):
    final = _trained(tmp_path)
    _damage(final)
    link = tmp_path / "my-model"
    link.symlink_to(final, target_is_directory=True)
    with pytest.raises(DamagedModel):
        load_encoder(link)


def test_missing_weights_or_an_unreadable_marker_are_refused(tmp_path):
    final = _trained(tmp_path)
    (final.parent / "DONE.json").write_text('{"final_sha256": {')  # cut mid-write
    with pytest.raises(DamagedModel, match="DONE.json: not readable JSON"):
        check_model_digests(final)
    (final.parent / "DONE.json").write_text(json.dumps({"final_sha256": {"model.safetensors": "0" * 64, "x.bin": "1"}}))
    with pytest.raises(DamagedModel, match="model.safetensors: its content differs"):
        check_model_digests(final)


def test_folders_without_digests_load_as_before(tmp_path):
    own = tmp_path / "mine" / "final"  # a user's own model: no marker beside it
    load_encoder("tiny-bert", seed=1).save(str(own))
    _damage(own)
    load_encoder(own)
    old = _trained(tmp_path)  # a marker written before digests were recorded
    (old.parent / "DONE.json").write_text(json.dumps({"final_files": {}}))
    _damage(old)
    load_encoder(old)


def test_the_check_is_hashed_once_per_file_size_and_mtime(tmp_path, monkeypatch):
    final = _trained(tmp_path)
    check_model_digests(final)

    def no_hashing(*args, **kwargs):
        raise AssertionError("weights hashed again")

    monkeypatch.setattr(storage.hashlib, "sha256", no_hashing)
    for _ in range(3):  # the explorer switching back to this model: a stat, not a read of the weights
        check_model_digests(final)
    monkeypatch.undo()
    _damage(final)  # new mtime: hashed again, and refused
    with pytest.raises(DamagedModel):
        check_model_digests(final)


def test_stage_03_geometry_refuses_a_damaged_checkpoint(tmp_path):
    from compsense.nearmiss import geometry as g

    final = _trained(tmp_path)
    _damage(final)
    sources, missing = layout.model_sources(tmp_path, "tiny-bert", [42], ("A",))
    assert sources["A-seed42"] == str(final) and not missing
    near = pd.DataFrame(
        {
            "sentence1": SENTENCES,
            "sentence2": [s.replace("The", "A") for s in SENTENCES],
            "family": "negation",
            "edit": "hand-written",
            "source_id": ["a0", "a1"],
            "split": "test",
        }
    )
    positives = pd.DataFrame(
        {"sentence1": SENTENCES, "sentence2": SENTENCES[::-1], "id1": ["a0", "a1"], "id2": ["b0", "b1"]}
    )
    with pytest.raises(DamagedModel, match="model.safetensors"):
        g.cosine_scores(sources, near, positives, backbone="tiny-bert", encoding=Encoding(show_progress=False))


def test_the_explorer_refuses_a_damaged_checkpoint_and_keeps_the_intact_ones(tmp_path):
    from compsense.explorer.core import Session

    _trained(tmp_path, "A")
    damaged = _trained(tmp_path, "B")
    _damage(damaged)
    s = Session(tmp_path, backbone="tiny-bert")
    labels = {str(v): k for k, v in s.encoders.items()}
    assert s.view(*SENTENCES, encoder=labels[str(damaged.parent.parent / "A-seed42" / "final")]).scores
    with pytest.raises(DamagedModel, match="B-seed42/final/model.safetensors"):
        s.view(*SENTENCES, encoder=labels[str(damaged)])


def _beir_folder(root):
    """Two documents, one query: a BEIR folder just big enough to get past the data checks."""
    (root / "qrels").mkdir(parents=True)
    docs = [{"_id": f"d{i}", "title": "", "text": text} for i, text in enumerate(SENTENCES)]
    (root / "corpus.jsonl").write_text("".join(json.dumps(d) + "\n" for d in docs))
    (root / "queries.jsonl").write_text(json.dumps({"_id": "q0", "text": "a dog"}) + "\n")
    (root / "qrels" / "test.tsv").write_text("query-id\tcorpus-id\tscore\nq0\td0\t1\n")
    return root


def test_compsense_evaluate_refuses_a_damaged_model_in_one_line(tmp_path, capsys):
    final = _trained(tmp_path / "runs")
    _damage(final)
    data = _beir_folder(tmp_path / "toy")
    capsys.readouterr()  # saving the model printed a progress bar
    assert cli(["evaluate", str(final), str(data), "--out", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err
    assert "model.safetensors" in err and "--single-item PROFILE-02" in err and _one_line(err), err
    assert not (tmp_path / "out" / "mteb").exists()


def _end_to_end_verifier(tmp_path):
    from compsense.verifiers.config import Compute, VerifierTraining
    from compsense.verifiers.training import fit_verifier

    folder = layout.verifier_dir(tmp_path, "identity-small", 42, "F1-end2end")
    rows = pd.DataFrame(
        {
            "anchor": [f"The {s} is near the box." for s in ("dog", "cat", "man", "bird")] * 3,
            "positive": [f"The {s} is near the box." for s in ("dog", "cat", "man", "bird")] * 3,
            "negative": [f"The box is near the {s}." for s in ("dog", "cat", "man", "bird")] * 3,
        }
    )
    args = ("F1", "end2end", load_encoder("tiny-bert", seed=3), rows, folder)
    kwargs = dict(training=VerifierTraining(budget_examples=8, batch_size=4), compute=Compute(show_progress=False))
    fit_verifier(*args, **kwargs)
    return folder, args, kwargs


def test_an_end_to_end_verifiers_damaged_encoder_is_refused_by_rerank_and_retrained_by_notebook_04(tmp_path):
    from compsense.verifiers.rerank import find_methods
    from compsense.verifiers.training import fit_verifier

    folder, args, kwargs = _end_to_end_verifier(tmp_path)
    info = V.read_info(folder)
    assert info["encoder_sha256"] == weight_digests(folder / V.ENCODER_DIR)  # recorded when it is saved
    base = load_encoder("tiny-bert", seed=3)
    methods, _ = find_methods(tmp_path, ["F1"], ["end2end"], base)
    assert [m.regime for m in methods] == ["end2end"]
    weights = _damage(folder / V.ENCODER_DIR)
    with pytest.raises(DamagedModel, match=f"{weights}.*verifier.json.*--single-item PROFILE-04"):
        find_methods(tmp_path, ["F1"], ["end2end"], base)
    with pytest.warns(UserWarning, match="training it again"):  # notebook 04 trains it again rather than reuse it
        fit_verifier(*args, **kwargs)
    find_methods(tmp_path, ["F1"], ["end2end"], base)  # intact again


def test_the_explorer_notes_a_verifier_whose_own_encoder_is_damaged(tmp_path):
    from compsense.explorer.core import Session

    folder, _, _ = _end_to_end_verifier(tmp_path)
    _damage(folder / V.ENCODER_DIR)
    s = Session(tmp_path, backbone="tiny-bert")
    view = s.view(*SENTENCES, encoder="tiny-bert (base)")
    label = next(k for k in view.scores if "F1-end2end" in k)
    assert view.scores[label] != view.scores[label]  # nan: not scored with the damaged encoder
    assert any("DamagedModel" in n and "model.safetensors" in n for n in view.notes)


def test_a_saved_verifier_reranker_records_and_checks_its_encoder(tmp_path):
    from compsense.verifiers.cross_encoder import VerifierReranker

    path = VerifierReranker(load_encoder("tiny-bert", seed=2), V.create("F1")).save_pretrained(tmp_path / "rr")
    assert V.read_info(path)["encoder_sha256"] == weight_digests(path / V.ENCODER_DIR)
    VerifierReranker.from_pretrained(path)
    copy = tmp_path / "copy"
    shutil.copytree(path, copy)
    _damage(copy / V.ENCODER_DIR)
    with pytest.raises(DamagedModel, match="encoder/model.safetensors"):
        VerifierReranker.from_pretrained(copy)


def test_notebook_02s_evaluation_refuses_a_damaged_checkpoint(tmp_path):
    from compsense.data.datasets import load_beir
    from compsense.retrieval.harness import evaluate_runs

    final = _trained(tmp_path)
    _damage(final)
    run = {"backbone": "tiny-bert", "variant": "base", "seed": 42, "structural_share": None}
    runs = pd.DataFrame([{**run, "model": str(final), "model_stamp": "stamp"}])
    with pytest.raises(DamagedModel, match="A-seed42/final/model.safetensors"):
        evaluate_runs(runs, [load_beir(_beir_folder(tmp_path / "toy"))], tmp_path)
