"""One piece of the training-length curve, as a command: train A, B and the control C of one seed to
chosen steps of the authors' schedule, score every exported step and Base, and write the tables.

    python -m compsense length --seed 42 --steps 25,50 [--variants A,B,C] [--precision bf16]

Checkpoints, exported steps and scores live under the length root (`$COMPSENSE_LENGTH_DIR`, by default
~/.cache/compsense/length), outside the work tree: a later session on the same machine resumes each run
from its last checkpoint, and a piece that ends early keeps every point it scored. `--publish` copies
the tables (numbers only, no text of any dataset) and the record of what made them into figures/tables/
(`compsense.figures.length_tables`).

Why here and not in the pipeline: this is the training-length experiment itself (which models, which
steps, which sets they are scored on), run as a command beside the notebooks, not pipeline machinery.
"""

from __future__ import annotations

import logging
import os
import time
from contextlib import nullcontext
from pathlib import Path

import pandas as pd

from compsense.nearmiss import length_curve as LC
from compsense.retrieval import length as L

log = logging.getLogger(__name__)

EVAL_DATASETS = ("scifact", "nfcorpus")  # SciFact test zero-shot; NFCorpus test the in-domain reference
NEARMISS_PER_FAMILY = 300  # notebook 02's nearmiss_pairs_per_family (params/local.yaml)
PRECISIONS = ("fp32", "bf16")


LENGTH_ROOT_ENV = "COMPSENSE_LENGTH_DIR"


def length_root(root=None, create: bool = True) -> Path:
    """Where the curve's runs live: `root`, else $COMPSENSE_LENGTH_DIR, else ~/.cache/compsense/length;
    made unless `create=False` (an estimate only reads it)."""
    chosen = root or os.environ.get(LENGTH_ROOT_ENV) or Path.home() / ".cache" / "compsense" / "length"
    path = Path(chosen).expanduser().resolve()
    if create:
        path.mkdir(parents=True, exist_ok=True)
    return path


def build_data(seed: int, work_dir, data_dir=None, eval_max_queries: int | None = None):
    """The evaluation sets, the retrieval pool (NFCorpus train, `LENGTH_PAIRS_PER_QUERY` per query,
    SciFact's texts dropped), the paper families' identity triplets of notebook 01 (train split), and
    the held-out near-miss sets."""
    from compsense.data.family_names import PAPER_FAMILIES
    from compsense.data.structural import heldout_paraphrase_pairs
    from compsense.nearmiss.geometry import load_near_misses, positive_pairs
    from compsense.retrieval.harness import load_eval_datasets
    from compsense.retrieval.training import build_retrieval_triplets, load_structural_triplets, select_structural

    eval_sets = load_eval_datasets(list(EVAL_DATASETS), data_dir=data_dir, max_queries=eval_max_queries, seed=seed)
    zero_shot = [ds for ds in eval_sets if not ds.name.startswith("nfcorpus")]
    retrieval, stats = build_retrieval_triplets(
        ["nfcorpus"],
        data_dir=data_dir,
        seed=seed,
        max_pairs_per_query=L.LENGTH_PAIRS_PER_QUERY,
        exclude_datasets=zero_shot,
    )
    structural = select_structural(load_structural_triplets(work_dir), PAPER_FAMILIES)
    near_misses = load_near_misses(
        work_dir, split="heldout", families=PAPER_FAMILIES, max_pairs_per_family=NEARMISS_PER_FAMILY, seed=seed
    )
    paraphrases = positive_pairs(heldout_paraphrase_pairs("test", data_dir=data_dir))
    sets = LC.nearmiss_sets(near_misses, paraphrases)
    return eval_sets, retrieval, structural, sets, stats


def paraphrase_pool(structural: pd.DataFrame, data_dir=None, paraphrases: pd.DataFrame | None = None) -> pd.DataFrame:
    """B-para's structural rows: each identity triplet (anchor, anchor, near-miss) of `structural` whose
    anchor has a paraphrase in the training splits (MRPC train label 1, STS-B train score >= 4:
    `geometry.positive_pairs`), with that paraphrase as the positive; the others are left out (a row
    without a rewording cannot teach the contrast). Matched as notebook 03 matches its held-out pairs
    (`geometry.attach_paraphrases`: by text, else by the MRPC sentence id). On notebook 01's local
    triplets, 1,125 of the 2,225 paper-family rows have one (binding 50%, negation 54%, spatial 43%), so
    each is read about twice as often as B's rows over the same steps (the record keeps the pool)."""
    from compsense.data.structural import heldout_paraphrase_pairs
    from compsense.nearmiss.geometry import attach_paraphrases, positive_pairs

    if paraphrases is None:
        paraphrases = positive_pairs(heldout_paraphrase_pairs("train", data_dir=data_dir))
    pairs = structural.rename(columns={"anchor": "sentence1", "negative": "sentence2"})
    oriented = attach_paraphrases(pairs.drop(columns=["positive"]), paraphrases)
    keep = (
        oriented.paraphrase.notna()
        & (oriented.anchor.to_numpy() == structural.anchor.to_numpy())  # not re-oriented onto the near-miss
        & (oriented.paraphrase != oriented.anchor)
        & (oriented.paraphrase != oriented.near_miss)
    ).to_numpy()
    if not keep.any():
        raise ValueError(
            "B-para: no structural anchor has a paraphrase among the MRPC/STS-B train pairs; run notebook 01 "
            "on MRPC/STS-B train sentences (the local profile does) and check the data folder holds both"
        )
    return structural[keep].assign(positive=oriented.paraphrase[keep].to_numpy()).reset_index(drop=True)


