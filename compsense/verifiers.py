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

Below the verifiers: scoring (`score_maps`, `score_pairs`) and saving (safetensors + JSON).
Training lives in `compsense.verifier_training`, the near-miss test in `compsense.nearmiss_eval`.
"""
from __future__ import annotations

import json
import math
import os
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
        pos_q = token_positions(q_mask, self.normalize_positions)
        pos_d = token_positions(d_mask, self.normalize_positions)
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
        device = device_of(verifier, M.device)
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
    target = device_of(verifier, torch.device(device) if device else None)
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


def token_positions(mask, normalize: bool) -> torch.Tensor:
    """F2's positions: index among kept tokens, optionally divided by (kept tokens - 1)."""
    pos = (mask.long().cumsum(dim=1) - 1).clamp(min=0).float()
    if normalize:
        pos = pos / (mask.sum(dim=1, keepdim=True) - 1).clamp(min=1).float()
    return pos


def _inv_softplus(y: float) -> float:
    if y <= 0:
        raise ValueError(f"lam and tau must be positive, got {y}")
    return y + math.log(-math.expm1(-y))


def device_of(module: nn.Module, default=None) -> torch.device:
    """The device of a module's first parameter (or buffer); `default`, else CPU, when it has none."""
    for p in module.parameters():
        return p.device
    for b in module.buffers():
        return b.device
    return default if default is not None else torch.device("cpu")


def verifier_names(names: Sequence[str]) -> list[str]:
    """Canonical names ("F0".."F4") of `names`, in order."""
    return [canonical_name(n) for n in names]
