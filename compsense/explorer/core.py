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
    embedding_dim,
    encode_pooled,
    load_encoder,
    offline_status,
    quiet_transformers,
    unknown_count,
)
from compsense.core.layout import FINAL, trained_model_dirs, verifiers_root
from compsense.data.negatives import perturb
from compsense.verifiers.architectures import (
    CONFIG_FILE,
    ENCODER_DIR,
    AlignVerifier,
    create,
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
    "F2": "-1 to 1: like F1, but each match pays for its distance from the diagonal (the circles)",
}
# A trained verifier's score is a logit: no fixed range, so only its order across pairs means something.
TRAINED_ABOUT = {
    "F0": "like F0 above, on maps of its own fine-tuned encoder",
    "F1": "like F1 above, on maps of its own fine-tuned encoder",
    "F2": "like F2 above, with a learned diagonal penalty",
    "F3": "learned score of a small CNN over the map; no fixed range: compare it across pairs "
    "(higher: more alike), not with the cosine",
    "F4": "learned score of a small Transformer over the map's patches; no fixed range: compare it "
    "across pairs (higher: more alike), not with the cosine",
}


def about(label: str) -> str:
    """What a score row means and its range: the pooled cosine and F0-F2 by label; a trained verifier
    ("model_b-small/seed42/F4-frozen (trained)") by the verifier name in its folder."""
    if label in ABOUT:
        return ABOUT[label]
    if label in BASE_VERIFIERS:
        return ABOUT[BASE_VERIFIERS[label]]
    folder = label.split(" (")[0].rstrip("/").split("/")[-1]
    return TRAINED_ABOUT.get(folder.split("-")[0], "")


@dataclass
class VerifierEntry:
    """A verifier the explorer can score with. `encoder` (a directory) is set for end-to-end
    verifiers, which score maps of their own fine-tuned encoder rather than the selected one."""

    label: str
    verifier: torch.nn.Module
    encoder: str | None = None
    source: Path | None = None
    info: dict = field(default_factory=dict)

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


def discover_verifiers(work_dir: str | os.PathLike | None) -> dict[str, VerifierEntry]:
    """F0-F2 untrained (always), then every verifier saved under `{work_dir}/verifiers/`.

    A folder that does not load (half-written, another version) is skipped with a warning.
    """
    entries = {
        label: VerifierEntry(label, create(name, learnable=False) if name == "F2" else create(name))
        for label, name in BASE_VERIFIERS.items()
    }
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
        label = f"{folder.relative_to(root).as_posix()} (trained{', own encoder' if own_encoder else ''})"
        entries[label] = VerifierEntry(label, verifier, own_encoder, folder, info)
    return entries


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
    ):
        self.work_dir, self.backbone, self.device, self.seed = work_dir, backbone, device, seed
        self.cache_size = cache_size
        self.encoders = discover_encoders(work_dir, backbone)
        self.verifiers = discover_verifiers(work_dir)
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
        if encoder not in self._fingerprints:
            self._fingerprints[encoder] = encoder_fingerprint(self.cache(encoder).encoder)[:16]
        mine = self._fingerprints[encoder]
        foreign = sorted(label for label, print_ in trained.items() if print_ != mine)
        if not foreign:
            return []
        return [
            f"{len(foreign)} trained verifier(s) learned from maps of another encoder than {encoder} "
            f"(e.g. {foreign[0]}): their scores here are outside what they were trained on"
        ]

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
        return PairView(
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
        )

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


def figure_similarity_map(view: PairView, max_cell_text: int = 400):
    """The map as a plotly heatmap, A's tokens down the side, B's along the top; squares mark each
    A token's MaxSim match, circles the explained verifier's alignment (F2).

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
                marker=dict(symbol="square-open", size=20, color="black", line=dict(width=2)),
                customdata=view.maxsim_values[has_match],
                hovertemplate="MaxSim: %{y} -> %{x}, cos %{customdata:.3f}<extra></extra>",
            ),
            go.Scatter(
                x=align,
                y=np.arange(len(align)),
                mode="markers",
                name=view.explained or "alignment",
                visible=len(align) > 0,
                marker=dict(symbol="circle-open", size=14, color="#2ca02c", line=dict(width=3)),
                hovertemplate="alignment: %{y} -> %{x}<extra></extra>",
            ),
        ]
    )
    fig.update_layout(
        template="plotly_white",
        height=max(320, 160 + 30 * lq),
        width=max(520, 260 + 38 * ld),
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
    """The panel beside the map: each scorer's score of (A, B) and what it reads."""
    rows = []
    for label, value in view.scores.items():
        meaning = about(label)
        style = ' style="background:#eef6ee"' if label == view.explained else ""
        rows.append(
            f'<tr{style}><th style="text-align:left;max-width:220px;overflow-wrap:anywhere;padding-right:8px">'
            f'{html.escape(label)}</th><td class="score" style="text-align:right;padding-right:8px">'
            f'{_fmt(value)}</td><td style="color:#666;font-size:85%;line-height:1.2">{html.escape(meaning)}</td></tr>'
        )
    notes = "".join(f'<p style="color:#a60">{html.escape(n)}</p>' for n in view.notes)
    body = "".join(rows)
    return (
        f'<table class="compsense-scores" style="line-height:1.3;max-width:100%">'
        f'<tr><th style="text-align:left">scorer</th><th>A vs B</th><th></th></tr>{body}</table>{notes}'
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
