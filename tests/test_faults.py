"""Fault injection: what an unlucky or careless user does to files and runs, and what compsense
promises then (docs/promises.md). Each fault is applied to scratch copies written by the test:
truncate, delete, corrupt, run twice at once, kill mid-write. None of these may pass silently."""

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pandas as pd
import pytest
import torch
import yaml
from miniproject import CODE, make_project, records, run_stages, write_notebook

from compsense.__main__ import main as cli
from compsense.core import storage as io
from compsense.core.layout import results_file
from compsense.data import datasets as data
from compsense.data.datasets import DataError
from compsense.pipeline import runner, stage
from scripts import load_script

bundle = load_script("bundle")  # scripts/bundle.py

SLOW_STAGE = (
    "import time\nfrom pathlib import Path\nout = Path('..') / work_dir / 'negatives'\n"
    "out.mkdir(parents=True, exist_ok=True)\ntime.sleep(4)\n(out / 'pairs.txt').write_text('p' * 10)"
)


@pytest.fixture
def project(tmp_path, monkeypatch):
    root = make_project(tmp_path, monkeypatch)
    write_notebook(root / "notebooks" / "01_first.ipynb", SLOW_STAGE.replace("time.sleep(4)", "pass"))
    return root


def _mrpc(folder, n):
    rows = "".join(f"1\t{i}\t{i + 1}\tA {i} .\tB {i} .\n" for i in range(0, 2 * n, 2))
    path = folder / "mrpc" / "msr_paraphrase_test.txt"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\t".join(data._MRPC_HEADER) + "\n" + rows)
    return path


def _cut(path, keep=0.5):
    raw = path.read_bytes()
    path.write_bytes(raw[: int(len(raw) * keep)])


# ---------------------------------------------------------------------------------------------
# truncate and corrupt: an error naming the file and the fix, never a silent partial read


@pytest.mark.parametrize("fault", [_cut, lambda p: p.write_bytes(b"\x00garbage\xff" * 3)], ids=["truncate", "corrupt"])
def test_project_files_cut_or_corrupt_are_named_with_the_fix(tmp_path, fault):
    table = io.write_table(pd.DataFrame({"value": range(500)}), tmp_path / "results" / "verifiers.parquet")
    record = io.write_json(tmp_path / "verifier.json", {"kind": "F3", "dim": 384})
    for path, read in [(table, io.read_table), (record, io.read_json)]:
        fault(path)
        with pytest.raises(io.CorruptFile, match=rf"{path.name}: .*Fix: delete it"):
            read(path)


@pytest.mark.parametrize("fault", [_cut, lambda p: p.write_text('{"01": ')], ids=["truncate", "corrupt"])
@pytest.mark.slow
def test_stages_json_cut_or_corrupt_refuses_the_run_with_the_recovery(project, fault):
    assert run_stages("smoke") == 0
    state = project / "runs/smoke/stages.json"
    fault(state)
    with pytest.raises(runner.Refused, match=r"stages\.json: .*Fix: delete it .*dvc repro --force"):
        stage.run("smoke", "01")
    state.unlink()  # the recovery the message gives
    assert run_stages("smoke") == 0 and set(records(project)) == {"01", "02"}


def test_a_release_cut_at_a_line_boundary_is_refused(tmp_path):
    path = _mrpc(tmp_path, 1725)
    assert len(data.load_mrpc("test", tmp_path)) == 1725
    lines = path.read_text().splitlines(keepends=True)
    path.write_text("".join(lines[:869]))  # what `head -n 869` leaves: parses cleanly
    with pytest.raises(DataError, match="868 pairs, but the released file has 1,725"):
        data.load_mrpc("test", tmp_path)


def test_a_lone_surrogate_is_refused_at_load(tmp_path):
    path = tmp_path / "sentences.jsonl"
    path.write_text('{"sentence": "fine"}\n{"sentence": "broken \\udc80 here"}\n')
    with pytest.raises(DataError, match=rf"{path}:2: 'sentence' holds a lone surrogate"):
        data.load_sentences(path)


