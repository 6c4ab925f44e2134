"""Near-miss analysis under pooled cosine and any scorer: metrics (one definition each), geometry (Figure 1) and the near-miss evaluation sets. Builds on core, data and retrieval."""
