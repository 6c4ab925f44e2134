"""compsense.pipeline.pieces: the declared pieces load and check, a run is found by what it ran (a DVC
report's recorded values, or a retired runner run's overrides), and `piece NAME` is exactly its DVC
experiment."""

import json
import shutil
import sys
from pathlib import Path

import pytest
import yaml

from compsense.__main__ import main as cli
from compsense.pipeline import pieces as P


def test_the_committed_pieces_load_and_name_real_stages_and_keys():
    pieces = P.load_pieces()
    assert {"local-02", "local-03", "local-04-frozen", "study-04-budget-48k-seeds"} <= set(pieces)
    # a budget piece runs on a fresh machine in one command (notebook 01's pairs, then 04) and publishes
    # only the budget table and figure, beside what other runs published
    seeds = pieces["study-04-budget-48k-seeds"]
    assert seeds.stages == ["01", "04"] and "tables/verifier_budget.csv" in seeds.publishes
    two = pieces["local-02"]
    assert two.stages == ["02"] and two.profile == "local"
    assert two.dvc_args() == [
        "dvc exp run -n local-02",
        "-S 'params/local.yaml:training_ab.seeds=[42, 43, 44]'",
        "-S 'params/local.yaml:training_ab.variants=[base, A, B, C-identity]'",
        "local-02",
    ]
    # the study table's pieces are self-contained and publish the tables `make figures` merges
    for name in ("study-02-sweep-a", "study-02-sweep-b"):
        assert pieces[name].stages == ["01", "02"] and "tables/dose_response.csv" in pieces[name].publishes


def test_a_piece_is_estimated_with_its_overrides(capsys):
    """`estimate --piece NAME` prices what the piece runs, not its whole profile."""
    from compsense.__main__ import main

    assert main(["estimate", "--piece", "study-02-sweep-a"]) == 0
    out = capsys.readouterr().out
    assert "piece study-02-sweep-a (profile study --set 'training_ab.seeds=[42]'" in " ".join(out.split())
    # four trainings (A, B-all, two shares) of 100 steps at batch 32, not the study's 5 seeds x 5 variants
    rows = [line.split() for line in out.splitlines() if line[:2].isdigit()]
    assert ["02", "train", "minilm-l6", "12,800"] in [r[:4] for r in rows] and "03" not in {r[0] for r in rows}
    # a piece or an --only that names nothing is refused with the names to use, never an empty estimate
    assert main(["estimate", "--piece", "nope"]) == 2
    assert "no piece 'nope'" in capsys.readouterr().err
    assert main(["estimate", "--profile", "local", "--only", "09"]) == 2
    assert "--only 09: no stage matches" in capsys.readouterr().err


@pytest.mark.parametrize(
    "spec, message",
    [
        ({"profile": "nowhere", "only": "02"}, "profile 'nowhere' is not one of"),
        ({"profile": "local", "only": "09"}, "no stage matches"),
        ({"profile": "local", "only": "02", "set": ["training_ab.max_step=5"]}, "sets no `training_ab.max_step`"),
        ({"profile": "local"}, "needs `profile` and `only`"),
        ({"profile": "local", "only": "02", "when": "now"}, "needs `profile` and `only`"),
        ({"profile": "local", "only": "02", "publishes": ["../README.md"]}, "name files inside figures/"),
        ({"profile": "local", "only": "02", "code_note": "trust me"}, "code_note needs `files`"),
        ({"profile": "local", "only": "02", "code_note": {"files": ["a.py"], "why": " "}}, "code_note needs"),
    ],
)
def test_a_bad_piece_is_an_error_naming_the_file_and_piece(tmp_path, spec, message):
    path = tmp_path / "pieces.yaml"
    path.write_text(yaml.safe_dump({"pieces": {"bad": spec}}))
    with pytest.raises(ValueError, match=f"pieces.yaml: piece 'bad': .*{message}"):
        P.load_pieces(path)


def test_a_code_note_reads_as_the_files_it_judged_and_why(tmp_path):
    note = {"files": ["compsense/figures/verifiers.py"], "why": "only the drawing changed"}
    path = tmp_path / "pieces.yaml"
    path.write_text(yaml.safe_dump({"pieces": {"noted": {"profile": "local", "only": "04", "code_note": note}}}))
    piece = P.load_pieces(path)["noted"]
    assert piece.code_files == ("compsense/figures/verifiers.py",) and piece.code_why == "only the drawing changed"


