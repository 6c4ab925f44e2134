"""Loaders for every dataset the notebooks use, returning plain typed records.

Local files are read in place from the data folder (`compsense.core.paths.local_data_dir`: the
`data_dir=` argument, env COMPSENSE_DATA_DIR, or the nearest ../shared/data); the formats are those
described in that folder's SOURCES.md. Hub copies are loaded with `datasets` (imported lazily: the
GPU machine has no `datasets`) only when no local copy exists and HF_HUB_OFFLINE is off; offline,
a loader fails at once and names the option that points it at a local copy, instead of hanging.

Errors against skips. Bad input raises `DataError` (a ValueError) whose message gives the file,
the line (or row, or example id) and the fix; a missing file or folder raises `MissingDataError`,
which is also a FileNotFoundError. The rule for which is which:

- Always an error: a missing file, bytes that are not UTF-8, a malformed JSON line, missing keys or
  columns, a bad label or score, a duplicate id (which copy is right cannot be known), conflicting
  qrels. These mean the file is damaged or is not the format we think, so any number computed
  from it would be wrong.
- The fixed public releases (MRPC, STS-B, SugarCrepe, NQ-open) are checked strictly: their sizes
  are known, so an empty sentence or caption there is a parsing problem and also an error, and so is
  a file with another number of records than the release (`RELEASE_SIZES`: a copy cut at a line
  boundary parses cleanly). A deliberate sample is allowed when its folder holds a file named
  SUBSET; it then loads with a warning giving both counts.
- Text that no UTF-8 file can hold (a lone surrogate, from a JSON `\\ud800` escape) is an error at
  load, with the file and line, not a crash in the tokenizer later.
- Open-ended collections (BEIR corpora and qrels, NQ pair files, user sentence lists) legitimately
  hold a few unusable entries, so these are skipped, counted, and logged as one warning per kind:
  documents with neither title nor text, empty queries, empty pairs or sentences, qrels with
  score <= 0 (judged not relevant), repeated identical qrels, qrels naming a document or query
  that is absent. A BEIR split keeps only queries that still have a relevant document; queries
  that belong to other splits are counted (logged at INFO: that is normal). `BeirDataset.skipped`
  holds the counts; a list loader reports its counts in the warning only.
"""

from __future__ import annotations

import csv
import gzip
import hashlib
import io
import json
import logging
import os
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterable, Iterator

from compsense.core.paths import ENV_DATA_DIR, MANIFEST, local_data_dir

logger = logging.getLogger(__name__)

NANOBEIR_SETS = (
    "NanoArguAna",
    "NanoClimateFEVER",
    "NanoDBPedia",
    "NanoFEVER",
    "NanoFiQA2018",
    "NanoHotpotQA",
    "NanoMSMARCO",
    "NanoNFCorpus",
    "NanoNQ",
    "NanoQuoraRetrieval",
    "NanoSCIDOCS",
    "NanoSciFact",
    "NanoTouche2020",
)
SUGARCREPE_SUBSETS = ("add_att", "add_obj", "replace_att", "replace_obj", "replace_rel", "swap_att", "swap_obj")
MRPC_SPLITS = ("train", "dev", "test", "all_train")
STSB_SPLITS = ("train", "dev", "test")
NQ_OPEN_FILES = {
    "dev": "NQ-open.dev.jsonl",
    "efficientqa_dev": "NQ-open.efficientqa.dev.1.1.jsonl",
    "efficientqa_test": "NQ-open.efficientqa.test.1.1.jsonl",
}
# Records per file of the fixed releases (shared/data/SOURCES.md's verified counts, and the loaders' docstrings).
RELEASE_SIZES = {
    "mrpc": {"msr_paraphrase_train.txt": 4076, "msr_paraphrase_test.txt": 1725, "dev_ids.tsv": 408},
    "stsb": {"sts-train.tsv": 5749, "sts-dev.tsv": 1500, "sts-test.tsv": 1379},
    "sugarcrepe": {
        "add_att.json": 692,
        "add_obj.json": 2062,
        "replace_att.json": 788,
        "replace_obj.json": 1652,
        "replace_rel.json": 1406,
        "swap_att.json": 666,
        "swap_obj.json": 245,
    },
    "nq_open": {
        "NQ-open.dev.jsonl": 3610,
        "NQ-open.efficientqa.dev.1.1.jsonl": 1800,
        "NQ-open.efficientqa.test.1.1.jsonl": 1769,
    },
}
SUBSET_MARKER = "SUBSET"  # a file of this name in a dataset folder: its files are a deliberate sample
_MRPC_HEADER = ["Quality", "#1 ID", "#2 ID", "#1 String", "#2 String"]
_QRELS_HEADER = ["query-id", "corpus-id", "score"]
_NANOBEIR_CONFIGS = ("corpus", "queries", "qrels")
_LOCAL_FILES = {
    "scifact": ("corpus.jsonl", "queries.jsonl", "qrels/test.tsv"),
    "mrpc": ("msr_paraphrase_train.txt", "msr_paraphrase_test.txt", "dev_ids.tsv"),
    "stsb": tuple(f"sts-{s}.tsv" for s in STSB_SPLITS),
    "sugarcrepe": tuple(f"{s}.json" for s in SUGARCREPE_SUBSETS),
    "nq_open": tuple(NQ_OPEN_FILES.values()),
}
_SKIP_REASONS = {
    "empty_docs": "corpus documents with neither title nor text",
    "empty_queries": "queries with empty text",
    "empty_pairs": "pairs with an empty query or passage",
    "empty_sentences": "empty sentences",
    "non_relevant_qrels": "qrels with score <= 0 (judged not relevant)",
    "duplicate_qrels": "repeated identical qrels",
    "qrels_missing_doc": "qrels naming a document not in the corpus (or skipped as empty)",
    "qrels_missing_query": "qrels naming a query not in the queries file (or skipped as empty)",
    "queries_without_relevant_docs": "queries whose qrels were all skipped",
    "queries_not_in_split": "queries with no qrels in this split (they belong to other splits)",
}
_EXPECTED_SKIPS = {"queries_not_in_split"}


