"""The pipeline's stages: its notebooks in run order, their keys, which stage reads which, and the
local dataset folders each one reads.

Why a module of its own: the runner, doctor and the time estimate all need the list of stages, and
the report (which the runner writes) reads doctor and the estimate; with the list here, none of
them imports another to learn it.
"""

from __future__ import annotations

from pathlib import Path

from compsense.core.paths import repo_root

# Which stages read another stage's files (by notebook prefix). 00 and 06 (the explorer) stand alone.
DEPENDS_ON = {"01": [], "02": ["01"], "03": ["01", "02"], "04": ["01", "02"], "05": ["02", "04"]}


def notebooks() -> list[Path]:
    """The pipeline's notebooks in run order: numbered ones first, then any others."""
    found = sorted((repo_root() / "notebooks").glob("*.ipynb"))
    numbered = [p for p in found if p.stem[:2].isdigit()]
    return numbered + [p for p in found if p not in numbered]


def stage_key(notebook: Path) -> str:
    return notebook.stem[:2] if notebook.stem[:2].isdigit() else notebook.stem


# Local dataset folders each stage reads whatever its parameters say; folders a parameter names
# (train_sources, eval_datasets) and files a parameter points at (nq_path) are added to these.
STAGE_DATA = {
    "01": ["mrpc", "stsb", "sugarcrepe"],
    "02": ["mrpc", "stsb"],
    "03": ["mrpc", "stsb", "sugarcrepe", "condaqa"],
    "04": ["mrpc", "stsb", "sugarcrepe", "condaqa"],
    "05": [],
}
