"""Tests for compsense.data.datasets: the loaders on tiny invented fixtures, every kind of bad input, and
the real local datasets' known sizes when they are present."""

from __future__ import annotations

import gzip
import json
import logging
import shutil
import sys
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from compsense.core.paths import local_data_dir
from compsense.data import datasets as data
from compsense.data.datasets import DataError, MissingDataError

FIXTURES = Path(__file__).parent / "fixtures" / "data"


@pytest.fixture(autouse=True)
def offline(monkeypatch):
    """No test may reach the hub: a lookup would hang ~70 s on this project's machines."""
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")


def write(path: Path, content: str | bytes) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(content if isinstance(content, bytes) else content.encode("utf-8"))
    return path


def jsonl(*records: dict) -> str:
    return "".join(json.dumps(r) + "\n" for r in records)


def check_error(excinfo, path: Path, line: int | None = None, phrase: str = "") -> None:
    """A DataError must name the file, the line and a fix."""
    message = str(excinfo.value)
    assert str(path) in message
    if line is not None:
        assert f"{path}:{line}:" in message
    assert "Fix:" in message
    assert phrase in message


# ---------------------------------------------------------------------------------------------
# BEIR layout


GOOD_CORPUS = jsonl({"_id": "d1", "title": "T", "text": "one"}, {"_id": "d2", "title": "", "text": "two"})
GOOD_QUERIES = jsonl({"_id": "q1", "text": "first?"}, {"_id": "q2", "text": "second?"})
GOOD_QRELS = "query-id\tcorpus-id\tscore\nq1\td1\t1\nq2\td2\t1\n"


def beir_dir(root: Path, corpus=GOOD_CORPUS, queries=GOOD_QUERIES, qrels=GOOD_QRELS) -> Path:
    write(root / "corpus.jsonl", corpus)
    write(root / "queries.jsonl", queries)
    write(root / "qrels" / "test.tsv", qrels)
    return root


def test_tiny_beir_keeps_judged_queries_and_counts_every_skip(caplog):
    with caplog.at_level(logging.INFO, logger="compsense.data.datasets"):
        ds = data.load_beir(FIXTURES / "tiny_beir")
    assert (ds.name, ds.split) == ("tiny_beir", "test")
    assert ds.doc_ids == ["d1", "d2", "d3", "d4"]
    assert ds.doc_texts() == [
        "Cats Cats sleep most of the day.",
        "Dogs bark at strangers.",
        "Rain Rain falls when clouds are heavy.",
        "Only a title",
    ]
    assert ds.queries == {"q1": "How long do cats sleep?", "q2": "Why do dogs bark?"}
    assert ds.query_texts() == list(ds.queries.values()) and ds.query_ids == ["q1", "q2"]
    assert ds.qrels == {"q1": {"d1": 1}, "q2": {"d2": 2}}
    assert ds.skipped == {
        "empty_docs": 1,
        "empty_queries": 1,
        "non_relevant_qrels": 1,
        "qrels_missing_doc": 1,
        "qrels_missing_query": 1,
        "duplicate_qrels": 1,
        "queries_without_relevant_docs": 1,
        "queries_not_in_split": 2,
    }
    warned = {r.getMessage() for r in caplog.records if r.levelno == logging.WARNING}
    assert len(warned) == 7 and any("not in the corpus" in m and "test.tsv:5" in m for m in warned)
    assert [r.levelno for r in caplog.records if "other splits" in r.getMessage()] == [logging.INFO]


def test_beir_by_name_in_data_dir_and_other_split():
    ds = data.load_beir("tiny_beir", split="train", data_dir=FIXTURES)
    assert ds.queries == {"q5": "What makes clouds heavy?"} and ds.qrels == {"q5": {"d3": 1}}


