"""The pipeline's stage command on a miniature project (what each DVC stage runs: `compsense stage`):
values injected, successes recorded, failures named in one line, the guards before a kernel starts,
the code key each stage's deps are generated from, and the kernel's progress. DVC's own skipping,
locking and caching are tested on a real DVC miniature in test_dvcfile."""

import json
import os

import pytest
import yaml
from miniproject import make_project, records, run_stages, start_driver
from miniproject import write_notebook as _notebook

from compsense.__main__ import main as cli
from compsense.pipeline import runner, stage


@pytest.fixture
def project(tmp_path, monkeypatch):
    return make_project(tmp_path, monkeypatch)


def test_stages_run_with_the_profiles_values_and_record_their_success(project):
    assert run_stages("smoke") == 0
    assert (project / "marker.txt").read_text() == "2"  # the profile's value was injected
    state = records(project)
    assert set(state) == {"01", "02"} and all(r["output"] and r["commit"] for r in state.values())
    assert all("commit" in r and r["seconds"] >= 0 for r in state.values())
    assert (project / "runs/smoke/notebooks/01_first.ipynb").exists()  # the executed copy DVC keeps
    (project / "params" / "smoke.yaml").write_text(yaml.safe_dump({"common": {"value": 3, "work_dir": "runs/smoke"}}))
    assert run_stages("smoke", ["01"]) == 0 and (project / "marker.txt").read_text() == "3"


