"""Training verifiers: a contrastive loss over verifier scores, with the encoder frozen or
trained end to end, at a fixed budget of triplets, and notebook 04's training steps.

Why a module of its own: the verifiers (`compsense.verifiers.architectures`) are small models anyone can score
with; training them needs budgets, regimes, token caches, resumable runs and the inputs notebook 01
wrote. Both regimes see exactly the same triplets, so verifiers are compared at equal budgets:

    frozen   token embeddings come from a `simmap.TokenCache` filled once (and kept on disk);
             only the verifier learns, and F0/F1 (no parameters) are not trained at all.
    end2end  the encoder is unfrozen with its own learning rate and re-encodes every batch.

`fit_verifier` trains and saves one verifier (or loads a finished run), `fit_grid` every verifier
in every regime; `stage_inputs` reads notebook 01's triplets and held-out near-misses.
"""

from __future__ import annotations

import copy
import hashlib
import json
import math
import os
import shutil
import tempfile
import time
import warnings
from datetime import datetime, timezone
from pathlib import Path
from typing import Sequence

import numpy as np
import pandas as pd
import torch
import torch.nn.functional as F
from tqdm.auto import tqdm

from compsense.core import layout
from compsense.core.encoders import embedding_dim, load_encoder, weight_digests
from compsense.core.layout import verifier_dir
from compsense.core.seed import seed_everything
from compsense.core.storage import CorruptFile, read_table
from compsense.data.datasets import load_mrpc
from compsense.nearmiss.geometry import positive_pairs
from compsense.verifiers.architectures import (
    CONFIG_FILE,
    ENCODER_DIR,
    MissingEncoder,
    Verifier,
    canonical_name,
    create,
    load,
    n_parameters,
    own_encoder_dir,
    read_info,
    save,
    sized_kwargs,
    verifier_names,
)
from compsense.verifiers.config import HARD_NEGATIVES, REGIMES, Compute, VerifierGrid, VerifierTraining
from compsense.verifiers.recipe import authors_budget, authors_recipe, encoder_millions
from compsense.verifiers.simmap import (
    TokenCache,
    cross_similarity_maps,
    encode_tokens,
    encoder_device,
    encoder_fingerprint,
    similarity_map,
)


