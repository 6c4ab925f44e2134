"""The verifier grids' settings as three objects, so a notebook cell passes one thing for each idea:

    VerifierTraining  how one verifier learns (budget, batch, learning rates, loss shape): what a
                      finished verifier's settings record, so a change retrains it
    VerifierGrid      what notebook 04 trains and scores (verifiers, regimes, sizes, seeds, recipe)
    Compute           how scoring and training run (batch of texts, device, progress): never what
                      they compute, so it is not part of any result's settings

Why dataclasses (as `compsense.retrieval.training.TrainConfig`): `train_verifier`, `fit_grid` and
`run_study` took 13-19 keyword arguments that were passed down three levels unchanged.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, fields, replace
from typing import Sequence

from compsense.verifiers.architectures import NAMES

HARD_NEGATIVES = ("all", "own")
RECIPES = ("equal", "authors")
REGIMES = ("frozen", "end2end")


@dataclass(frozen=True)
class VerifierTraining:
    """How one verifier trains (`training.train_verifier` says what each setting does).

    budget_examples  triplets seen, identical for every verifier of a grid (recipe "equal")
    batch_size       triplets a step
    lr, weight_decay                     AdamW on the verifier
    encoder_lr, encoder_weight_decay     AdamW on the encoder, end-to-end only (decay None: weight_decay)
    temperature      the contrastive loss's softmax temperature
    warmup_ratio     share of steps of linear warm-up, then linear decay
    max_grad_norm    gradient clipping per model (0: none)
    in_batch_negatives  other in-batch candidates per anchor besides its hard negative (None: all)
    hard_negatives   "all": other anchors' hard negatives are candidates too; "own": the authors' B x (B + 1)
                     (their train_and_eval_verifiers_experiment.py, compute_mnrl_loss)
    """

    budget_examples: int = 1024
    batch_size: int = 32
    lr: float = 1e-3
    encoder_lr: float = 1e-5
    temperature: float = 0.1
    weight_decay: float = 0.0
    encoder_weight_decay: float | None = None
    warmup_ratio: float = 0.1
    max_grad_norm: float = 1.0
    in_batch_negatives: int | None = 4
    hard_negatives: str = "all"

    def __post_init__(self):
        if int(self.budget_examples) < 1 or int(self.batch_size) < 1:
            raise ValueError(
                f"budget_examples and batch_size must be >= 1, got {self.budget_examples}, {self.batch_size}"
            )
        if self.hard_negatives not in HARD_NEGATIVES:
            raise ValueError(f"hard_negatives must be one of {HARD_NEGATIVES}, got {self.hard_negatives!r}")
        if self.in_batch_negatives is not None and self.in_batch_negatives < 0:
            raise ValueError(f"in_batch_negatives must be >= 0 or None (all), got {self.in_batch_negatives}")

    def replace(self, **changes) -> "VerifierTraining":
        """A copy with `changes` (e.g. the authors' recipe for one verifier: `recipe.authors_recipe`)."""
        unknown = sorted(set(changes) - {f.name for f in fields(self)})
        if unknown:
            raise TypeError(f"VerifierTraining has no settings {unknown}; it has {[f.name for f in fields(self)]}")
        return replace(self, **changes)

    @property
    def encoder_decay(self) -> float:
        """The encoder's weight decay: its own, else the verifier's."""
        return self.weight_decay if self.encoder_weight_decay is None else self.encoder_weight_decay

    def settings(self) -> dict:
        """What a finished verifier's settings record (JSON-ready)."""
        return asdict(self)

    @classmethod
    def same_settings(cls, stored: dict, current: dict) -> bool:
        """Whether settings a finished verifier recorded are `current`'s. Settings written before
        every training setting was recorded lack those the run left at their default (it passed
        only what it changed), so a missing one reads as its default, which is what that run used."""
        defaults = cls().settings()
        return {**{k: defaults[k] for k in current if k in defaults}, **stored} == current


@dataclass(frozen=True)
class VerifierGrid:
    """What notebook 04 trains and scores. `run_study` loops over `seeds` and `sizes`
    (`study.size_plan` narrows each size by `size_scope`); `fit_grid` trains `verifiers` x `regimes`
    at one seed and size.

    recipe           "equal": every verifier trains on the same `VerifierTraining`; "authors": the
                     authors' per-verifier budget, learning rates, decay and loss (`recipe.authors_recipe`)
    include_special  whether [CLS]/[SEP] rows and columns are part of the similarity map
    f2_learnable     train F2's lam and tau (the authors fix both at 0.1)
    noise_multiples  the noise control scored beside a frozen F1 (multiples of its paraphrase spread)
    folder_suffix    added to each variant's folder, so runs that differ in a setting the folder
                     name does not carry (the budget curve's budgets) never share a folder
    """

    verifiers: Sequence[str] = NAMES
    regimes: Sequence[str] = REGIMES
    sizes: Sequence[str] = ("small",)
    size_scope: dict | None = None
    seeds: Sequence[int] = (42,)
    recipe: str = "equal"
    include_special: bool = False
    f2_learnable: bool = False
    noise_multiples: Sequence[float] = (1.0, 2.0, 4.0)
    folder_suffix: str = ""

    def __post_init__(self):
        if self.recipe not in RECIPES:
            raise ValueError(f"recipe must be one of {RECIPES}, got {self.recipe!r}")
        bad = sorted(set(self.regimes) - set(REGIMES))
        if bad:
            raise ValueError(f"regimes {bad} unknown: use {list(REGIMES)}")

    def replace(self, **changes) -> "VerifierGrid":
        return replace(self, **changes)


@dataclass(frozen=True)
class Compute:
    """How scoring runs, never what it computes: texts per encoder batch, candidates per verifier
    batch, the device, the dtype of the cached corpus token embeddings, progress bars."""

    batch_size: int = 64
    candidate_batch: int = 256
    device: object = None
    dtype: str = "float16"
    show_progress: bool = True
