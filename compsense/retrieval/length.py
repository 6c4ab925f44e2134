"""The training-length curve: the authors' MiniLM-L6 schedule, stopped early at chosen steps.

Notebook 02's published regime trains 100 steps at batch 32 (3,200 triplets, 0.74% of the authors'
432,000), with a schedule that ends at step 100. Here the schedule is the authors' own, whole, and a
run stops early: the learning rate at step N is the one their run has at step N, so a model stopped at
step N is their run at step N, and the curve over N says whether a result is the recipe's or the early
regime's.

The recipe (authors' repository radoslavralev/limitations-text-retrieval, `run_experiments.sh`, the
MiniLM-L6 row, as `compsense.core.encoders.BACKBONES["minilm-l6"].recipe` records it): 3,375 steps at
batch 128 (432,000 triplets), lr 1e-4, weight decay 0.001, linear warm-up over 10% of the 3,375 steps
then linear decay to zero at step 3,375, MultipleNegativesRankingLoss at scale 10, length 128, and the
default batch sampler (random rows, duplicates in a batch allowed). Where we differ, and why:

- NFCorpus train pairs stand in for NQ (the hub is unreachable; DESIGN.md), at most
  `LENGTH_PAIRS_PER_QUERY` per query so that the CPU curve's 51,200 triplets repeat no retrieval row
  more than twice (`repeat_counts` measures it);
- fp32 weights on a CPU, with bf16 autocast only where it is faster and evaluates like fp32
  (benchmarks/bench_precision.py; their fp16 needs a GPU);
- the rows are shuffled once, by seed, and read in order (`schedule_rows`), instead of a sampler that
  shuffles at run time. Each batch is still a uniform draw of rows with duplicates allowed, as theirs,
  and the order is fixed in advance, so every stopping point sees a prefix of the same sequence: A, B
  and the control read the same retrieval rows in the same order, the CPU curve and a GPU run to
  step 3,375 read the same first 51,200 rows, and a resumed run continues exactly where it stopped.
"""

from __future__ import annotations

import json
import logging
import math
import os
import shutil
import time
from pathlib import Path

import numpy as np
import pandas as pd

from compsense.core.encoders import load_encoder, weight_digests
from compsense.core.seed import seed_everything
from compsense.core.storage import write_json
from compsense.retrieval.training import (
    MNRL_COLUMNS,
    TrainConfig,
    build_trainer,
    check_same_run,
    data_sha1,
    last_complete_checkpoint,
    random_other_sentences,
    read_run_json,
    recipe_of,
)

log = logging.getLogger(__name__)

SCHEDULE_STEPS = 3375  # the authors' MiniLM-L6 steps (run_experiments.sh): the schedule's length
CURVE_STEPS = (25, 50, 100, 200, 400)  # the CPU curve: 3,200 to 51,200 triplets at batch 128
LENGTH_PAIRS_PER_QUERY = 16  # NFCorpus train: 29,534 distinct pairs over 2,576 queries (SciFact's dropped)
# variant -> (structural share, structural negatives, structural positives); the share is the authors' 19%
LENGTH_VARIANTS = {
    "A": (0.0, "near-miss", "anchor"),
    "B": (0.19, "near-miss", "anchor"),
    "C": (0.19, "random", "anchor"),  # the control: B's identity rows with a random other sentence as the negative
    # Not the paper's: the anchor's paraphrase (MRPC label 1 / STS-B >= 4 train partner) as the positive
    # instead of the anchor itself, so the structural rows teach "a rewording beats a near-miss", the
    # contrast the near-miss tests ask about, not "a copy beats a near-copy" (issue 50, item 3). Its pool
    # is the paper-family triplets whose anchor has such a partner (`length_run.paraphrase_pool`).
    "B-para": (0.19, "near-miss", "paraphrase"),
}
# A run's identity covers the rows every stop reads (the first exported step's, at batch 128): the rows
# are a prefix-stable stream, so any change of pool, seed, share or order changes these. A piece builds
# only the rows up to its last step (51,200 rows, not the schedule's 432,000: those take ~13 GB in a
# process), and a later piece's longer stream extends the same prefix.
IDENTITY_ROWS = CURVE_STEPS[0] * 128
STEPS_DIR = "steps"  # <run>/steps/step-<N>/: the SentenceTransformer model at step N, kept for evaluation