def train_verifier(
    verifier: Verifier,
    encoder,
    triplets,
    regime: str = "frozen",
    training: VerifierTraining | None = None,
    seed: int = 42,
    cache_dir=None,
    compute: Compute | None = None,
) -> dict:
    """Train `verifier` on (anchor, positive, negative) triplets as `training` (`VerifierTraining`)
    says; returns a JSON-ready history. `compute` gives the device (default: the encoder's) and
    whether to show progress.

    Loss: for each anchor, cross-entropy over verifier scores / temperature, the candidates being
    its positive, its hard negative and `in_batch_negatives` other positives and negatives of the
    batch, drawn at random (MNRL with verifier scores in place of cosines; None: every in-batch
    candidate, the full B x 2B maps). In-batch candidates whose text equals the anchor's positive
    are never negatives (a repeated sentence is not a negative).

    Why sampled in-batch negatives by default: a verifier scores each (query, candidate) map on
    its own, like a cross-encoder, so all-pairs MNRL costs B x 2B maps a step (2,048 at batch 32)
    and the CNN/Transformer's own compute then dwarfs the encoder's; sentence-transformers'
    CrossEncoder MultipleNegativesRankingLoss samples `num_negatives=4` per anchor for the same
    reason. The hard negative, the signal that matters here, is always kept. `hard_negatives="own"`
    leaves the other anchors' hard negatives out of the candidates: with `in_batch_negatives=None`
    that is the authors' loss, B x (B + 1) (`train_and_eval_verifiers_experiment.py`,
    compute_mnrl_loss: every positive of the batch plus the anchor's own hard negative).

    Optimiser: AdamW with `weight_decay` on the verifier and `encoder_weight_decay` (default: the
    same) on the encoder, gradients clipped to `max_grad_norm` per model, as the authors do.

    Regimes. "frozen": the encoder is never run after one pass that fills a `TokenCache` with the
    texts the budget will visit (kept on disk under `cache_dir`); only the verifier learns, and a
    verifier with no parameters (F0, F1) is not trained at all: the history says so. "end2end": the
    encoder is unfrozen with its own learning rate `encoder_lr` and token embeddings are computed
    with gradients at every step. Both regimes see exactly `budget_examples` triplets (sampled
    without replacement, epoch after epoch, by `seed`), so verifiers are compared at equal budgets.
    """
    if regime not in REGIMES:
        raise ValueError(f"regime must be one of {REGIMES}, got {regime!r}")
    t = training or VerifierTraining()
    compute = compute or Compute()
    show_progress = compute.show_progress
    budget_examples, batch_size, temperature = t.budget_examples, t.batch_size, t.temperature
    anchors, positives, negatives = _triplet_texts(triplets)
    seed_everything(seed)
    device = torch.device(compute.device) if compute.device is not None else encoder_device(encoder)
    verifier.to(device)
    history = _new_history(verifier, regime, t, seed, len(anchors))
    if regime == "frozen" and n_parameters(verifier) == 0:
        history["note"] = (
            f"{verifier.name} has no trainable parameters and the encoder is frozen: nothing to train, it scores as is"
        )
        return history

    batches = _sample_batches(len(anchors), budget_examples, batch_size, seed)
    # the texts the budget visits: what a frozen encoder encodes once
    used = (
        sorted({x for b in batches for i in b for x in (anchors[i], positives[i], negatives[i])})
        if regime == "frozen"
        else []
    )
    groups, cache = _prepare(verifier, encoder, regime, t, used, cache_dir, device, show_progress)
    if cache is not None:
        history["texts_encoded"] = cache.encoded
    optimizer = torch.optim.AdamW(groups)
    scheduler = torch.optim.lr_scheduler.LambdaLR(optimizer, _warmup_linear(len(batches), t.warmup_ratio))

    sampler = torch.Generator().manual_seed(int(seed))  # which in-batch negatives each step draws
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
                q, cands, encoded = encode_distinct(encoder, a, p + n, verifier.include_special, device)
                history["texts_encoded"] += encoded
            loss, accuracy = contrastive_loss(
                verifier,
                q,
                cands,
                p,
                p + n,
                temperature,
                in_batch_negatives=t.in_batch_negatives,
                generator=sampler,
                hard_negatives=t.hard_negatives,
            )
            optimizer.zero_grad(set_to_none=True)
            loss.backward()
            if t.max_grad_norm:
                for group in groups:
                    torch.nn.utils.clip_grad_norm_(group["params"], t.max_grad_norm)
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
    history["finished_at"] = datetime.now(timezone.utc).isoformat(timespec="seconds")  # for estimate's windows
    return history


def _new_history(verifier: Verifier, regime: str, t: VerifierTraining, seed: int, n_triplets: int) -> dict:
    """A training's record before its first step: every setting it trains with, and empty curves."""
    return {
        "verifier": verifier.name,
        "regime": regime,
        "n_parameters": n_parameters(verifier),
        "budget_examples": int(t.budget_examples),
        "batch_size": int(t.batch_size),
        "lr": t.lr,
        "encoder_lr": t.encoder_lr if regime == "end2end" else None,
        "temperature": t.temperature,
        "in_batch_negatives": t.in_batch_negatives,
        "hard_negatives": t.hard_negatives,
        "weight_decay": t.weight_decay,
        "encoder_weight_decay": t.encoder_decay if regime == "end2end" else None,
        "seed": seed,
        "n_triplets": n_triplets,
        "include_special": verifier.include_special,
        "trained": False,
        "note": "",
        "steps": 0,
        "examples_seen": 0,
        "texts_encoded": 0,
        "loss": [],
        "accuracy": [],
        "seconds": 0.0,
    }


def _prepare(verifier, encoder, regime, t: VerifierTraining, used, cache_dir, device, show_progress):
    """(AdamW parameter groups, TokenCache or None). Frozen: the verifier's parameters alone, and the
    token embeddings of `used` (the texts the budget visits) encoded once into a cache. End-to-end:
    the encoder's parameters too, with their own learning rate and weight decay, and no cache."""
    verifier_params = [p for p in verifier.parameters() if p.requires_grad]
    groups = [{"params": verifier_params, "lr": t.lr, "weight_decay": t.weight_decay}] if verifier_params else []
    if regime != "frozen":
        encoder.to(device)
        for p in encoder.parameters():
            p.requires_grad_(True)
        groups.append({"params": list(encoder.parameters()), "lr": t.encoder_lr, "weight_decay": t.encoder_decay})
        return groups, None
    cache = TokenCache(
        encoder,
        used,
        cache_dir,
        include_special=verifier.include_special,
        batch_size=max(t.batch_size, 32),
        device=device,
        show_progress=show_progress,
    )
    if device.type == "cuda":  # batches are then gathered where the verifier is
        cache.to(device)
    return groups, cache


