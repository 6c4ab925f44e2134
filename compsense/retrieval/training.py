"""Training Model A and Model B: the same recipe, with or without structural identity triplets.

Model A is a backbone fine-tuned with MultipleNegativesRankingLoss on (anchor, positive, negative)
retrieval triplets; Model B sees the same recipe with structural identity triplets (anchor =
positive = a sentence, negative = its near-miss) making up a `structural_share` of its rows.
Everything else (steps, batch, learning rate, seed) is identical, so any retrieval difference is
the structural data's doing.

Training runs through sentence-transformers' own Trainer (the paper's authors did the same), with
three things added: a fixed output layout `{work_dir}/models/<backbone>/<variant>-seed<seed>/`,
resumption from the last checkpoint after an interruption, and a DONE.json marker so a finished
run is never trained twice. The reported model is `final/`, the last step: no checkpoint is
selected on any test set.
"""

from __future__ import annotations

import hashlib
import json
import logging
import math
import os
import shutil
import time
import zlib
from dataclasses import asdict, dataclass, fields
from datetime import datetime, timezone
from pathlib import Path

import numpy as np
import pandas as pd

from compsense.core.commands import run_stage
from compsense.core.encoders import BACKBONES, hub_problem, load_encoder, quiet_transformers, weight_digests
from compsense.core.layout import model_dir, triplets_file
from compsense.core.seed import seed_everything
from compsense.core.storage import read_json, read_table, write_json
from compsense.data import datasets as data
from compsense.data.datasets import document_text
from compsense.data.family_names import PAPER_FAMILIES, resolve_families
from compsense.retrieval.regime import KEYS_FILE, dataset_keys, text_key, write_training_keys

log = logging.getLogger(__name__)

# The columns MultipleNegativesRankingLoss reads, in its order (negatives.TRIPLET_COLUMNS adds the
# near-miss bookkeeping)
MNRL_COLUMNS = ["anchor", "positive", "negative"]
STRUCTURAL_COLUMNS = ["anchor", "positive", "negative", "family", "source_id", "split"]
BEIR_SOURCES = ("nfcorpus", "scifact")  # BEIR folders with a train split under the data dir
OFFLINE_SOURCES = (*BEIR_SOURCES, "mrpc", "stsb")


# ---------------------------------------------------------------------------------------------
# Configuration


@dataclass
class TrainConfig:
    """Every knob of one training run. `paper()` fills the paper's recipe for a backbone."""

    backbone: str = "tiny-bert"
    variant: str = "A"  # "A", "B", or a sweep point such as "B-share0.25"
    seed: int = 42
    structural_share: float = 0.0  # share of structural identity rows in the training data
    max_steps: int = 20
    batch_size: int = 128
    max_seq_length: int = 128
    learning_rate: float = 1e-4
    weight_decay: float = 0.0
    warmup_ratio: float = 0.1  # linear warm-up over this share of steps, then linear decay to 0
    scale: float = 10.0  # MNRL logit scale: 10 = temperature 0.1
    fp16: bool | None = None  # None: on GPU, bf16 where supported, else fp16; off on CPU
    bf16: bool | None = None
    # None: min(8, cores) on GPU (tokenising keeps up with the GPU); 1 on CPU, where a worker
    # tokenises the next batch while the step runs, as plain sentence-transformers with one worker.
    dataloader_num_workers: int | None = None
    save_steps: int | None = None  # None: about five checkpoints per run
    save_total_limit: int = 2
    logging_steps: int = 10
    keep_checkpoints: bool = False  # delete checkpoint-* once final/ is written
    work_dir: str = "runs/smoke"
    device: str | None = None

    def __post_init__(self):
        """Values a profile can get wrong, refused with the field and the fix (a YAML string where a
        number belongs, max_steps: -1, a share above 1) before any row is drawn or step taken."""
        numbers = {
            "max_steps": (self.max_steps, 1, None),
            "batch_size": (self.batch_size, 1, None),
            "max_seq_length": (self.max_seq_length, 1, None),
            "learning_rate": (self.learning_rate, 0.0, None),
            "weight_decay": (self.weight_decay, 0.0, None),
            "warmup_ratio": (self.warmup_ratio, 0.0, 1.0),
            "structural_share": (self.structural_share, 0.0, 1.0),
        }
        for name, (value, low, high) in numbers.items():
            if isinstance(value, bool) or not isinstance(value, (int, float)):
                raise ValueError(f"TrainConfig.{name} = {value!r}: a number is needed (write 1.0e-4, not '1e-4')")
            if value < low or (high is not None and value > high):
                bounds = f"between {low} and {high}" if high is not None else f"at least {low}"
                raise ValueError(f"TrainConfig.{name} = {value!r}: must be {bounds}; fix the profile's `{name}`")

    @classmethod
    def paper(cls, backbone: str, variant: str = "A", seed: int = 42, **overrides) -> "TrainConfig":
        """The paper's recipe: the backbone's steps/lr/weight decay, batch 128, length 128, scale 10.
        Overrides that are None keep the recipe's value (the notebook's 'None = paper' knobs)."""
        if backbone not in BACKBONES:
            raise KeyError(f"unknown backbone {backbone!r}; known: {sorted(BACKBONES)}")
        recipe = dict(BACKBONES[backbone].recipe)
        share = PAPER_STRUCTURAL_SHARE if variant == "B" else 0.0
        known = {f.name for f in fields(cls)}
        unknown = set(overrides) - known
        if unknown:
            raise TypeError(f"TrainConfig has no field(s) {sorted(unknown)}")
        values = {
            "backbone": backbone,
            "variant": variant,
            "seed": seed,
            "batch_size": 128,
            "max_seq_length": 128,
            "scale": 10.0,
            "structural_share": share,
            **recipe,
        }
        values.update({k: v for k, v in overrides.items() if v is not None})
        return cls(**values)

    @property
    def run_dir(self) -> Path:
        return run_dir(self.work_dir, self.backbone, self.variant, self.seed)


def run_dir(work_dir, backbone: str, variant: str, seed: int) -> Path:
    """{work_dir}/models/<backbone>/<variant>-seed<seed>/ (created; `layout.model_dir`)."""
    return model_dir(work_dir, backbone, variant, seed, create=True)


def sweep_variant(share: float, main_share: float) -> str:
    """Variant name of a structural share: 0 -> "A", the main share -> "B", else "B-share<s>"."""
    if share == 0:
        return "A"
    return "B" if math.isclose(share, main_share) else f"B-share{share:g}"