# ---------------------------------------------------------------------------------------------
# delete and change: a skip is only taken when outputs and data are as recorded


def test_bundle_never_deletes_the_data_dir(tmp_path):
    data_dir = tmp_path / "shared" / "data"
    path = _mrpc(data_dir, 3)
    with pytest.raises(bundle.UnsafeOut):
        bundle.build_bundle(
            tmp_path / "shared", "none", [], data_dir=str(data_dir), download=lambda *a: pytest.fail("nothing written")
        )
    assert path.exists() and len(path.read_text().splitlines()) == 4


# ---------------------------------------------------------------------------------------------
# run twice at once, kill mid-write


WRITER = """
import sys
import pandas as pd
from compsense.__main__ import main as cli
from compsense.core import storage as io
i = 0
while True:
    io.write_json(sys.argv[1], {"i": i, "pad": "x" * 300_000})
    io.write_table(pd.DataFrame({"i": [i] * 20_000}), sys.argv[2])
    i += 1
"""


@pytest.mark.slow
def test_killed_mid_write_leaves_the_old_or_the_new_file_whole(tmp_path):
    """SIGKILL a process that rewrites a JSON record and a parquet table in a loop, at several points:
    each file always reads back complete (a kill may leave a hidden .<name>.*.tmp beside it)."""
    record, table = tmp_path / "stages.json", tmp_path / "results.parquet"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(CODE), os.environ.get("PYTHONPATH", "")])}
    for delay in (0.9, 1.3, 1.7, 2.2):
        proc = subprocess.Popen([sys.executable, "-c", WRITER, str(record), str(table)], env=env)
        deadline = time.time() + 60
        while not table.exists():
            assert proc.poll() is None and time.time() < deadline
            time.sleep(0.02)
        time.sleep(delay - 0.8)
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        got = io.read_json(record)
        assert len(got["pad"]) == 300_000
        frame = io.read_table(table)
        assert len(frame) == 20_000 and frame["i"].nunique() == 1
    visible = sorted(p.name for p in tmp_path.iterdir() if not p.name.startswith("."))
    assert visible == ["results.parquet", "stages.json"]


# ---------------------------------------------------------------------------------------------
# a folder that cannot be written: refused in one line naming it and the fix, before anything runs


def _unwritable(tmp_path) -> Path:
    """A folder this process cannot write in: a read-only one, or, as root (whom file modes do not
    stop), a new folder in sysfs, which refuses new entries to everyone."""
    if os.geteuid() != 0:
        folder = tmp_path / "read-only"
        folder.mkdir()
        folder.chmod(0o555)
        return folder
    if not os.path.isdir("/sys/fs"):
        pytest.skip("root without sysfs: no folder here refuses a write")
    return Path("/sys/fs/compsense-test")


def _one_line(err: str) -> str:
    assert "Traceback" not in err and len(err.strip().splitlines()) == 1, err
    return err


def test_a_read_only_work_dir_refuses_the_stage_in_one_line(project, tmp_path, capsys):
    folder = _unwritable(tmp_path)
    (project / "params" / "smoke.yaml").write_text(yaml.safe_dump({"common": {"value": 2, "work_dir": str(folder)}}))
    assert cli(["stage", "01", "--profile", "smoke"]) == 2
    err = _one_line(capsys.readouterr().err)
    assert f"cannot write in {folder}" in err and "Fix: make it writable" in err, err
    assert f"params/smoke.yaml: `work_dir: {folder}`" in err, err  # where the folder came from
    assert not (project / "runs" / "smoke" / "stages.json").exists()  # no stage ran
    with pytest.raises(runner.Refused, match="cannot write in"):  # --debug: the error itself
        stage.run("smoke", "01")


