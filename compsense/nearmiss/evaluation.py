"""The near-miss test with real positives: does a scorer prefer a true paraphrase to a minimal,
meaning-changing edit of the same sentence?

Notebook 04 asks it of pooled cosines (Base, Model A, Model B) and of every verifier, on notebook
01's held-out near-misses against MRPC paraphrases and, when their files are here, on SugarCrepe
(another caption of the same image as the query) and CondaQA. A scorer is any function from
(query, document) pairs to scores, so cosines and verifiers are judged by the same code, and the
numbers are `compsense.nearmiss.metrics`'s (near-miss AUC, pairwise accuracy, self-match AUC):

- `near_miss_table`, `self_match_table`: the metrics per scorer and family (a long table);
- `paraphrase_positives` / `heldout_positives`, `sugarcrepe_pairs`, `condaqa_pairs`, `eval_sets`: the pairs;
- `cosine_scorer`, `pooled_cosine_scorers`: the pooled scorers (verifiers' own:
  `compsense.verifiers.study.verifier_scorers`, a layer above);
- `evaluate_sets`, `to_tidy`, `separation_table`: results (their figures: `compsense.figures.verifiers`).

This notebook's protocol: the query is always a pair's sentence1 (a verifier is not symmetric), and a
near-miss is compared with every positive of its query. Notebook 03 (`compsense.nearmiss.geometry`)
measures where near-misses sit in the pooled space with its own pairing; the docstrings of
`paraphrase_positives` and `sugarcrepe_pairs` say how they differ.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from dataclasses import asdict, dataclass

import numpy as np
import pandas as pd

from compsense.core.layout import load_models
from compsense.core.paths import local_data_dir
from compsense.core.storage import TIDY_KEY, tidy
from compsense.data.datasets import as_pairs, load_condaqa, load_sugarcrepe
from compsense.data.family_names import PAPER_FAMILIES
from compsense.data.structural import heldout_paraphrase_pairs
from compsense.nearmiss.checks import RUN_KEYS, check_correlation, checks_per_run, split_variant  # noqa: F401 (re-exported)
from compsense.nearmiss.geometry import pair_cosines, positive_pairs
from compsense.nearmiss.metrics import (
    ALL_FAMILIES,
    AUC,
    COPY_VS_NEAR_MISS,
    MEAN_SCORE,
    PAIRWISE_ACCURACY,
    PAIRWISE_CI,
    PARAPHRASE,
    SELF_MATCH,
    SEPARATION,
    has_positive,
    keyed_pairwise_accuracy_interval,
    near_miss_auc,
    pairwise_accuracy,
    self_match_auc,
)

TABLE_COLUMNS = ["scorer", "family", "metric", "value", "n"]
# Columns of notebook 04's tidy rows (`verifiers.study.run_study`) the separation table carries beside
# the seeds: how large each verifier is and how many training examples it saw.
SIZE_COLUMNS = ("parameters", "examples_seen")
SEPARATION_FILE = "separation.parquet"  # notebook 04 writes `separation_frame` here; the report reads it


def near_miss_table(scorers: dict, positives, near_misses, match_on: str = "sentence1") -> pd.DataFrame:
    """Per scorer and near-miss family: near-miss AUC, pairwise accuracy and mean scores, as a long
    table with columns scorer, family, metric, value, n.

    positives: (query, paraphrase) pairs (DataFrame with sentence1, sentence2). near_misses:
    (query, near-miss) pairs with a `family` column. Metrics (`compsense.nearmiss.metrics`):
    - auc: `near_miss_auc` of all positive scores against the family's near-miss scores; n = near-misses.
    - pairwise_accuracy: `pairwise_accuracy` with `match_on` (by default the query sentence) as the
      key, so a near-miss is compared with every positive of its query; n = near-misses that have
      one, NaN when none has; pairwise_accuracy_ci_low/high: its 95% interval resampling anchors
      (`metrics.keyed_pairwise_accuracy_interval`), where two anchors or more have one.
    - mean_score: the family's mean near-miss score, and (family "paraphrase") the positives' mean:
      the view of the paper's Figure 3. Scales differ between scorers; compare within a scorer.
    Family "all" pools the paper's families (`PAPER_FAMILIES`) when any is present, else every family
    of the set. Each scorer is called once, on positives and near-misses
    together (texts are encoded once).
    """
    pos, neg = _as_frame(positives, "positives"), _as_frame(near_misses, "near_misses")
    if "family" not in neg.columns:
        raise ValueError("near_misses needs a `family` column (negation, role swap, ...)")
    if match_on not in pos.columns or match_on not in neg.columns:
        raise ValueError(f"match_on={match_on!r} must be a column of both positives and near_misses")
    if pos.empty or neg.empty:
        raise ValueError(f"near_miss_table needs positives and near-misses (got {len(pos)} and {len(neg)})")
    families = neg["family"].astype(str)
    # "all": the paper's families pooled when the set has any (our generator's other families are
    # reported each on its own only); a set without them (SugarCrepe's subsets) pools its own.
    in_paper = families.isin(PAPER_FAMILIES).to_numpy()
    pooled = in_paper if in_paper.any() else np.ones(len(neg), bool)
    rows = []
    for scorer_name, scorer in scorers.items():
        scores = np.asarray(scorer(as_pairs(pos) + as_pairs(neg)), dtype=float)
        pos_scores, neg_scores = scores[: len(pos)], scores[len(pos) :]
        rows.append(
            dict(scorer=scorer_name, family=PARAPHRASE, metric=MEAN_SCORE, value=float(pos_scores.mean()), n=len(pos))
        )
        for family in sorted(families.unique()) + [ALL_FAMILIES]:
            sel = pooled if family == ALL_FAMILIES else (families == family).to_numpy()
            fam_scores, fam_keys = neg_scores[sel], neg[match_on].to_numpy()[sel]
            matched = has_positive(pos[match_on], fam_keys)
            n_matched = int(matched.sum())
            accuracy = pairwise_accuracy(pos_scores, fam_scores, pos[match_on], fam_keys) if n_matched else float("nan")
            rows += [
                dict(
                    scorer=scorer_name,
                    family=family,
                    metric=MEAN_SCORE,
                    value=float(fam_scores.mean()),
                    n=int(sel.sum()),
                ),
                dict(
                    scorer=scorer_name,
                    family=family,
                    metric=AUC,
                    value=near_miss_auc(pos_scores, fam_scores),
                    n=int(sel.sum()),
                ),
                dict(scorer=scorer_name, family=family, metric=PAIRWISE_ACCURACY, value=accuracy, n=n_matched),
            ]
            if (
                n_matched and len(set(fam_keys[matched])) >= 2
            ):  # its interval, resampling anchors (their near-misses together)
                bounds = keyed_pairwise_accuracy_interval(pos_scores, fam_scores, pos[match_on], fam_keys)
                rows += [
                    dict(scorer=scorer_name, family=family, metric=name, value=bound, n=n_matched)
                    for name, bound in zip(PAIRWISE_CI, bounds, strict=True)
                ]
    return pd.DataFrame(rows, columns=TABLE_COLUMNS)


def self_match_table(scorers: dict, positives, near_misses=None) -> pd.DataFrame:
    """The sanity checks a near-miss test needs: does each scorer rank a sentence's exact copy above
    its paraphrase (family "self_match"), and above its near-miss (family "copy_vs_near_miss", when
    `near_misses` are given)? Long table like `near_miss_table`: auc (`metrics.self_match_auc` of the
    copies' scores against the others'), pairwise_accuracy of s(s, s) against s(s, other) per pair
    (`metrics.pairwise_accuracy`, aligned), mean_score of the copies.

    Why: near-misses are near-copies and paraphrases are rewordings, so a verifier can separate
    them by penalising token overlap. Then it also ranks a sentence's copy below its paraphrase and
    below its near-miss (measured on the local profile: F4 trained on paraphrase positives reaches
    near-miss AUC 0.92 with self-match AUC 0.04 and copy > near-miss 0.34). A scorer that reads the
    edit is near 1 on both; one that does not gives itself away.
    """
    pos = _as_frame(positives, "positives")
    if pos.empty:
        raise ValueError("self_match_table needs positive (sentence, paraphrase) pairs")
    checks = {SELF_MATCH: as_pairs(pos)}
    if near_misses is not None:
        checks[COPY_VS_NEAR_MISS] = as_pairs(_as_frame(near_misses, "near_misses"))
    # One call per scorer over every check's copies and pairs, so shared texts are encoded once.
    pairs = [pair for others in checks.values() for pair in [(q, q) for q, _ in others] + others]
    rows = []
    for scorer_name, scorer in scorers.items():
        scores, start = np.asarray(scorer(pairs), dtype=float), 0
        for family, others in checks.items():
            n = len(others)
            copy, other = scores[start : start + n], scores[start + n : start + 2 * n]
            start += 2 * n
            rows += [
                dict(scorer=scorer_name, family=family, metric=MEAN_SCORE, value=float(copy.mean()), n=n),
                dict(scorer=scorer_name, family=family, metric=AUC, value=self_match_auc(copy, other), n=n),
                dict(
                    scorer=scorer_name,
                    family=family,
                    metric=PAIRWISE_ACCURACY,
                    value=pairwise_accuracy(copy, other),
                    n=n,
                ),
            ]
    return pd.DataFrame(rows, columns=TABLE_COLUMNS)


def paraphrase_positives(paraphrases, near_misses, max_unmatched: int | None = None, seed: int = 0):
    """Positive (query, paraphrase) pairs for `near_miss_table` from labelled paraphrase pairs
    (MRPC SentencePairs or a table with sentence1, sentence2, label).

    Only label-1 pairs count. A pair whose sentence2 is a near-miss source is flipped so that the
    source is the query: then score(s, paraphrase) and score(s, near-miss) share their query and
    pairwise accuracy can be computed. Pairs touching no source are kept as well (up to
    `max_unmatched`, sampled by `seed`): the AUC compares against all positives, matched or not.
    Columns: sentence1, sentence2, matched.

    Not notebook 03's protocol (`geometry.attach_paraphrases`), on purpose: there each near-miss
    keeps one paraphrase of its anchor (the first), and the anchor may sit on either side of the
    pair and is also found by source id. Here the query is always the near-miss's sentence1
    (notebook 01 writes the source there, and a verifier's score depends on which text is the
    query), and every paraphrase of the source is compared. The metrics are the same
    (`compsense.nearmiss.metrics`); so is the paraphrase selection (see `heldout_positives`).
    """
    table = _as_frame(paraphrases, "paraphrases")
    if "label" in table.columns:
        table = table[table["label"].astype(float) == 1]
    sources = set(_as_frame(near_misses, "near_misses")["sentence1"])
    rows = []
    for s1, s2 in zip(table["sentence1"], table["sentence2"], strict=True):
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

    A different protocol from notebook 03's `geometry.sugarcrepe_caption_pairs`, which scores
    (caption, negative caption) directly and compares those cosines with MRPC paraphrase cosines:
    a statement about where near-misses sit in the pooled space, not a ranking test with
    positives of the same images. `max_examples` samples over all subsets, not per subset.
    """
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
    return _paired_frames(pos, neg, "example_id", max_examples, seed)