# ---------------------------------------------------------------------------------------------
# Training data


def build_retrieval_triplets(
    sources=("nfcorpus",),
    data_dir=None,
    stsb_min_score: float = 4.0,
    max_rows: int | None = None,
    seed: int = 42,
    nq_path=None,
    max_pairs_per_query: int | None = 2,
    exclude_datasets=(),
) -> tuple[pd.DataFrame, dict]:
    """Model A's (anchor, positive, negative) triplets from offline data, with counts of what was kept.

    - "nfcorpus": BEIR NFCorpus TRAIN qrels (110,575 query-document pairs over 2,590 queries), the
      offline stand-in for the paper's NQ pairs (the test split, our in-domain reference, is never read).
    - "scifact": SciFact TRAIN claims with each cited abstract (qrels/train.tsv).
    - "mrpc": GLUE-train MRPC pairs labelled paraphrase (label 1).
    - "stsb": STS-B train pairs with gold score >= `stsb_min_score`.
    - "nq": (question, answer passage) pairs, the paper's data (`compsense.data.datasets.load_nq_pairs`);
      when it cannot be loaded this fails and names the offline profiles: never a silent switch of data.

    A BEIR source gives each query at most `max_pairs_per_query` pairs, its relevant documents drawn
    at random (seeded): NFCorpus queries have 1 to 1,363 relevant documents (median 18), and
    uncapped, a few broad queries would make up most rows. Repeats of a query across rows stay
    (the trainer's no-duplicates sampler keeps them out of one batch, where MNRL would read the
    other copy's positive as a negative).

    `exclude_datasets` (evaluation `BeirDataset`s that must stay zero-shot): rows whose anchor or
    positive occurs among their queries or documents are dropped, and such texts never become a
    negative; the counts are in the stats (`compsense.retrieval.regime` then checks the result).
    The negative of each row is a random positive of another row of the same source (seeded),
    redrawn when it equals the anchor or positive or is another relevant document of the query.
    """
    excluded: set[str] = set()
    for ds in exclude_datasets:
        excluded |= set().union(*dataset_keys(ds))
    frames, stats = (
        [],
        {
            "sources": list(sources),
            "max_pairs_per_query": max_pairs_per_query,
            "excluded_datasets": [ds.name for ds in exclude_datasets],
        },
    )
    for source in sources:
        if source == "nq":
            try:
                pairs = [(p.query, p.passage, p.query) for p in data.load_nq_pairs(path=nq_path)]
            except (data.DataError, FileNotFoundError, ImportError) as err:
                raise data.MissingDataError(
                    f"training source 'nq' cannot be loaded ({err}). Give a local copy of NQ "
                    "(question, answer-passage) pairs with `nq_path`, go online (HF_HUB_OFFLINE=0), or run "
                    "the offline design instead: `--profile local` (NFCorpus train -> SciFact zero-shot)"
                ) from err
            st = {"read": len(pairs)}
        elif source == "mrpc":
            raw = data.load_mrpc("train", data_dir=data_dir)
            pairs = [(p.sentence1, p.sentence2, p.id1) for p in raw if p.label == 1]
            st = {"read": len(raw), "not_paraphrase": len(raw) - len(pairs)}
        elif source == "stsb":
            raw = data.load_stsb("train", data_dir=data_dir)
            pairs = [(p.sentence1, p.sentence2, p.id1) for p in raw if p.label >= stsb_min_score]
            st = {"read": len(raw), f"score_below_{stsb_min_score:g}": len(raw) - len(pairs)}
        elif source in BEIR_SOURCES:
            ds = data.load_beir(source, split="train", data_dir=data_dir)
            pairs, st = _beir_pairs(ds, max_pairs_per_query, np.random.default_rng([seed, zlib.crc32(source.encode())]))
        else:
            raise ValueError(f"unknown training source {source!r}; choose from {[*OFFLINE_SOURCES, 'nq']}")
        df = pd.DataFrame(pairs, columns=["anchor", "positive", "group"])
        usable = (df.anchor.str.strip() != "") & (df.positive.str.strip() != "") & (df.anchor != df.positive)
        st["empty_or_identical"] = int((~usable).sum())
        before = len(df[usable])
        df = df[usable].drop_duplicates(["anchor", "positive"])
        st["duplicates"] = before - len(df)
        if excluded:
            in_eval = df.anchor.map(text_key).isin(excluded) | df.positive.map(text_key).isin(excluded)
            st["in_eval_sets"] = int(in_eval.sum())
            df = df[~in_eval]
        # One generator per source: a source's negatives do not depend on which other sources are used.
        rng = np.random.default_rng([seed, zlib.crc32(source.encode())])
        df["negative"], st["negatives_redrawn"] = _random_negatives(df, rng)
        df["source"] = source
        st["kept"] = len(df)
        st["distinct_anchors"] = int(df.anchor.nunique())
        stats[source] = st
        frames.append(df.drop(columns="group"))
    out = (
        pd.concat(frames, ignore_index=True)[MNRL_COLUMNS + ["source"]]
        if frames
        else pd.DataFrame(columns=MNRL_COLUMNS + ["source"])
    )
    if max_rows is not None and len(out) > max_rows:
        stats["dropped_by_max_rows"] = len(out) - max_rows
        out = out.sample(n=max_rows, random_state=seed).reset_index(drop=True)
    stats["total"] = len(out)
    log.info("retrieval triplets: %s", json.dumps(stats))
    return out, stats


def _beir_pairs(ds, max_pairs_per_query: int | None, rng: np.random.Generator) -> tuple[list, dict]:
    """(query, document, query id) pairs of a BEIR train split, at most `max_pairs_per_query` per
    query (drawn at random among its relevant documents), with counts."""
    pairs, capped = [], 0
    for q in sorted(ds.qrels):
        docs = sorted(d for d in ds.qrels[q] if d in ds.corpus)
        if max_pairs_per_query is not None and len(docs) > max_pairs_per_query:
            capped += len(docs) - max_pairs_per_query
            docs = sorted(rng.choice(docs, size=max_pairs_per_query, replace=False).tolist())
        pairs += [(ds.queries[q], document_text(ds.corpus[d]), q) for d in docs]
    st = {
        "split": "train",
        "read_queries": len(ds.qrels),
        "read_pairs": sum(len(r) for r in ds.qrels.values()),
        "over_per_query_cap": capped,
        "read": len(pairs),
    }
    return pairs, st