def encode_distinct(encoder, queries: Sequence[str], candidates: Sequence[str], include_special: bool, device=None):
    """(query TokenBatch, candidate TokenBatch, texts encoded): one forward pass over the distinct texts.

    With the paper's identity triplets a batch's positives are its anchors, so encoding anchors,
    positives and negatives as they come runs every anchor through the encoder twice; a text that
    recurs is encoded once and its rows gathered (differentiably) wherever it is used.
    """
    distinct = list(dict.fromkeys([*queries, *candidates]))
    row = {t: i for i, t in enumerate(distinct)}
    tokens = encode_tokens(encoder, distinct, include_special, device)
    return tokens.select([row[t] for t in queries]), tokens.select([row[t] for t in candidates]), len(distinct)


def contrastive_loss(
    verifier: Verifier,
    q,
    candidates,
    positive_texts: Sequence[str],
    candidate_texts: Sequence[str],
    temperature: float,
    in_batch_negatives: int | None = None,
    generator: torch.Generator | None = None,
    hard_negatives: str = "all",
):
    """(loss, top-1 accuracy) of B anchors `q` against 2B `candidates` (B positives, then B hard negatives).

    Anchor i's positive is candidate i and its hard negative candidate B + i. `in_batch_negatives`
    None scores every candidate for every anchor (B x 2B maps); k scores the positive, the hard
    negative and k other candidates drawn at random by `generator` (B x (2 + k) maps). Candidates
    whose text equals anchor i's positive never count as its negatives. `hard_negatives="own"`
    drops the other anchors' hard negatives from the candidates (None then gives the authors'
    B x (B + 1) maps).
    """
    b, c = len(q), len(candidates)
    if c != 2 * b or len(positive_texts) != b or len(candidate_texts) != c:
        raise ValueError(
            f"contrastive_loss needs B anchors, B positives and 2B candidates (positives then "
            f"negatives); got {b} anchors, {len(positive_texts)} positives and {c} candidates"
        )
    if hard_negatives not in HARD_NEGATIVES:
        raise ValueError(f"hard_negatives must be one of {HARD_NEGATIVES}, got {hard_negatives!r}")
    same_text = torch.tensor([[t == pos for t in candidate_texts] for pos in positive_texts])
    same_text[torch.arange(b), torch.arange(b)] = False
    own_only = hard_negatives == "own"
    if own_only and (in_batch_negatives is None or in_batch_negatives >= b - 1):
        # The authors' shape: anchors x all positives, then each anchor's own hard negative.
        pos_scores = verifier(*cross_similarity_maps(q, candidates.select(range(b)))).view(b, b)
        neg_scores = verifier(*similarity_map(q, candidates.select(range(b, c))))
        scores = torch.cat([pos_scores, neg_scores[:, None]], dim=1)
        masked = torch.cat([same_text[:, :b], torch.zeros(b, 1, dtype=torch.bool)], dim=1)
        logits = (scores / temperature).masked_fill(masked.to(scores.device), float("-inf"))
        labels = torch.arange(b, device=scores.device)
    elif not own_only and (in_batch_negatives is None or in_batch_negatives >= c - 2):
        scores = verifier(*cross_similarity_maps(q, candidates)).view(b, c)
        logits = (scores / temperature).masked_fill(same_text.to(scores.device), float("-inf"))
        labels = torch.arange(b, device=scores.device)
    else:
        if in_batch_negatives < 0:
            raise ValueError(f"in_batch_negatives must be >= 0 or None (all), got {in_batch_negatives}")
        own = torch.stack([torch.arange(b), torch.arange(b) + b], dim=1)  # [B, 2]: positive, hard negative
        # Random keys; the anchor's own two and same-text candidates sort last and are masked if drawn.
        excluded = same_text.clone()
        if own_only:
            excluded[:, b:] = True
        excluded[torch.arange(b), torch.arange(b)] = True
        excluded[torch.arange(b), torch.arange(b) + b] = True
        keys = torch.rand(b, c, generator=generator).masked_fill(excluded, 2.0)
        drawn = keys.topk(in_batch_negatives, dim=1, largest=False).indices  # [B, k]
        chosen = torch.cat([own, drawn], dim=1)  # [B, 2 + k]
        masked = torch.cat([same_text.gather(1, own), excluded.gather(1, drawn)], dim=1)
        width = chosen.shape[1]
        rows = torch.arange(b).repeat_interleave(width)
        scores = verifier(*similarity_map(q.select(rows.tolist()), candidates.select(chosen.flatten().tolist())))
        scores = scores.view(b, width)
        logits = (scores / temperature).masked_fill(masked.to(scores.device), float("-inf"))
        labels = torch.zeros(b, dtype=torch.long, device=scores.device)
    loss = F.cross_entropy(logits, labels)
    return loss, (logits.argmax(dim=1) == labels).float().mean().item()


