"""Evidence that the near-misses are what they claim: yield, audited precision, artefacts, size.

- yield_table: how many sentences each family can edit at all.
- audit_precision: precision against a hand-judged audit set, regenerated from the current rules,
  so a changed rule that produces an unjudged output is noticed instead of silently trusted.
- artefact_auc: a SugarCrepe-style "blind" test. A bag-of-words classifier sees one sentence at a
  time and guesses original vs near-miss; an AUC well above 0.5 means near-misses carry a
  give-away (a word that only edits introduce) that a model could learn instead of composition.
- edit_distance_table: token edits per pair, to show the edits are minimal.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import numpy as np
import pandas as pd
from sklearn.feature_extraction.text import CountVectorizer
from sklearn.linear_model import LogisticRegression
from sklearn.metrics import roc_auc_score
from sklearn.model_selection import GroupKFold
from sklearn.pipeline import make_pipeline

from compsense.data.negatives.core import family_names, perturb, prepare
from compsense.data.negatives.pairs import with_ids


def yield_table(sentences, families=None, seed: int = 0) -> pd.DataFrame:
    """Per family: n_sentences, n_with_near_miss and yield (their share); plus an 'any' row."""
    names = family_names(families)
    texts = [s for _, s in with_ids(sentences)]
    prepare(texts, names)
    hits = {name: 0 for name in names}
    any_hit = 0
    for text in texts:
        produced = {nm.family for nm in perturb(text, names, seed=seed)}
        for name in produced:
            hits[name] += 1
        any_hit += bool(produced)
    rows = [{"family": name, "n_sentences": len(texts), "n_with_near_miss": hits[name]} for name in names]
    rows.append({"family": "any", "n_sentences": len(texts), "n_with_near_miss": any_hit})
    df = pd.DataFrame(rows)
    df["yield"] = df["n_with_near_miss"] / df["n_sentences"].clip(lower=1)
    return df


def load_audit(path: str | os.PathLike) -> list[dict]:
    """Read the audit set: one JSON object per line (id, style, sentence, near_misses)."""
    with Path(path).open(encoding="utf-8") as fh:
        return [json.loads(line) for line in fh if line.strip()]


def audit_rows(audit_records: list[dict], seed: int = 0) -> pd.DataFrame:
    """Regenerate every audited sentence's near-misses and look each up among the judgements.

    status is "accepted", "rejected", "unjudged" (generated now, never judged) or "stale"
    (judged once, no longer generated).
    """
    rows = []
    prepare([rec["sentence"] for rec in audit_records], family_names())
    for rec in audit_records:
        labels = {(nm["family"], nm["text"]): nm for nm in rec.get("near_misses", [])}
        generated = perturb(rec["sentence"], seed=seed)
        for nm in generated:
            label = labels.get((nm.family, nm.text))
            status = "unjudged" if label is None else ("accepted" if label["accepted"] else "rejected")
            rows.append(
                {
                    "id": rec["id"],
                    "family": nm.family,
                    "sentence": rec["sentence"],
                    "text": nm.text,
                    "edit": nm.edit,
                    "status": status,
                    "note": (label or {}).get("note", ""),
                }
            )
        current = {(nm.family, nm.text) for nm in generated}
        for key, label in labels.items():
            if key not in current:
                rows.append(
                    {
                        "id": rec["id"],
                        "family": key[0],
                        "sentence": rec["sentence"],
                        "text": key[1],
                        "edit": "",
                        "status": "stale",
                        "note": label.get("note", ""),
                    }
                )
    return pd.DataFrame(rows, columns=["id", "family", "sentence", "text", "edit", "status", "note"])


def audit_precision(audit_records: list[dict], seed: int = 0) -> pd.DataFrame:
    """Precision per family and overall ('all') = accepted / judged, with unjudged and stale counts."""
    rows = audit_rows(audit_records, seed)
    out = []
    for family, group in [*rows.groupby("family"), ("all", rows)]:
        counts = group["status"].value_counts()
        accepted, rejected = int(counts.get("accepted", 0)), int(counts.get("rejected", 0))
        judged = accepted + rejected
        out.append(
            {
                "family": family,
                "judged": judged,
                "accepted": accepted,
                "precision": accepted / judged if judged else float("nan"),
                "unjudged": int(counts.get("unjudged", 0)),
                "stale": int(counts.get("stale", 0)),
                "n_sentences": group.loc[group["status"] != "stale", "id"].nunique(),
            }
        )
    return pd.DataFrame(out)


def _blind_scores(texts: list[str], labels: np.ndarray, groups: list[str], seed: int) -> np.ndarray:
    """Out-of-fold P(near-miss) for each text, from a bag of unigrams and bigrams, grouped folds."""
    n_groups = len(set(groups))
    folds = GroupKFold(n_splits=min(5, n_groups), shuffle=True, random_state=seed)
    scores = np.zeros(len(texts))
    for train, test in folds.split(texts, labels, groups):
        model = make_pipeline(
            CountVectorizer(ngram_range=(1, 2), token_pattern=r"(?u)\b\w+\b|n't", min_df=2, binary=True),
            LogisticRegression(solver="liblinear"),
        )
        model.fit([texts[k] for k in train], labels[train])
        scores[test] = model.predict_proba([texts[k] for k in test])[:, 1]
    return scores


def artefact_auc(pairs_df: pd.DataFrame, seed: int = 0, min_sources: int = 10) -> pd.DataFrame:
    """ROC-AUC of a blind bag-of-words original-vs-near-miss classifier, per family and pooled.

    0.5 means a near-miss cannot be told from an original without its partner; families with
    fewer than `min_sources` source sentences get NaN.
    """
    out = []
    for family, group in [*pairs_df.groupby("family"), ("all", pairs_df)]:
        originals = group.drop_duplicates("source_id")
        texts = originals["sentence1"].tolist() + group["sentence2"].tolist()
        labels = np.array([0] * len(originals) + [1] * len(group))
        groups = originals["source_id"].tolist() + group["source_id"].tolist()
        n_sources = len(originals)
        auc = float("nan")
        if n_sources >= min_sources:
            auc = float(roc_auc_score(labels, _blind_scores(texts, labels, groups, seed)))
        out.append({"family": family, "n_sources": n_sources, "n_pairs": len(group), "auc": auc})
    return pd.DataFrame(out)


def token_edit_distance(a: str, b: str) -> int:
    """Levenshtein distance between the whitespace tokens of two strings."""
    x, y = a.split(), b.split()
    previous = list(range(len(y) + 1))
    for i, tx in enumerate(x, 1):
        current = [i]
        for j, ty in enumerate(y, 1):
            current.append(min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + (tx != ty)))
        previous = current
    return previous[-1]


def edit_distance_table(pairs_df: pd.DataFrame) -> pd.DataFrame:
    """One row per pair: source_id, family, n_tokens of the original, token edit_distance."""
    return pd.DataFrame(
        {
            "source_id": pairs_df["source_id"].to_numpy(),
            "family": pairs_df["family"].to_numpy(),
            "n_tokens": [len(s.split()) for s in pairs_df["sentence1"]],
            "edit_distance": [token_edit_distance(a, b) for a, b in zip(pairs_df["sentence1"], pairs_df["sentence2"])],
        }
    )
