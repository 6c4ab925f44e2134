"""Run the notebooks in order with papermill: one command from a clone to executed notebooks.

Each stage (one notebook) runs with the profile's parameters into runs/<profile>/<timestamp>/.
A stage whose notebook, parameters, compsense code and upstream stages are unchanged since its
last success is skipped, and says so. A failing stage stops the stages that depend on it, keeps
everything done so far, and the summary names the failing cell and the command to re-run it.
"""
from __future__ import annotations

import hashlib
import json
import time
import traceback
from datetime import datetime, timezone
from pathlib import Path

from .io import write_json
from .paths import repo_root, resolve
from .profiles import load_profile, notebook_parameters

# Which stages read another stage's files (by notebook prefix). 00 and 06 (the explorer) stand alone.
DEPENDS_ON = {"01": [], "02": ["01"], "03": ["01", "02"], "04": ["01", "02"], "05": ["02", "04"]}


def notebooks() -> list[Path]:
    """The pipeline's notebooks in run order: numbered ones first, then any others."""
    found = sorted((repo_root() / "notebooks").glob("*.ipynb"))
    numbered = [p for p in found if p.stem[:2].isdigit()]
    return numbered + [p for p in found if p not in numbered]


def stage_key(notebook: Path) -> str:
    return notebook.stem[:2] if notebook.stem[:2].isdigit() else notebook.stem


def fingerprint(notebook: Path, params: dict, upstream: list[str]) -> str:
    """Hash of what a stage's result depends on: the notebook, its parameters, the package code."""
    h = hashlib.sha256()
    h.update(notebook.read_bytes())
    h.update(json.dumps(params, sort_keys=True, default=str).encode())
    for src in sorted((repo_root() / "compsense").rglob("*")):
        if src.is_file() and src.suffix in {".py", ".txt", ".json", ".yaml"}:
            h.update(src.relative_to(repo_root()).as_posix().encode())
            h.update(src.read_bytes())
    for up in upstream:
        h.update(up.encode())
    return h.hexdigest()


def reproduce(profile: str, only: list[str] | None = None, force: bool = False, out: str | None = None) -> int:
    import papermill
    from tqdm.auto import tqdm

    stamp = datetime.now(timezone.utc).strftime("%Y%m%d-%H%M%S")
    run_dir = resolve(out) if out else resolve(f"runs/{profile}/{stamp}")
    run_dir.mkdir(parents=True, exist_ok=True)
    state_path = resolve(f"runs/{profile}/stages.json")
    state = json.loads(state_path.read_text()) if state_path.exists() else {}
    stages = [nb for nb in notebooks() if not only or any(stage_key(nb).startswith(o) for o in only)]
    summary = {"profile": profile, "run_dir": str(run_dir), "started": stamp, "stages": {}}
    failed: set[str] = set()
    fingerprints: dict[str, str] = {k: v["fingerprint"] for k, v in state.items()}
    print(f"compsense reproduce: profile {profile}, {len(stages)} stage(s), run folder {run_dir}")
    for nb in tqdm(stages, desc=f"reproduce [{profile}]", unit="stage"):
        key = stage_key(nb)
        blocked = [d for d in DEPENDS_ON.get(key, []) if d in failed]
        if blocked:
            failed.add(key)
            summary["stages"][key] = {"status": "not run", "reason": f"depends on failed stage(s) {blocked}"}
            print(f"  [{key}] not run: depends on failed stage(s) {blocked}")
            continue
        params = notebook_parameters(profile, nb)
        fp = fingerprint(nb, params, [fingerprints.get(d, "") for d in DEPENDS_ON.get(key, [])])
        if not force and state.get(key, {}).get("fingerprint") == fp:
            summary["stages"][key] = {"status": "skipped", "reason": "unchanged since its last success",
                                      "last_output": state[key].get("output")}
            print(f"  [{key}] skipped: notebook, parameters, code and inputs unchanged since "
                  f"{state[key].get('finished')} (--force re-runs it)")
            continue
        output = run_dir / nb.name
        started = time.time()
        try:
            papermill.execute_notebook(str(nb), str(output), parameters=params, cwd=str(nb.parent),
                                       kernel_name="python3", progress_bar=True, log_output=False)
        except Exception as err:
            failed.add(key)
            summary["stages"][key] = _failure(err, nb, output, profile, key, time.time() - started)
            print(f"  [{key}] FAILED in {summary['stages'][key]['cell']}: {summary['stages'][key]['error']}\n"
                  f"        re-run from here: {summary['stages'][key]['rerun']}")
            continue
        seconds = round(time.time() - started, 1)
        fingerprints[key] = fp
        state[key] = {"fingerprint": fp, "output": str(output), "seconds": seconds,
                      "finished": datetime.now(timezone.utc).isoformat(timespec="seconds")}
        write_json(state_path, state)
        summary["stages"][key] = {"status": "ok", "seconds": seconds, "output": str(output)}
        print(f"  [{key}] ok in {seconds:.0f} s -> {output.relative_to(repo_root()) if output.is_relative_to(repo_root()) else output}")
    summary["finished"] = datetime.now(timezone.utc).strftime("%Y%m%d-%H%M%S")
    write_json(run_dir / "summary.json", summary)
    print(f"summary: {run_dir / 'summary.json'}")
    common = load_profile(profile)["common"]
    if "work_dir" in common:
        from .report import build_report

        written = build_report(common["work_dir"], common.get("figures_dir", "figures"), run_dir, summary)
        print(f"report:  {written['html']}\n         {written['md']}")
    return 1 if failed else 0


def _failure(err: Exception, nb: Path, output: Path, profile: str, key: str, seconds: float) -> dict:
    cell = getattr(err, "exec_count", None)
    cell_index = getattr(err, "cell_index", None)
    where = f"cell {cell_index}" if cell_index is not None else f"execution count {cell}" if cell else "setup"
    return {
        "status": "failed",
        "seconds": round(seconds, 1),
        "cell": where,
        "error": f"{getattr(err, 'ename', type(err).__name__)}: {getattr(err, 'evalue', str(err))}"[:500],
        "output": str(output),
        "traceback": traceback.format_exception_only(type(err), err)[-1][:2000],
        "rerun": f"python -m compsense reproduce --profile {profile} --only {key}",
    }