def condaqa_pairs(records=None, data_dir=None, unit: str = "sentence", max_examples: int | None = None, seed: int = 0):
    """CondaQA as a negation near-miss test nobody here wrote: (positives, near_misses) for
    `near_miss_table` with match_on="passage_id".

    Crowd workers edited each Wikipedia passage around a negation cue: a paraphrase of the negated
    sentence (edit 1) and the negation undone (edit 3, family "affirmative"). The query is the
    original (edit 0); the positive its paraphrase edit, the near-miss its negation-undone edit.
    unit "passage" scores whole passages (median ~120 words: the edit lies beyond a 128-token
    window in about a quarter of them, and a truncating encoder then sees two identical texts);
    unit "sentence" (default) cuts all three to the sentence(s) around the edits, at the same
    place in each (`_edited_region`). Passages lacking edit 1 or 3 are dropped.
    """
    if unit not in ("sentence", "passage"):
        raise ValueError(f"unit must be 'sentence' or 'passage', got {unit!r}")
    records = load_condaqa(data_dir=data_dir) if records is None else list(records)
    by_passage: dict[str, dict[int, str]] = {}
    for rec in records:
        by_passage.setdefault(str(rec["passage_id"]), {})[int(rec["edit_id"])] = rec["text"]
    pos, neg = [], []
    for pid in sorted(by_passage):
        edits = by_passage[pid]
        if not {0, 1, 3} <= set(edits) or edits[1] == edits[0] or edits[3] == edits[0]:
            continue
        texts = [edits[0], edits[1], edits[3]]
        if unit == "sentence":
            texts = _edited_region(*texts)
        pos.append((texts[0], texts[1], pid))
        neg.append((texts[0], texts[2], pid, "affirmative"))
    return _paired_frames(pos, neg, "passage_id", max_examples, seed)