def test_beir_reads_gzipped_corpus_and_u2028_inside_json(tmp_path):
    root = beir_dir(tmp_path / "b", corpus="")
    (root / "corpus.jsonl").unlink()
    corpus = GOOD_CORPUS.replace('"two"', '"two\\u2028lines"').replace("\\u2028", "\u2028")
    write(root / "corpus.jsonl.gz", gzip.compress(corpus.encode("utf-8")))
    assert data.load_beir(root).corpus["d2"]["text"] == "two\u2028lines"


def test_beir_missing_folder_split_and_file(tmp_path):
    with pytest.raises(MissingDataError) as e:
        data.load_beir(tmp_path / "nowhere")
    assert isinstance(e.value, FileNotFoundError) and "nowhere" in str(e.value)
    with pytest.raises(MissingDataError, match=r"\['test', 'train'\]"):
        data.load_beir(FIXTURES / "tiny_beir", split="dev")
    root = beir_dir(tmp_path / "b")
    (root / "queries.jsonl").unlink()
    with pytest.raises(MissingDataError) as e:
        data.load_beir(root)
    check_error(e, root / "queries.jsonl", phrase="file not found")


@pytest.mark.parametrize(
    "part, content, line, phrase",
    [
        ("corpus", GOOD_CORPUS + '{"_id": "d3", "text": "cut off\n', 3, "malformed JSON"),
        ("corpus", jsonl({"_id": "d1", "title": "T"}), 1, "missing key 'text'"),
        ("corpus", jsonl({"title": "T", "text": "x"}), 1, "missing or empty id"),
        ("corpus", jsonl({"_id": "d1", "text": 5}), 1, "not a string"),
        ("corpus", GOOD_CORPUS + jsonl({"_id": "d1", "text": "again"}), 3, "duplicate id 'd1'"),
        ("corpus", GOOD_CORPUS.encode() + b'{"_id": "d3", "text": "caf\xe9"}\n', 3, "not UTF-8"),
        ("corpus", "[1, 2]\n", 1, "expected a JSON object"),
        ("queries", GOOD_QUERIES + jsonl({"_id": "q1", "text": "dup"}), 3, "duplicate id 'q1'"),
        ("qrels", "query-id\tcorpus-id\tscore\nq1\td1\thigh\n", 2, "not an integer"),
        ("qrels", "query-id\tcorpus-id\tscore\nq1\td1\t0.5\n", 2, "not an integer"),
        ("qrels", "q1\td1\t1\n", 1, "header"),
        ("qrels", "query-id\tcorpus-id\tscore\nq1 d1 1\n", 2, "3 tab-separated columns"),
        ("qrels", "query-id\tcorpus-id\tscore\nq1\td1\t1\nq1\td1\t2\n", 3, "another score"),
    ],
)
def test_beir_bad_input_names_file_line_and_fix(tmp_path, part, content, line, phrase):
    root = beir_dir(tmp_path / "b", **{part: content})
    path = root / ("qrels/test.tsv" if part == "qrels" else f"{part}.jsonl")
    with pytest.raises(DataError) as e:
        data.load_beir(root)
    check_error(e, path, line, phrase)


@pytest.mark.parametrize(
    "qrels, phrase",
    [
        ("query-id\tcorpus-id\tscore\n", "qrels are empty"),
        ("query-id\tcorpus-id\tscore\nq1\tnope\t1\nq1\td1\t0\n", "no usable test qrels"),
    ],
)
def test_beir_without_usable_qrels_is_an_error(tmp_path, qrels, phrase):
    with pytest.raises(DataError, match=phrase):
        data.load_beir(beir_dir(tmp_path / "b", qrels=qrels))


def test_beir_all_empty_corpus_is_an_error(tmp_path):
    with pytest.raises(DataError, match="no documents"):
        data.load_beir(beir_dir(tmp_path / "b", corpus=jsonl({"_id": "d1", "title": "", "text": " "})))


# ---------------------------------------------------------------------------------------------
# NanoBEIR