def test_a_read_only_out_refuses_evaluate_in_one_line_before_the_model_loads(tmp_path, monkeypatch, capsys):
    from compsense.retrieval import evaluate

    monkeypatch.setattr(evaluate, "load_encoder", lambda *a, **k: pytest.fail("model loaded"))
    folder = _unwritable(tmp_path)
    args = ["evaluate", "tiny-bert", str(_beir(tmp_path / "data" / "toy")), "--out", str(folder / "out")]
    assert cli(args) == 2
    err = _one_line(capsys.readouterr().err)
    assert f"--out {folder / 'out'}: cannot write in {folder / 'out'}" in err and "Fix: pass --out a folder" in err


def _beir(folder: Path, n_docs: int = 6) -> Path:
    """A small BEIR folder: corpus.jsonl, queries.jsonl, qrels/test.tsv."""
    (folder / "qrels").mkdir(parents=True)
    docs = "".join(
        json.dumps({"_id": f"d{i}", "title": "", "text": f"document number {i}"}) + "\n" for i in range(n_docs)
    )
    (folder / "corpus.jsonl").write_text(docs)
    queries = "".join(json.dumps({"_id": f"q{i}", "text": f"number {i}"}) + "\n" for i in range(3))
    (folder / "queries.jsonl").write_text(queries)
    (folder / "qrels" / "test.tsv").write_text(
        "query-id\tcorpus-id\tscore\n" + "".join(f"q{i}\td{i}\t1\n" for i in range(3))
    )
    return folder


# ---------------------------------------------------------------------------------------------
# an end-to-end verifier whose encoder/ was deleted: named, and trained again, never the hub