def schedule_config(variant: str, seed: int, work_dir, bf16: bool = False, backbone: str = "minilm-l6") -> TrainConfig:
    """The authors' whole schedule (`TrainConfig.paper`: batch 128, length 128, scale 10, warm-up 10%)
    with its 3,375 steps, whatever step a run stops at."""
    if variant not in LENGTH_VARIANTS:
        raise ValueError(f"unknown length variant {variant!r}; choose from {sorted(LENGTH_VARIANTS)}")
    share = LENGTH_VARIANTS[variant][0]
    return TrainConfig.paper(
        backbone,
        f"length-{variant}",
        seed,
        structural_share=share,
        max_steps=SCHEDULE_STEPS,
        bf16=bf16,
        fp16=False,
        keep_checkpoints=True,
        logging_steps=5,  # the loss at each exported step is the mean over its last 5 steps
        work_dir=str(work_dir),
    )


def schedule_rows(
    retrieval_df: pd.DataFrame,
    structural_df: pd.DataFrame,
    share: float,
    seed: int,
    n_rows: int,
    negatives: str = "near-miss",
) -> pd.DataFrame:
    """`n_rows` training rows in the order a run reads them (step k reads rows (k-1)*B .. k*B - 1).

    Each row is structural with probability `share` (one seeded draw per position, the same for B and
    the control); the retrieval rows are passes over `retrieval_df`, each pass a fresh seeded
    permutation, and the structural rows likewise over `structural_df`, so no row repeats before every
    row of its pool has been read. Every stream is drawn position by position, so the first k rows do
    not depend on `n_rows`: a longer schedule extends a shorter one. `negatives="random"` (the control)
    replaces each structural negative by a random other sentence of the pool, drawn pass by pass.
    The result's `source` names the retrieval source or the family; `kind` is retrieval/structural."""
    if not 0 <= share < 1:
        raise ValueError(f"structural share must be in [0, 1), got {share}")
    if n_rows < 1:
        raise ValueError(f"n_rows must be at least 1, got {n_rows}")
    structural = np.random.default_rng([seed, 0]).random(n_rows) < share
    n_struct = int(structural.sum())
    if retrieval_df.empty and n_struct < n_rows:
        raise ValueError("schedule_rows: no retrieval rows")
    ret = _passes(retrieval_df, n_rows - n_struct, [seed, 1])
    ret = ret.assign(kind="retrieval", source=ret["source"] if "source" in ret else "retrieval")
    parts = [ret[MNRL_COLUMNS + ["source", "kind"]]]
    if n_struct:
        if structural_df.empty:
            raise ValueError("schedule_rows: a structural share needs structural triplets (run notebook 01)")
        st = _passes(structural_df, n_struct, [seed, 2])
        if negatives == "random":
            rng = np.random.default_rng([seed, 3])
            st = st.assign(negative=random_other_sentences(st, structural_df, rng))
        elif negatives != "near-miss":
            raise ValueError(f"negatives must be 'near-miss' or 'random', got {negatives!r}")
        st = st.assign(kind="structural", source=st["family"] if "family" in st else "structural")
        parts.append(st[MNRL_COLUMNS + ["source", "kind"]])
    order = np.empty(n_rows, dtype=np.int64)
    order[~structural] = np.arange(n_rows - n_struct)
    order[structural] = np.arange(n_struct) + (n_rows - n_struct)
    out = pd.concat(parts, ignore_index=True).iloc[order].reset_index(drop=True)
    out.attrs["mix"] = {"retrieval": n_rows - n_struct, "structural": n_struct, "share": share, "negatives": negatives}
    return out


