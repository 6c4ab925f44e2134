"""The authors' F3/F4 sizes against ours: milliseconds per similarity map, forward + backward, side by side.

Each verifier (F3, F4 at `small` and `paper` size) scores the same batch of maps and back-propagates a
sum of the scores, one thread, the runs of all four interleaved and repeated; the table gives the
median ms per map and the paper / small ratio of each verifier. The maps are random cosines of
sentence-length pairs (token counts drawn from `--min-len`..`--max-len`, default 10..40, as MRPC
sentences under MiniLM's tokenizer); the paper-size verifiers put every map on the authors' fixed
128 x 128 canvas. The paper-size F4 runs only the batch's patch box (its `crop`; the same scores in
eval mode); it is also timed on the whole canvas (`crop = False`, the code before), side by side.

Why it matters: notebook 04 trains `budget_examples` triplets, each anchor scoring its positive, its
hard negative and `in_batch_negatives` other candidates: 2,048 x 6 = 12,288 maps forward and backward
per verifier and seed, then scores ~6,000 pairs per set. Multiply by the ms per map below for the time
a size costs on this machine.

Run (from the repo root):
    python benchmarks/bench_verifier_sizes.py --threads 1 --maps 48 --repeats 3
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import torch  # noqa: E402

from compsense.verifiers import architectures as V  # noqa: E402


def maps(n: int, min_len: int, max_len: int, seed: int = 0):
    """n random cosine maps of sentence-length pairs, padded to the longest (masks mark the tokens)."""
    g = torch.Generator().manual_seed(seed)
    q_len = torch.randint(min_len, max_len + 1, (n,), generator=g)
    d_len = torch.randint(min_len, max_len + 1, (n,), generator=g)
    width = int(max(q_len.max(), d_len.max()))
    M = torch.rand(n, width, width, generator=g) * 2 - 1
    q_mask = torch.arange(width)[None, :] < q_len[:, None]
    d_mask = torch.arange(width)[None, :] < d_len[:, None]
    return M, q_mask, d_mask


def ms_per_map(verifier, batch) -> float:
    M, q_mask, d_mask = batch
    verifier.zero_grad(set_to_none=True)
    start = time.perf_counter()
    verifier(M, q_mask, d_mask).sum().backward()
    return 1000 * (time.perf_counter() - start) / len(M)


def main(argv=None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--maps", type=int, default=48, help="maps per timed batch")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--min-len", type=int, default=10)
    parser.add_argument("--max-len", type=int, default=40)
    parser.add_argument("--dim", type=int, default=384, help="the encoder's dimension (paper F4's width)")
    parser.add_argument("--verifiers", default="F3,F4", help="comma-separated: F3, F4 (F3 paper is slow)")
    parser.add_argument("--out", help="write the table as JSON here")
    args = parser.parse_args(argv)
    torch.set_num_threads(args.threads)
    batch = maps(args.maps, args.min_len, args.max_len)
    names = [n.strip() for n in args.verifiers.split(",") if n.strip()]
    verifiers = {}
    for name in names:
        for size in ("small", "paper"):
            kwargs = V.sized_kwargs(name, size, encoder_dim=args.dim, max_seq_length=128)
            verifiers[(name, size)] = V.create(name, seed=0, size=size, **kwargs).train()
        if name == "F4":  # the authors' F4 on the whole canvas: the same weights, crop off
            whole = V.create(name, seed=0, size="paper", **V.sized_kwargs(name, "paper", args.dim, 128)).train()
            whole.crop = False
            verifiers[(name, "canvas")] = whole
    for verifier in verifiers.values():  # warm-up: allocator and kernels outside the timing
        ms_per_map(verifier, batch)
    times = {key: [] for key in verifiers}
    for _ in range(args.repeats):  # interleaved: a slow moment of the machine hits every verifier
        for key, verifier in verifiers.items():
            times[key].append(ms_per_map(verifier, batch))
    rows = []
    for name in names:
        small, paper = (statistics.median(times[(name, s)]) for s in ("small", "paper"))
        canvas = statistics.median(times[(name, "canvas")]) if (name, "canvas") in times else None
        rows.append(
            {
                "verifier": name,
                "small_parameters": V.n_parameters(verifiers[(name, "small")]),
                "paper_parameters": V.n_parameters(verifiers[(name, "paper")]),
                "small_ms_per_map": round(small, 3),
                "paper_ms_per_map": round(paper, 3),
                "ratio": round(paper / small, 1),
                "paper_whole_canvas_ms_per_map": None if canvas is None else round(canvas, 3),
                "crop_speedup": None if canvas is None else round(canvas / paper, 1),
            }
        )
    print(f"{args.maps} maps, {args.min_len}-{args.max_len} tokens, {args.threads} thread(s), median of {args.repeats}")
    print(
        "| verifier | parameters small / paper | ms per map small | ms per map paper | paper / small "
        "| ms per map paper, whole canvas | whole canvas / patch box |"
    )
    print("| --- | --- | --- | --- | --- | --- | --- |")
    for r in rows:
        canvas = "–" if r["paper_whole_canvas_ms_per_map"] is None else r["paper_whole_canvas_ms_per_map"]
        speedup = "–" if r["crop_speedup"] is None else f"{r['crop_speedup']}x"
        print(
            f"| {r['verifier']} | {r['small_parameters']:,} / {r['paper_parameters']:,} | {r['small_ms_per_map']} "
            f"| {r['paper_ms_per_map']} | {r['ratio']}x | {canvas} | {speedup} |"
        )
    result = {"settings": vars(args), "rows": rows, "torch": torch.__version__}
    if args.out:
        Path(args.out).write_text(json.dumps(result, indent=1))
    return result


if __name__ == "__main__":
    main()
