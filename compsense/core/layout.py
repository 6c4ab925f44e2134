"""The run folder: the one place that knows where each stage writes under a profile's work_dir.

    <work_dir>/                                   e.g. runs/local
      negatives/pairs.parquet, triplets.parquet   notebook 01: near-misses and identity triplets
      models/<backbone>/<variant>-seed<seed>/     notebook 02: train log, DONE.json, final/ (the model)
      verifiers/<variant>/seed<seed>/<F>-<regime>/  notebook 04: one trained verifier (variant:
                                                  <train_data>-<size>[-authors])
      results/<table>.parquet                     every stage's tidy results
      cache/                                      token and pooled embeddings; never a result

Every module that reads or writes these paths asks this one, so moving a folder is a one-line change
and a reader finds the whole layout here. Loading the models a backbone's runs left (Base, Model A,
Model B) also lives here: it is the layout plus `encoders.load_encoder`.
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Sequence

from compsense.core.encoders import load_encoder, quiet_transformers
from compsense.core.paths import resolve, workspace

NEGATIVES, MODELS, VERIFIERS, RESULTS, CACHE = "negatives", "models", "verifiers", "results", "cache"
# Folders that hold no stage result: deleting them never re-runs a stage (the runner's skip check).
NOT_OUTPUTS = (CACHE,)
PAIRS, TRIPLETS = "pairs.parquet", "triplets.parquet"  # notebook 01's two data files
PURITY = "purity.parquet"  # ... and its independent check of them (the report and README read it)
FINAL = "final"  # the trained model inside a model folder
_MODEL_KEY = re.compile(r"^(?P<variant>.+)-seed(?P<seed>\d+)$")


def model_key(variant: str, seed: int) -> str:
    """A model's folder name and its key in result tables: 'A-seed42', 'base-seed42'."""
    return f"{variant}-seed{seed}"


def parse_model_key(key: str) -> tuple[str, int | None]:
    """'B-seed43' -> ('B', 43); a key without a seed -> (key, None)."""
    match = _MODEL_KEY.match(key)
    return (match["variant"], int(match["seed"])) if match else (key, None)


def pairs_file(work_dir: str | os.PathLike, create: bool = False) -> Path:
    """negatives/pairs.parquet: notebook 01's near-miss pairs (`create` makes the folder, for writers)."""
    return _negatives(work_dir, create) / PAIRS


def triplets_file(work_dir: str | os.PathLike, create: bool = False) -> Path:
    """negatives/triplets.parquet: notebook 01's structural identity triplets (anchor, copy, near-miss)."""
    return _negatives(work_dir, create) / TRIPLETS


def purity_file(work_dir: str | os.PathLike, create: bool = False) -> Path:
    """negatives/purity.parquet: notebook 01's purity table (`structural.family_purity`)."""
    return _negatives(work_dir, create) / PURITY


def _negatives(work_dir: str | os.PathLike, create: bool) -> Path:
    return workspace(work_dir, NEGATIVES) if create else resolve(work_dir) / NEGATIVES


def model_dir(work_dir: str | os.PathLike, backbone: str, variant: str, seed: int, create: bool = False) -> Path:
    """models/<backbone>/<variant>-seed<seed>/: one training run of notebook 02."""
    parts = (MODELS, backbone, model_key(variant, seed))
    return workspace(work_dir, *parts) if create else resolve(work_dir).joinpath(*parts)


def final_model_dir(work_dir: str | os.PathLike, backbone: str, variant: str, seed: int) -> Path:
    """The trained model of one run (a sentence-transformers folder), present once the run finished."""
    return model_dir(work_dir, backbone, variant, seed) / FINAL


def model_sources(
    work_dir: str | os.PathLike, backbone: str, seeds: Sequence[int], variants: Sequence[str] = ("A", "B")
) -> tuple[dict[str, str], list[Path]]:
    """What to compare for one backbone, without loading anything: ({model key: name or checkpoint
    path}, [missing checkpoint folders]). Base comes first, keyed with the first seed (training starts
    from it), then every trained variant checkpoint that exists. Notebook 03 loads them one at a time
    from this (`nearmiss.geometry.cosine_scores`), so a grid of large models never sits in memory at
    once; `load_models` loads a seed's models together."""
    if not seeds:
        raise ValueError("seeds is empty")
    sources = {model_key("base", seeds[0]): backbone}
    missing = []
    for seed in seeds:
        for variant in variants:
            path = final_model_dir(work_dir, backbone, variant, seed)
            if (path / "modules.json").exists():
                sources[model_key(variant, seed)] = str(path)
            else:
                missing.append(path)
    return sources, missing


