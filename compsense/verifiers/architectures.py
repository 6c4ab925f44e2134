"""Verifiers F0-F4: small scorers over the token-token cosine map M that try to give back the
compositional sensitivity a pooled cosine lacks, without retraining (and damaging) the retriever.

    F0 "mean"        mean of M over valid cells                                   0 parameters
    F1 "maxsim"      mean over query tokens of the row maximum (ColBERT MaxSim)    0 parameters
    F2 "align"       soft monotone alignment: softmax_j((M_ij - lam|i-j|)/tau)    0 (lam = tau = 0.1; 2 if learnable)
    F3 "cnn"         a CNN over [M, row-max, col-max], pooling, MLP               small ~4k, paper 332,545
    F4 "transformer" one-layer, one-head Transformer over 8x8 patches of M        small ~58k, paper 940,065 (dim 384)

F3 and F4 come in two sizes (`create(name, size=...)`). "paper" is the authors' architecture
(their `verifiers.py`, built as `train_and_eval_verifiers_experiment.py`'s
`create_verifier_with_config` builds it): F3 two 3x3 conv blocks 3->128->256 with batch norm and
2x2 max pooling on a fixed max_seq_length^2 canvas, global average pooling, an MLP 256->128->1; F4
8x8 patches of a 128x128 canvas, width = the encoder's dimension, one layer, one head,
feed-forward 32, [CLS], a learned position per patch. "small" is ours, sized for 2 CPU cores.

Every verifier maps (M [B, Lq, Ld], q_mask [B, Lq], d_mask [B, Ld]) to scores [B], and padding
never contributes: maxima see -inf at masked cells, means and sums see 0, softmaxes mask, and F2-F4
first pack valid rows and columns to the top-left corner, so token positions, the CNN's border and
the Transformer's patches do not depend on how much padding a batch carried (the paper-size F3/F4
then draw the packed map on a fixed canvas, as the authors do). tests/test_verifiers.py pads the
same pair to several lengths and asserts identical scores for all five, at both sizes.

Below the verifiers: scoring (`score_maps`, `score_pairs`) and saving (safetensors + JSON).
Training lives in `compsense.verifiers.training`, the near-miss test in `compsense.nearmiss.evaluation`.
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
from safetensors import SafetensorError
from safetensors.torch import load_file, save_file
from tqdm.auto import tqdm

from compsense.core.commands import rerun_stage
from compsense.core.storage import CorruptFile, atomic_path, sha256_file, write_json
from compsense.data.datasets import as_pairs
from compsense.verifiers.simmap import TokenCache, similarity_map

ALIASES = {"mean": "F0", "maxsim": "F1", "align": "F2", "cnn": "F3", "transformer": "F4"}
NAMES = ("F0", "F1", "F2", "F3", "F4")
CONFIG_FILE = "verifier.json"
WEIGHTS_FILE = "verifier.safetensors"
WEIGHTS_SHA256 = "weights_sha256"  # verifier.json: the digest of WEIGHTS_FILE as save wrote it
ENCODER_DIR = "encoder"  # an end-to-end verifier's own fine-tuned encoder, beside its weights


class Verifier(nn.Module):
    """Base class: `config` holds the constructor arguments (saved as JSON, never pickled).

    `include_special` records whether the verifier reads [CLS]/[SEP] tokens, so scoring uses the
    same token embeddings it was trained on.
    """

    name = "?"
    size = "small"

    def __init__(self, include_special: bool = False, **config):
        super().__init__()
        if type(self).__init__ is Verifier.__init__ and config:  # F0/F1 take no settings of their own
            raise TypeError(f"{self.name} takes no argument(s) {sorted(config)}; only include_special")
        self.include_special = _strict_bool(include_special, "include_special")
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
    and tau trainable (kept positive through softplus); the authors fix both at 0.1
    (`train_and_eval_verifiers_experiment.py`: `F2SoftAttnVerifier(lambda_penalty=0.1, tau=0.1)`,
    plain floats in their `verifiers.py`), so F2 has no parameters and, frozen, is not trained.
    """

    name = "F2"

    def __init__(
        self,
        lam: float = 0.1,
        tau: float = 0.1,
        learnable: bool = False,
        normalize_positions: bool = False,
        include_special: bool = False,
    ):
        super().__init__(
            include_special, lam=lam, tau=tau, learnable=learnable, normalize_positions=normalize_positions
        )
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

    def __init__(
        self, channels: int = 16, layers: int = 2, kernel_size: int = 3, hidden: int = 32, include_special: bool = False
    ):
        super().__init__(include_special, channels=channels, layers=layers, kernel_size=kernel_size, hidden=hidden)
        if kernel_size % 2 != 1:
            raise ValueError(f"kernel_size must be odd (same-size convolutions), got {kernel_size}")
        convs, c_in = [], 3
        for k in range(layers):
            dilation = 2**k  # a wider view at no extra parameters: 3x3, then 5x5 effective, ...
            convs.append(
                nn.Conv2d(c_in, channels, kernel_size, padding=dilation * (kernel_size // 2), dilation=dilation)
            )
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

    def __init__(
        self,
        dim: int = 64,
        ff_dim: int = 128,
        heads: int = 1,
        layers: int = 1,
        patch_size: int = 8,
        dropout: float = 0.1,
        max_patches: int = 64,
        include_special: bool = False,
    ):
        super().__init__(
            include_special,
            dim=dim,
            ff_dim=ff_dim,
            heads=heads,
            layers=layers,
            patch_size=patch_size,
            dropout=dropout,
            max_patches=max_patches,
        )
        self.patch_size, self.max_patches = patch_size, max_patches
        self.patch_embed = nn.Conv2d(3, dim, kernel_size=patch_size, stride=patch_size)
        self.row_pos = nn.Parameter(torch.randn(max_patches, dim) * 0.02)
        self.col_pos = nn.Parameter(torch.randn(max_patches, dim) * 0.02)
        self.cls = nn.Parameter(torch.randn(1, 1, dim) * 0.02)
        # A plain list of layers, not nn.TransformerEncoder: its nested-tensor fast path drops masked keys.
        self.blocks = nn.ModuleList(
            nn.TransformerEncoderLayer(
                dim,
                heads,
                dim_feedforward=ff_dim,
                dropout=dropout,
                activation="gelu",
                batch_first=True,
                norm_first=True,
            )
            for _ in range(layers)
        )
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
            raise ValueError(
                f"F4 handles maps up to {self.max_patches * p} tokens a side, got "
                f"{M.shape[1]}x{M.shape[2]}; create it with a larger max_patches"
            )
        tokens = self.patch_embed(x).flatten(2).transpose(1, 2)  # [B, gq*gd, dim]
        pos = (self.row_pos[:gq, None, :] + self.col_pos[None, :gd, :]).reshape(gq * gd, -1)
        tokens = torch.cat([self.cls.expand(len(tokens), -1, -1), tokens + pos], dim=1)
        patch_valid = F.max_pool2d(cells[:, None].float(), p).flatten(1) > 0  # [B, gq*gd]
        ignore = torch.cat([torch.zeros_like(patch_valid[:, :1]), ~patch_valid], dim=1)
        for block in self.blocks:
            tokens = block(tokens, src_key_padding_mask=ignore)
        return torch.tanh(self.head(tokens[:, 0]).squeeze(-1))


class PaperCNNVerifier(Verifier):
    """F3 at the authors' size (`verifiers.py`, F3Verifier with hidden_channels=128, num_conv_layers=2
    as `train_and_eval_verifiers_experiment.py` builds it): [M, row-max, col-max] on a fixed
    `canvas` x `canvas` image (pad or trim; the authors' max_seq_length, 128), two blocks of 3x3
    conv -> batch norm -> ReLU -> 2x2 max pool (3->128->256 channels), global average pooling,
    MLP 256->128->1 with dropout 0.1, tanh. 332,545 parameters.

    The fixed canvas is what keeps a pair's score independent of its batch's padding (batch norm
    runs on its stored statistics in eval mode): the empty canvas around a short pair is part of
    what this CNN sees, as in the authors' design. One deviation: every channel is zero outside
    the valid cells, as in the authors' F4; their F3 broadcasts row and column maxima into the
    batch's padding, which would make a score depend on the other texts of its batch.
    """

    name = "F3"
    size = "paper"

    def __init__(
        self,
        canvas: int = 128,
        channels: int = 128,
        layers: int = 2,
        kernel_size: int = 3,
        hidden: int = 128,
        dropout: float = 0.1,
        include_special: bool = False,
    ):
        super().__init__(
            include_special,
            canvas=canvas,
            channels=channels,
            layers=layers,
            kernel_size=kernel_size,
            hidden=hidden,
            dropout=dropout,
        )
        if canvas < 2**layers:
            raise ValueError(f"canvas {canvas} is too small for {layers} 2x2 poolings; use at least {2**layers}")
        self.canvas = canvas
        blocks, c_in = [], 3
        for k in range(layers):
            c_out = channels * 2**k
            blocks += [
                nn.Conv2d(c_in, c_out, kernel_size, padding=kernel_size // 2),
                nn.BatchNorm2d(c_out),
                nn.ReLU(),
                nn.MaxPool2d(2),
            ]
            c_in = c_out
        self.conv = nn.Sequential(*blocks)
        self.head = nn.Sequential(nn.Linear(c_in, hidden), nn.ReLU(), nn.Dropout(dropout), nn.Linear(hidden, 1))

    def forward(self, M, q_mask, d_mask):
        M, q_mask, d_mask = pack_map(M, q_mask, d_mask)
        cells = _cells(q_mask, d_mask)
        x = _on_canvas(_map_channels(M, cells, q_mask, d_mask), self.canvas)
        x = self.conv(x).mean(dim=(2, 3))
        return torch.tanh(self.head(x).squeeze(-1))


class PaperPatchTransformerVerifier(Verifier):
    """F4 at the authors' size (`verifiers.py`, F4Verifier with embedding_dim = the encoder's dimension,
    num_layers=1, num_heads=1, ff_dim=32, max_q_len = max_c_len = max_seq_length, as
    `train_and_eval_verifiers_experiment.py` builds it): [M, row-max, col-max] on a fixed
    `canvas` x `canvas` image, 8x8 patches embedded linearly, [CLS] plus a learned position per
    patch, layer norm and dropout, one pre-norm Transformer layer, an MLP head on [CLS], tanh.
    940,065 parameters at dim 384 and canvas 128 (MiniLM, gte-small).

    Patches holding no valid cell are masked as attention keys (as theirs), so padding never
    reaches [CLS]; maps larger than the canvas are trimmed (as theirs).
    """

    name = "F4"
    size = "paper"

    def __init__(
        self,
        dim: int = 384,
        canvas: int = 128,
        ff_dim: int = 32,
        heads: int = 1,
        layers: int = 1,
        patch_size: int = 8,
        dropout: float = 0.1,
        include_special: bool = False,
    ):
        super().__init__(
            include_special,
            dim=dim,
            canvas=canvas,
            ff_dim=ff_dim,
            heads=heads,
            layers=layers,
            patch_size=patch_size,
            dropout=dropout,
        )
        if canvas % patch_size:
            raise ValueError(
                f"canvas {canvas} must be a multiple of patch_size {patch_size} (the authors' "
                "max_seq_length 128 with 8x8 patches); set max_seq_length accordingly"
            )
        self.canvas, self.patch_size = canvas, patch_size
        n_patches = (canvas // patch_size) ** 2
        self.patch_embed = nn.Conv2d(3, dim, kernel_size=patch_size, stride=patch_size)
        self.cls = nn.Parameter(torch.randn(1, 1, dim) * 0.02)
        self.pos = nn.Parameter(torch.randn(1, 1 + n_patches, dim) * 0.02)
        self.norm = nn.LayerNorm(dim)
        self.dropout = nn.Dropout(dropout)
        # A plain list of layers, not nn.TransformerEncoder: its nested-tensor fast path drops masked keys.
        self.blocks = nn.ModuleList(
            nn.TransformerEncoderLayer(
                dim,
                heads,
                dim_feedforward=ff_dim,
                dropout=dropout,
                activation="gelu",
                batch_first=True,
                norm_first=True,
            )
            for _ in range(layers)
        )
        self.head = nn.Sequential(nn.Linear(dim, dim), nn.GELU(), nn.Dropout(dropout), nn.Linear(dim, 1))

    # Run only the patches a valid cell of the batch can reach (see `forward`); False: the whole canvas.
    crop = True

    def forward(self, M, q_mask, d_mask):
        """The authors' geometry on a fixed canvas, computed on the batch's patch box only: patches
        beyond the longest pair hold no valid cell, so they are masked as attention keys and [CLS]
        never reads them; each kept patch keeps its canvas position. Scores in eval mode are those
        of the whole canvas (tests/test_verifiers.py), at a fraction of the cost for sentence pairs
        (~25 tokens: 4 x 4 of 16 x 16 patches; benchmarks/bench_verifier_sizes.py). In training
        mode only the dropout draws differ. F3 has no such shortcut: its batch norm and average
        pooling read the empty canvas."""
        M, q_mask, d_mask = pack_map(M, q_mask, d_mask)
        cells = _cells(q_mask, d_mask)
        p, side = self.patch_size, self.canvas // self.patch_size
        rows, cols = (min(side, -(-M.shape[1] // p)), min(side, -(-M.shape[2] // p))) if self.crop else (side, side)
        x = _on_grid(_map_channels(M, cells, q_mask, d_mask), rows * p, cols * p)
        valid = _on_grid(cells[:, None].float(), rows * p, cols * p)
        tokens = self.patch_embed(x).flatten(2).transpose(1, 2)  # [B, rows x cols patches, dim]
        where = (torch.arange(rows, device=M.device)[:, None] * side + torch.arange(cols, device=M.device)).flatten()
        pos = torch.cat([self.pos[:, :1], self.pos[:, 1 + where]], dim=1)  # each patch's canvas position
        tokens = torch.cat([self.cls.expand(len(tokens), -1, -1), tokens], dim=1) + pos
        tokens = self.dropout(self.norm(tokens))
        patch_valid = F.max_pool2d(valid, self.patch_size).flatten(1) > 0
        ignore = torch.cat([torch.zeros_like(patch_valid[:, :1]), ~patch_valid], dim=1)
        for block in self.blocks:
            tokens = block(tokens, src_key_padding_mask=ignore)
        return torch.tanh(self.head(tokens[:, 0]).squeeze(-1))


REGISTRY: dict[str, type[Verifier]] = {
    "F0": MeanVerifier,
    "F1": MaxSimVerifier,
    "F2": AlignVerifier,
    "F3": CNNVerifier,
    "F4": PatchTransformerVerifier,
}
# The authors' sizes; F0-F2 have one size only.
PAPER_SIZE: dict[str, type[Verifier]] = {"F3": PaperCNNVerifier, "F4": PaperPatchTransformerVerifier}
SIZES = ("small", "paper")


def _strict_bool(value, name: str) -> bool:
    """A real boolean: bool("false") is True, so a string from a hand-edited config must not pass."""
    if isinstance(value, bool):
        return value
    if isinstance(value, (int, np.integer)) and value in (0, 1):
        return bool(value)
    raise ValueError(f"{name} must be true or false (a JSON/YAML boolean), got {value!r}")


def canonical_name(name: str) -> str:
    """'F3', 'f3' or 'cnn' -> 'F3'."""
    key = str(name).strip()
    key = ALIASES.get(key.lower(), key.upper())
    if key not in REGISTRY:
        raise ValueError(f"unknown verifier {name!r}; choose one of {', '.join(NAMES)} or {', '.join(ALIASES)}")
    return key


def create(name: str, seed: int | None = None, size: str = "small", **kwargs) -> Verifier:
    """A new verifier by name ("F0".."F4" or "mean", "maxsim", "align", "cnn", "transformer").

    `size`: "small" (ours) or "paper" (the authors' F3/F4; see `sized_kwargs` for what they need
    from the encoder). `seed` makes the random initialisation reproducible without touching the
    global RNG.
    """
    if size not in SIZES:
        raise ValueError(f"size must be one of {SIZES}, got {size!r}")
    key = canonical_name(name)
    cls = PAPER_SIZE.get(key, REGISTRY[key]) if size == "paper" else REGISTRY[key]
    if seed is None:
        return cls(**kwargs)
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        return cls(**kwargs)


def sized_kwargs(name: str, size: str, encoder_dim: int | None = None, max_seq_length: int | None = None) -> dict:
    """Constructor arguments that a size takes from the encoder: the authors' F3 canvas is the
    max sequence length, their F4's width the encoder's dimension and its canvas the max length
    (`train_and_eval_verifiers_experiment.py`, create_verifier_with_config). {} for the small size."""
    key = canonical_name(name)
    if size != "paper" or key not in PAPER_SIZE:
        return {}
    if max_seq_length is None or (key == "F4" and encoder_dim is None):
        raise ValueError(
            f"the paper-size {key} needs the encoder's max_seq_length"
            f"{' and dimension' if key == 'F4' else ''}; pass them to sized_kwargs"
        )
    return {"canvas": int(max_seq_length), **({"dim": int(encoder_dim)} if key == "F4" else {})}


def size_of(verifier: Verifier) -> str:
    """ "paper" for the authors' F3/F4, "small" otherwise (F0-F2 have one size)."""
    return verifier.size


def n_parameters(verifier: nn.Module, trainable_only: bool = True) -> int:
    return sum(p.numel() for p in verifier.parameters() if p.requires_grad or not trainable_only)


def save(verifier: Verifier, directory: str | os.PathLike, extra: dict | None = None) -> Path:
    """Write `verifier.json` (name, config, parameter count, `extra`) and `verifier.safetensors`."""
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    state = {k: v.detach().cpu().contiguous() for k, v in verifier.state_dict().items()}
    with atomic_path(directory / WEIGHTS_FILE) as tmp:
        save_file(state, str(tmp))
    write_json(
        directory / CONFIG_FILE,
        {
            "name": verifier.name,
            "size": size_of(verifier),
            "config": verifier.config,
            "n_parameters": n_parameters(verifier),
            # `load` checks it: weights damaged in place at the same size are not scored with
            WEIGHTS_SHA256: sha256_file(directory / WEIGHTS_FILE),
            **(extra or {}),
        },
    )
    return directory


def load(directory: str | os.PathLike, device=None) -> Verifier:
    """The verifier saved in `directory` by `save`, in eval mode."""
    directory = Path(directory)
    config_path = directory / CONFIG_FILE
    if not config_path.exists():
        raise FileNotFoundError(f"{config_path} does not exist: not a saved verifier (see verifiers.save)")
    meta = read_info(directory)
    try:
        verifier = create(meta["name"], size=meta.get("size", "small"), **meta["config"])
    except (KeyError, TypeError, ValueError) as err:
        raise ValueError(
            f"{config_path}: not a verifier config compsense can build ({type(err).__name__}: {err}); "
            "it needs `name` and `config` as verifiers.save writes them. Re-train the verifier "
            "(notebook 04) or restore the file"
        ) from None
    weights = directory / WEIGHTS_FILE
    try:
        state = load_file(str(weights))
    except (SafetensorError, OSError) as err:
        raise CorruptFile(
            f"{weights}: not readable verifier weights ({type(err).__name__}: {err}). Fix: re-train the "
            "verifier (delete its folder and re-run notebook 04), or restore the file"
        ) from None
    recorded = meta.get(WEIGHTS_SHA256)  # absent in verifiers saved before digests were recorded
    if recorded and sha256_file(weights) != recorded:  # readable, but not the weights save wrote
        raise CorruptFile(
            f"{weights}: its content differs from the sha256 {CONFIG_FILE} recorded (damaged?). Fix: delete "
            f"{directory} and re-run notebook 04 (it trains the verifier again), or restore the file"
        )
    verifier.load_state_dict(state)
    if device is not None:
        verifier.to(device)
    return verifier.eval()


def read_info(directory: str | os.PathLike) -> dict:
    """The JSON saved beside a verifier (name, config, training history, where its encoder is)."""
    path = Path(directory) / CONFIG_FILE
    try:
        info = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise FileNotFoundError(f"{path} does not exist: not a saved verifier (see verifiers.save)") from None
    except (json.JSONDecodeError, UnicodeDecodeError) as err:
        raise ValueError(
            f"{path} is truncated or corrupt ({err}); re-train the verifier (notebook 04) or restore the file"
        ) from None
    if not isinstance(info, dict):
        raise ValueError(f"{path}: expected a JSON object, got {type(info).__name__}; re-train the verifier")
    return info


class MissingEncoder(FileNotFoundError):
    """An end-to-end verifier whose own encoder folder is gone: it cannot score (its weights read the
    maps of the encoder it was fine-tuned with, no other); the message names the folder and the fix."""


def own_encoder_dir(directory: str | os.PathLike, info: dict | None = None, end2end: bool | None = None) -> Path | None:
    """<directory>/encoder/ for an end-to-end verifier, None for one that reads the backbone's maps.
    `end2end` None: decided by `info` (the saved JSON; `training.fit_verifier` records "encoder/") or
    the folder's name (the layout's <F>-end2end). Raises MissingEncoder when an end-to-end verifier's
    encoder folder (its modules.json) is gone while its weights remain: loading the path then asked
    the hub for a model named like it ("Repo id must be ...")."""
    directory = Path(directory)
    if end2end is None:
        info = read_info(directory) if info is None else info
        end2end = info.get("encoder") == f"{ENCODER_DIR}/" or directory.name.endswith("-end2end")
    if not end2end:
        return None
    folder = directory / ENCODER_DIR
    if not (folder / "modules.json").is_file():
        raise MissingEncoder(
            f"{folder}: missing (no modules.json), so the end-to-end verifier {directory.name} cannot score: it "
            "reads only the maps of the encoder it was fine-tuned with. Fix: re-train it: re-run notebook 04 "
            f"(`{rerun_stage('04')}`, or notebooks/04_verifiers.ipynb), "
            "which trains a verifier whose encoder is missing again"
        )
    return folder


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


def score_pairs(
    encoder, verifier: Verifier, pairs, batch_size: int = 64, cache_dir=None, device=None, show_progress: bool = False
) -> np.ndarray:
    """Verifier scores of (query, document) pairs: every distinct text is encoded once.

    `pairs` is a list of (query, document) tuples, of records with sentence1/sentence2, or a
    DataFrame with those columns. `cache_dir` keeps the token embeddings on disk for next time.
    """
    pairs = as_pairs(pairs)
    if not pairs:
        return np.zeros(0, dtype=np.float32)
    texts = sorted({t for pair in pairs for t in pair})
    cache = TokenCache(
        encoder,
        texts,
        cache_dir,
        include_special=verifier.include_special,
        batch_size=batch_size,
        device=device,
        show_progress=show_progress,
    )
    rows_q, rows_d = cache.rows([p[0] for p in pairs]), cache.rows([p[1] for p in pairs])
    target = device_of(verifier, torch.device(device) if device else None)
    scores = []
    for start in tqdm(
        range(0, len(pairs), batch_size), desc=f"scoring ({verifier.name})", disable=not show_progress, leave=False
    ):
        q = cache.batch(rows_q[start : start + batch_size], device=target)
        d = cache.batch(rows_d[start : start + batch_size], device=target)
        scores.append(score_maps(verifier, *similarity_map(q, d)).float().cpu())
    return torch.cat(scores).numpy()


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


def _on_canvas(x, canvas: int) -> torch.Tensor:
    """[B, C, H, W] zero-padded or trimmed to [B, C, canvas, canvas] (the authors' fixed input size)."""
    return _on_grid(x, canvas, canvas)


def _on_grid(x, height: int, width: int) -> torch.Tensor:
    """[B, C, H, W] zero-padded or trimmed to [B, C, height, width]."""
    x = F.pad(x, (0, max(0, width - x.shape[3]), 0, max(0, height - x.shape[2])))
    return x[:, :, :height, :width]


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
