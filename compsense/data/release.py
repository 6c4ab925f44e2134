"""The data check: local dataset folders against data/MANIFEST.json, the release the results were computed from.

`compsense doctor` shows these checks for a profile, `reproduce` refuses to start when a dataset its stages
read is present but altered (sizes or sha256), and `compsense evaluate` refuses such a dataset unless
asked for a subset. Every failed check says what is missing or changed and how to get the release's files.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, replace
from pathlib import Path

from compsense.core.encoders import hub_offline
from compsense.core.paths import ENV_DATA_DIR, MANIFEST, local_data_dir, manifest_path, resolve, smoke_data_dir
from compsense.core.storage import sha256_file
from compsense.data.datasets import available_datasets


@dataclass(frozen=True)
class Check:
    """One thing a profile needs: found or not, what was found, and how to get it when it is not."""

    what: str
    ok: bool
    detail: str
    fix: str = ""
    altered: bool = False  # files present but not the release's (sizes or sha256): not merely missing


def load_manifest(path=None) -> dict:
    """data/MANIFEST.json (`compsense.core.paths.manifest_path`): the external datasets' files, sizes,
    sha256, licences and sources; {} when it is not there (an installed copy without the repo)."""
    try:
        with open(manifest_path() if path is None else path, encoding="utf-8") as fh:
            return json.load(fh)
    except FileNotFoundError:
        return {}


def manifest_check(name: str, root, entry: dict, used: str = "", checksums: bool = True) -> Check:
    """One dataset folder against its manifest entry: the folder, each file, and (with `checksums`)
    each file's size and sha256. A failed check names the files and says where to get them."""
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
        if changed and not missing:
            fix = f"replace the files named with the release's ({get}; {MANIFEST} lists sizes and sha256)"
        return Check(what, False, f"{'; '.join(problems)} {used}".rstrip(), fix, altered=bool(changed))
    state = "files and sha256 as in " + MANIFEST if checksums else "files found"
    return Check(what, True, f"{state} in {folder} {used}".rstrip())


def _data_root(data_dir=None) -> Path | None:
    try:
        return local_data_dir(data_dir, required=False)
    except FileNotFoundError:  # COMPSENSE_DATA_DIR names no folder: the checks say how to fix it
        return None


def _is_smoke(folder) -> bool:
    """The project's own smoke data (data/smoke) only needs the release's file layout, not its checksums."""
    return smoke_data_dir().exists() and Path(folder).resolve() == smoke_data_dir().resolve()


def release_checks(names, data_dir=None, manifest: dict | None = None) -> dict[str, Check]:
    """{name: Check} of the datasets among `names` that data/MANIFEST.json lists files for, each
    against the release as `reproduce` checks its stages' data (sizes and sha256; in the project's
    smoke data, its layout only): one given by name (a folder under the data folder), and one given by
    path whose folder is named as a released dataset ("/tmp/copy/scifact" is checked as SciFact: its
    results would carry that name). NanoBEIR sets and folders of other names are not checked.
    `compsense evaluate` refuses one whose files are present but altered (`Check.altered`)."""
    listed = (load_manifest() if manifest is None else manifest).get("datasets", {})
    by_folder = {entry.get("folder", key): key for key, entry in listed.items() if entry.get("files")}
    root = _data_root(data_dir)
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
        checks[name] = manifest_check(key, where, {**listed[key], "files": files}, checksums=not _is_smoke(where))
    return checks


def data_checks(needs: dict[str, set[str]], data_dir=None, nq_path=None, manifest: dict | None = None) -> list[Check]:
    """One Check per dataset in `needs` ({dataset: the stages that read it}, "nanobeir" for NanoBEIR
    sets), looked for in `data_dir` (None: COMPSENSE_DATA_DIR); NanoBEIR and NQ may come from the hub
    instead. A dataset the manifest lists files for is checked file by file, with sizes and sha256,
    except in the project's own smoke data (data/smoke), which only needs the same file layout."""
    manifest = load_manifest() if manifest is None else manifest
    listed = manifest.get("datasets", {})
    root = _data_root(data_dir)
    smoke = root is not None and _is_smoke(root)
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
            fix = "set nq_path to a local copy of sentence-transformers/natural-questions, or HF_HUB_OFFLINE=0 online"
            checks.append(Check(what, ok, f"{detail} {used}", fix))
        elif root is not None and listed.get(name, {}).get("files"):
            checks.append(manifest_check(name, root, listed[name], used, checksums=not smoke))
        elif "/" in name or os.sep in name:  # a dataset given by its path
            given = release_checks([name], manifest=manifest).get(name)  # named as a released dataset
            if given is not None:
                checks.append(replace(given, detail=f"{given.detail} {used}"))
            else:
                found = resolve(name).is_dir()
                detail = f"{'found' if found else 'no folder'} {resolve(name)} {used}"
                checks.append(Check(what, found, detail, f"check the path {name} in the profile"))
        else:
            found = complete.get(name, bool(root and (root / name).is_dir()))
            if name == "nanobeir" and not found and not hub_offline():
                checks.append(Check(what, True, f"from the hub {used}"))
                continue
            if name == "nanobeir":
                fix = (
                    f"{fix_root}: nanobeir/<NanoName>/corpus.parquet, queries.parquet, qrels.parquet for each "
                    "set; or HF_HUB_OFFLINE=0 on a machine with hub access"
                )
            else:
                get = listed.get(name, {}).get("get")
                where = f"get it from {get}; " if get else ""
                fix = f"{fix_root}: {name}/ ({where}{MANIFEST} says where each dataset comes from)"
            state = f"{'found' if found else 'missing or incomplete'} in {root}" if root else "no data folder"
            checks.append(Check(what, found, f"{state} {used}", fix))
    return checks
