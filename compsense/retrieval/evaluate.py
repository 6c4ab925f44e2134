"""`compsense evaluate MODEL DATASET...`: one encoder on BEIR-layout folders or NanoBEIR sets, from the shell.

The numbers come from the same harness as the notebooks (`compsense.retrieval.harness.evaluate_dataset`)
and land in the same tidy tables (results/retrieval.parquet, retrieval_per_query.parquet under
--out). Beside them, one JSON per dataset in MTEB's result shape (mteb.TaskResult, the layout of the
mteb/results repository: <model>/<revision>/<TaskName>.json), so the numbers can be read by tools
that read MTEB results. They are this harness's numbers, not MTEB's: each file says so in its
"compsense" block (harness, split, max sequence length, size and sha256 of each data file).
"""

from __future__ import annotations

import dataclasses
import hashlib
import os
import time
from pathlib import Path

from compsense.core.encoders import Encoding, find_backbone, load_encoder, quiet_transformers
from compsense.core.paths import check_can_write, check_not_protected, local_data_dir, resolve
from compsense.core.storage import TIDY_KEY, append_results, file_digest, write_json
from compsense.retrieval.harness import METRICS, evaluate_dataset, is_nanobeir, load_eval_datasets

# MTEB's task names for the BEIR folders (the names mteb.get_task knows); others keep the folder name.
MTEB_TASK_NAMES = {
    "arguana": "ArguAna",
    "climate-fever": "ClimateFEVER",
    "dbpedia-entity": "DBPedia",
    "fever": "FEVER",
    "fiqa": "FiQA2018",
    "hotpotqa": "HotpotQA",
    "msmarco": "MSMARCO",
    "nfcorpus": "NFCorpus",
    "nq": "NQ",
    "quora": "QuoraRetrieval",
    "scidocs": "SCIDOCS",
    "scifact": "SciFact",
    "trec-covid": "TRECCOVID",
    "webis-touche2020": "Touche2020",
}
# Our metric -> MTEB's retrieval score key. Acc@1 (top document relevant) is MTEB's precision_at_1.
MTEB_SCORE_KEYS = {
    "ndcg@10": "ndcg_at_10",
    "acc@1": "precision_at_1",
    "mrr@10": "mrr_at_10",
    "recall@100": "recall_at_100",
}
# The TaskResult shape (scores as {split: [{main_score, hf_subset, languages, ...}]}) dates from
# mteb 1.11.0; mteb reads files of an older version through a converter for the previous shape.
MTEB_FORMAT_VERSION = "1.11.0"
SUBSET_SUFFIX = "-subset"  # a dataset evaluated although its files are not the release's (--allow-subset)
NO_REVISION = "no_revision_available"  # mteb's own placeholder for a model without a hub revision
DEFAULT_OUT = "runs/evaluate"


