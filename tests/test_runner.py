"""The runner on a miniature project: two stages, skip when unchanged, stop dependents on failure."""
import json

import nbformat
import pytest
import yaml

from compsense import paths, runner


def _notebook(path, body):
    nb = nbformat.v4.new_notebook()
    nb.metadata = {"kernelspec": {"display_name": "Python 3", "language": "python", "name": "python3"}}
    nb.cells = [nbformat.v4.new_code_cell("value = 1\nwork_dir = 'runs/smoke'", metadata={"tags": ["parameters"]}),
                nbformat.v4.new_code_cell(body)]
    nbformat.write(nb, path)


@pytest.fixture
def project(tmp_path, monkeypatch):
    (tmp_path / "notebooks").mkdir()
    (tmp_path / "params").mkdir()
    (tmp_path / "pyproject.toml").write_text("")
    (tmp_path / "compsense").mkdir()
    _notebook(tmp_path / "notebooks" / "01_first.ipynb",
              "from pathlib import Path\nPath('../marker.txt').write_text(str(value))")
    _notebook(tmp_path / "notebooks" / "02_second.ipynb", "assert value > 0, 'value must be positive'")
    (tmp_path / "params" / "smoke.yaml").write_text(yaml.safe_dump({"common": {"value": 2, "work_dir": "runs/smoke"}}))
    monkeypatch.setattr(paths, "repo_root", lambda: tmp_path)
    monkeypatch.setattr(runner, "repo_root", lambda: tmp_path)
    from compsense import profiles

    monkeypatch.setattr(profiles, "repo_root", lambda: tmp_path)
    return tmp_path


def _summary(project, name):
    return json.loads((project / "runs" / "smoke" / name / "summary.json").read_text())


def test_runs_skips_and_reruns_on_change(project, capsys):
    assert runner.reproduce("smoke", out="runs/smoke/first") == 0
    assert (project / "marker.txt").read_text() == "2"  # the profile's value was injected
    assert {k: v["status"] for k, v in _summary(project, "first")["stages"].items()} == {"01": "ok", "02": "ok"}
    assert (project / "runs/smoke/first/01_first.ipynb").exists()
    report = (project / "runs/smoke/first/report.md").read_text()
    assert "## Stages" in report and "| 01 | ok |" in report
    assert "No results yet" in report  # stages that write no tables are named, not silently missing
    assert (project / "runs/smoke/first/report.html").exists()

    assert runner.reproduce("smoke", out="runs/smoke/second") == 0
    assert {k: v["status"] for k, v in _summary(project, "second")["stages"].items()} == {"01": "skipped",
                                                                                           "02": "skipped"}
    assert "skipped" in capsys.readouterr().out

    (project / "params" / "smoke.yaml").write_text(yaml.safe_dump({"common": {"value": 3, "work_dir": "runs/smoke"}}))
    assert runner.reproduce("smoke", out="runs/smoke/third", only=["02"]) == 0
    assert _summary(project, "third")["stages"]["02"]["status"] == "ok"
    assert "01" not in _summary(project, "third")["stages"]


def test_failure_stops_dependents_and_names_the_cell(project):
    (project / "params" / "smoke.yaml").write_text(yaml.safe_dump({"common": {"value": -1, "work_dir": "runs/smoke"}}))
    _notebook(project / "notebooks" / "03_third.ipynb", "print('never')")
    _notebook(project / "notebooks" / "05_fifth.ipynb", "print('never either')")
    assert runner.reproduce("smoke", out="runs/smoke/bad") == 1
    stages = _summary(project, "bad")["stages"]
    assert stages["01"]["status"] == "ok"
    assert stages["02"]["status"] == "failed"
    assert "value must be positive" in stages["02"]["error"]
    assert stages["02"]["cell"].startswith("cell ")
    assert stages["02"]["rerun"] == "python -m compsense reproduce --profile smoke --only 02"
    assert stages["03"]["status"] == "not run" and "02" in stages["03"]["reason"]
    assert stages["05"]["status"] == "not run"  # 05 needs 02 too


RESUMABLE = """
import os, time
from pathlib import Path
Path('../kernel.pid').write_text(str(os.getpid()))
done = Path('../steps'); done.mkdir(exist_ok=True)
for step in range(6):
    if (done / f'{step}.done').exists():
        continue  # finished before an interruption: not redone
    with open('../ran.log', 'a') as log:
        log.write(f'{step}\\n')
    time.sleep(0.4)
    tmp = done / f'.{step}.tmp'
    tmp.write_text('ok')
    os.replace(tmp, done / f'{step}.done')  # atomic: a kill never leaves a half-finished step
"""