def run_piece(
    seed: int = 42,
    steps=(25, 50),
    variants=("A", "B", "C"),
    precision: str = "bf16",
    root=None,
    work_dir="runs/local",
    data_dir=None,
    device=None,
    backbone: str = "minilm-l6",
    eval_max_queries: int | None = None,
) -> Path:
    """Train each variant to max(steps), export and score every step in `steps` and Base; returns the
    results folder. Appends to the piece record (results/record.json) the wall time of each part.
    `backbone` and `eval_max_queries` exist for the CPU check of the GPU script (tiny-bert, a few
    queries); the curve is MiniLM-L6 on the full test splits."""
    import torch

    from compsense.core.paths import code_commit
    from compsense.retrieval.training import _versions

    if precision not in PRECISIONS:
        raise ValueError(f"precision must be one of {PRECISIONS}, got {precision!r}")
    root = length_root(root)
    results = root / "results"
    record_path = results / "record.json"
    record = LC.read_record(record_path)
    t0 = time.perf_counter()
    eval_sets, retrieval, structural, sets, stats = build_data(seed, work_dir, data_dir, eval_max_queries)
    # the rows this piece reads (a prefix of the schedule's stream), at least those a run's identity covers
    n_rows = max(max(steps) * 128, L.IDENTITY_ROWS)
    record.setdefault("data", {}).setdefault(str(seed), {}).update(
        {
            "retrieval": stats.get("nfcorpus"),
            "structural_pool": _family_counts(structural),
            "nearmiss_pairs": _family_counts(sets["near_misses"]),
            "pairwise_triples": _family_counts(sets["triples"]),
        }
    )
    gpu = (device or ("cuda" if torch.cuda.is_available() else "cpu")).startswith("cuda")
    autocast = torch.autocast("cuda" if gpu else "cpu", dtype=torch.bfloat16) if precision == "bf16" else nullcontext()
    models = [
        {
            "variant": "Base",
            "seed": seed,
            "step": 0,
            "triplets": 0,
            "path": backbone,
            "loss": None,
            "learning_rate": None,
            "stamp": f"pretrained-{precision}",
        }
    ]
    with autocast:
        LC.evaluate_steps(models, eval_sets, sets, results, device=device)
    for variant in variants:
        share, negatives, positives = L.LENGTH_VARIANTS[variant]
        pool = structural
        if positives == "paraphrase":
            pool = paraphrase_pool(structural, data_dir)
            record["data"][str(seed)][f"structural_pool-{variant}"] = _family_counts(pool)
        rows = L.schedule_rows(retrieval, pool, share, seed, n_rows, negatives=negatives)
        repeats = record["data"][str(seed)].setdefault(f"repeats-{variant}", {})
        repeats.update({str(s): L.repeat_counts(rows, s * 128) for s in steps})
        config = L.schedule_config(variant, seed, root / "runs", bf16=precision == "bf16", backbone=backbone)
        config.device = device
        # On a CPU, tokenise in the training process: a data-loader worker is a fork of a process that
        # holds ~7 GB of activations at batch 128, and its copied pages cost as much again (two lanes on
        # 24 GB were OOM-killed). On a GPU, build_trainer's min(8, cores) workers keep the GPU fed.
        config.dataloader_num_workers = None if gpu else 0
        t_train = time.perf_counter()
        exported = L.train_to_steps(config, rows, steps)
        train_s = time.perf_counter() - t_train
        del rows
        models = []
        for step, path in exported.items():
            info = LC.read_record(path / "STEP.json")
            digest = next(iter(info.get("weights_sha256", {}).values()), "")
            models.append(
                {
                    "variant": variant,
                    "seed": seed,
                    "step": step,
                    "triplets": step * 128,
                    "path": str(path),
                    "loss": info.get("loss"),
                    "learning_rate": info.get("learning_rate"),
                    "stamp": f"{digest[:16]}-{precision}",
                }
            )
        t_eval = time.perf_counter()
        with autocast:
            LC.evaluate_steps(models, eval_sets, sets, results, device=device)
        record.setdefault("parts", []).append(
            {
                "seed": seed,
                "variant": variant,
                "steps": sorted(exported),
                "precision": precision,
                "train_s": round(train_s, 1),
                "eval_s": round(time.perf_counter() - t_eval, 1),
                "commit": code_commit(),
                "finished_at": pd.Timestamp.now(tz="UTC").isoformat(timespec="seconds"),
            }
        )
        record["schedule"] = {
            "steps": L.SCHEDULE_STEPS,
            "batch_size": 128,
            "learning_rate": 1e-4,
            "weight_decay": 0.001,
            "warmup_ratio": 0.1,
            "scale": 10.0,
            "max_seq_length": 128,
            "sampler": "rows pre-shuffled by seed, read in order (duplicates allowed)",
        }
        record["versions"] = _versions()
        _merge_record(record_path, record)
    log.info("length piece seed %d steps %s: %.0f s", seed, list(steps), time.perf_counter() - t0)
    return results


