"""Run the notebooks in order with papermill: one command from a clone to executed notebooks.

Each stage (one notebook) runs with the profile's parameters into runs/<profile>/<timestamp>/, and
writes its figures into the profile's `figures_dir` (<work_dir>/figures), never into the committed
figures/ (that changes only through `make figures`).
A stage is skipped, and says so, only when its notebook, parameters, the compsense code it imports,
its upstream stages' results, the data files it reads (sizes and hashes), the data dir and the
library versions are all as at its last success, and the files it wrote under work_dir are still
there with the same sizes; otherwise it runs and says why. A failing stage stops the stages that
depend on it, keeps everything done so far, and the summary names the failing cell and the command
to re-run it (with every --set the run was given). One run at a time per profile and work_dir (a
lock; a second run is refused), and stages.json is re-read and merged under that lock.
While a stage runs, its kernel's own progress bars (training steps, encoding batches) are printed as
one line at most every 30 s (compsense.pipeline.progress), beside papermill's count of cells done.
Before any stage runs, the profile's values are checked against the notebooks' schema
(compsense.pipeline.schema) and the run's folders against the one guard (`check_run_folders`): never
the repository's protected folders or a data folder (the profile's own `data_dir` too), never an --out
that holds an earlier run, and only where a write succeeds and the disk has room, every folder under
the work_dir that the stages write into included. See docs/promises.md.
"""

from __future__ import annotations

import errno
import hashlib
import json
import modulefinder
import os
import platform
import shlex
import shutil
import socket
import tempfile
import time
import traceback
from contextlib import contextmanager
from datetime import datetime, timezone
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path

from compsense.core.layout import NOT_OUTPUTS
from compsense.core.paths import (
    ENV_COMMIT,
    MAKE_WRITABLE,
    check_can_write,
    check_not_protected,
    git_commit,
    local_data_dir,
    repo_root,
    resolve,
)
from compsense.core.storage import CorruptFile, file_digest, read_json, write_json
from compsense.pipeline import progress
from compsense.pipeline.profiles import load_profile, notebook_parameters, parse_override
from compsense.pipeline.stages import (
    DEPENDS_ON,
    STAGE_DATA,
    STAGE_WRITES,
    STATE_RECOVER,
    SUMMARY,
    data_needs,
    notebooks,
    read_summary,
    shown,
    stage_key,
)


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


# Modules that decide where files go and what a notebook's banner says, never a computed row: left
# out of every stage's content key, so that an edit to them re-runs nothing (it needed a hand-written
# `code_note` in params/pieces.yaml before). core/storage.py stays in: beside its writers, `tidy` and
# `append_results` shape the rows of every table.
OPERATIONAL = ("compsense/core/paths.py", "compsense/core/banner.py")


def code_dependencies(notebook: Path) -> list[Path]:
    """The compsense source files a notebook's code cells import, followed through every import
    (absolute or relative, at top level or inside functions) of the modules they reach, less the
    `OPERATIONAL` ones (their own imports are still followed).

    Why not hash the whole package: then any edit re-runs every stage. Why a static reading
    (the standard library's modulefinder, searching the repository only, so torch and the rest are
    never opened) and not the modules a run actually loaded: a skip decision must be made before the
    run.
    """
    root = repo_root()
    if not (root / "compsense" / "__init__.py").is_file():  # no package here (modulefinder fails on a bare folder)
        return []
    finder = modulefinder.ModuleFinder(path=[str(root)])
    finder.import_hook("compsense")  # every import of compsense runs its __init__
    nb = json.loads(notebook.read_text(encoding="utf-8"))
    with tempfile.TemporaryDirectory() as tmp:
        script = Path(tmp) / "cell.py"
        for cell in nb.get("cells", []):
            if cell.get("cell_type") != "code":
                continue
            source = "".join(cell["source"]) if isinstance(cell["source"], list) else cell["source"]
            script.write_text(_python_only(source), encoding="utf-8")
            try:
                finder.run_script(str(script))
            except SyntaxError:  # not Python (a cell of another kernel's magic): it imports nothing here
                continue
    return _reached(finder)


def module_dependencies(*modules: str) -> list[Path]:
    """The compsense source files that the modules at `modules` (repository paths) are and import, read
    as `code_dependencies` reads a notebook's cells (the report stage's code)."""
    root = repo_root()
    finder = modulefinder.ModuleFinder(path=[str(root)])
    finder.import_hook("compsense")
    for module in modules:
        finder.run_script(str(root / module))
    return sorted({*_reached(finder), *(root / m for m in modules)})


