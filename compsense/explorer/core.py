"""What the similarity-map explorer shows, as plain functions: tokens, the map, MaxSim matches,
scores and the near-miss table. `compsense.explorer.widgets` is a thin shell of ipywidgets over this module,
so everything a user sees is computed (and tested) here.

The point of the explorer: pooled cosine compares two sentence vectors, and a role swap or a
negation barely moves them. The token x token map M keeps the structure the pooling threw away,
and the verifiers read it differently: F0 (mean of M) and F1 (MaxSim, each query token's best
match) are bags of tokens, as blind to word order as the pooled cosine; F2 adds a position
penalty, so a token whose best match sits far off the diagonal stops counting fully. Trained
F3/F4 (notebook 04) learn their own reading of M.

A `Session` finds what there is to explore under a profile's work_dir: the base backbones that
load offline, the Model A/B checkpoints notebook 02 saved (`models/<backbone>/<variant>-seed<seed>/
final/`) and the verifiers notebook 04 saved (`verifiers/<name>-<regime>/`); F0-F2 need no training
and are always there. Encoders load on first use; token and pooled embeddings are cached per
(encoder, text) in a small LRU, so editing one sentence re-encodes only that sentence.
"""

from __future__ import annotations

import functools
import html
import logging
import os
from collections import OrderedDict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Sequence

import numpy as np
import pandas as pd
import plotly.graph_objects as go
import torch

from compsense.core.encoders import (
    MOSTLY_UNKNOWN,
    build_tiny_bert,
    embedding_dim,
    encode_pooled,
    load_encoder,
    offline_status,
    quiet_transformers,
    unknown_count,
)
from compsense.core.layout import FINAL, trained_model_dirs, verifiers_root
from compsense.data.negatives import perturb
from compsense.explorer.scorers import (
    DIFFERENT,
    SAME,
    SCORERS_DIR,
    UNTRAINED,
    above_chance,
    shipped,
    untrained_calibration,
    untrained_verifier,
    verdict,
)
from compsense.verifiers.architectures import (
    CONFIG_FILE,
    ENCODER_DIR,
    AlignVerifier,
    load,
    own_encoder_dir,
    read_info,
    score_maps,
    token_positions,
)
from compsense.verifiers.simmap import TokenBatch, encoder_fingerprint, similarity_map, token_embeddings

log = logging.getLogger(__name__)

POOLED = "pooled cosine"
# Untrained verifiers: parameter-free (F0, F1) or with the paper's fixed lam = tau = 0.1 (F2).
BASE_VERIFIERS = {"F0 mean": "F0", "F1 MaxSim": "F1", "F2 alignment": "F2"}
ABOUT = {
    POOLED: "-1 to 1: cosine of the two mean-pooled sentence vectors (what the retriever ranks by)",
    "F0": "-1 to 1: mean of every cell of the map, a bag of token similarities",
    "F1": "-1 to 1: mean over A's tokens of the row maximum (the squares): blind to word order",
    "F2": "-1 to 1: like F1, but each match pays for its distance from the diagonal (the green dots)",
}
# A trained verifier's score is a logit: no fixed range, so only its order across pairs means something.
TRAINED_ABOUT = {
    "F0": "like F0 above, on maps of its own fine-tuned encoder",
    "F1": "like F1 above, on maps of its own fine-tuned encoder",
    "F2": "like F2 above, with a learned diagonal penalty",
    "F3": "learned score of a small CNN over the map; no fixed range: compare it across pairs "
    "(higher: more alike), not with the cosine",
    "F4": "learned score of a Transformer over the map's patches; no fixed range: compare it "
    "across pairs (higher: more alike), not with the cosine",
}


def about(label: str) -> str:
    """What a score row means and its range: the pooled cosine and F0-F2 by label; a trained verifier
    ("model_b-small/seed42/F4-frozen (trained on MiniLM)", "F4 (trained on MiniLM, shipped)") by the
    verifier name in its folder or title."""
    if label in ABOUT:
        return ABOUT[label]
    if label in BASE_VERIFIERS:
        return ABOUT[BASE_VERIFIERS[label]]
    folder = label.split(" (")[0].rstrip("/").split("/")[-1]  # "F4 authors' size" for a shipped scorer
    return TRAINED_ABOUT.get(folder.split("-")[0].split(" ")[0], "")


@dataclass
class VerifierEntry:
    """A verifier the explorer can score with. `encoder` (a directory) is set for end-to-end
    verifiers, which score maps of their own fine-tuned encoder rather than the selected one."""

    label: str
    verifier: torch.nn.Module
    encoder: str | None = None
    source: Path | None = None
    info: dict = field(default_factory=dict)
    card: dict | None = None  # a shipped scorer's card (compsense.explorer.scorers)

    @property
    def name(self) -> str:
        return self.verifier.name


@dataclass
class PairView:
    """Everything on screen for one (sentence A, sentence B) pair under one encoder.

    M[i, j] is the cosine of A's token i and B's token j; `maxsim[i]` is the column of token i's
    best match (-1 when B has no tokens); `alignment[i]` the column where the explained verifier's
    soft alignment puts most weight (F2), or None when that verifier has no such reading.
    """

    query: str
    document: str
    query_tokens: list[str]
    document_tokens: list[str]
    M: np.ndarray
    maxsim: np.ndarray
    maxsim_values: np.ndarray
    scores: dict[str, float]
    alignment: np.ndarray | None = None
    explained: str | None = None
    notes: list[str] = field(default_factory=list)  # shown beside the scores: a sentence cut or without tokens, ...
    verdicts: dict[str, "Verdict"] = field(default_factory=dict)  # per scorer, as `scores`
    reading: str = ""  # the map in one sentence (`read_map`)


