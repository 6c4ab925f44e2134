"""dvc.yaml, written from what the notebooks really read: `python -m compsense.pipeline.dvcfile` writes
it, `--check` fails when the committed file has drifted (tests/test_dvcfile.py runs the check).

One DVC stage per profile and notebook, named `<profile>-<key>` (`dvc repro --glob 'smoke-*'` runs a
profile). Each stage's
- cmd is `python -m compsense stage <key> --profile <profile>` (compsense.pipeline.stage);
- deps are the notebook, every compsense module it imports (`runner.code_dependencies`: followed
  through every import, the operational modules left out), the package's resources, the data it reads
  (the project's own data/smoke folders; for the other profiles data/MANIFEST.json, the release each
  stage checks its data folder against before it runs, so dvc.yaml names no machine's paths), the
  library versions record (`<profile>-libraries`, re-run every time, unchanged unless a library moved)
  and the folders its upstream stages write (`stages.DEPENDS_ON`);
- params are its notebook's section of params/<profile>.yaml (`training_ab` for 02_training_ab: DVC's
  `-S` cannot set a key that starts with a digit) and `common`;
- outs are the folders it writes under the profile's work_dir (`stages.STAGE_WRITES`; results in
  results/<key>/, `layout.results_dir`), its figures folder and its executed notebook. Trained models
  and verifiers are `persist`: DVC keeps them while the stage re-runs, so training reuses a model whose
  recorded digest still matches instead of training it again, as the notebooks always did.

Profiles that share another profile's work_dir (study extends local into runs/local) get no stages
of their own: DVC refuses two stages writing one folder; they are `dvc exp run -S ...` lines on the
profile they extend (docs/usage.md).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import yaml

from compsense.core.paths import MANIFEST, SMOKE_DATA_DIR, repo_root
from compsense.pipeline import stage
from compsense.pipeline.profiles import load_profile, section_name
from compsense.pipeline.runner import WHERE_PARAMETERS, code_dependencies, module_dependencies
from compsense.pipeline.stages import DEPENDS_ON, data_needs, notebooks, stage_key

DVC_YAML = "dvc.yaml"
PROFILES = ("smoke", "local", "paper")  # each with a work_dir of its own (study shares local's)
COMMAND = "python -m compsense"
# What the report stage runs (report.py reads the stages' tables, never recomputes them), with every module
# these import (`runner.module_dependencies`).
REPORT_CODE = ("compsense/pipeline/report.py", "compsense/pipeline/stage.py")
HEADER = (
    "# Written by `python -m compsense.pipeline.dvcfile` from the notebooks' imports and params/<profile>.yaml:\n"
    "# do not edit by hand (tests/test_dvcfile.py fails when this file drifts from them). Run a profile with\n"
    "# `dvc repro --glob 'smoke-*'` (or `make reproduce PROFILE=smoke`); see docs/usage.md.\n"
)


def _rel(path: Path) -> str:
    return path.relative_to(repo_root()).as_posix()


def data_deps(nb: Path, params: dict) -> list[str]:
    """What notebook `nb` reads of the datasets, by the runner's own reading (`stages.data_needs`): the
    project's own data/smoke/<name> folders when the profile reads data/smoke, else data/MANIFEST.json
    (the release it checks its data folder against); and any file inside the repository a parameter
    names (a user's sentences): an edit to such a file re-runs the stage."""
    names = set(data_needs({nb: params})[0])
    found = [MANIFEST] if names else []
    if params.get("data_dir") == SMOKE_DATA_DIR:
        found = sorted(f"{SMOKE_DATA_DIR}/{n}" for n in names if (repo_root() / SMOKE_DATA_DIR / n).is_dir())
    named = {
        item
        for name, value in params.items()
        if name not in WHERE_PARAMETERS
        for item in (value if isinstance(value, list) else [value])
        if isinstance(item, str) and item.strip() and not Path(item).is_absolute() and (repo_root() / item).is_file()
    }
    return found + sorted(named)


def upstream_deps(profile: str, common: dict, key: str) -> list[str]:
    """The work_dir folders written by the stages `key` reads from (`DEPENDS_ON`; not their figures)."""
    figures = {stage.figures_folder(common, profile, up) for up in DEPENDS_ON.get(key, [])}
    return [
        f for up in DEPENDS_ON.get(key, []) for f, _ in stage.stage_folders(profile, common, up) if f not in figures
    ]


def pipeline(profiles=PROFILES, command: str = COMMAND) -> dict:
    """dvc.yaml as a mapping: `<profile>-libraries` and `<profile>-<key>` for every notebook, each
    running `<command> stage ...`."""
    root = repo_root()
    resources = ["compsense/resources"] if (root / "compsense" / "resources").is_dir() else []
    code = {nb: sorted({_rel(p) for p in code_dependencies(nb)}) + resources for nb in notebooks()}
    stages: dict[str, dict] = {}
    for profile in profiles:
        data = load_profile(profile)
        common = data["common"]
        libraries = f"runs/{profile}/{stage.LIBRARIES}.json"
        stages[f"{profile}-{stage.LIBRARIES}"] = {
            "cmd": f"{command} stage {stage.LIBRARIES} --profile {profile}",
            "always_changed": True,
            "outs": [{libraries: {"cache": False}}],
        }
        for nb in notebooks():
            key = stage_key(nb)
            params = {**common, **(data.get(section_name(nb)) or {})}
            outs = [{f: {"persist": True}} if keep else f for f, keep in stage.stage_folders(profile, common, key)]
            outs.append(stage.executed_notebook(profile, nb).as_posix())
            sections = ["common", *([section_name(nb)] if section_name(nb) in data else [])]
            stages[f"{profile}-{key}"] = {
                "cmd": f"{command} stage {key} --profile {profile}",
                "deps": [
                    _rel(nb),
                    *code[nb],
                    *data_deps(nb, params),
                    *upstream_deps(profile, common, key),
                    libraries,
                ],
                "params": [{f"params/{profile}.yaml": sections}],
                "outs": outs,
            }
        stages[f"{profile}-{stage.REPORT}"] = {
            "cmd": f"{command} stage {stage.REPORT} --profile {profile}",
            "deps": [
                *(_rel(p) for p in module_dependencies(*(c for c in REPORT_CODE if (root / c).is_file()))),
                *(p for key, entry in stages.items() if key.startswith(f"{profile}-") for p in _paths(entry["outs"])),
            ],
            "outs": [f"runs/{profile}/{stage.REPORT}"],
        }
    return {"stages": stages}


def _paths(outs: list) -> list[str]:
    return [next(iter(o)) if isinstance(o, dict) else o for o in outs]


def render(profiles=PROFILES, command: str = COMMAND) -> str:
    return HEADER + yaml.safe_dump(pipeline(profiles, command), sort_keys=False, width=120)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="exit 1 when dvc.yaml differs from what it would write")
    args = parser.parse_args(argv)
    path = repo_root() / DVC_YAML
    text = render()
    if args.check:
        current = path.read_text(encoding="utf-8") if path.exists() else ""
        if current != text:
            print(
                f"{DVC_YAML} is out of date with the notebooks' imports or the profiles: run "
                "`python -m compsense.pipeline.dvcfile` and commit it",
                file=sys.stderr,
            )
            return 1
        print(f"{DVC_YAML}: up to date")
        return 0
    path.write_text(text, encoding="utf-8")
    print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