class DataError(ValueError):
    """A data file is damaged or not in the expected format; the message says where and how to fix it."""


class MissingDataError(DataError, FileNotFoundError):
    """A dataset file or folder is absent (and the hub cannot or may not be used instead)."""


def document_text(doc: dict) -> str:
    """A BEIR corpus entry as the harness encodes it: title + " " + text."""
    return (doc.get("title", "") + " " + doc.get("text", "")).strip()


@dataclass(frozen=True)
class BeirDataset:
    """One retrieval split: every usable corpus document, and the queries that have a relevant one.

    `skipped` counts what was left out, by kind (only kinds that occurred; see `_SKIP_REASONS`), so
    a notebook can show it beside the metrics: {"queries_not_in_split": 809} for SciFact test.
    """

    name: str
    corpus: dict[str, dict]  # doc_id -> {"title": str, "text": str}
    queries: dict[str, str]
    qrels: dict[str, dict[str, int]]  # query_id -> {doc_id: relevance > 0}
    split: str
    skipped: dict[str, int] = field(default_factory=dict)
    source: str = ""  # where it was read from: the folder, or "<hub id> (<NanoName>)"

    @property
    def doc_ids(self) -> list[str]:
        return list(self.corpus)

    @property
    def query_ids(self) -> list[str]:
        return list(self.queries)

    def doc_texts(self) -> list[str]:
        """Texts aligned with `doc_ids`, title and text joined as BEIR evaluations do."""
        return [(d["title"] + " " + d["text"]).strip() for d in self.corpus.values()]

    def query_texts(self) -> list[str]:
        """Texts aligned with `query_ids`."""
        return list(self.queries.values())

    def content_sha1(self) -> str:
        """One digest of the documents, queries and judgements (not the name): what a cached result
        on this split is keyed on, so an edited corpus is scored again rather than read back."""
        payload = json.dumps([self.corpus, self.queries, self.qrels], sort_keys=True, ensure_ascii=False)
        return hashlib.sha1(payload.encode("utf-8")).hexdigest()


@dataclass(frozen=True)
class QAPair:
    query: str
    passage: str


@dataclass(frozen=True)
class SentencePair:
    """A labelled pair: MRPC label 0/1 (paraphrase), STS-B label a 0-5 similarity score."""

    sentence1: str
    sentence2: str
    label: float
    id1: str
    id2: str
    source: str


def as_pairs(pairs) -> list[tuple[str, str]]:
    """(query, document) tuples from tuples, SentencePair-like records or a DataFrame."""
    if hasattr(pairs, "columns"):
        missing = {"sentence1", "sentence2"} - set(pairs.columns)
        if missing:
            raise ValueError(f"pairs table lacks columns {sorted(missing)}; it needs sentence1 and sentence2")
        missing_text = pairs["sentence1"].isna() | pairs["sentence2"].isna()
        if missing_text.any():
            raise ValueError(
                f"pairs table: {int(missing_text.sum())} row(s) with a missing text (first at row "
                f"{pairs.index[missing_text.to_numpy()][0]!r}); drop or fill them before scoring"
            )
        return list(zip(pairs["sentence1"].astype(str), pairs["sentence2"].astype(str)))
    if isinstance(pairs, (str, bytes)):
        raise TypeError("pairs must be a list of (query, document) pairs, not one string")
    out = []
    for i, p in enumerate(pairs):
        pair = (p.sentence1, p.sentence2) if hasattr(p, "sentence1") else p
        if isinstance(pair, (str, bytes)) or len(pair) != 2:
            raise ValueError(f"pairs[{i}] is {p!r}: each pair must be two texts (query, document)")
        if not all(isinstance(t, str) for t in pair):
            raise ValueError(
                f"pairs[{i}] holds a non-text value ({pair!r}); scoring it would score its repr. "
                "Drop or fill the missing text first"
            )
        out.append((pair[0], pair[1]))
    return out


@dataclass(frozen=True)
class CaptionNearMiss:
    """A caption and its minimally edited negative (SugarCrepe); example_id is '<subset>/<key>'."""

    caption: str
    negative_caption: str
    subset: str
    example_id: str


# ---------------------------------------------------------------------------------------------
# Retrieval (BEIR layout, NanoBEIR)


