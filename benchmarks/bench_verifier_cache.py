"""A frozen-verifier training epoch with cached token embeddings vs re-encoding every step.

Both paths train the same verifier (same initial weights, same batches, same loss and optimizer)
for one epoch over the same triplets with the encoder frozen; they differ only in where the token
embeddings come from: `TokenCache` (computed once, read back from disk) or a forward pass over the
batch's 3 x batch texts at every step. Runs are interleaved and repeated; the cache is built once,
outside the timed epochs, and its build time is reported beside them.

Run (from the repo root):
    export HF_HUB_OFFLINE=1
    python benchmarks/bench_verifier_cache.py --model minilm-l6 --verifiers F2,F3,F4 --triplets 256 --threads 1
    python benchmarks/bench_verifier_cache.py --model tiny-bert --verifiers F2,F3,F4 --triplets 256 --threads 1
    python benchmarks/bench_verifier_cache.py ... --in-batch-negatives -1   # all-pairs MNRL, B x 2B maps a step
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import torch  # noqa: E402

from compsense.core.encoders import load_encoder  # noqa: E402
from compsense.verifiers import architectures as V  # noqa: E402
from compsense.verifiers.simmap import TokenCache, encode_tokens  # noqa: E402
from compsense.verifiers.training import contrastive_loss  # noqa: E402

CORPUS = Path(__file__).resolve().parent.parent / "compsense" / "resources" / "tiny_corpus.txt"


def synthetic_triplets(n: int) -> list[tuple[str, str, str]]:
    """Identity triplets with a crude negation as the negative; each anchor made unique."""
    sentences = [s.strip() for s in CORPUS.read_text(encoding="utf-8").splitlines() if s.strip()]
    rows = []
    for i in range(n):
        s = f"{sentences[i % len(sentences)].rstrip('.')} (case {i})."
        words = s.split()
        rows.append((s, s, " ".join(words[:2] + ["not"] + words[2:])))
    return rows


def epoch(verifier, batches, source, in_batch_negatives, temperature=0.1, lr=1e-3) -> float:
    """Seconds for one epoch; `source(texts)` gives a TokenBatch."""
    generator = torch.Generator().manual_seed(0)
    optimizer = torch.optim.AdamW([p for p in verifier.parameters() if p.requires_grad], lr=lr)
    verifier.train()
    start = time.perf_counter()
    for batch in batches:
        a, p, n = map(list, zip(*batch))
        q, cands = source(a), source(p + n)
        loss, _ = contrastive_loss(
            verifier, q, cands, p, p + n, temperature, in_batch_negatives=in_batch_negatives, generator=generator
        )
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="minilm-l6")
    parser.add_argument("--verifiers", default="F2,F3,F4")
    parser.add_argument("--size", default="small", choices=V.SIZES, help="F3/F4 size: ours or the authors'")
    parser.add_argument("--triplets", type=int, default=256)
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--max-seq-length", type=int, default=128)
    parser.add_argument(
        "--in-batch-negatives",
        type=int,
        default=4,
        help="in-batch negatives per anchor, as training's default; -1: all (B x 2B maps)",
    )
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--threads", type=int, default=None, help="torch threads (1 on a busy CPU)")
    parser.add_argument("--device", default=None)
    parser.add_argument("--out", default=None, help="also write the figures as JSON here")
    args = parser.parse_args()
    if args.threads:
        torch.set_num_threads(args.threads)

    negatives = None if args.in_batch_negatives < 0 else args.in_batch_negatives
    names = [V.canonical_name(n) for n in args.verifiers.split(",")]

    def make(name, seed=None):
        # F2 is timed with its lam and tau learnable (the authors', and our default, fix them: nothing to train).
        extra = {"learnable": True} if name == "F2" else {}
        return V.create(
            name,
            seed=seed,
            size=args.size,
            **extra,
            **V.sized_kwargs(name, args.size, encoder_dim, args.max_seq_length),
        )

    free = [n for n in names if n in ("F0", "F1")]  # parameter-free at any size
    if free:
        parser.error(f"{free} have no parameters: frozen training skips them, there is no epoch to time")

    encoder = load_encoder(args.model, device=args.device, max_seq_length=args.max_seq_length, seed=0)
    encoder.eval()
    for p in encoder.parameters():
        p.requires_grad_(False)
    device = encoder.device
    getter = getattr(encoder, "get_embedding_dimension", None) or encoder.get_sentence_embedding_dimension
    encoder_dim = getter()
    triplets = synthetic_triplets(args.triplets)
    batches = [triplets[i : i + args.batch_size] for i in range(0, len(triplets), args.batch_size)]
    texts = sorted({t for row in triplets for t in row})

    with tempfile.TemporaryDirectory() as cache_dir:
        start = time.perf_counter()
        TokenCache(encoder, texts, cache_dir, batch_size=64, device=device, show_progress=False)
        build = time.perf_counter() - start
        cache = TokenCache(encoder, texts, cache_dir, show_progress=False)  # read back from disk, as training does
        assert cache.encoded == 0

        def cached(batch_texts):
            return cache.lookup(batch_texts, device)

        def re_encoded(batch_texts):
            with torch.no_grad():
                return encode_tokens(encoder, batch_texts, device=device)

        results = []
        for name in names:
            times = {"cached": [], "re-encoded": []}
            for _ in range(args.repeats):
                for label, source in (("cached", cached), ("re-encoded", re_encoded)):
                    verifier = make(name, seed=0).to(device)
                    times[label].append(epoch(verifier, batches, source, negatives))
            row = {
                "verifier": name,
                "size": args.size,
                "parameters": V.n_parameters(make(name)),
                "cached_s": statistics.median(times["cached"]),
                "re_encoded_s": statistics.median(times["re-encoded"]),
                "runs": times,
            }
            row["ratio"] = row["re_encoded_s"] / row["cached_s"]
            results.append(row)
            print(
                f"{name}: epoch of {len(triplets)} triplets: cached {row['cached_s']:.2f} s, "
                f"re-encoded {row['re_encoded_s']:.2f} s -> {row['ratio']:.1f}x",
                flush=True,
            )

    print(
        f"\ncache build (once, {len(texts)} texts): {build:.2f} s; model {args.model}, batch {args.batch_size}, "
        f"in-batch negatives {'all' if negatives is None else negatives}, device {device}, "
        f"torch {torch.__version__}, threads {torch.get_num_threads()}"
    )
    print("| verifier | parameters | re-encoding every step | cached | ratio |")
    print("| --- | --- | --- | --- | --- |")
    for r in results:
        print(
            f"| {r['verifier']} | {r['parameters']:,} | {r['re_encoded_s']:.2f} s | {r['cached_s']:.2f} s "
            f"| **{r['ratio']:.1f}x** |"
        )
    if args.out:
        summary = {"args": vars(args), "cache_build_s": build, "results": results}
        Path(args.out).write_text(json.dumps(summary, indent=2))


if __name__ == "__main__":
    main()
