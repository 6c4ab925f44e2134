"""Verifiers F0-F4: small scorers over the token-token cosine map M that try to give back the
compositional sensitivity a pooled cosine lacks, without retraining (and damaging) the retriever.

    F0 "mean"        mean of M over valid cells                                   0 parameters
    F1 "maxsim"      mean over query tokens of the row maximum (ColBERT MaxSim)    0 parameters
    F2 "align"       soft monotone alignment: softmax_j((M_ij - lam|i-j|)/tau)    2 (lam, tau)
    F3 "cnn"         a small CNN over [M, row-max, col-max], masked pooling, MLP  ~4k
    F4 "transformer" one-layer, one-head Transformer over 8x8 patches of M        ~58k

Every verifier maps (M [B, Lq, Ld], q_mask [B, Lq], d_mask [B, Ld]) to scores [B], and padding
never contributes: maxima see -inf at masked cells, means and sums see 0, softmaxes mask, and F2-F4
first pack valid rows and columns to the top-left corner, so token positions, the CNN's border and
the Transformer's patches do not depend on how much padding a batch carried. tests/test_verifiers.py
pads the same pair to several lengths and asserts identical scores for all five.

Below the verifiers: scoring (`score_pairs`), saving (safetensors + JSON), contrastive training
in two regimes (`train_verifier`), and the near-miss test with real positives (`near_miss_table`).
"""
from __future__ import annotations

import json
import math
import os
import time
from pathlib import Path
from typing import Sequence

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

from .io import atomic_path, write_json
from .simmap import TokenCache, similarity_map

ALIASES = {"mean": "F0", "maxsim": "F1", "align": "F2", "cnn": "F3", "transformer": "F4"}
NAMES = ("F0", "F1", "F2", "F3", "F4")
CONFIG_FILE = "verifier.json"
WEIGHTS_FILE = "verifier.safetensors"


class Verifier(nn.Module):
    """Base class: `config` holds the constructor arguments (saved as JSON, never pickled).

    `include_special` records whether the verifier reads [CLS]/[SEP] tokens, so scoring uses the
    same token embeddings it was trained on.
    """

    name = "?"

    def __init__(self, include_special: bool = False, **config):
        super().__init__()
        self.include_special = bool(include_special)
        self.config = {"include_special": self.include_special, **config}

    def forward(self, M: torch.Tensor, q_mask: torch.Tensor, d_mask: torch.Tensor) -> torch.Tensor:
        raise NotImplementedError

    def extra_repr(self) -> str:
        return f"{self.name}, {n_parameters(self):,} parameters"


class MeanVerifier(Verifier):
    """F0: the mean cosine over valid (query, document) token pairs: a bag of similarities."""

    name = "F0"

    def forward(self, M, q_mask, d_mask):
        cells = _cells(q_mask, d_mask)
        return (M * cells).sum(dim=(1, 2)) / cells.sum(dim=(1, 2)).clamp(min=1)


class MaxSimVerifier(Verifier):
    """F1: MaxSim, the mean over valid query tokens of the best-matching valid document token."""

    name = "F1"

    def forward(self, M, q_mask, d_mask):
        return _masked_mean(_row_max(M, d_mask), q_mask & d_mask.any(dim=1, keepdim=True))


class AlignVerifier(Verifier):
    """F2: soft monotone alignment. Each query token attends over document tokens with logits
    (M_ij - lam * |i - j|) / tau; the score is the mean over query tokens of the attention-weighted
    M_ij. The distance penalty is what makes word order matter ("dog bites man" aligns its tokens
    off the diagonal against "man bites dog"), unlike F0/F1.

    Positions are token indices among the kept tokens (not normalised), as in the authors' code:
    with lam = tau = 0.1 a one-token shift costs a factor e^-1 of attention. `normalize_positions`
    uses i/(Lq-1) and j/(Ld-1) instead, for texts of very different lengths. `learnable` makes lam
    and tau trainable (kept positive through softplus).
    """

    name = "F2"

    def __init__(self, lam: float = 0.1, tau: float = 0.1, learnable: bool = True,
                 normalize_positions: bool = False, include_special: bool = False):
        super().__init__(include_special, lam=lam, tau=tau, learnable=learnable,
                         normalize_positions=normalize_positions)
        raw = torch.tensor([_inv_softplus(lam), _inv_softplus(tau)], dtype=torch.float32)
        if learnable:
            self.raw = nn.Parameter(raw)
        else:
            self.register_buffer("raw", raw)
        self.normalize_positions = normalize_positions

    @property
    def lam(self) -> torch.Tensor:
        return F.softplus(self.raw[0])

    @property
    def tau(self) -> torch.Tensor:
        return F.softplus(self.raw[1]).clamp(min=1e-3)

    def forward(self, M, q_mask, d_mask):
        M, q_mask, d_mask = pack_map(M, q_mask, d_mask)
        pos_q, pos_d = _positions(q_mask, self.normalize_positions), _positions(d_mask, self.normalize_positions)
        distance = (pos_q[:, :, None] - pos_d[:, None, :]).abs()
        logits = (M - self.lam * distance) / self.tau
        has_doc = d_mask.any(dim=1)
        # Masked columns get -inf; rows of an empty document get a harmless uniform softmax (zeroed below).
        logits = logits.masked_fill(~d_mask[:, None, :], float("-inf"))
        logits = logits.masked_fill(~has_doc[:, None, None], 0.0)
        weights = torch.softmax(logits, dim=-1)
        per_token = (weights * M).sum(dim=-1)
        return _masked_mean(per_token, q_mask & has_doc[:, None])