def load_beir(path_or_name: str | os.PathLike, split: str = "test", data_dir=None) -> BeirDataset:
    """Load a BEIR-layout folder: corpus.jsonl[.gz], queries.jsonl, qrels/<split>.tsv.

    A bare name without a path separator ("scifact") is looked up in the local data folder;
    anything else is a folder path. Only queries with a relevant document in the split are kept.
    """
    if isinstance(path_or_name, str) and "/" not in path_or_name and os.sep not in path_or_name:
        root = _data_root(data_dir) / path_or_name
    else:
        root = Path(path_or_name).expanduser()
    if not root.is_dir():
        raise MissingDataError(
            f"{root}: BEIR folder not found. Fix: pass a folder holding corpus.jsonl, queries.jsonl "
            f"and qrels/, or a dataset name under the data folder (data_dir= or {ENV_DATA_DIR})"
        )
    corpus = root / "corpus.jsonl"
    if not corpus.is_file() and (root / "corpus.jsonl.gz").is_file():
        corpus = root / "corpus.jsonl.gz"
    qrels = root / "qrels" / f"{split}.tsv"
    if not qrels.is_file():
        found = sorted(p.stem for p in (root / "qrels").glob("*.tsv"))
        raise MissingDataError(f"{qrels}: no qrels for split {split!r}. Fix: use one of the splits found: {found}")
    return _assemble(root.name, str(root), split, _jsonl(corpus), _jsonl(root / "queries.jsonl"), _tsv_qrels(qrels))


def load_nanobeir(
    set_name: str,
    dataset_id: str = "sentence-transformers/NanoBEIR-en",
    local_dir: str | os.PathLike | None = None,
    data_dir=None,
) -> BeirDataset:
    """Load one of the 13 NanoBEIR sets (50 queries each), from a local parquet copy or the hub.

    `set_name` may be "scifact", "SciFact" or "NanoSciFact". The default id is the one
    sentence-transformers' NanoBEIREvaluator reads: configs corpus/queries/qrels, one split per set.
    The paper's code names `lightonai/NanoBEIR-en`; pass it as `dataset_id` to match the paper
    (assumed to share that layout; not verified offline). A per-set repository such as
    `zeta-alpha-ai/NanoSciFact` has the same configs with a single "train" split.
    A local copy (`local_dir`, default `<data folder>/nanobeir` when it exists, the data folder being
    `data_dir` or the default one) may be laid out as
    `<NanoName>/<config>.parquet`, `<NanoName>/<config>/*.parquet` (per-set repository snapshots)
    or `<config>/<NanoName>-*.parquet` (a NanoBEIR-en snapshot).
    NanoBEIR's single split is a sample of BEIR test queries, so the result's split is "test".
    """
    nano = nanobeir_name(set_name)
    if local_dir is None:
        local_dir = _local_folder("nanobeir", data_dir)
    if local_dir is not None:
        files = _nanobeir_files(Path(local_dir), nano)
        if files is None:
            raise MissingDataError(
                f"{local_dir}: no parquet files for {nano}. Fix: put {nano}/corpus.parquet, "
                f"{nano}/queries.parquet and {nano}/qrels.parquet there (or a hub snapshot's layout)"
            )
        rows, source = {cfg: _parquet_rows(paths) for cfg, paths in files.items()}, f"{local_dir} ({nano})"
    else:
        datasets = _hub_datasets(
            f"NanoBEIR {nano} from {dataset_id}",
            "pass local_dir= a folder holding a copy of the parquet files, or put one in <data folder>/nanobeir",
        )
        split = "train" if dataset_id.rsplit("/", 1)[-1] == nano else nano
        rows = {
            cfg: _hub_rows(datasets.load_dataset(dataset_id, cfg, split=split), f"{dataset_id}[{cfg}]")
            for cfg in _NANOBEIR_CONFIGS
        }
        source = f"{dataset_id} ({nano})"
    return _assemble(nano, source, "test", rows["corpus"], rows["queries"], _table_qrels(rows["qrels"]))


def nanobeir_name(set_name: str) -> str:
    """'scifact', 'SciFact' or 'NanoSciFact' -> 'NanoSciFact'."""
    key = set_name.lower().removeprefix("nano")
    for nano in NANOBEIR_SETS:
        if nano.lower().removeprefix("nano") == key:
            return nano
    raise ValueError(f"unknown NanoBEIR set {set_name!r}; choose one of {list(NANOBEIR_SETS)}")


def _assemble(name, source, split, corpus_rows, query_rows, qrel_rows) -> BeirDataset:
    """Validate and join the three parts of a retrieval set; see the module docstring for the rules.

    `source` (the folder or hub id) names the set in messages; `name` is what results will call it.
    """
    skips = _Skips()
    corpus: dict[str, dict] = {}
    seen: dict[str, str] = {}
    for where, rec in corpus_rows:
        doc_id = _id(rec, where, seen)
        title, text = _text(rec, "title", where, default=""), _text(rec, "text", where)
        if title.strip() or text.strip():
            corpus[doc_id] = {"title": title, "text": text}
        else:
            skips.add("empty_docs", where)
    if not corpus:
        raise DataError(f"{source}: the corpus has no documents with text. Fix: check the corpus file")

    queries: dict[str, str] = {}
    seen = {}
    for where, rec in query_rows:
        query_id = _id(rec, where, seen)
        text = _text(rec, "text", where)
        if text.strip():
            queries[query_id] = text
        else:
            skips.add("empty_queries", where)

    qrels: dict[str, dict[str, int]] = {}
    in_split: set[str] = set()
    first_where = None
    for where, query_id, doc_id, score in qrel_rows:
        first_where = first_where or where
        in_split.add(query_id)
        if score <= 0:
            skips.add("non_relevant_qrels", where)
        elif query_id not in queries:
            skips.add("qrels_missing_query", where)
        elif doc_id not in corpus:
            skips.add("qrels_missing_doc", where)
        elif doc_id in qrels.get(query_id, {}):
            if qrels[query_id][doc_id] != score:
                raise _error(
                    where,
                    f"qrel ({query_id}, {doc_id}) repeats an earlier one with another score",
                    "keep one score per query-document pair",
                )
            skips.add("duplicate_qrels", where)
        else:
            qrels.setdefault(query_id, {})[doc_id] = score
    if first_where is None:
        raise DataError(f"{source}: the {split} qrels are empty. Fix: check the qrels file for split {split!r}")
    if not qrels:
        raise DataError(
            f"{source}: no usable {split} qrels (skipped: {skips.counts}). Fix: check that the "
            "qrels' ids match the corpus and queries files"
        )
    for query_id in queries:
        if query_id not in qrels:
            skips.add(
                "queries_not_in_split" if query_id not in in_split else "queries_without_relevant_docs",
                f"query {query_id!r}",
            )
    skips.log(f"{source} [{split}]")
    return BeirDataset(
        name=name,
        corpus=corpus,
        queries={q: t for q, t in queries.items() if q in qrels},
        qrels=qrels,
        split=split,
        skipped=dict(skips.counts),
        source=str(source),
    )