def _random_negatives(df: pd.DataFrame, rng: np.random.Generator, tries: int = 20) -> tuple[list[str], int]:
    """A random positive of another row for each row; redrawn when it is the row's anchor or
    positive, or a positive of the same group (another relevant document of the same query)."""
    positives = df.positive.tolist()
    by_group: dict[str, set[str]] = {}
    for g, p in zip(df.group, positives):
        by_group.setdefault(g, set()).add(p)
    if len(set(positives)) < 2:
        raise ValueError("too few distinct positives to draw negatives from; add rows or sources")
    negatives, redrawn = [], 0
    for anchor, group in zip(df.anchor, df.group):
        bad = by_group[group] | {anchor}
        for _attempt in range(tries):
            neg = positives[rng.integers(len(positives))]
            if neg not in bad:
                break
            redrawn += 1
        else:
            raise RuntimeError(f"no valid negative for anchor {anchor[:60]!r} in {tries} draws")
        negatives.append(neg)
    return negatives, redrawn


def load_structural_triplets(work_dir, split: str | None = "train") -> pd.DataFrame:
    """Notebook 01's structural identity triplets ({work_dir}/negatives/triplets.parquet), one split."""
    path = triplets_file(work_dir)
    if not path.exists():
        raise FileNotFoundError(
            f"{path} does not exist: the structural triplets come from notebook 01. Run it first, e.g.\n"
            f"  papermill notebooks/01_data_and_negatives.ipynb /tmp/01.ipynb -p work_dir {work_dir}\n"
            f"or `{run_stage('01', '<profile>')}` (the DVC stage <profile>-01)"
        )
    df = read_table(path)
    missing = [c for c in STRUCTURAL_COLUMNS if c not in df.columns]
    if missing:
        raise ValueError(f"{path}: missing columns {missing}; expected {STRUCTURAL_COLUMNS}. Re-run notebook 01")
    if split is not None:
        df = df[df.split == split].reset_index(drop=True)
        if df.empty:
            raise ValueError(f"{path}: no rows with split == {split!r}; re-run notebook 01")
    return df


# The paper's Model B mixture (authors' repo radoslavralev/limitations-text-retrieval, run_experiments.sh:
# A trains on data/nq_triplets_100k.csv, B on data/unified_negatives_with_nq_train.csv, same steps).
# B's file is 6,404,932 bytes larger than A's 100k NQ rows: structural identity triplets of short
# sentences (~270-320 bytes a row, anchor written twice) -> about 20-24k rows, i.e. 20/120 to
# 24/124 = 0.17-0.19 of B's rows. We take 0.19, as a share of B's rows (how the file was mixed).
PAPER_STRUCTURAL_SHARE = 0.19
# The same derivation in rows: how many structural identity triplets the authors' Model B file holds.
PAPER_STRUCTURAL_ROWS = (20_000, 24_000)
STRUCTURAL_NEGATIVES = ("near-miss", "random")


def mix_structural(
    retrieval_df: pd.DataFrame,
    structural_df: pd.DataFrame,
    share: float,
    seed: int = 0,
    total_rows: int | None = None,
    negatives: str = "near-miss",
) -> pd.DataFrame:
    """A model's training rows: retrieval rows plus structural rows making up `share` of the result
    (share = 0 gives Model A's data).

    `total_rows` (the triplets a run sees: steps x batch) fixes the size, so every variant sees the
    same number of triplets and B sees round((1 - share) * total_rows) retrieval rows; the retrieval
    rows are a seeded permutation's prefix, so B's retrieval rows are a subset of A's of the same
    seed. Without it, all retrieval rows are kept and structural rows are added on top.
    `negatives="random"` is the control C-identity: the same identity rows, each negative replaced
    by a random other sentence of the structural pool (never one from the same source sentence).
    Structural rows are drawn without replacement, and repeated only when there are too few
    (logged). Shuffled by seed; counts in `.attrs["mix"]`.
    """
    if not 0 <= share < 1:
        raise ValueError(f"structural share must be in [0, 1), got {share}")
    if negatives not in STRUCTURAL_NEGATIVES:
        raise ValueError(f"negatives must be one of {STRUCTURAL_NEGATIVES}, got {negatives!r}")
    retrieval = retrieval_df.assign(kind="retrieval")
    n_ret = len(retrieval)
    if total_rows is not None and round((1 - share) * total_rows) <= n_ret:
        n_ret = int(round((1 - share) * total_rows))
        n_struct = int(total_rows) - n_ret
    else:
        if total_rows is not None:
            log.warning(
                "only %d retrieval rows for %d rows at share %g: all are used, the run repeats them",
                n_ret,
                total_rows,
                share,
            )
        n_struct = int(round(share * n_ret / (1 - share)))
    # Separate generators: the retrieval prefix does not depend on the share or the structural pool.
    retrieval = retrieval.iloc[np.random.default_rng([seed, 1]).permutation(len(retrieval))[:n_ret]]
    counts = {
        "retrieval": n_ret,
        "structural": n_struct,
        "structural_repeated": 0,
        "share": share,
        "negatives": negatives,
    }
    if n_struct == 0:
        out = retrieval
    else:
        if structural_df.empty:
            raise ValueError("mix_structural: no structural triplets to mix in (run notebook 01)")
        rng = np.random.default_rng([seed, 2])
        pool = len(structural_df)
        idx = rng.permutation(pool)[:n_struct]
        if n_struct > pool:
            counts["structural_repeated"] = n_struct - pool
            idx = np.concatenate([rng.permutation(pool), rng.integers(0, pool, n_struct - pool)])
            log.warning("only %d structural triplets for %d rows: %d repeated", pool, n_struct, n_struct - pool)
        struct = structural_df.iloc[idx]
        if negatives == "random":
            struct = struct.assign(negative=random_other_sentences(struct, structural_df, rng))
        source = struct["family"] if "family" in struct else "structural"
        struct = struct.assign(kind="structural", source=source)[MNRL_COLUMNS + ["source", "kind"]]
        out = pd.concat([retrieval, struct], ignore_index=True)
    out = out.sample(frac=1.0, random_state=seed).reset_index(drop=True)
    counts["total"] = len(out)
    out.attrs["mix"] = counts
    log.info("training mix: %s", counts)
    return out