def _paired_frames(pos: list, neg: list, key: str, max_examples: int | None, seed: int):
    """(positives, near_misses) frames from parallel rows, the same `max_examples` rows of each."""
    positives = pd.DataFrame(pos, columns=["sentence1", "sentence2", key])
    near_misses = pd.DataFrame(neg, columns=["sentence1", "sentence2", key, "family"])
    if max_examples is not None and len(near_misses) > max_examples:
        keep = near_misses.sample(n=max_examples, random_state=seed).index
        positives = positives.loc[keep].reset_index(drop=True)
        near_misses = near_misses.loc[keep].reset_index(drop=True)
    return positives, near_misses


def _edited_region(original: str, *edits: str) -> list[str]:
    """The sentence(s) of `original` that any edit changes, and the same stretch of each edit.

    Texts agree before the first change and after the last one, so a cut made inside the common
    prefix and inside the common suffix (counted from the end) falls at the same place in all.
    """
    start, tail = len(original), len(original)
    for edit in edits:
        prefix = _common_prefix(original, edit)
        suffix = _common_prefix(original[prefix:][::-1], edit[prefix:][::-1])
        start, tail = min(start, prefix), min(tail, suffix)
    ends = [m.end() for m in _SENTENCE_END.finditer(original)]
    begin = max([e for e in ends if e <= start], default=0)
    changed_end = len(original) - tail
    finish = min([e for e in ends if e >= changed_end], default=len(original))
    back = len(original) - finish  # characters after the cut, identical in every text
    return [t[begin : len(t) - back].strip() for t in (original, *edits)]