def _tsv_qrels(path: Path) -> Iterator[tuple[str, str, str, int]]:
    """(where, query_id, doc_id, score) from a BEIR qrels TSV with its header line."""
    lines = _tsv(path)
    header = next(lines, (1, []))[1]
    if header != _QRELS_HEADER:
        raise _error(
            f"{path}:1",
            f"header is {header}, expected {_QRELS_HEADER}",
            "start the file with the line 'query-id<TAB>corpus-id<TAB>score'",
        )
    for lineno, cols in lines:
        where = f"{path}:{lineno}"
        if len(cols) != 3 or not cols[0].strip() or not cols[1].strip():
            raise _error(
                where,
                f"expected 3 tab-separated columns with ids, found {cols}",
                "write 'query-id<TAB>corpus-id<TAB>score' (tabs, not spaces)",
            )
        yield where, cols[0].strip(), cols[1].strip(), _score(cols[2].strip(), where)


def _table_qrels(rows: Iterable[tuple[str, dict]]) -> Iterator[tuple[str, str, str, int]]:
    """Qrels from table rows (parquet, hub): corpus-id may be a list, score defaults to 1 as in NanoBEIR."""
    for where, rec in rows:
        query_id = _id(rec, where, key="query-id")
        doc_ids = rec.get("corpus-id")
        for doc_id in doc_ids if isinstance(doc_ids, list) else [doc_ids]:
            yield where, query_id, _clean_id(doc_id, "corpus-id", where), _score(rec.get("score", 1), where)


def _nanobeir_files(root: Path, nano: str) -> dict[str, list[Path]] | None:
    """The parquet files of each config in the first layout that has them all, else None."""
    layouts = [
        lambda cfg: [root / nano / f"{cfg}.parquet"],
        lambda cfg: sorted((root / nano / cfg).glob("*.parquet")),
        lambda cfg: sorted((root / cfg).glob(f"{nano}-*.parquet")),
    ]
    for layout in layouts:
        files = {cfg: [p for p in layout(cfg) if p.is_file()] for cfg in _NANOBEIR_CONFIGS}
        if all(files.values()):
            return files
    return None


# ---------------------------------------------------------------------------------------------
# Pairs and sentences


def load_nq_pairs(
    path: str | os.PathLike | None = None,
    hub_id: str = "sentence-transformers/natural-questions",
    limit: int | None = None,
) -> list[QAPair]:
    """(query, answer passage) training pairs, the paper's Model A data.

    From a local .jsonl/.parquet/.csv with columns query/answer (the hub dataset's) or
    question/passage, or from the hub when `path` is None. No local copy ships with the project
    (see SOURCES.md), so offline this fails at once and asks for `path=`.
    """
    if path is not None:
        rows, source = _table_rows(Path(path)), str(path)
    else:
        datasets = _hub_datasets(f"NQ pairs from {hub_id}", "pass path= a local .jsonl/.parquet/.csv copy")
        rows, source = _hub_rows(datasets.load_dataset(hub_id, split="train"), hub_id), hub_id
    pairs, skips = [], _Skips()
    for where, rec in rows:
        if limit is not None and len(pairs) >= limit:
            break
        keys = ("query", "answer") if "query" in rec or "answer" in rec else ("question", "passage")
        query, passage = (
            _text(rec, k, where, fix="give the file columns query/answer or question/passage") for k in keys
        )
        if query.strip() and passage.strip():
            pairs.append(QAPair(query, passage))
        else:
            skips.add("empty_pairs", where)
    skips.log(source)
    if not pairs:
        raise DataError(f"{source}: no usable pairs. Fix: check the file's query and passage columns")
    return pairs