def _reached(finder: modulefinder.ModuleFinder) -> list[Path]:
    root = repo_root()
    found = (m.__file__ for name, m in finder.modules.items() if name.split(".")[0] == "compsense")
    files = (Path(f) for f in found if f and Path(f).is_relative_to(root / "compsense"))
    return sorted(f for f in files if f.relative_to(root).as_posix() not in OPERATIONAL)


def _python_only(cell: str) -> str:
    """A cell's source without IPython magics and shell escapes (`%time`, `!ls`), which Python rejects."""
    return "\n".join("" if line.lstrip().startswith(("%", "!")) else line for line in cell.splitlines())


class Refused(RuntimeError):
    """`reproduce` will not start (another run holds the lock, a bad --only, a damaged stages.json);
    the message says why and what to do."""


class WriteFailed(OSError):
    """A file the runner writes itself (summary.json, stages.json, the report) could not be written: a
    full disk or a folder made read-only during the run; the message names the file and the fix."""


def reproduce(
    profile: str,
    only: list[str] | None = None,
    force: bool = False,
    out: str | None = None,
    overrides: list[str] | None = None,
) -> int:
    from tqdm.auto import tqdm

    try:
        profile_data = load_profile(profile, overrides or ())  # checks the name and every key first; read once
        common = profile_data["common"]
    except (ValueError, FileNotFoundError) as err:
        raise Refused(str(err)) from None
    stages = select_stages(only)
    work_dir = resolve(common["work_dir"]) if "work_dir" in common else None
    data_dirs = [v.get("data_dir") for v in profile_data.values() if isinstance(v, dict)]
    keys = [stage_key(nb) for nb in stages]
    figures_dir = check_run_folders(profile, common, out, overrides or (), data_dirs, keys)
    profile_dir = resolve(f"runs/{profile}")
    check_stage_data(profile, stages, profile_data)
    with (
        run_lock(profile_dir, f"profile {profile}"),
        run_lock(work_dir if work_dir not in (None, profile_dir) else None, f"work_dir {work_dir}"),
    ):
        state_path = profile_dir / "stages.json"
        state = read_state(state_path)
        run_dir = resolve(out) if out else new_run_dir(profile_dir)
        run_dir.mkdir(parents=True, exist_ok=True)
        summary = {
            "profile": profile,
            # this run's place among the work_dir's runs (latest_run orders by it, not by a clock)
            "sequence": next_run_sequence(profile_dir, work_dir),
            # the code the stages run, taken before they start (commits made during a run are not it)
            "commit": git_commit(),
            "run_dir": str(run_dir),
            "started": run_dir.name,
            "overrides": list(overrides or []),  # --set SECTION.KEY=VALUE on top of params/<profile>.yaml
            "stages": {},
            "work_dir": str(work_dir) if work_dir else None,
            "figures_dir": str(figures_dir),
        }
        failed: set[str] = set()
        libraries = library_versions()
        print(f"compsense reproduce: profile {profile}, {len(stages)} stage(s), run folder {run_dir}")
        for nb in tqdm(stages, desc=f"reproduce [{profile}]", unit="stage"):
            key = stage_key(nb)
            blocked = [d for d in DEPENDS_ON.get(key, []) if d in failed]
            if blocked:
                failed.add(key)
                summary["stages"][key] = {"status": "not run", "reason": f"depends on failed stage(s) {blocked}"}
                print(f"  [{key}] not run: depends on failed stage(s) {blocked}")
                continue
            params = notebook_parameters(profile, nb, profile_data)
            summary["stages"][key], state = _run_stage(
                nb, params, state, state_path, run_dir, summary, force, libraries
            )
            if summary["stages"][key]["status"] == "failed":
                failed.add(key)
        summary["finished"] = datetime.now(timezone.utc).strftime("%Y%m%d-%H%M%S")
        with writing(run_dir / SUMMARY):
            write_json(run_dir / SUMMARY, summary)
        print(f"summary: {run_dir / SUMMARY}")
        if "work_dir" in common:
            # Late import, on purpose: the report reads the science modules (torch, sentence-transformers:
            # ~6 s to import); loaded only after the stages ran, `reproduce` starts and takes its lock at once.
            from compsense.pipeline.report import build_report

            with writing(run_dir / "report.md"):
                written = build_report(common["work_dir"], figures_dir, run_dir, summary)
            print(f"report:  {written['html']}\n         {written['md']}")
    return 1 if failed else 0


