"""dvc.yaml: generated from the notebooks' imports and the profiles, and DVC running it.

The first tests read the committed dvc.yaml against what compsense.pipeline.dvcfile would write now
(an import added to a module a notebook reaches, without regenerating, fails here). The slow ones run
real `dvc` on a miniature project (tests/miniproject.py): a second repro skips everything, a parameter
re-runs only the stage that reads it, a module only the stages whose notebooks import it, and a
second clone pulls what the first pushed to a directory remote and trains nothing.
"""

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from compsense.pipeline import dvcfile, stage
from compsense.pipeline.runner import code_dependencies
from compsense.pipeline.stages import notebooks

REPO = Path(dvcfile.__file__).resolve().parents[2]
DVC = shutil.which("dvc", path=str(Path(sys.executable).parent)) or shutil.which("dvc")


def _stages() -> dict:
    return yaml.safe_load((REPO / dvcfile.DVC_YAML).read_text(encoding="utf-8"))["stages"]


def _out_paths(entry: dict) -> list[str]:
    return [next(iter(o)) if isinstance(o, dict) else o for o in entry.get("outs", [])]


def test_the_committed_dvc_yaml_is_what_the_imports_and_profiles_give():
    assert (REPO / dvcfile.DVC_YAML).read_text(encoding="utf-8") == dvcfile.render(), (
        "dvc.yaml drifted from the notebooks' imports or params/: run `python -m compsense.pipeline.dvcfile`"
    )


def test_each_stage_depends_on_exactly_the_modules_its_notebook_reaches():
    stages = _stages()
    for nb in notebooks():
        key = nb.stem[:2]
        deps = {d for d in stages[f"local-{key}"]["deps"] if d.startswith("compsense/") and d.endswith(".py")}
        assert deps == {p.relative_to(REPO).as_posix() for p in code_dependencies(nb)}, nb.name
    # notebook 00 draws four sentences: none of the generator's rules is in its key
    assert not [d for d in stages["local-00"]["deps"] if d.startswith("compsense/data/negatives/")]
    assert not [d for d in stages["local-00"]["deps"] if d in ("compsense/core/paths.py", "compsense/core/banner.py")]


def test_no_two_stages_write_one_folder_and_every_upstream_folder_is_written_by_a_stage():
    stages = _stages()
    owners: dict[str, str] = {}
    for name, entry in stages.items():
        for out in _out_paths(entry):
            for other, owner in owners.items():
                inside = Path(out).is_relative_to(other) or Path(other).is_relative_to(out)
                assert not inside, f"{name} writes {out}, inside {owner}'s {other}: DVC refuses overlapping outputs"
            owners[out] = name
    for name, entry in stages.items():
        for dep in entry.get("deps", []):
            if dep.startswith("runs/"):
                assert dep in owners, f"{name} reads {dep}, which no stage writes"
                assert owners[dep].split("-")[0] == name.split("-")[0], "a stage reads only its own profile's outputs"


def test_local_stages_name_the_release_manifest_not_a_machines_data_folder():
    stages = _stages()
    assert "data/MANIFEST.json" in stages["local-02"]["deps"]
    assert not [d for e in stages.values() for d in e.get("deps", []) if d.startswith(("/", "..", "shared"))]
    assert "data/smoke/scifact" in stages["smoke-02"]["deps"]


def test_models_and_verifiers_persist_and_tables_live_in_their_stages_folder():
    stages = _stages()
    assert {"runs/local/models": {"persist": True}} in stages["local-02"]["outs"]
    assert {"runs/local/verifiers": {"persist": True}} in stages["local-04"]["outs"]
    assert "runs/local/results/05" in stages["local-05"]["outs"]
    assert stages["local-libraries"]["always_changed"] is True


# ---------------------------------------------------------------------------------------------
# real DVC on a miniature project

DRIVER = """
import sys
from pathlib import Path
root = Path(__file__).resolve().parent
from compsense.core import paths
from compsense.pipeline import dvcfile, profiles, runner, stage, stages
for module in (paths, profiles, runner, stages, dvcfile):
    module.repo_root = lambda: root
from compsense.pipeline.stage import main
sys.exit(main(sys.argv[4], sys.argv[2]))  # driver.py stage KEY --profile PROFILE
"""

