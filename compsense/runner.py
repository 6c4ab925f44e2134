"""Run the notebooks in order with papermill: one command from a clone to executed notebooks.

Each stage (one notebook) runs with the profile's parameters into runs/<profile>/<timestamp>/.
A stage whose notebook, parameters, compsense code and upstream stages are unchanged since its
last success is skipped, and says so. A failing stage stops the stages that depend on it, keeps
everything done so far, and the summary names the failing cell and the command to re-run it.
"""
from __future__ import annotations

import ast
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
    """Hash of what a stage's result depends on: the notebook, its parameters, the compsense code it
    imports (directly or through other modules; `code_dependencies`), the package's resources and
    its upstream stages' fingerprints. A change to a module the notebook never reaches (the
    explorer's widgets for notebook 02, say) does not re-run it."""
    h = hashlib.sha256()
    h.update(notebook.read_bytes())
    h.update(json.dumps(params, sort_keys=True, default=str).encode())
    package = repo_root() / "compsense"
    resources = [p for p in (package / "resources").rglob("*") if p.is_file()]  # none when the folder is missing
    for src in sorted(set(code_dependencies(notebook)) | set(resources)):
        h.update(src.relative_to(repo_root()).as_posix().encode())
        h.update(src.read_bytes())
    for up in upstream:
        h.update(up.encode())
    return h.hexdigest()


def code_dependencies(notebook: Path) -> list[Path]:
    """The compsense source files a notebook's code cells import, followed through every import
    (absolute or relative, at top level or inside functions) of the modules they reach.

    Why not hash the whole package: then any edit re-runs every stage. Why static (ast) and not
    the modules a run actually loaded: a skip decision must be made before the run.
    """
    package = repo_root() / "compsense"
    nb = json.loads(notebook.read_text(encoding="utf-8"))
    sources = ["".join(c["source"]) if isinstance(c["source"], list) else c["source"]
               for c in nb.get("cells", []) if c.get("cell_type") == "code"]
    todo = [(_python_only(src), "") for src in sources]  # (code, the package its relative imports start from)
    seen: dict[str, Path] = {}
    _visit(package, "compsense", seen, todo)  # every import of compsense runs its __init__
    while todo:
        code, package_of = todo.pop()
        try:
            tree = ast.parse(code)
        except SyntaxError:
            continue
        for name in _imported_modules(tree, package_of):
            for candidate in _module_and_parents(name):
                _visit(package, candidate, seen, todo)
    return sorted(seen.values())


def _visit(package: Path, dotted: str, seen: dict, todo: list) -> None:
    """Record `dotted`'s source file, once, and queue its code with the package it belongs to."""
    if dotted in seen:
        return
    path = _module_file(package, dotted)
    if path is not None:
        seen[dotted] = path
        package_of = dotted if path.name == "__init__.py" else dotted.rpartition(".")[0]
        todo.append((path.read_text(encoding="utf-8"), package_of))


def _python_only(cell: str) -> str:
    """A cell's source without IPython magics and shell escapes (`%time`, `!ls`), which ast rejects."""
    return "\n".join("" if line.lstrip().startswith(("%", "!")) else line for line in cell.splitlines())


def _imported_modules(tree, package_of: str) -> set[str]:
    """Dotted compsense modules named by the imports in `tree`, relative ones resolved from the
    package `package_of` (`from compsense import x` names the submodule compsense.x when there is
    one; the caller checks)."""
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(a.name for a in node.names if a.name.split(".")[0] == "compsense")
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package_of.split(".")
                base = base[:len(base) - (node.level - 1)] if node.level > 1 else base
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            if target.split(".")[0] != "compsense":
                continue
            names.add(target)
            names.update(f"{target}.{a.name}" for a in node.names)
    return names


def _module_and_parents(name: str) -> list[str]:
    parts = name.split(".")
    return [".".join(parts[:i]) for i in range(1, len(parts) + 1)]


def _module_file(package: Path, dotted: str) -> Path | None:
    rel = Path(*dotted.split(".")[1:]) if "." in dotted else Path()
    root = package / rel
    if (root / "__init__.py").exists():
        return root / "__init__.py"
    if root.with_suffix(".py").exists() and dotted != "compsense":
        return root.with_suffix(".py")
    return None


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
