"""Profiles (smoke, local, paper): one YAML per profile in params/ that papermill injects.

A profile file has a `common` section (parameters every notebook may declare) and one section per
notebook, named by its stem less the number (`training_ab:` for 02_training_ab.ipynb, `section_name`).
A notebook receives `common` merged with its own section, restricted to the
parameters its `parameters` cell declares (papermill would otherwise inject unknown names).
"""

from __future__ import annotations

import ast
import copy
import difflib
import json
import re
from pathlib import Path
from typing import Sequence

import yaml

from compsense.core.paths import repo_root
from compsense.pipeline import schema
from compsense.pipeline.stages import notebooks, shown

PROFILES = ("smoke", "local", "study", "paper")
# A profile name becomes params/<name>.yaml and runs/<name>/: no separators, no '..'.
_PROFILE_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]*")


def params_dir() -> Path:
    return repo_root() / "params"


def check_profile_name(profile: str) -> str:
    """`profile`, if it is safe to use in params/<profile>.yaml and runs/<profile>/ (else ValueError)."""
    if not isinstance(profile, str) or not _PROFILE_NAME.fullmatch(profile) or ".." in profile:
        raise ValueError(
            f"profile name {profile!r}: use letters, digits, '-', '_' and '.' only (no '/', no '..'); "
            "it names params/<profile>.yaml and the folder runs/<profile>/"
        )
    return profile


def load_profile(profile: str, overrides: Sequence[str] = ()) -> dict:
    """params/<profile>.yaml, checked: a section or key no notebook declares (a typo) is an error naming it.

    `overrides`: "SECTION.KEY=VALUE" strings (VALUE in YAML: `verifiers.regimes=[frozen]`) that
    replace values the file sets (never add one), so one run can narrow a profile
    without a copy of it; the run record keeps them (their values reach each stage's fingerprint).
    Every value is then checked against the notebooks' schema (`check_values`), before anything runs.
    """
    path = params_dir() / f"{check_profile_name(profile)}.yaml"
    data = _read_extended(path, ())
    if "common" not in data:
        raise ValueError(f"{path}: a profile must be a mapping with a `common` section")
    check_profile_keys(path, data)
    if overrides:  # each replaces a key the file sets, so the check above covers it
        data = apply_overrides(data, overrides)
    data = _numbers(data)
    check_values(path, data, overrides)
    return data


def check_values(path: Path, data: dict, overrides: Sequence[str] = ()) -> None:
    """Refuse a profile (with its `overrides` applied) whose values a notebook's schema
    (compsense.pipeline.schema) does not allow: ValueError in one line naming where the value came from
    (the `--set` that gave it, else the profile file), the parameter, the value and what is allowed."""
    given = {(s, k): o for o in overrides for s, k, _ in [parse_override(o)]}
    common = data.get("common") or {}
    found: dict[str, str] = {}
    for stem in schema.SCHEMA:
        section = data.get(section_name(stem)) or {}
        for name, text in schema.problems(stem, {**common, **section}):
            top = name.split(".")[0]  # a key of a group ("training.lr") belongs to its parameter's section
            owner = section_name(stem) if not name or top in section else "common"
            # the --set that gave it: the key itself, or the whole mapping it sits in
            source = given.get((owner, name)) or given.get((owner, top))
            source = source and f"--set {source}"
            label = f"`{owner}.{name}` = " if name else f"`{owner}`: "
            found.setdefault(f"{owner}.{name}", f"{source or shown(path)}: {label}{text}")
    if found:
        first, *rest = found.values()
        more = f" (and {len(rest)} more: {', '.join(list(found)[1:])})" if rest else ""
        raise ValueError(first + more)


EXTENDS = "extends"  # `extends: local`: this profile is local's, with the sections' keys it sets replaced


