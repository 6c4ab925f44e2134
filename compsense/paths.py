"""Where things live: the repo, local (non-redistributable) datasets, generated data, runs, figures.

One setting says where local datasets live: the environment variable COMPSENSE_DATA_DIR, or the
`data_dir` argument of any loader. By default the first `shared/data` found beside or above the
repo is used (the layout of this project's machines). Datasets are read in place, never copied.
"""
from __future__ import annotations

import os
from pathlib import Path

ENV_DATA_DIR = "COMPSENSE_DATA_DIR"


def repo_root() -> Path:
    """The checkout root (the folder that holds pyproject.toml), or the cwd for an installed copy."""
    here = Path(__file__).resolve().parent.parent
    if (here / "pyproject.toml").exists():
        return here
    return Path.cwd()


def local_data_dir(data_dir: str | os.PathLike | None = None, required: bool = True) -> Path | None:
    """The folder holding local datasets (mrpc/, stsb/, scifact/, sugarcrepe/, ...)."""
    if data_dir is None:
        data_dir = os.environ.get(ENV_DATA_DIR) or None
    if data_dir is not None:
        path = Path(data_dir).expanduser()
        if not path.is_dir():
            raise FileNotFoundError(
                f"local data dir {path} does not exist; set {ENV_DATA_DIR} (or pass data_dir=) "
                "to the folder that holds mrpc/, stsb/, scifact/, sugarcrepe/"
            )
        return path.resolve()
    for base in [repo_root(), *repo_root().parents, Path.cwd(), *Path.cwd().parents]:
        for candidate in (base / "shared" / "data", base / "../shared/data"):
            if candidate.is_dir():
                return candidate.resolve()
    if required:
        raise FileNotFoundError(
            "no local data dir found: set the environment variable "
            f"{ENV_DATA_DIR}=/path/to/data (the folder with mrpc/, stsb/, scifact/, sugarcrepe/), "
            "or pass data_dir= to the loader"
        )
    return None


def generated_dir() -> Path:
    """Bulk files the notebooks generate (git-ignored): pairs, triplets, caches."""
    return _ensure(repo_root() / "data" / "generated")


def runs_dir() -> Path:
    """Checkpoints, tidy result tables and executed notebooks (git-ignored)."""
    return _ensure(Path(os.environ.get("COMPSENSE_RUNS_DIR", repo_root() / "runs")))


def figures_dir() -> Path:
    return _ensure(Path(os.environ.get("COMPSENSE_FIGURES_DIR", repo_root() / "figures")))


def _ensure(path: Path) -> Path:
    path.mkdir(parents=True, exist_ok=True)
    return path


def resolve(path: str | os.PathLike) -> Path:
    """A path from a notebook parameter: relative paths are taken from the repo root, not the cwd
    (papermill and JupyterLab run notebooks from notebooks/)."""
    path = Path(path).expanduser()
    return path if path.is_absolute() else repo_root() / path


def workspace(work_dir: str | os.PathLike, *parts: str) -> Path:
    """A folder under the profile's work_dir (e.g. runs/smoke): where stages pass files to each other.

    Layout: negatives/ (pairs, triplets), models/<backbone>/<variant>-seed<seed>/, verifiers/,
    results/ (tidy tables), cache/ (token embeddings).
    """
    return _ensure(resolve(work_dir).joinpath(*parts))
