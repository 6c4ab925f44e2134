"""Structural near-misses: minimal edits that change what a sentence means.

Ralev et al. train Model B with identity triplets (anchor = positive = a sentence, negative = the
sentence after one compositional edit). The paper's three families are `negation`, `binding`
(role or modifier swap) and `spatial`; this package adds `numeric`, `quantifier`, `comparative`
and `temporal`, which real queries hinge on just as often. Everything is rule-based and offline.

    from compsense.data.negatives import perturb, make_pairs
    perturb("The company hired the consultant.")
    # [NearMiss(text='The company did not hire the consultant.', family='negation', ...),
    #  NearMiss(text='The consultant hired the company.', family='binding', ...)]

Design choices, and the measurements behind them (run `pytest tests/test_negatives.py -s`):
- Precision over yield. Each edit must be grammatical, minimal and meaning-changing; a rule that
  could misparse ("hired by", "the plans", "he left the company", "fell ill") is guarded or left
  out. Precision is checked against a hand-judged audit set (tests/fixtures/negatives_audit.jsonl),
  regenerated on every test run so that a changed rule cannot slip in unjudged outputs.
- Edits are character-span replacements on the original text, so spacing, tokenisation (MRPC's
  "doesn 't"), quotes and trailing punctuation survive, and a sentence-initial capital stays.
- Artefacts (a SugarCrepe-style blind bag-of-words probe, `artefact_auc`). With negation only
  added, "not" sat in near-misses and rarely in originals: AUC 0.95 on MRPC. What changed:
  (1) negation is removed as well as added, and perturb() prefers removal when a sentence has one;
  (2) each addition exists in full and contracted form, written in the text's own style
  ("doesn't" / MRPC's "doesn 't" / Penn Treebank's "does n't"), since originals use both;
  (3) every edit carries a marker naming the words it trades ("did not>", ">did not", "more>less"),
  and `make_pairs(balance=True)` keeps each marker exactly as often as its reverse within a
  family, choosing among a sentence's candidate edits so that rare directions are not wasted;
  one-way markers ("yesterday>today") are dropped. Balanced, every family scores 0.55-0.62 on
  MRPC (pooled 0.61), at the cost of about a third of the pairs. Binding swaps keep the words
  and need no balancing.
- The choice among a family's candidate edits uses random.Random(seed + a blake2b hash of the
  family and sentence): deterministic across processes, unlike Python's salted str hash.
"""

from __future__ import annotations

from compsense.data.negatives.core import NearMiss, candidates, family_names, perturb
from compsense.data.negatives.families import FAMILIES, Family
from compsense.data.negatives.pairs import make_pairs, make_triplets, read_pairs, write_pairs
from compsense.data.negatives.quality import (
    artefact_auc,
    audit_precision,
    edit_distance_table,
    load_audit,
    yield_table,
)

__all__ = [
    "FAMILIES",
    "Family",
    "NearMiss",
    "perturb",
    "candidates",
    "family_names",
    "make_pairs",
    "make_triplets",
    "write_pairs",
    "read_pairs",
    "yield_table",
    "audit_precision",
    "artefact_auc",
    "edit_distance_table",
    "load_audit",
]
