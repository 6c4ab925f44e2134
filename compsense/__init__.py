"""compsense: does training a dense retriever for compositional sensitivity cost it generalization,
and can verifiers over token-token similarity maps give the sensitivity back without the cost?

A thin helper package for the numbered notebooks in notebooks/. Submodules are imported lazily:
`import compsense` must stay cheap (sentence-transformers alone costs ~10 s per process).
"""

from __future__ import annotations

import os

# The Hugging Face hub is often unreachable where this runs; a failed lookup hangs ~70 s.
# Users who are online can export HF_HUB_OFFLINE=0 before importing compsense.
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

__version__ = "0.1.0"