class CNNVerifier(Verifier):
    """F3: a small CNN over three channels (M, the row maxima, the column maxima, each broadcast),
    then masked mean- and max-pooling over valid cells and an MLP; tanh keeps scores in [-1, 1].

    Exactly independent of padding: the map is packed to the top-left, so the valid region is a
    rectangle whose outside is zero, and every conv output is re-masked; a border cell then sees
    zeros beyond the edge whether they come from conv padding or from masked padding cells. No
    batch norm (its statistics would depend on padding) and no strided pooling (it would mix the
    border with padding). Cost grows with every cell of every map, and contrastive training scores
    B x 2B maps a step: F3 is the slowest verifier to train on a CPU, hence 16 channels by default.
    """

    name = "F3"

    def __init__(self, channels: int = 16, layers: int = 2, kernel_size: int = 3, hidden: int = 32,
                 include_special: bool = False):
        super().__init__(include_special, channels=channels, layers=layers, kernel_size=kernel_size, hidden=hidden)
        if kernel_size % 2 != 1:
            raise ValueError(f"kernel_size must be odd (same-size convolutions), got {kernel_size}")
        convs, c_in = [], 3
        for k in range(layers):
            dilation = 2 ** k  # a wider view at no extra parameters: 3x3, then 5x5 effective, ...
            convs.append(nn.Conv2d(c_in, channels, kernel_size, padding=dilation * (kernel_size // 2),
                                   dilation=dilation))
            c_in = channels
        self.convs = nn.ModuleList(convs)
        self.head = nn.Sequential(nn.Linear(2 * channels, hidden), nn.ReLU(), nn.Linear(hidden, 1))

    def forward(self, M, q_mask, d_mask):
        M, q_mask, d_mask = pack_map(M, q_mask, d_mask)
        cells = _cells(q_mask, d_mask)
        x = _map_channels(M, cells, q_mask, d_mask)
        keep = cells[:, None].to(x.dtype)
        for conv in self.convs:
            x = F.relu(conv(x)) * keep
        n = cells.sum(dim=(1, 2)).clamp(min=1)[:, None]
        mean = x.sum(dim=(2, 3)) / n
        peak = x.masked_fill(~cells[:, None], float("-inf")).amax(dim=(2, 3))
        peak = peak.masked_fill(~cells.any(dim=2).any(dim=1)[:, None], 0.0)
        return torch.tanh(self.head(torch.cat([mean, peak], dim=1)).squeeze(-1))


class PatchTransformerVerifier(Verifier):
    """F4: the authors' design, kept small: [M, row-max, col-max] cut into 8x8 patches, a linear
    patch embedding plus learned row/column patch positions, a [CLS] token, one Transformer layer
    with one head, and an MLP on the [CLS] output (tanh).

    The map is packed to the top-left and zero-padded to a multiple of the patch size; patches with
    no valid cell are masked as attention keys, so they never reach [CLS]. Maps up to
    `max_patches * patch_size` tokens a side (512 by default).
    """

    name = "F4"

    def __init__(self, dim: int = 64, ff_dim: int = 128, heads: int = 1, layers: int = 1, patch_size: int = 8,
                 dropout: float = 0.1, max_patches: int = 64, include_special: bool = False):
        super().__init__(include_special, dim=dim, ff_dim=ff_dim, heads=heads, layers=layers,
                         patch_size=patch_size, dropout=dropout, max_patches=max_patches)
        self.patch_size, self.max_patches = patch_size, max_patches
        self.patch_embed = nn.Conv2d(3, dim, kernel_size=patch_size, stride=patch_size)
        self.row_pos = nn.Parameter(torch.randn(max_patches, dim) * 0.02)
        self.col_pos = nn.Parameter(torch.randn(max_patches, dim) * 0.02)
        self.cls = nn.Parameter(torch.randn(1, 1, dim) * 0.02)
        # A plain list of layers, not nn.TransformerEncoder: its nested-tensor fast path drops masked keys.
        self.blocks = nn.ModuleList(
            nn.TransformerEncoderLayer(dim, heads, dim_feedforward=ff_dim, dropout=dropout, activation="gelu",
                                       batch_first=True, norm_first=True) for _ in range(layers))
        self.head = nn.Sequential(nn.LayerNorm(dim), nn.Linear(dim, dim), nn.GELU(), nn.Linear(dim, 1))

    def forward(self, M, q_mask, d_mask):
        M, q_mask, d_mask = pack_map(M, q_mask, d_mask)
        cells = _cells(q_mask, d_mask)
        x = _map_channels(M, cells, q_mask, d_mask)
        p = self.patch_size
        pad_q, pad_d = (-x.shape[2]) % p, (-x.shape[3]) % p
        x = F.pad(x, (0, pad_d, 0, pad_q))
        cells = F.pad(cells, (0, pad_d, 0, pad_q))
        gq, gd = x.shape[2] // p, x.shape[3] // p
        if max(gq, gd) > self.max_patches:
            raise ValueError(f"F4 handles maps up to {self.max_patches * p} tokens a side, got "
                             f"{M.shape[1]}x{M.shape[2]}; create it with a larger max_patches")
        tokens = self.patch_embed(x).flatten(2).transpose(1, 2)  # [B, gq*gd, dim]
        pos = (self.row_pos[:gq, None, :] + self.col_pos[None, :gd, :]).reshape(gq * gd, -1)
        tokens = torch.cat([self.cls.expand(len(tokens), -1, -1), tokens + pos], dim=1)
        patch_valid = F.max_pool2d(cells[:, None].float(), p).flatten(1) > 0  # [B, gq*gd]
        ignore = torch.cat([torch.zeros_like(patch_valid[:, :1]), ~patch_valid], dim=1)
        for block in self.blocks:
            tokens = block(tokens, src_key_padding_mask=ignore)
        return torch.tanh(self.head(tokens[:, 0]).squeeze(-1))


REGISTRY: dict[str, type[Verifier]] = {
    "F0": MeanVerifier, "F1": MaxSimVerifier, "F2": AlignVerifier, "F3": CNNVerifier, "F4": PatchTransformerVerifier,
}


def canonical_name(name: str) -> str:
    """'F3', 'f3' or 'cnn' -> 'F3'."""
    key = str(name).strip()
    key = ALIASES.get(key.lower(), key.upper())
    if key not in REGISTRY:
        raise ValueError(f"unknown verifier {name!r}; choose one of {', '.join(NAMES)} "
                         f"or {', '.join(ALIASES)}")
    return key


def create(name: str, seed: int | None = None, **kwargs) -> Verifier:
    """A new verifier by name ("F0".."F4" or "mean", "maxsim", "align", "cnn", "transformer").

    `seed` makes the random initialisation reproducible without touching the global RNG.
    """
    cls = REGISTRY[canonical_name(name)]
    if seed is None:
        return cls(**kwargs)
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        return cls(**kwargs)


def n_parameters(verifier: nn.Module, trainable_only: bool = True) -> int:
    return sum(p.numel() for p in verifier.parameters() if p.requires_grad or not trainable_only)


def save(verifier: Verifier, directory: str | os.PathLike, extra: dict | None = None) -> Path:
    """Write `verifier.json` (name, config, parameter count, `extra`) and `verifier.safetensors`."""
    from safetensors.torch import save_file

    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    state = {k: v.detach().cpu().contiguous() for k, v in verifier.state_dict().items()}
    with atomic_path(directory / WEIGHTS_FILE) as tmp:
        save_file(state, str(tmp))
    write_json(directory / CONFIG_FILE, {"name": verifier.name, "config": verifier.config,
                                         "n_parameters": n_parameters(verifier), **(extra or {})})
    return directory


def load(directory: str | os.PathLike, device=None) -> Verifier:
    """The verifier saved in `directory` by `save`, in eval mode."""
    from safetensors.torch import load_file

    directory = Path(directory)
    config_path = directory / CONFIG_FILE
    if not config_path.exists():
        raise FileNotFoundError(f"{config_path} does not exist: not a saved verifier (see verifiers.save)")
    meta = json.loads(config_path.read_text(encoding="utf-8"))
    verifier = create(meta["name"], **meta["config"])
    verifier.load_state_dict(load_file(str(directory / WEIGHTS_FILE)))
    if device is not None:
        verifier.to(device)
    return verifier.eval()


def read_info(directory: str | os.PathLike) -> dict:
    """The JSON saved beside a verifier (name, config, training history, where its encoder is)."""
    return json.loads((Path(directory) / CONFIG_FILE).read_text(encoding="utf-8"))


@torch.no_grad()
def score_maps(verifier: Verifier, M: torch.Tensor, q_mask: torch.Tensor, d_mask: torch.Tensor) -> torch.Tensor:
    """Scores [B] of ready-made maps, in eval mode and without gradients (the verifier's mode is restored)."""
    was_training = verifier.training
    verifier.eval()
    try:
        device = _device_of(verifier, M.device)
        return verifier(M.to(device), q_mask.to(device).bool(), d_mask.to(device).bool())
    finally:
        verifier.train(was_training)


def score_pairs(encoder, verifier: Verifier, pairs, batch_size: int = 64, cache_dir=None, device=None,
                show_progress: bool = False) -> np.ndarray:
    """Verifier scores of (query, document) pairs: every distinct text is encoded once.

    `pairs` is a list of (query, document) tuples, of records with sentence1/sentence2, or a
    DataFrame with those columns. `cache_dir` keeps the token embeddings on disk for next time.
    """
    from tqdm.auto import tqdm

    pairs = as_pairs(pairs)
    if not pairs:
        return np.zeros(0, dtype=np.float32)
    texts = sorted({t for pair in pairs for t in pair})
    cache = TokenCache(encoder, texts, cache_dir, include_special=verifier.include_special,
                       batch_size=batch_size, device=device, show_progress=show_progress)
    rows_q, rows_d = cache.rows([p[0] for p in pairs]), cache.rows([p[1] for p in pairs])
    target = _device_of(verifier, torch.device(device) if device else None)
    scores = []
    for start in tqdm(range(0, len(pairs), batch_size), desc=f"scoring ({verifier.name})",
                      disable=not show_progress, leave=False):
        q = cache.batch(rows_q[start:start + batch_size], device=target)
        d = cache.batch(rows_d[start:start + batch_size], device=target)
        scores.append(score_maps(verifier, *similarity_map(q, d)).float().cpu())
    return torch.cat(scores).numpy()


def as_pairs(pairs) -> list[tuple[str, str]]:
    """(query, document) tuples from tuples, SentencePair-like records or a DataFrame."""
    if hasattr(pairs, "columns"):
        missing = {"sentence1", "sentence2"} - set(pairs.columns)
        if missing:
            raise ValueError(f"pairs table lacks columns {sorted(missing)}; it needs sentence1 and sentence2")
        return list(zip(pairs["sentence1"].astype(str), pairs["sentence2"].astype(str)))
    out = []
    for p in pairs:
        out.append((p.sentence1, p.sentence2) if hasattr(p, "sentence1") else (str(p[0]), str(p[1])))
    return out


def pack_map(M: torch.Tensor, q_mask: torch.Tensor, d_mask: torch.Tensor):
    """Move valid rows and columns of M to the top-left, in order, and trim; masks become prefixes.

    A no-op (bar trimming) on maps built from `simmap` batches, which are packed already; it makes
    the verifiers correct for any mask, e.g. left-padded inputs.
    """
    q_mask, d_mask = q_mask.bool(), d_mask.bool()
    if not _is_prefix(q_mask):
        rows = torch.argsort((~q_mask).to(torch.int8), dim=1, stable=True)
        M = M.gather(1, rows[:, :, None].expand_as(M))
    if not _is_prefix(d_mask):
        cols = torch.argsort((~d_mask).to(torch.int8), dim=1, stable=True)
        M = M.gather(2, cols[:, None, :].expand_as(M))
    lq = max(int(q_mask.sum(dim=1).max()) if len(M) else 1, 1)
    ld = max(int(d_mask.sum(dim=1).max()) if len(M) else 1, 1)
    q_mask = torch.arange(lq, device=M.device)[None] < q_mask.sum(dim=1, keepdim=True)
    d_mask = torch.arange(ld, device=M.device)[None] < d_mask.sum(dim=1, keepdim=True)
    M = M[:, :lq, :ld] * _cells(q_mask, d_mask)
    return M, q_mask, d_mask


def _is_prefix(mask) -> bool:
    """True when every row's valid positions come first (no gather needed)."""
    return bool((mask[:, 1:] <= mask[:, :-1]).all()) if mask.shape[1] > 1 else True


def _cells(q_mask, d_mask) -> torch.Tensor:
    return q_mask.bool()[:, :, None] & d_mask.bool()[:, None, :]


def _row_max(M, d_mask) -> torch.Tensor:
    """Row maxima over valid columns; -inf must precede the max or a padded 0 can win."""
    best = M.masked_fill(~d_mask.bool()[:, None, :], float("-inf")).amax(dim=-1)
    return best.masked_fill(~d_mask.bool().any(dim=1, keepdim=True), 0.0)


def _col_max(M, q_mask) -> torch.Tensor:
    best = M.masked_fill(~q_mask.bool()[:, :, None], float("-inf")).amax(dim=1)
    return best.masked_fill(~q_mask.bool().any(dim=1, keepdim=True), 0.0)


def _masked_mean(values, mask) -> torch.Tensor:
    mask = mask.to(values.dtype)
    return (values * mask).sum(dim=-1) / mask.sum(dim=-1).clamp(min=1)


def _map_channels(M, cells, q_mask, d_mask) -> torch.Tensor:
    """[M, row-max broadcast, col-max broadcast] as a [B, 3, Lq, Ld] image, zero outside `cells`."""
    row = _row_max(M, d_mask)[:, :, None].expand_as(M)
    col = _col_max(M, q_mask)[:, None, :].expand_as(M)
    return torch.stack([M, row, col], dim=1) * cells[:, None].to(M.dtype)


def _positions(mask, normalize: bool) -> torch.Tensor:
    pos = (mask.long().cumsum(dim=1) - 1).clamp(min=0).float()
    if normalize:
        pos = pos / (mask.sum(dim=1, keepdim=True) - 1).clamp(min=1).float()
    return pos


def _inv_softplus(y: float) -> float:
    if y <= 0:
        raise ValueError(f"lam and tau must be positive, got {y}")
    return y + math.log(-math.expm1(-y))


def _device_of(module: nn.Module, default=None):
    for p in module.parameters():
        return p.device
    for b in module.buffers():
        return b.device
    return default if default is not None else torch.device("cpu")


def verifier_names(names: Sequence[str]) -> list[str]:
    return [canonical_name(n) for n in names]



# ---------------------------------------------------------------------------------------------
# Training: a contrastive loss over verifier scores, frozen or end-to-end, at a fixed budget

REGIMES = ("frozen", "end2end")


def train_verifier(verifier: Verifier, encoder, triplets, regime: str = "frozen", budget_examples: int = 1024,
                   batch_size: int = 32, lr: float = 1e-3, encoder_lr: float = 1e-5, temperature: float = 0.1,
                   seed: int = 42, cache_dir=None, device=None, weight_decay: float = 0.0,
                   warmup_ratio: float = 0.1, max_grad_norm: float = 1.0, show_progress: bool = True) -> dict:
    """Train `verifier` on (anchor, positive, negative) triplets; returns a JSON-ready history.

    Loss: for each anchor, cross-entropy over verifier scores / temperature, the candidates being
    its positive, its hard negative and every other positive and negative in the batch (MNRL, with
    verifier scores in place of cosines). In-batch candidates whose text equals the anchor's
    positive are masked (a repeated sentence is not a negative).

    Regimes. "frozen": the encoder is never run after one pass that fills a `TokenCache` with the
    texts the budget will visit (kept on disk under `cache_dir`); only the verifier learns, and a
    verifier with no parameters (F0, F1) is not trained at all: the history says so. "end2end": the
    encoder is unfrozen with its own learning rate `encoder_lr` and token embeddings are computed
    with gradients at every step. Both regimes see exactly `budget_examples` triplets (sampled
    without replacement, epoch after epoch, by `seed`), so verifiers are compared at equal budgets.
    """
    from tqdm.auto import tqdm

    from .seed import seed_everything
    from .simmap import _encoder_device, encode_tokens

    if regime not in REGIMES:
        raise ValueError(f"regime must be one of {REGIMES}, got {regime!r}")
    if budget_examples < 1 or batch_size < 1:
        raise ValueError(f"budget_examples and batch_size must be >= 1, got {budget_examples}, {batch_size}")
    anchors, positives, negatives = _triplet_texts(triplets)
    seed_everything(seed)
    device = torch.device(device) if device is not None else _encoder_device(encoder)
    verifier.to(device)
    history = {"verifier": verifier.name, "regime": regime, "n_parameters": n_parameters(verifier),
               "budget_examples": int(budget_examples), "batch_size": int(batch_size), "lr": lr,
               "encoder_lr": encoder_lr if regime == "end2end" else None, "temperature": temperature,
               "seed": seed, "n_triplets": len(anchors), "include_special": verifier.include_special,
               "trained": False, "note": "", "steps": 0, "examples_seen": 0, "texts_encoded": 0,
               "loss": [], "accuracy": [], "seconds": 0.0}
    if regime == "frozen" and n_parameters(verifier) == 0:
        history["note"] = (f"{verifier.name} has no trainable parameters and the encoder is frozen: "
                           "nothing to train, it scores as is")
        return history

    batches = _sample_batches(len(anchors), budget_examples, batch_size, seed)
    verifier_params = [p for p in verifier.parameters() if p.requires_grad]
    groups = [{"params": verifier_params, "lr": lr}] if verifier_params else []
    if regime == "frozen":
        used = sorted({t for b in batches for i in b for t in (anchors[i], positives[i], negatives[i])})
        cache = TokenCache(encoder, used, cache_dir, include_special=verifier.include_special,
                           batch_size=max(batch_size, 32), device=device, show_progress=show_progress)
        history["texts_encoded"] = cache.encoded
    else:
        encoder.to(device)
        for p in encoder.parameters():
            p.requires_grad_(True)
        groups.append({"params": [p for p in encoder.parameters()], "lr": encoder_lr})
    optimizer = torch.optim.AdamW(groups, weight_decay=weight_decay)
    scheduler = torch.optim.lr_scheduler.LambdaLR(optimizer, _warmup_linear(len(batches), warmup_ratio))

    start = time.perf_counter()
    verifier.train()
    if regime == "end2end":
        encoder.train()
    try:
        for batch in tqdm(batches, desc=f"train {verifier.name} ({regime})", disable=not show_progress, leave=False):
            a, p, n = [anchors[i] for i in batch], [positives[i] for i in batch], [negatives[i] for i in batch]
            if regime == "frozen":
                q, cands = cache.lookup(a, device), cache.lookup(p + n, device)
            else:
                tokens = encode_tokens(encoder, a + p + n, verifier.include_special, device)
                history["texts_encoded"] += len(a) * 3
                q, cands = tokens.select(range(len(a))), tokens.select(range(len(a), 3 * len(a)))
            loss, accuracy = contrastive_loss(verifier, q, cands, p, p + n, temperature)
            optimizer.zero_grad(set_to_none=True)
            loss.backward()
            if max_grad_norm:
                torch.nn.utils.clip_grad_norm_([w for g in groups for w in g["params"]], max_grad_norm)
            optimizer.step()
            scheduler.step()
            history["loss"].append(float(loss.detach()))
            history["accuracy"].append(float(accuracy))
            history["steps"] += 1
            history["examples_seen"] += len(batch)
    finally:
        verifier.eval()
        if regime == "end2end":
            encoder.eval()
    history["trained"] = True
    history["seconds"] = round(time.perf_counter() - start, 3)
    return history


def contrastive_loss(verifier: Verifier, q, candidates, positive_texts: Sequence[str],
                     candidate_texts: Sequence[str], temperature: float):
    """(loss, in-batch top-1 accuracy): anchor i's label is candidate i (its positive)."""
    from .simmap import cross_similarity_maps

    b, c = len(q), len(candidates)
    scores = verifier(*cross_similarity_maps(q, candidates)).view(b, c)
    same_text = torch.tensor([[t == pos for t in candidate_texts] for pos in positive_texts], device=scores.device)
    same_text[torch.arange(b), torch.arange(b)] = False
    logits = (scores / temperature).masked_fill(same_text, float("-inf"))
    labels = torch.arange(b, device=scores.device)
    loss = F.cross_entropy(logits, labels)
    return loss, (logits.argmax(dim=1) == labels).float().mean().item()


def fit_verifier(name: str, regime: str, encoder, triplets, out_dir, seed: int = 42, cache_dir=None,
                 device=None, force: bool = False, verifier_kwargs: dict | None = None, **train_kwargs):
    """Create, train and save one verifier under `out_dir`; a finished run with the same settings
    is loaded instead of retrained (`force` retrains). End-to-end runs train a copy of `encoder`
    and save it to `out_dir/encoder/`. Returns (verifier, encoder it scores with, history).
    """
    import copy

    from .simmap import encoder_fingerprint

    out_dir = Path(out_dir)
    # What the result depends on; the starting encoder's weights too, so a new backbone retrains.
    settings = {"name": canonical_name(name), "regime": regime, "seed": seed, "n_triplets": len(triplets),
                "encoder": encoder_fingerprint(encoder)[:16],
                "max_seq_length": getattr(encoder, "max_seq_length", None), "verifier_kwargs": verifier_kwargs or {},
                **{k: v for k, v in train_kwargs.items() if k != "show_progress"}}
    if not force and (out_dir / CONFIG_FILE).exists():
        info = read_info(out_dir)
        if info.get("settings") == json.loads(json.dumps(settings, default=str)):
            verifier = load(out_dir, device=device)
            trained_encoder = encoder
            if regime == "end2end":
                from .models import load_encoder

                trained_encoder = load_encoder(out_dir / "encoder", device=device)
            return verifier, trained_encoder, info["history"]
    verifier = create(name, seed=seed, **(verifier_kwargs or {}))
    trained_encoder = copy.deepcopy(encoder) if regime == "end2end" else encoder
    history = train_verifier(verifier, trained_encoder, triplets, regime=regime, seed=seed, cache_dir=cache_dir,
                             device=device, **train_kwargs)
    if regime == "end2end":
        _save_encoder(trained_encoder, out_dir / "encoder")
    save(verifier, out_dir, extra={"settings": settings, "history": history,
                                   "encoder": "encoder/" if regime == "end2end" else "frozen backbone"})
    return verifier, trained_encoder, history


def _save_encoder(encoder, target: Path) -> None:
    import shutil
    import tempfile

    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=".encoder-", dir=target.parent))
    try:
        encoder.save(str(tmp))
        if target.exists():
            shutil.rmtree(target)
        os.replace(tmp, target)
    finally:
        if tmp.exists():
            shutil.rmtree(tmp, ignore_errors=True)