def _run_stage(
    nb: Path, params: dict, state: dict, state_path: Path, run_dir: Path, summary: dict, force: bool, libraries: dict
) -> tuple[dict, dict]:
    """Run one stage's notebook with papermill, or skip it when its last success still stands
    (`rerun_reason`). Returns (its entry of the run's summary, stages.json as it is now: a success is
    merged into it at once, so a later failure or kill keeps it)."""
    key = stage_key(nb)
    parts = {
        "code": fingerprint(nb, params, []),
        "upstream": {d: upstream_state(state.get(d)) for d in DEPENDS_ON.get(key, [])},
        "inputs": stage_inputs(key, params, libraries),
    }
    fp = _digest(parts)
    stage_work = resolve(params["work_dir"]) if "work_dir" in params else None
    why = "--force" if force else rerun_reason(state.get(key), parts, fp, stage_work)
    if why is None:
        print(
            f"  [{key}] skipped: notebook, parameters, code, data and outputs unchanged since "
            f"{state[key].get('finished')} (--force re-runs it)"
        )
        entry = {
            "status": "skipped",
            "reason": "unchanged since its last success",
            "last_output": state[key].get("output"),
        }
        return entry, state
    print(f"  [{key}] runs: {why}")
    output = run_dir / nb.name
    before = _snapshot(stage_work, run_dir)
    started = time.time()
    try:
        execute(nb, output, params, summary["commit"])
    except Exception as err:
        entry = {**_failure(err, nb, output, summary, key, time.time() - started), "reason": why}
        print(f"  [{key}] FAILED in {entry['cell']}: {entry['error']}\n        re-run from here: {entry['rerun']}")
        return entry, state
    seconds = round(time.time() - started, 1)
    written = stage_outputs(state.get(key), _written_since(before, _snapshot(stage_work, run_dir)), stage_work)
    record = {
        "fingerprint": fp,
        "parts": parts,
        "output": str(output),
        "seconds": seconds,
        "work_dir": str(stage_work) if stage_work else None,
        "outputs": written,
        "finished": datetime.now(timezone.utc).isoformat(timespec="seconds"),
    }
    with writing(state_path):
        state = record_stage(state_path, key, record)
    print(f"  [{key}] ok in {seconds:.0f} s -> {shown(output)}")
    return {"status": "ok", "seconds": seconds, "output": str(output), "reason": why}, state


def execute(nb: Path, output: Path, params: dict, commit: str) -> None:
    """Run notebook `nb` with papermill into `output`, with `params` injected: its kernel's rows record
    `commit` (code_commit), and its tqdm bars reach this terminal (progress). The one way a stage runs,
    under the runner and under DVC (compsense.pipeline.stage)."""
    import papermill

    with environment(ENV_COMMIT, commit), progress.watch(stage_key(nb), every=progress.PRINT_EVERY):
        papermill.execute_notebook(
            str(nb),
            str(output),
            parameters=params,
            cwd=str(nb.parent),
            kernel_name="python3",
            progress_bar=True,
            log_output=False,
            extra_arguments=progress.kernel_arguments(progress.KERNEL_EVERY),
        )


@contextmanager
def environment(name: str, value: str):
    """Set one environment variable for the duration, as the kernels papermill starts then inherit it,
    and restore what was there after."""
    before = os.environ.get(name)
    os.environ[name] = value
    try:
        yield
    finally:
        if before is None:
            os.environ.pop(name, None)
        else:
            os.environ[name] = before


def check_stage_data(profile: str, stages: list[Path], profile_data: dict) -> None:
    """Refuse to start when a dataset these stages read is not the release data/MANIFEST.json
    describes (a file cut or altered: sizes and sha256, as `compsense doctor` checks), so a
    half corpus is never published under the dataset's name. The project's smoke data only needs its
    files present. A parameter a stage lacks is refused here too, before anything runs."""
    from compsense.data.release import data_checks

    try:
        params = {nb: notebook_parameters(profile, nb, profile_data) for nb in stages}
    except KeyError as err:
        raise Refused(str(err).strip("'\"")) from None
    # Only files present but other than the release's: a missing dataset is the stage's own clear error.
    bad = [c for c in data_checks(*data_needs(params)) if c.altered]
    if bad:
        lines = "\n".join(f"  {c.what}: {c.detail}. Fix: {c.fix}" for c in bad)
        raise Refused(f"the data these stages read is not what {profile}'s runs need:\n{lines}")