def test_nanobeir_names():
    assert len(data.NANOBEIR_SETS) == 13
    assert {data.nanobeir_name(n) for n in ("scifact", "SciFact", "NanoSciFact")} == {"NanoSciFact"}
    with pytest.raises(ValueError, match="NanoArguAna"):
        data.nanobeir_name("scifacts")


def nano_tables(list_ids: bool) -> dict[str, pa.Table]:
    qrels = (
        {"query-id": ["q1"], "corpus-id": [["d1", "d2"]]}
        if list_ids
        else {"query-id": ["q1", "q1"], "corpus-id": ["d1", "d2"]}
    )
    return {
        "corpus": pa.table({"_id": ["d1", "d2", "d3"], "text": ["alpha", "beta", ""]}),
        "queries": pa.table({"_id": ["q1"], "text": ["which letters?"]}),
        "qrels": pa.table(qrels),
    }


@pytest.mark.parametrize(
    "layout",
    ["{nano}/{cfg}.parquet", "{nano}/{cfg}/train-00000-of-00001.parquet", "{cfg}/{nano}-00000-of-00001.parquet"],
)
@pytest.mark.parametrize("list_ids", [False, True])
def test_nanobeir_from_local_copy(tmp_path, layout, list_ids):
    for cfg, table in nano_tables(list_ids).items():
        path = tmp_path / layout.format(nano="NanoSciFact", cfg=cfg)
        path.parent.mkdir(parents=True, exist_ok=True)
        pq.write_table(table, path)
    ds = data.load_nanobeir("scifact", local_dir=tmp_path)
    assert (ds.name, ds.split) == ("NanoSciFact", "test")
    assert ds.qrels == {"q1": {"d1": 1, "d2": 1}}
    assert ds.doc_texts() == ["alpha", "beta"] and ds.skipped == {"empty_docs": 1}


def test_nanobeir_default_local_dir_is_in_data_folder(tmp_path, monkeypatch):
    monkeypatch.setenv("COMPSENSE_DATA_DIR", str(tmp_path))
    (tmp_path / "nanobeir" / "NanoNQ").mkdir(parents=True)
    for cfg, table in nano_tables(False).items():
        pq.write_table(table, tmp_path / "nanobeir" / "NanoNQ" / f"{cfg}.parquet")
    assert data.load_nanobeir("nq").name == "NanoNQ"


def test_nanobeir_offline_without_copy_fails_fast_naming_local_dir(tmp_path, monkeypatch):
    monkeypatch.setenv("COMPSENSE_DATA_DIR", str(tmp_path))
    with pytest.raises(MissingDataError, match="local_dir=.*HF_HUB_OFFLINE=0"):
        data.load_nanobeir("SciFact")


def test_nanobeir_bad_local_copy(tmp_path):
    with pytest.raises(MissingDataError, match="no parquet files for NanoFEVER"):
        data.load_nanobeir("fever", local_dir=tmp_path)
    for cfg in ("corpus", "queries", "qrels"):
        write(tmp_path / "NanoFEVER" / f"{cfg}.parquet", b"not parquet")
    with pytest.raises(DataError) as e:
        data.load_nanobeir("fever", local_dir=tmp_path)
    check_error(e, tmp_path / "NanoFEVER" / "corpus.parquet", phrase="not a readable parquet file")


# ---------------------------------------------------------------------------------------------
# NQ pairs and sentence lists


def test_nq_pairs_from_jsonl_csv_and_parquet(tmp_path, caplog):
    path = write(
        tmp_path / "nq.jsonl",
        jsonl(
            {"query": "q one", "answer": "p one"}, {"query": " ", "answer": "p"}, {"query": "q two", "answer": "p two"}
        ),
    )
    with caplog.at_level(logging.WARNING, logger="compsense.data.datasets"):
        assert data.load_nq_pairs(path) == [data.QAPair("q one", "p one"), data.QAPair("q two", "p two")]
    assert "skipped 1 pairs with an empty query or passage" in caplog.text and "nq.jsonl:2" in caplog.text
    assert len(data.load_nq_pairs(path, limit=1)) == 1
    csv_path = write(tmp_path / "nq.csv", 'question,passage\n"who, then?",a passage\n')
    assert data.load_nq_pairs(csv_path) == [data.QAPair("who, then?", "a passage")]
    pq.write_table(pa.table({"query": ["q"], "answer": ["p"]}), tmp_path / "nq.parquet")
    assert data.load_nq_pairs(tmp_path / "nq.parquet") == [data.QAPair("q", "p")]