def random_other_sentences(
    rows: pd.DataFrame, pool_df: pd.DataFrame, rng: np.random.Generator, tries: int = 50
) -> list[str]:
    """For each row, a random anchor of the pool from another source sentence (the control's negative)."""
    anchors = pool_df.anchor.to_numpy()
    owners = (pool_df.source_id if "source_id" in pool_df else pool_df.anchor).to_numpy()
    if len(set(owners)) < 2:
        raise ValueError("the control needs structural rows from at least two source sentences")
    out = []
    for anchor, owner in zip(rows.anchor, rows.source_id if "source_id" in rows else rows.anchor):
        for _ in range(tries):
            j = rng.integers(len(anchors))
            if owners[j] != owner and anchors[j] != anchor:
                break
        else:
            raise RuntimeError(f"no random negative from another sentence for {anchor[:60]!r} in {tries} draws")
        out.append(anchors[j])
    return out


# ---------------------------------------------------------------------------------------------
# Training


def train_model(
    config: TrainConfig, train_df: pd.DataFrame, output_dir=None, force: bool = False, callbacks: list | None = None
) -> Path:
    """Train one run and return its `final/` model folder.

    A run whose DONE.json matches its final/ files (sizes recorded at the end of training) is
    skipped; a truncated marker or model is retrained, from the last checkpoint when there is one.
    A run interrupted after a checkpoint resumes from its last `checkpoint-*`. force=True retrains
    from scratch in a sibling folder and swaps it in only after success, so a failed or killed
    retrain keeps the previous model. Works under `torchrun` (data-parallel): every process trains,
    the main one writes final/, the log and DONE.json.
    """
    out = Path(output_dir) if output_dir is not None else config.run_dir
    missing = [c for c in MNRL_COLUMNS if c not in train_df.columns]
    if missing or train_df.empty:
        raise ValueError(f"train_df needs rows and columns {MNRL_COLUMNS}; missing {missing}, {len(train_df)} rows")
    if force and out.is_dir() and any(out.iterdir()):
        return _retrain_beside(config, train_df, out, callbacks)
    out.mkdir(parents=True, exist_ok=True)
    final, done, started = out / "final", out / "DONE.json", out / "run_config.json"
    identity = {"recipe": recipe_of(config), "data_sha1": data_sha1(train_df)}
    if started.exists():
        # Skipping or resuming a run made with another recipe or other data would report a model
        # that is not the one asked for; say so instead.
        check_same_run(read_run_json(started), identity, out)
        problem = _finished_problem(done, final)
        if problem is None:
            log.info("%s is finished (DONE.json); skipping. Pass force=True to retrain.", out)
            return final
        if done.exists() or final.exists():
            log.warning("%s: %s; training it again (from its last checkpoint when there is one)", out, problem)
            done.unlink(missing_ok=True)

    seed_everything(config.seed)
    resume = last_complete_checkpoint(out) if not force else None
    model = load_encoder(config.backbone, device=config.device, max_seq_length=config.max_seq_length, seed=config.seed)
    describe_model_card(model, config, train_df)
    trainer, timer = build_trainer(model, config, train_df, out, callbacks=callbacks)
    log_path = out / "train_log.jsonl"
    if trainer.is_world_process_zero():
        write_json(started, identity)
        _append_jsonl(
            log_path,
            {
                "event": "resume" if resume else "start",
                "checkpoint": resume,
                "time": _now(),
                "world_size": trainer.args.world_size,
            },
        )
    with quiet_transformers():  # per-checkpoint "Writing model shards" bars; the step bar stays
        trainer.train(resume_from_checkpoint=resume)
    if trainer.is_world_process_zero():
        tmp = out / ".final.partial"
        shutil.rmtree(tmp, ignore_errors=True)
        _drop_training_text(getattr(model, "model_card_data", None))
        with quiet_transformers():
            model.save(str(tmp))
        shutil.rmtree(final, ignore_errors=True)
        os.replace(tmp, final)
        n_triplets = timer.steps * config.batch_size * trainer.args.world_size
        losses = [h["loss"] for h in trainer.state.log_history if "loss" in h]
        write_json(
            done,
            {
                "config": asdict(config),
                "train_rows": len(train_df),
                "resumed_from": resume,
                "final_files": _file_sizes(final),
                "final_sha256": _weight_digests(final),
                "global_step": trainer.state.global_step,
                "world_size": trainer.args.world_size,
                "duration_s": timer.seconds,
                "triplets_per_s": n_triplets / timer.seconds if timer.seconds else None,
                "final_loss": losses[-1] if losses else None,
                "finished_at": _now(),
                "versions": _versions(),
            },
        )
        if not config.keep_checkpoints:
            for ckpt in out.glob("checkpoint-*"):
                shutil.rmtree(ckpt, ignore_errors=True)
        log.info(
            "%s: %d steps in %.0f s (%.1f triplets/s)",
            out,
            trainer.state.global_step,
            timer.seconds,
            n_triplets / max(timer.seconds, 1e-9),
        )
    trainer.accelerator.wait_for_everyone()
    return final


# What a checkpoint needs for `Trainer.train(resume_from_checkpoint=...)` to continue the same run.
CHECKPOINT_FILES = ("trainer_state.json", "optimizer.pt", "scheduler.pt", "rng_state.pth")
CHECKPOINT_WEIGHTS = ("model.safetensors", "pytorch_model.bin")


def last_complete_checkpoint(out: str | os.PathLike) -> str | None:
    """The newest `checkpoint-<step>` in `out` that holds everything a resume reads (a parseable
    trainer_state.json, the optimizer, scheduler and RNG states, the weights), or None.

    A kill or a full disk while the trainer writes a checkpoint leaves one without some of these;
    transformers' `get_last_checkpoint` would pick it, and every resume would then fail. Such a
    folder is set aside as `incomplete-checkpoint-<step>` (kept, with a warning), so the run resumes
    from the one before it."""
    found = []
    for path in Path(out).glob("checkpoint-*"):
        step = path.name.removeprefix("checkpoint-")
        if path.is_dir() and step.isdigit():
            found.append((int(step), path))
    for _, path in sorted(found, reverse=True):
        problem = _checkpoint_problem(path)
        if problem is None:
            return str(path)
        aside = path.with_name(f"incomplete-{path.name}")
        n = 1
        while aside.exists():
            aside, n = path.with_name(f"incomplete-{path.name}.{n}"), n + 1
        path.rename(aside)
        log.warning("%s: %s; set aside as %s, resuming from the checkpoint before it if any", path, problem, aside.name)
    return None


