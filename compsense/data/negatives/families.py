"""The registry of perturbation families: a name, what the family changes, and its rule set."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from compsense.data.negatives.binding import binding_edits
from compsense.data.negatives.negation import negation_edits
from compsense.data.negatives.numeric import numeric_edits
from compsense.data.negatives.swaps import (
    comparative_edits,
    quantifier_edits,
    spatial_edits,
    temporal_edits,
)
from compsense.data.negatives.text import Edit, Sentence


@dataclass(frozen=True)
class Family:
    name: str
    description: str
    in_paper: bool
    edits: Callable[[Sentence], list[Edit]]


FAMILIES: dict[str, Family] = {
    f.name: f
    for f in [
        Family(
            "negation", "add or remove a negation ('runs' -> 'does not run', 'never' -> 'always')", True, negation_edits
        ),
        Family(
            "binding", "exchange the two arguments of a relation or the adjectives of two nouns", True, binding_edits
        ),
        Family("spatial", "flip a direction or ordering ('left' -> 'right', 'before' -> 'after')", True, spatial_edits),
        Family("numeric", "change a number or an amount, keeping its format ('12' -> '13')", False, numeric_edits),
        Family("quantifier", "change how many ('all' -> 'some', 'at least' -> 'at most')", False, quantifier_edits),
        Family(
            "comparative",
            "flip a scale ('more' -> 'less', 'higher' -> 'lower', 'increase' -> 'decrease')",
            False,
            comparative_edits,
        ),
        Family(
            "temporal", "flip a time relation ('earlier' -> 'later', 'the first' -> 'the last')", False, temporal_edits
        ),
    ]
}
