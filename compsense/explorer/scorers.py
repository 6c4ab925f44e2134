"""The trained scorers the explorer shows on first open, and the thresholds that turn any scorer's
score into a verdict ("same meaning" or "different").

What ships (compsense/resources/scorers/, package data): small frozen verifiers trained on
all-MiniLM-L6-v2's similarity maps, our F3 and F4 and the authors' F4, each in its own folder
with `verifier.json` + `verifier.safetensors` (as `verifiers.architectures.save` writes them) and
`card.json`: the training rows and their licences, budget, seed, commit, the encoder's
fingerprint, and its held-out threshold and accuracy. `untrained.json` holds the same held-out
calibration for the scorers that need no training (pooled cosine, F0, F1, F2); `README.md` is
the cards in words.

Why ship them, rather than train them when the explorer opens:
- a fresh clone has no training data (MRPC and STS-B stay in the shared data folder, never in the
  repository), so it could not train them;
- training takes minutes of CPU that a teacher opening notebook 06 should not wait for, and a
  widget that trains on open would show different scorers on every machine;
- they are frozen (they read the backbone's maps, so no encoder ships with them) and small: weights
  in float16, under 2 MB in all (the authors' F4 is most of it), which package data carries;
- their cards make them reproducible: `python -m compsense scorers --data-dir DIR` (this
  module's `build`) trains and calibrates them again from the shared data with the real MiniLM.

What they learn from: the `balanced` structural rows of notebook 04 (`verifiers.data.
balanced_structural_rows`): (s, s, nm(s)) and (s, p, nm(p)) for MRPC-train and STS-B-train
paraphrase pairs (s, p), nm a near-miss from the project's generator. The positive is the
sentence or its paraphrase, the negative a one-edit change of the positive: exactly the contrast
the explorer asks about. Notebook 04's retrieval rows are left out: they would spend most of the
budget on query-passage maps the explorer never shows.

How a score becomes a verdict: held-out pairs come from MRPC test and STS-B test (sources no
training row is drawn from; a held-out pair sharing a sentence with a training row is dropped):
each paraphrase pair (s, p) should read "same meaning", and the near-misses (s, nm(s)) and
(s, nm(p)) "different". A scorer says "same meaning" when its score is at least its threshold, the
one that maximises balanced accuracy (the mean of the share of paraphrases called the same and the
share of near-misses called different: 50% is chance) on those pairs, computed with the scorer as
it ships (float16 weights, loaded back).
"""

from __future__ import annotations

import json
import logging
import shutil
import tempfile
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path

import numpy as np
import pandas as pd
from safetensors.torch import load_file, save_file

from compsense.core.encoders import BACKBONES, embedding_dim, load_encoder
from compsense.core.paths import git_commit
from compsense.core.storage import sha256_file, write_json, write_text
from compsense.data.datasets import load_mrpc, load_stsb
from compsense.nearmiss.geometry import pair_cosines, positive_pairs
from compsense.nearmiss.metrics import near_miss_auc
from compsense.verifiers.architectures import (
    CONFIG_FILE,
    WEIGHTS_FILE,
    WEIGHTS_SHA256,
    create,
    load,
    n_parameters,
    read_info,
    score_pairs,
    sized_kwargs,
)
from compsense.verifiers.config import Compute, VerifierTraining
from compsense.verifiers.data import balanced_structural_rows
from compsense.verifiers.simmap import encoder_fingerprint
from compsense.verifiers.training import fit_verifier

log = logging.getLogger(__name__)

SCORERS_DIR = Path(__file__).resolve().parents[1] / "resources" / "scorers"
CARD_FILE = "card.json"
UNTRAINED_FILE = "untrained.json"
README_FILE = "README.md"
SAME, DIFFERENT = "same meaning", "different"
PARAPHRASE = "paraphrase"
NEAR_MISS_KINDS = ("near-miss of the sentence", "near-miss of its paraphrase")  # (s, nm(s)), (s, nm(p))
UNTRAINED = ("pooled", "F0", "F1", "F2")  # the scorers calibrated in untrained.json ("pooled": pooled cosine)
COMMAND = "python -m compsense scorers --data-dir DIR"


@dataclass(frozen=True)
class Spec:
    """One shipped scorer: its folder, the verifier it is (name and size), its title in the explorer's
    selector (the explorer adds what it was trained on, from its card) and a line for the card."""

    folder: str
    name: str
    size: str
    title: str
    what: str