def test_nq_pairs_bad_input(tmp_path):
    path = write(tmp_path / "nq.csv", "question,answer_text\nq,p\n")
    with pytest.raises(DataError) as e:
        data.load_nq_pairs(path)
    check_error(e, path, 2, "missing key 'passage'")
    with pytest.raises(MissingDataError, match="path="):
        data.load_nq_pairs()
    with pytest.raises(MissingDataError):
        data.load_nq_pairs(tmp_path / "absent.jsonl")


def test_load_sentences_formats(tmp_path, caplog):
    assert data.load_sentences(write(tmp_path / "s.txt", "One.\n\n  Two.  \n")) == ["One.", "Two."]
    assert data.load_sentences(write(tmp_path / "s.jsonl", jsonl({"text": "A."}, {"text": "B."}))) == ["A.", "B."]
    with caplog.at_level(logging.WARNING, logger="compsense.data.datasets"):
        assert data.load_sentences(write(tmp_path / "s.csv", "id,sentence\n1,A.\n2,\n3,C.\n")) == ["A.", "C."]
    assert "skipped 1 empty sentences" in caplog.text and "s.csv:3" in caplog.text


@pytest.mark.parametrize(
    "name, content, line, phrase",
    [
        ("s.txt", b"fine\ncaf\xe9\n", 2, "not UTF-8"),
        ("s.jsonl", jsonl({"sentence": "A."}, {"words": "B."}), 2, "'sentence' or 'text'"),
        ("s.jsonl", '{"text": "A."}\n{"text": \n', 2, "malformed JSON"),
        ("s.tsv", "A.\n", None, "unsupported file type"),
        ("s.txt", "\n\n", None, "no records"),
    ],
)
def test_load_sentences_bad_input(tmp_path, name, content, line, phrase):
    path = write(tmp_path / name, content)
    with pytest.raises(DataError) as e:
        data.load_sentences(path)
    check_error(e, path, line, phrase)


# ---------------------------------------------------------------------------------------------
# MRPC and STS-B


def test_mrpc_glue_split_from_original_files():
    train, dev = data.load_mrpc("train", FIXTURES), data.load_mrpc("dev", FIXTURES)
    assert [len(data.load_mrpc(s, FIXTURES)) for s in data.MRPC_SPLITS] == [3, 2, 2, 5]
    assert [(p.id1, p.id2) for p in dev] == [("103", "104"), ("109", "110")]
    assert train[0] == data.SentencePair(
        'He said " hello " twice .', 'He twice said " hello " .', 1.0, "101", "102", "mrpc"
    )
    with pytest.raises(ValueError, match="all_train"):
        data.load_mrpc("validation", FIXTURES)