def check_run_folders(
    profile: str, common: dict, out: str | None, overrides=(), data_dirs=(), stages: list[str] | None = None
) -> Path:
    """Where the stages of `profile` write figures: its `figures_dir` (default <work_dir>/figures), never
    the committed figures/ (`make figures` publishes a run's figures there when asked). Refuses to start
    when the work_dir, --out or that folder is a place no run writes into (`paths.check_not_protected`,
    with the profile's own `data_dir` settings: `data_dirs`, as a data folder the environment does not
    name is one all the same), when --out holds an earlier run (`check_new_run_folder`), then when one of
    them, runs/<profile> (stages.json and the lock) or a folder under the work_dir that the `stages`
    (keys; None: all) write into cannot be written, or their disk is full: a read-only folder or disk
    stops the run here, not at a stage's first write minutes in (`paths.check_can_write` tries a real
    write; `check_free_space`)."""
    default = f"{common['work_dir']}/figures" if "work_dir" in common else f"runs/{profile}/figures"
    figures_dir = Path(os.path.normpath(resolve(common.get("figures_dir") or default)))

    def setting(key: str) -> str:  # where a common setting came from: the --set that gave it, else the profile
        if any(parse_override(o)[:2] == ("common", key) for o in overrides):
            return f"--set common.{key}={common.get(key)}"
        if key not in common:  # figures_dir left out: the default beside the work_dir
            return f"params/{profile}.yaml: `{key}` not set (default {default})"
        return f"params/{profile}.yaml: `{key}: {common.get(key)}`"

    also = [d for d in data_dirs if d]
    try:
        if "work_dir" in common:
            check_not_protected(common["work_dir"], setting("work_dir"), f"use runs/{profile}", also=also)
        if out:
            fix = f"leave --out out (a new folder under runs/{profile}/) or name one there"
            check_not_protected(out, f"--out {out}", fix, also=also)
            check_new_run_folder(out, profile)
        fix = f"set `figures_dir: {default}` (the run's own folder), then `make figures` copies the latest run's"
        check_not_protected(figures_dir, setting("figures_dir"), f"{fix} figures and tables into figures/", also=also)
        check_can_write(f"runs/{profile}", f"runs/{profile} (stages.json and the run lock)", MAKE_WRITABLE)
        if "work_dir" in common:
            fix = f"{MAKE_WRITABLE}, or set work_dir to a folder you can write"
            check_can_write(common["work_dir"], setting("work_dir"), fix)
            for folder, keys in stage_folders(resolve(common["work_dir"]), stages).items():
                check_can_write(folder, f"{setting('work_dir')}: {folder} (stage {', '.join(keys)} writes there)", fix)
        if out:
            check_can_write(out, f"--out {out}", f"{MAKE_WRITABLE}, or pass --out a folder you can write")
        check_can_write(
            figures_dir, f"{setting('figures_dir')} (figures folder)", f"{MAKE_WRITABLE}, or set figures_dir"
        )
        for folder, what in {
            resolve(common["work_dir"]) if "work_dir" in common else None: setting("work_dir"),
            resolve(out) if out else resolve(f"runs/{profile}"): f"--out {out}" if out else f"runs/{profile}",
            figures_dir: setting("figures_dir"),
        }.items():
            if folder is not None:
                check_free_space(folder, what)
    except PermissionError as err:
        raise Refused(str(err)) from None
    return figures_dir


def stage_folders(work_dir: Path, stages: list[str] | None = None) -> dict[Path, list[str]]:
    """{folder: the stages that write into it} for the folders under `work_dir` that `stages` (keys;
    None: every stage) write into (`stages.STAGE_WRITES`), each followed by every folder already below
    it: a read-only model or results folder deep down refuses the run up front. A folder given as a
    link is checked, not walked (the link may lead anywhere)."""
    keys = stages if stages is not None else list(STAGE_WRITES)
    found: dict[Path, list[str]] = {}
    for key in keys:
        for name in STAGE_WRITES.get(key, sorted({n for names in STAGE_WRITES.values() for n in names})):
            top = work_dir / name
            walked = top.is_dir() and not top.is_symlink()
            below = sorted(Path(parent) / sub for parent, subs, _ in os.walk(top) for sub in subs) if walked else []
            for folder in [top, *below]:
                found.setdefault(folder, []).append(key)
    return found