def _checkpoint_problem(path: Path) -> str | None:
    missing = [name for name in CHECKPOINT_FILES if not (path / name).is_file()]
    if not any((path / name).is_file() for name in CHECKPOINT_WEIGHTS):
        missing.append(" or ".join(CHECKPOINT_WEIGHTS))
    if missing:
        return f"incomplete checkpoint (no {', '.join(missing)})"
    try:
        json.loads((path / "trainer_state.json").read_text())
    except (OSError, ValueError) as err:
        return f"trainer_state.json is unreadable ({type(err).__name__})"
    return None


# What a trained model's card says about each training source (SOURCES.md of the data folder).
SOURCE_CARDS = {
    "nfcorpus": {
        "name": "BEIR NFCorpus, train qrels",
        "id": "BeIR/nfcorpus",
        "licence": "not stated upstream; research evaluation use",
    },
    "scifact": {"name": "BEIR SciFact, train claims", "id": "BeIR/scifact", "licence": "CC BY-NC 2.0"},
    "mrpc": {
        "name": "MRPC (GLUE train), paraphrase pairs",
        "id": "nyu-mll/glue",
        "licence": "Microsoft Research license terms",
    },
    "stsb": {
        "name": "STS Benchmark train, score >= 4",
        "id": "sentence-transformers/stsb",
        "licence": "scores CC BY-SA 4.0; sentences under their sources' licences",
    },
    "nq": {
        "name": "Natural Questions (question, answer passage)",
        "id": "sentence-transformers/natural-questions",
        "licence": "CC BY-SA 3.0",
    },
}


def describe_model_card(model, config: TrainConfig, train_df: pd.DataFrame) -> None:
    """Fill sentence-transformers' model card data of a model about to be trained: base model,
    training sources with their licences, structural families, variant and seed as tags. No
    widget examples: they would copy licence-restricted training text into the card (and the Hub).
    The run's metrics are added by `compsense.retrieval.model_card.add_card_metrics` once it is evaluated."""
    card = getattr(model, "model_card_data", None)
    if card is None:
        return
    kinds = train_df["kind"] if "kind" in train_df else pd.Series("retrieval", index=train_df.index)
    sources = sorted(set(train_df.loc[kinds == "retrieval", "source"])) if "source" in train_df else []
    families = sorted(set(train_df.loc[kinds == "structural", "source"])) if "source" in train_df else []
    card.language = ["en"]
    card.generate_widget_examples = False
    card.local_files_only = hub_problem() is not None  # the card asks the hub about the base model only when it can
    backbone = BACKBONES.get(config.backbone)
    base = backbone.hub_id if backbone is not None and backbone.hub_id else config.backbone
    card.model_name = f"{base} fine-tuned by compsense: Model {config.variant}, seed {config.seed}"
    card.train_datasets = [
        {"name": SOURCE_CARDS.get(s, {}).get("name", s), **({"id": SOURCE_CARDS[s]["id"]} if s in SOURCE_CARDS else {})}
        for s in sources
    ]
    if families:
        card.train_datasets.append({"name": "compsense structural identity triplets (" + ", ".join(families) + ")"})
    card.tags = [
        *card.tags,
        "compsense",
        f"compsense-variant:{config.variant}",
        f"seed:{config.seed}",
        *(f"structural-family:{f}" for f in families),
    ]
    licences = "; ".join(f"{s}: {SOURCE_CARDS[s]['licence']}" for s in sources if s in SOURCE_CARDS)
    card.task_name = (
        f"zero-shot retrieval study (compsense); base model {base}; training data licences: "
        f"{licences or 'see the sources'}"
    )


def _drop_training_text(card) -> None:
    """Keep training text out of the saved card: sentence-transformers' trainer fills the widget,
    the usage snippet and each dataset's "Samples" table from the training rows (whatever generate_widget_examples
    says), which would copy licence-restricted text (NFCorpus, SciFact, MRPC) into the card and,
    with push_to_hub, onto the Hub."""
    if card is None:
        return
    card.widget = []
    card.usage_examples = None  # the usage snippet then shows sentence-transformers' own examples
    if hasattr(card, "usage_examples_display"):
        card.usage_examples_display = None
    for info in [*getattr(card, "train_datasets", []), *getattr(card, "eval_datasets", [])]:
        for key in ("examples", "_example_columns"):
            info.pop(key, None)
        info["examples_table"] = ""


def build_trainer(
    model,
    config: TrainConfig,
    train_df: pd.DataFrame,
    out: Path,
    callbacks: list | None = None,
    sampler: str = "no_duplicates",
):
    """sentence-transformers' Trainer with MNRL, the config's recipe and the timer callback that
    measures this session's steps and seconds.

    `sampler`: "no_duplicates" (notebook 02: no text twice in a batch, where MNRL would read the other
    copy's positive as a negative), or "in_order" (the training-length curve, `compsense.retrieval.length`:
    the rows as given, pre-shuffled, duplicates allowed as in the authors' default sampler; checkpoints
    only when a callback asks for one)."""
    import torch
    from sentence_transformers import SentenceTransformerTrainer, SentenceTransformerTrainingArguments

    losses, BatchSamplers = _st_training_imports()
    gpu = torch.cuda.is_available() and config.device != "cpu"
    bf16 = config.bf16 if config.bf16 is not None else (gpu and torch.cuda.is_bf16_supported())
    fp16 = config.fp16 if config.fp16 is not None else (gpu and not bf16)
    workers = config.dataloader_num_workers
    if workers is None:
        workers = min(8, os.cpu_count() or 1) if gpu else 1
    save_steps = config.save_steps or max(1, math.ceil(config.max_steps / 5))
    if sampler not in ("no_duplicates", "in_order"):
        raise ValueError(f"sampler must be 'no_duplicates' or 'in_order', got {sampler!r}")
    in_order = sampler == "in_order"
    distributed = int(os.environ.get("WORLD_SIZE", "1")) > 1
    args = SentenceTransformerTrainingArguments(
        output_dir=str(out),
        max_steps=config.max_steps,
        per_device_train_batch_size=config.batch_size,
        learning_rate=config.learning_rate,
        weight_decay=config.weight_decay,
        lr_scheduler_type="linear",
        # An integer count: transformers 5 dropped `warmup_ratio` for a float `warmup_steps`.
        warmup_steps=math.ceil(config.warmup_ratio * config.max_steps),
        seed=config.seed,
        data_seed=config.seed,
        fp16=fp16,
        bf16=bf16,
        use_cpu=not gpu,
        batch_sampler=_in_order_batches if in_order else BatchSamplers.NO_DUPLICATES,
        dataloader_num_workers=workers,
        dataloader_persistent_workers=workers > 0,
        dataloader_drop_last=True,  # a short last batch would give MNRL fewer in-batch negatives
        save_strategy="no" if in_order else "steps",
        save_steps=save_steps,
        save_total_limit=config.save_total_limit,
        logging_steps=config.logging_steps,
        logging_first_step=True,
        report_to="none",
        disable_tqdm=False,
        ddp_backend=("gloo" if not gpu else "nccl") if distributed else None,
    )
    dataset = _to_dataset(train_df)
    loss = losses.MultipleNegativesRankingLoss(model, scale=config.scale)
    log_cb, timer = _callbacks(out / "train_log.jsonl")
    trainer = SentenceTransformerTrainer(
        model=model, args=args, train_dataset=dataset, loss=loss, callbacks=[*(callbacks or []), log_cb, timer]
    )
    return trainer, timer


