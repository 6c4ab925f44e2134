"""fp32 against bf16 autocast for one Model A/B training step on this machine's CPU, side by side.

The training-length curve (compsense.retrieval.length) trains MiniLM-L6 at the authors' batch 128; whether
bf16 autocast pays depends on the CPU (DESIGN.md: 0.99x on an EPYC with avx512_bf16, 4.8x slower on a
CPU without native bf16; AMX tiles may change that). This runs the same MNRL step (forward, backward,
AdamW) on the same real NFCorpus triplets in both precisions, interleaved, after a warm-up, and prints
the ratio. It also reports how far the bf16 loss is from the fp32 loss on identical weights and batch.

    HF_HUB_OFFLINE=1 python benchmarks/bench_precision.py --steps 6 --batch-size 128
Never a timed test.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import platform
import statistics
import sys
import time
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))


def _cpu_flags() -> list[str]:
    try:
        text = Path("/proc/cpuinfo").read_text()
    except OSError:
        return []
    flags = next((ln.split(":", 1)[1].split() for ln in text.splitlines() if ln.startswith("flags")), [])
    return sorted(f for f in flags if f.startswith(("amx", "avx512_bf16", "avx512f")))


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--model", default="minilm-l6")
    p.add_argument("--batch-size", type=int, default=128)
    p.add_argument("--steps", type=int, default=6, help="timed steps per precision (interleaved)")
    p.add_argument("--warmup", type=int, default=1)
    p.add_argument("--data", choices=["offline", "synthetic"], default="offline")
    p.add_argument("--out", default=None)
    args = p.parse_args(argv)

    import torch

    from benchmarks.bench_training import offline_triplets, synthetic_triplets
    from compsense.core.encoders import load_encoder
    from compsense.retrieval.training import _st_training_imports

    losses, _ = _st_training_imports()
    n = args.batch_size * (args.steps + args.warmup)
    df = offline_triplets(n) if args.data == "offline" else synthetic_triplets(n)
    model = load_encoder(args.model, device="cpu", max_seq_length=128, seed=0)
    loss_fn = losses.MultipleNegativesRankingLoss(model, scale=10.0)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4, weight_decay=0.001)
    prepare = getattr(model, "preprocess", None) or model.tokenize

    def features(rows):
        return [dict(prepare(list(rows[c]))) for c in ("anchor", "positive", "negative")]

    def step(rows, bf16: bool) -> tuple[float, float]:
        model.train()
        ctx = torch.autocast("cpu", dtype=torch.bfloat16) if bf16 else contextlib.nullcontext()
        t0 = time.perf_counter()
        with ctx:
            loss = loss_fn(features(rows), labels=None)
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)
        return time.perf_counter() - t0, float(loss)

    # Loss agreement on identical weights and batch, no update (eval mode: no dropout)
    batch0 = df.iloc[: args.batch_size]
    model.eval()
    with torch.no_grad():
        l32 = float(loss_fn(features(batch0), labels=None))
        with torch.autocast("cpu", dtype=torch.bfloat16):
            l16 = float(loss_fn(features(batch0), labels=None))
    times = {"fp32": [], "bf16": []}
    for i in range(args.warmup + args.steps):
        rows = df.iloc[i * args.batch_size : (i + 1) * args.batch_size]
        for name in ("fp32", "bf16") if i % 2 == 0 else ("bf16", "fp32"):
            seconds, _ = step(rows, name == "bf16")
            if i >= args.warmup:
                times[name].append(seconds)
    med = {k: statistics.median(v) for k, v in times.items()}
    result = {
        "model": args.model,
        "batch_size": args.batch_size,
        "steps": args.steps,
        "threads": torch.get_num_threads(),
        "cpu": platform.processor() or platform.machine(),
        "cpu_flags": _cpu_flags(),
        "torch": torch.__version__,
        "seconds_per_step": med,
        "triplets_per_s": {k: args.batch_size / v for k, v in med.items()},
        "bf16_speedup": med["fp32"] / med["bf16"],
        "eval_loss": {"fp32": l32, "bf16": l16, "abs_diff": abs(l32 - l16)},
    }
    print(json.dumps(result, indent=2))
    if args.out:
        Path(args.out).write_text(json.dumps(result, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
