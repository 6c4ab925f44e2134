"""Pooled-space geometry: how close minimal meaning-changing edits sit under pooled cosine.

`pair_cosines` scores (text, text) pairs under any encoder (Base, Model A, Model B, a checkpoint);
`separation_auc` asks how well those cosines tell paraphrases from near-misses.
"""
from __future__ import annotations

from typing import Sequence

import numpy as np


def embed(encoder, texts: Sequence[str], batch_size: int = 64, show_progress: bool = False) -> np.ndarray:
    """L2-normalized pooled embeddings, one row per text."""
    return encoder.encode(list(texts), batch_size=batch_size, normalize_embeddings=True,
                          convert_to_numpy=True, show_progress_bar=show_progress)


def pair_cosines(encoder, pairs: Sequence[tuple[str, str]], batch_size: int = 64,
                 show_progress: bool = False) -> np.ndarray:
    """Pooled cosine of each (a, b) pair; every distinct text is encoded once."""
    if len(pairs) == 0:
        return np.zeros(0, dtype=np.float32)
    texts = sorted({t for pair in pairs for t in pair})
    index = {t: i for i, t in enumerate(texts)}
    emb = embed(encoder, texts, batch_size=batch_size, show_progress=show_progress)
    a = emb[[index[p[0]] for p in pairs]]
    b = emb[[index[p[1]] for p in pairs]]
    return np.sum(a * b, axis=1)


def cosine_matrix(encoder, texts: Sequence[str]) -> np.ndarray:
    emb = embed(encoder, texts)
    return emb @ emb.T


def separation_auc(positive_scores, near_miss_scores) -> float:
    """ROC-AUC of telling positives (should score high) from near-misses (should score low).

    0.5 means pooled cosine cannot tell them apart; 1.0 means every positive outscores every near-miss.
    """
    from sklearn.metrics import roc_auc_score

    pos, neg = np.asarray(positive_scores, float), np.asarray(near_miss_scores, float)
    if len(pos) == 0 or len(neg) == 0:
        raise ValueError("separation_auc needs at least one positive and one near-miss score")
    labels = np.r_[np.ones(len(pos)), np.zeros(len(neg))]
    return float(roc_auc_score(labels, np.r_[pos, neg]))