@pytest.mark.parametrize(
    "name, replace, line, phrase",
    [
        ("msr_paraphrase_train.txt", ("Quality", "Label"), 1, "header"),
        ("msr_paraphrase_train.txt", ("\tThe shop closed last year .", ""), 3, "5 tab-separated columns"),
        ("msr_paraphrase_train.txt", ("0\t103", "2\t103"), 3, "not 0 or 1"),
        ("msr_paraphrase_train.txt", ("The river is wide .", " "), 5, "empty sentence"),
        ("msr_paraphrase_train.txt", ("105\t106", "103\t104"), 4, "repeats line 3"),
        ("msr_paraphrase_train.txt", ("nine", "nin\udce9"), 3, "not UTF-8"),
        ("dev_ids.tsv", ("109\t110", "109\t111"), 2, "not in msr_paraphrase_train.txt"),
        ("dev_ids.tsv", ("109\t110", "109 110"), 2, "2 tab-separated ids"),
    ],
)
def test_mrpc_bad_input(tmp_path, name, replace, line, phrase):
    shutil.copytree(FIXTURES / "mrpc", tmp_path / "mrpc")
    path = tmp_path / "mrpc" / name
    text = path.read_text(encoding="utf-8").replace(*replace)
    write(path, text.encode("utf-8", errors="surrogateescape"))
    with pytest.raises(DataError) as e:
        data.load_mrpc("dev", tmp_path)
    check_error(e, path, line, phrase)


def test_glue_without_local_files_offline_says_what_to_do(tmp_path):
    with pytest.raises(MissingDataError, match="HF_HUB_OFFLINE=0"):
        data.load_mrpc("train", tmp_path)
    with pytest.raises(MissingDataError, match="test labels are hidden"):
        data.load_stsb("test", tmp_path)
    with pytest.raises(MissingDataError, match="does not exist"):
        data.load_stsb("train", tmp_path / "no_such_dir")


def test_stsb_splits_scores_and_ids():
    train = data.load_stsb("train", FIXTURES)
    assert [len(data.load_stsb(s, FIXTURES)) for s in data.STSB_SPLITS] == [3, 2, 2]
    assert [p.label for p in train] == [5.0, 1.25, 0.0]
    assert train[1].sentence1 == 'He said "no" again.' and train[2].sentence2 == "Boats float."
    assert (train[0].id1, train[0].id2, train[0].source) == (
        "main-captions/MSRvid/2012test/0001#1",
        "main-captions/MSRvid/2012test/0001#2",
        "stsb",
    )


@pytest.mark.parametrize(
    "line_text, phrase",
    [
        ("g\tf\ty\t9\tfive\tA.\tB.", "not a number"),
        ("g\tf\ty\t9\t7.5\tA.\tB.", "outside 0-5"),
        ("g\tf\ty\t9\t2.0\tA.", "at least 7"),
        ("main-captions\tMSRvid\t2012test\t0001\t1.0\tA.\tB.", "repeats line 1"),
    ],
)
def test_stsb_bad_input(tmp_path, line_text, phrase):
    shutil.copytree(FIXTURES / "stsb", tmp_path / "stsb")
    path = tmp_path / "stsb" / "sts-train.tsv"
    write(path, path.read_text(encoding="utf-8") + line_text + "\n")
    with pytest.raises(DataError) as e:
        data.load_stsb("train", tmp_path)
    check_error(e, path, 4, phrase)


# ---------------------------------------------------------------------------------------------
# SugarCrepe and NQ-open


def test_sugarcrepe_subsets():
    assert len(data.SUGARCREPE_SUBSETS) == 7 and len(data.load_sugarcrepe(data_dir=FIXTURES)) == 8
    swaps = data.load_sugarcrepe("swap_obj", FIXTURES)
    assert swaps[1] == data.CaptionNearMiss("A horse pulls a cart.", "A cart pulls a horse.", "swap_obj", "swap_obj/1")
    with pytest.raises(ValueError, match="swap_obj"):
        data.load_sugarcrepe(["swap_objects"], FIXTURES)


@pytest.mark.parametrize(
    "content, line, phrase",
    [
        ('{\n  "0": {"caption": "A.", "negative_caption": "B."},\n}\n', 3, "malformed JSON"),
        ('{"0": {"caption": "A."}}', None, "missing key 'negative_caption'"),
        (
            '{"0": {"caption": "A.", "negative_caption": "B."}, "0": {"caption": "C.", "negative_caption": "D."}}',
            None,
            "duplicate example ids ['0']",
        ),
        ('{"0": {"caption": "A.", "negative_caption": "A."}}', None, "equals the caption"),
        ('{"7": {"caption": "", "negative_caption": "A."}}', None, "example '7': empty sentence"),
    ],
)
def test_sugarcrepe_bad_input(tmp_path, content, line, phrase):
    path = write(tmp_path / "sugarcrepe" / "add_att.json", content)
    with pytest.raises(DataError) as e:
        data.load_sugarcrepe("add_att", tmp_path)
    check_error(e, path, line, phrase)