def _read_extended(path: Path, seen: tuple) -> dict:
    """The profile at `path`, with the profile it `extends` under it: each section of the base, its
    keys replaced (or added) by this file's; a chain is followed, a cycle is an error naming it."""
    if not path.exists():
        known = ", ".join(sorted(p.stem for p in params_dir().glob("*.yaml") if p.stem != "pieces"))
        raise FileNotFoundError(f"{path}: no such profile; known profiles: {known}")
    data = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
    if not isinstance(data, dict):
        raise ValueError(f"{path}: a profile must be a mapping with a `common` section")
    base_name = data.pop(EXTENDS, None)
    if base_name is None:
        return data
    if path.stem in seen or str(base_name) in (*seen, path.stem):
        raise ValueError(
            f"{path}: `{EXTENDS}: {base_name}` makes a cycle ({' -> '.join((*seen, path.stem, str(base_name)))})"
        )
    base = _read_extended(params_dir() / f"{check_profile_name(str(base_name))}.yaml", (*seen, path.stem))
    for section, values in data.items():
        if not isinstance(values, dict) or not isinstance(base.get(section), dict):
            base[section] = values
        else:
            base[section] = {**base[section], **values}
    return base


def section_name(notebook: str | Path) -> str:
    """The profile section of a notebook (a path, a stem or a section): its stem less the leading number,
    `training_ab` for 02_training_ab.ipynb. Why not the stem: DVC reads `dvc exp run -S` with Hydra's
    override grammar, whose keys cannot start with a digit, so `-S 'params/local.yaml:02_training_ab.seeds=..'`
    was refused and no notebook's value could be set from an experiment."""
    return re.sub(r"^\d+_", "", Path(str(notebook)).stem)


def parse_override(text: str) -> tuple[str, str, object]:
    """("verifiers", "regimes", ["frozen"]) from "verifiers.regimes=[frozen]"; a key inside a parameter's
    mapping keeps its path ("verifiers.training.lr=0.01" gives ("verifiers", "training.lr", 0.01)), as DVC's
    `-S` writes it; the notebook's stem names its section too ("04_verifiers.regimes=[frozen]", as runs
    recorded their overrides before sections lost their number); ValueError names the fix."""
    name, sep, raw = str(text).partition("=")
    section, dot, key = name.strip().partition(".")
    if not sep or not dot or not section or not key or "" in key.split("."):
        raise ValueError(
            f"--set {text!r}: write SECTION.KEY=VALUE, e.g. --set verifiers.regimes=[frozen], "
            "--set verifiers.training.lr=0.01 or --set common.device=cpu (VALUE is read as YAML)"
        )
    try:
        value = yaml.safe_load(raw) if raw.strip() else None
    except yaml.YAMLError as err:
        raise ValueError(f"--set {text!r}: VALUE is not YAML ({err.__class__.__name__}); quote strings") from None
    return section_name(section.strip()), key.strip(), value


def apply_overrides(data: dict, overrides: Sequence[str]) -> dict:
    """A copy of the profile `data` with each "SECTION.KEY=VALUE" (or "SECTION.KEY.INNER=VALUE", a key of
    a parameter's mapping) applied; a key the profile does not set is refused (an override replaces a
    value, it never adds a parameter the profile forgot)."""
    out = copy.deepcopy(data)
    for text in overrides:
        section, key, value = parse_override(text)
        *path, last = key.split(".")
        values = out.get(section)
        for step in path:
            values = values.get(step) if isinstance(values, dict) else None
        if not isinstance(values, dict) or last not in values:
            hint = _did_you_mean(f"{section}.{key}", _dotted(out))
            raise ValueError(f"--set {text!r}: the profile sets no `{section}.{key}`{hint}; sections: {', '.join(out)}")
        values[last] = value
    return out


def _dotted(data: dict, prefix: str = "") -> list[str]:
    """Every key path a profile sets: "verifiers.regimes", "verifiers.training.lr", ..."""
    return [
        path
        for k, v in data.items()
        for path in ([f"{prefix}{k}"] if prefix else []) + (_dotted(v, f"{prefix}{k}.") if isinstance(v, dict) else [])
    ]