def load_mrpc(split: str = "train", data_dir=None) -> list[SentencePair]:
    """MRPC with GLUE's split: train 3,668, dev 408 (ids in dev_ids.tsv), test 1,725, all_train 4,076.

    Read from the original MSR files (tab-split, no quoting: the sentences hold stray quote marks);
    without them, GLUE's copy on the hub when it is allowed (its test labels are hidden).
    """
    _check_choice(split, MRPC_SPLITS, "MRPC split")
    folder = _local_folder("mrpc", data_dir)
    if folder is None:
        return _glue_from_hub("mrpc", split)
    if split == "test":
        return _read_mrpc(folder / "msr_paraphrase_test.txt")
    pairs = _read_mrpc(folder / "msr_paraphrase_train.txt")
    if split == "all_train":
        return pairs
    dev_path = folder / "dev_ids.tsv"
    dev_ids = {}
    for lineno, cols in _tsv(dev_path):
        if len(cols) != 2:
            raise _error(
                f"{dev_path}:{lineno}",
                f"expected 2 tab-separated ids, found {cols}",
                "restore GLUE's dev_ids.tsv (one '#1 ID<TAB>#2 ID' per line)",
            )
        dev_ids[tuple(cols)] = lineno
    _check_release_size("mrpc", dev_path, len(dev_ids), "dev ids")
    missing = dev_ids.keys() - {(p.id1, p.id2) for p in pairs}
    if missing:
        first = min(missing, key=dev_ids.get)
        raise _error(
            f"{dev_path}:{dev_ids[first]}",
            f"{len(missing)} dev pairs (first {first}) are not in msr_paraphrase_train.txt",
            "use the original MSR train file with GLUE's dev_ids.tsv",
        )
    return [p for p in pairs if ((p.id1, p.id2) in dev_ids) == (split == "dev")]


def load_stsb(split: str = "train", data_dir=None) -> list[SentencePair]:
    """STS Benchmark with gold 0-5 scores: train 5,749, dev 1,500, test 1,379 pairs.

    Read from the original sts-*.tsv files (tab-split: the sentences hold stray quote marks);
    without them, GLUE's copy on the hub when it is allowed (its test labels are hidden).
    """
    _check_choice(split, STSB_SPLITS, "STS-B split")
    folder = _local_folder("stsb", data_dir)
    if folder is None:
        return _glue_from_hub("stsb", split)
    path, pairs, seen = folder / f"sts-{split}.tsv", [], {}
    for lineno, cols in _tsv(path):
        where = f"{path}:{lineno}"
        if len(cols) < 7:
            raise _error(
                where,
                f"expected at least 7 tab-separated columns, found {len(cols)}",
                "restore the original file: genre, file, year, id, score, sentence1, sentence2",
            )
        key = "/".join(cols[:4])
        if key in seen:
            raise _error(where, f"pair {key} repeats line {seen[key]}", "remove the duplicate line")
        seen[key] = lineno
        score = _float(cols[4], where)
        if not 0 <= score <= 5:
            raise _error(where, f"score {score} is outside 0-5", "restore the original gold score")
        pairs.append(SentencePair(*_two_sentences(cols[5], cols[6], where), score, f"{key}#1", f"{key}#2", "stsb"))
    _check_release_size("stsb", path, len(_nonempty(pairs, path)), "pairs")
    return pairs


def load_sentences(path: str | os.PathLike) -> list[str]:
    """A user's sentence list: .txt one per line (blank lines are ignored), or .jsonl/.csv/.parquet
    with a `sentence` or `text` column. Empty values in a table are skipped with a warning."""
    path = Path(path)
    if path.suffix == ".txt":
        return _nonempty([line.strip() for line in _read_text(path).split("\n") if line.strip()], path)
    sentences, skips = [], _Skips()
    for where, rec in _table_rows(path):
        key = "sentence" if "sentence" in rec else "text"
        text = _text(rec, key, where, fix="name the column 'sentence' or 'text'").strip()
        if "\n" in text:
            raise _error(
                where,
                f"the sentence spans {text.count(chr(10)) + 1} lines (a quote left open merges the rows after it)",
                "close the quote, or put one sentence per record",
            )
        if text:
            sentences.append(text)
        else:
            skips.add("empty_sentences", where)
    skips.log(str(path))
    return _nonempty(sentences, path)


# ---------------------------------------------------------------------------------------------
# Near-misses and questions


def load_sugarcrepe(subsets: str | Iterable[str] | None = None, data_dir=None) -> list[CaptionNearMiss]:
    """SugarCrepe caption/negative-caption pairs (7,511 in all), text only; `subsets` defaults to all 7."""
    names = [subsets] if isinstance(subsets, str) else list(subsets or SUGARCREPE_SUBSETS)
    for name in names:
        _check_choice(name, SUGARCREPE_SUBSETS, "SugarCrepe subset")
    folder = _require_folder("sugarcrepe", data_dir)
    out = []
    for subset in names:
        path = folder / f"{subset}.json"
        try:
            examples = json.loads(_read_text(path), object_pairs_hook=_unique_keys(path))
        except json.JSONDecodeError as e:
            raise _error(f"{path}:{e.lineno}", f"malformed JSON ({e.msg})", "re-download the file") from None
        if not isinstance(examples, dict) or not examples:
            raise _error(str(path), "expected one non-empty JSON object of examples", "re-download the file")
        for key, rec in examples.items():
            where = f"{path}, example {key!r}"
            if not isinstance(rec, dict):
                raise _error(where, "expected an object with caption and negative_caption", "re-download the file")
            caption, negative = _two_sentences(
                _text(rec, "caption", where), _text(rec, "negative_caption", where), where
            )
            if caption == negative:
                raise _error(where, "the negative caption equals the caption", "re-download the file")
            out.append(CaptionNearMiss(caption, negative, subset, f"{subset}/{key}"))
        _check_release_size("sugarcrepe", path, len(examples), "examples")
    return out


