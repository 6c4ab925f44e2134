"""Token embeddings and the token-token cosine map M(query, document) that every verifier reads.

Why a module of its own: the verifiers (F0-F4), the reranker and the explorer all need the same
three things done the same way, and each is easy to get subtly wrong.

- Masks. A batch is padded; padded positions (and, by default, [CLS]/[SEP]) must never reach a
  score. `TokenBatch.mask` says which positions are real tokens, embeddings are zero elsewhere.
- Packing. Valid tokens are moved to the front of each row (position j holds the j-th kept
  token), so a token's index is its position in the text whatever the padding side or the special
  tokens dropped: positional verifiers (F2, F4) and the CNN's border (F3) rely on it.
- Caching. A frozen encoder gives the same token embeddings every time; `TokenCache` computes
  them once per (encoder weights, texts, settings, storage dtype) and keeps them on disk as
  safetensors, so frozen training and reranking never re-encode. A batch of cached rows is one
  gather, on the CPU or wherever the cache was moved (`TokenCache.to`).

Token embeddings are the encoder's `features["token_embeddings"]` after a forward pass over
`encoder.preprocess(texts)` (sentence-transformers >= 6.0; `tokenize` before), L2-normalized per
token, so M[i, j] is a cosine in [-1, 1].
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator, Sequence

import numpy as np
import torch
import torch.nn.functional as F
from safetensors import SafetensorError, safe_open
from safetensors.torch import save_file
from tqdm.auto import tqdm

from compsense.core.storage import atomic_path

log = logging.getLogger(__name__)


@dataclass
class TokenBatch:
    """Packed, padded token embeddings of B texts.

    embeddings: [B, L, D] float, L2-normalized per token, zero at masked positions.
    mask: [B, L] bool, True for kept tokens; kept tokens come first in each row.
    tokens: the kept tokens of each row in order (len(tokens[i]) == mask[i].sum()).
    """

    embeddings: torch.Tensor
    mask: torch.Tensor
    tokens: list[list[str]]

    def __len__(self) -> int:
        return self.embeddings.shape[0]

    @property
    def lengths(self) -> torch.Tensor:
        return self.mask.sum(dim=1)

    def to(self, device) -> "TokenBatch":
        return TokenBatch(self.embeddings.to(device), self.mask.to(device), self.tokens)

    def select(self, indices: Sequence[int]) -> "TokenBatch":
        """Rows `indices`, trimmed to their own longest row."""
        idx = torch.as_tensor(list(indices), dtype=torch.long, device=self.embeddings.device)
        mask = self.mask.index_select(0, idx)
        length = max(int(mask.sum(dim=1).max()) if len(idx) else 1, 1)
        return TokenBatch(
            self.embeddings.index_select(0, idx)[:, :length], mask[:, :length], [self.tokens[i] for i in indices]
        )


def token_embeddings(
    encoder,
    texts: Sequence[str],
    include_special: bool = False,
    batch_size: int = 32,
    device=None,
    show_progress: bool = False,
) -> TokenBatch:
    """Token embeddings of `texts` without gradients, padded to the longest text.

    `include_special=False` masks [CLS]/[SEP]-like tokens (the tokenizer's special ids except
    [UNK], which stands for real text). The encoder is put in eval mode for the call.
    """
    texts = list(texts)
    if not texts:
        raise ValueError("token_embeddings needs at least one text")
    parts: list[tuple[list[int], TokenBatch]] = list(
        _iter_batches(encoder, texts, include_special, batch_size, device, show_progress)
    )
    length = max(int(b.mask.shape[1]) for _, b in parts)
    dim = parts[0][1].embeddings.shape[-1]
    out_device = parts[0][1].embeddings.device
    embeddings = torch.zeros(len(texts), length, dim, device=out_device)
    mask = torch.zeros(len(texts), length, dtype=torch.bool, device=out_device)
    tokens: list[list[str]] = [[] for _ in texts]
    for rows, batch in parts:
        idx = torch.as_tensor(rows, device=out_device)
        embeddings[idx, : batch.mask.shape[1]] = batch.embeddings
        mask[idx, : batch.mask.shape[1]] = batch.mask
        for r, toks in zip(rows, batch.tokens):
            tokens[r] = toks
    return TokenBatch(embeddings, mask, tokens)


def encode_tokens(encoder, texts: Sequence[str], include_special: bool = False, device=None) -> TokenBatch:
    """One forward pass over `texts`, with gradients when autograd is on (end-to-end training).

    Unlike `token_embeddings`, this leaves the encoder's train/eval mode alone.
    """
    texts = list(texts)
    if not texts:
        raise ValueError("encode_tokens needs at least one text")
    device = torch.device(device) if device is not None else encoder_device(encoder)
    features = _preprocess(encoder, texts)
    features = {k: (v.to(device) if isinstance(v, torch.Tensor) else v) for k, v in features.items()}
    out = encoder(features)
    if "cu_seq_lens_q" in out:  # flash-attention unpadding flattened the batch: restore [B, L, D]
        from sentence_transformers.util.tensor import repad_flattened_features  # noqa: PLC0415 - newer ST only

        out = repad_flattened_features(out)
    if "token_embeddings" not in out:
        raise ValueError(
            f"{type(encoder).__name__} returned no token_embeddings; verifiers need a "
            "SentenceTransformer whose first module is a Transformer"
        )
    emb = F.normalize(out["token_embeddings"].float(), p=2, dim=-1)
    keep = out["attention_mask"].bool()
    input_ids = out.get("input_ids", features.get("input_ids"))
    if not include_special:
        keep = keep & ~torch.isin(input_ids, _special_ids(encoder.tokenizer, input_ids.device))
    embeddings, mask = pack(emb, keep)
    tokenizer = encoder.tokenizer
    tokens = [tokenizer.convert_ids_to_tokens(ids[k].tolist()) for ids, k in zip(input_ids.cpu(), keep.cpu())]
    return TokenBatch(embeddings, mask, tokens)


def pack(values: torch.Tensor, keep: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Move kept positions (keep [B, L]) of values [B, L, ...] to the front, in order; zero the rest.

    Returns (packed values trimmed to the longest row, prefix mask). Differentiable (a gather).
    """
    order = torch.argsort((~keep).to(torch.int8), dim=1, stable=True)
    gather = order.view(*order.shape, *([1] * (values.dim() - 2))).expand_as(values)
    packed = values.gather(1, gather)
    counts = keep.sum(dim=1)
    length = max(int(counts.max()) if keep.shape[0] else 1, 1)
    mask = torch.arange(length, device=keep.device)[None, :] < counts[:, None]
    packed = packed[:, :length]
    packed = packed * mask.view(*mask.shape, *([1] * (values.dim() - 2))).to(packed.dtype)
    return packed, mask


