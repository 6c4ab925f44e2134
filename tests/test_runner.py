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
