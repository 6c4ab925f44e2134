"""The registry of perturbation families: a name, what the family changes, and its rule set.

The names alone (`FAMILY_NAMES`, `PAPER_FAMILIES`, `resolve_families`) live in the leaf module
`compsense.data.family_names`, so that code which only names families does not reach these rules;
they are re-exported here and checked against `FAMILIES` on import.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from compsense.data.family_names import FAMILY_NAMES, PAPER_FAMILIES, resolve_families
from compsense.data.negatives.binding import binding_edits
from compsense.data.negatives.negation import negation_edits
from compsense.data.negatives.numeric import numeric_edits
from compsense.data.negatives.ranges import amount_range_swaps
from compsense.data.negatives.slots import value_swaps
from compsense.data.negatives.spatial import spatial_edits
from compsense.data.negatives.swaps import comparative_edits, quantifier_edits, temporal_edits
from compsense.data.negatives.text import Edit, Sentence


@dataclass(frozen=True)
class Family:
    name: str
    description: str
    in_paper: bool
    edits: Callable[[Sentence], list[Edit]]
    parsed: bool = False  # its rules read spaCy's dependency parse (parse.py)


def _numeric_edits(sent: Sentence) -> list[Edit]:
    """One number changed, or two values (amounts, dates, a range's ends) trading places."""
    return numeric_edits(sent) + value_swaps(sent) + amount_range_swaps(sent)


FAMILIES: dict[str, Family] = {
    f.name: f
    for f in [
        Family(
            "negation", "add or remove a negation ('runs' -> 'does not run', 'never' -> 'always')", True, negation_edits
        ),
        Family(
            "binding",
            "exchange the two arguments of a relation (subject and object, passive agent and patient, the"
            " sides of a comparison) or the adjectives of two nouns; never numbers or dates",
            True,
            binding_edits,
            parsed=True,
        ),
        Family(
            "spatial",
            "flip or swap a directional or locative relation ('left' -> 'right', 'under the bench' -> 'on"
            " the bench', 'Rome is closer than Paris' -> 'Paris is closer than Rome'); never a time or a trend",
            True,
            spatial_edits,
            parsed=True,
        ),
        Family(
            "numeric",
            "change a number or an amount, keeping its format ('12' -> '13'), or swap two numbers, dates or"
            " amounts ('from 5 % to 7 %' -> 'from 7 % to 5 %')",
            False,
            _numeric_edits,
        ),
        Family("quantifier", "change how many ('all' -> 'some', 'at least' -> 'at most')", False, quantifier_edits),
        Family(
            "comparative",
            "flip a scale or a trend ('more' -> 'less', 'higher' -> 'lower', 'rose' -> 'fell', 'imports' ->"
            " 'exports', 'up 5 %' -> 'down 5 %')",
            False,
            comparative_edits,
        ),
        Family(
            "temporal",
            "flip a time relation ('before' -> 'after', 'earlier' -> 'later', 'the first' -> 'the last')",
            False,
            temporal_edits,
        ),
    ]
}

_names = tuple(FAMILIES)
_paper = tuple(name for name, f in FAMILIES.items() if f.in_paper)
if _names != FAMILY_NAMES or _paper != PAPER_FAMILIES:  # one list of names, kept true to the rules
    raise ImportError(
        f"compsense.data.family_names ({FAMILY_NAMES}, paper {PAPER_FAMILIES}) disagrees with the rules' "
        f"FAMILIES ({_names}, paper {_paper}): edit both together"
    )

__all__ = ["FAMILIES", "FAMILY_NAMES", "PAPER_FAMILIES", "Family", "resolve_families"]