def test_nq_open():
    assert [len(data.load_nq_open(s, FIXTURES)) for s in data.NQ_OPEN_FILES] == [2, 1, 1]
    assert data.load_nq_open("dev", FIXTURES)[0] == {
        "question": "who painted the blue door",
        "answer": ["Ann Lee", "A. Lee"],
    }


def test_nq_open_bad_answer(tmp_path):
    path = write(
        tmp_path / "nq_open" / "NQ-open.dev.jsonl",
        jsonl({"question": "ok", "answer": ["a"]}, {"question": "bad", "answer": "a"}),
    )
    with pytest.raises(DataError) as e:
        data.load_nq_open("dev", tmp_path)
    check_error(e, path, 2, "list of answer strings")
    with pytest.raises(MissingDataError) as e:
        data.load_nq_open("efficientqa_dev", tmp_path)
    check_error(e, tmp_path / "nq_open" / "NQ-open.efficientqa.dev.1.1.jsonl")


class FakeDatasets:
    """Stands in for the `datasets` module, so the online code paths run without a network."""

    def __init__(self, tables: dict):
        self.tables, self.calls = tables, []

    def load_dataset(self, path, name=None, split=None):
        self.calls.append((path, name, split))
        return self.tables[name, split]


def test_hub_paths_when_online(tmp_path, monkeypatch):
    from compsense.core import encoders

    monkeypatch.setenv("HF_HUB_OFFLINE", "0")
    monkeypatch.setattr(encoders, "hub_reachable", lambda timeout=3.0: None)  # as if online
    monkeypatch.setenv("COMPSENSE_DATA_DIR", str(tmp_path))
    nano = {name: table.to_pylist() for name, table in nano_tables(False).items()}
    glue = [{"sentence1": "A.", "sentence2": "B.", "label": 1, "idx": 0}]
    fake = FakeDatasets(
        {
            **{(cfg, s): rows for cfg, rows in nano.items() for s in ("NanoSciFact", "train")},
            ("mrpc", "train"): glue,
            ("mrpc", "validation"): glue,
            (None, "train"): [{"query": "q", "answer": "p"}] * 3,
        }
    )
    monkeypatch.setitem(sys.modules, "datasets", fake)
    assert data.load_nanobeir("scifact").qrels == {"q1": {"d1": 1, "d2": 1}}
    data.load_nanobeir("scifact", dataset_id="zeta-alpha-ai/NanoSciFact")
    mrpc = data.load_mrpc("all_train")
    assert len(data.load_nq_pairs(limit=2)) == 2
    assert fake.calls[:4:3] == [
        ("sentence-transformers/NanoBEIR-en", "corpus", "NanoSciFact"),
        ("zeta-alpha-ai/NanoSciFact", "corpus", "train"),
    ]
    assert mrpc[1] == data.SentencePair("A.", "B.", 1.0, "validation-0#1", "validation-0#2", "mrpc")
    assert fake.calls[-1] == ("sentence-transformers/natural-questions", None, "train")
    monkeypatch.setitem(sys.modules, "datasets", None)
    with pytest.raises(MissingDataError, match="not installed"):
        data.load_stsb("dev")


def test_available_datasets(tmp_path):
    assert data.available_datasets(FIXTURES) == {
        "scifact": False,
        "mrpc": True,
        "stsb": True,
        "sugarcrepe": True,
        "nq_open": True,
        "nanobeir": False,
    }
    assert not any(data.available_datasets(tmp_path / "absent").values())


