"""The pipeline's stages: its notebooks in run order, their keys, which stage reads which, and the
local dataset folders each one reads (`data_needs`: what the data check, compsense.data.release, checks).

Why a module of its own: the runner, doctor and the time estimate all need the list of stages, and
the report (which the runner writes) reads the estimate; with the list here, none of them imports
another to learn it. The folders under the work_dir each stage writes (`STAGE_WRITES`) and the reading
of a run's record (`read_summary`) live here for the same reason.
"""

from __future__ import annotations

from pathlib import Path

from compsense.core.layout import CACHE, MODELS, NEGATIVES, RESULTS, VERIFIERS
from compsense.core.paths import repo_root
from compsense.core.storage import CorruptFile, read_json

# Which stages read another stage's files (by notebook prefix). 00 and 06 (the explorer) stand alone.
DEPENDS_ON = {"01": [], "02": ["01"], "03": ["01", "02"], "04": ["01", "02"], "05": ["02", "04"]}


def notebooks() -> list[Path]:
    """The pipeline's notebooks in run order: numbered ones first, then any others."""
    found = sorted((repo_root() / "notebooks").glob("*.ipynb"))
    numbered = [p for p in found if p.stem[:2].isdigit()]
    return numbered + [p for p in found if p not in numbered]


def stage_key(notebook: Path) -> str:
    return notebook.stem[:2] if notebook.stem[:2].isdigit() else notebook.stem


def shown(path) -> str:
    """`path` as a reader of the report or the estimate knows it: relative to the repository when inside it."""
    path = Path(path)
    return str(path.relative_to(repo_root())) if path.is_relative_to(repo_root()) else str(path)


# Local dataset folders each stage reads whatever its parameters say; folders a parameter names
# (train_sources, eval_datasets) and files a parameter points at (nq_path) are added to these.
STAGE_DATA = {
    "01": ["mrpc", "stsb", "sugarcrepe"],
    "02": ["mrpc", "stsb"],
    "03": ["mrpc", "stsb", "sugarcrepe", "condaqa"],
    "04": ["mrpc", "stsb", "sugarcrepe", "condaqa"],
    "05": [],
}


def data_needs(stage_params: dict) -> tuple[dict[str, set[str]], object, object]:
    """({dataset: stages}, data_dir, nq_path) from {notebook: parameters}: the local dataset folders each
    stage reads (STAGE_DATA, plus the ones its train_sources and eval_datasets name; NanoBEIR sets count
    as "nanobeir"), and the profile's data_dir and nq_path settings: what `compsense.data.release.data_checks`
    checks."""
    needs: dict[str, set[str]] = {}
    data_dir, nq_path = None, None
    for nb, params in stage_params.items():
        data_dir = params.get("data_dir", data_dir)
        nq_path = params.get("nq_path") or nq_path
        names = set(STAGE_DATA.get(stage_key(nb), []))
        for key in ("train_sources", "eval_datasets"):
            names |= set(params.get(key) or [])
        for name in map(str, names):
            needs.setdefault("nanobeir" if name.lower().startswith("nano") else name, set()).add(stage_key(nb))
    return needs, data_dir, nq_path


# The folders under the work_dir each stage writes into (compsense.core.layout's names): where the
# runner's up-front check tries a write, in each and in every folder already below it, so a read-only
# one stops a run before it starts. A stage not listed here: every one of them.
STAGE_WRITES = {
    "00": (),
    "01": (NEGATIVES,),  # pairs, triplets, purity
    "02": (MODELS, RESULTS),  # trainings (their model cards too, when reused), retrieval and near-miss tables
    "03": (RESULTS,),
    "04": (VERIFIERS, RESULTS, CACHE),  # verifiers, their tables, token-embedding caches
    "05": (RESULTS, CACHE),  # rerank tables, the corpus embedding cache
    "06": (),
}

# ---------------------------------------------------------------------------------------------
# The pipeline's records: stages.json (each stage's last success, per profile) and the report's
# summary.json (runs/<profile>/report/, written by the report stage; the retired runner left one in each
# run folder). How to recover from a damaged one, said once here.

STATE_RECOVER = (
    "delete it (or restore a copy), then `dvc repro --force` the profile's stages: each records itself "
    "again, and stages that keep their own checkpoints or models (training) reuse them"
)

SUMMARY = "summary.json"
SUMMARY_RECOVER = (
    "it is the record the report stage writes when a run ends (no notebook writes it): restore a copy, "
    "or run `make reproduce` again (stages that are unchanged are skipped) and use the new record"
)


def read_summary(path) -> dict:
    """A run's summary.json; a damaged one raises CorruptFile naming it and SUMMARY_RECOVER (the
    default fix, "re-run the notebook that writes it", does not apply: the runner writes it)."""
    record = read_json(path, recover=SUMMARY_RECOVER)
    if not isinstance(record, dict):
        raise CorruptFile(f"{path}: not a run record (expected a mapping). Fix: {SUMMARY_RECOVER}")
    return record