_SENTENCE_END = re.compile(r"[.!?](?=\s)")


def _common_prefix(a: str, b: str) -> int:
    return len(os.path.commonprefix([a, b]))


def optional_condaqa(data_dir=None, unit: str = "sentence", max_examples: int | None = None, seed: int = 0):
    """`condaqa_pairs`, or (None, None, why) when the CondaQA file is not here."""
    try:
        positives, near_misses = condaqa_pairs(data_dir=data_dir, unit=unit, max_examples=max_examples, seed=seed)
    except FileNotFoundError as err:
        return None, None, f"CondaQA skipped: {err}"
    return positives, near_misses, f"CondaQA: {len(near_misses)} passages with a paraphrase and a negation-undone edit"


def _sugarcrepe_images(examples, data_dir) -> dict[str, str]:
    """example_id -> COCO image file. The loader's records carry no image, so read it from the
    same JSON files (`<subset>.json`, key -> {filename, ...}); an `image` attribute wins if present."""
    if all(getattr(ex, "image", None) for ex in examples):
        return {ex.example_id: ex.image for ex in examples}

    folder = local_data_dir(data_dir) / "sugarcrepe"
    images = {}
    for subset in sorted({ex.subset for ex in examples}):
        data = json.loads((folder / f"{subset}.json").read_text(encoding="utf-8"))
        images.update({f"{subset}/{key}": rec["filename"] for key, rec in data.items()})
    missing = [ex.example_id for ex in examples if ex.example_id not in images]
    if missing:
        raise KeyError(f"no image file for SugarCrepe examples {missing[:3]} in {folder}")
    return images


