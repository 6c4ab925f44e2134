"""How many trainings share one GPU: aggregate triplets/s with 1, 2, 4 and 8 trainings at once.

Each training is its own process (`python benchmarks/bench_concurrency.py --worker`), started
together, running compsense's training path (`compsense.retrieval.training.train_model`, as
benchmarks/bench_training.py's `run_compsense` calls it: no-duplicates sampler, data-loader
workers chosen for the device, bf16 on a GPU that has it) on the same synthetic triplets, for a
fixed number of steps; the steps after `--warmup` are timed, CUDA synchronised. Processes, not
threads or CUDA streams, because that is how a researcher runs several seeds at once (one
`reproduce` or notebook per shell) and each keeps its own CUDA context.

The aggregate is conservative: all timed triplets over the union of the timed windows (first
start to last end, on the machine's monotonic clock, which all processes share), so a process
that starts its window late lowers it rather than inflating it. Per-process rates are kept too.

Run (a GPU machine, with the bundle's MiniLM-L6; minilm-l6-random --arch-dir DIR needs no weights):
    python benchmarks/bench_concurrency.py --procs 1,2,4,8 --model minilm-l6 --batch-size 128 --out c.json
On a CPU, small (what scripts/gpu_run.sh's GPU_RUN_SMOKE=1 check runs; the hub stays offline):
    python benchmarks/bench_concurrency.py --procs 1,2 --model tiny-bert --batch-size 8 --steps 6 --warmup 2
Prints one table (markdown) and, with --out, writes the figures as JSON. Never a timed test.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
sys.path.insert(0, str(HERE))


def worker(args) -> dict:
    """One training: warm-up steps, then `steps - warmup` timed steps; its window on the shared clock."""
    import bench_training as bt
    import torch

    from compsense.core.encoders import quiet_transformers

    gpu = torch.cuda.is_available() and args.device != "cpu"
    args.device = args.device or ("cuda" if gpu else "cpu")
    bf16 = gpu and torch.cuda.is_bf16_supported()
    df = bt.synthetic_triplets(args.rows, args.seed)
    model_dir = tempfile.mkdtemp(prefix="bench-conc-model-")
    with quiet_transformers():
        bt.build_model(args.model, args.arch_dir, args.seed).save(model_dir)
    window = bt.step_timer(args.warmup)  # its window on the machine's monotonic clock
    bt.run_compsense(model_dir, df, args, {"bf16": bf16, "fp16": gpu and not bf16}, timer=window)
    if window.t0 is None or window.t1 is None:
        raise RuntimeError(f"no timed window: {args.steps} steps with {args.warmup} of warm-up")
    return {
        "t0": window.t0,
        "t1": window.t1,
        "steps": window.steps,
        "triplets": window.steps * args.batch_size,
        "triplets_per_s": window.steps * args.batch_size / (window.t1 - window.t0),
        "peak_memory_gib": torch.cuda.max_memory_allocated() / 2**30 if gpu else None,
    }


def aggregate(results: list[dict]) -> dict:
    """All timed triplets over the union of the windows; the per-process rates beside it."""
    start, end = min(r["t0"] for r in results), max(r["t1"] for r in results)
    total = sum(r["triplets"] for r in results)
    overlap = max(0.0, min(r["t1"] for r in results) - max(r["t0"] for r in results))
    return {
        "procs": len(results),
        "aggregate_triplets_per_s": total / (end - start),
        "per_process_triplets_per_s": [r["triplets_per_s"] for r in results],
        "union_window_s": end - start,
        "overlap_share": overlap / (end - start),  # how much of the union every process was timing at once
        "peak_memory_gib": max((r["peak_memory_gib"] or 0.0) for r in results) or None,
    }


def run_level(n: int, args) -> dict:
    """Start `n` worker processes together and wait for all of them; a failed worker fails the level."""
    with tempfile.TemporaryDirectory() as tmp:
        procs, outs = [], []
        for i in range(n):
            out = Path(tmp) / f"w{i}.json"
            cmd = [
                sys.executable,
                str(Path(__file__).resolve()),
                "--worker",
                "--out",
                str(out),
                "--seed",
                str(args.seed + i),
                *_shared_flags(args),
            ]
            procs.append(subprocess.Popen(cmd))
            outs.append(out)
        codes = [p.wait() for p in procs]
        if any(codes):
            raise RuntimeError(f"{n} trainings at once: worker exit codes {codes}")
        return aggregate([json.loads(o.read_text()) for o in outs])


def _shared_flags(args) -> list[str]:
    flags = [
        "--model",
        args.model,
        "--batch-size",
        str(args.batch_size),
        "--steps",
        str(args.steps),
        "--warmup",
        str(args.warmup),
        "--max-seq-length",
        str(args.max_seq_length),
        "--rows",
        str(args.rows),
    ]
    if args.arch_dir:
        flags += ["--arch-dir", args.arch_dir]
    if args.device:
        flags += ["--device", args.device]
    return flags


def table(levels: list[dict], meta: dict) -> str:
    """The markdown table benchmarks/README.md holds: aggregate rate and its gain over one training."""
    one = levels[0]["aggregate_triplets_per_s"] if levels and levels[0]["procs"] == 1 else None
    lines = [
        f"{meta['model']} on {meta['device']}, batch {meta['batch_size']}, max length {meta['max_seq_length']}, "
        f"{meta['precision']}, {meta['steps'] - meta['warmup']} timed steps per training after {meta['warmup']}",
        "",
        "| trainings at once | aggregate triplets/s | x one training | per training, triplets/s | timed together |",
        "|---|---|---|---|---|",
    ]
    for lv in levels:
        per = lv["per_process_triplets_per_s"]
        gain = f"{lv['aggregate_triplets_per_s'] / one:.2f}" if one else "n/a"
        lines.append(
            f"| {lv['procs']} | {lv['aggregate_triplets_per_s']:,.0f} | {gain} | "
            f"{min(per):,.0f}-{max(per):,.0f} | {lv['overlap_share']:.0%} |"
        )
    return "\n".join(lines)


def main(argv=None) -> dict | None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--procs", default="1,2,4,8", help="comma-separated numbers of trainings at once")
    p.add_argument("--model", default="tiny-bert", help="tiny-bert, minilm-l6, or minilm-l6-random")
    p.add_argument("--arch-dir", default=None, help="config + tokenizer folder for minilm-l6-random")
    p.add_argument("--batch-size", type=int, default=128)
    p.add_argument("--steps", type=int, default=60, help="steps per training, warm-up included")
    p.add_argument("--warmup", type=int, default=15, help="steps not timed (start-up, compilation, allocator)")
    p.add_argument("--max-seq-length", type=int, default=128)
    p.add_argument("--rows", type=int, default=12000, help="synthetic triplets per training (more than it uses)")
    p.add_argument("--device", default=None)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--out", default=None, help="write the figures here as JSON")
    p.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.steps <= args.warmup:
        p.error("--steps must exceed --warmup")
    if args.worker:
        result = worker(args)
        Path(args.out).write_text(json.dumps(result))
        return None

    import torch

    gpu = torch.cuda.is_available() and args.device != "cpu"
    bf16 = gpu and torch.cuda.is_bf16_supported()
    meta = {
        "model": args.model,
        "device": torch.cuda.get_device_name() if gpu else f"cpu ({os.cpu_count()} cores)",
        "cpu_cores": os.cpu_count(),
        "batch_size": args.batch_size,
        "max_seq_length": args.max_seq_length,
        "steps": args.steps,
        "warmup": args.warmup,
        "precision": "bf16" if bf16 else ("fp16" if gpu else "fp32"),
        "torch": torch.__version__,
        "python": sys.version.split()[0],
    }
    levels = []
    for n in [int(x) for x in args.procs.split(",") if x.strip()]:
        t = time.monotonic()
        levels.append(run_level(n, args))
        levels[-1]["level_wall_s"] = time.monotonic() - t
        print(f"{n} at once: {levels[-1]['aggregate_triplets_per_s']:,.1f} triplets/s", flush=True)
    result = {**meta, "levels": levels, "table": table(levels, meta)}
    print("\n" + result["table"])
    if args.out:
        tmp = Path(args.out).with_suffix(".tmp")
        tmp.write_text(json.dumps(result, indent=1) + "\n")
        os.replace(tmp, args.out)
    return result


if __name__ == "__main__":
    main()