DRIVER = """
import sys
from pathlib import Path
root = Path(sys.argv[1])
from compsense import paths, profiles, runner
for module in (paths, profiles, runner):
    module.repo_root = lambda: root
sys.exit(runner.reproduce("smoke", out=sys.argv[2]))
"""


def test_killed_mid_stage_then_rerun_resumes(project):
    """SIGKILL the whole run (runner and kernel) in the middle of stage 02; the re-run skips 01, re-runs
    02, and 02's own checkpoints mean finished steps are not redone."""
    import os
    import signal
    import subprocess
    import sys
    import time

    _notebook(project / "notebooks" / "02_second.ipynb", RESUMABLE)
    (project / "driver.py").write_text(DRIVER)
    from pathlib import Path

    code = Path(runner.__file__).resolve().parents[1]  # the real checkout (repo_root is the miniature here)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(code), os.environ.get("PYTHONPATH", "")])}
    proc = subprocess.Popen([sys.executable, str(project / "driver.py"), str(project), "runs/smoke/killed"],
                            cwd=project, env=env, start_new_session=True,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.time() + 120
    while not (project / "steps" / "2.done").exists():
        assert proc.poll() is None, "the run ended before it could be killed"
        assert time.time() < deadline, "stage 02 never reached step 2"
        time.sleep(0.05)
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()
    kernel = int((project / "kernel.pid").read_text())
    try:
        os.kill(kernel, signal.SIGKILL)  # the kernel may sit in its own session; the crash takes it too
    except ProcessLookupError:
        pass
    time.sleep(0.2)
    before = sorted(p.name for p in (project / "steps").glob("*.done"))
    assert 3 <= len(before) < 6  # killed mid-stage, with some steps done
    state = json.loads((project / "runs/smoke/stages.json").read_text())  # never half-written
    assert set(state) == {"01"}  # 02 did not finish, so it is not recorded as a success
    assert not (project / "runs/smoke/killed/summary.json").exists()

    assert runner.reproduce("smoke", out="runs/smoke/resumed") == 0
    stages = _summary(project, "resumed")["stages"]
    assert stages["01"]["status"] == "skipped" and stages["02"]["status"] == "ok"
    assert sorted(p.name for p in (project / "steps").glob("*.done")) == [f"{i}.done" for i in range(6)]
    ran = [int(x) for x in (project / "ran.log").read_text().split()]
    assert sorted(set(ran)) == list(range(6))
    assert len(ran) - len(set(ran)) <= 1  # at most the step in flight at the kill ran twice
    assert runner.reproduce("smoke", out="runs/smoke/again") == 0
    assert {v["status"] for v in _summary(project, "again")["stages"].values()} == {"skipped"}


def test_fingerprint_follows_the_code_a_notebook_imports(project):
    pkg = project / "compsense"
    (pkg / "__init__.py").write_text("")
    (pkg / "sub").mkdir()
    (pkg / "sub" / "__init__.py").write_text("")
    (pkg / "a.py").write_text("from .b import helper\n\ndef f():\n    from .sub import deep\n    return helper\n")
    (pkg / "b.py").write_text("helper = 1\n")
    (pkg / "sub" / "deep.py").write_text("from ..io_like import x\n")
    (pkg / "io_like.py").write_text("x = 2\n")
    (pkg / "unrelated.py").write_text("y = 3\n")
    nb = project / "notebooks" / "01_first.ipynb"
    _notebook(nb, "%time\nfrom compsense import a\nimport compsense.b")
    deps = {p.relative_to(pkg).as_posix() for p in runner.code_dependencies(nb)}
    assert deps == {"__init__.py", "a.py", "b.py", "sub/__init__.py", "sub/deep.py", "io_like.py"}

    before = runner.fingerprint(nb, {"value": 1}, [])
    (pkg / "unrelated.py").write_text("y = 4\n")
    assert runner.fingerprint(nb, {"value": 1}, []) == before  # code the notebook never reaches
    (pkg / "io_like.py").write_text("x = 5\n")  # reached through a -> sub.deep (inside a function)
    changed = runner.fingerprint(nb, {"value": 1}, [])
    assert changed != before
    assert runner.fingerprint(nb, {"value": 2}, []) != changed
    assert runner.fingerprint(nb, {"value": 1}, ["upstream-changed"]) != changed