def _report(runs, overrides, stages, commit="abc1234"):
    """The local profile's report (runs/local/report/summary.json) as its stage records it (`stage.report`):
    the profile's values with `overrides`, and the stages' status."""
    from compsense.pipeline.profiles import load_profile

    folder = runs / "local" / "report"
    folder.mkdir(parents=True, exist_ok=True)
    record = {"profile": "local", "commit": commit, "finished": "20261207-2200", "stages": stages}
    (folder / "summary.json").write_text(json.dumps({**record, "params": load_profile("local", overrides)}))
    return folder


def test_a_run_counts_for_a_piece_by_its_values_and_finished_stages(tmp_path):
    spec = {"profile": "local", "only": "02,03", "set": ["training_ab.variants=[base, A, B, C-identity]"]}
    (tmp_path / "pieces.yaml").write_text(yaml.safe_dump({"pieces": {"two-stages": spec}}))
    piece = P.load_pieces(tmp_path / "pieces.yaml")["two-stages"]
    ok = {"status": "ok", "seconds": 600.0}
    runs = tmp_path / "runs"
    assert P.last_run(piece, runs) is None
    _report(runs, [], {"02": ok, "03": ok})  # the profile unnarrowed: another piece
    assert P.last_run(piece, runs) is None
    _report(runs, list(piece.overrides), {"02": ok, "03": {"status": "failed"}})  # 03 failed
    assert P.last_run(piece, runs) is None
    _report(runs, list(piece.overrides), {"02": ok})  # 03 not run
    assert P.last_run(piece, runs) is None
    _report(runs, list(piece.overrides), {"02": ok, "03": ok}, commit="first")
    found = P.last_run(piece, runs)
    assert found["commit"] == "first" and found["run"].endswith("local/report") and found["seconds"] == 1200.0
    (runs / "local" / "report" / "summary.json").write_text("{")  # damaged: no run, not a crash
    assert P.last_run(piece, runs) is None


def test_piece_runs_its_dvc_experiment_and_lists(monkeypatch, capsys):
    calls, reports = [], []
    monkeypatch.setattr(P, "unsaved_outputs", lambda targets: {})
    monkeypatch.setattr(P.subprocess, "call", lambda args, cwd, env: calls.append(args) or 0)
    monkeypatch.setattr(
        P.stage, "report", lambda profile, name: reports.append((profile, name)) or f"runs/{profile}/report"
    )
    assert cli(["piece", "local-04-frozen"]) == 0
    assert calls == [
        ["dvc", "exp", "run", "-n", "local-04-frozen", "local-04"]  # local's values: no -S
    ]
    assert reports == [("local", "local-04-frozen")]  # the report of what it ran, named by the piece
    assert cli(["piece", "local-04-frozen", "--force"]) == 0
    assert calls[-1][:6] == ["dvc", "exp", "run", "--force", "-n", "local-04-frozen"]
    assert cli(["piece", "no-such-piece"]) == 2
    assert "no piece 'no-such-piece'" in capsys.readouterr().err
    assert cli(["piece", "--list"]) == 0
    assert "local-04-frozen " in capsys.readouterr().out
    assert cli(["piece", "--list", "--verbose"]) == 0
    assert "local-04-frozen, ~0.4 h: the separation table's frozen rows" in capsys.readouterr().out


def test_a_dvc_report_counts_for_a_piece_when_it_recorded_the_pieces_values(tmp_path):
    from compsense.pipeline.profiles import load_profile

    seeds = "training_ab.seeds=[42, 43, 44]"
    spec = {"profile": "local", "only": "02", "set": [seeds]}
    (tmp_path / "pieces.yaml").write_text(yaml.safe_dump({"pieces": {"seeds": spec}}))
    piece = P.load_pieces(tmp_path / "pieces.yaml")["seeds"]
    ok = {"02": {"status": "ok", "seconds": 60.0}}
    report = {"profile": "local", "stages": ok, "commit": "abc"}
    assert not piece.made({**report, "params": load_profile("local")})  # the profile unnarrowed
    assert piece.made({**report, "params": load_profile("local", [seeds])})
    assert not piece.made({**report, "params": load_profile("local", [seeds]), "stages": {}})  # 02 not run
    assert not piece.made({**report, "params": load_profile("local", [seeds]), "profile": "smoke"})
    # a value of a stage the piece does not run does not matter
    assert piece.made({**report, "params": load_profile("local", [seeds, "pooled_geometry.seeds=[43]"])})