MIN_FREE_BYTES = 100 * 2**20  # less free space than this where a run writes: refused before any stage runs
FREE_SPACE_FIX = "free space on that disk, or set work_dir, figures_dir (or --out) to a folder on another disk"


def check_free_space(folder: Path, what: str) -> None:
    """PermissionError (as `check_can_write` words a refusal) when the disk that holds `folder` (or the
    nearest folder above it that exists) has under MIN_FREE_BYTES free: a full disk is named with its
    path before a stage runs, not met as a bare "[Errno 28] No space left on device" minutes in."""
    probe = next((p for p in (folder, *folder.parents) if p.exists()), folder)
    free = shutil.disk_usage(probe).free
    if free < MIN_FREE_BYTES:
        raise PermissionError(
            f"{what}: the disk that holds {folder} has {free / 2**20:.1f} MiB free (a run needs at least "
            f"{MIN_FREE_BYTES // 2**20} MiB). Fix: {FREE_SPACE_FIX}"
        )


# What a run folder holds once a run wrote it: its record, report, tables and executed notebooks.
RUN_RECORDS = (SUMMARY, "report.md", "report.html", "tables")


def check_new_run_folder(out: str, profile: str) -> None:
    """Refused when `--out` holds an earlier run's records (its summary.json, report, tables or executed
    notebooks) or earlier runs' folders: this run would replace that run's record and report with its
    own, which may hold one stage where that one held seven. A run always gets a folder of its own."""
    folder = resolve(out)
    if not folder.is_dir():
        return
    kept = [name for name in RUN_RECORDS if (folder / name).exists()] + sorted(p.name for p in folder.glob("*.ipynb"))
    runs = sorted(p.parent.name for p in folder.glob(f"*/{SUMMARY}"))
    if kept or runs:
        what = f"an earlier run's records ({_few(kept)})" if kept else f"earlier runs ({_few(runs)})"
        raise Refused(
            f"--out {out}: {folder} holds {what}, which this run would overwrite. Fix: leave --out out (a new "
            f"folder under runs/{profile}/), or pass --out a folder that does not exist yet"
        )


def _few(names: list[str], n: int = 4) -> str:
    return ", ".join(names[:n]) + (", ..." if len(names) > n else "")


@contextmanager
def writing(path: Path):
    """Re-raise an OSError from writing `path` (a full disk, a folder made read-only since the start) as
    WriteFailed naming the file and the fix: the bare error of a write() names no path."""
    try:
        yield
    except OSError as err:
        if isinstance(err, WriteFailed) or err.errno not in (errno.ENOSPC, errno.EDQUOT, errno.EROFS, errno.EACCES):
            raise
        also = f" ({err.filename})" if err.filename and str(err.filename) != str(path) else ""
        fix = FREE_SPACE_FIX if err.errno in (errno.ENOSPC, errno.EDQUOT) else MAKE_WRITABLE
        raise WriteFailed(err.errno, f"{err.strerror}: could not write {path}{also}. Fix: {fix}") from None


def select_stages(only: list[str] | None) -> list[Path]:
    """The notebooks `only` names (all when None); a prefix that names no stage is refused, not ignored."""
    found = notebooks()
    if not only:
        return found
    unknown = [o for o in only if not any(stage_key(nb).startswith(o) for nb in found)]
    if unknown or not all(o.strip() for o in only):
        raise Refused(
            f"--only {','.join(only)}: no stage matches {unknown or ['(empty)']}; "
            f"the stages are {', '.join(stage_key(nb) for nb in found)}"
        )
    return [nb for nb in found if any(stage_key(nb).startswith(o) for o in only)]


# ----------------------------------------------------------------------------------------------
# What a skip checks besides the code: the data a stage reads, the libraries, and its outputs.

LIBRARIES = (
    "torch",
    "transformers",
    "sentence-transformers",
    "numpy",
    "pandas",
    "scikit-learn",
    "scipy",
    "pyarrow",
    "tokenizers",
    "safetensors",
)


def library_versions() -> dict[str, str]:
    found = {"python": platform.python_version()}
    for name in LIBRARIES:
        try:
            found[name] = version(name)
        except PackageNotFoundError:
            found[name] = "absent"
    return found


