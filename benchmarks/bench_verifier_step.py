"""One end-to-end verifier training step, phase by phase: every text encoded vs each distinct text once.

The step is `compsense.verifiers.training.train_verifier`'s end-to-end step: encode the batch's
texts with gradients, build the maps and score them (`contrastive_loss`), backward through
verifier and encoder, AdamW on both. Two paths, interleaved on the same weights and batches:

    every     the batch's anchors, positives and negatives encoded as they come (3 x B texts: the
              code before `encode_distinct`)
    distinct  `training.encode_distinct`: each distinct text once (identity triplets: 2 x B)

Timed per phase (encode, loss = maps + verifier forward, backward, optimizer step), the median over
the timed steps after a warm-up. Data: identity triplets as notebook 01 writes them (positive =
anchor), synthetic sentences of `compsense/resources/tiny_corpus.txt` so it runs anywhere.

Run (from the repo root):
    export HF_HUB_OFFLINE=1
    python benchmarks/bench_verifier_step.py --model minilm-l6 --verifiers F1,F3,F4 --steps 4 --threads 1
"""

from __future__ import annotations

import argparse
import copy
import json
import os
import statistics
import sys
import time
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import torch  # noqa: E402

from compsense.core.encoders import load_encoder  # noqa: E402
from compsense.verifiers import architectures as V  # noqa: E402
from compsense.verifiers.simmap import encode_tokens  # noqa: E402
from compsense.verifiers.training import contrastive_loss, encode_distinct  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_verifier_cache import synthetic_triplets  # noqa: E402


def encode_every(encoder, queries, candidates, include_special):
    tokens = encode_tokens(encoder, list(queries) + list(candidates), include_special)
    b = len(queries)
    return tokens.select(range(b)), tokens.select(range(b, b + len(candidates))), b + len(candidates)


PATHS = {"every": encode_every, "distinct": encode_distinct}


def step_phases(verifier, encoder, optimizer, batch, encode, generator, in_batch_negatives) -> dict:
    a, p, n = map(list, zip(*batch))
    t0 = time.perf_counter()
    q, cands, encoded = encode(encoder, a, p + n, verifier.include_special)
    t1 = time.perf_counter()
    loss, _ = contrastive_loss(verifier, q, cands, p, p + n, 0.1, in_batch_negatives, generator)
    t2 = time.perf_counter()
    optimizer.zero_grad(set_to_none=True)
    loss.backward()
    t3 = time.perf_counter()
    optimizer.step()
    t4 = time.perf_counter()
    return {"encode": t1 - t0, "loss": t2 - t1, "backward": t3 - t2, "optimizer": t4 - t3, "texts": encoded}


def run(args) -> list[dict]:
    torch.set_num_threads(args.threads)
    base = load_encoder(args.model)
    base.max_seq_length = 128
    rows = synthetic_triplets(args.batch_size * (args.steps + args.warmup))
    batches = [rows[i : i + args.batch_size] for i in range(0, len(rows), args.batch_size)]
    out = []
    for name in args.verifiers.split(","):
        for path in ("every", "distinct"):
            torch.manual_seed(0)
            verifier = V.create(name, seed=0)
            encoder = copy.deepcopy(base)
            encoder.train()
            params = [{"params": list(encoder.parameters()), "lr": 2e-5}]
            if any(p.requires_grad for p in verifier.parameters()):
                params.append({"params": [p for p in verifier.parameters() if p.requires_grad], "lr": 1e-3})
            optimizer = torch.optim.AdamW(params)
            generator = torch.Generator().manual_seed(0)
            verifier.train()
            phases = [
                step_phases(verifier, encoder, optimizer, b, PATHS[path], generator, args.in_batch_negatives)
                for b in batches
            ][args.warmup :]
            med = {k: statistics.median(p[k] for p in phases) for k in ("encode", "loss", "backward", "optimizer")}
            out.append({"verifier": name, "path": path, "texts": phases[0]["texts"], **med, "step": sum(med.values())})
            print(json.dumps(out[-1]), flush=True)
    return out


def table(results: list[dict]) -> str:
    lines = [
        "| verifier | path | texts encoded a step | encode s | loss s | backward s | optimizer s | step s"
        " | every / distinct |",
        "| --- | --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    by = {(r["verifier"], r["path"]): r for r in results}
    for r in results:
        ratio = by[(r["verifier"], "every")]["step"] / r["step"] if r["path"] == "distinct" else 1.0
        lines.append(
            f"| {r['verifier']} | {r['path']} | {r['texts']} | {r['encode']:.2f} | {r['loss']:.2f} | "
            f"{r['backward']:.2f} | {r['optimizer']:.2f} | {r['step']:.2f} | {ratio:.2f}x |"
        )
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--model", default="tiny-bert")
    parser.add_argument("--verifiers", default="F1,F3,F4")
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--steps", type=int, default=4)
    parser.add_argument("--warmup", type=int, default=1)
    parser.add_argument("--in-batch-negatives", type=int, default=4)
    parser.add_argument("--threads", type=int, default=1)
    args = parser.parse_args()
    print(table(run(args)))


if __name__ == "__main__":
    main()
