"""Training throughput, triplets/s: compsense's `train_model` path against plain sentence-transformers.

Plain sentence-transformers is run with the paper authors' settings: one data-loader worker and the
default batch sampler. compsense's path is `compsense.retrieval.training.train_model` as the notebooks call it
(no-duplicates sampler, data-loader workers chosen for the device). Both train the same model
(same initial weights) on the same triplets with MultipleNegativesRankingLoss (scale 10), the same
batch size, length limit, learning-rate schedule and precision, interleaved, and are timed over
the steps after a warm-up, with no checkpoint written inside the timed window.

Run (CPU, small):
    HF_HUB_OFFLINE=1 python benchmarks/bench_training.py --model tiny-bert --batch-size 32 --steps 40
    HF_HUB_OFFLINE=1 python benchmarks/bench_training.py --model minilm-l6 --batch-size 32 --steps 12 --warmup 3
On a GPU (the MiniLM-L6 architecture with random weights: throughput does not depend on the weights):
    python benchmarks/bench_training.py --model minilm-l6-random --arch-dir DIR --batch-size 128 --steps 60
where DIR holds all-MiniLM-L6-v2's config and tokenizer files (no weights needed).
Prints one table and, with --out, writes the figures as JSON. Never a timed test.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import platform
import statistics
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

TINY_CORPUS = Path(__file__).resolve().parents[1] / "compsense" / "resources" / "tiny_corpus.txt"


def synthetic_triplets(n: int, seed: int = 0) -> pd.DataFrame:
    """Query-like anchors (one sentence) and passage-like positives (1-8 sentences, many past 128
    tokens, as retrieval passages are); the negative is another row's positive. Unique texts."""
    lines = [ln.strip() for ln in TINY_CORPUS.read_text().splitlines() if ln.strip()]
    rng = np.random.default_rng(seed)
    anchors = [f"{lines[rng.integers(len(lines))]} (case {i})" for i in range(n)]
    positives = [
        " ".join(lines[j] for j in rng.integers(len(lines), size=rng.integers(1, 9))) + f" [{i}]" for i in range(n)
    ]
    return pd.DataFrame({"anchor": anchors, "positive": positives, "negative": positives[1:] + positives[:1]})


def offline_triplets(n: int, seed: int = 0) -> pd.DataFrame:
    from compsense.retrieval.training import build_retrieval_triplets

    df, _ = build_retrieval_triplets(max_rows=n, seed=seed)
    return df


def build_model(name: str, arch_dir: str | None, seed: int):
    """The benchmark model. `minilm-l6-random`: MiniLM-L6's architecture and tokenizer, random weights."""
    from compsense.core.encoders import _st_modules, load_encoder, quiet_transformers

    if name != "minilm-l6-random":
        return load_encoder(name, seed=seed)
    import torch
    from sentence_transformers import SentenceTransformer
    from transformers import AutoConfig, AutoModel, AutoTokenizer

    if arch_dir is None:
        from compsense.core.encoders import BACKBONES, _package_model_dir

        arch_dir = _package_model_dir(BACKBONES["minilm-l6"])
        if arch_dir is None:
            raise SystemExit("minilm-l6-random needs --arch-dir (a folder with MiniLM-L6's config and tokenizer)")
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        bert = AutoModel.from_config(AutoConfig.from_pretrained(arch_dir))
    tmp = tempfile.mkdtemp(prefix="bench-minilm-")
    with quiet_transformers():
        AutoTokenizer.from_pretrained(arch_dir).save_pretrained(tmp)
        bert.save_pretrained(tmp)
        Transformer, Pooling = _st_modules()
        word = Transformer(tmp, max_seq_length=128)
    dim = (
        word.get_embedding_dimension()
        if hasattr(word, "get_embedding_dimension")
        else word.get_word_embedding_dimension()
    )
    return SentenceTransformer(modules=[word, Pooling(dim, pooling_mode="mean")])


def step_timer(warmup: int):
    """A callback timing the steps after `warmup` (CUDA synchronised, so the GPU's work is counted)."""
    import torch
    from transformers import TrainerCallback

    class StepTimer(TrainerCallback):
        t0 = t1 = None
        steps = 0

        def on_step_end(self, args, state, control, **kwargs):
            if torch.cuda.is_available():
                torch.cuda.synchronize()
            now = time.monotonic()  # CLOCK_MONOTONIC: one clock for all processes (bench_concurrency.py)
            if state.global_step == warmup:
                self.t0 = now
            elif state.global_step > warmup:
                self.t1, self.steps = now, state.global_step - warmup

    return StepTimer()


def run_plain(model_dir: str, df: pd.DataFrame, args, precision: dict) -> float:
    """Plain sentence-transformers, the authors' settings: 1 worker, default batch sampler."""
    from sentence_transformers import (
        SentenceTransformer,
        SentenceTransformerTrainer,
        SentenceTransformerTrainingArguments,
    )

    from compsense.retrieval.training import _st_training_imports, _to_dataset

    losses, _ = _st_training_imports()
    model = SentenceTransformer(model_dir, device=args.device)
    model.max_seq_length = args.max_seq_length
    timer = step_timer(args.warmup)
    with tempfile.TemporaryDirectory() as out:
        targs = SentenceTransformerTrainingArguments(
            output_dir=out,
            max_steps=args.steps,
            per_device_train_batch_size=args.batch_size,
            learning_rate=1e-4,
            warmup_steps=math.ceil(0.1 * args.steps),
            lr_scheduler_type="linear",
            seed=args.seed,
            dataloader_num_workers=1,
            save_strategy="no",
            report_to="none",
            logging_steps=10,
            disable_tqdm=True,
            use_cpu=args.device == "cpu",
            **precision,
        )
        trainer = SentenceTransformerTrainer(
            model=model,
            args=targs,
            train_dataset=_to_dataset(df),
            loss=losses.MultipleNegativesRankingLoss(model, scale=10.0),
            callbacks=[timer],
        )
        trainer.train()
    return timer.steps * args.batch_size / (timer.t1 - timer.t0)


