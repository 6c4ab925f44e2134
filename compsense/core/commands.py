"""The commands a message names, in one module outside every stage's content key.

Why: an error's fix names the command that re-runs a stage ("dvc repro --force --single-item
PROFILE-04"). When the tooling changes (the runner gave way to DVC), only the text changes and no row a
stage computes. Written inside a science module, that text is in the content key of every stage whose
notebook reaches the module, so DVC would re-run those stages, or a `code_note` would have to argue that
nothing changed. Here it is operational, as `core.paths` and `core.banner` are
(`compsense.pipeline.runner.OPERATIONAL`), and tests/test_architecture.py keeps command texts out of the
modules a key reaches.
"""

from __future__ import annotations


def rerun_stage(key: str, profile: str = "PROFILE") -> str:
    """Run one stage again whatever DVC recorded (its outputs are deleted first, kept in DVC's cache)."""
    return f"dvc repro --force --single-item {profile}-{key}"


def run_stage(key: str, profile: str | None = None, setting: str | None = None) -> str:
    """Run one stage (and what it needs that changed), optionally as an experiment with one value set."""
    where = f" PROFILE={profile}" if profile else ""
    return f"make reproduce{where} ONLY={key}" + (f" SET={setting}" if setting else "")
