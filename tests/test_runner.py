"""The runner on a miniature project: two stages, skip when unchanged, stop dependents on failure."""

import json
import os

import pytest
import yaml
from miniproject import make_project, start_driver
from miniproject import summary as _summary
from miniproject import write_notebook as _notebook

from compsense.pipeline import runner


@pytest.fixture
def project(tmp_path, monkeypatch):
    return make_project(tmp_path, monkeypatch)


def test_runs_skips_and_reruns_on_change(project, capsys):
    assert runner.reproduce("smoke", out="runs/smoke/first") == 0
    assert (project / "marker.txt").read_text() == "2"  # the profile's value was injected
    assert {k: v["status"] for k, v in _summary(project, "first")["stages"].items()} == {"01": "ok", "02": "ok"}
    assert "commit" in _summary(project, "first")  # taken at the start: the code the stages ran
    assert (project / "runs/smoke/first/01_first.ipynb").exists()
    report = (project / "runs/smoke/first/report.md").read_text()
    assert "## Stages" in report and "| 01 | ok |" in report
    assert "No results yet" in report  # stages that write no tables are named, not silently missing
    assert (project / "runs/smoke/first/report.html").exists()

    assert runner.reproduce("smoke", out="runs/smoke/second") == 0
    assert {k: v["status"] for k, v in _summary(project, "second")["stages"].items()} == {
        "01": "skipped",
        "02": "skipped",
    }
    assert "skipped" in capsys.readouterr().out

    (project / "params" / "smoke.yaml").write_text(yaml.safe_dump({"common": {"value": 3, "work_dir": "runs/smoke"}}))
    assert runner.reproduce("smoke", out="runs/smoke/third", only=["02"]) == 0
    assert _summary(project, "third")["stages"]["02"]["status"] == "ok"
    assert "01" not in _summary(project, "third")["stages"]


def test_an_override_reaches_the_stage_reruns_it_and_is_recorded(project):
    assert runner.reproduce("smoke", out="runs/smoke/first") == 0
    assert runner.reproduce("smoke", out="runs/smoke/narrow", overrides=["common.value=5"]) == 0
    assert (project / "marker.txt").read_text() == "5"
    assert {k: v["status"] for k, v in _summary(project, "narrow")["stages"].items()} == {"01": "ok", "02": "ok"}
    assert _summary(project, "narrow")["overrides"] == ["common.value=5"]
    assert (project / "params" / "smoke.yaml").read_text().count("value: 2") == 1  # the profile is untouched
    with pytest.raises(runner.Refused, match="sets no `common.valeu`"):
        runner.reproduce("smoke", out="runs/smoke/typo", overrides=["common.valeu=5"])


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