# Parameters that say where a stage writes or where the data folder is, not what it reads.
WHERE_PARAMETERS = ("work_dir", "figures_dir", "data_dir")


def stage_inputs(key: str, params: dict, libraries: dict) -> dict:
    """{'data_dir', 'files': {path: 'size:sha256'}, 'libraries'}: the data a stage reads, as resolved now."""
    try:
        root = local_data_dir(params.get("data_dir"), required=False)
    except FileNotFoundError:
        root = None  # the stage itself will say so; the setting is still part of the record
    folders, files = set(STAGE_DATA.get(key, [])), []
    for name, value in params.items():
        if name in WHERE_PARAMETERS:
            continue
        for item in value if isinstance(value, list) else [value]:
            if not isinstance(item, str) or not item.strip():
                continue
            if root is not None and "/" not in item and (root / item).is_dir():
                folders.add(item)
            elif resolve(item).is_file():
                files.append(resolve(item))
            elif "/" in item and resolve(item).is_dir():  # a dataset given by its path
                files += sorted(f for f in resolve(item).rglob("*") if f.is_file())
    for name in sorted(folders):
        if root is not None and (root / name).is_dir():
            files += sorted(f for f in (root / name).rglob("*") if f.is_file())
    return {
        "data_dir": str(root) if root else params.get("data_dir"),
        "files": {str(f): file_digest(f) for f in files},
        "libraries": libraries,
    }


def _digest(obj) -> str:
    return hashlib.sha256(json.dumps(obj, sort_keys=True, default=str).encode()).hexdigest()


def rerun_reason(record: dict | None, parts: dict, fp: str, work_dir: Path | None) -> str | None:
    """Why a stage must run again, or None when its last success still stands (same notebook,
    parameters, code, upstream results, data files, data dir and libraries; outputs all present
    with the sizes they had)."""
    if not record:
        return "no earlier success recorded"
    if "parts" not in record:
        return "its record predates data and output checks"
    old = record["parts"]
    if old.get("code") != parts["code"]:
        return "notebook, parameters or compsense code changed"
    changed = [d for d in parts["upstream"] if old.get("upstream", {}).get(d) != parts["upstream"][d]]
    if changed:
        return f"upstream stage(s) {', '.join(changed)} produced new results, or their outputs changed since"
    was, now = old.get("inputs", {}), parts["inputs"]
    if was.get("data_dir") != now["data_dir"]:
        return f"data dir changed: {was.get('data_dir')} -> {now['data_dir']}"
    files = sorted(set(was.get("files", {})) ^ set(now["files"])) or sorted(
        f for f in now["files"] if was["files"][f] != now["files"][f]
    )
    if files:
        return f"data changed: {', '.join(files[:3])}{' ...' if len(files) > 3 else ''}"
    libs = [
        f"{k} {was.get('libraries', {}).get(k)} -> {v}"
        for k, v in now["libraries"].items()
        if was.get("libraries", {}).get(k) != v
    ]
    if libs:
        return f"library versions changed: {', '.join(libs)}"
    if record.get("fingerprint") != fp:
        return "its record does not match what it ran with"
    base = Path(record.get("work_dir") or work_dir or ".")
    for rel, digest in sorted(record.get("outputs", {}).items()):
        path = base / rel
        if not isinstance(digest, str):
            return "its record predates content checks of its outputs (sizes only)"
        if not path.is_file():
            return f"output {path} is missing"
        if file_digest(path) != digest:
            return f"output {path} changed since the stage wrote it (content differs)"
    return None


def stage_outputs(previous: dict | None, written: dict[str, int], work_dir: Path | None) -> dict[str, str]:
    """{path: "size:sha256"} of a stage's outputs: what it wrote this time, and what its last success
    recorded that is still there and was not rewritten (a model it reused rather than trained again
    stays an output, so deleting or damaging it later re-runs the stage)."""
    base = Path(work_dir or ".")
    outputs = {rel: file_digest(base / rel) for rel in written if (base / rel).is_file()}
    for rel in (previous or {}).get("outputs", {}):
        if rel not in outputs and (base / rel).is_file():
            outputs[rel] = file_digest(base / rel)
    return dict(sorted(outputs.items()))