def test_the_list_fits_100_columns_says_where_to_start_and_keeps_the_details_behind_verbose(tmp_path):
    long = "a table " * 40
    spec = {
        "later": {"profile": "local", "only": "02", "makes": "Table 1", "hours": 0.5},  # needs 01: not a start
        "long": {
            "profile": "local",
            "only": "01,02",
            "makes": long,
            "hours": 2.0,
            "set": ["training_ab.seeds=[42]"],
        },
        "first": {"profile": "local", "only": "01", "makes": "the near-miss pairs", "hours": 0.12},
    }
    (tmp_path / "pieces.yaml").write_text(yaml.safe_dump({"pieces": spec}, sort_keys=False))
    pieces = P.load_pieces(tmp_path / "pieces.yaml")
    assert P.start_piece(pieces).name == "first"  # self-contained and the shortest
    short = P.list_pieces(tmp_path / "runs", tmp_path / "pieces.yaml")
    assert max(len(line) for line in short.splitlines()) <= 100
    assert "Start here: `python -m compsense piece first` (~7 min: the near-miss pairs)" in short
    assert "1 other piece of profile local reads what it writes" in " ".join(short.split())  # `later`
    assert "--set" not in short and long.strip() not in short and "…" in short  # cut to fit
    full = P.list_pieces(tmp_path / "runs", tmp_path / "pieces.yaml", verbose=True)
    assert long.strip() in " ".join(full.split())
    assert "dvc exp run -n long \\\n  local-01 \\\n  local-02" in full
    _report(tmp_path / "runs", [], {"01": {"status": "ok", "seconds": 540.0}}, commit="c0ffee1")
    short = P.list_pieces(tmp_path / "runs", tmp_path / "pieces.yaml")
    assert "c0ffee1, 9 min" in short and "It has a finished run here (commit c0ffee1)" in " ".join(short.split())


def test_a_run_whose_first_stage_was_skipped_as_unchanged_is_the_pieces():
    """A chained piece (study-04-budget-e2e-seed43 after study-04-budget-e2e) finds notebook 01 unchanged
    and skips it: the run is still the piece's; a failed or missing stage is not, nor a record without the
    values it ran with (the retired runner's, with `--set` overrides)."""
    from compsense.pipeline.profiles import load_profile

    piece = P.load_pieces()["study-04-budget-e2e-seed43"]
    summary = {"profile": P.dvc_profile(piece.profile), "params": piece.values}
    ok = {"01": {"status": "skipped"}, "04": {"status": "ok"}}
    assert piece.made({**summary, "stages": ok})
    assert not piece.made({**summary, "stages": {**ok, "04": {"status": "failed"}}})
    assert not piece.made({**summary, "stages": {"04": {"status": "ok"}}})
    assert not piece.made({**summary, "params": load_profile("local"), "stages": ok})
    assert not piece.made({"profile": piece.profile, "overrides": list(piece.overrides), "stages": ok})  # no values


def _curves():
    """{piece name: (its budget curve, notebook 04's parameters)} of every piece that runs the curve."""
    from compsense.pipeline.profiles import load_profile
    from compsense.verifiers.budget import BudgetCurve

    out = {}
    for name, piece in P.load_pieces().items():
        params = load_profile(piece.profile, piece.overrides).get("verifiers", {})
        curve = BudgetCurve.from_params(params.get("budget_curve"))
        if "04" in piece.stages and curve.enabled:
            out[name] = (curve, params)
    return out


def test_every_budget_piece_trains_on_rows_notebook_04_builds():
    for name, (curve, params) in _curves().items():
        assert curve.train_data in params["train_data"], name


def test_the_balanced_pieces_cover_issue_50s_grid_beside_model_b():
    """F3 and F4 (ours; the authors' F4) on balanced rows at 8,192 and 48,000 frozen and 8,192 end-to-end,
    seeds 42-44 each: together the balanced pieces plan every one of those points."""
    from compsense.verifiers.study import size_plan

    planned = set()
    for curve, params in _curves().values():
        for budget, seed in curve.plan(params["verifier_seeds"]):
            plan = size_plan(curve.sizes, curve.verifiers, curve.regimes_at(budget), curve.size_scope)
            for size, (names, regimes) in plan.items():
                planned |= {(curve.train_data, n, r, size, budget, seed) for n in names for r in regimes}
    wanted = {
        (data, name, regime, size, budget, seed)
        for data in ("balanced", "model_b")
        for name, size in (("F3", "small"), ("F4", "small"), ("F4", "paper"))
        for regime, budgets in (("frozen", (8192, 48000)), ("end2end", (8192,)))
        for budget in budgets
        for seed in (42, 43, 44)
    }
    assert not wanted - planned, sorted(wanted - planned)