def test_killed_mid_stage_then_rerun_resumes(project):
    """SIGKILL the whole run (runner and kernel) in the middle of stage 02; the re-run skips 01, re-runs
    02, and 02's own checkpoints mean finished steps are not redone."""
    import os
    import signal
    import subprocess
    import time

    _notebook(project / "notebooks" / "02_second.ipynb", RESUMABLE)
    proc = start_driver(project, "runs/smoke/killed", stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
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


def test_fingerprint_leaves_out_operational_modules_but_follows_their_imports(project):
    pkg = project / "compsense"
    (pkg / "__init__.py").write_text("")
    (pkg / "core").mkdir(exist_ok=True)
    (pkg / "core" / "__init__.py").write_text("")
    (pkg / "core" / "paths.py").write_text("from compsense.core.rows import r\n")
    (pkg / "core" / "rows.py").write_text("r = 1\n")
    nb = project / "notebooks" / "01_first.ipynb"
    _notebook(nb, "from compsense.core.paths import r")
    deps = {p.relative_to(pkg).as_posix() for p in runner.code_dependencies(nb)}
    assert deps == {"__init__.py", "core/__init__.py", "core/rows.py"}
    before = runner.fingerprint(nb, {}, [])
    (pkg / "core" / "paths.py").write_text("from compsense.core.rows import r  # where files go\n")
    assert runner.fingerprint(nb, {}, []) == before
    (pkg / "core" / "rows.py").write_text("r = 2\n")
    assert runner.fingerprint(nb, {}, []) != before


def test_notebook_00_does_not_reach_the_near_miss_rules():
    """Notebook 00 draws four sentences' cosines: an edit to the generator's rules must not re-run it
    (it did, through the families registry and the pair builders)."""
    from compsense.core.paths import repo_root

    deps = {
        p.relative_to(repo_root()).as_posix()
        for p in runner.code_dependencies(repo_root() / "notebooks" / "00_the_problem.ipynb")
    }
    assert "compsense/figures/problem.py" in deps and "compsense/data/family_names.py" in deps
    assert not [d for d in deps if d.startswith("compsense/data/negatives/")], sorted(deps)
    assert not set(runner.OPERATIONAL) & deps


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


WRITES_OUTPUT = (
    "from pathlib import Path\nout = Path('..') / work_dir / 'negatives'\n"
    "out.mkdir(parents=True, exist_ok=True)\n"
    "(out / 'pairs.txt').write_text('p' * value)\n"
    "(Path('..') / work_dir / 'cache').mkdir(exist_ok=True)\n"
    "(Path('..') / work_dir / 'cache' / 'c.bin').write_text('c')"
)


def _reasons(project, name):
    return {k: v.get("reason") for k, v in _summary(project, name)["stages"].items()}


def test_a_deleted_or_cut_output_reruns_its_stage_and_says_why(project, capsys):
    _notebook(project / "notebooks" / "01_first.ipynb", WRITES_OUTPUT)
    assert runner.reproduce("smoke", out="runs/smoke/a") == 0
    state = json.loads((project / "runs/smoke/stages.json").read_text())
    assert list(state["01"]["outputs"]) == ["negatives/pairs.txt"]  # cache/ and run folders are not outputs
    assert state["01"]["outputs"]["negatives/pairs.txt"].startswith("2:")  # size and sha256
    (project / "runs/smoke/cache/c.bin").unlink()
    assert runner.reproduce("smoke", out="runs/smoke/b") == 0
    assert set(_reasons(project, "b").values()) == {"unchanged since its last success"}

    (project / "runs/smoke/negatives/pairs.txt").unlink()
    assert runner.reproduce("smoke", out="runs/smoke/c") == 0
    assert "output" in _reasons(project, "c")["01"] and "pairs.txt is missing" in _reasons(project, "c")["01"]
    assert _summary(project, "c")["stages"]["02"]["status"] == "skipped"  # 01's results are the same ones
    assert "pairs.txt is missing" in capsys.readouterr().out

    (project / "runs/smoke/negatives/pairs.txt").write_text("p")  # cut short
    assert runner.reproduce("smoke", out="runs/smoke/d") == 0
    assert "pairs.txt changed since the stage wrote it" in _reasons(project, "d")["01"]

    (project / "runs/smoke/negatives/pairs.txt").write_text("px")  # same size, other bytes
    assert runner.reproduce("smoke", out="runs/smoke/e") == 0
    assert "pairs.txt changed since the stage wrote it" in _reasons(project, "e")["01"]


def test_an_upstream_output_changed_after_it_was_written_reruns_the_stages_that_read_it(project):
    _notebook(project / "notebooks" / "01_first.ipynb", WRITES_OUTPUT)
    assert runner.reproduce("smoke", out="runs/smoke/a") == 0
    (project / "runs/smoke/negatives/pairs.txt").write_text("x")  # cut by hand, 01 not asked to run
    assert runner.reproduce("smoke", only=["02"], out="runs/smoke/b") == 0
    assert "upstream stage(s) 01" in _reasons(project, "b")["02"]


def test_changed_data_dir_or_libraries_rerun_and_say_why(project, monkeypatch):
    assert runner.reproduce("smoke", out="runs/smoke/a") == 0
    data = project / "data" / "mrpc" / "msr_paraphrase_train.txt"
    data.write_text(data.read_text()[:4])  # a truncated copy
    assert runner.reproduce("smoke", out="runs/smoke/b") == 0
    reasons = _reasons(project, "b")
    assert reasons["01"] == f"data changed: {data}"
    assert reasons["02"].startswith("upstream stage(s) 01 produced new results")

    other = project / "data2"
    (other / "mrpc").mkdir(parents=True)
    (other / "mrpc" / "msr_paraphrase_train.txt").write_text(data.read_text())
    monkeypatch.setenv("COMPSENSE_DATA_DIR", str(other))
    assert runner.reproduce("smoke", out="runs/smoke/c") == 0
    assert _reasons(project, "c")["01"].startswith("data dir changed")

    real = runner.library_versions
    monkeypatch.setattr(runner, "library_versions", lambda: {**real(), "torch": "0.0.1"})
    assert runner.reproduce("smoke", out="runs/smoke/d") == 0
    assert "library versions changed: torch" in _reasons(project, "d")["01"]


def test_a_parameter_naming_a_file_or_dataset_is_an_input(project):
    nq = project / "nq.jsonl"
    nq.write_text('{"query": "q", "answer": "a"}\n')
    inputs = runner.stage_inputs(
        "02", {"nq_path": "nq.jsonl", "eval_datasets": ["mrpc", "nanoscifact"], "work_dir": "runs/smoke"}, {}
    )
    assert set(inputs["files"]) == {str(nq), str(project / "data/mrpc/msr_paraphrase_train.txt")}
    assert inputs["data_dir"] == str((project / "data").resolve())
    # a dataset named by its path: its files are inputs (an edit re-runs the stage); work_dir is not one
    (project / "runs/smoke").mkdir(parents=True)
    (project / "runs/smoke/junk.txt").write_text("x")
    by_path = runner.stage_inputs("02", {"eval_datasets": ["data/mrpc"], "work_dir": "runs/smoke"}, {})
    assert str(project / "data/mrpc/msr_paraphrase_train.txt") in by_path["files"]
    assert not any("junk.txt" in f for f in by_path["files"])


def test_only_that_matches_no_stage_is_refused(project):
    with pytest.raises(runner.Refused, match=r"--only 99: no stage matches \['99'\]; the stages are 01, 02"):
        runner.reproduce("smoke", only=["99"])
    from compsense.__main__ import main

    assert main(["reproduce", "--profile", "smoke", "--only", "99"]) == 2
    assert not (project / "runs").exists() or not any((project / "runs").rglob("summary.json"))


def test_profile_name_with_a_path_is_refused_before_writing(project, tmp_path):
    with pytest.raises(runner.Refused, match="no '/', no '..'"):
        runner.reproduce("../escape")
    assert not (project / "runs").exists() and not (project.parent / "escape").exists()


def test_a_held_lock_refuses_a_second_run(project):
    with runner.run_lock(project / "runs" / "smoke", "profile smoke"):
        with pytest.raises(runner.Refused, match=r"another `compsense reproduce` is running on profile smoke \(pid "):
            runner.reproduce("smoke", out="runs/smoke/second")
    assert not (project / "runs/smoke/second").exists()
    assert runner.reproduce("smoke", out="runs/smoke/after") == 0  # released on exit


def test_run_folders_are_unique_within_a_second(tmp_path):
    folders = {runner.new_run_dir(tmp_path) for _ in range(3)}
    assert len(folders) == 3 and all(p.is_dir() for p in folders)


def test_stages_json_is_merged_not_overwritten(tmp_path):
    path = tmp_path / "stages.json"
    rec = {"fingerprint": "f", "work_dir": "w", "outputs": {"a.txt": 1}}
    runner.record_stage(path, "01", rec)
    path.write_text(json.dumps({**json.loads(path.read_text()), "03": {"fingerprint": "g"}}))  # another writer
    state = runner.record_stage(path, "02", {**rec, "outputs": {"a.txt": 3}})
    assert set(state) == {"01", "02", "03"} == set(json.loads(path.read_text()))
    assert state["01"]["outputs"] == {}  # a.txt now belongs to 02, which rewrote it last


def test_a_damaged_stages_json_is_refused_naming_it(project):
    assert runner.reproduce("smoke", out="runs/smoke/a") == 0
    path = project / "runs/smoke/stages.json"
    path.write_text(path.read_text()[:25])
    with pytest.raises(runner.Refused, match=r"stages\.json: not readable JSON .*Fix: delete it"):
        runner.reproduce("smoke", out="runs/smoke/b")
    path.write_text("[1, 2]")
    with pytest.raises(runner.Refused, match=r"stages\.json: not a stage record"):
        runner.reproduce("smoke", out="runs/smoke/b")


def _figure_notebook(project, figures_dir):
    """Stage 01 declares figures_dir and draws one figure (an HTML file) into it."""
    import nbformat

    nb = nbformat.v4.new_notebook()
    nb.metadata = {"kernelspec": {"display_name": "Python 3", "language": "python", "name": "python3"}}
    nb.cells = [
        nbformat.v4.new_code_cell(
            "value = 1\nwork_dir = 'runs/smoke'\nfigures_dir = 'runs/smoke/figures'", metadata={"tags": ["parameters"]}
        ),
        nbformat.v4.new_code_cell(
            "from pathlib import Path\nout = Path('..') / figures_dir\n"
            "out.mkdir(parents=True, exist_ok=True)\n"
            "(out / '01_drawn.html').write_text('x')"
        ),
    ]
    nbformat.write(nb, project / "notebooks" / "01_first.ipynb")
    (project / "params" / "smoke.yaml").write_text(
        yaml.safe_dump({"common": {"value": 2, "work_dir": "runs/smoke", "figures_dir": figures_dir}})
    )


def test_figures_go_to_the_run_folder_and_the_report_shows_them(project):
    _figure_notebook(project, "runs/smoke/figures")
    assert runner.reproduce("smoke", out="runs/smoke/first") == 0
    assert (project / "runs/smoke/figures/01_drawn.html").exists() and not (project / "figures").exists()
    assert _summary(project, "first")["figures_dir"] == str(project / "runs/smoke/figures")
    md = (project / "runs/smoke/first/report.md").read_text()
    assert "- [01_drawn](../figures/01_drawn.html)" in md
    assert md.index("## Figures") < md.index("## Run metadata")  # the answer before how it was run


def test_a_profile_writing_into_the_committed_figures_is_refused_before_running(project):
    _figure_notebook(project, "./figures")
    with pytest.raises(
        runner.Refused,
        match=r"params/smoke.yaml: `figures_dir: ./figures`: .*figures is inside .*figures.*"
        r"Fix: set `figures_dir: runs/smoke/figures`.*make figures",
    ):
        runner.reproduce("smoke", out="runs/smoke/first")
    assert not (project / "figures").exists() and not (project / "runs").exists()


@pytest.mark.parametrize("where", ["figures", "data/smoke/scifact", "compsense", "."])
def test_out_or_a_figures_dir_in_committed_or_data_folders_is_refused_symlinks_too(project, where, tmp_path):
    with pytest.raises(runner.Refused, match=r"--out .*must not write into.*Fix:"):
        runner.reproduce("smoke", out=where)
    link = tmp_path / "innocent"
    (project / "figures").mkdir(exist_ok=True)
    link.symlink_to(project / "figures")
    _figure_notebook(project, str(link))
    with pytest.raises(runner.Refused, match=r"figures_dir: .*innocent`: .*is inside .*figures"):
        runner.reproduce("smoke", out="runs/smoke/first")
    assert not (project / "runs").exists() and not any((project / "figures").iterdir())
    # given on the command line, the refusal names the --set, not the profile file
    with pytest.raises(runner.Refused, match=r"^--set common.figures_dir=.*innocent: .*is inside .*figures"):
        runner.reproduce("smoke", out="runs/smoke/first", overrides=[f"common.figures_dir={link}"])


def test_without_figures_dir_figures_default_to_the_work_dir(project):
    assert runner.reproduce("smoke", out="runs/smoke/first") == 0
    assert _summary(project, "first")["figures_dir"] == str(project / "runs/smoke/figures")
    assert "runs/smoke/figures` yet." in (project / "runs/smoke/first/report.md").read_text()  # said, not skipped


REUSES_MODEL = (
    "from pathlib import Path\nmodel = Path('..') / work_dir / 'models' / 'm.bin'\n"
    "model.parent.mkdir(parents=True, exist_ok=True)\n"
    "if not model.exists():\n    model.write_text('weights')\n"
    "(Path('..') / work_dir / 'models' / 'scores.txt').write_text(str(value))"
)


def test_an_output_a_rerun_reused_stays_in_the_record_and_its_loss_reruns_the_stage(project):
    _notebook(project / "notebooks" / "01_first.ipynb", REUSES_MODEL)
    assert runner.reproduce("smoke", out="runs/smoke/a") == 0
    (project / "params" / "smoke.yaml").write_text("common:\n  value: 3\n  work_dir: runs/smoke\n")
    assert runner.reproduce("smoke", out="runs/smoke/b") == 0  # re-runs, reuses m.bin, rewrites scores
    state = json.loads((project / "runs/smoke/stages.json").read_text())
    assert set(state["01"]["outputs"]) == {"models/m.bin", "models/scores.txt"}  # the reused file too
    (project / "runs/smoke/models/m.bin").unlink()
    assert runner.reproduce("smoke", out="runs/smoke/c") == 0
    assert "m.bin is missing" in _reasons(project, "c")["01"]


def test_a_dataset_cut_or_altered_against_the_manifest_refuses_the_run(project):
    import hashlib

    data = project / "data" / "mrpc" / "msr_paraphrase_train.txt"
    raw = data.read_bytes()
    manifest = {
        "datasets": {
            "mrpc": {
                "folder": "mrpc",
                "files": {data.name: {"bytes": len(raw), "sha256": hashlib.sha256(raw).hexdigest()}},
            }
        }
    }
    (project / "data" / "MANIFEST.json").write_text(json.dumps(manifest))
    assert runner.reproduce("smoke", out="runs/smoke/a") == 0  # the release as listed: runs
    data.write_bytes(raw[: len(raw) // 2])  # half the file
    with pytest.raises(runner.Refused, match=r"data mrpc: .*msr_paraphrase_train.txt has .* bytes, expected.*Fix"):
        runner.reproduce("smoke", out="runs/smoke/b")
    assert not (project / "runs/smoke/b").exists()


@pytest.mark.slow
def test_the_stages_kernels_get_the_commit_the_run_started_at(project, monkeypatch):
    # what their result rows record (compsense.core.paths.code_commit), however HEAD moves meanwhile
    from compsense.core.paths import ENV_COMMIT

    monkeypatch.delenv(ENV_COMMIT, raising=False)
    monkeypatch.setattr(runner, "git_commit", lambda: "abc1234-dirty")
    _notebook(
        project / "notebooks" / "01_first.ipynb",
        f"import os\nfrom pathlib import Path\nPath('../commit.txt').write_text(os.environ['{ENV_COMMIT}'])",
    )
    assert runner.reproduce("smoke", out="runs/smoke/first", only=["01"]) == 0
    assert (project / "commit.txt").read_text() == _summary(project, "first")["commit"] == "abc1234-dirty"
    assert ENV_COMMIT not in os.environ  # set for the stages only


# ---------------------------------------------------------------------------------------------
# A stage's own progress (compsense.pipeline.progress)


def test_a_bar_reads_as_count_total_unit_and_pace():
    from compsense.pipeline import progress

    slow = {"desc": "train", "n": 12.0, "total": 100.0, "unit": "step", "elapsed": 374.0, "rate": None}
    assert progress.bar_text(slow) == "train 12/100 step (31.2 s/step)"
    fast = {"desc": "Batches", "n": 3, "total": 40, "unit": "it", "elapsed": 1.5, "rate": 2.0}
    assert progress.bar_text(fast) == "Batches 3/40 it (2.0 it/s)"
    unknown = {"desc": "", "n": 5, "total": None, "unit": "it", "elapsed": 0.0, "rate": None}
    assert progress.bar_text(unknown) == "progress 5 it"
    assert progress.progress_line("02", 252.0, [slow, fast]) == (
        "  [02] 4:12 · train 12/100 step (31.2 s/step) · Batches 3/40 it (2.0 it/s)"
    )


def test_the_kernel_side_writes_its_open_bars_to_the_file(tmp_path):
    import io
    import threading
    import time

    from tqdm import tqdm

    from compsense.pipeline import progress

    path, stop = tmp_path / "bars.json", threading.Event()
    bar = tqdm(total=10, desc="train", unit="step", file=io.StringIO())
    hidden = tqdm(total=5, desc="hidden", disable=True)  # a disabled bar is no progress
    try:
        bar.update(3)
        thread = progress.kernel_progress(path, every=0.05, stop=stop)
        deadline = time.monotonic() + 10
        while not progress.read_bars(path) and time.monotonic() < deadline:
            time.sleep(0.05)
        bars = [b for b in progress.read_bars(path) if b["desc"] in ("train", "hidden")]
        assert [(b["desc"], b["n"], b["total"], b["unit"]) for b in bars] == [("train", 3.0, 10.0, "step")]
    finally:
        stop.set()
        bar.close()
        hidden.close()
    thread.join(timeout=5)
    assert not thread.is_alive()
    assert progress.kernel_progress(None) is None  # no file named (no $COMPSENSE_PROGRESS): nothing starts
    assert progress.read_bars(tmp_path / "absent.json") == [] and progress.read_bars(_torn(tmp_path)) == []


def _torn(tmp_path):
    path = tmp_path / "torn.json"
    path.write_text('{"bars": [{"desc"')
    return path


def test_the_runner_side_prints_a_line_when_the_bars_move_and_not_more_often_than_asked(monkeypatch):
    import time

    from compsense.pipeline import progress

    monkeypatch.delenv(progress.ENV, raising=False)
    lines = []

    def bars(n):
        return json.dumps({"bars": [{"desc": "train", "n": n, "total": 4, "unit": "step", "elapsed": 1.0}]})

    with progress.watch("02", every=0.0, poll=0.02, show=lines.append) as path:
        assert os.environ[progress.ENV] == str(path)  # the kernel the stage starts inherits it
        for n in (1, 2):
            path.write_text(bars(n))
            deadline = time.monotonic() + 5
            while len(lines) < n and time.monotonic() < deadline:
                time.sleep(0.02)
        time.sleep(0.1)  # unchanged bars: no new line
    assert [line.split(" · ")[1] for line in lines] == ["train 1/4 step (1.0 step/s)", "train 2/4 step (2.0 step/s)"]
    assert lines[0].startswith("  [02] 0:00 · ")
    assert progress.ENV not in os.environ and not path.exists()  # gone afterwards
    quiet = []
    with progress.watch("02", every=60.0, poll=0.02, show=quiet.append) as path:
        path.write_text(bars(1))
        time.sleep(0.2)
    assert quiet == []  # within the first `every` seconds nothing is printed


@pytest.mark.slow
def test_a_stage_shows_its_own_training_steps_not_only_cells(project, monkeypatch, capsys):
    """A cell that counts steps with tqdm (as every training and encoding loop does) is seen counting
    while it runs: the runner prints the kernel's bar, which papermill's cell count never shows."""
    from compsense.pipeline import progress

    monkeypatch.setattr(progress, "PRINT_EVERY", 0.5)
    monkeypatch.setattr(progress, "KERNEL_EVERY", 0.2)
    _notebook(
        project / "notebooks" / "01_first.ipynb",
        "import time\nfrom tqdm.auto import tqdm\nfor step in tqdm(range(8), desc='train', unit='step'):\n"
        "    time.sleep(0.6)",
    )
    assert runner.reproduce("smoke", out="runs/smoke/first", only=["01"]) == 0
    out = capsys.readouterr().out
    seen = [line for line in out.splitlines() if line.startswith("  [01] ") and " · train " in line]
    assert seen and all("/8 step" in line for line in seen), out
    assert progress.ENV not in os.environ