SHIPPED = (
    Spec("F3", "F3", "small", "F3", "our small CNN over the map"),
    Spec("F4", "F4", "small", "F4", "our small Transformer over the map's 8x8 patches"),
    Spec(
        "F4-authors",
        "F4",
        "paper",
        "F4 authors' size",
        "the authors' F4 (their verifiers.py: width 384, canvas 128, one layer, one head)",
    ),
)
# How they train: our equal recipe (`VerifierTraining`'s defaults) at a budget one CPU core trains in minutes,
# on a seeded sample of the paraphrase pairs (most of the time goes to generating near-misses and encoding).
TRAINING = VerifierTraining(budget_examples=3072, batch_size=32)
MAX_TRAIN_PAIRS = 1500  # of ~3,700 MRPC/STS-B train paraphrase pairs; ~1/3 have near-misses on both sides
MAX_HELDOUT_PAIRS = 600  # of 1,485 MRPC/STS-B test paraphrase pairs
MAX_SEQ_LENGTH = 128  # the authors' max_seq_length: the authors' F4's canvas

# What the rows derive from, and on what terms (shared/data/SOURCES.md). The weights hold no text, but
# they are derived from these rows: whoever redistributes them should keep to the most restrictive.
SOURCES = {
    "mrpc": {
        "name": "Microsoft Research Paraphrase Corpus (Dolan & Brockett 2005), GLUE split",
        "licence": "Microsoft Research licence terms: not an open licence; research use",
    },
    "stsb": {
        "name": "STS Benchmark (Cer et al. 2017)",
        "licence": "scores CC BY-SA 4.0; each sentence under its own source's licence (stsb/LICENSE.txt)",
    },
}
TERMS = (
    "The weights are small networks over token-similarity maps and contain no text, but they are derived "
    "from MRPC and STS-B rows: use them for research, as MRPC's Microsoft Research terms allow, and credit "
    "STS-B (CC BY-SA 4.0 scores). The encoder, all-MiniLM-L6-v2, is Apache-2.0 and does not ship here."
)


# ----------------------------------------------------------------------------- verdict rule


def calibrate(paraphrase_scores, near_miss_scores) -> dict:
    """The threshold that best splits paraphrases (should score at or above it: "same meaning") from
    near-misses (below it: "different"), by balanced accuracy, the mean of the two shares it gets
    right (0.5 is chance whatever the counts). Thresholds lie halfway between neighbouring scores (or
    just outside them); of equally good ones the lowest is kept. Returns the threshold and
    `threshold_accuracy`'s numbers for it on these same scores (optimistic: the threshold was chosen
    on them)."""
    pos, neg = _finite(paraphrase_scores, near_miss_scores)
    values = np.unique(np.concatenate([pos, neg]))
    candidates = np.concatenate([[values[0] - 1e-6], (values[:-1] + values[1:]) / 2, [values[-1] + 1e-6]])
    same = 1 - np.searchsorted(np.sort(pos), candidates, side="left") / len(pos)  # share of pos >= t
    different = np.searchsorted(np.sort(neg), candidates, side="left") / len(neg)  # share of neg < t
    best = int(np.argmax((same + different) / 2))
    threshold = round(float(candidates[best]), 6)
    return {"threshold": threshold, **threshold_accuracy(pos, neg, threshold)}


def threshold_accuracy(paraphrase_scores, near_miss_scores, threshold: float) -> dict:
    """How a threshold does on paraphrases and near-misses: balanced accuracy with an approximate 95%
    interval (normal, each pair counted as independent), the share of each kind it gets right, counts."""
    pos, neg = _finite(paraphrase_scores, near_miss_scores)
    same, different = float((pos >= threshold).mean()), float((neg < threshold).mean())
    accuracy = (same + different) / 2
    half_width = 1.96 * np.sqrt(same * (1 - same) / len(pos) + different * (1 - different) / len(neg)) / 2
    return {
        "balanced_accuracy": round(accuracy, 4),
        "interval": [round(accuracy - half_width, 4), round(accuracy + half_width, 4)],
        "paraphrases_called_same": round(same, 4),
        "near_misses_called_different": round(different, 4),
        "n_paraphrases": int(len(pos)),
        "n_near_misses": int(len(neg)),
    }