def run_compsense(model_dir: str, df: pd.DataFrame, args, precision: dict, timer=None) -> float:
    """compsense.retrieval.training.train_model, as the notebooks call it (checkpoints outside the timed
    window). `timer`: a `step_timer` whose window the caller reads (bench_concurrency.py), else a new one."""
    from compsense.retrieval.training import TrainConfig, train_model

    timer = timer or step_timer(args.warmup)
    with tempfile.TemporaryDirectory() as out:
        config = TrainConfig(
            backbone=model_dir,
            variant="bench",
            seed=args.seed,
            max_steps=args.steps,
            batch_size=args.batch_size,
            max_seq_length=args.max_seq_length,
            learning_rate=1e-4,
            save_steps=args.steps + 1,
            logging_steps=10,
            work_dir=out,
            device=args.device,
            fp16=precision["fp16"],
            bf16=precision["bf16"],
        )
        train_model(config, df, output_dir=Path(out) / "run", callbacks=[timer])
    return timer.steps * args.batch_size / (timer.t1 - timer.t0)


def main(argv=None) -> dict:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--model", default="tiny-bert", help="tiny-bert, minilm-l6, or minilm-l6-random")
    p.add_argument("--arch-dir", default=None, help="config + tokenizer folder for minilm-l6-random")
    p.add_argument("--batch-size", type=int, default=32)
    p.add_argument("--steps", type=int, default=40, help="total steps per run (warm-up included)")
    p.add_argument("--warmup", type=int, default=5, help="steps not timed")
    p.add_argument("--max-seq-length", type=int, default=128)
    p.add_argument("--rows", type=int, default=4000)
    p.add_argument("--data", choices=["synthetic", "offline"], default="synthetic")
    p.add_argument("--repeats", type=int, default=1, help="interleaved runs of each path; the median is reported")
    p.add_argument("--device", default=None)
    p.add_argument(
        "--threads",
        type=int,
        default=None,
        help="torch threads (default: torch's); 1 avoids OpenMP spin-waits on a busy machine",
    )
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--out", default=None, help="write the figures here as JSON")
    args = p.parse_args(argv)
    if args.steps <= args.warmup:
        p.error("--steps must exceed --warmup")

    import torch

    from compsense.core.encoders import quiet_transformers

    if args.threads:
        torch.set_num_threads(args.threads)
    gpu = torch.cuda.is_available() and args.device != "cpu"
    args.device = args.device or ("cuda" if gpu else "cpu")
    bf16 = gpu and torch.cuda.is_bf16_supported()
    precision = {"bf16": bf16, "fp16": gpu and not bf16}
    df = (
        synthetic_triplets(args.rows, args.seed) if args.data == "synthetic" else offline_triplets(args.rows, args.seed)
    )
    model_dir = tempfile.mkdtemp(prefix="bench-model-")
    with quiet_transformers():
        build_model(args.model, args.arch_dir, args.seed).save(model_dir)

    plain, ours = [], []
    for _ in range(args.repeats):
        plain.append(run_plain(model_dir, df, args, precision))
        ours.append(run_compsense(model_dir, df, args, precision))
    result = {
        "model": args.model,
        "device": torch.cuda.get_device_name() if gpu else f"cpu ({os.cpu_count()} cores)",
        "torch_threads": torch.get_num_threads(),
        "batch_size": args.batch_size,
        "steps_timed": args.steps - args.warmup,
        "max_seq_length": args.max_seq_length,
        "data": args.data,
        "precision": "bf16" if bf16 else ("fp16" if precision["fp16"] else "fp32"),
        "repeats": args.repeats,
        "plain_st_triplets_per_s": statistics.median(plain),
        "compsense_triplets_per_s": statistics.median(ours),
        "plain_runs": plain,
        "compsense_runs": ours,
        "python": platform.python_version(),
        "torch": torch.__version__,
    }
    result["ratio"] = result["compsense_triplets_per_s"] / result["plain_st_triplets_per_s"]
    import sentence_transformers
    import transformers

    result["sentence_transformers"], result["transformers"] = (
        sentence_transformers.__version__,
        transformers.__version__,
    )
    print(
        f"\n{args.model} on {result['device']}, batch {args.batch_size}, {result['steps_timed']} timed steps, "
        f"{result['precision']}"
    )
    print(
        "  plain sentence-transformers (1 worker, default sampler): "
        f"{result['plain_st_triplets_per_s']:8.1f} triplets/s"
    )
    print(
        f"  compsense train_model:                                 {result['compsense_triplets_per_s']:8.1f} triplets/s"
    )
    print(f"  ratio compsense / plain: {result['ratio']:.2f}x")
    if args.out:
        Path(args.out).write_text(json.dumps(result, indent=2) + "\n")
    return result


if __name__ == "__main__":
    main()