def upstream_state(record: dict | None) -> str:
    """What a downstream stage depends on of an upstream one: its fingerprint and the content of its
    recorded outputs as they are on disk now, so an upstream output changed or cut after it was
    written re-runs the stages that read it, even when the upstream stage itself is not re-run."""
    if not record:
        return ""
    base = Path(record.get("work_dir") or ".")
    now = {rel: file_digest(base / rel) if (base / rel).is_file() else "missing" for rel in record.get("outputs", {})}
    return _digest({"fingerprint": record.get("fingerprint", ""), "outputs": now})


def _snapshot(work_dir: Path | None, run_dir: Path) -> dict[str, tuple[int, int]]:
    """{path relative to work_dir: (size, mtime_ns)} of the files a stage may have written."""
    if work_dir is None or not work_dir.is_dir():
        return {}
    found = {}
    for path in work_dir.rglob("*"):
        rel = path.relative_to(work_dir)
        if (
            rel.parts[0] in NOT_OUTPUTS
            or any(p.startswith(".") for p in rel.parts)
            or path.is_relative_to(run_dir)
            or rel.as_posix() == "stages.json"
            or not path.is_file()
        ):
            continue
        st = path.stat()
        found[rel.as_posix()] = (st.st_size, st.st_mtime_ns)
    return found


def _written_since(before: dict, after: dict) -> dict[str, int]:
    """{path: size} of files new or rewritten between two snapshots: the stage's outputs."""
    return {rel: size for rel, (size, mtime) in sorted(after.items()) if before.get(rel) != (size, mtime)}


# ----------------------------------------------------------------------------------------------
# Two runs at once: a lock per profile and work_dir, unique run folders, stages.json merged.

LOCK_NAME = ".reproduce.lock"


@contextmanager
def run_lock(folder: Path | None, what: str):
    """Hold `folder`/.reproduce.lock for the duration, or raise Refused naming who holds it. The OS
    releases the lock when its process ends, killed or not, so a crash never leaves a stale lock."""
    if folder is None:
        yield
        return
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / LOCK_NAME
    fh = open(path, "a+", encoding="utf-8")
    try:
        _lock_file(fh)
    except OSError:
        fh.seek(0)
        holder = fh.read().strip() or "a process that has not written its id yet"
        fh.close()
        raise Refused(
            f"another `compsense reproduce` is running on {what} ({holder}; lock {path}). Two runs at "
            "once would overwrite each other's outputs: wait for it to finish, or use another profile "
            "or work_dir. The lock goes away by itself when that process ends, even if it is "
            "killed."
        ) from None
    try:
        fh.seek(0)
        fh.truncate()
        fh.write(
            f"pid {os.getpid()} on {socket.gethostname()}, "
            f"started {datetime.now(timezone.utc).isoformat(timespec='seconds')}\n"
        )
        fh.flush()
        yield
    finally:
        fh.close()  # closing releases the lock


def _lock_file(fh) -> None:
    try:
        import fcntl
    except ImportError:  # Windows
        import msvcrt

        msvcrt.locking(fh.fileno(), msvcrt.LK_NBLCK, 1)
        return
    fcntl.flock(fh.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)


def new_run_dir(profile_dir: Path) -> Path:
    """runs/<profile>/<UTC timestamp>, with -2, -3, ... when a run started in the same second."""
    stamp = datetime.now(timezone.utc).strftime("%Y%m%d-%H%M%S")
    profile_dir.mkdir(parents=True, exist_ok=True)
    for n in range(1, 1000):
        candidate = profile_dir / (stamp if n == 1 else f"{stamp}-{n}")
        try:
            candidate.mkdir()
            return candidate
        except FileExistsError:
            continue
    raise Refused(f"{profile_dir}: 999 run folders named {stamp}-*; pass --out")


def run_summaries(runs_root: Path):
    """(run folder, sequence, work_dir or None, summary) for every runs_root/<profile>/<run>/summary.json,
    in folder order; a damaged or foreign summary gives (run folder, None, None, None). The one reading
    of the runs' records that `next_run_sequence` and `publish.latest_run` share."""
    for path in sorted(runs_root.glob("*/*/summary.json")) if runs_root.is_dir() else []:
        try:
            record = read_summary(path)
            sequence = int(record.get("sequence") or 0)  # 0: a run from before runs were numbered
            work_dir = resolve(record["work_dir"]) if record.get("work_dir") else None
        except (CorruptFile, AttributeError, TypeError, ValueError):
            yield path.parent, None, None, None
            continue
        yield path.parent, sequence, work_dir, record


