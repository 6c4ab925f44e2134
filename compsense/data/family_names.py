"""The near-miss families by name only: which exist, which the paper uses, and how parameters select
them. A leaf module (it imports nothing from compsense), so that code which only names families, such
as the pooled geometry that notebook 00 draws, does not depend on the generator's rules: a stage's
content key (`compsense.pipeline.runner.code_dependencies`) follows imports, and importing
`compsense.data.negatives.families` reaches every rule module. `families.FAMILIES` holds the rules
and is checked against these names when it is imported.
"""

from __future__ import annotations

# Every family the generator has, in its order (compsense.data.negatives.families.FAMILIES).
FAMILY_NAMES: tuple[str, ...] = ("negation", "binding", "spatial", "numeric", "quantifier", "comparative", "temporal")

# The families Ralev et al. train Model B on and report per family, in their order (their
# `cannot_negation`, `binding_negation` and `spatial` categories, evaluate_embeddings.py); every module
# that needs "the paper's families" imports this one list.
PAPER_FAMILIES: tuple[str, ...] = ("negation", "binding", "spatial")


def resolve_families(families) -> tuple[str, ...] | None:
    """A family selection as parameters give it: "paper" -> PAPER_FAMILIES, None -> None (every
    family), a name or a list -> a tuple of known names. Profiles and notebooks say "paper" rather
    than listing the three, so the list lives here only."""
    if families is None:
        return None
    if isinstance(families, str):
        families = PAPER_FAMILIES if families == "paper" else (families,)
    unknown = [f for f in families if f not in FAMILY_NAMES]
    if unknown:
        raise ValueError(f"unknown near-miss families {unknown}; choose from {list(FAMILY_NAMES)} or 'paper'")
    return tuple(families)