def _family_counts(rows: pd.DataFrame) -> dict[str, int]:
    """Rows per family, as the record keeps them (plain ints: JSON)."""
    return {k: int(v) for k, v in rows.family.value_counts().items()}


def _merge_record(path: Path, mine: dict) -> None:
    """Write this piece's record into the shared one under the results lock: parts are appended (a
    part already there is kept once), data counts merged per seed, so pieces that run at once on
    different cores keep each other's entries."""
    from compsense.core.storage import exclusive, write_json

    with exclusive(path.parent / ".lock"):
        current = LC.read_record(path)
        parts = current.get("parts", [])
        for part in mine.get("parts", []):
            if part not in parts:
                parts.append(part)
        data = current.get("data", {})
        for seed, counts in mine.get("data", {}).items():
            data.setdefault(seed, {}).update(counts)
        write_json(path, {**current, **mine, "parts": parts, "data": data})


EXTERNAL_DIR = "external"  # <length root>/external/: `compsense nearmiss` of Base and every exported step
EXTERNAL_INDEX = "models.parquet"  # which scored model (its label: a digest of its files) is which variant/step
EXTERNAL_KEY = ("model", "variant", "seed", "step")


def score_external(
    seed: int = 42,
    variants=("A", "B", "C"),
    steps=None,
    root=None,
    work_dir="runs/local",
    data_dir=None,
    sets=None,
    backbone: str = "minilm-l6",
) -> pd.DataFrame:
    """The near-miss tests of `compsense nearmiss` (CondaQA, SugarCrepe swaps, the generator's held-out
    pairs; `nearmiss.external`, the same code and the same pairs for every model: its seed stays 0) for
    Base and every exported step of `variants` at `seed` (or only `steps`), each model once: a model whose
    label is already in the table is not scored again. Returns the table with variant, seed, step and
    triplets beside each row; the index of labels is kept beside the table for `publish`."""
    from compsense.core.encoders import find_backbone
    from compsense.core.storage import exclusive, read_table, write_table
    from compsense.nearmiss.external import TABLE, evaluate_near_misses
    from compsense.retrieval.evaluate import model_label
    from compsense.retrieval.training import run_dir

    root = length_root(root)
    out = root / EXTERNAL_DIR
    models = [("Base", 0, backbone)]
    for variant in variants:
        if variant not in L.LENGTH_VARIANTS:
            raise ValueError(f"unknown length variant {variant!r}; choose from {sorted(L.LENGTH_VARIANTS)}")
        run = run_dir(root / "runs", backbone, f"length-{variant}", seed)
        exported = L.finished_steps(run).items()
        models += [(variant, step, str(path)) for step, path in exported if not steps or step in steps]
    index_path, table_path = out / EXTERNAL_INDEX, out / "results" / TABLE
    out.mkdir(parents=True, exist_ok=True)
    for variant, step, path in models:
        label = model_label(path, find_backbone(path))
        scored = set(read_table(table_path).model) if table_path.exists() else set()
        if label not in scored:
            log.info("near-miss tests: %s step %s (%s)", variant, step, label)
            evaluate_near_misses(path, sets, work_dir=work_dir, data_dir=data_dir, out=out)
        row = pd.DataFrame([{"model": label, "variant": variant, "seed": seed if step else 0, "step": step}])
        with exclusive(out / f".{EXTERNAL_INDEX}.lock"):  # two calls at once each keep their rows
            index = read_table(index_path) if index_path.exists() else pd.DataFrame(columns=[*EXTERNAL_KEY])
            write_table(pd.concat([index[index.model != label], row], ignore_index=True), index_path)
    return external_table(root)


def external_table(root=None) -> pd.DataFrame:
    """The near-miss test rows of the curve's models with their variant, seed, step and triplets."""
    from compsense.core.storage import read_table
    from compsense.nearmiss.external import TABLE

    out = length_root(root) / EXTERNAL_DIR
    if not (out / EXTERNAL_INDEX).exists() or not (out / "results" / TABLE).exists():
        return pd.DataFrame()
    table = read_table(out / "results" / TABLE).merge(read_table(out / EXTERNAL_INDEX), on="model")
    table["triplets"] = table.step.astype(int) * 128
    return table.sort_values(["dataset", "family", "metric", "variant", "seed", "step"]).reset_index(drop=True)