def fit_verifier(
    name: str,
    regime: str,
    encoder,
    triplets,
    out_dir,
    training: VerifierTraining | None = None,
    seed: int = 42,
    cache_dir=None,
    compute: Compute | None = None,
    verifier_kwargs: dict | None = None,
):
    """Create, train (as `training` says) and save one verifier under `out_dir`; a finished run
    with the same settings is loaded instead of retrained (delete its folder to retrain it).
    End-to-end runs train a copy of `encoder` and save it to `out_dir/encoder/`. Returns
    (verifier, encoder it scores with, history).
    """
    out_dir = Path(out_dir)
    training = training or VerifierTraining()
    device = (compute or Compute()).device
    # What the result depends on; the starting encoder's weights too, so a new backbone retrains.
    settings = {
        "name": canonical_name(name),
        "regime": regime,
        "seed": seed,
        "n_triplets": len(triplets),
        "triplets": triplets_digest(triplets),
        "encoder": encoder_fingerprint(encoder)[:16],
        "max_seq_length": getattr(encoder, "max_seq_length", None),
        "verifier_kwargs": verifier_kwargs or {},
        **training.settings(),
    }
    if (out_dir / CONFIG_FILE).exists():
        info = read_info(out_dir)
        if VerifierTraining.same_settings(info.get("settings") or {}, json.loads(json.dumps(settings, default=str))):
            # a finished run lacking its end-to-end encoder, or whose weights are damaged, is not
            # finished: it trains again
            try:
                own = own_encoder_dir(out_dir, end2end=regime == "end2end")
                verifier = load(out_dir, device=device)
                # an own encoder damaged in place: DamagedModel (a CorruptFile) from its recorded digests
                trained_encoder = load_encoder(own, device=device) if own else encoder
            except (MissingEncoder, CorruptFile) as err:
                warnings.warn(f"{err}; training it again now", stacklevel=2)
            else:
                return verifier, trained_encoder, info["history"]
    verifier = create(name, seed=seed, **(verifier_kwargs or {}))
    trained_encoder = copy.deepcopy(encoder) if regime == "end2end" else encoder
    history = train_verifier(
        verifier,
        trained_encoder,
        triplets,
        regime=regime,
        training=training,
        seed=seed,
        cache_dir=cache_dir,
        compute=compute,
    )
    if regime == "end2end":
        _save_encoder(trained_encoder, out_dir / ENCODER_DIR)
    save(
        verifier,
        out_dir,
        extra={
            "settings": settings,
            "history": history,
            "encoder": f"{ENCODER_DIR}/" if regime == "end2end" else "frozen backbone",
            # checked wherever the encoder is loaded (`encoders.check_model_digests`)
            **({"encoder_sha256": weight_digests(out_dir / ENCODER_DIR)} if regime == "end2end" else {}),
        },
    )
    return verifier, trained_encoder, history


def _save_encoder(encoder, target: Path) -> None:
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


def triplets_digest(triplets) -> str:
    """A short hash of the (anchor, positive, negative) texts: a finished verifier is reused only for
    the same training rows, not merely as many."""
    h = hashlib.sha256()
    for column in _triplet_texts(triplets):
        h.update("\x1f".join(column).encode("utf-8"))
        h.update(b"\x1e")
    return h.hexdigest()[:16]


POSITIVES = ("identity", "paraphrase", "mixed")