def trained_model_dirs(work_dir: str | os.PathLike) -> list[Path]:
    """Every run folder under models/ (finished or not), sorted."""
    return sorted(p for p in resolve(work_dir).joinpath(MODELS).glob("*/*") if p.is_dir())


def verifier_dir(work_dir: str | os.PathLike, variant: str, seed: int, label: str) -> Path:
    """verifiers/<variant>/seed<seed>/<label>/, label '<F>-<regime>' (notebook 04 writes, 05 reads)."""
    return resolve(work_dir) / VERIFIERS / variant / f"seed{seed}" / label


def verifiers_root(work_dir: str | os.PathLike) -> Path:
    return resolve(work_dir) / VERIFIERS


# Which notebook writes each results table. A stage's tables live in a folder of their own,
# results/<stage>/, so that each DVC stage owns whole folders (dvc.yaml: DVC refuses two stages that
# write one folder, and a stage's files are its outputs whatever its parameters made it write).
TABLE_STAGE = {
    **dict.fromkeys(
        ("retrieval", "retrieval_per_query", "nearmiss_pooled", "table1", "variants", "variant_tests", "dose_response"),
        "02",
    ),
    **dict.fromkeys(("geometry", "geometry_scores"), "03"),
    **dict.fromkeys(
        ("verifiers", "separation", "verifier_budget", "verifier_budget_curve", "verifier_budget_runs"), "04"
    ),
    **dict.fromkeys(("rerank", "rerank_per_query", "rerank_cost", "rerank_answer"), "05"),
}


def results_dir(work_dir: str | os.PathLike, stage: str) -> Path:
    """results/<stage>/ (created): the tables notebook <stage> writes."""
    return workspace(work_dir, RESULTS, stage)


def results_file(work_dir: str | os.PathLike, table: str) -> Path:
    """results/<stage>/<table>.parquet, the stage that writes it from TABLE_STAGE (the folder is
    created): e.g. results_file(w, "retrieval") is results/02/retrieval.parquet. `table` may carry
    its .parquet suffix."""
    name = table.removesuffix(".parquet")
    if name not in TABLE_STAGE:
        raise KeyError(f"results table {name!r}: no stage writes it; known tables: {', '.join(sorted(TABLE_STAGE))}")
    return results_dir(work_dir, TABLE_STAGE[name]) / f"{name}.parquet"


def cache_dir(work_dir: str | os.PathLike, *parts: str) -> Path:
    """cache/[parts...] (created): embeddings that are recomputed when missing."""
    return workspace(work_dir, CACHE, *parts)


def load_model(
    work_dir: str | os.PathLike,
    backbone: str,
    variant: str,
    seed: int,
    device: str | None = None,
    max_seq_length: int | None = None,
):
    """Base (variant "base": the pretrained backbone; `seed` builds the tiny BERT) or the final
    checkpoint notebook 02 left for Model `variant`. A missing checkpoint raises FileNotFoundError that
    names the folder and the notebook to run."""
    if variant == "base":
        return load_encoder(backbone, device=device, max_seq_length=max_seq_length, seed=seed)
    path = final_model_dir(work_dir, backbone, variant, seed)
    if not (path / "modules.json").exists():
        raise FileNotFoundError(
            f"Model {variant} (seed {seed}): no checkpoint at {path}; run "
            f"notebooks/02_training_ab.ipynb for this profile first"
        )
    return load_encoder(path, device=device, max_seq_length=max_seq_length)


def load_models(
    work_dir: str | os.PathLike,
    backbone: str,
    seed: int,
    variants: Sequence[str] = ("base", "A", "B"),
    device: str | None = None,
    max_seq_length: int | None = None,
) -> tuple[dict, list[str]]:
    """({variant: encoder} for every variant whose model exists, [a note per missing one]): the
    comparisons of notebooks 03-05 run on whatever notebook 02 has left, and say what is missing."""
    models, notes = {}, []
    with quiet_transformers():
        for variant in variants:
            try:
                models[variant] = load_model(work_dir, backbone, variant, seed, device, max_seq_length)
            except FileNotFoundError as err:
                notes.append(f"{err} (its rows are left out)")
    return models, notes
