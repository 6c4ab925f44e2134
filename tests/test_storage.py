"""Result tables appended by several processes at once (compsense.core.storage.append_results), and the
commit each row records: the one that computed it, kept through later appends."""

from __future__ import annotations


def _append_many(path, who, n):
    import pandas as pd

    from compsense.core.storage import append_results

    for i in range(n):
        append_results(pd.DataFrame({"who": [who], "i": [i], "value": [1.0]}), path, key=["who", "i"])


def test_two_processes_appending_at_once_both_keep_their_rows(tmp_path):
    import multiprocessing as mp

    from compsense.core.storage import read_table

    path = tmp_path / "results" / "table.parquet"
    ctx = mp.get_context("spawn")
    procs = [ctx.Process(target=_append_many, args=(path, who, 15)) for who in ("a", "b")]
    for p in procs:
        p.start()
    for p in procs:
        p.join(120)
    assert [p.exitcode for p in procs] == [0, 0]
    assert len(read_table(path)) == 30  # without the lock one process's rows are lost


def test_a_row_keeps_the_commit_that_computed_it_through_later_appends(tmp_path, monkeypatch):
    from compsense.core.paths import ENV_COMMIT
    from compsense.core.storage import append_results, read_table, tidy

    path = tmp_path / "results" / "retrieval.parquet"
    monkeypatch.setenv(ENV_COMMIT, "aaaaaaa")
    append_results(tidy([{"metric": "ndcg@10", "value": 0.5}, {"metric": "acc@1", "value": 0.4}], run="A"), path)
    monkeypatch.setenv(ENV_COMMIT, "bbbbbbb")  # a later run: reuses A's evaluation, computes B's
    cached = read_table(path)
    append_results(tidy([{"metric": "ndcg@10", "value": 0.6}], run="B"), path)
    append_results(cached[cached.metric == "ndcg@10"], path)  # a reused row written again keeps its commit
    append_results(tidy([{"metric": "acc@1", "value": 0.45}], run="A"), path)  # recomputed: replaced, new commit
    table = read_table(path)
    got = {(r.run, r.metric): r.commit for r in table.itertuples()}
    assert got == {("A", "ndcg@10"): "aaaaaaa", ("B", "ndcg@10"): "bbbbbbb", ("A", "acc@1"): "bbbbbbb"}
    assert len(table) == 3


def test_a_fresh_row_gets_the_runners_commit_else_the_checkouts(tmp_path, monkeypatch):
    from compsense.core import paths
    from compsense.core.storage import append_results, read_table, tidy

    path = tmp_path / "t.parquet"
    monkeypatch.setenv(paths.ENV_COMMIT, "1234567")  # set by the runner for the kernels it starts
    append_results(tidy([{"metric": "m", "value": 1.0}], run="r1"), path)
    monkeypatch.delenv(paths.ENV_COMMIT)  # a notebook run by hand: HEAD, with git_commit's -dirty
    monkeypatch.setattr(paths, "git_commit", lambda: "89abcde-dirty")
    append_results(tidy([{"metric": "m", "value": 1.0}], run="r2"), path)
    assert dict(zip(read_table(path).run, read_table(path).commit)) == {"r1": "1234567", "r2": "89abcde-dirty"}


def test_a_table_written_before_rows_had_a_commit_still_loads_and_merges(tmp_path, monkeypatch):
    from compsense.core.paths import ENV_COMMIT
    from compsense.core.storage import append_results, read_table, tidy, write_table

    path = write_table(tidy([{"metric": "m", "value": 1.0}], run="old"), tmp_path / "t.parquet")
    monkeypatch.setenv(ENV_COMMIT, "ccccccc")
    append_results(tidy([{"metric": "m", "value": 2.0}], run="new"), path)
    commits = read_table(path).set_index("run").commit
    assert commits.isna()["old"] and commits["new"] == "ccccccc"  # the old row's is unknown, not guessed