def similarity_map(q: TokenBatch, d: TokenBatch) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """M[b, i, j] = cos(query token i, document token j) for row b of each batch (zero where masked)."""
    if len(q) != len(d):
        raise ValueError(f"similarity_map pairs row i with row i: got {len(q)} queries and {len(d)} documents")
    M = torch.bmm(q.embeddings, d.embeddings.transpose(1, 2))
    cells = q.mask[:, :, None] & d.mask[:, None, :]
    return M * cells.to(M.dtype), q.mask, d.mask


def cross_similarity_maps(q: TokenBatch, d: TokenBatch) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Maps for every (query a, document b) combination, flattened row-major to [Bq * Bd, Lq, Ld].

    Contrastive training scores each anchor against every candidate in the batch.
    """
    bq, bd = len(q), len(d)
    M = torch.einsum("aid,bjd->abij", q.embeddings, d.embeddings)
    q_mask = q.mask[:, None, :].expand(bq, bd, -1).reshape(bq * bd, -1)
    d_mask = d.mask[None, :, :].expand(bq, bd, -1).reshape(bq * bd, -1)
    M = M.reshape(bq * bd, M.shape[2], M.shape[3])
    cells = q_mask[:, :, None] & d_mask[:, None, :]
    return M * cells.to(M.dtype), q_mask, d_mask


def pad_to(batch: TokenBatch, length: int) -> TokenBatch:
    """The same batch padded with masked zero positions up to `length` (tests of padding invariance)."""
    current = batch.embeddings.shape[1]
    if length < current:
        raise ValueError(f"pad_to: length {length} is shorter than the batch ({current})")
    extra = length - current
    return TokenBatch(
        F.pad(batch.embeddings, (0, 0, 0, extra)), F.pad(batch.mask, (0, extra), value=False), batch.tokens
    )


class TokenCache:
    """Token embeddings of a fixed list of texts, computed once and kept on disk.

    The file name is a hash of the encoder's identity (a fingerprint of its weights, tokenizer and
    max length), the texts, `include_special` and `dtype`, so a fine-tuned encoder, another text
    list or another precision never reads a stale cache. Stored flat (kept tokens only,
    [total tokens, D] plus offsets): padding costs no disk and `batch(rows)` pads each batch to its
    own longest text. `dtype` is the storage precision on disk and in memory: float16 halves both
    (a corpus of 5,183 documents x 126 tokens x 384 is ~0.5 GB instead of ~1 GB) and moves cosines
    by < 1e-3; batches come out in float32 either way. `cache_dir=None` keeps the embeddings in
    memory only.
    """

    def __init__(
        self,
        encoder,
        texts: Sequence[str],
        cache_dir: str | os.PathLike | None = None,
        include_special: bool = False,
        batch_size: int = 32,
        device=None,
        show_progress: bool = True,
        dtype: torch.dtype | str = torch.float32,
    ):
        self.texts = list(texts)
        if not self.texts:
            raise ValueError("TokenCache needs at least one text")
        self.include_special = include_special
        self.dtype = storage_dtype(dtype)
        self.key = cache_key(encoder, self.texts, include_special, self.dtype)
        self.path = Path(cache_dir) / f"tokens-{self.key}.safetensors" if cache_dir is not None else None
        self.encoded = 0  # texts this cache ran through the encoder (0 when read from disk)
        self._index = {t: i for i, t in enumerate(self.texts)}
        loaded = False
        if self.path is not None and self.path.exists():
            try:
                self._load(self.path)
                loaded = True
            except (SafetensorError, ValueError, KeyError, OSError) as err:
                # A cache is rebuilt, never trusted: a truncated or foreign file is set aside and recomputed.
                log.warning("%s: unreadable token cache (%s); rebuilding it", self.path, err)
                self.path.unlink(missing_ok=True)
        if not loaded:
            self._compute(encoder, batch_size, device, show_progress)
            if self.path is not None:
                self._save(self.path)

    def __len__(self) -> int:
        return len(self.texts)

    def rows(self, texts: Sequence[str]) -> list[int]:
        """Row numbers of `texts` (each must be one of the cached texts)."""
        try:
            return [self._index[t] for t in texts]
        except KeyError as err:
            raise KeyError(f"text not in this TokenCache: {err.args[0][:80]!r}") from None

    @property
    def megabytes(self) -> float:
        """Memory held by the token embeddings (offsets and token strings aside)."""
        return self.values.numel() * self.values.element_size() / 2**20

    def to(self, device) -> "TokenCache":
        """Keep the embeddings on `device` (a GPU then gathers batches where they are), in place."""
        self.values, self.lengths, self.offsets = (t.to(device) for t in (self.values, self.lengths, self.offsets))
        return self

    def batch(self, rows: Sequence[int], device=None) -> TokenBatch:
        """A packed TokenBatch (float32) of cached rows, padded to the longest of them, in one gather."""
        rows = list(rows)
        src = self.values.device
        rows_t = torch.as_tensor(rows, dtype=torch.long, device=src)
        lengths = self.lengths[rows_t]
        length = max(int(lengths.max()) if rows else 1, 1)
        positions = torch.arange(length, device=src)
        mask = positions[None, :] < lengths[:, None]
        if self.values.shape[0] == 0:  # no text kept a token
            emb = torch.zeros(len(rows), length, self.values.shape[1], device=src)
        else:
            # Positions past a row's end read a clamped index and are zeroed by the mask.
            index = (self.offsets[rows_t][:, None] + positions[None, :]).clamp(max=self.values.shape[0] - 1)
            emb = self.values[index].masked_fill(~mask[..., None], 0).float()
        batch = TokenBatch(emb, mask, [self.tokens[r] for r in rows])
        return batch.to(device) if device is not None else batch

    def lookup(self, texts: Sequence[str], device=None) -> TokenBatch:
        return self.batch(self.rows(texts), device=device)

    def _compute(self, encoder, batch_size, device, show_progress) -> None:
        chunks: list[torch.Tensor | None] = [None] * len(self.texts)
        self.tokens = [[] for _ in self.texts]
        for rows, batch in _iter_batches(
            encoder,
            self.texts,
            self.include_special,
            batch_size,
            device,
            show_progress,
            desc="caching token embeddings",
        ):
            emb, lengths = batch.embeddings.cpu(), batch.lengths.cpu()
            for k, r in enumerate(rows):
                chunks[r] = emb[k, : int(lengths[k])].clone()
                self.tokens[r] = batch.tokens[k]
        self.encoded = len(self.texts)
        self.lengths = torch.tensor([c.shape[0] for c in chunks], dtype=torch.long)
        self.offsets = torch.cat([torch.zeros(1, dtype=torch.long), self.lengths.cumsum(0)[:-1]])
        self.values = torch.cat(chunks).to(self.dtype).contiguous()

    def _save(self, path: Path) -> None:
        meta = {
            "key": self.key,
            "include_special": json.dumps(self.include_special),
            "dtype": str(self.dtype),
            "n_texts": str(len(self.texts)),
            "tokens": json.dumps(self.tokens),
        }
        with atomic_path(path) as tmp:
            save_file({"values": self.values, "lengths": self.lengths}, str(tmp), metadata=meta)

    def _load(self, path: Path) -> None:
        with safe_open(str(path), framework="pt") as f:
            meta = f.metadata() or {}
            if meta.get("key") != self.key or int(meta.get("n_texts", -1)) != len(self.texts):
                raise ValueError(f"{path} does not match its key; delete it and it will be rebuilt")
            self.values = f.get_tensor("values").to(self.dtype)
            self.lengths = f.get_tensor("lengths").long()
        if len(self.lengths) != len(self.texts) or int(self.lengths.sum()) != self.values.shape[0]:
            raise ValueError(
                f"{path} holds {len(self.lengths)} texts / {self.values.shape[0]} token rows, not what its "
                f"key promises ({len(self.texts)} texts); delete it and it will be rebuilt"
            )
        self.offsets = torch.cat([torch.zeros(1, dtype=torch.long), self.lengths.cumsum(0)[:-1]])
        self.tokens = json.loads(meta["tokens"])


def cache_key(encoder, texts: Sequence[str], include_special: bool, dtype: torch.dtype | str = torch.float32) -> str:
    """Hash of everything the cached embeddings depend on, their storage dtype included."""
    h = hashlib.sha256()
    h.update(encoder_fingerprint(encoder).encode())
    h.update(
        json.dumps(
            {
                "include_special": bool(include_special),
                "max_seq_length": getattr(encoder, "max_seq_length", None),
                "dtype": str(storage_dtype(dtype)),
            }
        ).encode()
    )
    h.update(len(texts).to_bytes(8, "little"))
    for t in texts:  # length-prefixed: no two text lists share a byte stream (a separator could occur in a text)
        data = t.encode("utf-8")
        h.update(len(data).to_bytes(8, "little"))
        h.update(data)
    return h.hexdigest()[:24]


def storage_dtype(dtype: torch.dtype | str) -> torch.dtype:
    """A cache's storage dtype from a torch dtype or a name ("float16", "fp16", "float32", "bfloat16")."""
    if isinstance(dtype, torch.dtype):
        return dtype
    known = {
        "float16": torch.float16,
        "fp16": torch.float16,
        "half": torch.float16,
        "float32": torch.float32,
        "fp32": torch.float32,
        "float": torch.float32,
        "bfloat16": torch.bfloat16,
    }
    if str(dtype) not in known:
        raise ValueError(f"cache dtype must be float16, float32 or bfloat16, got {dtype!r}")
    return known[str(dtype)]


