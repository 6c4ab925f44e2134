"""What each DVC stage runs beneath `compsense stage` (compsense.pipeline.stage): papermill's
execution of one notebook, the guards that refuse a run before its kernel starts, and the code key
(`code_dependencies`: the modules a notebook really reaches, which dvcfile writes as a stage's deps).

DVC decides what runs (dvc.yaml, dvc.lock): it skips a stage whose notebook, modules, parameters,
data and upstream outputs are unchanged, holds one run at a time in a repository, and caches what a
stage wrote. What DVC does not do is here: the profile's values checked against the notebooks' schema
(compsense.pipeline.schema), the run's folders against the one guard (`check_run_folders`: never the
repository's protected folders or a data folder, the profile's own `data_dir` too, and only where a
write succeeds and the disk has room), the data against data/MANIFEST.json (`check_stage_data`), and
the kernel's progress bars printed as one line at most every 30 s (compsense.pipeline.progress). See
docs/promises.md.
"""

from __future__ import annotations

import errno
import json
import modulefinder
import os
import platform
import shutil
import tempfile
from contextlib import contextmanager
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path

from compsense.core.paths import (
    ENV_COMMIT,
    MAKE_WRITABLE,
    check_can_write,
    check_not_protected,
    repo_root,
    resolve,
)
from compsense.core.storage import CorruptFile, read_json, write_json
from compsense.pipeline import progress
from compsense.pipeline.profiles import notebook_parameters
from compsense.pipeline.stages import STAGE_WRITES, STATE_RECOVER, data_needs, notebooks, stage_key

# Modules that decide where files go and what a notebook's banner says, never a computed row: left
# out of every stage's content key, so that an edit to them re-runs nothing (it needed a hand-written
# `code_note` in params/pieces.yaml before). core/storage.py stays in: beside its writers, `tidy` and
# `append_results` shape the rows of every table.
OPERATIONAL = ("compsense/core/paths.py", "compsense/core/banner.py", "compsense/core/commands.py")


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
    """A stage will not start (a bad profile value, a protected or unwritable folder, data that is not
    the release's, a damaged stages.json); the message says why and what to do."""


class WriteFailed(OSError):
    """A file the pipeline writes itself (stages.json, the report) could not be written: a full disk or
    a folder made read-only during the run; the message names the file and the fix."""


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


def check_run_folders(profile: str, common: dict, data_dirs=(), stages: list[str] | None = None) -> Path:
    """Where the stages of `profile` write figures: its `figures_dir` (default <work_dir>/figures), never
    the committed figures/ (`make figures` publishes a run's figures there when asked). Refuses to start
    when the work_dir or that folder is a place no run writes into (`paths.check_not_protected`, with
    the profile's own `data_dir` settings: `data_dirs`, as a data folder the environment does not name
    is one all the same), then when one of them, runs/<profile> (stages.json) or a folder under the
    work_dir that the `stages` (keys; None: all) write into cannot be written, or their disk is full: a
    read-only folder or disk stops the run here, not at a stage's first write minutes in
    (`paths.check_can_write` tries a real write; `check_free_space`)."""
    default = f"{common['work_dir']}/figures" if "work_dir" in common else f"runs/{profile}/figures"
    figures_dir = Path(os.path.normpath(resolve(common.get("figures_dir") or default)))

    def setting(key: str) -> str:  # where a common setting came from
        if key not in common:  # figures_dir left out: the default beside the work_dir
            return f"params/{profile}.yaml: `{key}` not set (default {default})"
        return f"params/{profile}.yaml: `{key}: {common.get(key)}`"

    also = [d for d in data_dirs if d]
    try:
        if "work_dir" in common:
            check_not_protected(common["work_dir"], setting("work_dir"), f"use runs/{profile}", also=also)
        fix = f"set `figures_dir: {default}` (the run's own folder), then `make figures` copies the latest run's"
        check_not_protected(figures_dir, setting("figures_dir"), f"{fix} figures and tables into figures/", also=also)
        check_can_write(f"runs/{profile}", f"runs/{profile} (stages.json and the executed notebooks)", MAKE_WRITABLE)
        if "work_dir" in common:
            fix = f"{MAKE_WRITABLE}, or set work_dir to a folder you can write"
            check_can_write(common["work_dir"], setting("work_dir"), fix)
            for folder, keys in stage_folders(resolve(common["work_dir"]), stages).items():
                check_can_write(folder, f"{setting('work_dir')}: {folder} (stage {', '.join(keys)} writes there)", fix)
        check_can_write(
            figures_dir, f"{setting('figures_dir')} (figures folder)", f"{MAKE_WRITABLE}, or set figures_dir"
        )
        for folder, what in {
            resolve(common["work_dir"]) if "work_dir" in common else None: setting("work_dir"),
            resolve(f"runs/{profile}"): f"runs/{profile}",
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
FREE_SPACE_FIX = "free space on that disk, or set work_dir and figures_dir to a folder on another disk"


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


def read_state(path: Path) -> dict:
    """stages.json, or {} before the first success; a damaged one is refused with how to recover."""
    if not path.exists():
        return {}
    try:
        state = read_json(path, recover=STATE_RECOVER)
    except CorruptFile as err:
        raise Refused(str(err)) from None
    if not isinstance(state, dict) or not all(isinstance(v, dict) and "output" in v for v in state.values()):
        raise Refused(f"{path}: not a stage record (expected {{stage: {{output, ...}}}}). Fix: {STATE_RECOVER}")
    return state


def record_stage(path: Path, key: str, record: dict) -> dict:
    """Merge one stage's success into stages.json as it is on disk now (read-merge-write, atomic).
    Returns the merged state."""
    state = read_state(path)
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


def disk_full_note(err: Exception, error: str, folders) -> str:
    """For a stage that failed on a full disk: the `folders` it writes into and the space free on each,
    since the kernel's "[Errno 28] No space left on device" names no path; "" for any other error."""
    full = getattr(err, "errno", None) in (errno.ENOSPC, errno.EDQUOT) or any(
        f"[Errno {n}]" in error for n in (errno.ENOSPC, errno.EDQUOT)
    )
    if not full:
        return ""
    where = []
    for folder in sorted({str(f) for f in folders}):
        probe = next((p for p in (Path(folder), *Path(folder).parents) if p.exists()), Path(folder))
        where.append(f"{folder} ({shutil.disk_usage(probe).free / 2**20:.1f} MiB free)")
    return f" -- the disk is full where the stage writes: {', '.join(where)}. Fix: {FREE_SPACE_FIX}"
