"""Where things live: the repo, local (non-redistributable) datasets, the project's own data, and the
folders under a profile's work_dir (runs/<profile>) through which stages pass files; and where a run
may write (never into the committed figures, the datasets or the source; only where a write succeeds).

One setting says where local datasets live: the `data_dir` argument of any loader (a profile's
`data_dir`; relative paths are taken from the repo root), else the environment variable
COMPSENSE_DATA_DIR. By default the first `shared/data` found beside or above the repo is used (the
layout of this project's machines). Datasets are read in place, never copied. The smoke profile
reads the project's own data/smoke; data/MANIFEST.json lists the external datasets of the others.
"""

from __future__ import annotations

import os
import subprocess
import tempfile
from pathlib import Path
from typing import Sequence

ENV_DATA_DIR = "COMPSENSE_DATA_DIR"
ENV_COMMIT = "COMPSENSE_COMMIT"  # the runner's start commit, passed to the notebook kernels it starts
SMOKE_DATA_DIR = "data/smoke"  # relative to the repo root
MANIFEST = "data/MANIFEST.json"


def repo_root() -> Path:
    """The checkout root (the folder that holds pyproject.toml), or the cwd for an installed copy."""
    here = Path(__file__).resolve().parents[2]
    if (here / "pyproject.toml").exists():
        return here
    return Path.cwd()


def local_data_dir(data_dir: str | os.PathLike | None = None, required: bool = True) -> Path | None:
    """The folder holding local datasets (mrpc/, stsb/, scifact/, sugarcrepe/, ...)."""
    if data_dir is None:
        data_dir = os.environ.get(ENV_DATA_DIR) or None
    if data_dir is not None:
        path = _data_path(data_dir)
        if not path.is_dir():
            raise FileNotFoundError(
                f"local data dir {path} does not exist; set {ENV_DATA_DIR} (or pass data_dir=) "
                f"to the folder that holds mrpc/, stsb/, scifact/, sugarcrepe/ ({MANIFEST} lists each "
                "dataset and where to get it)"
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
            f"or pass data_dir= to the loader; {MANIFEST} lists each dataset and where to get it"
        )
    return None


def _data_path(data_dir: str | os.PathLike) -> Path:
    """A data folder setting as a path. A relative one is taken from the repo root, as every notebook
    parameter is (notebooks run with notebooks/ as their cwd), unless only the cwd has it (a path
    typed on the command line)."""
    path = Path(data_dir).expanduser()
    if path.is_absolute():
        return path
    from_root, from_cwd = repo_root() / path, Path.cwd() / path
    return from_cwd if from_cwd.is_dir() and not from_root.is_dir() else from_root


def smoke_data_dir() -> Path:
    """The project's own small datasets (data/smoke, written by scripts/make_smoke_data.py): the smoke
    profile's data folder."""
    return repo_root() / SMOKE_DATA_DIR


def manifest_path() -> Path:
    """data/MANIFEST.json: every external dataset the local and paper profiles read, with its files,
    counts, sha256, licence and where to get it (checked by `python -m compsense doctor`)."""
    return repo_root() / MANIFEST


def _ensure(path: Path) -> Path:
    path.mkdir(parents=True, exist_ok=True)
    return path


def resolve(path: str | os.PathLike) -> Path:
    """A path from a notebook parameter: relative paths are taken from the repo root, not the cwd
    (papermill and JupyterLab run notebooks from notebooks/)."""
    path = Path(path).expanduser()
    return path if path.is_absolute() else repo_root() / path


def check_can_write(folder: str | os.PathLike, what: str, fix: str) -> Path:
    """`folder`, once a file could be created in it (or, when it does not exist yet, in the nearest
    folder above it, where it would be made); else PermissionError naming `what`, the folder and
    `fix`. Asked before a long job starts, so a read-only folder or disk stops it at once and not at its
    first write. A real write is tried (an unnamed temporary file: nothing is left, nothing is
    created), not os.access: root passes every mode check, yet a read-only mount refuses even root."""
    path = resolve(folder)
    probe = next((p for p in (path, *path.parents) if p.exists()), path)
    try:
        with tempfile.TemporaryFile(dir=probe):
            pass
    except OSError as err:  # EACCES, EPERM, EROFS (read-only file system), ENOSPC ...
        raise PermissionError(f"{what}: cannot write in {path} ({err.strerror or err}). Fix: {fix}") from None
    return path


