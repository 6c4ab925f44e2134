"""A miniature project for the stage tests (tests/test_runner.py, tests/test_faults.py): tiny notebooks
written by the test, a smoke profile, a stand-in data dir, and repo_root pointed at it all. Its stages
run as DVC runs them, one `compsense stage` each (`run_stages`); DVC itself is tested in test_dvcfile."""

import json
import os
import subprocess
import sys
from pathlib import Path

import nbformat
import yaml

from compsense.core import paths
from compsense.pipeline import profiles, runner, stages

CODE = Path(runner.__file__).resolve().parents[2]  # the real checkout (repo_root is the miniature)

# Runs the miniature's stages in another process (its root argv[1]), as `dvc repro` would, one by one.
DRIVER = """
import sys
from pathlib import Path
root = Path(sys.argv[1])
from compsense.core import paths
from compsense.pipeline import profiles, runner, stages
for module in (paths, profiles, runner, stages):
    module.repo_root = lambda: root
sys.path.insert(0, sys.argv[2])
from miniproject import run_stages
try:
    sys.exit(run_stages("smoke"))
except runner.Refused as err:
    print(f"REFUSED: {err}")
    sys.exit(2)
"""


def run_stages(profile: str = "smoke", keys=None) -> int:
    """The miniature's stages in order, each as its DVC stage runs it (`stage.run`): 0 when every one
    succeeded, 1 at the first whose notebook failed (the rest do not run, as under `dvc repro`).
    Refused (a guard) propagates."""
    from compsense.pipeline import stage

    for nb in runner.select_stages(keys):
        try:
            stage.run(profile, stages.stage_key(nb))
        except runner.Refused:
            raise
        except Exception as err:
            if not hasattr(err, "ename"):  # not a cell's error: a bug
                raise
            return 1
    return 0


def records(root: Path, profile: str = "smoke") -> dict:
    """runs/<profile>/stages.json: each stage's last success."""
    return json.loads((root / "runs" / profile / "stages.json").read_text())


def write_notebook(path, body):
    nb = nbformat.v4.new_notebook()
    nb.metadata = {"kernelspec": {"display_name": "Python 3", "language": "python", "name": "python3"}}
    nb.cells = [
        nbformat.v4.new_code_cell("value = 1\nwork_dir = 'runs/smoke'", metadata={"tags": ["parameters"]}),
        nbformat.v4.new_code_cell(body),
    ]
    nbformat.write(nb, path)


def make_project(root: Path, monkeypatch) -> Path:
    """Stage 01 writes ../marker.txt (outside work_dir), stage 02 checks the parameter."""
    (root / "notebooks").mkdir()
    (root / "params").mkdir()
    (root / "pyproject.toml").write_text("")
    (root / "compsense").mkdir()
    write_notebook(
        root / "notebooks" / "01_first.ipynb", "from pathlib import Path\nPath('../marker.txt').write_text(str(value))"
    )
    write_notebook(root / "notebooks" / "02_second.ipynb", "assert value > 0, 'value must be positive'")
    (root / "params" / "smoke.yaml").write_text(yaml.safe_dump({"common": {"value": 2, "work_dir": "runs/smoke"}}))
    (root / "data" / "mrpc").mkdir(parents=True)  # the stages' data dir: a stand-in, never the real one
    (root / "data" / "mrpc" / "msr_paraphrase_train.txt").write_text("stand-in\n")
    monkeypatch.setenv(paths.ENV_DATA_DIR, str(root / "data"))
    for module in (paths, runner, profiles, stages):
        monkeypatch.setattr(module, "repo_root", lambda: root)
    return root


def start_driver(root: Path, **kw) -> subprocess.Popen:
    """The miniature's stages in a new process (and session, so a test can kill the group)."""
    (root / "driver.py").write_text(DRIVER)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(CODE), os.environ.get("PYTHONPATH", "")])}
    return subprocess.Popen(
        [sys.executable, str(root / "driver.py"), str(root), str(Path(__file__).parent)],
        cwd=root,
        env=env,
        start_new_session=True,
        **kw,
    )