def _finite(pos, neg) -> tuple[np.ndarray, np.ndarray]:
    pos, neg = np.asarray(pos, dtype=np.float64), np.asarray(neg, dtype=np.float64)
    if len(pos) == 0 or len(neg) == 0 or not (np.isfinite(pos).all() and np.isfinite(neg).all()):
        raise ValueError(f"need finite scores of both kinds, got {len(pos)} paraphrases and {len(neg)} near-misses")
    return pos, neg


def better_than_chance(block: dict) -> bool:
    """Whether a held-out block's balanced accuracy interval lies above 0.5."""
    return above_chance(block["interval"])


def above_chance(interval) -> bool:
    """Whether a balanced accuracy interval (low, high) lies above 0.5, a coin's accuracy."""
    return interval[0] > 0.5


def verdict(score: float, threshold: float) -> str:
    """The verdict a calibrated scorer gives: "same meaning" at or above its threshold, else "different"."""
    return SAME if score >= threshold else DIFFERENT


# ----------------------------------------------------------------------------- reading what ships


def shipped(scorers_dir: str | Path | None = SCORERS_DIR) -> list[tuple[Spec, Path, dict]]:
    """(spec, folder, card) of every shipped scorer present under `scorers_dir` (none for None or a
    missing folder), in SHIPPED's order."""
    if scorers_dir is None:
        return []
    found = []
    for spec in SHIPPED:
        folder = Path(scorers_dir) / spec.folder
        if (folder / CARD_FILE).is_file() and (folder / CONFIG_FILE).is_file():
            card = _read_json(folder / CARD_FILE)
            if card.get("heldout"):
                found.append((spec, folder, card))
    return found


def untrained_calibration(scorers_dir: str | Path | None = SCORERS_DIR) -> dict:
    """untrained.json: {"encoder": {...}, "scorers": {"pooled"|"F0"|"F1"|"F2": calibration}}; {} without one."""
    path = Path(scorers_dir) / UNTRAINED_FILE if scorers_dir is not None else None
    if path is None or not path.is_file():
        return {}
    return _read_json(path)


