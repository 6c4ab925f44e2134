"""compsense.retrieval.training: training data, the A/B mix, the config, and train_model's skip / resume /
data-parallel behaviour on tiny-bert (a few steps at batch 8)."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from compsense.core.storage import sha256_file
from compsense.retrieval.training import (
    TrainConfig,
    build_retrieval_triplets,
    load_structural_triplets,
    mix_structural,
    plan_runs,
    read_train_logs,
    run_dir,
    train_model,
)

REPO = Path(__file__).resolve().parents[1]
LINES = [ln.strip() for ln in (REPO / "compsense/resources/tiny_corpus.txt").read_text().splitlines() if ln.strip()]


def retrieval_rows(n: int = 40) -> pd.DataFrame:
    lines = LINES[:n]
    return pd.DataFrame(
        {
            "anchor": lines,
            "positive": [ln.lower() + " indeed" for ln in lines],
            "negative": lines[1:] + lines[:1],
            "source": "toy",
        }
    )


def structural_rows(n: int = 30, split: str = "train") -> pd.DataFrame:
    sents = [f"{LINES[i % len(LINES)]} ({i})" for i in range(n)]
    return pd.DataFrame(
        {
            "anchor": sents,
            "positive": sents,
            "negative": [s.replace("the", "no") for s in sents],
            "family": "negation",
            "source_id": [f"s{i}" for i in range(n)],
            "split": split,
        }
    )


def _has_local_data() -> bool:
    from compsense.core.paths import local_data_dir

    root = local_data_dir(required=False)
    return root is not None and all((root / d).is_dir() for d in ("mrpc", "stsb", "scifact"))


@pytest.mark.skipif(not _has_local_data(), reason="needs the offline data folder (mrpc, stsb, scifact)")
def test_build_retrieval_triplets_from_offline_data():
    df, stats = build_retrieval_triplets(sources=("mrpc", "stsb", "scifact"), max_rows=None, seed=1)
    assert list(df.columns) == ["anchor", "positive", "negative", "source"]
    assert (df.negative != df.positive).all() and (df.negative != df.anchor).all()
    assert stats["total"] == len(df) and stats["mrpc"]["not_paraphrase"] > 0
    assert stats["stsb"]["score_below_4"] > 0 and stats["scifact"]["split"] == "train"
    again, _ = build_retrieval_triplets(sources=("stsb",), seed=1)
    assert again.equals(df[df.source == "stsb"].reset_index(drop=True))  # seeded
    small, st = build_retrieval_triplets(sources=("stsb",), max_rows=100, seed=1)
    assert len(small) == 100 and st["dropped_by_max_rows"] == st["stsb"]["kept"] - 100


def write_beir(root: Path, name: str, n_queries: int = 6, docs_per_query: int = 4, shared_doc: str | None = None):
    """A BEIR folder with train and test qrels over one corpus (NFCorpus's layout); `shared_doc`
    is one more document whose text another fixture set also holds."""
    folder = root / name
    (folder / "qrels").mkdir(parents=True)
    docs = {
        f"{name}-d{i}": {"_id": f"{name}-d{i}", "title": f"{name} title {i}", "text": f"{name} body text {i}"}
        for i in range(n_queries * docs_per_query)
    }
    if shared_doc:
        docs["shared"] = {"_id": "shared", "title": "", "text": shared_doc}
    (folder / "corpus.jsonl").write_text("".join(json.dumps(d) + "\n" for d in docs.values()))
    queries = [{"_id": f"{name}-q{i}", "text": f"{name} question number {i}"} for i in range(2 * n_queries)]
    (folder / "queries.jsonl").write_text("".join(json.dumps(q) + "\n" for q in queries))
    head = "query-id\tcorpus-id\tscore\n"
    train = [
        f"{name}-q{i}\t{name}-d{i * docs_per_query + j}\t1" for i in range(n_queries) for j in range(docs_per_query)
    ]
    if shared_doc:
        train.append(f"{name}-q0\tshared\t1")
    test = [f"{name}-q{n_queries + i}\t{name}-d{i * docs_per_query}\t1" for i in range(n_queries)]
    (folder / "qrels" / "train.tsv").write_text(head + "\n".join(train) + "\n")
    (folder / "qrels" / "test.tsv").write_text(head + "\n".join(test) + "\n")
    return folder


def test_beir_source_caps_pairs_per_query_and_keeps_eval_sets_zero_shot(tmp_path):
    from compsense.data import datasets as data

    write_beir(tmp_path, "nfcorpus", shared_doc="an abstract both collections hold")
    write_beir(tmp_path, "scifact", shared_doc="an abstract both collections hold")
    df, stats = build_retrieval_triplets(["nfcorpus"], data_dir=tmp_path, max_pairs_per_query=2, seed=3)
    st = stats["nfcorpus"]
    assert st["read_pairs"] == 6 * 4 + 1 and st["over_per_query_cap"] == 2 * 6 + 1 and len(df) == 12
    assert df.groupby("anchor").size().max() == 2 and df.anchor.nunique() == 6
    assert df.equals(build_retrieval_triplets(["nfcorpus"], data_dir=tmp_path, max_pairs_per_query=2, seed=3)[0])
    uncapped, _ = build_retrieval_triplets(["nfcorpus"], data_dir=tmp_path, max_pairs_per_query=None, seed=3)
    assert len(uncapped) == 25 and "an abstract both collections hold" in set(uncapped.positive)
    # The shared abstract is in SciFact's corpus: excluding SciFact drops that pair and never uses it as negative.
    scifact = data.load_beir("scifact", split="test", data_dir=tmp_path)
    kept, st2 = build_retrieval_triplets(
        ["nfcorpus"], data_dir=tmp_path, max_pairs_per_query=None, seed=3, exclude_datasets=[scifact]
    )
    assert st2["nfcorpus"]["in_eval_sets"] == 1 and len(kept) == 24 and st2["excluded_datasets"] == ["scifact"]
    assert "an abstract both collections hold" not in set(kept.positive) | set(kept.negative)


def test_missing_nq_is_an_error_naming_the_offline_profile(tmp_path):
    with pytest.raises(FileNotFoundError, match="--profile local"):
        build_retrieval_triplets(["nq"], nq_path=tmp_path / "missing.jsonl")


def test_training_on_a_sets_train_split_makes_its_rows_in_domain(tmp_path):
    """regime is computed from the training texts: NFCorpus train -> NFCorpus test is in-domain (one
    corpus), SciFact (another collection, overlap excluded) is zero-shot."""
    from compsense.data import datasets as data
    from compsense.retrieval.regime import IN_DOMAIN, ZERO_SHOT, overlap, read_training_keys, write_training_keys

    write_beir(tmp_path, "nfcorpus", shared_doc="an abstract both collections hold")
    write_beir(tmp_path, "scifact", shared_doc="an abstract both collections hold")
    nf_test = data.load_beir("nfcorpus", split="test", data_dir=tmp_path)
    sf_test = data.load_beir("scifact", split="test", data_dir=tmp_path)
    train, _ = build_retrieval_triplets(["nfcorpus"], data_dir=tmp_path, seed=0, exclude_datasets=[sf_test])
    keys = read_training_keys(
        write_training_keys(tmp_path / "keys.json", mix_structural(train, structural_rows(), 0.2))
    )
    nf, sf = overlap(keys, nf_test), overlap(keys, sf_test)
    assert nf["regime"] == IN_DOMAIN and nf["overlap_docs"] > 0 and nf["overlap_queries"] == 0
    assert sf == {"regime": ZERO_SHOT, "overlap_queries": 0, "overlap_docs": 0}
    # Without the exclusion the shared abstract makes SciFact in-domain: computed, not declared.
    leaky, _ = build_retrieval_triplets(["nfcorpus"], data_dir=tmp_path, seed=0, max_pairs_per_query=None)
    from compsense.retrieval.regime import training_keys

    assert overlap(training_keys(leaky), sf_test) == {"regime": IN_DOMAIN, "overlap_queries": 0, "overlap_docs": 1}
    # Normalisation: case and spacing do not hide a copy.
    assert (
        overlap(training_keys(pd.DataFrame({"anchor": ["  SCIFACT question   number 6 "]})), sf_test)["overlap_queries"]
        == 1
    )


def test_mix_structural_share_and_determinism():
    ret, struct = retrieval_rows(40), structural_rows(30)
    a = mix_structural(ret, struct, 0.0, seed=3)
    assert len(a) == 40 and (a.kind == "retrieval").all()
    b = mix_structural(ret, struct, 0.25, seed=3)
    assert len(b) == 40 + 13 and (b.kind == "structural").sum() == 13
    assert b.attrs["mix"]["structural_repeated"] == 0 and set(b.source) >= {"toy", "negation"}
    assert b.equals(mix_structural(ret, struct, 0.25, seed=3))
    assert not b.equals(mix_structural(ret, struct, 0.25, seed=4))
    big = mix_structural(ret, struct, 0.5, seed=0)  # needs 40 structural rows, only 30 exist
    assert (big.kind == "structural").sum() == 40 and big.attrs["mix"]["structural_repeated"] == 10
    with pytest.raises(ValueError, match="share"):
        mix_structural(ret, struct, 1.0)
    with pytest.raises(ValueError, match="negatives"):
        mix_structural(ret, struct, 0.2, negatives="hard")


def test_mix_with_total_rows_fixes_the_triplets_seen_and_nests_retrieval_rows():
    ret, struct = retrieval_rows(40), structural_rows(30)
    a = mix_structural(ret, struct, 0.0, seed=5, total_rows=32)
    b = mix_structural(ret, struct, 0.19, seed=5, total_rows=32)
    assert len(a) == len(b) == 32 and b.attrs["mix"]["retrieval"] == 26 and b.attrs["mix"]["structural"] == 6
    # B's retrieval rows are a subset of A's of the same seed: the variants differ only by the swap.
    assert set(b[b.kind == "retrieval"].anchor) < set(a.anchor)
    few = mix_structural(ret, struct, 0.5, seed=5, total_rows=200)  # too few retrieval rows: all, plus 40
    assert few.attrs["mix"]["retrieval"] == 40 and few.attrs["mix"]["structural"] == 40


def test_control_keeps_identity_rows_with_random_other_sentences():
    ret, struct = retrieval_rows(40), structural_rows(30)
    b = mix_structural(ret, struct, 0.25, seed=2)
    c = mix_structural(ret, struct, 0.25, seed=2, negatives="random")
    sb, sc = b[b.kind == "structural"], c[c.kind == "structural"]
    assert sorted(sb.anchor) == sorted(sc.anchor) and (sc.anchor == sc.positive).all()
    assert set(sc.negative) <= set(struct.anchor) and (sc.negative != sc.anchor).all()
    near_miss = dict(zip(struct.anchor, struct.negative))
    assert all(neg != near_miss[a] for a, neg in zip(sc.anchor, sc.negative))  # no row keeps its near-miss
    assert c.attrs["mix"]["negatives"] == "random" and c.equals(
        mix_structural(ret, struct, 0.25, seed=2, negatives="random")
    )


def test_load_structural_triplets_errors_and_split(tmp_path):
    with pytest.raises(FileNotFoundError, match="notebook 01"):
        load_structural_triplets(tmp_path)
    df = pd.concat([structural_rows(5, "train"), structural_rows(3, "test")])
    (tmp_path / "negatives").mkdir()
    df.to_parquet(tmp_path / "negatives" / "triplets.parquet")
    assert len(load_structural_triplets(tmp_path)) == 5
    df.drop(columns="family").to_parquet(tmp_path / "negatives" / "triplets.parquet")
    with pytest.raises(ValueError, match="family"):
        load_structural_triplets(tmp_path)


def test_paper_config_and_plan():
    c = TrainConfig.paper("gte-modernbert-base", "B", 43, max_steps=None, batch_size=32)
    assert (c.max_steps, c.learning_rate, c.weight_decay) == (500, 4e-5, 0.01)
    assert (c.batch_size, c.max_seq_length, c.scale, c.structural_share, c.seed) == (32, 128, 10.0, 0.19, 43)
    with pytest.raises(TypeError, match="no field"):
        TrainConfig.paper("minilm-l6", bogus=1)
    runs = plan_runs(["m"], [42, 43], structural_share=0.5, share_sweep=[0.0, 0.25, 0.5])
    assert [(r.variant, r.seed) for r in runs] == [
        ("base", 42),
        ("A", 42),
        ("B", 42),
        ("B-share0.25", 42),
        ("A", 43),
        ("B", 43),
    ]
    runs = plan_runs(["m"], [42, 43], ["A", "B", "B-all", "C-identity"], share_sweep=[0.05, 0.5], sweep_all_seeds=[0.5])
    by = {(r.variant, r.seed): r for r in runs}
    assert set(by) == {(v, s) for v in ("A", "B", "B-all", "C-identity") for s in (42, 43)} | {
        ("B-share0.05", 42),
        ("B-share0.5", 42),
        ("B-share0.5", 43),
    }
    assert by["B", 42].families == ("negation", "binding", "spatial") and by["B", 42].structural_share == 0.19
    assert by["B-all", 42].families is None and by["C-identity", 43].structural_negatives == "random"
    with pytest.raises(ValueError, match="unknown variant"):
        plan_runs(["m"], [42], ["A", "D"])
    runs = plan_runs(["m"], [42, 43], ["A", "B", "B-all"], first_seed_only=["B-all"], share_sweep=[0.5])
    assert [(r.variant, r.seed) for r in runs] == [
        ("A", 42),
        ("B", 42),
        ("B-all", 42),
        ("B-share0.5", 42),
        ("A", 43),
        ("B", 43),
    ]


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    """One tiny-bert run of 6 steps at batch 8, checkpoints at 3 and 6 (kept for the resume test)."""
    work = tmp_path_factory.mktemp("train")
    config = TrainConfig(
        backbone="tiny-bert",
        variant="A",
        seed=0,
        max_steps=6,
        batch_size=8,
        save_steps=3,
        logging_steps=1,
        keep_checkpoints=True,
        work_dir=str(work),
        device="cpu",
    )
    final = train_model(config, retrieval_rows())
    return config, final


def _log(config) -> list[dict]:
    return [json.loads(x) for x in (config.run_dir / "train_log.jsonl").read_text().splitlines()]


@pytest.mark.slow
def test_train_writes_final_log_and_done(trained):
    config, final = trained
    assert final == run_dir(config.work_dir, "tiny-bert", "A", 0) / "final"
    assert (final / "modules.json").exists()
    done = json.loads((config.run_dir / "DONE.json").read_text())
    assert done["global_step"] == 6 and done["config"]["batch_size"] == 8 and done["triplets_per_s"] > 0
    steps = [r["step"] for r in _log(config) if "loss" in r]
    assert steps == [1, 2, 3, 4, 5, 6]


@pytest.mark.slow
def test_finished_run_is_skipped(trained):
    config, final = trained
    before = (config.run_dir / "DONE.json").read_text(), len(_log(config))
    assert train_model(config, retrieval_rows()) == final
    assert ((config.run_dir / "DONE.json").read_text(), len(_log(config))) == before
    # Another recipe or other data in the same folder is refused, not silently reused.
    with pytest.raises(ValueError, match=r"max_steps: 6 -> 9.*force=True"):
        train_model(replace(config, max_steps=9), retrieval_rows())
    with pytest.raises(ValueError, match="training data"):
        train_model(config, retrieval_rows(39))
    assert train_model(replace(config, logging_steps=5), retrieval_rows()) == final  # not part of the recipe


def test_the_last_complete_checkpoint_is_resumed_and_incomplete_ones_are_set_aside(tmp_path):
    from compsense.retrieval.training import CHECKPOINT_FILES, last_complete_checkpoint

    def checkpoint(step, drop=(), state="{}"):
        folder = tmp_path / f"checkpoint-{step}"
        folder.mkdir()
        for name in (*CHECKPOINT_FILES, "model.safetensors"):
            if name not in drop:
                (folder / name).write_text(state if name == "trainer_state.json" else "x")
        return folder

    assert last_complete_checkpoint(tmp_path) is None
    good = checkpoint(20)
    checkpoint(40, drop=("trainer_state.json",))  # killed while writing
    checkpoint(60, state='{"global_st')  # a torn state file (disk full)
    checkpoint(100, drop=("model.safetensors",))
    assert last_complete_checkpoint(tmp_path) == str(good)
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        "checkpoint-20",
        "incomplete-checkpoint-100",
        "incomplete-checkpoint-40",
        "incomplete-checkpoint-60",
    ]


@pytest.mark.slow
def test_interrupted_run_resumes_from_last_checkpoint(trained):
    config, final = trained
    # Simulate a kill while checkpoint-6 was being written: it lacks its trainer state, nothing was
    # finished, so the run resumes from checkpoint-3 and checkpoint-6 is set aside, not deleted.
    shutil.rmtree(final)
    (config.run_dir / "DONE.json").unlink()
    (config.run_dir / "checkpoint-6" / "trainer_state.json").unlink()
    n_before = len(_log(config))
    train_model(config, retrieval_rows())
    assert (config.run_dir / "incomplete-checkpoint-6" / "model.safetensors").exists()
    new = _log(config)[n_before:]
    assert new[0]["event"] == "resume" and new[0]["checkpoint"].endswith("checkpoint-3")
    assert [r["step"] for r in new if "loss" in r] == [4, 5, 6]  # steps 1-3 were not redone
    done = json.loads((config.run_dir / "DONE.json").read_text())
    assert done["resumed_from"].endswith("checkpoint-3") and done["global_step"] == 6
    curves = read_train_logs(
        pd.DataFrame([{"backbone": "tiny-bert", "variant": "A", "seed": 0, "structural_share": 0.0}]), config.work_dir
    )
    assert curves.step.tolist() == [1, 2, 3, 4, 5, 6]


@pytest.mark.slow
def test_data_parallel_two_cpu_processes(tmp_path):
    """torchrun with 2 processes (gloo): one saved model, DONE.json says world_size 2 (~30 s)."""
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "OMP_NUM_THREADS": "1", "PYTHONPATH": str(REPO)}
    cmd = [
        sys.executable,
        "-m",
        "torch.distributed.run",
        "--standalone",
        "--nproc_per_node",
        "2",
        str(REPO / "tests" / "ddp_train_script.py"),
        str(tmp_path),
    ]
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=240, cwd=REPO)
    assert proc.returncode == 0, proc.stderr[-3000:]
    out = run_dir(tmp_path, "tiny-bert", "A", 42)
    done = json.loads((out / "DONE.json").read_text())
    assert done["world_size"] == 2 and done["global_step"] == 3
    assert (out / "final" / "modules.json").exists()


def _copy_run(config, tmp_path):
    """The fixture's finished run copied into a new work_dir, so a test can damage it."""
    copy = replace(config, work_dir=str(tmp_path))
    shutil.copytree(config.run_dir, copy.run_dir, dirs_exist_ok=True)
    return copy


@pytest.mark.slow
def test_failed_forced_retrain_keeps_the_previous_model(trained, tmp_path):
    from transformers import TrainerCallback

    class Crash(TrainerCallback):
        def on_step_begin(self, args, state, control, **kwargs):
            raise RuntimeError("killed on the first step")

    config = _copy_run(trained[0], tmp_path)
    weights = {p.name: p.read_bytes() for p in (config.run_dir / "final").glob("*.safetensors")}
    with pytest.raises(RuntimeError, match="first step"):
        train_model(config, retrieval_rows(), force=True, callbacks=[Crash()])
    assert (config.run_dir / "DONE.json").exists() and weights
    assert {p.name: p.read_bytes() for p in (config.run_dir / "final").glob("*.safetensors")} == weights
    # The next forced call finishes the retrain and swaps it in; no scratch folder is left.
    final = train_model(config, retrieval_rows(), force=True)
    assert (final / "modules.json").exists() and not list(config.run_dir.parent.glob(".*retrain"))
    done = json.loads((config.run_dir / "DONE.json").read_text())
    assert done["final_files"] and done["resumed_from"] is None


@pytest.mark.slow
def test_truncated_marker_or_model_is_not_trusted(trained, tmp_path):
    config = _copy_run(trained[0], tmp_path)
    (config.run_dir / "DONE.json").write_text('{"config": {')  # cut mid-write
    train_model(config, retrieval_rows())
    new = _log(config)
    assert new[-1]["step"] == 6 or any(r.get("event") == "resume" for r in new)
    done = json.loads((config.run_dir / "DONE.json").read_text())  # rewritten, with the files' sizes
    weights = next(p for p in (config.run_dir / "final").glob("*.safetensors"))
    assert done["final_files"][weights.name] == weights.stat().st_size
    with open(weights, "r+b") as f:  # a truncated model file
        f.truncate(weights.stat().st_size // 2)
    n_before = len(_log(config))
    train_model(config, retrieval_rows())
    assert len(_log(config)) > n_before and weights.stat().st_size == done["final_files"][weights.name]


@pytest.mark.slow
def test_model_card_names_base_sources_and_variant(trained):
    config, final = trained
    card = (final / "README.md").read_text()
    assert "compsense-variant:A" in card and "seed:0" in card and "compsense" in card
    assert "source_sentence" not in card  # no widget examples: no training text copied into the card
    assert "Samples" not in card and not any(line in card for line in retrieval_rows().positive)


@pytest.mark.slow
def test_card_gets_the_evaluated_metrics_and_the_run_stays_finished(trained, tmp_path):
    from huggingface_hub import ModelCard

    from compsense.retrieval.model_card import add_card_metrics, write_card_metrics
    from compsense.retrieval.training import _finished_problem

    config = _copy_run(trained[0], tmp_path)
    rows = pd.DataFrame(
        [
            {
                "run": "tiny-bert/A-seed0",
                "dataset": "scifact",
                "metric": "ndcg@10",
                "value": 0.61234,
                "regime": "zero-shot",
                "n_queries": 300,
                "n_docs": 5183,
            },
            {
                "run": "tiny-bert/A-seed0",
                "dataset": "nfcorpus",
                "metric": "ndcg@10",
                "value": 0.3,
                "regime": "in-domain",
                "n_queries": 323,
                "n_docs": 3633,
            },
            {
                "run": "tiny-bert/A-seed0",
                "dataset": "scifact",
                "metric": "precision@3",
                "value": 0.2,
                "regime": "zero-shot",
                "n_queries": 300,
                "n_docs": 5183,
            },
        ]
    )
    path = add_card_metrics(config.run_dir, rows)
    card = ModelCard.load(path)
    results = {(r.dataset_name, r.metric_type): r.metric_value for r in card.data.eval_results}
    assert results == {("SciFact", "ndcg_at_10"): 0.61234, ("NFCorpus", "ndcg_at_10"): 0.3}  # MTEB's names
    text = path.read_text()
    assert "| zero-shot | scifact | 0.6123 |" in text and "| in-domain | nfcorpus | 0.3000 |" in text
    assert "compsense-variant:A" in text  # what training wrote stays
    assert _finished_problem(config.run_dir / "DONE.json", config.run_dir / "final") is None
    # a second evaluation replaces the first: one section, the new value
    models = pd.DataFrame(
        [
            {"backbone": "tiny-bert", "variant": "base", "seed": 0, "model": "tiny-bert"},
            {"backbone": "tiny-bert", "variant": "A", "seed": 0, "model": str(config.run_dir / "final")},
        ]
    )
    assert write_card_metrics(models, rows.assign(value=0.5)) == [path]
    text = path.read_text()
    assert text.count("## Evaluation (compsense)") == 1 and "0.6123" not in text and "| 0.5000 |" in text
    assert _finished_problem(config.run_dir / "DONE.json", config.run_dir / "final") is None
    with pytest.raises(ValueError, match="lack columns"):
        add_card_metrics(config.run_dir, rows.drop(columns="regime"))
    with pytest.raises(FileNotFoundError, match="train the model first"):
        add_card_metrics(tmp_path / "nowhere", rows)


def test_the_library_loss_is_the_loss_notebook_02_writes_by_hand():
    from compsense.core.encoders import load_encoder
    from compsense.retrieval.training import mnrl_library_loss

    model = load_encoder("tiny-bert", max_seq_length=32)
    batch = pd.concat([retrieval_rows(3), structural_rows(1)[["anchor", "positive", "negative"]]], ignore_index=True)
    library = mnrl_library_loss(model, batch, scale=10.0)
    anchors = model.encode(list(batch.anchor), normalize_embeddings=True)
    candidates = model.encode([*batch.positive, *batch.negative], normalize_embeddings=True)
    logits = 10.0 * anchors @ candidates.T  # 4 anchors x (4 positives + 4 negatives)
    assert logits[3, 3] == pytest.approx(10.0, abs=1e-4)  # the identity row: its anchor is its positive
    by_hand = float(-(logits.diagonal() - np.log(np.exp(logits).sum(1))).mean())
    assert library == pytest.approx(by_hand, rel=1e-4)
    assert mnrl_library_loss(model, batch, scale=20.0) != pytest.approx(library, rel=1e-3)  # the scale is used


@pytest.mark.slow
def test_push_models_is_opt_in_and_uploads_each_trained_model(trained, monkeypatch):
    from compsense.retrieval.training import push_models

    config, final = trained

    class FakeHub:
        def __init__(self):
            self.calls = []

        def create_repo(self, repo_id, **kw):
            self.calls.append(("create", repo_id, kw["private"]))

        def upload_folder(self, folder_path, repo_id, **kw):
            self.calls.append(("upload", repo_id, sorted(p.name for p in Path(folder_path).iterdir())))

    runs = pd.DataFrame(
        [
            {"backbone": "tiny-bert", "variant": "base", "seed": 0, "model": "tiny-bert"},
            {"backbone": "tiny-bert", "variant": "A", "seed": 0, "model": str(final)},
        ]
    )
    hub = FakeHub()
    assert push_models(runs, "someone/cs", api=hub) == ["someone/cs-tiny-bert-A-seed0"]
    assert hub.calls[0] == ("create", "someone/cs-tiny-bert-A-seed0", True)
    assert hub.calls[1][0] == "upload" and "README.md" in hub.calls[1][2] and "modules.json" in hub.calls[1][2]
    with pytest.raises(ValueError, match="user or org"):
        push_models(runs, "no-namespace", api=hub)
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    with pytest.raises(RuntimeError, match="HF_HUB_OFFLINE"):
        push_models(runs, "someone/cs")


def test_a_torn_log_line_is_left_out_with_a_warning_and_the_next_record_starts_a_line(tmp_path, caplog):
    from compsense.retrieval.training import _append_jsonl, _log_records

    log = tmp_path / "train_log.jsonl"
    _append_jsonl(log, {"step": 1, "loss": 2.0})
    with open(log, "a") as f:
        f.write('{"step": 2, "lo')  # killed mid-write
    assert _log_records(log) == [{"step": 1, "loss": 2.0}] and "line 2: not a JSON record" in caplog.text
    caplog.clear()
    _append_jsonl(log, {"step": 2, "loss": 1.5})  # the resumed run appends on a line of its own
    assert _log_records(log) == [{"step": 1, "loss": 2.0}, {"step": 2, "loss": 1.5}]
    assert "train_log.jsonl, line 2: not a JSON record" in caplog.text  # said, not silent


@pytest.mark.parametrize(
    "field,value,message",
    [
        ("max_steps", -1, "max_steps = -1: must be at least 1"),
        ("structural_share", 1.5, "structural_share = 1.5: must be between 0.0 and 1.0"),
        ("learning_rate", "1e-4", "learning_rate = '1e-4': a number is needed"),
    ],
)
def test_a_config_value_a_profile_got_wrong_is_refused_naming_it(field, value, message):
    with pytest.raises(ValueError, match=re.escape(message)):
        TrainConfig(**{field: value})


@pytest.mark.slow
def test_weights_damaged_in_place_at_the_same_size_are_not_trusted(trained, tmp_path, caplog):
    config = _copy_run(trained[0], tmp_path)
    train_model(config, retrieval_rows())  # a finished run: skipped, its marker as training wrote it
    done = json.loads((config.run_dir / "DONE.json").read_text())
    weights = next(p for p in (config.run_dir / "final").glob("*.safetensors"))
    if "final_sha256" not in done:  # the fixture's run predates digests: record them as training now does
        train_model(config, retrieval_rows(), force=True)
        done = json.loads((config.run_dir / "DONE.json").read_text())
    good, size = weights.read_bytes(), weights.stat().st_size
    with open(weights, "r+b") as f:  # bytes overwritten inside the file: its size is unchanged
        f.seek(size // 2)
        f.write(bytes(b ^ 0xFF for b in good[size // 2 : size // 2 + 4096]))
    assert weights.stat().st_size == done["final_files"][weights.name]
    n_before = len(_log(config))
    with caplog.at_level("WARNING"):
        train_model(config, retrieval_rows())
    assert f"final/{weights.name}: its content differs from the sha256" in caplog.text
    assert len(_log(config)) > n_before  # trained again, not reused
    assert json.loads((config.run_dir / "DONE.json").read_text())["final_sha256"][weights.name] == sha256_file(weights)


@pytest.mark.slow
def test_run_grid_trains_each_run_once_and_reports_what_each_saw(tmp_path):
    """Notebook 02's grid: base is not trained, A and B see max_steps x batch triplets (B with its share of
    structural rows), a second call skips the finished runs, and a family notebook 01 did not make is refused."""
    from compsense.retrieval.training import RunSpec, run_grid

    runs = [RunSpec("tiny-bert", "base", 0, None), RunSpec("tiny-bert", "A", 0, 0.0)]
    runs.append(RunSpec("tiny-bert", "B", 0, 0.25, ("negation",)))
    knobs = {"max_steps": 2, "batch_size": 8, "device": "cpu", "max_seq_length": 32}
    first = run_grid(runs, retrieval_rows(), structural_rows(), tmp_path, **knobs).set_index("variant")
    assert first.loc["base", "status"] == "base" and first.loc["base", "model"] == "tiny-bert"
    assert list(first.loc[["A", "B"], "status"]) == ["trained", "trained"]
    assert (first.loc["A", "retrieval_rows"], first.loc["A", "structural_rows"]) == (16, 0)
    assert (first.loc["B", "retrieval_rows"], first.loc["B", "structural_rows"]) == (12, 4)
    assert first.loc["B", "families"] == "negation" and first.loc["A", "families"] == ""
    assert Path(first.loc["B", "model"]) == run_dir(tmp_path, "tiny-bert", "B", 0) / "final"
    assert Path(first.loc["B", "train_keys"]).is_file()

    again = run_grid(runs, retrieval_rows(), structural_rows(), tmp_path, **knobs).set_index("variant")
    assert list(again.loc[["A", "B"], "status"]) == ["skipped (done)", "skipped (done)"]
    assert again.loc["B", "model_stamp"] == first.loc["B", "model_stamp"]

    spatial = [RunSpec("tiny-bert", "B", 1, 0.25, ("spatial",))]
    with pytest.raises(ValueError, match=r"no structural triplets of famil\(ies\) \['spatial'\]"):
        run_grid(spatial, retrieval_rows(), structural_rows(), tmp_path, **knobs)