def with_paraphrase_positives(triplets, paraphrases, mode: str = "identity"):
    """The training triplets with, where the anchor has a labelled paraphrase, that paraphrase as the
    positive. Returns (table, counts).

    Why: notebook 01's triplets are the paper's identity triplets (positive = anchor), so a verifier
    can win every training step by recognising a self-match, which says nothing about the question
    the near-miss test asks: does a paraphrase outscore a near-miss? `mode`:
        identity    the triplets as they are (the paper)
        paraphrase  only anchors with a paraphrase, the positive replaced (the others are dropped, counted)
        mixed       the positive replaced where a paraphrase exists, identity elsewhere
    `paraphrases`: a table with sentence1, sentence2 (and `label`: only 1 counts), e.g.
    `geometry.positive_pairs(data.load_mrpc("train"))`, or SentencePairs, which go through
    `geometry.positive_pairs`; an anchor on either side matches, and among
    several paraphrases the first in sorted order is taken (deterministic). A `positive_kind` column
    says which rows changed.
    """
    if mode not in POSITIVES:
        raise ValueError(f"positives mode must be one of {POSITIVES}, got {mode!r}")
    anchors, positives, negatives = _triplet_texts(triplets)
    table = (
        triplets.copy()
        if hasattr(triplets, "columns")
        else pd.DataFrame({"anchor": anchors, "positive": positives, "negative": negatives})
    ).reset_index(drop=True)
    table["positive_kind"] = "identity"
    counts = {"mode": mode, "triplets": len(table), "with_paraphrase": 0, "dropped": 0}
    if mode == "identity":
        return table, counts
    if not hasattr(paraphrases, "columns"):
        paraphrases = positive_pairs(paraphrases)
    para = paraphrases
    missing = {"sentence1", "sentence2"} - set(para.columns)
    if missing:
        raise ValueError(
            f"paraphrases lack columns {sorted(missing)}; pass geometry.positive_pairs(load_mrpc('train'))"
        )
    if "label" in para.columns:
        para = para[para["label"].astype(float) == 1]
    partner: dict[str, str] = {}
    for a, b in sorted(zip(para["sentence1"].astype(str), para["sentence2"].astype(str))):
        if a != b:
            partner.setdefault(a, b)
            partner.setdefault(b, a)
    has = table["anchor"].map(partner)
    found = has.notna()
    table.loc[found, "positive"] = has[found]
    table.loc[found, "positive_kind"] = "paraphrase"
    counts["with_paraphrase"] = int(found.sum())
    if mode == "paraphrase":
        counts["dropped"] = int((~found).sum())
        table = table[found].reset_index(drop=True)
    if table.empty:
        raise ValueError(
            f"no training triplet's anchor has a paraphrase among {len(para)} labelled pairs: "
            "check that the paraphrases come from the split notebook 01 drew anchors from (MRPC train)"
        )
    return table, counts


def _triplet_texts(triplets) -> tuple[list[str], list[str], list[str]]:
    if hasattr(triplets, "columns"):
        missing = {"anchor", "positive", "negative"} - set(triplets.columns)
        if missing:
            raise ValueError(
                f"triplets table lacks columns {sorted(missing)}; it needs anchor, positive, negative "
                "(notebook 01 writes negatives/triplets.parquet)"
            )
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
    return [order[i : i + batch_size] for i in range(0, budget, batch_size)]


def _warmup_linear(steps: int, warmup_ratio: float):
    warmup = int(steps * warmup_ratio)

    def factor(step: int) -> float:
        if step < warmup:
            return (step + 1) / warmup
        return max(0.0, (steps - step) / max(1, steps - warmup))

    return factor


# ---------------------------------------------------------------------------------------------
# Notebook 04's training steps, so the notebook holds calls and prose only


def stage_inputs(
    work_dir, train_split: str = "train", heldout_split: str = "test", max_pairs: int | None = None, seed: int = 42
):
    """(training triplets, held-out near-miss pairs) from notebook 01's files under `work_dir`.

    At most `max_pairs` held-out pairs are kept (a seeded sample, every family kept in proportion).
    """
    pairs_path, triplets_path = layout.pairs_file(work_dir), layout.triplets_file(work_dir)
    for path in (pairs_path, triplets_path):
        if not path.exists():
            raise FileNotFoundError(
                f"{path} is missing: run notebooks/01_data_and_negatives.ipynb for this "
                f"profile first (it writes negatives/pairs.parquet and triplets.parquet)"
            )
    pairs, triplets = read_table(pairs_path), read_table(triplets_path)
    for path, table, split in ((pairs_path, pairs, heldout_split), (triplets_path, triplets, train_split)):
        if "split" not in table.columns or split not in set(table["split"]):
            found = sorted(set(table["split"])) if "split" in table.columns else "no split column"
            raise ValueError(f"{path} has no rows with split={split!r} (found: {found})")
    train = triplets[triplets["split"] == train_split].reset_index(drop=True)
    heldout = pairs[pairs["split"] == heldout_split].reset_index(drop=True)
    if max_pairs is not None and len(heldout) > max_pairs:
        heldout = heldout.sample(n=max_pairs, random_state=seed).sort_index().reset_index(drop=True)
    return train, heldout