def _read_json(path: Path) -> dict:
    """A card's JSON; {} (with a warning naming the fix) when it is damaged: the explorer goes on without it."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as err:
        log.warning("%s is unreadable (%s): skipped; restore it (git checkout) or rebuild: %s", path, err, COMMAND)
        return {}
    return data if isinstance(data, dict) else {}


# ----------------------------------------------------------------------------- building


def heldout_pairs(
    data_dir=None, max_pairs: int | None = 600, seed: int = 42, paraphrases=None, balance: bool = True
) -> tuple[pd.DataFrame, dict]:
    """The calibration pairs: for held-out paraphrase pairs (s, p) (MRPC test label 1 and STS-B test
    score >= 4 by default, `geometry.positive_pairs`) whose sentences both have a near-miss, the pair
    (s, p) itself (kind "paraphrase") and the near-misses (s, nm(s)) and (s, nm(p)), built as the
    balanced training rows are (`balanced_structural_rows`). Returns (table with sentence1,
    sentence2, kind, family; counts)."""
    if paraphrases is None:
        paraphrases = positive_pairs(load_mrpc("test", data_dir=data_dir) + load_stsb("test", data_dir=data_dir))
    rows, counts = balanced_structural_rows(
        data_dir=data_dir, paraphrases=paraphrases, max_pairs=max_pairs, seed=seed, balance=balance
    )
    identity, para = rows[rows.row_kind == "identity"], rows[rows.row_kind == "paraphrase"]
    parts = [
        pd.DataFrame({"sentence1": para.anchor, "sentence2": para.positive, "kind": PARAPHRASE, "family": ""}),
        pd.DataFrame(
            {
                "sentence1": identity.anchor,
                "sentence2": identity.negative,
                "kind": NEAR_MISS_KINDS[0],
                "family": identity.family,
            }
        ),
        pd.DataFrame(
            {"sentence1": para.anchor, "sentence2": para.negative, "kind": NEAR_MISS_KINDS[1], "family": para.family}
        ),
    ]
    return pd.concat(parts, ignore_index=True), counts


def build(
    data_dir=None,
    out_dir: str | Path = SCORERS_DIR,
    backbone: str = "minilm-l6",
    encoder=None,
    training: VerifierTraining = TRAINING,
    max_train_pairs: int | None = MAX_TRAIN_PAIRS,
    max_heldout_pairs: int | None = MAX_HELDOUT_PAIRS,
    seed: int = 42,
    balance: bool = True,
    compute: Compute | None = None,
) -> Path:
    """Train, calibrate and write the shipped scorers into `out_dir` (replacing what is there), from
    the MRPC/STS-B files under `data_dir` (default: COMPSENSE_DATA_DIR or shared/data). Returns `out_dir`.

    `encoder` (a SentenceTransformer already loaded, as tests pass the tiny BERT) overrides loading
    `backbone`; the cards name `backbone` either way. `max_train_pairs` / `max_heldout_pairs` keep a
    seeded sample of the paraphrase pairs; `training` is the budget and recipe (every scorer the same);
    `balance=False` keeps every generated edit (for inputs too small to balance); `compute` the device
    and progress bars."""
    out_dir = Path(out_dir)
    compute = compute or Compute()
    device = compute.device
    if encoder is None:
        encoder = load_encoder(backbone, device=device, max_seq_length=MAX_SEQ_LENGTH)
    fingerprint = encoder_fingerprint(encoder)[:16]
    train, train_counts = balanced_structural_rows(
        data_dir=data_dir, max_pairs=max_train_pairs, seed=seed, balance=balance
    )
    heldout, heldout_counts = heldout_pairs(data_dir, max_heldout_pairs, seed, balance=balance)
    seen = set(train.anchor) | set(train.positive) | set(train.negative)
    overlap = heldout.sentence1.isin(seen) | heldout.sentence2.isin(seen)
    heldout = heldout[~overlap].reset_index(drop=True)
    if not (heldout.kind == PARAPHRASE).any() or (heldout.kind == PARAPHRASE).all():
        raise ValueError(f"no held-out paraphrases and near-misses left to calibrate on ({len(heldout)} pairs)")
    pairs = list(zip(heldout.sentence1, heldout.sentence2))
    is_para = (heldout.kind == PARAPHRASE).to_numpy()
    encoder_card = _encoder_card(backbone, encoder, fingerprint)
    common = {
        "commit": git_commit(),
        "built_at": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "command": COMMAND,
        "encoder": encoder_card,
        "heldout_set": {
            "sources": "MRPC test (label 1) and STS-B test (score >= 4) paraphrase pairs, with the generator's "
            "near-misses of each side; no training row is drawn from them",
            "dropped_sharing_a_training_sentence": int(overlap.sum()),
            "pairs_by_kind": heldout.kind.value_counts().to_dict(),
            "near_misses_by_family": heldout[~is_para].family.value_counts().to_dict(),
            "seed": seed,
            **heldout_counts,
        },
        "terms": TERMS,
    }

    out_dir.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=".scorers-", dir=out_dir.parent))
    try:
        with tempfile.TemporaryDirectory(prefix="compsense-scorers-cache-") as cache:
            untrained = {"pooled": pair_cosines(encoder, pairs)}
            for name in UNTRAINED[1:]:
                untrained[name] = score_pairs(encoder, untrained_verifier(name), pairs, cache_dir=cache, device=device)
            write_json(
                staging / UNTRAINED_FILE,
                {
                    **common,
                    "scorers": {k: _heldout_block(v, heldout, seed) for k, v in untrained.items()},
                },
            )
            for spec in SHIPPED:
                folder = staging / spec.folder
                kwargs = {
                    "include_special": False,
                    "size": spec.size,
                    **sized_kwargs(spec.name, spec.size, embedding_dim(encoder), encoder.max_seq_length),
                }
                _, _, history = fit_verifier(
                    spec.name,
                    "frozen",
                    encoder,
                    train,
                    folder,
                    training=training,
                    seed=seed,
                    cache_dir=cache,
                    compute=compute,
                    verifier_kwargs=kwargs,
                )
                _store_half(folder)
                verifier = load(folder)  # what ships, float16 weights loaded back, is what is calibrated
                scores = score_pairs(encoder, verifier, pairs, cache_dir=cache, device=device)
                card = {
                    "scorer": spec.name,
                    "title": spec.title,
                    "what": spec.what,
                    "size": spec.size,
                    "n_parameters": n_parameters(verifier),
                    "weights": "float16 safetensors (scored in float32 after loading)",
                    **common,
                    "training": {
                        "rows": "balanced structural rows (compsense.verifiers.data.balanced_structural_rows): "
                        "(s, s, nm(s)) and (s, p, nm(p)) for MRPC-train (label 1) and STS-B-train (score >= 4) "
                        "paraphrase pairs (s, p); no retrieval rows",
                        "sources": SOURCES,
                        "n_rows": len(train),
                        "rows_by_kind": train.row_kind.value_counts().to_dict(),
                        "rows_by_family": train.family.value_counts().to_dict(),
                        **train_counts,
                        "regime": "frozen",
                        "seed": seed,
                        "budget_examples": history["budget_examples"],
                        "examples_seen": history["examples_seen"],
                        "steps": history["steps"],
                        "recipe": training.settings(),
                        "final_loss": round(float(np.mean(history["loss"][-8:])), 4) if history["loss"] else None,
                        "final_train_accuracy": round(float(np.mean(history["accuracy"][-8:])), 4)
                        if history["accuracy"]
                        else None,
                        "seconds": history["seconds"],
                    },
                    "heldout": _heldout_block(scores, heldout, seed),
                }
                write_json(folder / CARD_FILE, card)
        write_text(staging / README_FILE, readme(staging))
        _replace(staging, out_dir)
    finally:
        if staging.exists():
            shutil.rmtree(staging, ignore_errors=True)
    return out_dir


def untrained_verifier(name: str):
    """F0-F2 as the explorer scores them: F2 with the paper's fixed lam = tau = 0.1."""
    return create(name, learnable=False) if name == "F2" else create(name)