def encoder_fingerprint(encoder) -> str:
    """A cheap hash of an encoder's weights (a strided sample and the sum of every tensor), module
    layout and tokenizer: fine-tuning changes it, re-loading the same checkpoint does not."""
    h = hashlib.sha256()
    h.update(repr([type(m).__name__ for m in encoder.children()]).encode())
    tokenizer = getattr(encoder, "tokenizer", None)
    if tokenizer is not None:
        h.update(f"{type(tokenizer).__name__}:{len(tokenizer)}".encode())
    with torch.no_grad():
        for name, tensor in sorted(encoder.state_dict().items()):
            flat = tensor.detach().reshape(-1)
            step = max(1, flat.numel() // 256)
            sample = flat[::step][:256].float().cpu().numpy()
            h.update(f"{name}:{tuple(tensor.shape)}:{float(flat.double().sum()):.10e}".encode())
            h.update(np.ascontiguousarray(sample).tobytes())
    return h.hexdigest()


def _iter_batches(
    encoder,
    texts: list[str],
    include_special: bool,
    batch_size: int,
    device,
    show_progress: bool,
    desc: str = "token embeddings",
) -> Iterator[tuple[list[int], TokenBatch]]:
    """(row numbers, TokenBatch) per batch, longest texts first so each batch pads little."""
    if batch_size < 1:
        raise ValueError(f"batch_size must be >= 1, got {batch_size}")
    order = sorted(range(len(texts)), key=lambda i: -len(texts[i]))
    was_training = encoder.training
    encoder.eval()
    try:
        with torch.no_grad():
            for start in tqdm(range(0, len(order), batch_size), desc=desc, disable=not show_progress, leave=False):
                rows = order[start : start + batch_size]
                yield rows, encode_tokens(encoder, [texts[r] for r in rows], include_special, device)
    finally:
        encoder.train(was_training)


def _preprocess(encoder, texts: list[str]) -> dict:
    if hasattr(encoder, "preprocess"):
        return encoder.preprocess(texts)
    return encoder.tokenize(texts)


def _special_ids(tokenizer, device) -> torch.Tensor:
    # [UNK] is in all_special_ids but stands for real text, so it stays.
    ids = set(getattr(tokenizer, "all_special_ids", []) or []) - {getattr(tokenizer, "unk_token_id", None)}
    return torch.tensor(sorted(i for i in ids if i is not None), dtype=torch.long, device=device)


def encoder_device(encoder) -> torch.device:
    """The device an encoder runs on: its `device`, else its first parameter's, else the CPU."""
    try:
        return torch.device(encoder.device)
    except (AttributeError, TypeError):
        params = getattr(encoder, "parameters", None)
        for p in params() if params else []:
            return p.device
    return torch.device("cpu")