def _triplet_texts(triplets) -> tuple[list[str], list[str], list[str]]:
    if hasattr(triplets, "columns"):
        missing = {"anchor", "positive", "negative"} - set(triplets.columns)
        if missing:
            raise ValueError(f"triplets table lacks columns {sorted(missing)}; it needs anchor, positive, negative "
                             "(notebook 01 writes negatives/triplets.parquet)")
        cols = [triplets[c].astype(str).tolist() for c in ("anchor", "positive", "negative")]
    else:
        rows = [(t.anchor, t.positive, t.negative) if hasattr(t, "anchor") else tuple(t) for t in triplets]
        cols = [[str(r[k]) for r in rows] for k in range(3)]
    if not cols[0]:
        raise ValueError("no training triplets: check the split filter on negatives/triplets.parquet")
    return cols[0], cols[1], cols[2]


def _sample_batches(n: int, budget: int, batch_size: int, seed: int) -> list[np.ndarray]:
    """Exactly `budget` row indices, epoch after epoch without replacement, cut into batches."""
    rng = np.random.default_rng(seed)
    order = np.concatenate([rng.permutation(n) for _ in range(math.ceil(budget / n))])[:budget]
    return [order[i:i + batch_size] for i in range(0, budget, batch_size)]


def _warmup_linear(steps: int, warmup_ratio: float):
    warmup = int(steps * warmup_ratio)

    def factor(step: int) -> float:
        if step < warmup:
            return (step + 1) / warmup
        return max(0.0, (steps - step) / max(1, steps - warmup))

    return factor