# ---------------------------------------------------------------------------------------------
# The real local datasets (SOURCES.md's verified counts), when this machine has them


@pytest.fixture(scope="module")
def real_dir() -> Path:
    root = local_data_dir(required=False)
    if root is None:
        pytest.skip("no local data folder (set COMPSENSE_DATA_DIR)")
    return root


@pytest.fixture(scope="module")
def scifact(real_dir) -> data.BeirDataset:
    if not data.available_datasets(real_dir)["scifact"]:
        pytest.skip("no local scifact/")
    return data.load_beir("scifact", data_dir=real_dir)


def test_real_scifact(scifact):
    assert len(scifact.queries) == 300 and len(scifact.corpus) == 5183
    assert sum(len(docs) for docs in scifact.qrels.values()) == 339
    assert scifact.qrels["1"] == {"31715818": 1} and scifact.skipped == {"queries_not_in_split": 809}
    assert len(scifact.doc_texts()) == len(scifact.doc_ids)


@pytest.mark.parametrize(
    "name, load, expected",
    [
        ("mrpc", lambda d: [len(data.load_mrpc(s, d)) for s in data.MRPC_SPLITS], [3668, 408, 1725, 4076]),
        ("stsb", lambda d: [len(data.load_stsb(s, d)) for s in data.STSB_SPLITS], [5749, 1500, 1379]),
        (
            "sugarcrepe",
            lambda d: [len(data.load_sugarcrepe(s, d)) for s in data.SUGARCREPE_SUBSETS],
            [692, 2062, 788, 1652, 1406, 666, 245],
        ),
        ("nq_open", lambda d: [len(data.load_nq_open(s, d)) for s in data.NQ_OPEN_FILES], [3610, 1800, 1769]),
    ],
)
def test_real_dataset_sizes(real_dir, name, load, expected):
    if not data.available_datasets(real_dir)[name]:
        pytest.skip(f"no local {name}/")
    assert load(real_dir) == expected


# ---------------------------------------------------------------------------------------------
# Truncated releases, open quotes, lone surrogates (issue 18)


def mrpc_file(n: int) -> str:
    rows = [f"{i % 2}\t{2 * i}\t{2 * i + 1}\tSentence {i} one .\tSentence {i} two ." for i in range(n)]
    return "\ufeff" + "\t".join(data._MRPC_HEADER) + "\n" + "\n".join(rows) + "\n"


def test_a_release_cut_at_a_line_boundary_is_an_error_with_both_counts(tmp_path, caplog):
    path = write(tmp_path / "mrpc" / "msr_paraphrase_test.txt", mrpc_file(868))
    with pytest.raises(DataError) as e:
        data.load_mrpc("test", tmp_path)
    check_error(e, path, None, "868 pairs, but the released file has 1,725")
    assert "SUBSET" in str(e.value)
    write(tmp_path / "mrpc" / "SUBSET", "a sample\n")  # declared a deliberate sample: loads, with a warning
    with caplog.at_level(logging.WARNING, logger="compsense.data.datasets"):
        assert len(data.load_mrpc("test", tmp_path)) == 868
    assert "868 of the release's 1725 pairs" in caplog.text
    write(tmp_path / "full" / "mrpc" / "msr_paraphrase_test.txt", mrpc_file(1725))
    assert len(data.load_mrpc("test", tmp_path / "full")) == 1725  # the release's size: no marker needed


def test_truncated_stsb_and_nq_open_are_errors(tmp_path):
    lines = "".join(f"g\tf\ty\t{i:04d}\t2.5\tA {i}.\tB {i}.\n" for i in range(778))
    path = write(tmp_path / "stsb" / "sts-test.tsv", lines)
    with pytest.raises(DataError) as e:
        data.load_stsb("test", tmp_path)
    check_error(e, path, None, "778 pairs, but the released file has 1,379")
    path = write(tmp_path / "nq_open" / "NQ-open.dev.jsonl", jsonl({"question": "q", "answer": ["a"]}))
    with pytest.raises(DataError) as e:
        data.load_nq_open("dev", tmp_path)
    check_error(e, path, None, "1 questions, but the released file has 3,610")


