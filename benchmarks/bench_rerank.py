"""Reranking cost: corpus encoding rate, first-stage and per-verifier rerank ms per query at each K,
and the size of the corpus token cache, with the path notebook 05 uses (`compsense.verifiers.rerank`).

Verifiers are untrained (their speed does not depend on their weights); the corpus is a SciFact
test subsample (queries, their relevant documents and distractors), and the per-document numbers
extrapolate to the full corpus (5,183 documents). Nothing is cached on disk: every run encodes.

    export HF_HUB_OFFLINE=1
    python benchmarks/bench_rerank.py --model tiny-bert --queries 20 --docs 300
    python benchmarks/bench_rerank.py --model minilm-l6 --queries 30 --docs 400 --ks 10 20 50 100
    python benchmarks/bench_rerank.py --model minilm-l6 --device cuda --queries 50 --docs 2000 --dtype float16
"""

from __future__ import annotations

import argparse
import os
import time

os.environ.setdefault("HF_HUB_OFFLINE", "1")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", default="tiny-bert")
    parser.add_argument("--device", default=None)
    parser.add_argument("--queries", type=int, default=20)
    parser.add_argument("--docs", type=int, default=300, help="distractor documents beside the relevant ones")
    parser.add_argument("--ks", type=int, nargs="+", default=[10, 20, 50, 100])
    parser.add_argument("--verifiers", nargs="+", default=["F0", "F1", "F2", "F3", "F4"])
    parser.add_argument("--dtype", default="float16")
    parser.add_argument("--max-seq-length", type=int, default=128)
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--candidate-batch", type=int, default=256)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--threads", type=int, default=None, help="torch CPU threads (default: torch's)")
    parser.add_argument("--full-corpus", type=int, default=5183, help="documents to extrapolate the cache size to")
    args = parser.parse_args()

    import pandas as pd
    import torch

    from compsense.core.encoders import load_encoder
    from compsense.retrieval.harness import load_eval_datasets
    from compsense.verifiers import architectures as V
    from compsense.verifiers import rerank as R

    if args.threads:
        torch.set_num_threads(args.threads)
    encoder = load_encoder(args.model, device=args.device, max_seq_length=args.max_seq_length)
    ds = load_eval_datasets(["scifact"], max_queries=args.queries, extra_docs=args.docs, seed=0)[0]
    queries = {q: ds.queries[q] for q in ds.qrels}
    start = time.perf_counter()
    reranker = R.Reranker(
        encoder,
        ds.corpus,
        None,
        batch_size=args.batch_size,
        candidate_batch=args.candidate_batch,
        device=args.device,
        dtype=args.dtype,
    )
    pooled_s = time.perf_counter() - start
    start = time.perf_counter()
    tokens = reranker.corpus_tokens()
    tokens_s = time.perf_counter() - start
    n_docs = len(reranker)
    print(
        f"{args.model} on {reranker.device}, {ds.name}: {len(queries)} queries, {n_docs} documents, "
        f"torch threads {torch.get_num_threads()}"
    )
    full_min = args.full_corpus * (pooled_s + tokens_s) / n_docs / 60
    print(
        f"corpus encoding: pooled {n_docs / pooled_s:.1f} docs/s, tokens {n_docs / tokens_s:.1f} docs/s "
        f"(full corpus of {args.full_corpus:,}: ~{full_min:.1f} min per encoder)"
    )
    per_doc = tokens.megabytes / n_docs
    print(
        f"token cache ({args.dtype}): {tokens.megabytes:.1f} MB, {tokens.values.shape[0] / n_docs:.0f} tokens/doc; "
        f"full corpus ~{per_doc * args.full_corpus:,.0f} MB per encoder"
    )

    rows = [
        {
            "method": "first stage",
            "k": max(args.ks),
            "ms_per_query": R.time_first_stage(reranker, queries, max(args.ks), args.repeats),
        }
    ]
    for name in args.verifiers:
        verifier = V.create(name, seed=0).eval()
        if args.device:
            verifier.to(args.device)
        for k in args.ks:
            rows.append(
                {"method": name, "k": k, "ms_per_query": R.time_rerank(reranker, verifier, queries, k, args.repeats)}
            )
    table = pd.DataFrame(rows).pivot_table(index="method", columns="k", values="ms_per_query", sort=False)
    table = table[sorted(table.columns)]
    first = table.loc["first stage", max(args.ks)]
    ratio = (table.drop(index="first stage") / first).round(1)
    table.columns = [f"ms/query @K={k}" for k in table.columns]
    print(table.round(2).to_string())
    ratio.columns = [f"x first stage @K={k}" for k in ratio.columns]
    print(
        f"\nreranking cost as a multiple of the first stage (exact pooled top-{max(args.ks)}, "
        f"{first:.2f} ms/query), measured in this run:"
    )
    print(ratio.to_string())


if __name__ == "__main__":
    main()
