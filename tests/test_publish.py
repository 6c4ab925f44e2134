"""`make figures` (compsense.pipeline.publish): a run's figures, tables and report copied into the
committed folder only when asked, byte for byte the same from the same run, links that still work."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import plotly.graph_objects as go
import pytest

from compsense.core.layout import results_file
from compsense.figures import export
from compsense.pipeline import publish, report


@pytest.fixture()
def run(tmp_path, monkeypatch):
    """runs/smoke/report/ (the report stage's) with report.md, tables/*.csv and summary.json, figures in
    runs/smoke/figures."""
    monkeypatch.setattr(report, "machine", lambda: {"device": "cpu", "python": "3", "versions": {}})
    monkeypatch.setattr(export, "_png_engine_available", lambda: False)
    work = tmp_path / "runs" / "smoke"
    (work / "results").mkdir(parents=True)
    pd.DataFrame(
        {
            "run": "m/A-seed42",
            "variant": "A",
            "seed": 42,
            "dataset": "heldout",
            "family": [f"family{i:03d}" for i in range(90)],
            "metric": "auc",
            "value": [i / 90 for i in range(90)],
        }
    ).to_parquet(results_file(work, "geometry.parquet"))
    figures = work / "figures"
    export.save_figure(go.Figure(go.Bar(x=["a", "b"], y=[1, 2])), "03_bars", figures)
    run_dir = work / "report"
    summary = {
        "profile": "smoke",
        "finished": "20260101-000100",
        "stages": {},
        "work_dir": str(work),
        "figures_dir": str(figures),
    }
    report.build_report(work, figures, run_dir, summary)
    (run_dir / "summary.json").write_text(json.dumps(summary))
    return run_dir


@pytest.mark.slow
def test_the_same_run_publishes_the_same_bytes(run, tmp_path):
    one = publish.publish(run=run, dest=tmp_path / "one")
    publish.publish(run=run, dest=tmp_path / "two")
    files = sorted(p.relative_to(tmp_path / "one") for p in (tmp_path / "one").rglob("*") if p.is_file())
    assert {"03_bars.html", "plotly.min.js", "smoke_report.md", "tables/all_geometry.csv", publish.MANIFEST} <= {
        p.as_posix() for p in files
    }
    for rel in files:
        assert (tmp_path / "one" / rel).read_bytes() == (tmp_path / "two" / rel).read_bytes(), rel
    again = publish.publish(run=run, dest=tmp_path / "one")
    assert again["written"] == [] and set(again["unchanged"]) == set(one["written"])  # nothing rewritten


def test_published_report_links_the_figures_and_tables_beside_it(run, tmp_path):
    publish.publish(run=run, dest=tmp_path / "figs")
    md = (tmp_path / "figs" / "smoke_report.md").read_text()
    assert "- [03_bars](03_bars.html)" in md and "../figures/" not in md
    for link in ("03_bars.html", "tables/all_geometry.csv"):
        assert f"]({link})" in md and (tmp_path / "figs" / link).is_file()
    manifest = json.loads((tmp_path / "figs" / publish.MANIFEST).read_text())
    assert manifest["profile"] == "smoke" and "03_bars.html" in manifest["files"]


def test_only_files_an_earlier_publication_wrote_are_removed(run, tmp_path):
    dest = tmp_path / "figs"
    publish.publish(run=run, dest=dest)
    (dest / "notes.txt").write_text("mine")
    (run.parent / "figures" / "03_bars.html").unlink()  # the next run no longer draws it
    done = publish.publish(run=run, dest=dest)
    # no figure left to load it: plotly.min.js goes too
    assert done["removed"] == ["03_bars.html", "plotly.min.js"] and not (dest / "03_bars.html").exists()
    assert (dest / "notes.txt").read_text() == "mine" and "notes.txt" in done["others"]


def test_publish_never_deletes_outside_its_destination_nor_a_file_changed_since(run, tmp_path):
    dest = tmp_path / "figs"
    publish.publish(run=run, dest=dest)
    victim, outside = tmp_path / "precious.txt", tmp_path / "elsewhere.txt"
    victim.write_text("keep me")
    outside.write_text("me too")
    manifest = json.loads((dest / publish.MANIFEST).read_text())
    manifest["files"][str(victim)] = publish._sha256(victim.read_bytes())  # an absolute path
    manifest["files"]["../elsewhere.txt"] = publish._sha256(outside.read_bytes())  # a way out
    (dest / "03_bars.html").write_text("edited by hand")  # published, then changed
    manifest["files"]["03_bars.html"] = json.loads((dest / publish.MANIFEST).read_text())["files"]["03_bars.html"]
    (dest / publish.MANIFEST).write_text(json.dumps(manifest))
    (run.parent / "figures" / "03_bars.html").unlink()  # the next run no longer draws it
    done = publish.publish(run=run, dest=dest)
    assert victim.read_text() == "keep me" and outside.read_text() == "me too"
    assert (dest / "03_bars.html").read_text() == "edited by hand" and "03_bars.html" not in done["removed"]
    assert len(done["kept"]) == 3 and any("changed since" in k for k in done["kept"])


def test_latest_run_is_the_profiles_report_and_a_study_publishes_locals(run, tmp_path):
    runs = tmp_path / "runs"
    assert publish.latest_run("smoke", runs) == run
    local = runs / "local" / "report"
    local.mkdir(parents=True)
    (local / "report.md").write_text("# compsense report\n")
    with pytest.raises(publish.NothingToPublish, match="make reproduce PROFILE=study"):  # no summary.json yet
        publish.latest_run("study", runs)
    (local / "summary.json").write_text(json.dumps({"profile": "local"}))
    assert publish.latest_run("study", runs) == local  # the study runs local's DVC stages, into its work_dir
    with pytest.raises(publish.NothingToPublish, match="make reproduce PROFILE=paper"):
        publish.latest_run("paper", runs)


def test_a_folder_that_is_not_a_finished_run_is_refused(tmp_path):
    (tmp_path / "half").mkdir()
    with pytest.raises(publish.NothingToPublish, match="summary.json: missing"):
        publish.publish(run=tmp_path / "half", dest=tmp_path / "figs")
    assert not (tmp_path / "figs").exists()


def test_the_command_says_what_to_run_when_there_is_nothing_to_publish(tmp_path, capsys):
    assert publish.main(["--run", str(tmp_path), "--dest", str(tmp_path / "figs")]) == 2
    assert "is not a finished run" in capsys.readouterr().err


def test_two_publishes_at_once_take_turns(run, tmp_path, monkeypatch):
    import threading
    import time

    real, active, overlaps = publish._publish, [], []

    def slow(*args):
        active.append(1)
        overlaps.append(len(active))
        time.sleep(0.3)
        try:
            return real(*args)
        finally:
            active.pop()

    monkeypatch.setattr(publish, "_publish", slow)
    dest = tmp_path / "figs"
    threads = [threading.Thread(target=publish.publish, kwargs={"run": run, "dest": dest}) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert overlaps == [1, 1]  # without the lock both write at once: [1, 2]
    manifest = json.loads((dest / publish.MANIFEST).read_text())
    assert all(publish._sha256((dest / n).read_bytes()) == sha for n, sha in manifest["files"].items())


def _budget_points(points, mean=0.3) -> pd.DataFrame:
    """A budget table (`verifiers.budget.budget_table`'s columns): frozen MaxSim at budget 0 and F4 at
    each (budget, seeds) of `points`, two metrics each."""
    rows = []
    for scorer, size, budget, seeds in [("F1", "small", 0, max(n for _, n in points))] + [
        ("F4", "paper", b, n) for b, n in points
    ]:
        for metric in ("auc", "self_match"):
            low, high = (mean - 0.1, mean + 0.1) if seeds > 1 else (float("nan"), float("nan"))
            rows.append([scorer, "frozen", size, "equal", budget, metric, mean, low, high, seeds])
    columns = ["scorer", "regime", "size", "recipe", "budget", "metric", "mean", "ci_low", "ci_high", "seeds"]
    return pd.DataFrame(rows, columns=columns)


def _budget_piece_run(tmp_path, overrides=None, name="study-04-budget-seed42", points=((2048, 1), (48000, 1))):
    """A finished run of the declared budget piece `name` writing into runs/local (as the study does),
    with the table (`points`) and figure the piece publishes; returns (run folder, piece)."""
    from compsense.pipeline.pieces import dvc_profile, load_pieces
    from compsense.pipeline.profiles import load_profile

    piece = load_pieces()[name]
    work, run_dir = tmp_path / "runs" / "local", tmp_path / "runs" / "study" / f"20261204-16000{len(points)}"
    (run_dir / "tables").mkdir(parents=True)
    (work / "figures").mkdir(parents=True, exist_ok=True)
    notebook = run_dir / "04_verifiers.ipynb"
    notebook.write_text("{}")
    _budget_points(list(points)).to_csv(run_dir / "tables" / "verifier_budget.csv", index=False)
    for name in ("04_verifier_budget.html", "04_verifier_budget.png", "plotly.min.js"):
        (work / "figures" / name).write_text(name)
    summary = {
        "profile": dvc_profile(piece.profile),
        "commit": "abc1234",
        # the values it ran with, as the report stage records them (`stage.report`)
        "params": load_profile(piece.profile, piece.overrides if overrides is None else overrides),
        # each stage as the report stage copies it from stages.json: its commit and times
        "stages": {
            key: {"status": "ok", "output": str(notebook), "seconds": 600.0, "commit": "abc1234"}
            for key in piece.stages
        },
        "work_dir": str(work),
        "figures_dir": str(work / "figures"),
    }
    (run_dir / "summary.json").write_text(json.dumps(summary))
    (work / "stages.json").write_text(
        json.dumps(
            {
                key: {"output": str(notebook), "seconds": 600.0, "finished": "2026-12-04T16:10"}
                | {"commit": summary["commit"]}
                for key in piece.stages
            }
        )
    )
    return run_dir, piece


def test_a_piece_publishes_its_own_files_beside_the_rest(tmp_path, monkeypatch):
    monkeypatch.setattr(export, "_png_engine_available", lambda: False)
    from compsense.pipeline.provenance import COLUMNS

    run_dir, piece = _budget_piece_run(tmp_path)
    dest = tmp_path / "figs"
    (dest / "tables").mkdir(parents=True)
    (dest / "tables" / "table1.csv").write_text("made,by,another,run\n")
    earlier = pd.DataFrame([{c: "" for c in COLUMNS} | {"stage": "04", "piece": "local-04-frozen", "minutes": "21.2"}])
    earlier.to_csv(dest / "tables" / "provenance.csv", index=False)
    (dest / publish.MANIFEST).write_text(json.dumps({"profile": "local", "files": {"tables/table1.csv": "x"}}))

    done = publish.publish_piece(piece.name, run=run_dir, dest=dest)
    # no PNG engine here (the fixture's monkeypatch): the figure's PNG is not drawn, so not published
    assert done["not_drawn"] == ["04_verifier_budget.png"] and not (dest / "04_verifier_budget.png").exists()
    assert set(done["written"]) == {*piece.publishes, "plotly.min.js", "tables/provenance.csv"} - set(done["not_drawn"])
    # the figure is drawn from the published table, not copied from the run
    assert "F4-frozen" in (dest / "04_verifier_budget.html").read_text()
    assert (dest / "tables" / "table1.csv").read_text() == "made,by,another,run\n"  # the rest untouched
    published = pd.read_csv(dest / "tables" / "verifier_budget.csv")
    assert set(published.piece) == {piece.name} and sorted(set(published.budget)) == [0, 2048, 48000]
    rows = pd.read_csv(dest / "tables" / "provenance.csv", dtype=str, keep_default_na=False)
    assert list(rows.piece) == ["local-04-frozen", piece.name]  # the whole run's row first, then the piece's
    mine = rows.iloc[1]
    assert mine.run == "runs/study/20261204-160002" and mine.commit == "abc1234" and mine.minutes == "10.0"
    assert mine.publishes == ", ".join(piece.publishes)
    manifest = json.loads((dest / publish.MANIFEST).read_text())
    assert manifest["profile"] == "local" and "tables/table1.csv" in manifest["files"]
    assert set(piece.publishes) - set(done["not_drawn"]) <= set(manifest["files"])
    assert manifest["pieces"][piece.name]["run"].endswith("runs/study/20261204-160002")
    again = publish.publish_piece(piece.name, run=run_dir, dest=dest)  # its row replaced, not added
    assert again["written"] == [] and len(pd.read_csv(dest / "tables" / "provenance.csv")) == 2


def test_pieces_merge_a_table_point_by_point_the_point_with_more_seeds_winning(tmp_path):
    published = tmp_path / "verifier_budget.csv"
    publish.merge_points(published, _budget_points([(2048, 1), (48000, 1)]), KEY, "seed42").to_csv(
        published, index=False
    )
    # another piece ran 48k (and the noise line) at three seeds: its points replace those, 2k stays
    merged = publish.merge_points(published, _budget_points([(48000, 3)], mean=0.5), KEY, "seeds")
    by_point = merged.groupby(["scorer", "budget"]).agg(piece=("piece", "first"), seeds=("seeds", "max"))
    assert by_point.to_dict("index") == {
        ("F1", 0): {"piece": "seeds", "seeds": 3},
        ("F4", 2048): {"piece": "seed42", "seeds": 1},
        ("F4", 48000): {"piece": "seeds", "seeds": 3},
    }
    merged.to_csv(published, index=False)
    # the one-seed piece published again does not take the three-seed points back; its own 2k is replaced
    again = publish.merge_points(published, _budget_points([(2048, 1), (48000, 1)], mean=0.1), KEY, "seed42")
    assert again[again.budget == 48000].piece.unique().tolist() == ["seeds"]
    assert again[again.budget == 2048]["mean"].unique().tolist() == [0.1] and len(again) == len(merged)


KEY = ["scorer", "regime", "size", "recipe", "budget"]


def test_a_balanced_curve_stands_beside_the_model_b_rows_published_before_its_column(tmp_path):
    """verifier_budget.csv's rows from before its train_data column are model_b rows: a piece on
    balanced rows at the same budgets joins them instead of replacing them, and a model_b piece still
    replaces its own point."""
    published = tmp_path / "verifier_budget.csv"
    spec = publish.MERGED["tables/verifier_budget.csv"]
    _budget_points([(8192, 1)], mean=0.2).to_csv(published, index=False)  # no train_data column
    balanced = _budget_points([(8192, 1)], mean=0.7).assign(train_data="balanced")
    merged = publish.merge_points(published, balanced, spec.key, "balanced-8k", spec.seeds, spec.defaults)
    by = merged[merged.budget == 8192].groupby("train_data")["mean"].unique().map(list).to_dict()
    assert by == {"balanced": [0.7], "model_b": [0.2]}
    merged.to_csv(published, index=False)
    again = publish.merge_points(
        published, _budget_points([(8192, 3)], mean=0.3), spec.key, "model_b-8k-seeds", spec.seeds, spec.defaults
    )
    by = again[again.budget == 8192].groupby("train_data")["mean"].unique().map(list).to_dict()
    assert by == {"balanced": [0.7], "model_b": [0.3]}


def test_study_pieces_merge_the_variants_and_dose_tables():
    """Notebook 02's study table: A, B and the control at five seeds from one piece, B-all at seed 42
    from another (which trains its own A of that seed): the five-seed rows stay, B-all joins them; the
    dose points (one row a seed) merge by seed, the later piece's own A row replacing the same point."""
    import tempfile
    from pathlib import Path

    key, seeds = publish.MERGED["tables/variants.csv"][:2]
    five = pd.DataFrame(
        {
            "backbone": "m",
            "variant": ["A", "B", "C-identity"],
            "metric": "ndcg@10",
            "structural_share": [0.0, 0.19, 0.19],
            "mean": [0.59, 0.58, 0.585],
            "n_seeds": 5,
        }
    )
    sweep = pd.DataFrame(
        {
            "backbone": "m",
            "variant": ["A", "B-all"],
            "metric": "ndcg@10",
            "structural_share": [0.0, 0.19],
            "mean": [0.60, 0.57],
            "n_seeds": 1,
        }
    )
    with tempfile.TemporaryDirectory() as tmp:
        published = Path(tmp) / "variants.csv"
        publish.merge_points(published, five, key, "study-02-seeds", seeds).to_csv(published, index=False)
        merged = publish.merge_points(published, sweep, key, "study-02-sweep-a", seeds).set_index("variant")
        assert merged.loc["A", "n_seeds"] == 5 and merged.loc["A", "piece"] == "study-02-seeds"
        assert merged.loc["B-all", "piece"] == "study-02-sweep-a" and len(merged) == 4
        spec = publish.MERGED["tables/dose_response.csv"]
        key, seeds, figure, draw = spec.key, spec.seeds, spec.figure, spec.draw
        assert seeds is None and figure == "02_dose_response" and draw is not None
        dose = Path(tmp) / "dose_response.csv"
        points = lambda variants, drop: pd.DataFrame(  # noqa: E731
            {"backbone": "m", "variant": variants, "seed": 42, "structural_share": 0.1, "drop": drop, "auc_gain": 0.0}
        )
        publish.merge_points(dose, points(["A", "B-all"], [0.0, -0.01]), key, "a", seeds).to_csv(dose, index=False)
        both = publish.merge_points(dose, points(["A", "B-share0.5"], [0.0, -0.02]), key, "b", seeds)
        assert sorted(both.variant) == ["A", "B-all", "B-share0.5"]
        assert both.set_index("variant").loc["A", "piece"] == "b"  # a tie: the later piece's
        draw(both)  # the notebook's figure, from the merged points


def test_a_piece_refuses_a_run_it_did_not_make_and_a_missing_file(tmp_path, capsys):
    run_dir, piece = _budget_piece_run(tmp_path, overrides=["verifiers.regimes=[frozen]"])
    with pytest.raises(publish.NothingToPublish, match="not a finished run of piece"):
        publish.publish_piece(piece.name, run=run_dir, dest=tmp_path / "figs")
    run_dir, piece = _budget_piece_run(tmp_path / "second")
    (run_dir / "tables" / "verifier_budget.csv").unlink()
    with pytest.raises(publish.NothingToPublish, match="verifier_budget.csv: missing"):
        publish.publish_piece(piece.name, run=run_dir, dest=tmp_path / "figs")
    with pytest.raises(publish.NothingToPublish, match="published whole"):
        publish.publish_piece("local-01", run=run_dir, dest=tmp_path / "figs")
    # a name params/pieces.yaml lacks: refused with the pieces to use, exit 2 from the command line
    assert publish.main(["--piece", "no-such-piece", "--dest", str(tmp_path / "figs")]) == 2
    assert "no piece 'no-such-piece'" in capsys.readouterr().err


def test_two_pieces_that_share_the_budget_table_both_keep_their_provenance_rows(tmp_path, monkeypatch):
    monkeypatch.setattr(export, "_png_engine_available", lambda: False)
    dest = tmp_path / "figs"
    one, first = _budget_piece_run(tmp_path)
    publish.publish_piece(first.name, run=one, dest=dest)
    two, second = _budget_piece_run(tmp_path, name="study-04-budget-48k-seeds", points=((48000, 3),))
    publish.publish_piece(second.name, run=two, dest=dest)
    table = pd.read_csv(dest / "tables" / "verifier_budget.csv")
    assert set(table.piece) == {first.name, second.name}  # 2k from the first, 48k and the line from the second
    rows = pd.read_csv(dest / "tables" / "provenance.csv", dtype=str, keep_default_na=False)
    assert set(rows[rows.stage == "04"].piece) == {first.name, second.name}
    # the first piece published again after the second ran (its run is no longer the stage's last success)
    publish.publish_piece(first.name, run=one, dest=dest)
    rows = pd.read_csv(dest / "tables" / "provenance.csv", dtype=str, keep_default_na=False)
    assert set(rows[rows.stage == "04"].piece) == {first.name, second.name}


def _git(root, *args):
    import subprocess

    done = subprocess.run(["git", *args], cwd=root, capture_output=True, text=True, check=True)
    return done.stdout.strip()


def test_stage_code_changes_are_the_files_of_its_notebook_and_imports_between_two_commits(tmp_path, monkeypatch):
    from compsense.core import paths
    from compsense.pipeline import provenance, runner, stages

    root = tmp_path
    for module in (paths, runner, stages, provenance):
        monkeypatch.setattr(module, "repo_root", lambda: root)
    (root / "compsense").mkdir()
    (root / "notebooks").mkdir()
    (root / "compsense" / "__init__.py").write_text("")
    (root / "compsense" / "used.py").write_text("x = 1\n")
    (root / "compsense" / "other.py").write_text("y = 1\n")
    _notebook_importing(root / "notebooks" / "04_verifiers.ipynb", "import compsense.used")
    _git(root, "init", "-q")
    _git(root, "-c", "user.email=t@t", "-c", "user.name=t", "commit", "-qam", "one", "--allow-empty")
    _git(root, "add", "-A")
    _git(root, "-c", "user.email=t@t", "-c", "user.name=t", "commit", "-qm", "two")
    first = _git(root, "rev-parse", "--short", "HEAD")
    (root / "compsense" / "other.py").write_text("y = 2\n")  # a module stage 04 never imports
    (root / "README.md").write_text("words\n")
    _git(root, "add", "-A")
    _git(root, "-c", "user.email=t@t", "-c", "user.name=t", "commit", "-qm", "three")
    second = _git(root, "rev-parse", "--short", "HEAD")
    assert provenance.stage_code_changes("04", first, second) == []
    (root / "compsense" / "used.py").write_text("x = 2\n")
    _git(root, "-c", "user.email=t@t", "-c", "user.name=t", "commit", "-qam", "four")
    third = _git(root, "rev-parse", "--short", "HEAD")
    assert provenance.stage_code_changes("04", first, third) == ["compsense/used.py"]
    assert provenance.stage_code_changes("04", first, "0000000") is None  # a commit this clone lacks
    assert provenance.stage_code_changes("04", f"{third}-dirty", f"{third}-dirty") is None  # uncommitted code
    assert provenance.stage_code_changes("04", third, third) == []


def _notebook_importing(path, code):
    import nbformat

    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell(code)]
    nbformat.write(nb, path)


def test_pieces_made_at_other_code_share_a_table_only_with_a_note_naming_every_changed_file(tmp_path, monkeypatch):
    """`make figures` never puts rows made at different code side by side unless a piece says why."""
    import dataclasses

    from compsense.pipeline.runner import Refused

    monkeypatch.setattr(export, "_png_engine_available", lambda: False)
    changes = {("abc1234", "def5678"): ["compsense/verifiers/budget.py", "compsense/figures/verifiers.py"]}
    monkeypatch.setattr(publish, "stage_code_changes", lambda stage, old, new: changes.get((old, new), []))
    dest = tmp_path / "figs"
    one, first = _budget_piece_run(tmp_path)  # made at abc1234
    publish.publish_piece(first.name, run=one, dest=dest)
    two, second = _budget_piece_run(tmp_path, name="study-04-budget-48k-seeds", points=((48000, 3),))
    summary = json.loads((two / "summary.json").read_text())
    for done in summary["stages"].values():  # its stages ran at def5678
        done["commit"] = "def5678"
    (two / "summary.json").write_text(json.dumps({**summary, "commit": "def5678"}))
    before = (dest / "tables" / "verifier_budget.csv").read_bytes()
    with pytest.raises(Refused, match="study-04-budget-seed42 .made at abc1234.*budget.py.*code_note"):
        publish.publish_piece(second.name, run=two, dest=dest)
    assert (dest / "tables" / "verifier_budget.csv").read_bytes() == before  # nothing written

    from compsense.pipeline import pieces as P

    real = P.load_pieces()

    def noted(files):
        note = dataclasses.replace(real[second.name], code_files=tuple(files), code_why="only the figure changed")
        monkeypatch.setattr(P, "load_pieces", lambda path=None: {**real, second.name: note})
        monkeypatch.setattr(P, "get_piece", lambda name, path=None: {**real, second.name: note}[name])

    noted(["compsense/figures/verifiers.py"])  # a note that leaves budget.py unjudged is not enough
    with pytest.raises(Refused, match="budget.py"):
        publish.publish_piece(second.name, run=two, dest=dest)
    noted(changes[("abc1234", "def5678")])
    done = publish.publish_piece(second.name, run=two, dest=dest)
    assert len(done["code_notes"]) == 1 and "only the figure changed" in done["code_notes"][0]
    manifest = json.loads((dest / publish.MANIFEST).read_text())
    assert manifest["pieces"][second.name]["code_notes"] == done["code_notes"]


def test_a_piece_is_judged_at_the_commit_its_stage_ran_at_not_its_reports(tmp_path, monkeypatch):
    """A piece's report is written after `dvc exp run` has left its values in params/<profile>.yaml, so the
    report says "<commit>-dirty"; its stage ran clean and says so in stages.json. The code check compares
    that stage's commit, and without one it falls back to the report's, which git cannot compare."""
    from compsense.pipeline.runner import Refused

    monkeypatch.setattr(export, "_png_engine_available", lambda: False)

    def changes(stage, old, new):  # git cannot compare an uncommitted tree; the two commits share code
        return None if new.endswith("-dirty") else []

    monkeypatch.setattr(publish, "stage_code_changes", changes)
    dest = tmp_path / "figs"
    one, first = _budget_piece_run(tmp_path)  # made at abc1234
    publish.publish_piece(first.name, run=one, dest=dest)
    two, second = _budget_piece_run(tmp_path, name="study-04-budget-48k-seeds", points=((48000, 3),))
    summary = json.loads((two / "summary.json").read_text())
    summary["commit"] = "def5678-dirty"
    for done in summary["stages"].values():  # a record without the stage's own commit
        done.pop("commit")
    (two / "summary.json").write_text(json.dumps(summary))
    with pytest.raises(Refused, match="cannot compare abc1234 with def5678-dirty"):
        publish.publish_piece(second.name, run=two, dest=dest)
    summary["stages"]["04"]["commit"] = "def5678"
    (two / "summary.json").write_text(json.dumps(summary))
    assert publish.stage_commit(summary, "04") == "def5678" and publish.stage_commit(summary, "01") == "def5678-dirty"
    publish.publish_piece(second.name, run=two, dest=dest)
    table = pd.read_csv(dest / "tables" / "verifier_budget.csv")
    assert set(table.piece) == {first.name, second.name}


def test_a_dvc_pieces_provenance_names_the_piece_its_command_and_each_stages_commit(tmp_path, monkeypatch):
    """A DVC piece's executed notebooks sit in runs/<profile>/notebooks/ with no run summary beside them,
    and a stage DVC skipped keeps a stages.json record written elsewhere (another clone's path): each
    provenance row still names the piece, `python -m compsense piece NAME` and the commit the stage ran at,
    never the retired runner's command."""
    monkeypatch.setattr(export, "_png_engine_available", lambda: False)
    dest = tmp_path / "figs"
    run, piece = _budget_piece_run(tmp_path, name="study-04-budget-48k-seeds", points=((48000, 3),))
    summary = json.loads((run / "summary.json").read_text())
    commits = {"01": "aaa1111", "04": "bbb2222"}
    for key, done in summary["stages"].items():
        done.update(reason="dvc repro", commit=commits[key], finished=f"2026-12-07T0{key[-1]}:00:00+00:00")
    (run / "summary.json").write_text(json.dumps(summary))
    stages_json = Path(summary["work_dir"]) / "stages.json"
    records = json.loads(stages_json.read_text())
    records["01"]["output"] = "/elsewhere/runs/local/notebooks/01_data_and_negatives.ipynb"
    records["04"].update(commit=commits["04"])  # as a DVC stage records itself
    stages_json.write_text(json.dumps(records))
    publish.publish_piece(piece.name, run=run, dest=dest)
    rows = pd.read_csv(dest / "tables" / "provenance.csv", dtype=str, keep_default_na=False).set_index("stage")
    assert set(rows.piece) == {piece.name}
    assert set(rows.command) == {f"python -m compsense piece {piece.name}"}
    assert rows.commit.to_dict() == commits and rows.loc["01", "finished"] == "2026-12-07T01:00:00+00:00"


def test_one_seed_pieces_on_two_machines_publish_one_point_over_both_seeds(tmp_path, monkeypatch):
    """A piece trains seed 43 on a machine without seed 42's run: its per-seed rows join the ones published
    for seed 42, and the curve's point is recomputed over both (mean, seed-level interval, both commits)."""
    from compsense.verifiers.budget import budget_table

    monkeypatch.setattr(export, "_png_engine_available", lambda: False)
    monkeypatch.setattr(publish, "stage_code_changes", lambda *args: [])  # the same notebook code
    run_dir, piece = _budget_piece_run(tmp_path, name="study-04-balanced-e2e-seed43")
    point = dict(scorer="F4", regime="end2end", train_data="balanced", size="paper", recipe="equal", budget=8192)

    def runs(seed, auc, commit):
        return pd.DataFrame([{**point, "seed": seed, "auc": auc, "self_match": 0.9, "commit": commit}])

    mine = runs(43, 0.67, "bbb")
    mine.to_csv(run_dir / "tables" / "verifier_budget_runs.csv", index=False)
    budget_table(mine.drop(columns="commit")).assign(commit="bbb").to_csv(
        run_dir / "tables" / "verifier_budget.csv", index=False
    )
    dest = tmp_path / "figs"
    (dest / "tables").mkdir(parents=True)
    earlier = "study-04-balanced-e2e-seed42"
    runs(42, 0.61, "aaa").assign(piece=earlier).to_csv(dest / publish.BUDGET_RUNS, index=False)
    budget_table(runs(42, 0.61, "aaa").drop(columns="commit")).assign(commit="aaa", piece=earlier).to_csv(
        dest / "tables" / "verifier_budget.csv", index=False
    )

    publish.publish_piece(piece.name, run=run_dir, dest=dest)
    per_seed = pd.read_csv(dest / publish.BUDGET_RUNS)
    assert sorted(zip(per_seed.seed, per_seed.piece)) == [(42, earlier), (43, piece.name)]
    curve = pd.read_csv(dest / "tables" / "verifier_budget.csv", keep_default_na=False)
    auc = curve[curve.metric == "auc"].iloc[0]
    assert len(curve[curve.metric == "auc"]) == 1 and auc.seeds == 2 and auc["mean"] == pytest.approx(0.64)
    assert float(auc.ci_low) < 0.61 < 0.67 < float(auc.ci_high)
    assert auc.commit == "aaa+bbb" and auc.piece == piece.name
    again = publish.publish_piece(piece.name, run=run_dir, dest=dest)  # seed 43's own rows replaced, not added
    assert len(pd.read_csv(dest / publish.BUDGET_RUNS)) == 2 and "tables/verifier_budget.csv" in again["unchanged"]