# ---------------------------------------------------------------------------------------------
# The near-miss test: does a scorer prefer a real paraphrase to a minimal meaning-changing edit?


def near_miss_table(scorers: dict, positives, near_misses, match_on: str = "sentence1"):
    """Per scorer and near-miss family: AUC, pairwise accuracy and mean scores, as a long table
    with columns scorer, family, metric, value, n.

    positives: (query, paraphrase) pairs (DataFrame with sentence1, sentence2). near_misses:
    (query, near-miss) pairs with a `family` column. Metrics:
    - auc: ROC-AUC of all positive scores against the family's near-miss scores (1 = every
      paraphrase outscores every near-miss); needs no pairing.
    - pairwise_accuracy: over near-misses whose `match_on` key (by default the query sentence) has
      at least one positive, the share of (positive, near-miss) comparisons the positive wins
      (ties count half); n = near-misses matched, NaN when none is.
    - mean_score: the family's mean near-miss score, and (family "paraphrase") the positives' mean:
      the view of the paper's Figure 3. Scales differ between scorers; compare within a scorer.
    Each scorer is called once, on positives and near-misses together (texts are encoded once).
    """
    import pandas as pd

    pos, neg = _as_frame(positives, "positives"), _as_frame(near_misses, "near_misses")
    if "family" not in neg.columns:
        raise ValueError("near_misses needs a `family` column (negation, role swap, ...)")
    if match_on not in pos.columns or match_on not in neg.columns:
        raise ValueError(f"match_on={match_on!r} must be a column of both positives and near_misses")
    if pos.empty or neg.empty:
        raise ValueError(f"near_miss_table needs positives and near-misses (got {len(pos)} and {len(neg)})")
    rows = []
    for scorer_name, scorer in scorers.items():
        scores = np.asarray(scorer(as_pairs(pos) + as_pairs(neg)), dtype=float)
        pos_scores, neg_scores = scores[: len(pos)], scores[len(pos):]
        by_key: dict = {}
        for key, s in zip(pos[match_on], pos_scores):
            by_key.setdefault(key, []).append(s)
        rows.append(dict(scorer=scorer_name, family="paraphrase", metric="mean_score",
                         value=float(pos_scores.mean()), n=len(pos)))
        families = sorted(neg["family"].astype(str).unique())
        for family in families + ["all"]:
            sel = np.ones(len(neg), bool) if family == "all" else (neg["family"].astype(str) == family).to_numpy()
            fam_scores, fam_keys = neg_scores[sel], neg[match_on].to_numpy()[sel]
            wins = [np.mean([(p > s) + 0.5 * (p == s) for p in by_key[k]]) for k, s in zip(fam_keys, fam_scores)
                    if k in by_key]
            rows += [
                dict(scorer=scorer_name, family=family, metric="mean_score", value=float(fam_scores.mean()),
                     n=int(sel.sum())),
                dict(scorer=scorer_name, family=family, metric="auc", value=_auc(pos_scores, fam_scores),
                     n=int(sel.sum())),
                dict(scorer=scorer_name, family=family, metric="pairwise_accuracy",
                     value=float(np.mean(wins)) if wins else float("nan"), n=len(wins)),
            ]
    return pd.DataFrame(rows, columns=["scorer", "family", "metric", "value", "n"])


