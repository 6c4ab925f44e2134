"""One notebook of one profile, run as a DVC stage: `python -m compsense stage 02 --profile local`.

DVC (dvc.yaml, written by compsense.pipeline.dvcfile) decides whether a stage runs: it hashes the
notebook, the compsense modules it imports, its section of params/<profile>.yaml, the data it reads and
its upstream stages' outputs, skips a stage whose inputs are unchanged, holds one run at a time in a
repository, and caches what a stage wrote so that a second machine can pull it. This command is what
DVC runs: the profile's values are checked against the notebooks' schema, the folders against the one
guard (`runner.check_run_folders`), the data against data/MANIFEST.json, then papermill executes the
notebook into runs/<profile>/notebooks/ exactly as `compsense reproduce` does (`runner.execute`).

Each stage writes its figures into a folder of its own (<figures_dir>/<key>/), so that no two stages'
DVC outputs overlap (DVC refuses a pipeline where they do).
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

from compsense.core.layout import CACHE, MODELS, RESULTS, VERIFIERS
from compsense.core.paths import git_commit, resolve
from compsense.core.storage import write_json
from compsense.pipeline import runner
from compsense.pipeline.profiles import load_profile, notebook_parameters
from compsense.pipeline.stages import STAGE_WRITES, stage_key

EXECUTED = "notebooks"  # runs/<profile>/notebooks/<notebook>.ipynb: the executed copy DVC keeps


def executed_notebook(profile: str, notebook: Path) -> Path:
    """Where the stage's executed notebook goes: runs/<profile>/notebooks/<name>."""
    return Path("runs") / profile / EXECUTED / notebook.name


def figures_folder(common: dict, profile: str, key: str) -> str:
    """The stage's own figures folder: <figures_dir>/<key> (figures_dir as the profile sets it, else
    beside the work_dir), as a path relative to the repository when the profile's is."""
    base = common.get("figures_dir") or f"{common.get('work_dir', f'runs/{profile}')}/figures"
    return os.path.normpath(f"{base}/{key}")


PERSIST = (MODELS, VERIFIERS)  # kept while their stage re-runs: the notebooks reuse what their digests match


def stage_folders(profile: str, common: dict, key: str) -> list[tuple[str, bool]]:
    """[(folder, persist)] stage `key` writes, as dvc.yaml declares its outputs: the folders under the
    work_dir it writes (`stages.STAGE_WRITES`; its tables in results/<key>/, `layout.results_dir`; the
    cache left out: never a result) and its figures folder. Trained models and verifiers persist: DVC
    keeps them while the stage re-runs, so training reuses a model whose recorded digest still matches
    instead of training it again, as the notebooks always did."""
    work_dir = str(common.get("work_dir", f"runs/{profile}")).rstrip("/")
    found = []
    for name in STAGE_WRITES.get(key, ()):
        if name != CACHE:
            found.append((f"{work_dir}/{RESULTS}/{key}" if name == RESULTS else f"{work_dir}/{name}", name in PERSIST))
    return [*found, (figures_folder(common, profile, key), False)]


def run(profile: str, key: str, overrides=()) -> Path:
    """Run stage `key` (a notebook prefix, '02') of `profile`; returns the executed notebook. Refuses
    (runner.Refused, one line) a bad profile value, a protected or unwritable folder or data that is not
    the release's, before the kernel starts."""
    try:
        data = load_profile(profile, overrides)
    except (ValueError, FileNotFoundError) as err:
        raise runner.Refused(str(err)) from None
    (nb,) = runner.select_stages([key])
    common = dict(data["common"])
    figures = figures_folder(common, profile, stage_key(nb))
    data_dirs = [v.get("data_dir") for v in data.values() if isinstance(v, dict)]
    runner.check_run_folders(profile, {**common, "figures_dir": figures}, None, overrides, data_dirs, [stage_key(nb)])
    runner.check_stage_data(profile, [nb], data)
    try:
        params = notebook_parameters(profile, nb, data)
    except KeyError as err:
        raise runner.Refused(str(err).strip("'\"")) from None
    if "figures_dir" in params:
        params["figures_dir"] = figures
    output = resolve(executed_notebook(profile, nb))
    # Every folder dvc.yaml names as this stage's output exists when it ends, even one a profile's
    # parameters leave empty (06 draws no figure at some profiles): DVC fails a stage whose output is missing.
    for folder in [output.parent, *(resolve(f) for f, _ in stage_folders(profile, common, stage_key(nb)))]:
        folder.mkdir(parents=True, exist_ok=True)
    runner.execute(nb, output, params, git_commit())
    return output


LIBRARIES = "libraries"  # the stage key of runs/<profile>/libraries.json


def libraries_record(profile: str) -> Path:
    """runs/<profile>/libraries.json: the versions of the libraries that shape a result (torch,
    transformers, ...; `runner.library_versions`). DVC runs the stage that writes it every time
    (`always_changed`) and every notebook stage depends on it, so an upgrade re-runs them while an
    unchanged record leaves them skipped: library versions are in the content key without a stage of
    their own re-running."""
    path = resolve(Path("runs") / profile / f"{LIBRARIES}.json")
    write_json(path, runner.library_versions())
    return path


def main(profile: str, key: str, debug: bool = False) -> int:
    try:
        output = libraries_record(profile) if key == LIBRARIES else run(profile, key)
    except runner.Refused as err:
        if debug:
            raise
        print(f"compsense stage {key} --profile {profile}: {err}", file=sys.stderr)
        return 2
    print(f"[{profile} {key}] ok -> {output}")
    return 0