def cosine_scorer(encoder, batch_size: int = 64):
    """A scorer for `near_miss_table`: pairs -> pooled cosine (what the retriever itself ranks by)."""
    return lambda pairs: pair_cosines(encoder, pairs, batch_size=batch_size)


def pair_noise(pairs, sigma: float, seed: int = 0) -> np.ndarray:
    """Gaussian noise of standard deviation `sigma`, one value per (a, b) pair, the same for the same
    pair and seed in any batch, process or order (seeded by `seed` and the pair's two strings)."""
    if sigma < 0:
        raise ValueError(f"pair_noise: sigma must be >= 0, got {sigma}")
    return np.asarray(
        [
            np.random.default_rng(
                int.from_bytes(hashlib.sha256(f"{seed}\x1f{a}\x1f{b}".encode()).digest()[:8], "little")
            ).normal(0.0, sigma)
            for a, b in pairs
        ],
        dtype=float,
    )


@dataclass(frozen=True)
class NoisyScorer:
    """The noise control: `base` plus `pair_noise` of standard deviation `sigma`, so self-match,
    near-miss AUC and pairwise accuracy see one consistent noisy scorer. `sigma` is kept so that
    notebook 05 can rerank with the same control (`verifiers.rerank.noise_methods`).

    Frozen MaxSim with noise of a few times the spread of its paraphrase scores traces the line from
    (near-miss AUC low, self-match high) to (0.5, 0.5) that an under-trained verifier also traces: a
    trained verifier is evidence of reading the edit only where it leaves that line."""

    base: object
    sigma: float
    seed: int = 0

    def __call__(self, pairs):
        return np.asarray(self.base(pairs), dtype=float) + pair_noise(pairs, self.sigma, self.seed)


def noisy_scorer(scorer, sigma: float, seed: int = 0) -> NoisyScorer:
    """`scorer` plus seeded Gaussian noise of standard deviation `sigma` (`NoisyScorer`)."""
    if sigma < 0:
        raise ValueError(f"noisy_scorer: sigma must be >= 0, got {sigma}")
    return NoisyScorer(scorer, float(sigma), int(seed))


def noise_sigmas(paraphrase_scores, multiples=(1.0, 2.0, 4.0)) -> dict[float, float]:
    """{multiple: sigma}: noise levels for `noisy_scorer` in units of the base scorer's spread on
    paraphrase pairs (its standard deviation), so the control is comparable across scorers' scales."""
    spread = float(np.std(np.asarray(paraphrase_scores, dtype=float)))
    if not np.isfinite(spread) or spread == 0:
        raise ValueError("noise_sigmas: the paraphrase scores have no spread to scale the noise by")
    return {float(m): float(m) * spread for m in multiples}


NOISE_CONTROL_BASE = "F1-frozen"  # frozen MaxSim: nothing learned
NOISE_MARK = "+noise"  # "F1-frozen+noise2x": the noise control at twice F1's paraphrase spread
_NOISE_NAME = re.compile(r"^(?P<base>.+)\+noise(?P<multiple>[0-9.]+)x$")


def noise_name(multiple: float, base: str = NOISE_CONTROL_BASE) -> str:
    return f"{base}{NOISE_MARK}{multiple:g}x"