def _heldout_block(scores, heldout: pd.DataFrame, seed: int) -> dict:
    """A scorer's calibration on the held-out pairs, fitted on one half and measured on the other.

    The anchors are split at random (by `seed`) into a calibration half and a test half, every pair
    of an anchor on its side: the threshold is `calibrate`d on the calibration half, and the accuracy
    the card states is measured on the test half, pairs the threshold never saw (a threshold picked
    from hundreds of candidates flatters the pairs it was picked on). Also: the AUC over all held-out
    pairs (needs no threshold), and the share of each kind and family of near-miss the threshold
    calls different on the test half."""
    scores = np.asarray(scores, dtype=np.float64)
    is_para = (heldout.kind == PARAPHRASE).to_numpy()
    test = calibration_split(heldout.sentence1, seed)
    fit = calibrate(scores[is_para & ~test], scores[~is_para & ~test])
    block = {
        "threshold": fit["threshold"],
        **threshold_accuracy(scores[is_para & test], scores[~is_para & test], fit["threshold"]),
        "calibration_half": {k: v for k, v in fit.items() if k != "threshold"},
        "auc": round(float(near_miss_auc(scores[is_para], scores[~is_para])), 4),
    }
    different = scores < fit["threshold"]
    near = ~is_para & test
    block["near_misses_called_different_by_kind"] = {
        kind: round(float(different[near & (heldout.kind == kind).to_numpy()].mean()), 4)
        for kind in NEAR_MISS_KINDS
        if (near & (heldout.kind == kind).to_numpy()).any()
    }
    block["near_misses_called_different_by_family"] = {
        family: {
            "share": round(float(different[near & (heldout.family == family).to_numpy()].mean()), 4),
            "n": int((near & (heldout.family == family).to_numpy()).sum()),
        }
        for family in sorted(set(heldout.family[near]))
    }
    return block


