"""compsense: does training a dense retriever for compositional sensitivity cost it generalization,
and can verifiers over token-token similarity maps give the sensitivity back without the cost?

A thin helper package for the numbered notebooks in notebooks/. Submodules are imported lazily:
`import compsense` must stay cheap (sentence-transformers alone costs ~10 s per process).
"""

from __future__ import annotations

# Importing compsense changes nothing in the environment: the command line (`python -m compsense`,
# `compsense.__main__.offline_defaults`) and the Makefile choose offline mode, and the library asks
# the hub only after a fast reachability check (`compsense.core.encoders.hub_reachable`).

__version__ = "0.1.0"