def _passes(pool: pd.DataFrame, n: int, seed) -> pd.DataFrame:
    """n rows of `pool`: whole seeded permutations one after another (pass p from rng([*seed, p]))."""
    if n == 0:
        return pool.iloc[:0].copy()
    idx, p = [], 0
    while sum(map(len, idx)) < n:
        idx.append(np.random.default_rng([*seed, p]).permutation(len(pool)))
        p += 1
    out = pool.iloc[np.concatenate(idx)[:n]].copy()
    out["pass"] = np.repeat(np.arange(p), len(pool))[:n]
    return out.reset_index(drop=True)


def repeat_counts(rows: pd.DataFrame, upto: int) -> dict:
    """How often the first `upto` rows repeat a row, by kind: distinct rows, the most and the mean
    number of times one is read (the issue's 'no retrieval row more than about twice')."""
    head = rows.iloc[:upto]
    out = {"rows": int(len(head))}
    for kind, part in head.groupby("kind"):
        counts = part.groupby(MNRL_COLUMNS[:2] if kind == "retrieval" else MNRL_COLUMNS, sort=False).size()
        out[kind] = {
            "rows": int(len(part)),
            "distinct": int(len(counts)),
            "max_reads": int(counts.max()),
            "mean_reads": round(float(counts.mean()), 3),
        }
    return out


# ---------------------------------------------------------------------------------------------
# Training to chosen steps


def step_dir(run: str | os.PathLike, step: int) -> Path:
    return Path(run) / STEPS_DIR / f"step-{step:05d}"


def finished_steps(run: str | os.PathLike) -> dict[int, Path]:
    """Steps whose model was exported whole (its STEP.json written last), newest last."""
    found = {}
    for path in sorted((Path(run) / STEPS_DIR).glob("step-*")):
        if (path / "STEP.json").exists():
            found[int(path.name.split("-")[1])] = path
    return dict(sorted(found.items()))


CHECKPOINT_EVERY = 25  # a resumable checkpoint between exported steps: a killed piece loses at most 25 steps


def train_to_steps(
    config: TrainConfig, rows: pd.DataFrame, steps, out=None, checkpoint_every: int = CHECKPOINT_EVERY
) -> dict[int, Path]:
    """Train `config` (its max_steps is the schedule's length) on `rows` read in order, and export
    the model at every step of `steps` to `<run>/steps/step-<N>/`; the run stops at max(steps).

    A later call with more steps resumes from the last checkpoint (the trainer restores optimizer,
    scheduler and RNG and skips the batches already read), so pieces of the curve can run in
    different sessions. A run folder made with another recipe or other rows is refused."""
    steps = sorted({int(s) for s in steps})
    if not steps or steps[0] < 1 or steps[-1] > config.max_steps:
        raise ValueError(f"steps must lie in 1..{config.max_steps}, got {steps}")
    if len(rows) < steps[-1] * config.batch_size:
        raise ValueError(f"{len(rows)} rows are fewer than {steps[-1]} steps x batch {config.batch_size} read")
    out = Path(out) if out is not None else config.run_dir
    out.mkdir(parents=True, exist_ok=True)
    done = finished_steps(out)
    todo = [s for s in steps if s not in done]
    if not todo:
        return {s: done[s] for s in steps}
    identity = {"recipe": recipe_of(config), "data_sha1": data_sha1(rows.iloc[: min(len(rows), IDENTITY_ROWS)])}
    rows = rows.iloc[: steps[-1] * config.batch_size]  # what this piece reads; the trainer stops there
    started = out / "run_config.json"
    if started.exists():
        check_same_run(read_run_json(started), identity, out)
    resume = last_complete_checkpoint(out)
    if resume is not None and int(Path(resume).name.split("-")[1]) >= todo[-1]:
        raise ValueError(f"{out}: its last checkpoint ({resume}) is past step {todo[-1]}; export it or start anew")

    seed_everything(config.seed)
    model = load_encoder(config.backbone, device=config.device, max_seq_length=config.max_seq_length, seed=config.seed)
    trainer, timer = build_trainer(
        model, config, rows, out, callbacks=[_StepExport(out, set(todo), checkpoint_every)], sampler="in_order"
    )
    write_json(started, identity)
    t0 = time.perf_counter()
    trainer.train(resume_from_checkpoint=resume)
    log.info("%s: to step %d in %.0f s", out, trainer.state.global_step, time.perf_counter() - t0)
    done = finished_steps(out)
    missing = [s for s in steps if s not in done]
    if missing:
        raise RuntimeError(f"{out}: steps {missing} were not exported (the run stopped at {trainer.state.global_step})")
    return {s: done[s] for s in steps}