def load_nq_open(split: str = "dev", data_dir=None) -> list[dict]:
    """NQ-open questions with their short answers: [{"question": str, "answer": [str, ...]}].

    Splits: dev (3,610), efficientqa_dev (1,800), efficientqa_test (1,769). No passages.
    """
    _check_choice(split, tuple(NQ_OPEN_FILES), "NQ-open split")
    out, path = [], _require_folder("nq_open", data_dir) / NQ_OPEN_FILES[split]
    for where, rec in _jsonl(path):
        question = _text(rec, "question", where).strip()
        answers = rec.get("answer")
        if not question or not isinstance(answers, list) or not answers or not all(isinstance(a, str) for a in answers):
            raise _error(
                where, "expected a question and a non-empty list of answer strings", "restore the original line"
            )
        answers = [_valid_unicode(a, "answer", where) for a in answers]
        out.append({"question": question, "answer": answers})
    _check_release_size("nq_open", path, len(_nonempty(out, path)), "questions")
    return out


CONDAQA_EDITS = {0: "original", 1: "paraphrase", 2: "scope", 3: "affirmative"}


def load_condaqa(data_dir=None, file: str = "condaqa_dev.jsonl") -> list[dict]:
    """CondaQA passages, one record per (passage, edit): {"passage_id", "edit_id", "edit" (original /
    paraphrase / scope / affirmative: CONDAQA_EDITS), "text", "original_sentence" (the sentence with
    the negation cue), "cue"}. Rows repeat a passage edit once per question; its text must agree.
    """
    folder = _require_folder("condaqa", data_dir)
    out: dict[tuple[str, int], dict] = {}
    for where, rec in _jsonl(folder / file):
        edit = rec.get("PassageEditID")
        if edit not in CONDAQA_EDITS or rec.get("PassageID") is None:
            raise _error(
                where,
                f"expected PassageID and PassageEditID in {sorted(CONDAQA_EDITS)}, got "
                f"{rec.get('PassageID')!r} / {edit!r}",
                "restore the original line",
            )
        key = (str(rec["PassageID"]), int(edit))
        text = _text(rec, "sentence1", where).strip()
        if key in out and out[key]["text"] != text:
            raise _error(where, f"passage {key[0]} edit {key[1]} has two different texts", "restore the original file")
        out.setdefault(
            key,
            {
                "passage_id": key[0],
                "edit_id": key[1],
                "edit": CONDAQA_EDITS[key[1]],
                "text": text,
                "original_sentence": str(rec.get("original sentence", "")).strip(),
                "cue": str(rec.get("original cue", "")).strip(),
            },
        )
    return _nonempty([out[k] for k in sorted(out)], folder / file)


def available_datasets(data_dir=None) -> dict[str, bool]:
    """Which local datasets are complete in the data folder (all False when there is none)."""
    try:
        root = local_data_dir(data_dir, required=False)
    except FileNotFoundError:
        root = None
    found = {
        name: root is not None and all((root / name / f).is_file() for f in files)
        for name, files in _LOCAL_FILES.items()
    }
    found["nanobeir"] = root is not None and all(_nanobeir_files(root / "nanobeir", n) for n in NANOBEIR_SETS)
    return found


# ---------------------------------------------------------------------------------------------
# Reading and checking helpers


class _Skips:
    """Counts skipped records by kind and logs one line per kind, with the first example's location."""

    def __init__(self):
        self.counts: dict[str, int] = {}
        self.first: dict[str, str] = {}

    def add(self, kind: str, where: str) -> None:
        self.counts[kind] = self.counts.get(kind, 0) + 1
        self.first.setdefault(kind, where)

    def log(self, source: str) -> None:
        for kind, n in self.counts.items():
            level = logging.INFO if kind in _EXPECTED_SKIPS else logging.WARNING
            logger.log(level, "%s: skipped %d %s (first: %s)", source, n, _SKIP_REASONS[kind], self.first[kind])


def _error(where: str, problem: str, fix: str) -> DataError:
    return DataError(f"{where}: {problem}. Fix: {fix}")


def _read_text(path: Path) -> str:
    """The file's text (gunzipped for .gz, BOM dropped); bytes that are not UTF-8 are an error with a line."""
    if not path.is_file():
        raise MissingDataError(
            f"{path}: file not found. Fix: check the path ({MANIFEST} lists each dataset's files and where to get them)"
        )
    raw = path.read_bytes()
    if path.suffix == ".gz":
        try:
            raw = gzip.decompress(raw)
        except (OSError, EOFError) as e:
            raise _error(str(path), f"not a readable gzip file ({e})", "re-download or re-compress it") from None
    raw = raw.removeprefix(b"\xef\xbb\xbf")
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as e:
        line = raw[: e.start].count(b"\n") + 1
        raise _error(
            f"{path}:{line}",
            f"byte {raw[e.start]:#04x} is not UTF-8",
            "re-save the file as UTF-8 (e.g. iconv -f latin1 -t utf-8)",
        ) from None


def _lines(path: Path) -> Iterator[tuple[int, str]]:
    """(line number, line) for non-blank lines. Split on newlines only: JSON strings may hold U+2028."""
    for lineno, line in enumerate(_read_text(path).split("\n"), 1):
        if line.strip():
            yield lineno, line.rstrip("\r")


def _tsv(path: Path) -> Iterator[tuple[int, list[str]]]:
    """Tab-split lines without any quoting rules (MRPC and STS-B sentences hold bare quote marks)."""
    return ((lineno, line.split("\t")) for lineno, line in _lines(path))


def _jsonl(path: Path) -> Iterator[tuple[str, dict]]:
    for lineno, line in _lines(path):
        where = f"{path}:{lineno}"
        try:
            rec = json.loads(line)
        except json.JSONDecodeError as e:
            raise _error(
                where, f"malformed JSON ({e.msg}, column {e.colno})", "make each line one complete JSON object"
            ) from None
        if not isinstance(rec, dict):
            raise _error(where, "expected a JSON object", "make each line one JSON object")
        yield where, rec


