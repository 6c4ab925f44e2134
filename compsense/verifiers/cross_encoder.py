"""A trained verifier with the shape of a sentence-transformers `CrossEncoder`.

Researchers rerank with `CrossEncoder.predict(pairs)` and `CrossEncoder.rank(query, documents)` and
evaluate with sentence-transformers' `CrossEncoderRerankingEvaluator`. `VerifierReranker` gives an
encoder + map verifier (F0..F4) that interface, so a verifier drops into their code unchanged.
It is not a `CrossEncoder` subclass: a verifier scores a token-token similarity map of two separately
encoded texts, not a jointly encoded pair, so none of CrossEncoder's model code applies.

Saved as a folder: `verifier.json` + `verifier.safetensors` (`compsense.verifiers.architectures.save`), the encoder
as a SentenceTransformer folder in `encoder/`, and `reranker.json` (settings and evaluation metrics).
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import numpy as np
import torch

from compsense.core.encoders import load_encoder, weight_digests
from compsense.core.storage import write_json
from compsense.verifiers import architectures as V
from compsense.verifiers.architectures import ENCODER_DIR

RERANKER_FILE = "reranker.json"


class EvaluationRecord:
    """What sentence-transformers' evaluators write into `model.model_card_data`."""

    def __init__(self):
        self.eval_results: list[dict] = []

    def set_evaluation_metrics(self, evaluator, metrics: dict, epoch: int = 0, step: int = 0) -> None:
        self.eval_results.append(
            {
                "evaluator": type(evaluator).__name__,
                "epoch": epoch,
                "step": step,
                "metrics": {
                    k: (float(v) if isinstance(v, (int, float, np.floating)) else str(v)) for k, v in metrics.items()
                },
            }
        )


class VerifierReranker:
    """`predict`, `rank`, `save_pretrained` and `from_pretrained` over an encoder and a verifier."""

    def __init__(self, encoder, verifier: V.Verifier, batch_size: int = 64, device=None, cache_dir=None):
        self.encoder, self.verifier = encoder, verifier.eval()
        self.batch_size, self.device, self.cache_dir = batch_size, device, cache_dir
        self.model_card_data = EvaluationRecord()

    def predict(
        self,
        sentences,
        batch_size: int | None = None,
        show_progress_bar: bool = False,
        convert_to_numpy: bool = True,
        convert_to_tensor: bool = False,
        **unused,
    ) -> np.ndarray:
        """Scores of (query, document) pairs, higher = more relevant; one pair gives one score.
        Extra CrossEncoder arguments (`prompt_name`, `activation_fn`, ...) have no meaning for a
        map verifier and are ignored."""
        single = (
            isinstance(sentences, (tuple, list)) and len(sentences) == 2 and all(isinstance(s, str) for s in sentences)
        )
        pairs = [tuple(sentences)] if single else [tuple(p) for p in sentences]
        scores = V.score_pairs(
            self.encoder,
            self.verifier,
            pairs,
            batch_size=batch_size or self.batch_size,
            cache_dir=self.cache_dir,
            device=self.device,
            show_progress=show_progress_bar,
        )
        if convert_to_tensor:
            return torch.as_tensor(scores)
        return scores[0] if single else scores

    def rank(
        self,
        query: str,
        documents: list[str],
        top_k: int | None = None,
        return_documents: bool = False,
        batch_size: int | None = None,
        show_progress_bar: bool = False,
        **unused,
    ) -> list[dict]:
        """`documents` sorted by score, as CrossEncoder.rank: dicts with corpus_id, score (and text)."""
        if isinstance(documents, str):
            raise TypeError("documents must be a list of texts, not one string")
        scores = self.predict(
            [(query, d) for d in documents], batch_size=batch_size, show_progress_bar=show_progress_bar
        )
        order = sorted(range(len(documents)), key=lambda i: (-float(scores[i]), i))[:top_k]
        return [
            {"corpus_id": i, "score": float(scores[i]), **({"text": documents[i]} if return_documents else {})}
            for i in order
        ]

    def save_pretrained(self, path: str | os.PathLike) -> Path:
        path = Path(path)
        self.encoder.save(str(path / ENCODER_DIR))
        # the encoder's digests, checked wherever it is loaded (`encoders.check_model_digests`)
        V.save(self.verifier, path, extra={"encoder_sha256": weight_digests(path / ENCODER_DIR)})
        write_json(
            path / RERANKER_FILE,
            {
                "batch_size": self.batch_size,
                "verifier": self.verifier.name,
                "eval_results": self.model_card_data.eval_results,
            },
        )
        return path

    @classmethod
    def from_pretrained(cls, path: str | os.PathLike, device=None, cache_dir=None) -> "VerifierReranker":
        path = Path(path)
        if not (path / ENCODER_DIR / "modules.json").exists():
            raise FileNotFoundError(
                f"{path}: no {ENCODER_DIR}/ SentenceTransformer folder; save one with VerifierReranker.save_pretrained"
            )
        settings = (
            json.loads((path / RERANKER_FILE).read_text(encoding="utf-8")) if (path / RERANKER_FILE).exists() else {}
        )
        reranker = cls(
            load_encoder(str(path / ENCODER_DIR), device=device),
            V.load(path, device=device),
            batch_size=settings.get("batch_size", 64),
            device=device,
            cache_dir=cache_dir,
        )
        reranker.model_card_data.eval_results = settings.get("eval_results", [])
        return reranker