def parse_noise_name(scorer: str) -> tuple[str, float] | None:
    """(base scorer, noise multiple) from "F1-frozen+noise2x"; None for any other scorer."""
    found = _NOISE_NAME.match(str(scorer))
    return (found["base"], float(found["multiple"])) if found else None


def noise_controls(scorers: dict, sets: dict, multiples=(1.0, 2.0, 4.0), seed: int = 0) -> dict:
    """{"F1-frozen+noise<m>x": noisy frozen MaxSim}: the noise control beside trained verifiers, at
    `multiples` of F1's spread on the held-out paraphrases (`noise_sigmas`); {} without F1-frozen
    among `scorers` or without the held-out set."""
    if NOISE_CONTROL_BASE not in scorers or "negatives-heldout" not in sets or not multiples:
        return {}
    positives = _as_frame(sets["negatives-heldout"][0], "positives")
    base = scorers[NOISE_CONTROL_BASE]
    sigmas = noise_sigmas(base(as_pairs(positives)), multiples)
    return {noise_name(m): noisy_scorer(base, sigma, seed=seed) for m, sigma in sigmas.items()}


def pooled_cosine_scorers(encoder, backbone: str, work_dir, seed: int, device=None, batch_size: int = 64):
    """Pooled-cosine scorers for Base (`encoder`) and for Model A / Model B where notebook 02 left
    their checkpoints (`layout.load_models`). Returns (scorers, notes on what is missing)."""
    trained, notes = load_models(work_dir, backbone, seed, ("A", "B"), device=device)
    scorers = {"cosine Base": cosine_scorer(encoder, batch_size)}
    scorers.update({f"cosine Model {variant}": cosine_scorer(model, batch_size) for variant, model in trained.items()})
    return scorers, notes


def _as_frame(data, what: str) -> pd.DataFrame:
    if hasattr(data, "columns"):
        frame = data.reset_index(drop=True)
    else:
        records = list(data)
        if records and hasattr(records[0], "__dataclass_fields__"):
            frame = pd.DataFrame([asdict(r) for r in records])
        else:
            frame = pd.DataFrame(records, columns=["sentence1", "sentence2"][: len(records[0])] if records else None)
    if not {"sentence1", "sentence2"} <= set(frame.columns):
        raise ValueError(f"{what} needs sentence1 and sentence2 columns, got {list(frame.columns)}")
    return frame


def heldout_positives(heldout, data_dir=None, split: str = "test", max_unmatched: int | None = None, seed: int = 0):
    """`paraphrase_positives` from `structural.heldout_paraphrase_pairs(split)` (test by default:
    models may train on the train splits): the corpora notebook 01 draws its held-out sentences from.

    The paraphrases are `geometry.positive_pairs` (MRPC label 1, STS-B score >= 4), as in notebook 03."""
    pairs = heldout_paraphrase_pairs(split, data_dir=data_dir)
    return paraphrase_positives(positive_pairs(pairs), heldout, max_unmatched=max_unmatched, seed=seed)


def optional_sugarcrepe(data_dir=None, max_examples: int | None = None, seed: int = 0):
    """`sugarcrepe_pairs`, or (None, None, why) when the SugarCrepe files are not here."""
    try:
        positives, near_misses = sugarcrepe_pairs(data_dir=data_dir, max_examples=max_examples, seed=seed)
    except FileNotFoundError as err:
        return None, None, f"SugarCrepe skipped: {err}"
    return positives, near_misses, f"SugarCrepe: {len(near_misses)} examples with another caption of their image"