# PyYAML follows YAML 1.1, where `1e-3` (no dot) is a string; in a profile it is always meant as a number.
_FLOAT = re.compile(r"^[+-]?(\d+\.?\d*|\.\d+)[eE][+-]?\d+$")


def _numbers(value):
    """`value` with strings written as exponent numbers ("1e-3", "2E5") read as floats, recursively."""
    if isinstance(value, dict):
        return {k: _numbers(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_numbers(v) for v in value]
    if isinstance(value, str) and _FLOAT.match(value.strip()):
        return float(value)
    return value


def check_profile_keys(path: Path, data: dict) -> None:
    """Every section is `common` or a notebook's section (`section_name`), and every key is a parameter
    that notebook (for `common`: some notebook) declares; otherwise a misspelt `max_step:` would silently
    leave the default."""
    folder = params_dir().parent / "notebooks"
    found = [nb for nb in sorted(folder.glob("*.ipynb")) if parameters_cell(nb) is not None]
    declared = {section_name(nb): set(declared_parameters(nb)) for nb in found}
    names = {section_name(nb): nb.name for nb in found}
    if not declared:
        return  # no notebooks beside params/ (an installed copy): nothing to check against
    for section, values in data.items():
        if section != "common" and section not in declared:
            renamed = section_name(section)
            hint = (
                f"; it is `{renamed}` now (a section is the notebook's name less its number: DVC's -S cannot "
                "set a key that starts with a digit)"
                if renamed in declared and renamed != section
                else _did_you_mean(section, declared)
            )
            raise ValueError(
                f"{path}: unknown section `{section}`{hint}; sections are `common` and the notebooks' names "
                f"less their number: {', '.join(declared)}"
            )
        if values is None:
            continue
        if not isinstance(values, dict):
            raise ValueError(f"{path}: section `{section}` must be a mapping of parameter names to values")
        known = set().union(*declared.values()) if section == "common" else declared[section]
        for key in values:
            if key not in known:
                owner = "any notebook" if section == "common" else names[section]
                raise ValueError(
                    f"{path}: `{section}.{key}` is not a parameter of {owner}{_did_you_mean(key, known)}; "
                    "fix the name, or declare it in the notebook's `parameters` cell"
                )


def _did_you_mean(name, choices) -> str:
    close = difflib.get_close_matches(str(name), sorted(choices), n=1)
    return f" (did you mean `{close[0]}`?)" if close else ""


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


def notebook_parameters(profile: str, notebook: str | Path, data: dict | None = None) -> dict:
    """The parameters papermill injects into `notebook` for `profile` (`data`: the profile as
    `load_profile` read it, so a run reads its profile once, not half before and half after an edit).

    Raises when the notebook declares a parameter the profile does not set: a profile must set
    every parameter, or a batch run would silently fall back to the smoke defaults.
    """
    notebook = Path(notebook)
    data = load_profile(profile) if data is None else data
    merged = {**(data.get("common") or {}), **(data.get(section_name(notebook)) or {})}
    declared = declared_parameters(notebook)
    missing = sorted(set(declared) - set(merged))
    if missing:
        raise KeyError(
            f"params/{profile}.yaml does not set {missing} declared by {notebook.name}; "
            f"add them under `common:` or `{section_name(notebook)}:`"
        )
    params = {k: merged[k] for k in declared}
    bad = schema.problems(notebook.stem, params)  # what papermill injects is what the schema allows
    if bad:
        raise ValueError(f"params/{profile}.yaml, {notebook.name}: " + "; ".join(f"`{k}` = {t}" for k, t in bad))
    return params


def stage_parameters(profile: str, overrides=()) -> dict[Path, dict]:
    """{notebook: the parameters the runner injects for `profile`, with `overrides` (--set) on top} of every
    notebook with a parameters cell."""
    data = load_profile(profile, overrides)
    return {nb: notebook_parameters(profile, nb, data) for nb in notebooks() if parameters_cell(nb) is not None}