def _e2e_triplets(n=16):
    rows = [
        (f"The {s} is near the {o}.", f"A {s} near a {o}.", f"The {o} is near the {s}.")
        for s, o in [("dog", "ball"), ("cat", "box"), ("man", "cup"), ("girl", "tree")] * (n // 4)
    ]
    return pd.DataFrame(rows, columns=["anchor", "positive", "negative"])


def test_an_end_to_end_verifier_without_its_encoder_is_trained_again(tiny_encoder, tmp_path):
    from compsense.verifiers import training

    out = tmp_path / "F2-end2end"
    from compsense.verifiers.config import Compute, VerifierTraining

    kwargs = dict(training=VerifierTraining(budget_examples=8, batch_size=4), compute=Compute(show_progress=False))
    training.fit_verifier("F2", "end2end", tiny_encoder, _e2e_triplets(), out, **kwargs)
    shutil.rmtree(out / "encoder")  # the verifier's weights and record remain
    with pytest.warns(UserWarning, match=r"F2-end2end/encoder: missing .*training it again"):
        _, encoder, _ = training.fit_verifier("F2", "end2end", tiny_encoder, _e2e_triplets(), out, **kwargs)
    assert (out / "encoder" / "modules.json").is_file() and encoder is not tiny_encoder


def test_verifier_weights_damaged_at_the_same_size_are_named_and_trained_again(tiny_encoder, tmp_path):
    from compsense.core.storage import CorruptFile
    from compsense.verifiers import architectures as V
    from compsense.verifiers import training
    from compsense.verifiers.config import Compute, VerifierTraining

    out = tmp_path / "F3-frozen"
    kwargs = dict(training=VerifierTraining(budget_examples=8, batch_size=4), compute=Compute(show_progress=False))
    first, _, _ = training.fit_verifier("F3", "frozen", tiny_encoder, _e2e_triplets(), out, **kwargs)
    weights = out / V.WEIGHTS_FILE
    data = bytearray(weights.read_bytes())
    data[-64:] = bytes(255 - b for b in data[-64:])  # bytes overwritten in place: the size is unchanged
    weights.write_bytes(bytes(data))
    with pytest.raises(CorruptFile, match=r"verifier.safetensors: its content differs from the sha256"):
        V.load(out)  # reranking and the explorer load verifiers this way: never scored with
    with pytest.warns(UserWarning, match=r"its content differs .*training it again"):
        again, _, _ = training.fit_verifier("F3", "frozen", tiny_encoder, _e2e_triplets(), out, **kwargs)
    assert all(torch.equal(a, b) for a, b in zip(first.state_dict().values(), again.state_dict().values()))  # seeded
    V.load(out)  # whole again


def test_reranking_or_exploring_with_a_missing_end_to_end_encoder_names_the_folder(tiny_encoder, tmp_path, caplog):
    from compsense.core.layout import verifier_dir
    from compsense.explorer.core import discover_verifiers
    from compsense.verifiers import architectures as V
    from compsense.verifiers import rerank

    folder = verifier_dir(tmp_path, "identity-small", 42, "F3-end2end")
    V.save(V.create("F3", seed=0), folder, extra={"encoder": "encoder/"})  # as training saves it, minus encoder/
    fix = r"F3-end2end/encoder: missing .* Fix: re-train it: re-run notebook 04 .*PROFILE-04"
    with pytest.raises(V.MissingEncoder, match=fix):
        rerank.find_methods(tmp_path, ["F1", "F3"], ["frozen", "end2end"], tiny_encoder)
    found = discover_verifiers(tmp_path)  # never offered to score maps of the selected encoder instead
    assert not any("F3-end2end" in label for label in found)
    assert any("MissingEncoder" in r.message and "F3-end2end/encoder: missing" in r.message for r in caplog.records)


# ---------------------------------------------------------------------------------------------
# the explorer: a text cut to the encoder's length, or one with no tokens, is said so on screen


def _about_the_text(notes: list[str]) -> list[str]:
    """The explorer's notes about the texts, without the one that says the shipped MiniLM scorers read
    another encoder's maps than the tiny test encoder's (tests/test_scorers.py covers that one)."""
    return [n for n in notes if "learned from maps of another encoder" not in n]


def test_the_explorer_says_when_it_cut_a_text_or_a_text_has_no_tokens(tiny_encoder, tmp_path):
    from compsense.explorer.core import Session, scores_html

    session = Session(tmp_path)
    session.add_encoder("tiny (test)", tiny_encoder, first=True)
    limit = tiny_encoder.max_seq_length
    view = session.view(" ".join(["the dog"] * 3000), "The dog chased the cat.")  # 6,000 words
    assert len(view.query_tokens) == limit - 2  # what the encoder kept: [CLS] and [SEP] are not on the map
    (note,) = _about_the_text(view.notes)
    assert note.startswith("sentence A is 6,002 tokens long, cut to the encoder's max_seq_length of ")
    assert f"read only its first {limit - 2} tokens" in note and "cut to the encoder" in scores_html(view)
    view = session.view("", "\u200b\u200b")  # empty, and only characters the tokenizer drops
    assert [n.split(" has ")[0] for n in view.notes if "has no tokens" in n] == ["sentence A", "sentence B"]


def test_the_explorer_near_miss_table_says_when_the_edits_fall_after_the_cut(tiny_encoder, tmp_path):
    from compsense.explorer.core import Session, table_html

    session = Session(tmp_path)
    session.add_encoder("tiny (test)", tiny_encoder, first=True)
    short = session.near_miss_table("The dog chased the cat across the yard.")
    assert len(short) > 1 and _about_the_text(short.attrs["notes"]) == []
    table = session.near_miss_table("so " * 1000 + "The dog chased the cat across the yard.")
    near = len(table) - 1
    assert near > 0
    cut, hidden = _about_the_text(table.attrs["notes"])
    assert cut.startswith("sentence A is 1,") and "cut to the encoder's max_seq_length" in cut
    assert hidden.startswith(f"{near} of {near} near-misses differ from sentence A only after the cut")
    assert "only after the cut" in table_html(table)


# ---------------------------------------------------------------------------------------------
# evaluate: a dataset named under the data folder is checked against data/MANIFEST.json


def _release(folder, monkeypatch) -> dict:
    """`folder`'s files as data/MANIFEST.json would list them for SciFact (sizes and sha256), patched
    in as the release; returns the files entry."""
    from compsense.core.storage import sha256_file
    from compsense.data import release

    files = {
        p.relative_to(folder).as_posix(): {"bytes": p.stat().st_size, "sha256": sha256_file(p)}
        for p in folder.rglob("*")
        if p.is_file()
    }
    monkeypatch.setattr(release, "load_manifest", lambda path=None: {"datasets": {"scifact": {"files": files}}})
    return files


def test_evaluate_refuses_a_cut_dataset_or_names_its_results_a_subset(tmp_path, monkeypatch, capsys):
    from compsense.retrieval import evaluate

    folder = _beir(tmp_path / "data" / "scifact", n_docs=12)
    files = _release(folder, monkeypatch)
    corpus = folder / "corpus.jsonl"
    corpus.write_text("".join(corpus.read_text().splitlines(keepends=True)[:6]))  # half the corpus, whole lines
    args = ["evaluate", "tiny-bert", "scifact", "--data-dir", str(tmp_path / "data"), "--out", str(tmp_path / "out")]
    with monkeypatch.context() as m:
        m.setattr(evaluate, "load_encoder", lambda *a, **k: pytest.fail("model loaded"))
        assert cli(args) == 2
    err = _one_line(capsys.readouterr().err)
    assert (
        f"data scifact: {corpus} has {corpus.stat().st_size:,} bytes, expected {files['corpus.jsonl']['bytes']:,}"
        in err
    )
    assert "Fix: replace the files named with the release's" in err and "--allow-subset" in err
    assert cli([*args, "--allow-subset"]) == 0  # asked for: evaluated, under a name that says so
    tidy = io.read_table(tmp_path / "out" / "results" / "retrieval.parquet")
    assert set(tidy.dataset) == {"scifact-subset"} and set(tidy.n_docs) == {6}
    assert [p.name for p in (tmp_path / "out" / "mteb").rglob("scifact*.json")] == ["scifact-subset.json"]


def test_evaluate_checks_a_dataset_given_by_path_under_a_released_name(tmp_path, monkeypatch, capsys):
    from compsense.data import release
    from compsense.retrieval import evaluate

    folder = _beir(tmp_path / "copy" / "scifact", n_docs=12)
    _release(folder, monkeypatch)
    mine = _beir(tmp_path / "copy" / "my-corpus", n_docs=4)  # not a released name: the user's own, unchecked
    assert release.release_checks([str(mine)]) == {}
    assert release.release_checks([str(folder)])[str(folder)].ok  # the release's files, by path
    corpus = folder / "corpus.jsonl"
    corpus.write_text("".join(corpus.read_text().splitlines(keepends=True)[:6]))
    args = ["evaluate", "tiny-bert", str(folder), "--out", str(tmp_path / "out")]
    with monkeypatch.context() as m:
        m.setattr(evaluate, "load_encoder", lambda *a, **k: pytest.fail("model loaded"))
        assert cli(args) == 2
    err = _one_line(capsys.readouterr().err)
    assert f"data scifact: {corpus.resolve()} has {corpus.stat().st_size:,} bytes" in err and "--allow-subset" in err
    assert cli([*args, "--allow-subset"]) == 0
    tidy = io.read_table(tmp_path / "out" / "results" / "retrieval.parquet")
    assert set(tidy.dataset) == {"scifact-subset"}


def test_a_profile_dataset_given_by_path_is_checked_against_the_release(tmp_path):
    from compsense.core.storage import sha256_file
    from compsense.data import release
    from compsense.pipeline.stages import data_needs

    folder = _beir(tmp_path / "copy" / "scifact", n_docs=12)
    corpus = folder / "corpus.jsonl"
    manifest = {
        "datasets": {
            "scifact": {"files": {"corpus.jsonl": {"bytes": corpus.stat().st_size, "sha256": sha256_file(corpus)}}}
        }
    }
    stage = {Path("02_training_ab.ipynb"): {"eval_datasets": [str(folder), str(tmp_path / "nowhere")]}}
    checks = {c.what: c for c in release.data_checks(*data_needs(stage), manifest=manifest)}
    assert checks["data scifact"].ok and str(folder.resolve()) in checks["data scifact"].detail
    assert not checks[f"data {tmp_path / 'nowhere'}"].ok  # a path that is not there: named, not altered
    corpus.write_text("".join(corpus.read_text().splitlines(keepends=True)[:6]))  # half the corpus
    cut = {c.what: c for c in release.data_checks(*data_needs(stage), manifest=manifest)}["data scifact"]
    assert cut.altered and str(corpus.resolve()) in cut.detail and "(stages 02)" in cut.detail


# ---------------------------------------------------------------------------------------------
# issue 51: every writer behind one guard; the runner's own errors in one line with the fix


def _unwritable_inside(folder: Path) -> Path:
    """`folder` made a place nothing can be written in: read-only, or, as root (whom file modes do not
    stop), a link to sysfs, which refuses new entries to everyone."""
    if os.geteuid() != 0:
        folder.mkdir(parents=True, exist_ok=True)
        folder.chmod(0o555)
        return folder
    if not os.path.isdir("/sys/fs"):
        pytest.skip("root without sysfs: no folder here refuses a write")
    folder.parent.mkdir(parents=True, exist_ok=True)
    folder.symlink_to("/sys/fs", target_is_directory=True)
    return folder


def test_a_read_only_folder_a_stage_writes_under_the_work_dir_refuses_the_run_up_front(project, capsys):
    negatives = _unwritable_inside(project / "runs/smoke/negatives")  # stage 01 writes negatives/pairs.txt
    assert cli(["stage", "01", "--profile", "smoke"]) == 2
    err = _one_line(capsys.readouterr().err)
    assert f"{negatives} (stage 01 writes there): cannot write in {negatives}" in err and "Fix: make it" in err, err
    assert not (project / "runs/smoke/stages.json").exists()  # refused before any stage ran
    # deeper down too: a read-only folder below one a stage writes into
    if os.geteuid() != 0:
        negatives.chmod(0o755)
    else:
        negatives.unlink()
    deep = _unwritable_inside(project / "runs/smoke/negatives/old/deeper")
    with pytest.raises(runner.Refused, match=rf"{deep} \(stage 01 writes there\): cannot write in {deep}"):
        stage.run("smoke", "01")


def test_a_work_dir_inside_the_profiles_own_data_dir_is_refused(project, tmp_path, monkeypatch):
    """The guard protects the data folder a profile names, not only $COMPSENSE_DATA_DIR and shared/data."""
    monkeypatch.delenv("COMPSENSE_DATA_DIR")
    data = tmp_path / "elsewhere" / "data"
    (data / "mrpc").mkdir(parents=True)
    nb = project / "notebooks" / "01_first.ipynb"
    write_notebook(nb, "pass")
    book = json.loads(nb.read_text())
    book["cells"][0]["source"] = "value = 1\nwork_dir = 'runs/smoke'\ndata_dir = None\nfigures_dir = None"
    nb.write_text(json.dumps(book))
    for work_dir, figures_dir in [(str(data / "runs"), None), ("runs/smoke", str(data / "figures"))]:
        common = {"value": 2, "work_dir": work_dir, "data_dir": str(data)}
        common.update({"figures_dir": figures_dir} if figures_dir else {})
        (project / "params" / "smoke.yaml").write_text(yaml.safe_dump({"common": common}))
        with pytest.raises(runner.Refused, match=rf"is inside {data}, which a run must not write into"):
            stage.run("smoke", "01")
    assert sorted(p.name for p in data.iterdir()) == ["mrpc"]  # nothing written into the data folder


def test_a_full_disk_is_named_with_its_path_before_a_stage_runs(project, monkeypatch, capsys):
    full = shutil.disk_usage(project)._replace(free=4096)
    monkeypatch.setattr(runner.shutil, "disk_usage", lambda path: full)
    assert cli(["stage", "01", "--profile", "smoke"]) == 2
    err = _one_line(capsys.readouterr().err)
    work = project / "runs/smoke"
    assert f"the disk that holds {work} has 0.0 MiB free" in err and "Fix: free space on that disk" in err, err
    assert not (work / "stages.json").exists()


def test_a_write_of_the_runners_own_files_that_fails_names_the_file(tmp_path, capsys):
    path = tmp_path / "run" / "summary.json"
    with pytest.raises(runner.WriteFailed, match=rf"No space left on device: could not write {path}\. Fix: free"):
        with runner.writing(path):
            raise OSError(28, "No space left on device")  # what write() raises: no file name
    with pytest.raises(ZeroDivisionError):  # anything else passes through as it was
        with runner.writing(path):
            raise ZeroDivisionError


FULL_DISK_STAGE = (
    "import errno, os\n"
    "if value < 0:\n"
    "    raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))  # as a write() on a full disk raises it"
)


@pytest.mark.slow
def test_a_stage_failing_on_a_full_disk_names_where_it_writes(project, capsys):
    write_notebook(project / "notebooks" / "02_second.ipynb", FULL_DISK_STAGE)
    (project / "params" / "smoke.yaml").write_text(yaml.safe_dump({"common": {"value": -1, "work_dir": "runs/smoke"}}))
    assert cli(["stage", "02", "--profile", "smoke"]) == 1
    err = capsys.readouterr().err.splitlines()[-1]  # papermill's cell bar goes to stderr before it
    assert err.startswith("compsense stage 02 --profile smoke: FAILED in cell ") and "No space left on device" in err
    work = project / "runs/smoke"
    assert f"the disk is full where the stage writes: {work} (" in err and "MiB free)" in err, err
    assert "Fix: free space on that disk" in err


def test_a_damaged_summary_json_names_the_command_that_writes_it(tmp_path):
    from compsense import estimate as E
    from compsense.pipeline import publish

    run = tmp_path / "runs" / "smoke" / "20260101-000000"
    run.mkdir(parents=True)
    (run / "summary.json").write_text('{"profile": "smo')
    (run / "report.md").write_text("# report\n")
    for read in (
        lambda: publish.publish(run=run, dest=tmp_path / "figures"),
        lambda: E.pages_measurements(run / "summary.json"),  # the estimate reads the pages run's copy
    ):
        with pytest.raises(io.CorruptFile) as err:
            read()
        text = str(err.value)
        assert "summary.json: not readable JSON" in text and "make reproduce" in text, text
        assert "re-run the notebook" not in text  # no notebook writes it


def test_damaged_result_tables_read_by_the_report_and_estimate_are_named_with_the_fix(tmp_path):
    from compsense import estimate as E
    from compsense.pipeline import report

    results = tmp_path / "work" / "results"
    table = io.write_table(
        pd.DataFrame({"dataset": ["scifact"], "n_queries": [3], "n_docs": [6], "value": [0.5]}),
        results_file(results.parent, "retrieval.parquet"),
    )
    assert E.run_sizes(tmp_path / "work") == {"scifact": (3, 6)}
    _cut(table)
    with pytest.raises(io.CorruptFile, match=r"retrieval\.parquet: not a readable \.parquet table .*Fix: delete it"):
        E.run_sizes(tmp_path / "work")
    with pytest.raises(io.CorruptFile, match=r"retrieval\.parquet: not a readable \.parquet table .*Fix: delete it"):
        report.build_report(tmp_path / "work", tmp_path / "figs", tmp_path / "run", {"profile": "smoke", "stages": {}})