class TextCache:
    """Per-text token embeddings and pooled embeddings under one encoder, least recently used
    dropped first. `encoded` counts texts sent through the encoder (what a cache hit saves)."""

    def __init__(self, encoder, maxsize: int = 256, device=None):
        self.encoder = encoder
        self.maxsize = maxsize
        self.device = device
        self.encoded = 0
        self._tokens: OrderedDict = OrderedDict()
        self._pooled: OrderedDict = OrderedDict()
        self._lengths: OrderedDict = OrderedDict()

    def tokens(self, texts: Sequence[str], include_special: bool = False) -> list[tuple[torch.Tensor, list[str]]]:
        """(embeddings [L, D] on the CPU, L2-normalized; tokens) of each text."""
        keys = [(bool(include_special), t) for t in texts]
        missing = list(dict.fromkeys(t for k, t in zip(keys, texts) if k not in self._tokens))
        if missing:
            batch = token_embeddings(self.encoder, missing, include_special=include_special, device=self.device)
            self.encoded += len(missing)
            emb, lengths = batch.embeddings.float().cpu(), batch.lengths.cpu()
            for r, text in enumerate(missing):
                self._put(
                    self._tokens,
                    (bool(include_special), text),
                    (emb[r, : int(lengths[r])].clone(), list(batch.tokens[r])),
                )
        return [self._get(self._tokens, k) for k in keys]

    def pooled(self, texts: Sequence[str]) -> np.ndarray:
        """Normalized sentence embeddings [n, D], the encoder's own pooling."""
        missing = list(dict.fromkeys(t for t in texts if t not in self._pooled))
        if missing:
            emb = encode_pooled(self.encoder, missing, "sentence", device=self.device).cpu().numpy()
            self.encoded += len(missing)
            for text, vec in zip(missing, emb):
                self._put(self._pooled, text, vec)
        return np.stack([self._get(self._pooled, t) for t in texts])

    def length(self, text: str) -> int | None:
        """Tokens the encoder's tokenizer makes of `text` before any truncation, special tokens
        included (None for an encoder without a tokenizer to ask)."""
        tokenizer = getattr(self.encoder, "tokenizer", None)
        if tokenizer is None:
            return None
        if text not in self._lengths:  # verbose=False: no "longer than the maximum" warning, the note says it
            self._put(self._lengths, text, len(tokenizer(text, truncation=False, verbose=False)["input_ids"]))
        return self._get(self._lengths, text)

    def batch(self, texts: Sequence[str], include_special: bool = False):
        """A packed simmap.TokenBatch of `texts`, padded to the longest of them."""
        rows = self.tokens(texts, include_special)
        length = max([1] + [e.shape[0] for e, _ in rows])
        dim = next((e.shape[1] for e, _ in rows if e.shape[0]), embedding_dim(self.encoder))
        emb = torch.zeros(len(rows), length, dim)
        mask = torch.zeros(len(rows), length, dtype=torch.bool)
        for r, (e, _) in enumerate(rows):
            emb[r, : e.shape[0]] = e
            mask[r, : e.shape[0]] = True
        return TokenBatch(emb, mask, [toks for _, toks in rows])

    def _put(self, store: OrderedDict, key, value) -> None:
        store[key] = value
        store.move_to_end(key)
        while len(store) > self.maxsize:
            store.popitem(last=False)

    @staticmethod
    def _get(store: OrderedDict, key):
        store.move_to_end(key)
        return store[key]


def token_map(cache: TextCache, query: str, document: str, include_special: bool = False):
    """(M [Lq, Ld] as numpy, query tokens, document tokens)."""
    q, d = cache.batch([query], include_special), cache.batch([document], include_special)
    M, q_mask, d_mask = similarity_map(q, d)
    lq, ld = int(q_mask.sum()), int(d_mask.sum())
    return M[0, :lq, :ld].numpy().copy(), q.tokens[0], d.tokens[0]


def text_notes(cache: TextCache, which: str, text: str, kept: int | Sequence[str]) -> list[str]:
    """What the view must say about one of its sentences (`which`: "A" or "B"; `kept`: its tokens on
    the map, or their count): that it has none, so its scores are placeholders; that the encoder cut it
    to its max_seq_length, so the map and every score read only its start; that some of its tokens are
    the tokenizer's unknown token, which every unknown piece of text shares ("🐱 🐶" and "🐶 🐱" are both
    [UNK] [UNK] to MiniLM, pooled cosine 1.000), so a difference there is invisible to every score."""
    tokens = None if isinstance(kept, int) else list(kept)
    n_kept = kept if tokens is None else len(tokens)
    if n_kept == 0:
        return [
            f"sentence {which} has no tokens (empty, or only characters the tokenizer drops): its scores are "
            "placeholders, not judgements; type a sentence"
        ]
    notes = []
    total, limit = cache.length(text), getattr(cache.encoder, "max_seq_length", None)
    if total is not None and limit and total > limit:
        notes.append(
            f"sentence {which} is {total:,} tokens long, cut to the encoder's max_seq_length of {limit}: the map "
            f"and every score read only its first {n_kept} tokens"
        )
    tokenizer = getattr(cache.encoder, "tokenizer", None)
    unknown = unknown_count(tokens, tokenizer) if tokens is not None and tokenizer is not None else 0
    if unknown:
        mostly = "mostly " if unknown >= MOSTLY_UNKNOWN * n_kept else ""
        notes.append(
            f"sentence {which} is {mostly}unknown to the encoder's vocabulary: {unknown} of its {n_kept} tokens "
            f"({unknown / n_kept:.0%}) are {tokenizer.unk_token}, one placeholder for any text the vocabulary "
            "lacks (emoji, many non-Latin scripts), so sentences that differ only there score as identical"
        )
    return notes


