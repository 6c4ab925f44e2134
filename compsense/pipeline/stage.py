"""One notebook of one profile, run as a DVC stage: `python -m compsense stage 02 --profile local`.

DVC (dvc.yaml, written by compsense.pipeline.dvcfile) decides whether a stage runs: it hashes the
notebook, the compsense modules it imports, its section of params/<profile>.yaml, the data it reads and
its upstream stages' outputs, skips a stage whose inputs are unchanged, holds one run at a time in a
repository, and caches what a stage wrote so that a second machine can pull it. This command is what
DVC runs: the profile's values are checked against the notebooks' schema, the folders against the one
guard (`runner.check_run_folders`), the data against data/MANIFEST.json, then papermill executes the
notebook into runs/<profile>/notebooks/ (`runner.execute`).

Each stage writes its figures into a folder of its own (<figures_dir>/<key>/), so that no two stages'
DVC outputs overlap (DVC refuses a pipeline where they do).
"""

from __future__ import annotations

import os
import shutil
import sys
import time
from datetime import datetime, timezone
from pathlib import Path

import yaml

from compsense.core.layout import CACHE, MODELS, RESULTS, VERIFIERS
from compsense.core.paths import git_commit, resolve
from compsense.core.storage import write_json
from compsense.pipeline import runner
from compsense.pipeline.profiles import load_profile, notebook_parameters
from compsense.pipeline.stages import STAGE_WRITES, SUMMARY, stage_key

EXECUTED = "notebooks"  # runs/<profile>/notebooks/<notebook>.ipynb: the executed copy DVC keeps


def records_file(profile: str) -> Path:
    """runs/<profile>/stages.json: each stage's last success (`record`), read by the report and the pages."""
    return resolve(Path("runs") / profile / "stages.json")


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
    runner.check_run_folders(profile, common, data_dirs, [stage_key(nb)])  # the stage's figures go below
    runner.check_stage_data(profile, [nb], data)
    runner.read_state(records_file(profile))  # damaged: refused before the kernel starts
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
    started = time.time()
    runner.execute(nb, output, params, git_commit())
    record(profile, common, stage_key(nb), output, time.time() - started)
    return output


def record(profile: str, common: dict, key: str, output: Path, seconds: float) -> None:
    """The stage's success in runs/<profile>/stages.json (`runner.record_stage`): its executed notebook,
    work_dir, time and commit, which dvc.lock does not keep (its outputs' hashes are dvc.lock's). The
    provenance table, the notebook pages and `make figures` read these records whoever ran the stage."""
    entry = {
        "output": str(output),
        "seconds": round(seconds, 1),
        "work_dir": str(resolve(common.get("work_dir", f"runs/{profile}"))),
        "commit": git_commit(),
        "finished": datetime.now(timezone.utc).isoformat(timespec="seconds"),
    }
    path = records_file(profile)
    with runner.writing(path):
        runner.record_stage(path, key, entry)


REPORT = "report"  # the stage key of runs/<profile>/report/: the run `make figures` publishes


def report(profile: str, experiment: str | None = None) -> Path:
    """runs/<profile>/report/: the profile's report (summary.json, report.md and .html, tables/*.csv), its
    figures gathered from every stage's folder into figures/, and the stages as dvc.lock recorded them.
    `experiment`: the `dvc exp run -n` name it ran as (a declared piece), else DVC's own (DVC_EXP_NAME, set
    for the stages of an experiment), else none: the profile as committed. `make figures` publishes it."""
    from compsense.pipeline.report import build_report  # late: it imports the science modules

    data = load_profile(profile)
    common = data["common"]
    run_dir = resolve(Path("runs") / profile / REPORT)
    figures = run_dir / "figures"
    shutil.rmtree(run_dir, ignore_errors=True)  # a DVC output, cached by DVC: rebuilt whole
    figures.mkdir(parents=True)
    stages = {}
    records = runner.read_state(records_file(profile))
    for nb in runner.notebooks():
        key = stage_key(nb)
        for drawn in sorted(resolve(figures_folder(common, profile, key)).glob("*")):
            if drawn.is_file():
                shutil.copy2(drawn, figures / drawn.name)
        executed = resolve(executed_notebook(profile, nb))
        if executed.is_file():
            done = records.get(key, {})
            stages[key] = {"status": "ok", "output": str(executed)}
            stages[key].update({k: done[k] for k in ("seconds", "commit", "finished") if k in done})
    work_dir = resolve(common["work_dir"]) if "work_dir" in common else None
    summary = {
        "profile": profile,
        "commit": git_commit(),
        "run_dir": str(run_dir),
        "started": REPORT,
        "finished": datetime.now(timezone.utc).strftime("%Y%m%d-%H%M%S"),
        "experiment": experiment or os.environ.get("DVC_EXP_NAME"),
        # the values the stages ran with (a `dvc exp run -S` writes them into params/<profile>.yaml):
        # how a declared piece recognises its run (`pieces.Piece.runs_as`)
        "params": data,
        "stages": stages,
        "work_dir": str(work_dir) if work_dir else None,
        "figures_dir": str(figures),
        "dvc_lock": _locked(profile),
    }
    write_json(run_dir / SUMMARY, summary)
    if work_dir is not None:
        build_report(work_dir, figures, run_dir, summary)
    return run_dir


def _locked(profile: str) -> dict:
    """dvc.lock's entries of the profile's stages (command, dependencies and outputs with their hashes):
    the provenance of the run, kept in its summary."""
    path = resolve("dvc.lock")
    if not path.is_file():
        return {}
    stages = (yaml.safe_load(path.read_text(encoding="utf-8")) or {}).get("stages") or {}
    return {name: entry for name, entry in stages.items() if name.startswith(f"{profile}-")}


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


def written_folders(profile: str) -> list[Path]:
    """The folders a stage of `profile` writes into: its work_dir, its figures and runs/<profile>."""
    common = load_profile(profile)["common"]
    work = resolve(common.get("work_dir", f"runs/{profile}"))
    return [work, resolve(common.get("figures_dir") or work / "figures"), resolve(Path("runs") / profile)]


def main(profile: str, key: str, debug: bool = False) -> int:
    try:
        if key == LIBRARIES:
            output = libraries_record(profile)
        elif key == REPORT:
            output = report(profile)
        else:
            output = run(profile, key)
    except runner.Refused as err:
        if debug:
            raise
        print(f"compsense stage {key} --profile {profile}: {err}", file=sys.stderr)
        return 2
    except Exception as err:
        if debug or not hasattr(err, "ename"):  # not a cell's error (papermill's PapermillExecutionError): a bug
            raise
        # a cell failed: one line naming it, the error and where to read it whole, not the kernel's traceback
        where, error = runner.failed_cell(err)
        error += runner.disk_full_note(err, error, written_folders(profile))
        print(
            f"compsense stage {key} --profile {profile}: FAILED in {where}: {error} "
            f"(the executed notebook shows the cell and its traceback: runs/{profile}/{EXECUTED}/; --debug: here)",
            file=sys.stderr,
        )
        return 1
    print(f"[{profile} {key}] ok -> {output}")
    return 0