def next_run_sequence(profile_dir: Path, work_dir: Path | None = None) -> int:
    """One more than the highest `sequence` in the summary.json of the runs under `profile_dir` and of
    the runs of other profiles (beside it under runs/) that recorded the same `work_dir` (0 for runs
    from before it was recorded). Taken under the profile's and the work_dir's run locks, so the runs
    that write one work_dir are numbered in the order they ran whatever their clocks say:
    `publish.latest_run` orders by it, since a run folder's timestamps come from a clock that may be
    skewed."""
    same = resolve(work_dir) if work_dir is not None else None
    numbers = [0]
    for run, sequence, theirs, _ in run_summaries(profile_dir.parent):
        if sequence is None:  # a damaged or foreign summary: not a run
            continue
        if run.parent == profile_dir or (same is not None and theirs == same):
            numbers.append(sequence)
    return max(numbers) + 1


def read_state(path: Path) -> dict:
    """stages.json, or {} before the first success; a damaged one is refused with how to recover."""
    if not path.exists():
        return {}
    try:
        state = read_json(path, recover=STATE_RECOVER)
    except CorruptFile as err:
        raise Refused(str(err)) from None
    if not isinstance(state, dict) or not all(isinstance(v, dict) and "fingerprint" in v for v in state.values()):
        raise Refused(f"{path}: not a stage record (expected {{stage: {{fingerprint, ...}}}}). Fix: {STATE_RECOVER}")
    return state


def record_stage(path: Path, key: str, record: dict) -> dict:
    """Merge one stage's success into stages.json as it is on disk now (read-merge-write, atomic);
    a file it wrote stops counting as an output of any other stage. Returns the merged state."""
    state = read_state(path)
    for other in state.values():
        for rel in record["outputs"]:
            if other.get("work_dir") == record["work_dir"]:
                other.get("outputs", {}).pop(rel, None)
    state[key] = record
    write_json(path, state)
    return state


def failed_cell(err: Exception) -> tuple[str, str]:
    """(where, error) of a stage's failure: "cell 4" (else its execution count, else "setup") and
    "ValueError: ..." from papermill's PapermillExecutionError (any other exception: its type and text)."""
    cell = getattr(err, "exec_count", None)
    cell_index = getattr(err, "cell_index", None)
    where = f"cell {cell_index}" if cell_index is not None else f"execution count {cell}" if cell else "setup"
    return where, f"{getattr(err, 'ename', type(err).__name__)}: {getattr(err, 'evalue', str(err))}"


def _failure(err: Exception, nb: Path, output: Path, summary: dict, key: str, seconds: float) -> dict:
    where, error = failed_cell(err)
    return {
        "status": "failed",
        "seconds": round(seconds, 1),
        "cell": where,
        "error": (error + disk_full_note(err, error, summary))[:800],
        "output": str(output),
        "traceback": traceback.format_exception_only(type(err), err)[-1][:2000],
        "rerun": rerun_command(summary["profile"], key, summary.get("overrides") or ()),
    }


def rerun_command(profile: str, key: str, overrides=()) -> str:
    """The command that runs stage `key` again as this run ran it: every --set it was given (without
    them, following the hint would run another configuration), no --out (a run gets a new folder)."""
    sets = "".join(f" --set {shlex.quote(o)}" for o in overrides)
    return f"python -m compsense reproduce --profile {profile} --only {key}{sets}"


def disk_full_note(err: Exception, error: str, summary: dict) -> str:
    """For a stage that failed on a full disk: the folders it writes into and the space free on each,
    since the kernel's "[Errno 28] No space left on device" names no path; "" for any other error."""
    full = getattr(err, "errno", None) in (errno.ENOSPC, errno.EDQUOT) or any(
        f"[Errno {n}]" in error for n in (errno.ENOSPC, errno.EDQUOT)
    )
    if not full:
        return ""
    folders = {summary.get("work_dir"), summary.get("figures_dir"), summary.get("run_dir")} - {None}
    where = []
    for folder in sorted(folders):
        probe = next((p for p in (Path(folder), *Path(folder).parents) if p.exists()), Path(folder))
        where.append(f"{folder} ({shutil.disk_usage(probe).free / 2**20:.1f} MiB free)")
    return f" -- the disk is full where the stage writes: {', '.join(where)}. Fix: {FREE_SPACE_FIX}"