def test_a_copied_tree_outside_git_takes_the_commit_its_sender_names(tmp_path, monkeypatch):
    """A lent GPU machine gets the working tree without .git: the runner's summary then records the
    commit named in COMPSENSE_COMMIT (scripts/gpu_run.sh's caller sets it), else "unknown"."""
    import subprocess

    from compsense.core import paths

    def no_git(*args, **kwargs):
        return subprocess.CompletedProcess(args, 128, stdout="", stderr="fatal: not a git repository")

    monkeypatch.setattr(paths.subprocess, "run", no_git)
    monkeypatch.delenv(paths.ENV_COMMIT, raising=False)
    assert paths.git_commit() == "unknown"
    monkeypatch.setenv(paths.ENV_COMMIT, "fadba43")
    assert paths.git_commit() == "fadba43"


def test_dvcs_own_lock_does_not_make_a_checkout_dirty(tmp_path, monkeypatch):
    """`dvc repro` rewrites dvc.lock after each stage: the stages after the first must still be stamped
    with the clean commit; any other tracked file changed is "-dirty"."""
    import subprocess

    from compsense.core import paths

    def git(*args):
        subprocess.run(["git", *args], cwd=tmp_path, check=True, capture_output=True)

    git("init", "-q")
    for name in (paths.DVC_LOCK, "code.py"):
        (tmp_path / name).write_text("a\n")
    git("add", ".")
    git("-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "first")
    monkeypatch.setattr(paths, "repo_root", lambda: tmp_path)
    clean = paths.git_commit()
    assert clean and "dirty" not in clean and clean != "unknown"
    (tmp_path / paths.DVC_LOCK).write_text("b\n")
    assert paths.git_commit() == clean
    (tmp_path / "code.py").write_text("b\n")
    assert paths.git_commit() == f"{clean}-dirty"


def test_a_dvc_experiments_params_values_do_not_make_its_stages_dirty(tmp_path, monkeypatch):
    """`dvc exp run -S` writes a piece's values into params/<profile>.yaml before its stages run: inside the
    experiment (DVC_EXP_NAME set) they stay clean; outside it a changed params file is "-dirty", as code is."""
    import subprocess

    from compsense.core import paths

    def git(*args):
        subprocess.run(["git", *args], cwd=tmp_path, check=True, capture_output=True)

    git("init", "-q")
    (tmp_path / "params").mkdir()
    for name in ("params/local.yaml", "code.py"):
        (tmp_path / name).write_text("a\n")
    git("add", ".")
    git("-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "first")
    monkeypatch.setattr(paths, "repo_root", lambda: tmp_path)
    monkeypatch.delenv(paths.ENV_DVC_EXPERIMENT, raising=False)
    clean = paths.git_commit()
    (tmp_path / "params" / "local.yaml").write_text("b\n")
    assert paths.git_commit() == f"{clean}-dirty"  # a value changed by hand, outside an experiment
    monkeypatch.setenv(paths.ENV_DVC_EXPERIMENT, "study-04-balanced-8k")
    assert paths.git_commit() == clean
    (tmp_path / "code.py").write_text("b\n")
    assert paths.git_commit() == f"{clean}-dirty"  # code stays code inside an experiment


def test_a_commit_of_digits_or_of_float_shape_stays_the_text_it_was(tmp_path):
    """A short hash can be all digits (8455727 was main's) or look like a float ("5e12345"): a CSV read
    back through storage keeps it as the text it was, so tables merge with their parquet sources."""
    import pandas as pd

    from compsense.core.storage import read_csv, read_table, write_table

    for commits in (["8455727", "8455727"], ["5e12345", "0123456"]):  # a column of one shape is guessed
        path = write_table(pd.DataFrame({"commit": commits, "value": [1.0, 2.0]}), tmp_path / "t.csv")
        assert read_table(path)["commit"].tolist() == commits
        assert read_csv(path)["commit"].tolist() == commits
        assert read_csv(path, dtype={"value": str})["value"].tolist() == ["1.0", "2.0"]
        assert pd.read_csv(path)["commit"].tolist() != commits  # what pandas alone reads