def paraphrase_positives(paraphrases, near_misses, max_unmatched: int | None = None, seed: int = 0):
    """Positive (query, paraphrase) pairs for `near_miss_table` from labelled paraphrase pairs
    (MRPC SentencePairs or a table with sentence1, sentence2, label).

    Only label-1 pairs count. A pair whose sentence2 is a near-miss source is flipped so that the
    source is the query: then score(s, paraphrase) and score(s, near-miss) share their query and
    pairwise accuracy can be computed. Pairs touching no source are kept as well (up to
    `max_unmatched`, sampled by `seed`): the AUC compares against all positives, matched or not.
    Columns: sentence1, sentence2, matched.
    """
    import pandas as pd

    table = _as_frame(paraphrases, "paraphrases")
    if "label" in table.columns:
        table = table[table["label"].astype(float) == 1]
    sources = set(_as_frame(near_misses, "near_misses")["sentence1"])
    rows = []
    for s1, s2 in zip(table["sentence1"], table["sentence2"]):
        if s1 in sources:
            rows.append((s1, s2, True))
        if s2 in sources:
            rows.append((s2, s1, True))
        if s1 not in sources and s2 not in sources:
            rows.append((s1, s2, False))
    out = pd.DataFrame(rows, columns=["sentence1", "sentence2", "matched"]).drop_duplicates(["sentence1", "sentence2"])
    unmatched = out[~out.matched]
    if max_unmatched is not None and len(unmatched) > max_unmatched:
        unmatched = unmatched.sample(n=max_unmatched, random_state=seed)
    return pd.concat([out[out.matched], unmatched], ignore_index=True)