def _csv_rows(path: Path) -> Iterator[tuple[str, dict]]:
    """Strict CSV: a quote left open is an error (lenient parsing would swallow every row after it)."""
    reader = csv.DictReader(io.StringIO(_read_text(path), newline=""), strict=True)
    done = 1  # lines read so far; an error belongs to the record that starts on the next one
    try:
        for rec in reader:
            yield f"{path}:{done + 1}", rec
            done = reader.line_num
    except csv.Error as e:
        raise _error(
            f"{path}:{done + 1}",
            f"malformed CSV ({e}; a quote opened here is not closed)",
            'close the quote, or double a quote mark inside a quoted field ("")',
        ) from None


def _parquet_rows(paths: list[Path]) -> Iterator[tuple[str, dict]]:
    import pyarrow
    import pyarrow.parquet as pq

    for path in paths:
        try:
            table = pq.read_table(path)
        except (pyarrow.ArrowException, OSError) as e:
            raise _error(str(path), f"not a readable parquet file ({e})", "re-download it") from None
        for i, rec in enumerate(table.to_pylist(), 1):
            yield f"{path}, row {i}", rec


def _table_rows(path: Path) -> Iterator[tuple[str, dict]]:
    """Records of a .jsonl, .csv or .parquet file, each with its location for error messages."""
    if not path.is_file():
        raise MissingDataError(f"{path}: file not found. Fix: check the path")
    if path.name.endswith((".jsonl", ".jsonl.gz")):
        return _jsonl(path)
    if path.suffix == ".csv":
        return _csv_rows(path)
    if path.suffix == ".parquet":
        return _parquet_rows([path])
    raise _error(str(path), f"unsupported file type {path.suffix!r}", "use .jsonl, .csv or .parquet")


def _hub_rows(dataset, source: str) -> Iterator[tuple[str, dict]]:
    return ((f"{source} row {i}", rec) for i, rec in enumerate(dataset, 1))


def _text(rec: dict, key: str, where: str, default: str | None = None, fix: str | None = None) -> str:
    """A string field; null counts as empty, a missing key is an error unless a default is given."""
    if key not in rec:
        if default is not None:
            return default
        raise _error(
            where, f"missing key {key!r} (found {sorted(map(str, rec))})", fix or f"add {key!r} to every record"
        )
    value = rec[key]
    if value is None:
        return ""
    if not isinstance(value, str):
        raise _error(where, f"{key!r} is {type(value).__name__}, not a string", f"store {key!r} as text")
    return _valid_unicode(value, key, where)


def _valid_unicode(value: str, key: str, where: str) -> str:
    """`value`, unless it holds a lone surrogate (a JSON `\\udXXX` escape without its pair), which
    no UTF-8 file can hold and which the tokenizer would only reject later."""
    try:
        value.encode("utf-8")
    except UnicodeEncodeError as e:
        raise _error(
            where,
            f"{key!r} holds a lone surrogate {value[e.start]!r} at character {e.start}",
            "write the character itself, or both halves of its surrogate pair",
        ) from None
    return value


def _id(rec: dict, where: str, seen: dict[str, str] | None = None, key: str = "_id") -> str:
    """A record's id ("_id", or "id" as some hub copies name it); with `seen`, also checked unique."""
    if key == "_id" and key not in rec and "id" in rec:
        key = "id"
    value = _clean_id(rec.get(key), key, where)
    if seen is not None:
        if value in seen:
            raise _error(where, f"duplicate id {value!r} (first at {seen[value]})", "make ids unique")
        seen[value] = where
    return value


def _clean_id(value, key: str, where: str) -> str:
    """An id as a non-empty string; integer ids (some JSON and parquet copies) are accepted."""
    if isinstance(value, int) and not isinstance(value, bool):
        value = str(value)
    if not isinstance(value, str) or not value.strip():
        raise _error(where, f"missing or empty id {key!r}", f"give every record a non-empty string {key!r}")
    return _valid_unicode(value.strip(), key, where)


def _score(value, where: str) -> int:
    """A qrel relevance: an integer (written as text or a number)."""
    try:
        if isinstance(value, float) and value.is_integer():
            return int(value)
        if isinstance(value, (int, str)) and not isinstance(value, bool):
            return int(value)
    except ValueError:
        pass
    raise _error(where, f"score {value!r} is not an integer", "use integer relevance scores (0 = not relevant)")


def _float(value: str, where: str) -> float:
    try:
        return float(value)
    except ValueError:
        raise _error(where, f"score {value!r} is not a number", "restore the original gold score") from None


def _two_sentences(a: str, b: str, where: str) -> tuple[str, str]:
    """Both texts, stripped; in a fixed release an empty one means a damaged file or a wrong parser."""
    a, b = a.strip(), b.strip()
    if not a or not b:
        raise _error(where, "empty sentence", "restore the original line (read the file tab-split, without quoting)")
    return a, b


