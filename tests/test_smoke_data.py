"""data/smoke: the project's own smoke data. The generator reproduces it byte for byte, every loader
reads it, the smoke profile finds it from any cwd, and it gives each smoke stage what it needs
(structural near-misses of the paper's three families, retrieval triplets, near-miss test sets).
None of these tests needs ../shared/data."""

from __future__ import annotations

import importlib.util
import logging

import pytest

from compsense.core.paths import local_data_dir, repo_root, smoke_data_dir
from compsense.data import datasets as data
from compsense.pipeline.profiles import load_profile

SMOKE = smoke_data_dir()
DATASETS = ("condaqa", "mrpc", "nfcorpus", "scifact", "stsb", "sugarcrepe")


def _generator():
    spec = importlib.util.spec_from_file_location("make_smoke_data", repo_root() / "scripts" / "make_smoke_data.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _files(root):
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def test_the_generator_reproduces_the_committed_files_byte_for_byte(tmp_path):
    _generator().write_all(tmp_path)
    made, committed = _files(tmp_path), _files(SMOKE)
    assert sorted(made) == sorted(committed), "re-run `python scripts/make_smoke_data.py` and commit data/smoke/"
    changed = [rel for rel in made if made[rel] != committed[rel]]
    assert not changed, f"{changed}: re-run `python scripts/make_smoke_data.py` and commit data/smoke/"
    assert sum(len(b) for b in committed.values()) < 1_000_000


def test_the_smoke_profile_reads_data_smoke_from_the_repo_root_whatever_the_cwd(monkeypatch, tmp_path):
    data_dir = load_profile("smoke")["common"]["data_dir"]
    assert data_dir == "data/smoke"
    monkeypatch.setenv("COMPSENSE_DATA_DIR", str(tmp_path / "elsewhere"))  # the profile's setting wins
    for cwd in (repo_root(), repo_root() / "notebooks", tmp_path):
        monkeypatch.chdir(cwd)
        assert local_data_dir(data_dir) == SMOKE.resolve()
    (tmp_path / "mine").mkdir()  # a relative path only the cwd has (typed on a command line)
    assert local_data_dir("mine") == (tmp_path / "mine").resolve()
    with pytest.raises(FileNotFoundError, match="data/MANIFEST.json"):
        local_data_dir("no/such/folder")


def test_every_loader_reads_the_smoke_data(caplog):
    with caplog.at_level(logging.WARNING, logger="compsense.data.datasets"):
        mrpc = {s: data.load_mrpc(s, SMOKE) for s in data.MRPC_SPLITS}
        stsb = {s: data.load_stsb(s, SMOKE) for s in data.STSB_SPLITS}
        sugarcrepe = data.load_sugarcrepe(data_dir=SMOKE)
    assert "a subset" in caplog.text  # the SUBSET markers: fewer records than the releases, on purpose
    assert len(mrpc["train"]) + len(mrpc["dev"]) == len(mrpc["all_train"]) and len(mrpc["test"]) >= 100
    assert {p.label for p in mrpc["train"]} == {0.0, 1.0}
    assert all(len(pairs) >= 40 for pairs in stsb.values())
    assert min(p.label for p in stsb["train"]) < 1.5 and max(p.label for p in stsb["train"]) > 4.5
    assert {ex.subset for ex in sugarcrepe} == set(data.SUGARCREPE_SUBSETS)
    assert data.available_datasets(SMOKE) == {
        "scifact": True,
        "mrpc": True,
        "stsb": True,
        "sugarcrepe": True,
        "nq_open": False,
        "nanobeir": False,
    }
    params = {**load_profile("smoke")["training_ab"], **load_profile("smoke")["reranking"]}
    for name in ("nfcorpus", "scifact"):
        test = data.load_beir(name, "test", data_dir=SMOKE)
        train = data.load_beir(name, "train", data_dir=SMOKE)
        assert len(test.qrels) >= params["eval_max_queries"] and len(train.qrels) >= 40
        assert not set(test.qrels) & set(train.qrels) and set(test.corpus) == set(train.corpus)
        assert set(test.skipped) == {"queries_not_in_split"}  # nothing malformed or unusable
    assert {s for docs in data.load_beir("nfcorpus", "test", data_dir=SMOKE).qrels.values() for s in docs.values()} == {
        1,
        2,
    }  # graded, as NFCorpus
    records = data.load_condaqa(SMOKE)
    assert {r["edit"] for r in records} == set(data.CONDAQA_EDITS.values())


def test_smoke_sentences_give_near_misses_of_the_paper_families_on_both_sides():
    from compsense.data.structural import build_pairs, mrpc_sentences

    params = {**load_profile("smoke")["common"], **load_profile("smoke")["data_and_negatives"]}
    train = mrpc_sentences("train", SMOKE, limit=params["mrpc_train_sentences"], seed=params["seed"])
    test = mrpc_sentences("test", SMOKE, limit=params["mrpc_test_sentences"], seed=params["seed"])
    pairs, stats = build_pairs(train, test, seed=params["seed"], max_per_family=params["max_per_family"])
    assert stats["dropped_train_sources_also_in_test"] == 0
    counts = pairs.groupby(["family", "split"]).size()
    for family in ("negation", "binding", "spatial"):
        for split in ("train", "test"):
            assert counts.get((family, split), 0) >= 10, (family, split, counts.to_dict())
    negation = pairs[pairs.family == "negation"]
    cues = r"\b(?:not|never|no)\b|n't"
    change = negation.sentence2.str.count(cues) - negation.sentence1.str.count(cues)
    assert (change > 0).any() and (change < 0).any()  # negations added and removed: "not" is no label


def test_smoke_data_make_retrieval_triplets_and_keep_scifact_zero_shot():
    from compsense.retrieval.regime import overlap, training_keys
    from compsense.retrieval.training import build_retrieval_triplets

    df, stats = build_retrieval_triplets(sources=("mrpc", "stsb", "scifact"), data_dir=SMOKE, max_rows=None, seed=1)
    assert (df.negative != df.positive).all() and (df.negative != df.anchor).all()
    assert stats["mrpc"]["not_paraphrase"] > 0 and stats["stsb"]["score_below_4"] > 0
    scifact = data.load_beir("scifact", "test", data_dir=SMOKE)
    nfcorpus, _ = build_retrieval_triplets(
        sources=("nfcorpus",), data_dir=SMOKE, max_rows=400, seed=42, exclude_datasets=[scifact]
    )
    assert len(nfcorpus) >= 150
    assert overlap(training_keys(nfcorpus), scifact)["regime"] == "zero-shot"
    assert overlap(training_keys(nfcorpus), data.load_beir("nfcorpus", "test", data_dir=SMOKE))["regime"] == "in-domain"


def test_smoke_near_miss_sets():
    from compsense.nearmiss.evaluation import condaqa_pairs, sugarcrepe_pairs

    positives, near_misses = sugarcrepe_pairs(data_dir=SMOKE)
    assert len(positives) == len(near_misses) == len(data.load_sugarcrepe(data_dir=SMOKE))  # each has a reference
    assert set(near_misses.family) == set(data.SUGARCREPE_SUBSETS)
    positives, near_misses = condaqa_pairs(data_dir=SMOKE)
    assert len(near_misses) >= 30 and (positives.sentence2 != near_misses.sentence2).all()


def test_no_smoke_sentence_comes_from_the_external_datasets():
    """A licence guard where the external data are at hand (skipped elsewhere): no sentence of
    data/smoke occurs in MRPC, STS-B or SugarCrepe."""
    root = local_data_dir(required=False) if not _env_points_at_smoke() else None
    if root is None or root == SMOKE.resolve() or not data.available_datasets(root)["mrpc"]:
        pytest.skip("no external data folder here")
    ours = {p.sentence1 for p in data.load_mrpc("all_train", SMOKE) + data.load_mrpc("test", SMOKE)}
    ours |= {p.sentence2 for p in data.load_mrpc("all_train", SMOKE) + data.load_mrpc("test", SMOKE)}
    ours |= {ex.caption for ex in data.load_sugarcrepe(data_dir=SMOKE)}
    theirs = {
        s for p in data.load_mrpc("all_train", root) + data.load_mrpc("test", root) for s in (p.sentence1, p.sentence2)
    }
    if data.available_datasets(root)["stsb"]:
        theirs |= {
            s for split in data.STSB_SPLITS for p in data.load_stsb(split, root) for s in (p.sentence1, p.sentence2)
        }
    if data.available_datasets(root)["sugarcrepe"]:
        theirs |= {ex.caption for ex in data.load_sugarcrepe(data_dir=root)}
    assert not ours & theirs


def _env_points_at_smoke() -> bool:
    import os

    value = os.environ.get("COMPSENSE_DATA_DIR")
    return bool(value) and local_data_dir(value) == SMOKE.resolve()


def test_smoke_near_misses_keep_a_sentence_shape():
    """Every edit of a smoke sentence starts with a capital and keeps the final full stop."""
    from compsense.data.negatives import perturb

    sentences = {s for p in data.load_mrpc("all_train", SMOKE) for s in (p.sentence1, p.sentence2)}
    edits = [nm.text for s in sorted(sentences) for nm in perturb(s, max_per_family=3)]
    assert len(edits) > len(sentences)
    assert all(t[0].isupper() and t.endswith(".") and "  " not in t for t in edits)