def _in_order_batches(dataset, batch_size: int, drop_last: bool, **_):
    """Batches of consecutive rows in the dataset's order (sentence-transformers calls a callable
    `batch_sampler` with the dataset and the batch settings)."""
    from torch.utils.data import BatchSampler, SequentialSampler

    return BatchSampler(SequentialSampler(dataset), batch_size=batch_size, drop_last=drop_last)


def _to_dataset(train_df: pd.DataFrame):
    """The trainer wants a datasets.Dataset; only the three text columns, in MNRL's order."""
    try:
        from datasets import Dataset
    except ImportError as err:
        raise ImportError(
            "training needs the `datasets` package (pip install datasets); on a machine "
            "without it, carry a wheel or a site-packages folder with it"
        ) from err
    return Dataset.from_pandas(train_df[MNRL_COLUMNS].reset_index(drop=True), preserve_index=False)


def mnrl_library_loss(model, batch: pd.DataFrame, scale: float = TrainConfig.scale) -> float:
    """sentence-transformers' MultipleNegativesRankingLoss on one batch of (anchor, positive, negative)
    rows, in eval mode (no dropout): the number notebook 02's loss written by hand is checked against.
    That loss: each anchor scored against every candidate of the batch (all positives, whose other
    anchors' are in-batch negatives, then all hard negatives), cosine x `scale` as logits, and
    cross-entropy with the anchor's own positive as the answer."""
    import torch

    losses, _ = _st_training_imports()
    model.eval()
    with torch.no_grad():
        prepare = getattr(model, "preprocess", None) or model.tokenize  # ST 6 renamed tokenize
        features = [
            {k: v.to(model.device) if hasattr(v, "to") else v for k, v in prepare(list(col)).items()}
            for col in (batch.anchor, batch.positive, batch.negative)
        ]
        return float(losses.MultipleNegativesRankingLoss(model, scale=scale)(features, labels=None))


def _st_training_imports():
    """Losses and BatchSamplers at their ST >= 6 homes, with the older aliases as fallback."""
    try:
        from sentence_transformers.sentence_transformer import losses
    except ImportError:
        from sentence_transformers import losses
    try:
        from sentence_transformers.sentence_transformer.training_args import BatchSamplers
    except ImportError:
        from sentence_transformers.training_args import BatchSamplers
    return losses, BatchSamplers


def _callbacks(log_path: Path):
    """A callback appending every trainer log (loss, learning rate, epoch) to train_log.jsonl
    (resumed runs append to the same file), and a timer of this session's steps and seconds.
    Defined here so that importing compsense.retrieval.training does not import transformers."""
    from transformers import TrainerCallback

    class JsonlLog(TrainerCallback):
        def on_log(self, args, state, control, logs=None, **kwargs):
            if state.is_world_process_zero and logs:
                _append_jsonl(log_path, {"step": state.global_step, "epoch": state.epoch, "time": _now(), **logs})

    class Timer(TrainerCallback):
        start = seconds = 0.0
        first_step = steps = 0

        def on_train_begin(self, args, state, control, **kwargs):
            self.start, self.first_step = time.perf_counter(), state.global_step

        def on_step_end(self, args, state, control, **kwargs):
            self.seconds = time.perf_counter() - self.start
            self.steps = state.global_step - self.first_step

    return JsonlLog(), Timer()


# Knobs that change what is trained; the rest (paths, workers, logging, checkpoints) do not.
_NOT_RECIPE = {
    "work_dir",
    "device",
    "dataloader_num_workers",
    "save_steps",
    "save_total_limit",
    "logging_steps",
    "keep_checkpoints",
}


def recipe_of(config: TrainConfig) -> dict:
    """The settings that define a training run (what a resumed run must share with the one it resumes)."""
    return {k: v for k, v in asdict(config).items() if k not in _NOT_RECIPE}


def data_sha1(train_df: pd.DataFrame) -> str:
    """A content digest of the training rows (their MNRL columns, in order): a run's data identity."""
    hashed = pd.util.hash_pandas_object(train_df[MNRL_COLUMNS].reset_index(drop=True), index=True)
    return hashlib.sha1(hashed.to_numpy().tobytes()).hexdigest()


def check_same_run(previous: dict, current: dict, out: Path) -> None:
    """Refuse to resume a run folder whose recipe or data differ from this run's, naming each difference."""
    old, new = previous.get("recipe", {}), current["recipe"]
    diff = {k: (old.get(k), new.get(k)) for k in sorted(set(old) | set(new)) if old.get(k) != new.get(k)}
    if previous.get("data_sha1") != current["data_sha1"]:
        diff["training data"] = ("other rows", "these rows")
    if diff:
        changes = ", ".join(f"{k}: {a!r} -> {b!r}" for k, (a, b) in diff.items())
        raise ValueError(
            f"{out} holds a run with a different setup ({changes}). Pass force=True to retrain "
            f"it (for one run of the stage: {run_stage('02', setting='training_ab.force=true')}, an experiment "
            "that retrains every model of the stage), move the folder aside to keep it, or use another work_dir "
            "to keep both"
        )