@pytest.mark.parametrize("content", ["{}", "[]", '{"0": {"caption": "A.", "negative_caption": "B."}}'])
def test_sugarcrepe_empty_or_truncated_is_an_error(tmp_path, content):
    path = write(tmp_path / "sugarcrepe" / "swap_obj.json", content)
    with pytest.raises(DataError) as e:
        data.load_sugarcrepe("swap_obj", tmp_path)
    check_error(
        e, path, None, "non-empty JSON object" if len(content) < 3 else "1 examples, but the released file has 245"
    )
    write(tmp_path / "sugarcrepe" / "SUBSET", "")
    if len(content) < 3:  # an empty file is never a legitimate sample
        with pytest.raises(DataError, match="non-empty JSON object"):
            data.load_sugarcrepe("swap_obj", tmp_path)


@pytest.mark.parametrize(
    "content, line",
    [
        ('sentence\nThe cat sat.\n"The dog, unquoted\nThe bird flew.\nThe fish swam.\n', 3),
        ('sentence\nThe cat sat.\n"The dog ran\nThe bird "flew" away.\nLast one.\n', 3),
        ('id,sentence\n1,The cat sat.\n2,"The dog ran\nThe bird flew."\n3,Last one.\n', 3),
    ],
)
def test_sentence_csv_with_an_open_quote_is_an_error_not_merged_rows(tmp_path, content, line):
    path = write(tmp_path / "s.csv", content)
    with pytest.raises(DataError) as e:
        data.load_sentences(path)
    check_error(e, path, line, "quote")


@pytest.mark.parametrize(
    "name, content, where",
    [
        ("s.jsonl", '{"sentence": "ok"}\n{"sentence": "bad \\ud800 text"}\n', ":2:"),
        ("sugarcrepe/add_att.json", '{"4": {"caption": "A \\udc00.", "negative_caption": "B."}}', "example '4'"),
        ("nq_open/NQ-open.dev.jsonl", '{"question": "q", "answer": ["\\ud83d"]}\n', ":1:"),
    ],
)
def test_lone_surrogate_is_rejected_at_load_with_file_and_line(tmp_path, name, content, where):
    path = write(tmp_path / name, content)
    load = {
        "s.jsonl": lambda: data.load_sentences(path),
        "sugarcrepe/add_att.json": lambda: data.load_sugarcrepe("add_att", tmp_path),
        "nq_open/NQ-open.dev.jsonl": lambda: data.load_nq_open("dev", tmp_path),
    }[name]
    with pytest.raises(DataError) as e:
        load()
    check_error(e, path, None, "lone surrogate")
    assert where in str(e.value)


def test_beir_id_with_a_lone_surrogate_is_rejected(tmp_path):
    root = beir_dir(tmp_path / "b", corpus=GOOD_CORPUS + '{"_id": "d\\ud800", "title": "", "text": "x"}\n')
    with pytest.raises(DataError) as e:
        data.load_beir(str(root))
    check_error(e, root / "corpus.jsonl", 3, "lone surrogate")


def test_an_unreachable_hub_is_a_fast_named_error_not_a_hang(tmp_path, monkeypatch):
    from compsense.core import encoders

    monkeypatch.setenv("HF_HUB_OFFLINE", "0")
    monkeypatch.setenv("COMPSENSE_DATA_DIR", str(tmp_path))
    monkeypatch.setattr(encoders, "hub_reachable", lambda timeout=3.0: "the hub (test) cannot be reached")
    monkeypatch.setitem(sys.modules, "datasets", FakeDatasets({}))  # never asked
    with pytest.raises(MissingDataError, match="no local copy, and the hub .test. cannot be reached. Fix: "):
        data.load_mrpc("all_train")
