"""Near-miss analysis under pooled cosine and any scorer: the metrics (one definition each, `metrics`),
pooled geometry (Figure 1, `geometry`) and the near-miss test sets with positives (`evaluation`).
Builds on core, data and retrieval."""
