"""The line at the top of every notebook that says which profile ran it.

At the smoke profile (what CI and a first open run: a random tiny BERT, a few hundred examples, a
few training steps) the numbers only prove that the code runs, and a reader who skipped to a table
must be told before the table, not at the bottom of the notebook.
"""

from __future__ import annotations

import html

SMOKE = "smoke"


def banner_text(profile: str) -> str:
    """What the banner says for `profile` (plain text, one or two sentences)."""
    profile = str(profile)
    if profile == SMOKE:
        return (
            f"Profile {profile}: tiny data and few training steps, chosen so that the notebook runs in "
            "minutes. Its numbers only prove that the code runs; they are not results. For results run "
            "`make reproduce PROFILE=local`, or read the README's tables."
        )
    return (
        f"Profile {profile}: the numbers below are this run's (params/{profile}.yaml); its record "
        "(commit, parameters, seeds, times) is in the run folder's summary.json."
    )


def profile_banner(profile: str):
    """An HTML banner for the notebook's first output (IPython's HTML, so it renders in JupyterLab,
    in papermill's executed copy and in nbval); amber at smoke."""
    from IPython.display import HTML

    colour = (
        "#fff4d6; border-left:4px solid #e0a000" if str(profile) == SMOKE else "#eef4fb; border-left:4px solid #4a7ab5"
    )
    return HTML(
        f'<div class="compsense-banner" style="background:{colour}; padding:6px 10px">'
        f"{html.escape(banner_text(profile))}</div>"
    )