def sugarcrepe_pairs(examples=None, data_dir=None, max_examples: int | None = None, seed: int = 0):
    """SugarCrepe as a text-only near-miss test: (positives, near_misses) for `near_miss_table`
    with match_on="example_id".

    SugarCrepe asks whether an image is matched to its caption rather than to a minimally edited
    negative caption. With no image, we let another human caption of the same COCO image stand in
    for it: for each example, the query r is a different caption of the same image (chosen by
    `seed`), the positive is (r, caption) and the near-miss is (r, negative caption). Comparing
    score(caption, caption) with score(caption, negative) instead would be trivial (identity wins)
    and is not used. Examples whose image has no other caption (551 of 7,511) are dropped; where r
    does not mention the edited detail the test is noisy for every scorer alike.
    """
    import pandas as pd

    from .data import load_sugarcrepe

    examples = load_sugarcrepe(data_dir=data_dir) if examples is None else list(examples)
    images = _sugarcrepe_images(examples, data_dir)
    captions: dict[str, list[str]] = {}
    for ex in examples:
        captions.setdefault(images[ex.example_id], [])
        if ex.caption not in captions[images[ex.example_id]]:
            captions[images[ex.example_id]].append(ex.caption)
    rng = np.random.default_rng(seed)
    pos, neg = [], []
    for ex in examples:
        others = sorted(c for c in captions[images[ex.example_id]] if c.strip() != ex.caption.strip())
        if not others:
            continue
        reference = others[int(rng.integers(len(others)))]
        pos.append((reference, ex.caption, ex.example_id))
        neg.append((reference, ex.negative_caption, ex.example_id, ex.subset))
    positives = pd.DataFrame(pos, columns=["sentence1", "sentence2", "example_id"])
    near_misses = pd.DataFrame(neg, columns=["sentence1", "sentence2", "example_id", "family"])
    if max_examples is not None and len(near_misses) > max_examples:
        keep = near_misses.sample(n=max_examples, random_state=seed).index
        positives = positives.loc[keep].reset_index(drop=True)
        near_misses = near_misses.loc[keep].reset_index(drop=True)
    return positives, near_misses