def evaluate_models(
    model: str,
    datasets: list[str],
    split: str = "test",
    data_dir=None,
    out: str | os.PathLike = "runs/evaluate",
    encoding: Encoding | None = None,
    seed: int = 0,
    nanobeir_dataset_id: str = "sentence-transformers/NanoBEIR-en",
    subsets=(),
) -> dict:
    """Evaluate `model` on each dataset and write the tables and MTEB JSON files under `out`. A
    dataset is a BEIR folder, a name under the data folder ("scifact"), or a NanoBEIR set
    ("NanoSciFact", "nanobeir:scifact": from <data folder>/nanobeir, else `nanobeir_dataset_id`
    on the hub; the paper's is lightonai/NanoBEIR-en). A dataset named in `subsets` (one whose files
    differ from the release: the command line checks) is reported as <name>-subset. Returns
    {"metrics": {dataset: {metric: value}}, "tidy": path, "per_query": path, "mteb": [paths]}."""
    encoding = encoding or Encoding()
    backbone = find_backbone(model)
    _check_model_and_out(model, backbone, out, [data_dir, *(d for d in datasets if _is_path(d))])
    label = model_label(model, backbone)
    labels = {
        "run": f"evaluate/{label}",
        "backbone": backbone.name if backbone else None,
        "variant": "base" if backbone else "checkpoint",
        "seed": seed,
    }
    out_dir = resolve(out)
    tidy_path = out_dir / "results" / "retrieval.parquet"
    per_query_path = out_dir / "results" / "retrieval_per_query.parquet"
    mteb_dir = out_dir / "mteb" / _mteb_model_name(model, backbone, label) / NO_REVISION

    loaded = load_eval_datasets(
        datasets,
        data_dir=data_dir,
        split=split,  # fail before encoding
        nanobeir_dataset_id=nanobeir_dataset_id,
    )
    with quiet_transformers():
        encoder = load_encoder(model, device=encoding.device, max_seq_length=encoding.max_seq_length, seed=seed)
    metrics, mteb_files = {}, []
    for name, ds in zip(datasets, loaded):
        if name in subsets:  # not the release: never reported under the release's name
            ds = dataclasses.replace(ds, name=f"{ds.name}{SUBSET_SUFFIX}")
        started = time.monotonic()
        result = evaluate_dataset(encoder, ds, batch_size=encoding.batch_size, show_progress=encoding.show_progress)
        seconds = time.monotonic() - started
        nano = is_nanobeir(name)
        extra = {"model": str(model), "split": ds.split, "max_seq_length": encoding.max_seq_length, "source": ds.source}
        # One row per run x dataset x split x metric: a later run of the same model and split replaces it.
        append_results(result.to_tidy(**labels, **extra), tidy_path, key=[*TIDY_KEY, "split"])
        append_results(
            result.per_query_table(**labels, split=ds.split), per_query_path, key=["run", "dataset", "split", "qid"]
        )
        provenance = {
            "harness": result.harness,
            "model": str(model),
            "dataset": ds.name,
            "split": ds.split,
            "max_seq_length": encoding.max_seq_length,
            "n_queries": result.n_queries,
            "n_docs": result.n_docs,
            "source": ds.source,
            **({} if nano else {"dataset_files": _dataset_files(_beir_folder(name, data_dir), split)}),
        }
        record = mteb_task_result(
            ds.name, result.metrics, split=ds.split, evaluation_time=seconds, provenance=provenance
        )
        mteb_files.append(write_json(mteb_dir / f"{record['task_name']}.json", record))
        metrics[ds.name] = result.metrics
    write_json(
        mteb_dir / "model_meta.json",
        {"name": _mteb_model_name(model, backbone, label).replace("__", "/", 1), "revision": NO_REVISION},
    )
    return {"metrics": metrics, "tidy": tidy_path, "per_query": per_query_path, "mteb": mteb_files}


def mteb_task_result(
    dataset: str,
    metrics: dict[str, float],
    split: str = "test",
    evaluation_time: float | None = None,
    provenance: dict | None = None,
) -> dict:
    """One dataset's metrics as an MTEB TaskResult dict (main score nDCG@10, MTEB's for retrieval)."""
    scores = {MTEB_SCORE_KEYS[m]: float(v) for m, v in metrics.items() if m in MTEB_SCORE_KEYS}
    scores.update(main_score=scores["ndcg_at_10"], hf_subset="default", languages=["eng-Latn"])
    return {
        "dataset_revision": NO_REVISION,
        "task_name": mteb_task_name(dataset),
        "mteb_version": MTEB_FORMAT_VERSION,
        "scores": {split: [scores]},
        "evaluation_time": evaluation_time,
        "kg_co2_emissions": None,
        "compsense": provenance or {},
    }


def mteb_task_name(dataset: str) -> str:
    """MTEB's name for a dataset: SciFact for BEIR's scifact, NanoSciFactRetrieval for NanoSciFact."""
    if dataset.startswith("Nano"):
        return f"{dataset}Retrieval"
    return MTEB_TASK_NAMES.get(dataset.lower(), dataset)


