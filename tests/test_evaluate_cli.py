"""`compsense evaluate MODEL DATASET...`: the harness's numbers in the tidy tables and in MTEB's
result JSON shape, from a BEIR folder written by the test and the offline tiny BERT."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from packaging.version import Version

from compsense.__main__ import main as cli
from compsense.core.encoders import TINY_CORPUS, load_encoder
from compsense.core.storage import read_table
from compsense.data.datasets import load_beir
from compsense.retrieval.harness import HARNESS, METRICS, evaluate_dataset


def _beir_folder(root, n_docs=60, n_queries=12):
    lines = [ln.strip() for ln in TINY_CORPUS.read_text().splitlines() if ln.strip()]
    root.mkdir(parents=True)
    (root / "qrels").mkdir()
    with open(root / "corpus.jsonl", "w") as f:
        for i in range(n_docs):
            f.write(json.dumps({"_id": f"d{i}", "title": "", "text": f"{lines[i % len(lines)]} {i}"}) + "\n")
    with open(root / "queries.jsonl", "w") as f:
        for i in range(n_queries):
            f.write(json.dumps({"_id": f"q{i}", "text": " ".join(lines[(3 * i) % len(lines)].split()[:4])}) + "\n")
    rows = ["query-id\tcorpus-id\tscore"] + [f"q{i}\td{(3 * i) % n_docs}\t{1 + i % 2}" for i in range(n_queries)]
    (root / "qrels" / "test.tsv").write_text("\n".join(rows) + "\n")
    return root


@pytest.mark.slow
def test_evaluate_writes_tidy_rows_and_mteb_json(tmp_path, capsys, monkeypatch):
    from compsense.data import release

    # A made-up folder named scifact (MTEB's task name is the point here): no release to check it against
    monkeypatch.setattr(release, "load_manifest", lambda path=None: {})
    folder = _beir_folder(tmp_path / "data" / "scifact")
    out = tmp_path / "out"
    args = ["evaluate", "tiny-bert", str(folder), "--out", str(out), "--batch-size", "16"]
    assert cli(args) == 0
    printed = capsys.readouterr().out
    assert "scifact" in printed and "MTEB JSON" in printed

    expected = evaluate_dataset(
        load_encoder("tiny-bert", max_seq_length=128), load_beir(folder), show_progress=False
    ).metrics
    tidy = read_table(out / "results" / "retrieval.parquet")
    assert sorted(tidy.metric) == sorted(METRICS)
    assert set(tidy.run) == {"evaluate/tiny-bert"} and set(tidy.variant) == {"base"}
    assert set(tidy.harness) == {HARNESS} and set(tidy.split) == {"test"}
    for row in tidy.itertuples():
        assert row.value == pytest.approx(expected[row.metric], abs=1e-6)
    assert len(read_table(out / "results" / "retrieval_per_query.parquet")) == 12

    (path,) = (out / "mteb").rglob("SciFact.json")  # MTEB's task name for the BEIR folder scifact
    record = json.loads(path.read_text())
    assert {"dataset_revision", "task_name", "mteb_version", "scores", "evaluation_time"} <= set(record)
    Version(record["mteb_version"])  # mteb compares it as a version when loading
    (scores,) = record["scores"]["test"]
    assert scores["main_score"] == scores["ndcg_at_10"] == pytest.approx(expected["ndcg@10"], abs=1e-6)
    assert scores["precision_at_1"] == pytest.approx(expected["acc@1"], abs=1e-6)
    assert scores["recall_at_100"] == pytest.approx(expected["recall@100"], abs=1e-6)
    assert scores["hf_subset"] == "default" and scores["languages"] == ["eng-Latn"]
    assert record["compsense"]["harness"] == HARNESS
    assert set(record["compsense"]["dataset_files"]) == {"corpus.jsonl", "queries.jsonl", "qrels/test.tsv"}
    assert (path.parent / "model_meta.json").exists()

    assert cli(args) == 0  # a second run replaces its rows rather than adding copies
    assert len(read_table(out / "results" / "retrieval.parquet")) == len(METRICS)


@pytest.mark.slow
def test_evaluate_takes_a_nanobeir_set_from_the_data_folder(tmp_path, capsys):
    import pyarrow as pa
    import pyarrow.parquet as pq

    beir = load_beir(_beir_folder(tmp_path / "beir" / "scifact"))
    nano = tmp_path / "data" / "nanobeir" / "NanoSciFact"  # the layout of a per-set hub snapshot
    nano.mkdir(parents=True)
    pq.write_table(
        pa.table({"_id": list(beir.corpus), "text": [d["text"] for d in beir.corpus.values()]}), nano / "corpus.parquet"
    )
    pq.write_table(pa.table({"_id": list(beir.queries), "text": list(beir.queries.values())}), nano / "queries.parquet")
    pairs = [(q, d) for q, docs in beir.qrels.items() for d in docs]
    pq.write_table(
        pa.table({"query-id": [q for q, _ in pairs], "corpus-id": [d for _, d in pairs]}), nano / "qrels.parquet"
    )
    out = tmp_path / "out"
    assert (
        cli(
            [
                "evaluate",
                "tiny-bert",
                "NanoSciFact",
                "--data-dir",
                str(tmp_path / "data"),
                "--out",
                str(out),
                "--nanobeir-dataset-id",
                "lightonai/NanoBEIR-en",
            ]
        )
        == 0
    )
    tidy = read_table(out / "results" / "retrieval.parquet")
    assert set(tidy.dataset) == {"NanoSciFact"} and set(tidy.split) == {"test"}
    assert all("nanobeir" in s and "NanoSciFact" in s for s in tidy.source)
    (path,) = (out / "mteb").rglob("NanoSciFactRetrieval.json")  # MTEB's task name
    record = json.loads(path.read_text())
    assert "NanoSciFact" in record["compsense"]["source"] and "dataset_files" not in record["compsense"]
    # NanoBEIR qrels are binary: the graded BEIR folder's nDCG differs, its acc@1 (any relevant doc) does not
    expected = evaluate_dataset(load_encoder("tiny-bert", max_seq_length=128), beir, show_progress=False).metrics
    assert record["scores"]["test"][0]["precision_at_1"] == pytest.approx(expected["acc@1"], abs=1e-6)


def test_missing_dataset_fails_before_loading_the_model(tmp_path, monkeypatch, capsys):
    from compsense.retrieval import evaluate  # imported first: patched where it is called, not baked into it

    monkeypatch.setattr(evaluate, "load_encoder", lambda *a, **k: pytest.fail("model loaded"))
    assert cli(["evaluate", "tiny-bert", str(tmp_path / "nope"), "--out", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err
    assert "BEIR folder not found" in err and "Traceback" not in err and len(err.strip().splitlines()) == 1
    with pytest.raises(FileNotFoundError, match="BEIR folder not found"):  # --debug: the error itself
        cli(["--debug", "evaluate", "tiny-bert", str(tmp_path / "nope"), "--out", str(tmp_path / "out")])


def test_a_wrong_model_path_or_out_is_one_line_naming_it_and_the_fix(tmp_path, capsys):
    data = _beir_folder(tmp_path / "data" / "toy")
    (tmp_path / "empty").mkdir()
    (tmp_path / "a_file").write_text("x")
    cases = [
        ([str(tmp_path / "no_such_model"), str(data)], "no such model folder. Fix:"),
        ([str(tmp_path / "empty"), str(data)], "not a model folder (no modules.json or config.json). Fix:"),
        (["tiny-bert", str(data), "--out", str(tmp_path / "a_file")], "a file, not a folder. Fix:"),
    ]
    for args, message in cases:
        assert cli(["evaluate", *args]) == 2
        err = capsys.readouterr().err
        assert message in err and len(err.strip().splitlines()) == 1, err


@pytest.mark.slow
def test_two_model_folders_of_one_name_keep_their_own_rows(tmp_path):
    folder = _beir_folder(tmp_path / "data" / "toy")
    out = tmp_path / "out"
    for variant, seed in (("A", 1), ("B", 2)):  # two different models, both saved as .../final
        load_encoder("tiny-bert", seed=seed).save(str(tmp_path / variant / "final"))
        assert cli(["evaluate", str(tmp_path / variant / "final"), str(folder), "--out", str(out)]) == 0
    tidy = read_table(out / "results" / "retrieval.parquet")
    assert tidy.run.nunique() == 2 and all(r.startswith("evaluate/final-") for r in tidy.run)
    assert len(tidy) == 2 * len(METRICS) and len(list((out / "mteb").glob("final-*"))) == 2


def test_evaluate_out_gets_the_refusal_reproduce_gives(tmp_path, capsys, monkeypatch):
    """Issue 51 item 3: `--out figures/x` wrote into the committed figures/, `--out data/x` into data/,
    and an --out inside the data folder was accepted. Each is refused in one line before anything
    loads, as `reproduce --out` is; a folder under runs/ still works."""
    from compsense.core.paths import repo_root
    from compsense.retrieval import evaluate

    monkeypatch.setattr(evaluate, "load_encoder", lambda *a, **k: pytest.fail("model loaded"))
    data_dir = tmp_path / "data"
    data = _beir_folder(data_dir / "toy")
    elsewhere = _beir_folder(tmp_path / "elsewhere" / "toy")
    with_dir = ["--data-dir", str(data_dir)]
    cases = [
        (data, "figures/compsense-test-x", [], repo_root() / "figures"),
        (data, "data/compsense-test-x", [], repo_root() / "data"),
        (data, str(data_dir / "results"), with_dir, data_dir),  # inside --data-dir
        (elsewhere, str(elsewhere / "out"), [], elsewhere),  # inside the dataset's own folder
    ]
    for dataset, out, extra, place in cases:
        assert cli(["evaluate", "tiny-bert", str(dataset), *extra, "--out", out]) == 2
        err = capsys.readouterr().err
        assert f"is inside {place.resolve()}" in err and "Fix: pass --out a folder under runs/" in err, err
        assert "Traceback" not in err and len(err.strip().splitlines()) == 1
        assert not (repo_root() / out).exists() and not Path(out).exists()