def _sugarcrepe_images(examples, data_dir) -> dict[str, str]:
    """example_id -> COCO image file. The loader's records carry no image, so read it from the
    same JSON files (`<subset>.json`, key -> {filename, ...}); an `image` attribute wins if present."""
    if all(getattr(ex, "image", None) for ex in examples):
        return {ex.example_id: ex.image for ex in examples}
    from .paths import local_data_dir

    folder = local_data_dir(data_dir) / "sugarcrepe"
    images = {}
    for subset in sorted({ex.subset for ex in examples}):
        data = json.loads((folder / f"{subset}.json").read_text(encoding="utf-8"))
        images.update({f"{subset}/{key}": rec["filename"] for key, rec in data.items()})
    missing = [ex.example_id for ex in examples if ex.example_id not in images]
    if missing:
        raise KeyError(f"no image file for SugarCrepe examples {missing[:3]} in {folder}")
    return images


def verifier_scorer(encoder, verifier: Verifier, batch_size: int = 64, cache_dir=None, device=None):
    """A scorer for `near_miss_table`: pairs -> verifier scores."""
    return lambda pairs: score_pairs(encoder, verifier, pairs, batch_size=batch_size, cache_dir=cache_dir,
                                     device=device)


def cosine_scorer(encoder, batch_size: int = 64):
    """A scorer for `near_miss_table`: pairs -> pooled cosine (what the retriever itself ranks by)."""
    from .geometry import pair_cosines

    return lambda pairs: pair_cosines(encoder, pairs, batch_size=batch_size)


def pooled_cosine_scorers(encoder, backbone: str, work_dir, seed: int, device=None, batch_size: int = 64):
    """Pooled-cosine scorers for Base (`encoder`) and for Model A / Model B where notebook 02 left
    `{work_dir}/models/<backbone>/<A|B>-seed<seed>/final/`. Returns (scorers, notes on what is missing)."""
    from .models import load_encoder
    from .paths import resolve

    scorers, notes = {"cosine Base": cosine_scorer(encoder, batch_size)}, []
    for variant in ("A", "B"):
        final = resolve(work_dir) / "models" / backbone / f"{variant}-seed{seed}" / "final"
        if (final / "modules.json").exists():
            scorers[f"cosine Model {variant}"] = cosine_scorer(load_encoder(final, device=device), batch_size)
        else:
            notes.append(f"Model {variant}: no checkpoint at {final} (run notebook 02 for this profile); row skipped")
    return scorers, notes


def figure_near_miss_scores(table, title: str = "Mean score on paraphrases and near-misses"):
    """Figure 3's view: mean score per family (and on paraphrases), one group of bars per scorer."""
    import plotly.express as px

    data = table[table.metric == "mean_score"]
    fig = px.bar(data, x="scorer", y="value", color="family", barmode="group", title=title,
                 labels={"value": "mean score", "scorer": ""}, hover_data=["n"])
    fig.update_layout(legend_title_text="pairs", template="plotly_white")
    return fig


def separation_view(table):
    """AUC and pairwise accuracy, one row per scorer and family (wide, for display)."""
    data = table[table.metric.isin(["auc", "pairwise_accuracy"])]
    return data.pivot_table(index=["scorer"], columns=["metric", "family"], values="value", sort=False)


def _auc(pos_scores, neg_scores) -> float:
    from .geometry import separation_auc

    if len(pos_scores) == 0 or len(neg_scores) == 0:
        return float("nan")
    return separation_auc(pos_scores, neg_scores)