def main(model: str, datasets: list[str], **kwargs) -> int:
    out = evaluate_models(model, datasets, **kwargs)

    print(f"{'dataset':24s} " + " ".join(f"{m:>10s}" for m in METRICS))
    for name, values in out["metrics"].items():
        print(f"{name:24s} " + " ".join(f"{values[m]:10.4f}" for m in METRICS))
    print(f"\ntidy table: {out['tidy']}\nper query:  {out['per_query']}")
    for path in out["mteb"]:
        print(f"MTEB JSON:  {path}")
    return 0


def _check_model_and_out(model: str, backbone, out, data_folders=()) -> None:
    """Fail before loading anything: a model path that is not there or holds no model, an --out that is
    a file or cannot be written, or one where no run writes: the committed figures/, data/, the source,
    the local data folder, or one of `data_folders` (--data-dir, a dataset given by its path): the
    guard `reproduce` applies to its --out (`paths.check_not_protected`)."""
    given = Path(str(model)).expanduser()
    looks_local = given.is_absolute() or str(model).startswith(".") or given.exists()
    if backbone is None and looks_local:
        if not given.exists():
            raise FileNotFoundError(
                f"{given}: no such model folder. Fix: pass a saved SentenceTransformer folder (e.g. "
                "runs/local/models/minilm-l6/A-seed42/final), a short name (minilm-l6) or a hub id"
            )
        if not given.is_dir() or not (given / "modules.json").is_file() and not (given / "config.json").is_file():
            raise FileNotFoundError(
                f"{given}: not a model folder (no modules.json or config.json). Fix: pass the folder "
                "training wrote (its final/), not its parent"
            )
    check_not_protected(
        out, f"--out {out}", f"pass --out a folder under runs/ (default {DEFAULT_OUT})", also=data_folders
    )
    if resolve(out).exists() and not resolve(out).is_dir():
        raise NotADirectoryError(f"--out {out}: a file, not a folder. Fix: name a folder (default runs/evaluate)")
    check_can_write(
        out,
        f"--out {out}",
        "pass --out a folder you can write (default runs/evaluate), or make this one writable "
        "(chmod -R u+w, or a disk not mounted read-only)",
    )


def model_label(model: str, backbone=None) -> str:
    """What a result of `model` is keyed on: a known backbone's name; a local model folder's name with
    the start of a digest of its files (README.md left out: the model card gets metrics written into
    it), so A's `final/` and B's `final/` never replace each other's rows; else the name as given."""
    if backbone is not None:
        return backbone.name
    folder = Path(str(model)).expanduser()
    if not folder.is_dir():
        return str(model)
    files = sorted(p for p in folder.rglob("*") if p.is_file() and p.name != "README.md")
    digest = hashlib.sha256("".join(f"{p.relative_to(folder)}={file_digest(p)};" for p in files).encode())
    return f"{folder.name}-{digest.hexdigest()[:12]}"


def _mteb_model_name(model: str, backbone, label: str) -> str:
    """mteb/results names a model folder by its hub id with '/' -> '__'; a local folder by its label."""
    if backbone is not None and backbone.hub_id:
        return backbone.hub_id.replace("/", "__")
    return label if Path(str(model)).expanduser().exists() else str(model).replace("/", "__")


def _is_path(dataset) -> bool:
    """Whether a dataset argument names a folder by its path ("data/x/scifact"), not by a name."""
    return not isinstance(dataset, str) or "/" in dataset or os.sep in dataset


def _beir_folder(name: str | os.PathLike, data_dir) -> Path:
    """The folder `compsense.data.datasets.load_beir` reads for `name`: a bare name is under the data folder."""
    if not _is_path(name):
        return local_data_dir(data_dir) / name
    return Path(name).expanduser()


def _dataset_files(root: Path, split: str) -> dict[str, str]:
    """{file: "size:sha256"} of what a BEIR split is read from (as the runner records stage data),
    so a result names the exact data it came from."""
    corpus = "corpus.jsonl" if (root / "corpus.jsonl").is_file() else "corpus.jsonl.gz"
    return {rel: file_digest(root / rel) for rel in (corpus, "queries.jsonl", f"qrels/{split}.tsv")}
