"""Profiles (smoke, local, paper): one YAML per profile in params/ that papermill injects.

A profile file has a `common` section (parameters every notebook may declare) and one section per
notebook stem. A notebook receives `common` merged with its own section, restricted to the
parameters its `parameters` cell declares (papermill would otherwise inject unknown names).
"""
from __future__ import annotations

import ast
import json
from pathlib import Path

import yaml

from .paths import repo_root

PROFILES = ("smoke", "local", "paper")


def params_dir() -> Path:
    return repo_root() / "params"


def load_profile(profile: str) -> dict:
    path = params_dir() / f"{profile}.yaml"
    if not path.exists():
        known = ", ".join(sorted(p.stem for p in params_dir().glob("*.yaml")))
        raise FileNotFoundError(f"{path}: no such profile; known profiles: {known}")
    data = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
    if not isinstance(data, dict) or "common" not in data:
        raise ValueError(f"{path}: a profile must be a mapping with a `common` section")
    return data


def parameters_cell(notebook: str | Path) -> str | None:
    """Source of the cell tagged `parameters`, or None when the notebook has none."""
    nb = json.loads(Path(notebook).read_text(encoding="utf-8"))
    for cell in nb.get("cells", []):
        if cell.get("cell_type") == "code" and "parameters" in cell.get("metadata", {}).get("tags", []):
            src = cell["source"]
            return "".join(src) if isinstance(src, list) else src
    return None


def declared_parameters(notebook: str | Path) -> dict:
    """Names and default values assigned in the notebook's `parameters` cell."""
    src = parameters_cell(notebook)
    if src is None:
        raise ValueError(f"{notebook}: no code cell tagged `parameters`; add one (papermill needs it)")
    declared = {}
    for node in ast.parse(src).body:
        if isinstance(node, (ast.Assign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            for target in targets:
                if isinstance(target, ast.Name):
                    declared[target.id] = ast.literal_eval(node.value)
    return declared


def notebook_parameters(profile: str, notebook: str | Path) -> dict:
    """The parameters papermill injects into `notebook` for `profile`.

    Raises when the notebook declares a parameter the profile does not set: a profile must set
    every parameter, or a batch run would silently fall back to the smoke defaults.
    """
    notebook = Path(notebook)
    data = load_profile(profile)
    merged = {**(data.get("common") or {}), **(data.get(notebook.stem) or {})}
    declared = declared_parameters(notebook)
    missing = sorted(set(declared) - set(merged))
    if missing:
        raise KeyError(
            f"params/{profile}.yaml does not set {missing} declared by {notebook.name}; "
            f"add them under `common:` or `{notebook.stem}:`"
        )
    return {k: merged[k] for k in declared}
