"""A miniature project for runner tests (tests/test_runner.py, tests/test_faults.py): tiny notebooks
written by the test, a smoke profile, a stand-in data dir, and repo_root pointed at it all."""

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

# Runs `reproduce` in another process against the miniature at argv[1] (run folder argv[2]).
DRIVER = """
import sys
from pathlib import Path
root = Path(sys.argv[1])
from compsense.core import paths
from compsense.pipeline import profiles, runner, stages
for module in (paths, profiles, runner, stages):
    module.repo_root = lambda: root
try:
    sys.exit(runner.reproduce("smoke", out=sys.argv[2] if len(sys.argv) > 2 else None))
except runner.Refused as err:
    print(f"REFUSED: {err}")
    sys.exit(2)
"""


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


def summary(root: Path, name: str) -> dict:
    return json.loads((root / "runs" / "smoke" / name / "summary.json").read_text())


def statuses(root: Path, name: str) -> dict:
    return {k: v["status"] for k, v in summary(root, name)["stages"].items()}


def start_driver(root: Path, out: str | None = None, **kw) -> subprocess.Popen:
    """`reproduce` on the miniature in a new process (and session, so a test can kill the group)."""
    (root / "driver.py").write_text(DRIVER)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(CODE), os.environ.get("PYTHONPATH", "")])}
    return subprocess.Popen(
        [sys.executable, str(root / "driver.py"), str(root), *([out] if out else [])],
        cwd=root,
        env=env,
        start_new_session=True,
        **kw,
    )