def _as_frame(data, what: str):
    import pandas as pd

    if hasattr(data, "columns"):
        frame = data.reset_index(drop=True)
    else:
        records = list(data)
        if records and hasattr(records[0], "__dataclass_fields__"):
            from dataclasses import asdict

            frame = pd.DataFrame([asdict(r) for r in records])
        else:
            frame = pd.DataFrame(records, columns=["sentence1", "sentence2"][: len(records[0])] if records else None)
    if not {"sentence1", "sentence2"} <= set(frame.columns):
        raise ValueError(f"{what} needs sentence1 and sentence2 columns, got {list(frame.columns)}")
    return frame


# ---------------------------------------------------------------------------------------------
# Notebook 04's steps, so the notebook holds calls and prose only


def stage_inputs(work_dir, train_split: str = "train", heldout_split: str = "test", max_pairs: int | None = None,
                 seed: int = 42):
    """(training triplets, held-out near-miss pairs) from notebook 01's files under `work_dir`.

    At most `max_pairs` held-out pairs are kept (a seeded sample, every family kept in proportion).
    """
    from .io import read_table
    from .paths import resolve

    folder = resolve(work_dir) / "negatives"
    pairs_path, triplets_path = folder / "pairs.parquet", folder / "triplets.parquet"
    for path in (pairs_path, triplets_path):
        if not path.exists():
            raise FileNotFoundError(f"{path} is missing: run notebooks/01_data_and_negatives.ipynb for this "
                                    f"profile first (it writes negatives/pairs.parquet and triplets.parquet)")
    pairs, triplets = read_table(pairs_path), read_table(triplets_path)
    for name, table, split in (("pairs", pairs, heldout_split), ("triplets", triplets, train_split)):
        if "split" not in table.columns or split not in set(table["split"]):
            found = sorted(set(table["split"])) if "split" in table.columns else "no split column"
            raise ValueError(f"{folder / name}.parquet has no rows with split={split!r} (found: {found})")
    train = triplets[triplets["split"] == train_split].reset_index(drop=True)
    heldout = pairs[pairs["split"] == heldout_split].reset_index(drop=True)
    if max_pairs is not None and len(heldout) > max_pairs:
        heldout = heldout.sample(n=max_pairs, random_state=seed).sort_index().reset_index(drop=True)
    return train, heldout


def fit_grid(names: Sequence[str], regimes: Sequence[str], encoder, triplets, work_dir, seed: int = 42,
             device=None, include_special: bool = False, **train_kwargs):
    """Train (or resume) every verifier in every regime at the same budget; saved under
    `{work_dir}/verifiers/<name>-<regime>/`, token caches under `{work_dir}/cache/`.

    Returns ({"F3-frozen": (verifier, encoder, history), ...}, a summary table).
    """
    import pandas as pd

    from .paths import workspace

    fitted = {}
    for regime in regimes:
        for name in verifier_names(names):
            label = f"{name}-{regime}"
            fitted[label] = fit_verifier(name, regime, encoder, triplets, workspace(work_dir, "verifiers", label),
                                         seed=seed, cache_dir=workspace(work_dir, "cache"), device=device,
                                         verifier_kwargs={"include_special": include_special}, **train_kwargs)
    rows = []
    for label, (verifier, _, h) in fitted.items():
        rows.append({"verifier": label, "parameters": n_parameters(verifier), "trained": h["trained"],
                     "steps": h["steps"], "examples_seen": h["examples_seen"], "budget": h["budget_examples"],
                     "final_loss": h["loss"][-1] if h["loss"] else float("nan"),
                     "texts_encoded": h["texts_encoded"], "seconds": h["seconds"], "note": h["note"]})
    return fitted, pd.DataFrame(rows)


def verifier_scorers(fitted: dict, batch_size: int = 64, cache_dir=None, device=None) -> dict:
    """{label: scorer} for `near_miss_table` from `fit_grid`'s result (each with its own encoder).

    Frozen verifiers share the backbone, so their token embeddings are cached on disk once for all;
    an end-to-end encoder serves one verifier only, so its embeddings stay in memory.
    """
    return {label: verifier_scorer(enc, verifier, batch_size=batch_size, device=device,
                                   cache_dir=cache_dir if history["regime"] == "frozen" else None)
            for label, (verifier, enc, history) in fitted.items()}


def mrpc_positives(heldout, data_dir=None, split: str = "test", max_unmatched: int | None = None, seed: int = 0):
    """`paraphrase_positives` from MRPC `split` (test by default: Model A may train on MRPC train)."""
    from .data import load_mrpc

    return paraphrase_positives(load_mrpc(split, data_dir=data_dir), heldout, max_unmatched=max_unmatched, seed=seed)


def optional_sugarcrepe(data_dir=None, max_examples: int | None = None, seed: int = 0):
    """`sugarcrepe_pairs`, or (None, None, why) when the SugarCrepe files are not here."""
    try:
        positives, near_misses = sugarcrepe_pairs(data_dir=data_dir, max_examples=max_examples, seed=seed)
    except FileNotFoundError as err:
        return None, None, f"SugarCrepe skipped: {err}"
    return positives, near_misses, f"SugarCrepe: {len(near_misses)} examples with another caption of their image"


def to_tidy(table, dataset: str, backbone: str, seed: int, **constants):
    """`near_miss_table` rows as tidy results (variant = scorer; family and n kept as columns)."""
    from .io import tidy

    rows = [dict(variant=r.scorer, family=r.family, metric=r.metric, value=r.value, n=r.n)
            for r in table.itertuples(index=False)]
    return tidy(rows, run=f"{backbone}/verifiers-seed{seed}", backbone=backbone, seed=seed, dataset=dataset,
                **constants)


TIDY_KEY = ["run", "backbone", "variant", "seed", "dataset", "metric", "family"]