def test_each_piece_is_also_a_dvc_experiment_on_the_stages_of_its_profile_or_the_one_it_extends():
    from compsense.pipeline import dvcfile

    stages = set(yaml.safe_load((dvcfile.repo_root() / dvcfile.DVC_YAML).read_text())["stages"])
    pieces = P.load_pieces()
    for piece in pieces.values():
        args = piece.dvc_args()
        assert args[0] == f"dvc exp run -n {piece.name}"
        targets = [a for a in args[1:] if not a.startswith(("-S", "--single-item"))]
        assert targets and set(targets) <= stages, piece.name
    local = pieces["local-02"].dvc_args()
    assert local == [
        "dvc exp run -n local-02",
        "-S 'params/local.yaml:training_ab.seeds=[42, 43, 44]'",
        "-S 'params/local.yaml:training_ab.variants=[base, A, B, C-identity]'",
        "local-02",
    ]
    # a study piece runs on local's stages with what study changes there, never the runner's profile label
    assert P.dvc_profile("study") == "local" and P.dvc_profile("smoke") == "smoke"
    study = next(p for p in pieces.values() if p.profile == "study" and "02" in p.stages)
    sets = [a for a in study.dvc_args() if a.startswith("-S")]
    assert all(s.startswith("-S 'params/local.yaml:") for s in sets) and not [s for s in sets if "common.profile" in s]
    assert any("training_ab.seeds=" in s for s in sets)  # study's five seeds, which local does not set


def test_a_pieces_dvc_lines_give_its_stages_the_values_the_runner_would(tmp_path):
    """DVC's own override reader (Hydra's grammar), applied to a copy of the base profile's file, gives
    each stage of every piece exactly the values `load_profile` gives the runner: a nested mapping is
    set leaf by leaf, a key the base lacks is added and one the piece drops is removed."""
    from dvc.utils.hydra import apply_overrides

    from compsense.pipeline.profiles import load_profile

    for piece in P.load_pieces().values():
        base = P.dvc_profile(piece.profile)
        copy = tmp_path / f"{piece.name}.yaml"
        copy.write_text((P.params_dir() / f"{base}.yaml").read_text(encoding="utf-8"), encoding="utf-8")
        sets = [a.removeprefix("-S '").removesuffix("'") for a in piece.dvc_args() if a.startswith("-S")]
        assert all(s.startswith(f"params/{base}.yaml:") for s in sets)
        apply_overrides(copy, [s.split(":", 1)[1] for s in sets])
        got, want = yaml.safe_load(copy.read_text()), load_profile(piece.profile, piece.overrides)
        for section in ["common", *(f"{k}" for k in want if k[:2] in piece.stages)]:
            mine = {k: v for k, v in (want.get(section) or {}).items() if k != "profile"}
            theirs = {k: v for k, v in (got.get(section) or {}).items() if k != "profile"}
            assert theirs == mine, (piece.name, section)
        assert all(len(line) <= 100 for line in piece.dvc_args()) or piece.name, piece.name


def test_overrides_are_one_per_differing_leaf():
    assert P.overrides("s", {"a": 1, "b": {"c": [1, 2], "d": "x"}}, {"a": 1, "b": {"c": [1], "e": 0}}) == [
        "s.b.c=[1, 2]",
        "++s.b.d=x",
        "~s.b.e",
    ]
    assert P.overrides("s", {"a": 1}, {"a": 1}) == []


def test_a_piece_refuses_to_run_over_outputs_dvc_would_replace_and_names_them(monkeypatch, capsys):
    """`dvc exp run` checks out its stages' locked outputs with force: outputs that differ from dvc.lock
    (verifiers trained outside DVC) are named and nothing runs, not deleted."""
    calls, asked = [], []
    monkeypatch.setattr(P.subprocess, "call", lambda args, cwd, env: calls.append(args) or 0)
    monkeypatch.setattr(
        P, "unsaved_outputs", lambda targets: asked.append(targets) or {"runs/local/verifiers": "local-04"}
    )
    assert cli(["piece", "local-04-frozen"]) == 2
    err = capsys.readouterr().err
    assert "runs/local/verifiers" in err and "dvc commit -f local-04`" in err and calls == []
    assert asked == [["local-04"]]