def _retrain_beside(config: TrainConfig, train_df: pd.DataFrame, out: Path, callbacks) -> Path:
    """force=True on a folder that holds a run: train from scratch in `.<name>.retrain` beside it,
    then swap the folders (the old one is kept as `.<name>.previous` until the new one is in place).
    A retrain killed part-way resumes in the sibling folder on the next forced call."""
    sibling, previous = out.parent / f".{out.name}.retrain", out.parent / f".{out.name}.previous"
    started = sibling / "run_config.json"
    if started.exists():
        try:
            check_same_run(
                read_run_json(started), {"recipe": recipe_of(config), "data_sha1": data_sha1(train_df)}, sibling
            )
        except ValueError:
            shutil.rmtree(sibling)  # a stale retrain of another setup: only ever our own scratch folder
    train_model(config, train_df, output_dir=sibling, force=False, callbacks=callbacks)
    if os.environ.get("RANK", "0") == "0":
        shutil.rmtree(previous, ignore_errors=True)
        os.replace(out, previous)
        os.replace(sibling, out)
        shutil.rmtree(previous, ignore_errors=True)
    return out / "final"


def _finished_problem(done: Path, final: Path) -> str | None:
    """None when DONE.json parses and final/ holds the files (and sizes) it recorded; else what is wrong."""
    if not done.exists():
        return "no DONE.json"
    try:
        marker = json.loads(done.read_text(encoding="utf-8"))
    except (json.JSONDecodeError, UnicodeDecodeError):
        return "DONE.json is truncated or corrupt"
    if not final.is_dir():
        return "final/ is missing"
    recorded = marker.get("final_files")
    if recorded is None:  # a marker from before sizes were recorded: the weights must at least exist
        return (
            None if any(final.glob("*.safetensors")) or any(final.glob("**/*.safetensors")) else "final/ has no weights"
        )
    actual = _file_sizes(final)
    wrong = sorted(p for p, size in recorded.items() if actual.get(p) != size)
    if wrong:
        return f"final/ differs from DONE.json ({len(wrong)} file(s), e.g. {wrong[0]})"
    # Same sizes can hide damaged weights (bytes overwritten in place): their digests must match too.
    digests = marker.get("final_sha256") or {}  # absent in markers written before digests were recorded
    actual_digests = _weight_digests(final, only=digests)
    damaged = sorted(p for p, digest in digests.items() if actual_digests.get(p) != digest)
    return f"final/{damaged[0]}: its content differs from the sha256 DONE.json recorded (damaged?)" if damaged else None


def _file_sizes(folder: Path) -> dict[str, int]:
    return {p.relative_to(folder).as_posix(): p.stat().st_size for p in sorted(folder.rglob("*")) if p.is_file()}


# What a finished run's digests cover: the weight files (not the card, README.md, which change).
# One definition, `encoders.weight_digests`, shared with the check every load makes (`check_model_digests`).
_weight_digests = weight_digests


def read_run_json(path: Path) -> dict:
    """A run folder's JSON record; a damaged one is an error that says how to start the run again."""
    return read_json(path, recover=f"delete the run folder {path.parent} to train it again, or pass force=True")


def _append_jsonl(path: Path, record: dict) -> None:
    """One JSON line appended; after a torn last line (a kill mid-write) the record starts a line of its own."""
    torn = path.exists() and path.stat().st_size and not path.read_bytes().endswith(b"\n")
    with open(path, "a", encoding="utf-8") as f:
        f.write(("\n" if torn else "") + json.dumps(record, default=str) + "\n")


def _now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


def _versions() -> dict:
    import sentence_transformers
    import torch
    import transformers

    return {
        "torch": torch.__version__,
        "transformers": transformers.__version__,
        "sentence_transformers": sentence_transformers.__version__,
    }


# ---------------------------------------------------------------------------------------------
# The grid


@dataclass
class RunSpec:
    backbone: str
    variant: str
    seed: int
    structural_share: float | None  # None for the untrained base model
    families: tuple[str, ...] | None = None  # structural families mixed in; None: every family
    structural_negatives: str = "near-miss"  # "random": the control C-identity


# Named variants beyond A and B. Each differs from B in one way, so a difference to B has one cause.
#   B-all:      every family notebook 01 makes (seven), not only the paper's three;
#   C-identity: B's identity rows with random other sentences as negatives: the same dilution of the
#               retrieval rows without the near-miss signal. If C costs as much as B, the cost is dilution.
NAMED_VARIANTS = ("base", "A", "B", "B-all", "C-identity")


def plan_runs(
    backbones,
    seeds,
    variants=("base", "A", "B"),
    structural_share: float = PAPER_STRUCTURAL_SHARE,
    share_sweep=(),
    sweep_seeds=None,
    families=PAPER_FAMILIES,
    sweep_all_seeds=(),
    first_seed_only=(),
) -> list[RunSpec]:
    """The runs of the A/B grid, seed by seed (so a grid cut short has whole seeds): base (once per
    backbone, first seed), the named variants (`NAMED_VARIANTS`; those in `first_seed_only` for the
    first seed only), then the share-sweep points (B with another share, "B-share<s>") for
    `sweep_seeds` (default: the first seed); shares in `sweep_all_seeds` are trained for every seed."""
    seeds = list(seeds)
    unknown = [v for v in [*variants, *first_seed_only] if v not in NAMED_VARIANTS]
    if unknown:
        raise ValueError(f"unknown variant(s) {unknown}; known: {list(NAMED_VARIANTS)} (share points: share_sweep)")
    families = resolve_families(families)
    per_seed = {
        "A": dict(structural_share=0.0, families=families),
        "B": dict(structural_share=float(structural_share), families=families),
        "B-all": dict(structural_share=float(structural_share), families=None),
        "C-identity": dict(structural_share=float(structural_share), families=families, structural_negatives="random"),
    }
    sweep_for = set(sweep_seeds if sweep_seeds is not None else seeds[:1])
    runs = []
    for backbone in backbones:
        if "base" in variants:
            runs.append(RunSpec(backbone, "base", seeds[0], None))
        for seed in seeds:
            named = [v for v in variants if v != "base" and (v not in first_seed_only or seed == seeds[0])]
            runs += [RunSpec(backbone, v, seed, **per_seed[v]) for v in named]
            for share in share_sweep:
                variant = sweep_variant(share, structural_share)
                if (seed in sweep_for or share in sweep_all_seeds) and not any(
                    r.backbone == backbone and r.variant == variant and r.seed == seed for r in runs
                ):
                    runs.append(RunSpec(backbone, variant, seed, float(share), families))
    return runs