def training_positives(triplets, mode: str = "identity", data_dir=None):
    """Notebook 04's training rows for `mode` (see `with_paraphrase_positives`), the paraphrases
    being MRPC train's label-1 pairs (notebook 01 draws its anchors from MRPC train). (table, counts)."""
    if mode == "identity":
        return with_paraphrase_positives(triplets, None, mode)

    return with_paraphrase_positives(triplets, positive_pairs(load_mrpc("train", data_dir=data_dir)), mode)


def variant_name(train_data: str, size: str, recipe: str = "equal") -> str:
    """The folder of one notebook-04 variant: "<train_data>-<size>", plus "-authors" for the authors'
    per-verifier budgets. Variants sit side by side under {work_dir}/verifiers/."""
    return f"{train_data}-{size}" + ("" if recipe == "equal" else f"-{recipe}")


def fit_grid(
    grid: VerifierGrid,
    encoder,
    triplets,
    work_dir,
    training: VerifierTraining | None = None,
    seed: int = 42,
    size: str = "small",
    variant: str | None = None,
    compute: Compute | None = None,
):
    """Train (or resume) `grid.verifiers` in every one of `grid.regimes` at one `seed` and `size`
    (`run_study` loops over the grid's seeds and sizes); saved under `verifier_dir(work_dir, variant,
    seed, label)` (variant: `variant_name("custom", size, grid.recipe)` when not given), token caches
    under `{work_dir}/cache/`.

    `size`: "small" or "paper" F3/F4 (`verifiers.create`). `grid.recipe`: "equal" trains every
    verifier as `training` says (same budget for all); "authors" replaces, per verifier and regime,
    batch size, budget, learning rates, weight decay and loss shape by the authors'
    (`recipe.authors_recipe`). `grid.f2_learnable` trains F2's lam and tau (the authors fix both at 0.1).
    Returns ({"F3-frozen": (verifier, encoder, history), ...}, a summary table with parameter
    counts and the examples each verifier saw beside the authors' budget for it).
    """
    training = training or VerifierTraining()
    variant = variant or variant_name("custom", size, grid.recipe)
    millions = encoder_millions(encoder)
    dim = embedding_dim(encoder)
    fitted = {}
    for regime in grid.regimes:
        for name in verifier_names(grid.verifiers):
            label = f"{name}-{regime}"
            how = training.replace(**authors_recipe(name, regime, millions)) if grid.recipe == "authors" else training
            verifier_kwargs = {
                "include_special": grid.include_special,
                "size": size,
                **sized_kwargs(name, size, dim, getattr(encoder, "max_seq_length", None)),
                **({"learnable": True} if grid.f2_learnable and name == "F2" else {}),
            }
            fitted[label] = fit_verifier(
                name,
                regime,
                encoder,
                triplets,
                verifier_dir(work_dir, variant, seed, label),
                training=how,
                seed=seed,
                cache_dir=layout.cache_dir(work_dir),
                compute=compute,
                verifier_kwargs=verifier_kwargs,
            )
    rows = []
    for label, (verifier, _, h) in fitted.items():
        rows.append(
            {
                "verifier": label,
                "variant": variant,
                "size": size,
                "seed": seed,
                "parameters": n_parameters(verifier),
                "trained": h["trained"],
                "steps": h["steps"],
                "batch_size": h["batch_size"],
                "examples_seen": h["examples_seen"],
                "budget": h["budget_examples"],
                "authors_budget": authors_budget(h["verifier"], h["regime"], millions),
                "final_loss": h["loss"][-1] if h["loss"] else float("nan"),
                "texts_encoded": h["texts_encoded"],
                "seconds": h["seconds"],
                "note": h["note"],
            }
        )
    return fitted, pd.DataFrame(rows)