# 01 writes the negatives 02 reads; 02 "trains" (a model file, once: it reuses one that is there, as
# the real notebook does by digest) and writes its table. Each notebook states an import of its own
# module, so the content key follows it (read by modulefinder, never run: the kernel has the real compsense).
NB01 = """
from pathlib import Path
if value is None:  # never true: the import is read, not run
    import compsense.first_rules
out = Path('..') / work_dir / 'negatives'
out.mkdir(parents=True, exist_ok=True)
(out / 'pairs.txt').write_text(f'value={value}')
"""
NB02 = """
from pathlib import Path
if value is None:  # never true: the import is read, not run
    import compsense.second_model
root = Path('..') / work_dir
model = root / 'models' / 'm.txt'
model.parent.mkdir(parents=True, exist_ok=True)
if not model.exists():
    model.write_text('trained')
    (root / 'trainings.log').open('a').write('trained\\n')
(root / 'results' / '02').mkdir(parents=True, exist_ok=True)
(root / 'results' / '02' / 't.txt').write_text((root / 'negatives' / 'pairs.txt').read_text() + f' lr={lr}')
"""


def _mini(root: Path) -> Path:
    from tests.miniproject import write_notebook

    (root / "notebooks").mkdir(parents=True)
    (root / "params").mkdir()
    (root / "compsense").mkdir()
    (root / "pyproject.toml").write_text("")
    (root / "compsense" / "__init__.py").write_text("")
    (root / "compsense" / "first_rules.py").write_text("RULES = 1\n")
    (root / "compsense" / "second_model.py").write_text("MODEL = 1\n")
    write_notebook(root / "notebooks" / "01_first.ipynb", NB01)
    write_notebook(root / "notebooks" / "02_second.ipynb", NB02)
    for name, extra in (("01_first", ""), ("02_second", "\nlr = 0.1")):
        nb = json.loads((root / "notebooks" / f"{name}.ipynb").read_text())
        nb["cells"][0]["source"] = f"value = 1\nwork_dir = 'runs/smoke'\ndata_dir = 'data/smoke'{extra}"
        (root / "notebooks" / f"{name}.ipynb").write_text(json.dumps(nb))
    (root / "params" / "smoke.yaml").write_text(yaml.safe_dump(_profile(0.1)))
    (root / "data" / "smoke" / "mrpc").mkdir(parents=True)  # the project's own data: a dependency of 01
    (root / "data" / "smoke" / "mrpc" / "msr_paraphrase_train.txt").write_text("stand-in\n")
    (root / "driver.py").write_text(DRIVER)
    (root / ".gitignore").write_text("runs/\n")
    return root


def _profile(lr: float) -> dict:
    return {"common": {"value": 2, "work_dir": "runs/smoke", "data_dir": "data/smoke"}, "second": {"lr": lr}}


def _run(cmd: list[str], cwd: Path, env: dict) -> str:
    done = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, f"{' '.join(cmd)}:\n{done.stdout}\n{done.stderr}"
    return done.stdout + done.stderr


def _ran(output: str) -> set[str]:
    return {line.split("'")[1] for line in output.splitlines() if line.startswith("Running stage")}