def maxsim_matches(M: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Each query token's best-matching document token (column, cosine); -1 and nan for an empty document."""
    M = np.asarray(M, dtype=np.float32)
    if M.shape[1] == 0:
        return np.full(M.shape[0], -1), np.full(M.shape[0], np.nan, dtype=np.float32)
    cols = M.argmax(axis=1)
    return cols, M[np.arange(M.shape[0]), cols]


def soft_alignment(verifier, M: np.ndarray) -> np.ndarray | None:
    """F2's attention of each query token over document tokens, softmax_j((M_ij - lam|i-j|)/tau),
    as the verifier computes it (its own lam, tau and position convention); None for others."""
    if not isinstance(verifier, AlignVerifier) or 0 in M.shape:
        return None
    with torch.no_grad():
        m = torch.as_tensor(np.asarray(M, dtype=np.float32))[None]
        q_mask = torch.ones(1, m.shape[1], dtype=torch.bool)
        d_mask = torch.ones(1, m.shape[2], dtype=torch.bool)
        pos_q = token_positions(q_mask, verifier.normalize_positions)
        pos_d = token_positions(d_mask, verifier.normalize_positions)
        distance = (pos_q[:, :, None] - pos_d[:, None, :]).abs()
        weights = torch.softmax((m - verifier.lam.cpu() * distance) / verifier.tau.cpu(), dim=-1)
    return weights[0].numpy()


def pooled_cosines(cache: TextCache, query: str, documents: Sequence[str]) -> np.ndarray:
    emb = cache.pooled([query, *documents])
    return emb[1:] @ emb[0]


def verifier_scores(cache: TextCache, verifier, query: str, documents: Sequence[str]) -> np.ndarray:
    """Scores of (query, document) for each document, from cached token embeddings."""
    if not documents:
        return np.zeros(0, dtype=np.float32)
    include_special = getattr(verifier, "include_special", False)
    q = cache.batch([query] * len(documents), include_special)
    d = cache.batch(list(documents), include_special)
    return score_maps(verifier, *similarity_map(q, d)).float().cpu().numpy()


def discover_encoders(work_dir: str | os.PathLike | None, backbone: str | None = None) -> dict[str, str]:
    """Encoders to choose from, label -> name or directory: `backbone` first, then the other
    backbones that load offline, then every Model A/B checkpoint saved under work_dir."""
    found: dict[str, str] = {}
    available = [n for n, s in offline_status().items() if not s.startswith("unavailable")]
    if backbone is not None:
        found[_base_label(backbone)] = backbone
    for name in available:
        found.setdefault(_base_label(name), name)
    if work_dir is not None:
        for run in trained_model_dirs(work_dir):
            final = run / FINAL / "modules.json"
            if not final.exists():
                continue
            found[f"{run.parent.name} {_variant_label(run.name)}"] = str(final.parent)
    return found


def discover_verifiers(
    work_dir: str | os.PathLike | None, scorers_dir: str | os.PathLike | None = SCORERS_DIR
) -> dict[str, VerifierEntry]:
    """F0-F2 untrained (always), the scorers shipped under `scorers_dir` (the package's trained MiniLM
    scorers by default; None: none), then every verifier saved under `{work_dir}/verifiers/`.

    Every trained verifier's label says what encoder's maps it learned from (`trained_on`), so one
    trained on the random tiny test BERT or on another encoder cannot pass for a MiniLM one. A folder
    that does not load (half-written, another version) is skipped with a warning.
    """
    entries = {label: VerifierEntry(label, untrained_verifier(name)) for label, name in BASE_VERIFIERS.items()}
    minilm = minilm_fingerprint(scorers_dir)
    for spec, folder, card in shipped(scorers_dir):
        try:
            verifier, info = load(folder), read_info(folder)
        except Exception as err:
            log.warning("explorer: skipping shipped scorer %s (%s: %s)", folder, err.__class__.__name__, err)
            continue
        label = f"{spec.title} ({trained_on(card.get('encoder', {}).get('fingerprint'), minilm)}, shipped)"
        entries[label] = VerifierEntry(label, verifier, None, folder, info, card)
    if work_dir is None:
        return entries
    root = verifiers_root(work_dir)
    for config in sorted(root.glob(f"**/{CONFIG_FILE}")):
        folder = config.parent
        if ENCODER_DIR in folder.relative_to(root).parts:  # an end-to-end run's encoder, not a verifier
            continue
        try:  # an end-to-end verifier without its encoder would score maps of the wrong one: MissingEncoder
            verifier, info = load(folder), read_info(folder)
            encoder_dir = own_encoder_dir(folder, info)
        except Exception as err:
            log.warning("explorer: skipping %s (%s: %s)", folder, err.__class__.__name__, err)
            continue
        own_encoder = str(encoder_dir) if encoder_dir else None
        history = info.get("history", {}) if isinstance(info, dict) else {}
        if not own_encoder and history.get("trained") is False:
            continue  # a frozen F0/F1/F2 folder learned nothing: the same function as its untrained row above
        settings = info.get("settings") if isinstance(info, dict) else None
        learned_from = trained_on((settings or {}).get("encoder") if isinstance(settings, dict) else None, minilm)
        label = f"{folder.relative_to(root).as_posix()} ({learned_from}{', own encoder' if own_encoder else ''})"
        entries[label] = VerifierEntry(label, verifier, own_encoder, folder, info)
    return entries


# ----------------------------------------------------------------------------- what a verifier learned from

MINILM = "MiniLM"
TINY = "the random tiny test BERT: meaningless"
TINY_SEEDS = (0, 42, 43, 44)  # the tiny BERT's seeds the project trains with: the tests' 0, the profiles' 42-44


def trained_on(fingerprint: str | None, minilm: str | None) -> str:
    """What a trained verifier's label says about the maps it learned from, by the encoder fingerprint
    its training recorded (verifier.json's settings.encoder): all-MiniLM-L6-v2 (`minilm`, the
    fingerprint the shipped scorers record), the tiny random BERT the tests and the smoke profile
    use, or another encoder."""
    if not fingerprint:
        return "trained; encoder not recorded"
    if minilm and fingerprint == minilm:
        return f"trained on {MINILM}"
    if fingerprint in tiny_fingerprints():
        return f"trained on {TINY}"
    return f"trained on another encoder, not {MINILM}" if minilm else "trained on an unidentified encoder"


@functools.lru_cache(maxsize=1)
def tiny_fingerprints() -> frozenset[str]:
    """Fingerprints (first 16 characters, as training records them) of the tiny BERT at TINY_SEEDS:
    built offline in a fraction of a second each, once per process."""
    return frozenset(encoder_fingerprint(build_tiny_bert(seed=seed))[:16] for seed in TINY_SEEDS)


def minilm_fingerprint(scorers_dir: str | os.PathLike | None = SCORERS_DIR) -> str | None:
    """all-MiniLM-L6-v2's fingerprint as the shipped scorers recorded it (None without them, or when
    they were built on another backbone)."""
    encoder = untrained_calibration(scorers_dir).get("encoder", {})
    return encoder.get("fingerprint") if encoder.get("backbone") == "minilm-l6" else None


# ----------------------------------------------------------------------------- verdicts


@dataclass(frozen=True)
class Calibration:
    """A scorer's verdict rule, from the shipped cards: "same meaning" at or above `threshold`;
    `accuracy` (and its interval) is the balanced accuracy it gives on held-out paraphrases and
    near-misses; it holds for the maps of the encoder whose fingerprint is `encoder` only."""

    threshold: float
    accuracy: float
    interval: tuple[float, float]
    encoder: str
    backbone: str

    @property
    def chance(self) -> bool:
        """Whether the held-out accuracy's interval reaches 50%: its verdicts are no better than a coin."""
        return not above_chance(self.interval)


@dataclass(frozen=True)
class Verdict:
    """One scorer's verdict on one pair: `call` is "same meaning", "different", or None with `why`."""

    call: str | None
    score: float
    calibration: Calibration | None = None
    why: str = ""

    @property
    def text(self) -> str:
        """ "different (0.971 < 0.983; 64% right on held-out pairs)", or "no verdict: why"."""
        if self.call is None:
            return f"no verdict: {self.why}"
        c = self.calibration
        sign = "≥" if self.call == SAME else "<"
        chance = ", no better than chance" if c.chance else ""
        return (
            f"{self.call} ({self.score:.3f} {sign} {c.threshold:.3f}; {c.accuracy:.0%} right on held-out pairs{chance})"
        )


def calibrations(verifiers: dict[str, VerifierEntry], scorers_dir=SCORERS_DIR) -> dict[str, Calibration]:
    """{scorer label: Calibration} for the pooled cosine and F0-F2 (untrained.json) and each shipped
    scorer (its card); scorers without one (those a run trained) give no verdict."""
    stored = untrained_calibration(scorers_dir)
    encoder = stored.get("encoder", {})
    labels = {"pooled": POOLED, **{name: label for label, name in BASE_VERIFIERS.items()}}
    found = {}
    for key in UNTRAINED:
        block = stored.get("scorers", {}).get(key)
        if block:
            found[labels[key]] = _calibration(block, encoder)
    for label, entry in verifiers.items():
        if entry.card:
            found[label] = _calibration(entry.card["heldout"], entry.card.get("encoder", {}))
    return found


def _calibration(block: dict, encoder: dict) -> Calibration:
    return Calibration(
        float(block["threshold"]),
        float(block["balanced_accuracy"]),
        tuple(block.get("interval", (float("nan"), float("nan")))),
        str(encoder.get("fingerprint", "")),
        str(encoder.get("backbone", "another encoder")),
    )


def verdicts(scores: dict[str, float], calibrated: dict[str, Calibration], fingerprint: str) -> dict[str, Verdict]:
    """Each scorer's verdict on one pair: its stored threshold applied to its score, when the pair's
    maps come from the encoder the threshold was calibrated on (`fingerprint`: the first 16
    characters of `encoder_fingerprint`); otherwise no verdict, and why."""
    out = {}
    for label, score in scores.items():
        cal = calibrated.get(label)
        if score is None or not np.isfinite(score):
            out[label] = Verdict(None, float("nan"), cal, "no score")
        elif cal is None:
            out[label] = Verdict(None, score, None, "no calibrated threshold (only the shipped scorers have one)")
        elif cal.encoder != fingerprint:
            out[label] = Verdict(None, score, cal, f"its threshold holds for {cal.backbone}'s maps, not this encoder's")
        else:
            out[label] = Verdict(verdict(score, cal.threshold), score, cal)
    return out


# ----------------------------------------------------------------------------- the map in one sentence

# Under MiniLM a word matches itself in another context at 0.9-1.0, and a swapped-in word, a synonym or
# a word whose context a negation changed at 0.7-0.9: below CLOSE a token has lost its close match.
CLOSE = 0.85
OFF_DIAGONAL = 2  # places from the diagonal (scaled to B's length) at which a best match counts as moved
MAX_NAMED = 3  # tokens named per clause


def moved_tokens(M: np.ndarray) -> list[tuple[int, int, int]]:
    """(A token, its best match in B, signed places off the diagonal) for each A token whose best match
    is close (>= CLOSE) but sits OFF_DIAGONAL or more places from where the diagonal, scaled to B's
    length, puts it: a word that found itself elsewhere, as in a role swap."""
    lq, ld = M.shape
    if lq == 0 or ld == 0:
        return []
    cols, values = maxsim_matches(M)
    expected = np.rint(np.arange(lq) * (ld - 1) / max(lq - 1, 1)).astype(int)
    offset = cols - expected
    return [
        (i, int(cols[i]), int(offset[i])) for i in range(lq) if values[i] >= CLOSE and abs(offset[i]) >= OFF_DIAGONAL
    ]


def unmatched_tokens(M: np.ndarray) -> tuple[list[tuple[int, int, float]], list[int]]:
    """(A tokens without a close match in B, as (token, best match, cosine), lowest first; B tokens no A
    token comes close to and none takes as its best match, in order): what an edit replaced or added."""
    lq, ld = M.shape
    if lq == 0 or ld == 0:
        return [], []
    cols, values = maxsim_matches(M)
    weak = sorted((i for i in range(lq) if values[i] < CLOSE), key=lambda i: values[i])
    taken = set(cols.tolist())
    new = [j for j in range(ld) if M[:, j].max() < CLOSE and j not in taken]
    return [(i, int(cols[i]), float(values[i])) for i in weak], new


def read_map(view: PairView) -> str:
    """The map in one sentence: which of A's tokens moved (a close best match off the diagonal), which
    lost their close match and which of B's tokens are new, then whether the pooled vector noticed
    (its verdict, `view.verdicts[POOLED]`)."""
    if 0 in view.M.shape:
        return "Reading the map: nothing to read, one sentence has no tokens."
    q, d = view.query_tokens, view.document_tokens
    clauses = []
    moved = moved_tokens(view.M)
    if moved:
        items = [f"'{q[i]}'" + (f" (to '{d[j]}')" if d[j] != q[i] else "") for i, j, _ in moved]
        places = sorted({abs(k) for _, _, k in moved})
        where = str(places[0]) if len(places) == 1 else f"{places[0]} to {places[-1]}"
        one = len(moved) == 1
        clauses.append(
            f"A's {_named(items)} moved ({'its' if one else 'their'} best match{'' if one else 'es'} in B "
            f"{'sits' if one else 'sit'} {where} places off the diagonal)"
        )
    weak, new = unmatched_tokens(view.M)
    if new:  # before the lost matches: an added word (a negation's "not") is the edit; lost matches may be its echo
        words = _named([f"'{d[j]}'" for j in new])
        clauses.append(f"B's {words} match{'es' if len(new) == 1 else ''} nothing in A")
    if weak:
        items = [f"'{q[i]}' (closest in B: '{d[j]}', {v:.2f})" for i, j, v in weak]
        clauses.append(f"A's {_named(items)} lost {'its' if len(weak) == 1 else 'their'} close match")
    pooled = view.verdicts.get(POOLED)
    cosine = view.scores.get(POOLED, float("nan"))
    if pooled is None or pooled.call is None:
        why = f" ({pooled.why})" if pooled is not None and pooled.why else ""
        noticed = f"the pooled cosine is {cosine:.3f}, with no verdict{why}"
    else:
        threshold = pooled.calibration.threshold
        if pooled.call == DIFFERENT:
            noticed = f"the pooled vector noticed (cosine {cosine:.3f} < its threshold {threshold:.3f}: different)"
        else:
            did = "did not notice" if clauses else "agrees"
            noticed = f"the pooled vector {did} (cosine {cosine:.3f} ≥ its threshold {threshold:.3f}: same meaning)"
    if not clauses:
        clauses = ["every token of A keeps a close match in place"]
    return "Reading the map: " + "; ".join(clauses) + "; " + noticed + "."


def _named(items: list[str]) -> str:
    """'a', 'a and b', 'a, b and c', 'a, b, c and 2 more'."""
    shown, rest = items[:MAX_NAMED], len(items) - MAX_NAMED
    if rest > 0:
        return ", ".join(shown) + f" and {rest} more"
    return shown[0] if len(shown) == 1 else ", ".join(shown[:-1]) + " and " + shown[-1]


class Session:
    """Encoders and verifiers found under `work_dir`, loaded on first use and cached.

    `view(a, b, encoder)` is what the map panel shows; `near_miss_table(a, encoder)` the table.
    """

    def __init__(
        self,
        work_dir: str | os.PathLike | None = "runs/smoke",
        backbone: str = "tiny-bert",
        device=None,
        seed: int = 0,
        cache_size: int = 256,
        max_encoders: int = 3,
        scorers_dir: str | os.PathLike | None = SCORERS_DIR,
    ):
        self.work_dir, self.backbone, self.device, self.seed = work_dir, backbone, device, seed
        self.cache_size = cache_size
        self.encoders = discover_encoders(work_dir, backbone)
        self.verifiers = discover_verifiers(work_dir, scorers_dir)
        self.calibrated = calibrations(self.verifiers, scorers_dir)  # label -> threshold, for the verdicts
        # Room for the selected encoder, one more, and each end-to-end verifier's own encoder.
        self.max_encoders = max(max_encoders, 2 + sum(1 for v in self.verifiers.values() if v.encoder))
        self._caches: OrderedDict[str, TextCache] = OrderedDict()
        self._pinned: dict[str, TextCache] = {}  # encoders handed over in memory: never evicted
        self.problems: dict[str, str] = {}  # verifier label -> why it could not score (shown, not raised)
        self._fingerprints: dict[str, str] = {}  # encoder label -> encoder_fingerprint (first 16 characters)

    def add_encoder(self, label: str, encoder, first: bool = False) -> None:
        """Offer an encoder already in memory (a SentenceTransformer) under `label`."""
        self.encoders[label] = label
        if first:
            self.encoders = {label: label, **{k: v for k, v in self.encoders.items() if k != label}}
        self._pinned[label] = TextCache(encoder, self.cache_size, self.device)

    @property
    def default_encoder(self) -> str:
        return next(iter(self.encoders))

    def cache(self, encoder: str) -> TextCache:
        """The TextCache of an encoder label (or a name / directory), loading the encoder once."""
        source = self.encoders.get(encoder, encoder)
        if source in self._pinned:
            return self._pinned[source]
        if source not in self._caches:
            with quiet_transformers():  # no "Loading weights" bar inside the widget
                model = load_encoder(source, device=self.device, seed=self.seed)
            self._caches[source] = TextCache(model, self.cache_size, self.device)
            while len(self._caches) > self.max_encoders:
                self._caches.popitem(last=False)
        self._caches.move_to_end(source)
        return self._caches[source]

    def scores(self, encoder: str, query: str, documents: Sequence[str]) -> dict[str, np.ndarray]:
        """Pooled cosine and every verifier's score of (query, d) for each d, in display order."""
        cache = self.cache(encoder)
        out = {POOLED: pooled_cosines(cache, query, documents)}
        for label, entry in self.verifiers.items():
            try:
                own = self.cache(entry.encoder) if entry.encoder else cache
                out[label] = verifier_scores(own, entry.verifier, query, documents)
                self.problems.pop(label, None)
            except Exception as err:  # one broken saved verifier (or its encoder) must not blank the rest
                log.warning("explorer: %s failed: %s", label, err)
                self.problems[label] = f"{label}: {err.__class__.__name__}: {str(err)[:200]}"
                out[label] = np.full(len(documents), np.nan, dtype=np.float32)
        return out

    def foreign_notes(self, encoder: str | None = None) -> list[str]:
        """One note per trained frozen verifier whose training maps came from another encoder than
        `encoder` (verifier.json's settings.encoder fingerprint differs): its scores here are read off
        maps it never saw, so the view says so rather than show them as judgements."""
        encoder = encoder or self.default_encoder
        trained = {
            label: str(entry.info.get("settings", {}).get("encoder", ""))
            for label, entry in self.verifiers.items()
            if entry.encoder is None and isinstance(entry.info, dict) and entry.info.get("settings", {}).get("encoder")
        }
        if not trained:
            return []
        mine = self.fingerprint(encoder)
        foreign = sorted(label for label, print_ in trained.items() if print_ != mine)
        if not foreign:
            return []
        return [
            f"{len(foreign)} trained verifier(s) learned from maps of another encoder than {encoder} "
            f"(e.g. {foreign[0]}): their scores here are outside what they were trained on"
        ]

    def fingerprint(self, encoder: str) -> str:
        """`encoder_fingerprint` of an encoder label (first 16 characters, as training records it), once."""
        if encoder not in self._fingerprints:
            self._fingerprints[encoder] = encoder_fingerprint(self.cache(encoder).encoder)[:16]
        return self._fingerprints[encoder]

    def view(self, query: str, document: str, encoder: str | None = None, explain: str | None = None) -> PairView:
        """The map of (query, document), MaxSim matches, every score, and the `explain` verifier's
        alignment when it has one (F2)."""
        encoder = encoder or self.default_encoder
        cache = self.cache(encoder)
        M, q_tokens, d_tokens = token_map(cache, query, document)
        cols, values = maxsim_matches(M)
        scores = {k: float(v[0]) for k, v in self.scores(encoder, query, [document]).items()}
        entry = self.verifiers.get(explain) if explain else None
        notes = text_notes(cache, "A", query, q_tokens) + text_notes(cache, "B", document, d_tokens)
        alignment, notes = None, notes + self.foreign_notes(encoder) + list(self.problems.values())
        if entry is not None:
            weights = soft_alignment(entry.verifier, M) if entry.encoder is None else None
            alignment = weights.argmax(axis=1) if weights is not None else None
            if entry.encoder:
                notes.append(f"{entry.label} scores maps of its own fine-tuned encoder, not the one shown")
        view = PairView(
            query,
            document,
            q_tokens,
            d_tokens,
            M,
            cols,
            values,
            scores,
            alignment,
            explain if entry is not None else None,
            notes,
            verdicts(scores, self.calibrated, self.fingerprint(encoder)),
        )
        view.reading = read_map(view)
        return view

    def verdict_table(
        self, pairs: dict[str, tuple[str, str]], encoder: str | None = None, calibrated_only: bool = True
    ) -> pd.DataFrame:
        """Every scorer's verdict on each named (A, B) pair: one row per scorer (the rule and its held-out
        accuracy beside it), one column per pair ("0.991 same" for same meaning, "0.720 different", or
        "(no verdict)"), narrow enough for a notebook column. `table.attrs["readings"]`: each pair's
        `read_map`. `calibrated_only`: only the scorers that give verdicts (not those a run trained)."""
        views = {name: self.view(a, b, encoder) for name, (a, b) in pairs.items()}
        labels = list(next(iter(views.values())).scores) if views else []
        if calibrated_only:
            labels = [label for label in labels if label in self.calibrated]
        rows = []
        for label in labels:
            cal = self.calibrated.get(label)
            chance = ", chance" if cal and cal.chance else ""
            rule = f"≥ {cal.threshold:.3f} ({cal.accuracy:.0%} held-out{chance})" if cal else "not calibrated"
            row = {"scorer": label, "same meaning when": rule}
            for name, view in views.items():
                v = view.verdicts[label]
                row[name] = f"{v.score:.3f} {'same' if v.call == SAME else v.call or '(no verdict)'}"
            rows.append(row)
        table = pd.DataFrame(rows)
        table.attrs["readings"] = {name: view.reading for name, view in views.items()}
        return table

    def near_miss_table(
        self, sentence: str, encoder: str | None = None, families=None, seed: int = 0, max_per_family: int = 3
    ):
        """Near-misses of `sentence` (up to `max_per_family` per family), one row each: family, text, edit,
        pooled cosine and each verifier's score against `sentence`, sorted by pooled cosine
        (highest first). A first row scores the sentence against itself, for scale. `table.attrs["notes"]`
        says what the view must: the sentence was cut to the encoder's length, and how many near-misses
        differ from it only after the cut or only in unknown tokens (every scorer sees those as the sentence
        itself)."""
        encoder = encoder or self.default_encoder
        near = perturb(sentence, families=families, seed=seed, max_per_family=max_per_family)
        texts = [sentence] + [n.text for n in near]
        scores = self.scores(encoder, sentence, texts)
        cache = self.cache(encoder)
        kept = [list(tokens) for _, tokens in cache.tokens(texts, False)]
        notes = text_notes(cache, "A", sentence, kept[0])
        hidden = sum(tokens == kept[0] for tokens in kept[1:])
        if hidden:
            cut = any("cut to the encoder's max_seq_length" in note for note in notes)
            where = "only after the cut" if cut else "only in unknown tokens (or in what the tokenizer ignores)"
            notes.append(
                f"{hidden} of {len(near)} near-misses differ from sentence A {where}: every score reads them as "
                "the sentence itself"
            )
        rows = pd.DataFrame(
            {
                "family": ["(itself)"] + [n.family for n in near],
                "text": texts,
                "edit": [""] + [_edit_text(n.edit) for n in near],
                **{k: v.astype(float) for k, v in scores.items()},
            }
        )
        itself, rest = rows.iloc[:1], rows.iloc[1:].sort_values(POOLED, ascending=False, kind="stable")
        table = pd.concat([itself, rest], ignore_index=True)
        table.attrs["notes"] = notes + self.foreign_notes(encoder) + list(self.problems.values())
        return table


def score_columns(table) -> list[str]:
    """The score columns of a near-miss table (pooled cosine first)."""
    return [c for c in table.columns if c not in ("family", "text", "edit")]


def mean_drop(table) -> dict[str, float]:
    """Per scorer: the sentence's score against itself minus its mean score on the near-misses.
    The paper's argument in one number each: pooled cosine barely drops."""
    cols = score_columns(table)
    near = table[table.family != "(itself)"]
    itself = table[table.family == "(itself)"]
    if near.empty or itself.empty:
        return {c: float("nan") for c in cols}
    return {c: float(itself[c].iloc[0] - near[c].mean()) for c in cols}


# ----------------------------------------------------------------------------- what is drawn


# A cell of the map is about CELL_PX (width, height) on screen; its printed cosine ("0.95", 9 px font)
# about 22 x 9 px. The MaxSim square (MATCH_SQUARE_PX across) runs just inside the cell's edges, outside
# the text; the alignment dot sits ALIGN_DOT_OFFSET (in cells: right, up) from the centre, in the corner.
CELL_PX = (38, 30)
MATCH_SQUARE_PX = 27
ALIGN_DOT_OFFSET = (0.32, -0.32)


def figure_similarity_map(view: PairView, max_cell_text: int = 400):
    """The map as a plotly heatmap, A's tokens down the side, B's along the top; a square outlines
    each A token's MaxSim match, a green dot in the cell's top-right corner the explained verifier's
    alignment (F2). Both leave the cell's value readable: the square runs along the cell's edges, around
    the printed cosine, and the dot sits in a corner (at 1,366 px an open circle on the centre covered
    the very values a reader compares).

    Always three traces (map, MaxSim, alignment) so a FigureWidget can be updated in place.
    Numeric axes with token tick labels: repeated tokens ("the" twice) stay separate rows.
    """
    lq, ld = view.M.shape
    rows, cols = np.arange(lq), np.arange(ld)
    show_values = 0 < lq * ld <= max_cell_text
    has_match = view.maxsim >= 0
    align = view.alignment if view.alignment is not None else np.zeros(0, dtype=int)
    fig = go.Figure(
        [
            go.Heatmap(
                z=view.M,
                x=cols,
                y=rows,
                zmin=-1,
                zmax=1,
                zmid=0,
                colorscale="RdBu_r",
                colorbar=dict(title="cosine", thickness=12),
                name="map",
                customdata=_cell_labels(view),
                hovertemplate="%{customdata}<br>cos %{z:.3f}<extra></extra>",
                texttemplate="%{z:.2f}" if show_values else None,
                textfont=dict(size=9),
            ),
            go.Scatter(
                x=view.maxsim[has_match],
                y=rows[has_match],
                mode="markers",
                name="MaxSim match (F1)",
                marker=dict(symbol="square-open", size=MATCH_SQUARE_PX, color="black", line=dict(width=2)),
                customdata=view.maxsim_values[has_match],
                hovertemplate="MaxSim: %{y} -> %{x}, cos %{customdata:.3f}<extra></extra>",
            ),
            go.Scatter(
                x=align + ALIGN_DOT_OFFSET[0],
                y=np.arange(len(align)) + ALIGN_DOT_OFFSET[1],
                mode="markers",
                name=view.explained or "alignment",
                visible=len(align) > 0,
                marker=dict(symbol="circle", size=8, color="#2ca02c", line=dict(width=1, color="white")),
                customdata=np.stack([np.arange(len(align)), align], axis=-1) if len(align) else None,
                hovertemplate="alignment: %{customdata[0]} -> %{customdata[1]}<extra></extra>",
            ),
        ]
    )
    fig.update_layout(
        template="plotly_white",
        height=max(320, 160 + CELL_PX[1] * lq),
        width=max(520, 260 + CELL_PX[0] * ld),
        margin=dict(l=10, r=10, t=90, b=10),
        legend=dict(orientation="h", y=-0.04, yanchor="top"),
        title=dict(
            text=f"pooled cosine {view.scores.get(POOLED, float('nan')):.3f}  ·  rows: A, columns: B",
            font=dict(size=14),
        ),
        xaxis=dict(
            tickmode="array",
            tickvals=cols.tolist(),
            ticktext=view.document_tokens,
            side="top",
            tickangle=-45,
            showgrid=False,
            zeroline=False,
            range=[-0.5, max(ld, 1) - 0.5],
        ),
        yaxis=dict(
            tickmode="array",
            tickvals=rows.tolist(),
            ticktext=view.query_tokens,
            autorange=False,
            range=[max(lq, 1) - 0.5, -0.5],
            showgrid=False,
            zeroline=False,
        ),
    )
    return fig


def scores_html(view: PairView) -> str:
    """The panel beside the map: the map read in one sentence, then each scorer's score of (A, B), its
    verdict with the threshold and held-out accuracy behind it (or why it has none), and what it reads."""
    rows = []
    for label, value in view.scores.items():
        meaning = about(label)
        style = ' style="background:#eef6ee"' if label == view.explained else ""
        rows.append(
            f'<tr{style}><th style="text-align:left;max-width:220px;overflow-wrap:anywhere;padding-right:8px">'
            f'{html.escape(label)}</th><td class="score" style="text-align:right;padding-right:8px">'
            f"{_fmt(value)}</td>{_verdict_cell(view.verdicts.get(label))}"
            f'<td style="color:#666;font-size:85%;line-height:1.2">{html.escape(meaning)}</td></tr>'
        )
    notes = "".join(f'<p style="color:#a60">{html.escape(n)}</p>' for n in view.notes)
    reading = (
        f'<p class="compsense-reading" style="max-width:60em">{html.escape(view.reading)}</p>' if view.reading else ""
    )
    body = "".join(rows)
    legend = (
        f'<p style="color:#666;font-size:85%;max-width:60em">{html.escape(VERDICT_LEGEND)}</p>'
        if any(v.call for v in view.verdicts.values())
        else ""
    )
    return (
        f'{reading}<table class="compsense-scores" style="line-height:1.3;max-width:100%">'
        f'<tr><th style="text-align:left">scorer</th><th>A vs B</th><th>verdict</th><th></th></tr>{body}</table>'
        f"{legend}{notes}"
    )


VERDICT_LEGEND = (
    "Verdict: same meaning when the score is at or above the scorer's threshold, fitted on held-out MRPC/STS-B "
    "paraphrases against the generator's near-misses of them (all-MiniLM-L6-v2's maps only); the percentage is "
    "its balanced accuracy on held-out pairs it was not fitted on, 50% being chance "
    "(compsense/resources/scorers/README.md)."
)


def _verdict_cell(v: Verdict | None) -> str:
    """A verdict in its cell: the call in colour, the threshold and held-out accuracy beneath; no call: why."""
    if v is None or v.call is None:
        why = html.escape(v.why if v is not None else "")
        return f'<td class="verdict" title="{why}" style="color:#888;font-size:85%;padding-right:8px">no verdict</td>'
    c = v.calibration
    colour = "#1a7f37" if v.call == SAME else "#b42318"
    sign = "≥" if v.call == SAME else "<"
    return (  # the rule wraps under the call: the panel may be 340 px wide (a 1,366 px screen, file browser open)
        f'<td class="verdict" title="{html.escape(v.text)}" style="padding-right:8px;line-height:1.2">'
        f'<b style="color:{colour};white-space:nowrap">{html.escape(v.call)}</b><br>'
        f'<span style="color:#666;font-size:80%">{sign} {c.threshold:.3f}, {c.accuracy:.0%} held-out'
        f"{', chance' if c.chance else ''}</span></td>"
    )


def table_html(table) -> str:
    """The near-miss table as HTML: scores shaded by how far they fall below the sentence itself,
    and a last row with each scorer's mean drop from the sentence to its near-misses."""
    cols = score_columns(table)
    head = "".join(f'<th style="font-size:85%">{html.escape(c)}</th>' for c in ["family", "near-miss", *cols])
    itself = table[table.family == "(itself)"]
    ref = {c: float(itself[c].iloc[0]) for c in cols} if not itself.empty else {}
    body = []
    for _, row in table.iterrows():
        cells = [
            f"<td>{html.escape(str(row.family))}</td>",
            f'<td title="{html.escape(str(row.edit))}" style="text-align:left">{html.escape(str(row.text))}</td>',
        ]
        for c in cols:
            drop = ref.get(c, row[c]) - row[c]
            drop = drop if np.isfinite(drop) else 0.0
            shade = int(255 - min(max(drop, 0.0) / 0.3, 1.0) * 120)
            cells.append(
                f'<td class="score" style="text-align:right;background:rgb(255,{shade},{shade})">{_fmt(row[c])}</td>'
            )
        body.append(f"<tr>{''.join(cells)}</tr>")
    drops = mean_drop(table)
    foot = "".join(f'<td style="text-align:right"><b>{_fmt(drops[c])}</b></td>' for c in cols)
    n = int((table.family != "(itself)").sum())
    return (
        f'<table class="compsense-near-misses" style="border-collapse:collapse">'
        f"<thead><tr>{head}</tr></thead><tbody>{''.join(body)}</tbody>"
        f"<tfoot><tr><td colspan=2><b>mean drop from itself ({n} near-misses)</b></td>{foot}</tr></tfoot>"
        "</table>" + "".join(f'<p style="color:#a60">{html.escape(n)}</p>' for n in table.attrs.get("notes", []))
    )


def _fmt(value: float) -> str:
    return "—" if value is None or not np.isfinite(value) else f"{value:.3f}"


def _cell_labels(view: PairView) -> np.ndarray:
    q = np.asarray(view.query_tokens, dtype=object).reshape(-1, 1)
    d = np.asarray(view.document_tokens, dtype=object).reshape(1, -1)
    if q.size == 0 or d.size == 0:
        return np.zeros(view.M.shape, dtype=object)
    return np.char.add(np.char.add(q.astype(str), "  ·  "), d.astype(str)).astype(object)


def _edit_text(edit) -> str:
    if edit is None:
        return ""
    return str(getattr(edit, "description", None) or edit)


def _base_label(name: str) -> str:
    return f"{name} (base)"


def _variant_label(run: str) -> str:
    """'A-seed42' -> 'Model A (seed 42)'; anything else as it is."""
    variant, _, seed = run.partition("-seed")
    return f"Model {variant} (seed {seed})" if seed else run