def _read_mrpc(path: Path) -> list[SentencePair]:
    lines = _tsv(path)
    header = next(lines, (1, []))[1]
    if header != _MRPC_HEADER:
        raise _error(f"{path}:1", f"header is {header}, expected {_MRPC_HEADER}", "use the original MSR file")
    pairs, seen = [], {}
    for lineno, cols in lines:
        where = f"{path}:{lineno}"
        if len(cols) != 5:
            raise _error(
                where,
                f"expected 5 tab-separated columns, found {len(cols)}",
                "restore the original line (quality, #1 ID, #2 ID, #1 String, #2 String)",
            )
        quality, id1, id2, s1, s2 = cols
        if quality not in ("0", "1"):
            raise _error(where, f"label {quality!r} is not 0 or 1", "restore the original label")
        if (id1, id2) in seen:
            raise _error(where, f"pair ({id1}, {id2}) repeats line {seen[id1, id2]}", "remove the duplicate line")
        seen[id1, id2] = lineno
        pairs.append(SentencePair(*_two_sentences(s1, s2, where), float(quality), id1, id2, "mrpc"))
    _check_release_size("mrpc", path, len(_nonempty(pairs, path)), "pairs")
    return pairs


def _glue_from_hub(task: str, split: str) -> list[SentencePair]:
    """GLUE's copy (nyu-mll/glue) for a machine without the original files."""
    if split == "test":
        raise MissingDataError(
            f"{task}: no local files, and GLUE's {task} test labels are hidden. Fix: put the "
            f"original files in <data folder>/{task}/ ({MANIFEST} says where to get them)"
        )
    datasets = _hub_datasets(
        f"{task} ({split})",
        f"put the original files in <data folder>/{task}/ ({MANIFEST} "
        "says where to get them) "
        f"and pass data_dir= or set {ENV_DATA_DIR}",
    )
    hub_splits = {"train": ["train"], "dev": ["validation"], "all_train": ["train", "validation"]}[split]
    return [
        SentencePair(
            *_two_sentences(r["sentence1"], r["sentence2"], f"nyu-mll/glue {task} {s} {r['idx']}"),
            float(r["label"]),
            f"{s}-{r['idx']}#1",
            f"{s}-{r['idx']}#2",
            task,
        )
        for s in hub_splits
        for r in datasets.load_dataset("nyu-mll/glue", task, split=s)
    ]


def _hub_datasets(what: str, fix: str):
    """The `datasets` module, when the hub may be used; otherwise fail now rather than hang."""
    from compsense.core.encoders import hub_offline, hub_reachable

    if hub_offline():
        raise MissingDataError(
            f"{what}: no local copy, and HF_HUB_OFFLINE is set so the hub is not tried. "
            f"Fix: {fix} (or export HF_HUB_OFFLINE=0 when online)"
        )
    unreachable = hub_reachable()  # a few seconds, not the ~70 s a failed hub lookup hangs
    if unreachable:
        raise MissingDataError(f"{what}: no local copy, and {unreachable}. Fix: {fix}")
    try:
        import datasets
    except ImportError:
        raise MissingDataError(
            f"{what}: no local copy, and `datasets` is not installed. Fix: {fix} (or pip install datasets)"
        ) from None
    return datasets


def _data_root(data_dir) -> Path:
    try:
        return local_data_dir(data_dir)
    except FileNotFoundError as e:
        raise MissingDataError(str(e)) from None


def _local_folder(name: str, data_dir) -> Path | None:
    """`<data folder>/<name>` if present; None lets a loader fall back to the hub."""
    try:
        root = local_data_dir(data_dir, required=False)
    except FileNotFoundError as e:
        raise MissingDataError(str(e)) from None
    return root / name if root is not None and (root / name).is_dir() else None


def _require_folder(name: str, data_dir) -> Path:
    folder = _data_root(data_dir) / name
    if not folder.is_dir():
        raise MissingDataError(
            f"{folder}: not found. Fix: put the {name} files there ({MANIFEST} says where to get "
            "them), or point "
            f"data_dir= / {ENV_DATA_DIR} at a folder that has {name}/"
        )
    return folder


def _unique_keys(path: Path):
    """A json object_pairs_hook that refuses duplicate keys (json.loads would keep the last silently)."""

    def hook(pairs):
        counts = Counter(k for k, _ in pairs)
        dupes = sorted(k for k, n in counts.items() if n > 1)
        if dupes:
            raise _error(str(path), f"duplicate example ids {dupes[:5]}", "make the ids unique")
        return dict(pairs)

    return hook


def _check_choice(value: str, choices: tuple[str, ...], what: str) -> None:
    if value not in choices:
        raise ValueError(f"unknown {what} {value!r}; choose one of {list(choices)}")


def _nonempty(items: list, path: Path) -> list:
    if not items:
        raise DataError(f"{path}: no records found. Fix: check that this is the right file and that it is not empty")
    return items


def _check_release_size(dataset: str, path: Path, count: int, unit: str) -> None:
    """A fixed release's file must hold its known number of records: one cut at a line boundary
    parses cleanly. A folder marked with a SUBSET file is a deliberate sample: warn with the counts."""
    expected = RELEASE_SIZES[dataset].get(path.name)
    if expected is None or count == expected:
        return
    if (path.parent / SUBSET_MARKER).is_file():
        logger.warning(
            "%s: %d of the release's %d %s (a subset: %s is marked %s)",
            path,
            count,
            expected,
            unit,
            path.parent,
            SUBSET_MARKER,
        )
        return
    raise _error(
        str(path),
        f"{count:,} {unit}, but the released file has {expected:,}, so this copy is truncated or altered",
        f"restore the original ({MANIFEST} gives its size and sha256), or, for a deliberate "
        f"subset, create a file named {SUBSET_MARKER} in {path.parent}",
    )