def _make_step_export():
    from transformers import TrainerCallback  # noqa: PLC0415 - transformers on first use, as in training.py

    class StepExport(TrainerCallback):
        """At each chosen step: ask for a checkpoint (what a later piece resumes from), copy its
        model files to steps/step-<N>/ with a STEP.json (the step's loss, lr, seconds, weight
        digests) written last, and stop the run at the last chosen step."""

        def __init__(self, out: Path, steps: set[int], checkpoint_every: int):
            self.out, self.steps, self.t0, self.step0 = out, steps, None, None
            self.every = checkpoint_every

        def on_train_begin(self, args, state, control, **kwargs):
            self.t0, self.step0 = time.perf_counter(), state.global_step

        def on_step_end(self, args, state, control, **kwargs):
            if self.every and state.global_step % self.every == 0:
                control.should_save = True  # resumable, not exported (the trainer keeps the newest two)
            if state.global_step in self.steps:
                control.should_save = True
                if state.global_step >= max(self.steps):
                    control.should_training_stop = True
            return control

        def on_save(self, args, state, control, **kwargs):
            step = state.global_step
            if step not in self.steps or not state.is_world_process_zero:
                return
            ckpt = self.out / f"checkpoint-{step}"
            target, tmp = step_dir(self.out, step), step_dir(self.out, step).with_suffix(".partial")
            shutil.rmtree(tmp, ignore_errors=True)
            shutil.copytree(
                ckpt,
                tmp,
                ignore=shutil.ignore_patterns(
                    "optimizer.pt", "scheduler.pt", "rng_state*", "trainer_state.json", "training_args.bin"
                ),
            )
            logs = [h for h in state.log_history if "loss" in h]
            record = {
                "step": step,
                "triplets": step * args.per_device_train_batch_size * args.world_size,
                "loss": logs[-1]["loss"] if logs else None,
                "loss_step": logs[-1]["step"] if logs else None,
                "learning_rate": logs[-1].get("learning_rate") if logs else None,
                "session_seconds": time.perf_counter() - self.t0,
                "session_steps": step - self.step0,
                "bf16": bool(args.bf16),
                "weights_sha256": weight_digests(tmp),
            }
            (tmp / "STEP.json").write_text(json.dumps(record, indent=2) + "\n")
            shutil.rmtree(target, ignore_errors=True)
            os.replace(tmp, target)

    return StepExport


def _StepExport(out: Path, steps: set[int], checkpoint_every: int = 0):  # noqa: N802 - made lazily (transformers)
    return _make_step_export()(out, steps, checkpoint_every)


def loss_curve(run: str | os.PathLike) -> pd.DataFrame:
    """The run's logged training loss by step (train_log.jsonl; a resumed run logs on in the same file)."""
    path = Path(run) / "train_log.jsonl"
    records = []
    for line in path.read_text(encoding="utf-8").splitlines() if path.exists() else []:
        try:
            rec = json.loads(line)
        except json.JSONDecodeError:
            continue
        if "loss" in rec and "step" in rec:
            records.append({"step": rec["step"], "loss": rec["loss"], "learning_rate": rec.get("learning_rate")})
    return pd.DataFrame(records, columns=["step", "loss", "learning_rate"]).drop_duplicates("step", keep="last")


def lr_at(step: int, peak: float = 1e-4, total: int = SCHEDULE_STEPS, warmup_ratio: float = 0.1) -> float:
    """The authors' schedule's learning rate after `step` steps (transformers' linear schedule with
    ceil(10% of 3,375) = 338 warm-up steps): what a stopped run's last step used."""
    warm = math.ceil(warmup_ratio * total)
    if step < warm:
        return peak * step / max(1, warm)
    return peak * max(0.0, (total - step) / max(1, total - warm))