def to_tidy(table, dataset: str, backbone: str, seed: int, verifier_variant: str = "", **constants):
    """`near_miss_table` rows as tidy results (variant = scorer; family and n kept as columns).

    `verifier_variant` (notebook 04's "<train_data>-<size>" folder) goes into the run name and a
    column of its own, so variants and seeds sit side by side in one results file; a table with a
    `dataset` column (`evaluate_sets`) keeps it and ignores `dataset`."""
    rows = [
        dict(
            variant=r.scorer,
            family=r.family,
            metric=r.metric,
            value=r.value,
            n=r.n,
            dataset=getattr(r, "dataset", dataset),
        )
        for r in table.itertuples(index=False)
    ]
    run = (
        f"{backbone}/verifiers/{verifier_variant}/seed{seed}"
        if verifier_variant
        else f"{backbone}/verifiers-seed{seed}"
    )
    return tidy(rows, run=run, backbone=backbone, seed=seed, verifier_variant=verifier_variant, **constants)


def eval_sets(
    heldout,
    data_dir=None,
    mrpc_split: str = "test",
    max_pairs: int | None = None,
    seed: int = 0,
    condaqa_unit: str = "sentence",
):
    """Notebook 04's near-miss sets: {dataset: (positives, near_misses, match_on)} and notes on the
    ones missing. "negatives-heldout": notebook 01's held-out families against MRPC and STS-B
    `mrpc_split` paraphrases; "sugarcrepe" and "condaqa": external sets nobody here wrote or tuned on."""
    sets = {
        "negatives-heldout": (
            heldout_positives(heldout, data_dir=data_dir, split=mrpc_split, max_unmatched=max_pairs, seed=seed),
            heldout,
            "sentence1",
        )
    }
    notes = []
    for name, (pos, neg, note), key in (
        ("sugarcrepe", optional_sugarcrepe(data_dir=data_dir, max_examples=max_pairs, seed=seed), "example_id"),
        (
            "condaqa",
            optional_condaqa(data_dir=data_dir, unit=condaqa_unit, max_examples=max_pairs, seed=seed),
            "passage_id",
        ),
    ):
        notes.append(note)
        if neg is not None:
            sets[name] = (pos, neg, key)
    return sets, notes


def evaluate_sets(scorers: dict, sets: dict):
    """`near_miss_table` and `self_match_table` of every scorer on every set, as one long table with a
    `dataset` column (the self-match rows are families self_match and copy_vs_near_miss)."""
    frames = []
    for dataset, (positives, near_misses, match_on) in sets.items():
        frames.append(near_miss_table(scorers, positives, near_misses, match_on=match_on).assign(dataset=dataset))
        frames.append(self_match_table(scorers, positives, near_misses).assign(dataset=dataset))
    return pd.concat(frames, ignore_index=True)