def _dvc_project(tmp_path, monkeypatch, stages: str):
    """A git and DVC project in `tmp_path` with `stages` (dvc.yaml lines under `stages:`); returns a function
    that runs this environment's dvc there (the test is skipped where dvc is not installed)."""
    import subprocess

    dvc = shutil.which("dvc", path=str(Path(sys.executable).parent)) or pytest.skip("dvc is not installed")
    monkeypatch.delenv("DVC_EXP_NAME", raising=False)

    def run(*args):
        return subprocess.run(args, cwd=tmp_path, check=True, capture_output=True, text=True)

    run("git", "init", "-q")
    run(dvc, "init", "-q")
    (tmp_path / "dvc.yaml").write_text("stages:\n" + stages)
    return lambda *args: run(dvc, *args)


def test_unsaved_outputs_are_those_that_differ_from_the_lock(tmp_path, monkeypatch):
    """A real DVC project: a stage's output edited after `dvc repro` is unsaved; its upstream stage's
    outputs are checked with it; an output as the lock has it, or absent, is not."""
    dvc = _dvc_project(
        tmp_path,
        monkeypatch,
        "  first: {cmd: echo one > a.txt, outs: [a.txt]}\n"
        "  second: {cmd: mkdir -p made && cp a.txt made/b.txt, deps: [a.txt], outs: [{made: {persist: true}}]}\n",
    )
    dvc("repro", "-q")
    assert P.unsaved_outputs(["second"], root=tmp_path) == {}
    (tmp_path / "made" / "mine.txt").write_text("trained outside DVC\n")
    (tmp_path / "a.txt").write_text("edited\n")
    assert P.unsaved_outputs(["second"], root=tmp_path) == {"a.txt": "first", "made": "second"}
    assert P.unsaved_outputs(["first"], root=tmp_path) == {"a.txt": "first"}
    # targets that share an upstream stage: each stage and output once
    assert P.unsaved_outputs(["second", "first"], root=tmp_path) == {"a.txt": "first", "made": "second"}
    (tmp_path / "a.txt").unlink()
    assert P.unsaved_outputs(["first"], root=tmp_path) == {}
    # an empty folder (an `alone` piece's stand-in) differs from the lock but holds nothing to lose
    shutil.rmtree(tmp_path / "made")
    (tmp_path / "made").mkdir()
    assert P.unsaved_outputs(["second"], root=tmp_path) == {}


def test_a_piece_alone_runs_its_stages_without_the_stages_they_need(monkeypatch, tmp_path):
    """`alone: true`: `dvc exp run --single-item`, after the folders another stage would make stand in empty."""
    spec = {"pieces": {"budget": {"profile": "local", "only": "04", "alone": True}}}
    (tmp_path / "pieces.yaml").write_text(yaml.safe_dump(spec))
    piece = P.load_pieces(tmp_path / "pieces.yaml")["budget"]
    assert piece.alone and piece.dvc_args()[:2] == ["dvc exp run -n budget", "--single-item"]
    calls, asked = [], []
    monkeypatch.setattr(P, "unsaved_outputs", lambda targets: {})
    monkeypatch.setattr(P, "stand_ins", lambda targets: asked.append(targets) or ["runs/local/models"])
    monkeypatch.setattr(P.subprocess, "call", lambda args, cwd, env: calls.append(args) or 0)
    monkeypatch.setattr(P.stage, "report", lambda profile, name: f"runs/{profile}/report")
    assert P.run_piece("budget", path=tmp_path / "pieces.yaml") == 0
    assert calls == [["dvc", "exp", "run", "-n", "budget", "--single-item", "local-04"]] and asked == [["local-04"]]
    assert not P.load_pieces()["local-04-frozen"].alone  # by default DVC runs what a stage needs


def test_stand_ins_let_dvc_run_a_stage_without_the_one_upstream(tmp_path, monkeypatch):
    """A real DVC project: the stage that would make `up/` never runs; `second` runs on an empty stand-in."""
    dvc = _dvc_project(
        tmp_path,
        monkeypatch,
        "  first: {cmd: mkdir -p up && touch up/slow && touch first-ran, outs: [up]}\n"
        "  second: {cmd: ls up > seen.txt, deps: [up], outs: [seen.txt]}\n"
        "  third: {cmd: cat log.json > x, deps: [log.json], outs: [x]}\n"
        "  fourth: {cmd: touch log.json, outs: [log.json]}\n",
    )
    assert P.stand_ins(["second"], root=tmp_path) == ["up"] and (tmp_path / "up").is_dir()
    assert P.stand_ins(["second"], root=tmp_path) == []  # there now
    dvc("repro", "--single-item", "second")
    assert (tmp_path / "seen.txt").read_text() == "" and not (tmp_path / "first-ran").exists()
    with pytest.raises(P.Refused, match="log.json: missing; stage third needs it. Fix: dvc repro fourth"):
        P.stand_ins(["third"], root=tmp_path)