@pytest.mark.slow
@pytest.mark.skipif(DVC is None, reason="dvc is not installed (pip install -e '.[dev]' installs it)")
def test_dvc_repro_skips_reruns_only_what_changed_and_a_second_clone_pulls_instead_of_training(tmp_path, monkeypatch):
    from compsense.core import paths
    from compsense.pipeline import profiles, runner, stages

    root = _mini(tmp_path / "first")
    for module in (paths, profiles, runner, stages, dvcfile):
        monkeypatch.setattr(module, "repo_root", lambda: root)
    (root / "dvc.yaml").write_text(dvcfile.render(("smoke",), command=f"{sys.executable} driver.py"))
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")]),
        "GIT_AUTHOR_NAME": "t",
        "GIT_AUTHOR_EMAIL": "t@t",
        "GIT_COMMITTER_NAME": "t",
        "GIT_COMMITTER_EMAIL": "t@t",
    }
    _run(["git", "init", "-q"], root, env)
    _run([DVC, "init", "-q"], root, env)
    _run([DVC, "config", "core.analytics", "false"], root, env)
    repro = [DVC, "repro", "--glob", "smoke-*"]

    assert _ran(_run(repro, root, env)) == {"smoke-libraries", "smoke-01", "smoke-02", "smoke-report"}
    table = root / "runs/smoke/results/02/t.txt"
    assert table.read_text() == "value=2 lr=0.1"
    # the report `make figures` publishes, with dvc.lock's record of the stages and the runner's records
    summary = json.loads((root / "runs/smoke/report/summary.json").read_text())
    assert set(summary["stages"]) == {"01", "02"} and (root / "runs/smoke/report/report.md").is_file()
    assert {"smoke-01", "smoke-02"} <= set(summary["dvc_lock"])
    recorded = json.loads((root / "runs/smoke/stages.json").read_text())
    assert recorded["02"]["output"].endswith("02_second.ipynb") and recorded["02"]["commit"]
    assert _ran(_run(repro, root, env)) == {"smoke-libraries"}  # always runs; its record unchanged: nothing else

    # a parameter only 02 reads, set as an experiment (`dvc exp run -S`, Hydra's grammar: the reason a
    # section is the notebook's name less its number), re-runs only 02, and 02 reuses its persisted model
    _run(["git", "add", "-A"], root, env)
    _run(["git", "commit", "-qm", "first run"], root, env)
    exp = _run([DVC, "exp", "run", "-n", "lr2", "-S", "params/smoke.yaml:second.lr=0.2"], root, env)
    assert _ran(exp) == {"smoke-libraries", "smoke-02", "smoke-report"}
    assert table.read_text() == "value=2 lr=0.2"
    assert yaml.safe_load((root / "params/smoke.yaml").read_text()) == _profile(0.2)
    assert (root / "runs/smoke/trainings.log").read_text() == "trained\n"  # the model persisted: trained once

    # a module only 01 imports re-runs 01 (and the report of its new executed notebook), not 02, whose
    # input (01's negatives) is unchanged; a module only 02 imports re-runs 02
    (root / "compsense/first_rules.py").write_text("RULES = 2\n")
    assert _ran(_run(repro, root, env)) == {"smoke-libraries", "smoke-01", "smoke-report"}
    (root / "compsense/second_model.py").write_text("MODEL = 2\n")
    assert _ran(_run(repro, root, env)) == {"smoke-libraries", "smoke-02", "smoke-report"}

    # a second machine: clone, pull from the shared remote, and repro runs no notebook
    store = tmp_path / "store"
    _run([DVC, "remote", "add", "-d", "shared", str(store)], root, env)
    _run([DVC, "push", "-q"], root, env)
    _run(["git", "add", "-A"], root, env)
    _run(["git", "commit", "-qm", "pipeline"], root, env)
    second = tmp_path / "second"
    _run(["git", "clone", "-q", str(root), str(second)], tmp_path, env)
    _run([DVC, "pull", "-q"], second, env)
    assert (second / "runs/smoke/models/m.txt").read_text() == "trained"
    assert (second / "runs/smoke/results/02/t.txt").read_text() == "value=2 lr=0.2"
    assert _ran(_run(repro, second, env)) == {"smoke-libraries"}
    assert not (second / "runs/smoke/trainings.log").exists()  # nothing trained on the second machine


@pytest.mark.slow
def test_a_stage_that_fails_or_is_refused_says_so_in_one_line(tmp_path, monkeypatch, capsys):
    from compsense.core import paths
    from compsense.pipeline import profiles, runner, stages
    from tests.miniproject import write_notebook

    root = _mini(tmp_path)
    for module in (paths, profiles, runner, stages, dvcfile):
        monkeypatch.setattr(module, "repo_root", lambda: root)
    write_notebook(root / "notebooks" / "01_first.ipynb", "raise ValueError('the rows are empty')")
    nb = json.loads((root / "notebooks" / "01_first.ipynb").read_text())
    nb["cells"][0]["source"] = "value = 1\nwork_dir = 'runs/smoke'\ndata_dir = 'data/smoke'"
    (root / "notebooks" / "01_first.ipynb").write_text(json.dumps(nb))
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")]))
    assert stage.main("smoke", "01") == 1
    err = capsys.readouterr().err.strip()  # papermill's progress bar above it, never the kernel's traceback
    assert "Traceback" not in err and "FAILED in cell" in err.splitlines()[-1]
    assert err.splitlines()[-1].endswith(
        "ValueError: the rows are empty (the executed notebook shows the cell and its traceback: "
        "runs/smoke/notebooks/; --debug: here)"
    )
    assert stage.main("smoke", "09") == 2  # no such stage: refused, one line naming the stages there are
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "the stages are 01, 02" in err


def test_a_file_a_parameter_names_is_a_dependency_as_the_runner_counts_it():
    nb = next(n for n in notebooks() if n.stem.startswith("01"))
    params = {"data_dir": "data/smoke", "user_sentences_path": "data/smoke/README.md", "work_dir": "runs/smoke"}
    deps = dvcfile.data_deps(nb, params)
    assert "data/smoke/README.md" in deps and "data/smoke/mrpc" in deps  # the file, and 01's datasets
    assert "runs/smoke" not in deps  # where a stage writes is no input
    assert dvcfile.data_deps(nb, {**params, "data_dir": None, "user_sentences_path": None}) == ["data/MANIFEST.json"]