def select_structural(structural_df: pd.DataFrame, families) -> pd.DataFrame:
    """The structural rows of `families` (None: all), failing when a family has none."""
    families = resolve_families(families)
    if families is None:
        return structural_df
    missing = sorted(set(families) - set(structural_df.family))
    if missing:
        raise ValueError(
            f"no structural triplets of famil(ies) {missing}; notebook 01 made "
            f"{sorted(structural_df.family.unique())} (check its `families` parameter)"
        )
    return structural_df[structural_df.family.isin(families)].reset_index(drop=True)


def run_grid(
    runs: list[RunSpec],
    retrieval_df: pd.DataFrame,
    structural_df: pd.DataFrame,
    work_dir,
    max_steps=None,
    batch_size=None,
    learning_rate=None,
    weight_decay=None,
    force: bool = False,
    **config_overrides,
) -> pd.DataFrame:
    """Train every run that is not finished yet (None knobs = the backbone's paper recipe) and
    return one row per run: backbone, variant, seed, structural_share, families, model (path or,
    for base, the backbone name), model_stamp (DONE.json's finished_at), status, triplets_per_s,
    the rows it trained on (retrieval_rows, structural_rows) and train_keys, the hashes of its
    training texts (`compsense.retrieval.regime`), rewritten for finished runs too.

    Every run sees max_steps x batch_size triplets (`mix_structural(total_rows=...)`), so variants
    differ only in what those triplets are."""
    from tqdm.auto import tqdm

    rows = []
    for spec in tqdm(runs, desc="train", unit="run"):
        row = asdict(spec)
        row["families"] = "" if not spec.structural_share else ",".join(spec.families) if spec.families else "all"
        if spec.variant == "base":
            rows.append(
                {
                    **row,
                    "model": spec.backbone,
                    "model_stamp": "pretrained",
                    "status": "base",
                    "retrieval_rows": 0,
                    "structural_rows": 0,
                    "train_keys": None,
                }
            )
            continue
        config = TrainConfig.paper(
            spec.backbone,
            spec.variant,
            spec.seed,
            structural_share=spec.structural_share,
            max_steps=max_steps,
            batch_size=batch_size,
            learning_rate=learning_rate,
            weight_decay=weight_decay,
            work_dir=str(work_dir),
            **config_overrides,
        )
        was_done = (config.run_dir / "DONE.json").exists() and not force
        pool = select_structural(structural_df, spec.families) if spec.structural_share else structural_df
        data = mix_structural(
            retrieval_df,
            pool,
            spec.structural_share,
            seed=spec.seed,
            total_rows=config.max_steps * config.batch_size,
            negatives=spec.structural_negatives,
        )
        final = train_model(config, data, force=force)
        keys = write_training_keys(config.run_dir / KEYS_FILE, data)
        done = json.loads((config.run_dir / "DONE.json").read_text())
        mix = data.attrs.get("mix", {})
        rows.append(
            {
                **row,
                "model": str(final),
                "model_stamp": done["finished_at"],
                "status": "skipped (done)" if was_done else "trained",
                "triplets_per_s": done.get("triplets_per_s"),
                "train_rows": done.get("train_rows"),
                "retrieval_rows": mix.get("retrieval"),
                "structural_rows": mix.get("structural"),
                "train_keys": str(keys),
                "mix": mix,
            }
        )
    return pd.DataFrame(rows)


def read_train_logs(runs: pd.DataFrame, work_dir) -> pd.DataFrame:
    """Loss curves of the trained runs: backbone, variant, seed, step, loss, learning_rate."""
    frames = []
    for r in runs[runs.variant != "base"].to_dict("records"):
        path = run_dir(work_dir, r["backbone"], r["variant"], r["seed"]) / "train_log.jsonl"
        if not path.exists():
            continue
        recs = _log_records(path)
        df = pd.DataFrame([x for x in recs if "loss" in x])
        if df.empty:
            continue
        df = df.drop_duplicates("step", keep="last")  # a resumed run re-logs nothing, but be safe
        frames.append(
            df.assign(
                backbone=r["backbone"], variant=r["variant"], seed=r["seed"], structural_share=r["structural_share"]
            )
        )
    cols = ["backbone", "variant", "seed", "structural_share", "step", "loss", "learning_rate"]
    return pd.concat(frames, ignore_index=True)[cols] if frames else pd.DataFrame(columns=cols)


def _log_records(path: Path) -> list[dict]:
    """The records of a train_log.jsonl. A line that is not a JSON record (torn by a kill while it was
    appended; a resumed run then logs on the next line) is left out with a warning naming the file and
    the line: the log records the training, the model and DONE.json do not depend on it."""
    records = []
    for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip():
            continue
        try:
            records.append(json.loads(line))
        except ValueError:
            log.warning("%s, line %d: not a JSON record (torn by a kill while writing?); left out", path, n)
    return records


def push_models(runs: pd.DataFrame, repo_prefix: str, api=None, private: bool = True) -> list[str]:
    """Upload every trained model of `runs` (rows of `run_grid`; base models are skipped) to the
    Hugging Face Hub as `<repo_prefix>-<backbone>-<variant>-seed<seed>`, with the model card the
    training wrote (`describe_model_card`). Opt-in only (the notebooks' `push_to_hub`, default None);
    repositories are private unless told otherwise, since the weights derive from datasets whose
    licences restrict use (see each card). `api`: a `huggingface_hub.HfApi` (a fake in tests).
    Returns the repository ids."""
    if not repo_prefix or "/" not in str(repo_prefix):
        raise ValueError(f"push_to_hub needs '<user or org>/<name prefix>', got {repo_prefix!r}")
    if api is None:
        from huggingface_hub import HfApi

        problem = hub_problem()
        if problem:
            raise RuntimeError(
                f"push_to_hub: {problem}. Fix: on a machine that is online, export HF_HUB_OFFLINE=0; "
                "or leave push_to_hub = None"
            )
        api = HfApi()
    pushed = []
    for r in runs[runs.variant != "base"].to_dict("records"):
        folder = Path(r["model"])
        if not (folder / "modules.json").exists():
            raise FileNotFoundError(f"{folder}: not a saved model; train it first (run_grid)")
        repo_id = f"{repo_prefix}-{r['backbone']}-{r['variant']}-seed{r['seed']}".replace("_", "-")
        api.create_repo(repo_id, private=private, exist_ok=True, repo_type="model")
        api.upload_folder(
            folder_path=str(folder),
            repo_id=repo_id,
            repo_type="model",
            commit_message=f"compsense: {r['backbone']} {r['variant']} seed {r['seed']}",
        )
        pushed.append(repo_id)
    return pushed