def separation_table(results, datasets=None, decimals: int = 3):
    """The result table of notebook 04: one row per scorer x training data x size (verifiers split
    into name and regime), one column per dataset x check, each "mean ± std" over seeds (the value
    alone with one seed). "seeds" counts them; where the results carry them, "parameters" and
    "examples_seen" say how large each verifier is and how much it trained on. Columns
    (`metrics.SEPARATION`): near-miss AUC over all families ("auc"), within-anchor pairwise
    accuracy beside it ("pairwise_accuracy": a sentence's own paraphrase against its own near-miss,
    with its 95% interval resampling anchors in brackets where the results carry it, each bound the
    mean over seeds),
    self-match AUC ("self_match": score(s, s) against score(s, paraphrase)), copy > near-miss
    ("copy_vs_near_miss": pairwise accuracy of score(s, s) against score(s, near-miss)), and the
    paper's Figure 3 metric, the mean near-miss score ("mean_near_miss"), with the paraphrases' mean
    beside it ("mean_paraphrase"). A value a set cannot give (no near-miss with a paraphrase of
    its own sentence) is left out, not shown as NaN."""
    # pooled cosines have no training data or size: blank, so they group with the verifiers
    results = results.assign(**{c: results[c] if c in results else "" for c in ("train_data", "size")})
    results = results.fillna({"train_data": "", "size": ""})
    if datasets is not None:
        results = results[results.dataset.isin(datasets)]
    parts = []
    for check, (family, metric) in SEPARATION.items():
        sel = results[(results.family == family) & (results.metric == metric)]
        parts.append(sel.assign(check=check))
    data = pd.concat(parts, ignore_index=True).dropna(subset=["value"])
    keys = ["variant", "train_data", "size"]
    stats = data.groupby(keys + ["dataset", "check"], sort=False).value.agg(["mean", "std", "count"]).reset_index()
    stats["cell"] = [
        f"{m:.{decimals}f}" if n < 2 else f"{m:.{decimals}f} ± {sd:.{decimals}f}"
        for m, sd, n in zip(stats["mean"], stats["std"], stats["count"], strict=True)
    ]
    bounds = results[(results.family == SEPARATION[PAIRWISE_ACCURACY][0]) & results.metric.isin(PAIRWISE_CI)]
    if not bounds.empty:
        # the pairwise cell carries its 95% interval resampling anchors, each bound averaged over seeds
        ci = bounds.groupby(keys + ["dataset", "metric"], sort=False).value.mean().unstack("metric")
        stats = stats.join(ci, on=keys + ["dataset"])
        has_ci = stats.check.eq(PAIRWISE_ACCURACY) & stats[list(PAIRWISE_CI)].notna().all(axis=1)
        stats.loc[has_ci, "cell"] = [
            f"{cell} [{low:.{decimals}f}, {high:.{decimals}f}]"
            for cell, low, high in stats.loc[has_ci, ["cell", *PAIRWISE_CI]].itertuples(index=False)
        ]
    wide = stats.pivot_table(index=keys, columns=["dataset", "check"], values="cell", aggfunc="first", sort=False)
    datasets_seen = list(dict.fromkeys(stats["dataset"]))
    wide = wide[sorted(wide.columns, key=lambda c: (datasets_seen.index(c[0]), list(SEPARATION).index(c[1])))]
    wide.insert(0, "seeds", stats.groupby(keys, sort=False)["count"].max())
    # What each verifier was (trainable parameters) and what it saw (training examples), where notebook
    # 04's tidy results carry them; blank for the pooled cosines.
    for position, col in enumerate(c for c in SIZE_COLUMNS if c in data.columns):
        largest = data.groupby(keys, sort=False)[col].max().reindex(wide.index)
        wide.insert(1 + position, col, ["" if pd.isna(v) else int(v) for v in largest])
    name_regime = [split_variant(v) for v in wide.index.get_level_values("variant")]
    wide.index = pd.MultiIndex.from_tuples(
        [(n, r, d, s) for (n, r), (_, d, s) in zip(name_regime, wide.index, strict=True)],
        names=["scorer", "regime", "train_data", "size"],
    )
    return wide


def separation_frame(results: pd.DataFrame) -> pd.DataFrame:
    """Notebook 04's separation table (`compsense.nearmiss.evaluation.separation_table`) as one flat
    table: a column per "<dataset> <check>", plus the near-miss AUC of each family of the held-out set
    ("negatives-heldout:<family> auc"), every cell "mean ± std" over verifier seeds."""
    wide = separation_table(results)
    held = results[
        (results.dataset == "negatives-heldout")
        & (results.metric == "auc")
        & ~results.family.isin(["all", "self_match", "copy_vs_near_miss"])
    ]
    if not held.empty:
        # Each family as a dataset of its own whose "all" is that family: the same cells, the same code.
        per_family = separation_table(held.assign(dataset="negatives-heldout:" + held.family, family="all"))
        counts = [c for c in ("seeds", *SIZE_COLUMNS) if c in per_family.columns.get_level_values(0)]
        wide = wide.join(per_family.drop(columns=counts, level=0), how="left")
    flat = wide.reset_index()
    flat.columns = [" ".join(str(p) for p in c if p).strip() if isinstance(c, tuple) else c for c in flat.columns]
    return flat.fillna("").astype(str)  # text cells, blank where a check does not apply (parquet needs one type)


NEARMISS_KEY = [*TIDY_KEY, "family", "verifier_variant"]
