"""The line at the top of every notebook that says which profile ran it, and with which encoder.

At the smoke profile (what CI and a first open run: a few hundred examples, a few training steps) the
numbers of anything trained only prove that the code runs, and a reader who skipped to a table must be
told before the table, not at the bottom of the notebook. What the numbers mean depends as much on the
encoder as on the profile: the random tiny BERT makes every number meaningless at any profile, while
notebooks 00 and 06 load the pretrained all-MiniLM-L6-v2 even at smoke, and their cosines are that
model's own. So a notebook that knows its backbone passes it, and the banner says what was loaded.
"""

from __future__ import annotations

import html
from collections.abc import Sequence

from compsense.core.encoders import find_backbone

SMOKE = "smoke"
RANDOM_BACKBONE = "tiny-bert"  # compsense.core.encoders.build_tiny_bert: random weights
FOR_RESULTS = "For results run `make reproduce PROFILE=local`, or read the README's tables."


def _names(backbone: str | Sequence[str] | None) -> list[str]:
    if backbone is None:
        return []
    return [str(backbone)] if isinstance(backbone, str) else [str(b) for b in backbone]


def is_random(backbone: str) -> bool:
    """Whether `backbone` is the tiny BERT with random weights (by name; its checkpoints are paths)."""
    found = find_backbone(backbone)
    return found is not None and found.name == RANDOM_BACKBONE


def describe_backbone(backbone: str) -> str:
    """A registry name with the weights it stands for ("minilm-l6 (sentence-transformers/all-MiniLM-L6-v2)"),
    or the folder a model was loaded from."""
    found = find_backbone(backbone)
    if found is None:
        return f"the model in {backbone}"
    if found.name == RANDOM_BACKBONE:
        return f"{RANDOM_BACKBONE} (a tiny BERT with random weights)"
    return f"{found.name} ({found.hub_id}, pretrained weights)"


def banner_text(profile: str, backbone: str | Sequence[str] | None = None) -> str:
    """What the banner says for `profile` and the encoder(s) the notebook loads (plain text, two or three
    sentences). Without `backbone` (notebook 01 loads no encoder) the profile alone decides."""
    profile, names = str(profile), _names(backbone)
    loaded = f", encoder {', '.join(describe_backbone(b) for b in names)}" if names else ""
    if any(is_random(b) for b in names):
        return (
            f"Profile {profile}{loaded}: its scores are those of random weights, on tiny data and after few "
            f"training steps, chosen so that the notebook runs in minutes. Its numbers only prove that the code "
            f"runs; they are not results. {FOR_RESULTS}"
        )
    if profile == SMOKE and names:
        return (
            f"Profile {profile}{loaded}: the cosines and scores of the pretrained encoder below are that "
            "model's own, on the few sentences shown. Anything trained at this profile (a model or a verifier "
            f"in {profile}'s work folder: a few steps on a few hundred examples) only proves that the code "
            f"runs; its numbers are not results. {FOR_RESULTS}"
        )
    if profile == SMOKE:
        return (
            f"Profile {profile}: tiny data and few training steps, chosen so that the notebook runs in "
            f"minutes. Its numbers only prove that the code runs; they are not results. {FOR_RESULTS}"
        )
    return (
        f"Profile {profile}{loaded}: the numbers below are this run's (params/{profile}.yaml). Its record "
        "(commit, parameters, times) is stages.json in the profile's work folder, and dvc.lock where `dvc repro` "
        "ran it; each result row names its commit."
    )


def meaningless(profile: str, backbone: str | Sequence[str] | None = None) -> bool:
    """Whether the banner tells the reader that the numbers are not results (amber): any random encoder,
    or the smoke profile without a pretrained one."""
    names = _names(backbone)
    return any(is_random(b) for b in names) or (str(profile) == SMOKE and not names)


def profile_banner(profile: str, backbone: str | Sequence[str] | None = None):
    """An HTML banner for the notebook's first output (IPython's HTML, so it renders in JupyterLab,
    in papermill's executed copy and in nbval); amber where the numbers are not results, blue
    where they are the pretrained encoder's or the run's."""
    from IPython.display import HTML

    colour = (
        "#fff4d6; border-left:4px solid #e0a000"
        if meaningless(profile, backbone)
        else "#eef4fb; border-left:4px solid #4a7ab5"
    )
    return HTML(
        f'<div class="compsense-banner" style="background:{colour}; padding:6px 10px">'
        f"{html.escape(banner_text(profile, backbone))}</div>"
    )