def calibration_split(anchors, seed: int) -> np.ndarray:
    """True for the pairs whose anchor falls in the test half (a seeded half of the distinct anchors)."""
    anchors = pd.Series(list(anchors), dtype=str)
    distinct = np.array(sorted(set(anchors)))
    order = np.random.default_rng(seed).permutation(len(distinct))
    test = set(distinct[order[: len(distinct) // 2]])
    return anchors.isin(test).to_numpy()


def _encoder_card(backbone: str, encoder, fingerprint: str) -> dict:
    known = BACKBONES.get(backbone)
    return {
        "backbone": backbone,
        "hub_id": known.hub_id if known else None,
        "package": known.offline_package.replace("_", "-") if known and known.offline_package else None,
        "package_weights_sha256": known.package_sha256 if known else None,
        "fingerprint": fingerprint,
        "max_seq_length": getattr(encoder, "max_seq_length", None),
    }


def _store_half(folder: Path) -> None:
    """Rewrite a saved verifier's weights in float16 (half the bytes) and record their new digest, which
    `architectures.load` checks; loading copies them into the float32 parameters."""
    weights = folder / WEIGHTS_FILE
    state = {k: (v.half() if v.is_floating_point() else v).contiguous() for k, v in load_file(str(weights)).items()}
    save_file(state, str(weights))
    info = read_info(folder)
    info[WEIGHTS_SHA256] = sha256_file(weights)
    write_json(folder / CONFIG_FILE, info)


def _replace(staging: Path, out_dir: Path) -> None:
    """Put the finished staging folder where `out_dir` is, the old one removed only once the new one is whole."""
    old = None
    if out_dir.exists():
        old = out_dir.with_name(f".{out_dir.name}-old")
        if old.exists():
            shutil.rmtree(old)
        out_dir.rename(old)
    staging.rename(out_dir)
    if old is not None:
        shutil.rmtree(old, ignore_errors=True)


def readme(scorers_dir: str | Path) -> str:
    """The cards in words: what each scorer is, what it learned from, on what terms, and how well its
    threshold does on the held-out pairs (a scorer no better than chance is said to be so)."""
    scorers_dir = Path(scorers_dir)
    untrained = untrained_calibration(scorers_dir)
    cards = [card for _, _, card in shipped(scorers_dir)]
    first = cards[0] if cards else untrained
    enc, held = first.get("encoder", {}), first.get("heldout_set", {})
    lines = [
        "# Shipped scorers",
        "",
        "Written by `compsense.explorer.scorers.build` (`" + COMMAND + "`); do not edit by hand.",
        f"Built at commit {first.get('commit')} on {first.get('built_at')}.",
        "",
        f"Encoder: {enc.get('backbone')} ({enc.get('hub_id')}, package {enc.get('package')}), fingerprint "
        f"`{enc.get('fingerprint')}`, max_seq_length {enc.get('max_seq_length')}. The thresholds hold for this "
        "encoder's maps only; the explorer gives no verdict under another encoder.",
        "",
        f"Held-out pairs: {held.get('sources')}. Pairs by kind: {held.get('pairs_by_kind')}; near-misses by "
        f"family: {held.get('near_misses_by_family')}.",
        "",
        "A scorer says *same meaning* when its score is at least its threshold. Balanced accuracy is the mean "
        "of the share of held-out paraphrases it calls the same and the share of near-misses it calls "
        "different: 50% is chance. The threshold is fitted on a random half of the held-out anchors and the "
        "accuracy measured on the other half; the interval is approximate (normal, pairs as independent). "
        "AUC: how often a paraphrase outscores a near-miss, over all held-out pairs.",
        "",
        "| scorer | threshold | balanced accuracy [95%] | paraphrases called same | near-misses called different "
        "| AUC |",
        "|---|---|---|---|---|---|",
    ]
    calibrated = untrained.get("scorers", {})
    rows = [
        ("pooled cosine" if k == "pooled" else f"{k} (untrained)", calibrated[k]) for k in UNTRAINED if k in calibrated
    ]
    rows += [(f"{card['title']} (trained)", card["heldout"]) for card in cards]
    for label, h in rows:
        low, high = h["interval"]
        lines.append(
            f"| {label} | {h['threshold']:.3f} | {h['balanced_accuracy']:.1%} [{low:.1%}, {high:.1%}] "
            f"| {h['paraphrases_called_same']:.1%} | {h['near_misses_called_different']:.1%} | {h['auc']:.3f} |"
        )
    weak = [label for label, h in rows if not better_than_chance(h)]
    if weak:
        lines += ["", f"Not better than chance (the interval reaches 50%): {', '.join(weak)}."]
    for card in cards:
        t, h = card["training"], card["heldout"]
        lines += [
            "",
            f"## {card['title']} (trained)",
            "",
            f"{card['what']}; {card['n_parameters']:,} parameters; {card['weights']}.",
            f"Trained frozen on {t['n_rows']:,} rows ({t['rows_by_kind']}), seed {t['seed']}, "
            f"{t['examples_seen']:,} examples in {t['steps']} steps of {t['recipe']['batch_size']} "
            f"({t['seconds']:.0f} s); final training loss {t['final_loss']}, training accuracy "
            f"{t['final_train_accuracy']}.",
            f"Rows: {t['rows']}. Families: {t['rows_by_family']}.",
            f"Held-out: threshold {h['threshold']:.3f}, balanced accuracy {h['balanced_accuracy']:.1%}; "
            f"near-misses called different by kind {h['near_misses_called_different_by_kind']}.",
        ]
    lines += ["", "## Sources and terms", ""]
    lines += [f"- {s['name']}: {s['licence']}" for s in SOURCES.values()]
    lines += ["", TERMS, ""]
    return "\n".join(lines)