# Where a run may write. The repository's folders a run never writes into: what `make figures` publishes
# (COMMITTED_FIGURES), the datasets and the source; the local data folder is refused too.
COMMITTED_FIGURES = "figures"  # the repository's published figures: written by `make figures` only
PROTECTED = (COMMITTED_FIGURES, "data", "compsense", "notebooks", "tests", "params", "benchmarks", "docs", ".git")
MAKE_WRITABLE = "make it writable (chmod -R u+w, or a disk not mounted read-only)"  # a fix for check_can_write


def check_not_protected(
    path: str | os.PathLike, what: str, fix: str, also: Sequence[str | os.PathLike | None] = ()
) -> Path:
    """`path` with symlinks followed, unless it is the repository root or inside a protected folder of it
    (`PROTECTED`), inside the local data folder, or inside a folder of `also` (the data folder a
    profile or `--data-dir` names, which the environment's default may not be; None entries are
    skipped), so a link to one of them is refused too; else PermissionError naming `what` and `fix`,
    as `check_can_write` words it."""
    real = Path(os.path.realpath(resolve(path)))
    root = Path(os.path.realpath(repo_root()))
    places = [root / name for name in PROTECTED]
    try:
        data = local_data_dir(None, required=False)
    except FileNotFoundError:  # $COMPSENSE_DATA_DIR names no folder: nothing there to protect
        data = None
    if data is not None:
        places.append(Path(os.path.realpath(data)))
    # a data folder setting is read as the loaders read it (relative: from the repo root, unless only
    # the cwd has it), so the folder protected is the one the datasets come from
    places += [Path(os.path.realpath(_data_path(extra))) for extra in also if extra is not None and str(extra)]
    hit = next((p for p in places if real == p or real.is_relative_to(p)), root if real == root else None)
    if hit is not None:
        inside = "is the repository root" if hit == root else f"is inside {hit}"
        raise PermissionError(
            f"{what}: {real} {inside}, which a run must not write into (committed figures, datasets or "
            f"source). Fix: {fix}."
        )
    return real


def workspace(work_dir: str | os.PathLike, *parts: str) -> Path:
    """A folder under the profile's work_dir (e.g. runs/smoke): where stages pass files to each other.

    Layout: negatives/ (pairs, triplets), models/<backbone>/<variant>-seed<seed>/, verifiers/,
    results/ (tidy tables), cache/ (token embeddings).
    """
    return _ensure(resolve(work_dir).joinpath(*parts))


ENV_DVC_EXPERIMENT = "DVC_EXP_NAME"  # set by `dvc exp run` for the stages it runs
DVC_LOCK = "dvc.lock"  # DVC's record of the stages it ran, rewritten by `dvc repro` between stages


def git_commit() -> str:
    """HEAD's short hash, with "-dirty" when tracked files differ from it, what DVC writes aside (dvc.lock;
    in an experiment the params files: `_dvc_written`): `dvc repro`
    rewrites the lock after each stage, so with the lock counted every stage after the first of a clean
    checkout was stamped "-dirty" (03 and 04 at ea1c3af). Outside git (a copied working tree, as on a lent
    GPU machine) the commit the copy was made from, when the sender names it in COMPSENSE_COMMIT; else
    "unknown"."""
    copied = os.environ.get(ENV_COMMIT) or "unknown"
    try:
        out = subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"], cwd=repo_root(), capture_output=True, text=True, timeout=10
        )
        dirty = subprocess.run(
            ["git", "status", "--porcelain", "--untracked-files=no", "--", ".", *_dvc_written()],
            cwd=repo_root(),
            capture_output=True,
            text=True,
            timeout=10,
        ).stdout.strip()
        return out.stdout.strip() + ("-dirty" if dirty else "") if out.returncode == 0 else copied
    except (OSError, subprocess.SubprocessError):
        return copied


def _dvc_written() -> list[str]:
    """git pathspecs of the tracked files DVC itself rewrites while it runs stages: dvc.lock always, and in
    a `dvc exp run` (DVC names the experiment to its stages in DVC_EXP_NAME) the params files, into which
    its `-S` writes a piece's values before the first stage; the run records those values (the report's
    summary.json), so they are not code, and a piece's stages were stamped "-dirty" with them counted."""
    written = [f":(exclude){DVC_LOCK}"]
    return written + [":(exclude)params/*.yaml"] if os.environ.get(ENV_DVC_EXPERIMENT) else written


def code_commit() -> str:
    """The commit of the code computing a result now, as result rows record it (`storage.COMMIT`): the
    runner's start commit, which it passes to each stage's kernel in COMPSENSE_COMMIT (a commit made
    while a run goes on is not the code its stages run), else `git_commit()` (a notebook or
    `compsense evaluate` run by hand)."""
    return os.environ.get(ENV_COMMIT) or git_commit()