def test_a_failing_stage_is_named_in_one_line_with_its_cell(project, capsys):
    (project / "params" / "smoke.yaml").write_text(yaml.safe_dump({"common": {"value": -1, "work_dir": "runs/smoke"}}))
    assert run_stages("smoke") == 1
    assert set(records(project)) == {"01"}  # 02 failed: not recorded as a success
    assert cli(["stage", "02", "--profile", "smoke"]) == 1
    err = capsys.readouterr().err.splitlines()[-1]  # papermill's cell bar goes to stderr before it
    assert err.startswith("compsense stage 02 --profile smoke: FAILED in cell "), err
    assert "AssertionError: value must be positive" in err and "runs/smoke/notebooks/" in err


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
    """SIGKILL the stages (process and kernel) in the middle of stage 02: stages.json keeps 01 only,
    never half-written, and the re-run's 02 finds its own checkpoints, so finished steps are not redone."""
    import signal
    import subprocess
    import time

    _notebook(project / "notebooks" / "02_second.ipynb", RESUMABLE)
    proc = start_driver(project, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
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
    assert set(records(project)) == {"01"}  # 02 did not finish, so it is not recorded as a success

    assert run_stages("smoke", ["02"]) == 0
    assert set(records(project)) == {"01", "02"}
    assert sorted(p.name for p in (project / "steps").glob("*.done")) == [f"{i}.done" for i in range(6)]
    ran = [int(x) for x in (project / "ran.log").read_text().split()]
    assert sorted(set(ran)) == list(range(6))
    assert len(ran) - len(set(ran)) <= 1  # at most the step in flight at the kill ran twice


def test_the_code_key_leaves_out_operational_modules_but_follows_their_imports(project):
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


def test_the_code_key_follows_the_code_a_notebook_imports(project):
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


def test_a_stage_that_names_no_notebook_or_a_profile_with_a_path_is_refused(project, capsys):
    with pytest.raises(runner.Refused, match=r"--only 99: no stage matches \['99'\]; the stages are 01, 02"):
        stage.run("smoke", "99")
    assert cli(["stage", "99", "--profile", "smoke"]) == 2
    with pytest.raises(runner.Refused, match="no '/', no '..'"):
        stage.run("../escape", "01")
    assert not (project / "runs").exists() and not (project.parent / "escape").exists()


def test_stages_json_is_merged_not_overwritten(tmp_path):
    path = tmp_path / "stages.json"
    rec = {"output": "runs/x/notebooks/01.ipynb", "work_dir": "w"}
    runner.record_stage(path, "01", rec)
    path.write_text(json.dumps({**json.loads(path.read_text()), "03": {"output": "o"}}))  # another writer
    state = runner.record_stage(path, "02", {**rec, "seconds": 3.0})
    assert set(state) == {"01", "02", "03"} == set(json.loads(path.read_text()))
    assert state["02"]["seconds"] == 3.0 and "seconds" not in state["01"]


def test_a_damaged_stages_json_is_refused_naming_it_before_the_kernel_starts(project):
    assert run_stages("smoke") == 0
    path = project / "runs/smoke/stages.json"
    path.write_text(path.read_text()[:25])
    (project / "marker.txt").unlink()
    with pytest.raises(runner.Refused, match=r"stages\.json: not readable JSON .*Fix: delete it"):
        stage.run("smoke", "01")
    assert not (project / "marker.txt").exists()  # refused before the notebook ran
    path.write_text("[1, 2]")
    with pytest.raises(runner.Refused, match=r"stages\.json: not a stage record"):
        stage.run("smoke", "01")


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


def test_figures_go_to_the_stages_own_folder_beside_the_work_dir(project):
    _figure_notebook(project, "runs/smoke/figures")
    assert run_stages("smoke", ["01"]) == 0
    assert (project / "runs/smoke/figures/01/01_drawn.html").exists() and not (project / "figures").exists()


def test_a_profile_writing_into_the_committed_figures_is_refused_before_running(project):
    _figure_notebook(project, "./figures")
    with pytest.raises(
        runner.Refused,
        match=r"params/smoke.yaml: `figures_dir: ./figures`: .*figures is inside .*figures.*"
        r"Fix: set `figures_dir: runs/smoke/figures`.*make figures",
    ):
        stage.run("smoke", "01")
    assert not (project / "figures").exists() and not (project / "marker.txt").exists()


@pytest.mark.parametrize("where", ["figures", "data/smoke/scifact", "compsense", "."])
def test_a_work_dir_or_figures_dir_in_committed_or_data_folders_is_refused_symlinks_too(project, where, tmp_path):
    (project / "params" / "smoke.yaml").write_text(yaml.safe_dump({"common": {"value": 2, "work_dir": where}}))
    with pytest.raises(runner.Refused, match=r"`work_dir: .*must not write into.*Fix:"):
        stage.run("smoke", "01")
    link = tmp_path / "innocent"
    (project / "figures").mkdir(exist_ok=True)
    link.symlink_to(project / "figures")
    _figure_notebook(project, str(link))
    with pytest.raises(runner.Refused, match=r"figures_dir: .*innocent`: .*is inside .*figures"):
        stage.run("smoke", "01")
    assert not any((project / "figures").iterdir()) and not (project / "marker.txt").exists()


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
    assert run_stages("smoke") == 0  # the release as listed: runs
    data.write_bytes(raw[: len(raw) // 2])  # half the file
    with pytest.raises(runner.Refused, match=r"data mrpc: .*msr_paraphrase_train.txt has .* bytes, expected.*Fix"):
        stage.run("smoke", "01")


@pytest.mark.slow
def test_the_stages_kernel_gets_the_commit_the_stage_started_at(project, monkeypatch):
    # what its result rows record (compsense.core.paths.code_commit), however HEAD moves meanwhile
    from compsense.core.paths import ENV_COMMIT

    monkeypatch.delenv(ENV_COMMIT, raising=False)
    monkeypatch.setattr(stage, "git_commit", lambda: "abc1234-dirty")
    _notebook(
        project / "notebooks" / "01_first.ipynb",
        f"import os\nfrom pathlib import Path\nPath('../commit.txt').write_text(os.environ['{ENV_COMMIT}'])",
    )
    assert run_stages("smoke", ["01"]) == 0
    assert (project / "commit.txt").read_text() == records(project)["01"]["commit"] == "abc1234-dirty"
    assert ENV_COMMIT not in os.environ  # set for the stage only


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
    while it runs: the stage prints the kernel's bar, which papermill's cell count never shows."""
    from compsense.pipeline import progress

    monkeypatch.setattr(progress, "PRINT_EVERY", 0.5)
    monkeypatch.setattr(progress, "KERNEL_EVERY", 0.2)
    _notebook(
        project / "notebooks" / "01_first.ipynb",
        "import time\nfrom tqdm.auto import tqdm\nfor step in tqdm(range(8), desc='train', unit='step'):\n"
        "    time.sleep(0.6)",
    )
    assert run_stages("smoke", ["01"]) == 0
    out = capsys.readouterr().out
    seen = [line for line in out.splitlines() if line.startswith("  [01] ") and " · train " in line]
    assert seen and all("/8 step" in line for line in seen), out
    assert progress.ENV not in os.environ
