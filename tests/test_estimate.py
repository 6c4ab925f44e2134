"""compsense.estimate on synthetic run folders: work units from params/*.yaml, rates from the files a run
writes (DONE.json, verifier.json, executed notebooks), the estimate (units / rate), the CLI and the report
section. Unit counts are derived by hand from params/{smoke,local,paper}.yaml."""

from __future__ import annotations

import dataclasses
import json
import math

import pandas as pd
import pytest

from compsense import estimate as E
from compsense.core.layout import results_file


def _write(path, obj):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(obj) if not isinstance(obj, str) else obj)
    return path


def _done(folder, seconds, steps=100, batch=32):
    """DONE.json as compsense.retrieval.training.train_model writes it."""
    cfg = {"backbone": "minilm-l6", "batch_size": batch, "max_seq_length": 128, "max_steps": steps, "device": None}
    done = {"config": cfg, "global_step": steps, "world_size": 1, "duration_s": seconds}
    done.update(triplets_per_s=steps * batch / seconds, finished_at="2026-11-30T02:46:18+00:00")
    _write(folder / "DONE.json", {**done, "versions": {"torch": "2.13.0+cpu"}})


def _verifier(work, name, regime, seconds, examples, trained=True):
    history = {"verifier": name, "regime": regime, "seconds": seconds, "examples_seen": examples, "trained": trained}
    history.update(batch_size=32, include_special=False, in_batch_negatives=4)
    _write(
        work / "verifiers" / "model_b-small" / "seed42" / f"{name}-{regime}" / "verifier.json",
        {"name": name, "size": "small", "history": history, "settings": {"max_seq_length": 128, "regime": regime}},
    )


def _notebook(path, params, seconds, start="2026-11-30T02:30:00.000001", end="2026-11-30T02:50:00.000001"):
    """An executed notebook as papermill leaves it: its parameters, duration and execution window (naive
    UTC, as papermill writes it) in the metadata; the cells' code is never read."""
    pm = {"parameters": params, "duration": seconds, "exception": None, "start_time": start, "end_time": end}
    cells = [{"cell_type": "code", "source": ["trained = my_renamed_training(runs)"], "metadata": {}}]
    return _write(path, {"cells": cells, "metadata": {"papermill": {k: v for k, v in pm.items() if v is not None}}})


LOCAL_AS_RUN = (
    "training_ab.seeds=[42, 43, 44]",
    "verifiers.regimes=[frozen, end2end]",
    "reranking.regimes=[frozen, end2end]",
)


@pytest.fixture
def run(tmp_path):
    """A local-profile run: A and B x 3 seeds trained (3,200 triplets each, 100 s + 60 s a seed), three
    verifiers, result tables with dataset sizes (SciFact and NFCorpus test), and one run folder with
    executed notebooks 02 (580 s, 480 s of them the six trainings), 03 and 05."""
    work = tmp_path / "runs" / "local"
    for seed in (42, 43, 44):
        _done(work / "models" / "minilm-l6" / f"A-seed{seed}", 100.0)
        _done(work / "models" / "minilm-l6" / f"B-seed{seed}", 60.0)
    _verifier(work, "F0", "frozen", 0.0, 0, trained=False)
    _verifier(work, "F3", "frozen", 8.0, 2048)
    _verifier(work, "F2", "end2end", 20.0, 2048)
    (work / "results").mkdir(parents=True)
    models = [("base", 42)] + [(v, s) for s in (42, 43, 44) for v in ("A", "B")]
    sizes = (("scifact", 300, 5183), ("nfcorpus", 323, 3633))
    columns = "run backbone variant seed dataset metric value structural_share model_stamp harness n_queries n_docs"
    retrieval = [
        (f"minilm-l6/{v}-seed{s}", "minilm-l6", v, s, ds, metric, 0.5, None, "x", "h", nq, nd)
        for v, s in models
        for ds, nq, nd in sizes
        for metric in ("ndcg@10", "acc@1")
    ]
    pd.DataFrame(retrieval, columns=columns.split()).to_parquet(results_file(work, "retrieval.parquet"))
    rerank = [("minilm-l6/base-seed42", 42, "scifact@q150", "ndcg@10", 0.7, 150, 1156)]
    columns = "run seed dataset metric value n_queries n_docs"
    pd.DataFrame(rerank, columns=columns.split()).to_parquet(results_file(work, "rerank.parquet"))
    pd.DataFrame({"device": ["cpu"], "rerank_ms": [1.0]}).to_parquet(results_file(work, "rerank_cost.parquet"))
    # the run was made when the local profile trained three seeds and both verifier regimes
    local = E.stage_params("local", LOCAL_AS_RUN)
    stamp = work / "20261130-010000"
    for name, seconds in (("02_training_ab", 580.0), ("03_pooled_geometry", 30.0), ("05_reranking", 300.0)):
        _notebook(stamp / f"{name}.ipynb", local[name[:2]], seconds)
    return work


def _row(df, stage, component, backbone=None):
    hit = df[(df.stage == stage) & (df.component == component)]
    if backbone is not None:
        hit = hit[hit.backbone == backbone]
    assert len(hit) == 1, (stage, component, backbone, hit)
    return hit.iloc[0]


def _flat(text: str) -> str:
    return " ".join(text.split())


# ---------------------------------------------------------------------------------------------
# Work units


@pytest.mark.slow
def test_units_smoke_local_paper_from_the_yaml():
    smoke, local, paper = (E.work_units(p) for p in ("smoke", "local", "paper"))
    # smoke: tiny-bert; A, B, B-all, C-identity and the sweep's B-share0.5 x 20 steps x batch 16
    assert _row(smoke, "02", "train", "tiny-bert").units == 5 * 20 * 16
    # local: A and B x 1 seed x 100 steps x batch 32 (seeds 43-46 are study pieces: the 2.5 h bound)
    assert _row(local, "02", "train", "minilm-l6").units == 2 * 1 * 100 * 32
    assert not local.component.str.contains("end2end").any()  # end-to-end verifiers: piece local-04
    assert _row(E.work_units("local", overrides=LOCAL_AS_RUN), "02", "train", "minilm-l6").units == 2 * 3 * 100 * 32
    assert _row(local, "03", "score", "minilm-l6").units == 1 + 1 * 2  # base + 1 seed x (A, B)
    # 04: each verifier once per training data (model_b, balanced) and seed (3)
    assert _row(local, "04", "train F3-frozen", "minilm-l6").units == 2 * 3 * 2048
    # the authors' size: only their F4, frozen (size_scope); F0-F2 have one size, their F3 is a GPU job
    assert _row(local, "04", "train F4-frozen (paper size)", "minilm-l6").units == 2 * 3 * 2048
    assert not any(c.endswith("(paper size)") for c in local.component if "F4-frozen" not in c)
    # paper: per backbone A, B, B-all, C-identity x 3 seeds + B-share0.05/0.1/0.35 for the first seed and
    # B-share0.5 for all three = 18 runs, batch 128, steps from the registry's recipe
    expected = {"minilm-l6": 3375, "minilm-l12": 2250, "gte-small": 2250, "gte-modernbert-base": 500}
    for backbone, steps in expected.items():
        assert _row(paper, "02", "train", backbone).units == 18 * steps * 128
        assert _row(paper, "03", "score", backbone).units == 1 + 3 * 2
    # 04: frozen F0/F1 train nothing; everything else sees the 160,000-triplet budget, at the authors'
    # sizes (their own rate), once per training data (2) and seed (3)
    assert _row(paper, "04", "train F0-frozen (paper size)").units == 0
    assert _row(paper, "04", "train F1-end2end (paper size)").units == 6 * 160_000
    assert paper[paper.component.str.startswith("train ")].units.sum() == 8 * 6 * 160_000
    assert _row(paper, "04", "score").units == 3 + 5 * 2 * 6


@pytest.mark.slow
def test_dataset_sized_units_come_from_the_runs_tables(run):
    local = E.work_units("local", run, overrides=LOCAL_AS_RUN)
    # 02 evaluate: base + A, B x 3 seeds on SciFact (300 + 5,183) and NFCorpus test (323 + 3,633 texts)
    assert _row(local, "02", "evaluate", "minilm-l6").units == 7 * (5483 + 3956)
    # 05: 5 verifiers x 2 regimes x 3 verifier seeds x 4 notebook-04 variants x 150 queries (scifact@q150 in
    # rerank.parquet) x top-100
    assert _row(local, "05", "rerank").units == 30 * 4 * 150 * 100
    # without a run, or for datasets no run evaluated (NanoBEIR): unknown, never guessed
    assert math.isnan(_row(E.work_units("local", overrides=LOCAL_AS_RUN), "02", "evaluate", "minilm-l6").units)
    paper = E.work_units("paper", run)
    assert math.isnan(_row(paper, "05", "rerank").units) and "NanoArguAna" in _row(paper, "05", "rerank").note


# ---------------------------------------------------------------------------------------------
# Measured rates


def test_rates_are_units_over_seconds(run):
    m = E.measured_rates(run)
    train = _row(m, "02", "train", "minilm-l6")
    assert (train.units, train.seconds, train.rate) == (19200, 480.0, 40.0) and train.device == "cpu"
    # the rest of stage 02: the notebook's 580 s less the 480 s of the six trainings that DONE.json
    # records as finished inside its execution window, for 7 x 9,439 texts
    ev = _row(m, "02", "evaluate")
    assert ev.seconds == pytest.approx(100.0) and ev.units == 7 * 9439 and "02_training_ab.ipynb" in ev.source
    f3 = _row(m, "04", "train F3-frozen")
    assert f3.rate == 2048 / 8.0 and f3.source.endswith("verifier.json")
    assert m[m.component == "train F0-frozen"].empty  # nothing trained, nothing measured
    assert _row(m, "05", "rerank").rate == pytest.approx(1_800_000 / 300.0)  # 30 methods x 4 variants x 15,000
    # without the rerank cost table, the device is the CPU-only torch build DONE.json records
    results_file(run, "rerank_cost.parquet").unlink()
    assert set(E.measured_rates(run).device) == {"cpu (torch 2.13.0+cpu)"}
    with pytest.raises(FileNotFoundError, match="work_dir"):
        E.measured_rates(run / "nope")


def test_a_notebooks_own_time_is_its_slowest_execution_less_the_trainings_inside_it(run):
    """Training time is subtracted by the records' times: models reused from before an execution are not
    subtracted; the slowest execution of a stage counts (a re-run finds caches); a notebook without an
    execution window (run by hand) measures nothing for a training stage."""
    later, params = run / "20261130-030000", E.stage_params("local", LOCAL_AS_RUN)
    window = {"start": "2026-11-30T03:00:00", "end": "2026-11-30T03:10:00"}  # the six models finished at 02:46
    _notebook(later / "02_training_ab.ipynb", params["02"], 230.0, **window)
    _notebook(later / "03_pooled_geometry.ipynb", params["03"], 3.0)
    m = E.measured_rates(run)
    assert _row(m, "02", "evaluate").seconds == pytest.approx(230.0)  # nothing subtracted: all six reused
    assert _row(m, "03", "score").seconds == 30.0  # the slower of 30 s and 3 s
    _notebook(later / "02_training_ab.ipynb", params["02"], 230.0, start=None, end=None)
    assert _row(E.measured_rates(run), "02", "evaluate").seconds == pytest.approx(100.0)  # windowless: left out


# ---------------------------------------------------------------------------------------------
# The estimate: units / rate


@pytest.mark.slow
def test_estimate_of_the_same_profile_reproduces_the_measurements(run):
    est = E.estimate("local", run, overrides=LOCAL_AS_RUN)
    assert _row(est, "02", "train", "minilm-l6").seconds == pytest.approx(480.0)
    assert _row(est, "02", "evaluate", "minilm-l6").seconds == pytest.approx(100.0)
    assert _row(est, "03", "score", "minilm-l6").seconds == pytest.approx(30.0)
    assert _row(est, "04", "train F0-frozen").seconds == 0.0
    # one measured training of 2,048 triplets in 8 s; the local profile trains it 2 x 3 times
    assert _row(est, "04", "train F3-frozen").seconds == pytest.approx(6 * 8.0)
    total = est.iloc[-1]
    assert total.stage == "total" and total.seconds == pytest.approx(est.iloc[:-1].seconds.sum())


@pytest.mark.slow
def test_estimate_scales_linearly_with_units_and_rate(run):
    paper = E.estimate("paper", run)
    # 7,776,000 triplets at the 40 triplets/s measured for minilm-l6 (batch 32 measured, 128 asked: noted)
    row = _row(paper, "02", "train", "minilm-l6")
    assert row.seconds == pytest.approx(7_776_000 / 40.0) and "batch_size=32, target 128" in row.assumption
    cited = {("02", "train", "minilm-l6"): {"rate": 80.0, "device": "NVIDIA H200", "source": "a cited measurement"}}
    fast = _row(E.estimate("paper", run, rates=cited), "02", "train", "minilm-l6")
    assert fast.seconds == pytest.approx(row.seconds / 2) and fast.device == "NVIDIA H200"
    with pytest.raises(ValueError, match="needs 'rate', 'device' and 'source'"):
        E.estimate("paper", run, rates={("02", "train", None): {"rate": 1.0}})


@pytest.mark.slow
def test_not_measured_where_no_run_measured_it_or_at_other_settings(run, monkeypatch):
    from compsense.core import encoders as models

    monkeypatch.setitem(
        models.BACKBONES, "minilm-l12", dataclasses.replace(models.BACKBONES["minilm-l12"], n_parameters=None)
    )
    est = E.estimate("local", run, overrides=LOCAL_AS_RUN)
    f3 = _row(est, "04", "train F3-end2end")  # no verifier.json for it
    assert math.isnan(f3.seconds) and f3.source.startswith(E.NOT_MEASURED)
    assert _row(est, "01", "negatives").source.startswith(E.NOT_MEASURED)  # no executed notebook 01
    assert "not measured" in est.iloc[-1].source
    paper = E.estimate("paper", run)
    # other backbones: no run, and no parameter count in the registry to scale by
    assert _row(paper, "02", "train", "minilm-l12").source.startswith(E.NOT_MEASURED)
    # the authors' F3 is another network than the small one measured: its rate is not borrowed
    assert _row(paper, "04", "train F3-frozen (paper size)").source.startswith(E.NOT_MEASURED)
    # the measured rate holds only at the measured settings (other caps), for its backbone and when scaled
    for backbone in ("minilm-l6", "gte-small", "gte-modernbert-base"):
        row = _row(paper, "03", "score", backbone)
        assert math.isnan(row.seconds) and row.source.startswith(E.NOT_MEASURED)
        assert "max_pairs_per_family" in row.source
    assert "other settings" in _row(paper, "03", "score", "gte-small").source


@pytest.mark.slow
def test_other_backbones_scale_by_parameter_count(run, monkeypatch):
    from compsense.core import encoders as models

    for name, n in (("minilm-l6", 20), ("minilm-l12", 40)):
        monkeypatch.setitem(models.BACKBONES, name, dataclasses.replace(models.BACKBONES[name], n_parameters=n))
    row = _row(E.estimate("paper", run), "02", "train", "minilm-l12")
    assert row.rate == pytest.approx(40.0 * 20 / 40) and row.seconds == pytest.approx(18 * 2250 * 128 / 20.0)
    assert "parameter count" in row.assumption


def test_headline_names_the_device_and_never_calls_nothing_zero(tmp_path):
    def frame(*rows):
        return pd.DataFrame([dict(zip(("seconds", "device", "source"), r)) for r in rows])

    cpu = E.headline(frame((60.0, "cpu (x)", ""), (60.0, "cpu (x)", ""), (120.0, None, "every row measured")))
    assert "CPU estimate, not a GPU (H200) one" in cpu and "120 s (2.0 min)" in cpu
    assert "mix devices" in E.headline(frame((1.0, "cpu", ""), (1.0, "NVIDIA H200", ""), (2.0, None, "")))
    nothing = frame((math.nan, None, "not measured"), (math.nan, None, "1 row(s) not measured"))
    assert E.headline(nothing).startswith("Estimated total: not measured: no run measured any of the 1 rows")
    with pytest.raises(FileNotFoundError, match="no published measurements. Fix: pass --from"):
        E.estimate("local", tables_dir=tmp_path)


# ---------------------------------------------------------------------------------------------
# CLI and report


@pytest.mark.slow
def test_cli_prints_the_table_the_device_and_cited_rates(run, capsys):
    from compsense.__main__ import main

    sets = [a for o in LOCAL_AS_RUN for a in ("--set", o)]
    assert main(["estimate", "--profile", "local", "--from", str(run), *sets, "--verbose"]) == 0
    out = capsys.readouterr().out
    assert "| 02 | train | minilm-l6 | 19,200 | 40 | 480.0 |" in out and "CPU estimate" in out
    rate = ["--rate", "02/train/minilm-l6=2322", "--rate-device", "NVIDIA H200", "--rate-source", "bench"]
    assert main(["estimate", "--profile", "paper", "--from", str(run), *rate, "--verbose"]) == 0
    out = capsys.readouterr().out
    assert "3,348.8" in out and "measured on a GPU" in out  # 7,776,000 / 2,322 s
    assert "scaled from minilm-l6 by parameter count" in out  # the cited GPU rate scales to the other backbones


@pytest.mark.slow
def test_the_cli_fits_100_columns_and_every_rows_source_is_in_a_note(run, capsys):
    from compsense.__main__ import main

    sets = [a for o in LOCAL_AS_RUN for a in ("--set", o)]
    assert main(["estimate", "--profile", "paper", "--from", str(run), *sets]) == 0
    out = capsys.readouterr().out
    assert max(len(line) for line in out.splitlines()) <= 100
    assert "|" not in out and "--verbose: the whole table" in out
    est = E.estimate("paper", run, overrides=LOCAL_AS_RUN)
    notes = "".join(out.split("\n[1] ", 1)[1].split())  # wrapped: a path longer than a line is broken too
    for r in est.itertuples():
        assert "".join(str(r.source).split()) in notes, r.source  # the source column, whole, in a note
        if isinstance(r.assumption, str) and r.assumption:
            assert "".join(r.assumption.split()) in notes
    # one line per row: stage, component, backbone, units, rate, time and the note it points to
    line = next(x for x in out.splitlines() if x.startswith("02 ") and " train " in x and "minilm-l6 " in x)
    assert line.split()[:5] == ["02", "train", "minilm-l6", "7,776,000", "40/s"]
    assert line.split()[-1] == "[" + line.split("[")[-1]


@pytest.mark.slow
def test_report_has_the_estimate_section_and_never_fails(run, tmp_path, monkeypatch):
    from compsense.pipeline import report

    monkeypatch.setattr(report, "machine", lambda: {"device": "cpu", "python": "3", "versions": {}})
    written = report.build_report(run, tmp_path / "figs", tmp_path / "out", {"profile": "local", "stages": {}})
    md = written["md"].read_text()
    assert f"## {E.ESTIMATE_TITLE}" in md and "Estimated total" in md
    assert "| 02 | train | minilm-l6 | 7,776,000 |" in md
    # the measurements travel with the report's tables: a clone with only those estimates the same
    tables = tmp_path / "out" / report.TABLES_DIR
    assert (tables / "measured_rates.csv").exists() and (tables / "dataset_sizes.csv").exists()
    from_run = E.estimate("local", run, overrides=LOCAL_AS_RUN)
    from_tables = E.estimate("local", tables_dir=tables, overrides=LOCAL_AS_RUN)
    assert from_tables.seconds.tolist() == pytest.approx(from_run.seconds.tolist(), nan_ok=True)
    assert from_tables.iloc[-1].seconds > 0
    (run / "verifiers" / "model_b-small" / "seed42" / "F3-frozen" / "verifier.json").write_text("{broken")
    md = report.build_report(run, tmp_path / "figs", tmp_path / "out2", None)["md"].read_text()
    assert "No estimate: CorruptFile: " in md and "F3-frozen/verifier.json: not readable JSON" in md  # named


# ---------------------------------------------------------------------------------------------
# Measurements kept in the repository


def _published(folder, source, device):
    folder.mkdir(parents=True, exist_ok=True)
    settings = json.dumps({k: E.stage_params("local")["03"].get(k) for k in E.SAME[("03", "score")]})
    row = {"stage": "03", "component": "score", "backbone": "minilm-l6", "units": 3.0, "seconds": 30.0}
    pd.DataFrame([{**row, "source": source, "device": device, "settings": settings, "rate": 0.1}]).to_csv(
        folder / "measured_rates.csv", index=False
    )
    return folder


def test_published_rates_say_when_the_run_that_measured_them_is_not_here(tmp_path):
    """A fresh clone has figures/tables/, not runs/: a row never cites a run file as if it were there."""
    gone = "runs/no-such-profile/20990101-000000/03_pooled_geometry.ipynb"
    device = "cpu (the run's device, recorded in runs/no-such-profile/results/rerank_cost.parquet)"
    rates, _ = E.published_measurements(_published(tmp_path / "gone", f"{gone} (papermill duration)", device))
    expected = f"measured from {gone} (papermill duration) (not in this checkout)"
    assert rates.source[0] == f"{tmp_path / 'gone' / 'measured_rates.csv'}, {expected}"
    assert rates.device[0] == "cpu"  # the absent file it cited is not
    est = E.estimate("local", tables_dir=tmp_path / "gone", only=["03"], pages_summary=False)
    assert _row(est, "03", "score").seconds == pytest.approx(30.0) and "not in this checkout" in _flat(
        E.screen_text(est)
    )
    assert "No measured run given (--from): using the committed rates" in _flat(E.rates_origin())
    here = _write(tmp_path / "runs" / "local" / "03_pooled_geometry.ipynb", "{}")
    rates, _ = E.published_measurements(_published(tmp_path / "here", f"{here} (papermill duration)", "cpu"))
    assert rates.source[0].endswith("(papermill duration) (here)")


def _pages_summary(path, seconds=None, profile="local"):
    seconds = seconds or {"00": 15.0, "06": 11.0, "02": 1125.0}
    stages = {k: {"status": "ok", "seconds": v, "output": f"/x/{k}.ipynb"} for k, v in seconds.items()}
    return _write(path, {"profile": profile, "commit": "09cbc53", "overrides": [], "stages": stages})


def test_notebook_only_stages_are_priced_from_the_committed_pages_run_not_called_unmeasured(tmp_path):
    """00 and 06 run one notebook each and train nothing: the run the notebook pages show (its summary.json,
    committed as docs/notebooks/run_summary.json) timed them whole, so they are priced, citing it."""
    tables = _published(tmp_path / "tables", "runs/x/03.ipynb (papermill duration)", "cpu")
    summary = _pages_summary(tmp_path / "docs" / "run_summary.json")
    est = E.estimate("local", tables_dir=tables, pages_summary=summary, only=["00", "03", "06"])
    for stage, seconds in (("00", 15.0), ("06", 11.0)):
        row = _row(est, stage, "notebook")
        assert row.seconds == pytest.approx(seconds) and row.device == E.UNRECORDED
        assert "run_summary.json: the whole stage" in row.source and "commit 09cbc53" in row.source
    assert E.pages_measurements(summary).stage.tolist() == ["00", "06"]  # 02 trains: its whole time is no rate
    assert est.iloc[-1].source == "every row measured"
    head = E.headline(est)
    assert "2 row(s) record no device (00 notebook, 06 notebook: 26 s)" in head and "CPU estimate" in head
    # without that record, nothing measured them: said, never guessed
    alone = E.estimate("local", tables_dir=tables, pages_summary=False, only=["00"])
    assert _row(alone, "00", "notebook").source.startswith(E.NOT_MEASURED)


@pytest.mark.slow
def test_a_runs_own_notebook_timing_wins_over_the_pages_run(run, tmp_path):
    _notebook(run / "20261130-010000" / "00_the_problem.ipynb", E.stage_params("local")["00"], 40.0)
    est = E.estimate("local", run, overrides=LOCAL_AS_RUN, pages_summary=_pages_summary(tmp_path / "summary.json"))
    assert _row(est, "00", "notebook").seconds == pytest.approx(40.0)
    assert "00_the_problem.ipynb" in _row(est, "00", "notebook").source
    assert _row(est, "06", "notebook").seconds == pytest.approx(11.0)  # the run did not measure 06


# ---------------------------------------------------------------------------------------------
# The training-length curve's pieces


def _length_record(path, parts, control=()):
    return _write(path, {"parts": list(parts), "precision_control": list(control), "versions": {"torch": "2.13.0+cpu"}})


def _part(variant, steps, train_s, eval_s, precision="bf16"):
    return dict(variant=variant, seed=42, steps=steps, train_s=train_s, eval_s=eval_s, precision=precision, commit="c")


def test_length_rates_are_the_slowest_recorded_part_per_step(tmp_path):
    record = _length_record(
        tmp_path / "length_record.json",
        # B resumed at step 25: 760 s for the 25 steps it trained, recorded against steps 25,50
        [_part("A", [25, 50], 1500.0, 300.0), _part("B", [25, 50], 760.0, 300.0), _part("C", [25, 50], 1560.0, 410.0)],
        [_part("A", [25], 1400.0, 370.0, precision="fp32")],
    )
    bf16 = E.length_rates("bf16", record)
    assert bf16["train"][0] == pytest.approx(1560.0 / 50) and bf16["train"][1]["variant"] == "C"
    assert bf16["score"][0] == pytest.approx(410.0 / 2) and bf16["parts"] == 3
    assert bf16["device"].startswith("cpu (torch 2.13.0+cpu")
    fp32 = E.length_rates("fp32", record)  # the precision control's part counts for its precision
    assert fp32["train"][0] == pytest.approx(1400.0 / 25) and fp32["score"][0] == pytest.approx(370.0)
    with pytest.raises(ValueError, match="no part of the curve ran at bf16"):
        E.length_rates("bf16", _length_record(tmp_path / "fp32_only.json", [], [_part("A", [25], 1.0, 1.0, "fp32")]))
    with pytest.raises(FileNotFoundError, match="length --publish"):
        E.length_rates("bf16", tmp_path / "absent.json")


def test_a_length_piece_is_priced_from_where_its_runs_stand(tmp_path):
    from compsense.core.layout import model_dir

    record = _length_record(tmp_path / "record.json", [_part("A", [25, 50], 1500.0, 400.0)])  # 30 s, 200 s a step
    root = tmp_path / "length"
    rows = E.length_estimate([100, 200], ["A", "B"], "bf16", root=root, record_path=record).set_index("model")
    assert rows.loc["A", "train_s"] == pytest.approx(200 * 30.0) and rows.loc["A", "score_s"] == pytest.approx(400.0)
    assert rows.loc["Base", "score_s"] == pytest.approx(200.0)  # scored once per root, as one step
    assert rows.loc["total", "seconds"] == pytest.approx(2 * (6000.0 + 400.0) + 200.0)
    # A has exported step 100 and a checkpoint at 150 (a piece cut short): it trains 150 -> 200 and scores 200
    run = model_dir(root / "runs", "minilm-l6", "length-A", 42)
    _write(run / "steps" / "step-00100" / "STEP.json", {})
    (run / "checkpoint-150").mkdir(parents=True)
    (root / "results").mkdir()
    pd.DataFrame({"variant": ["Base"], "stamp": ["pretrained-bf16"]}).to_parquet(
        root / "results" / "length_points.parquet"
    )
    rows = E.length_estimate([100, 200], ["A"], "bf16", root=root, record_path=record).set_index("model")
    assert rows.loc["A", "trains"] == "steps 150-200" and rows.loc["A", "train_s"] == pytest.approx(50 * 30.0)
    assert rows.loc["A", "scores"] == "steps 200" and rows.loc["A", "score_s"] == pytest.approx(200.0)
    assert rows.loc["Base", "score_s"] == 0.0  # the root scored Base at bf16 already
    done = E.length_estimate([100], ["A"], "bf16", root=root, record_path=record).set_index("model")
    assert done.loc["A", "seconds"] == 0
    for steps, variants in (([100], ["D"]), ([0], ["A"]), ([4000], ["A"])):  # what `length` itself refuses
        with pytest.raises(ValueError, match=r"the variants are A, B, C.* and the steps lie in 1\.\.3375"):
            E.length_estimate(steps, variants, "bf16", root=root, record_path=record)


def test_estimate_length_on_the_command_line_reads_the_committed_record(tmp_path, capsys):
    from compsense.__main__ import main

    assert main(["estimate", "--length", "--steps", "100", "--variants", "A,C", "--root", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert max(len(line) for line in out.splitlines()) <= 100
    rates = E.length_rates("bf16")
    assert f"training {rates['train'][0]:.1f} s a step at batch 128" in _flat(out)
    assert "From figures/tables/length_record.json" in _flat(out)
    table = {line.split()[0]: line for line in out.splitlines() if line.split()[:1] in (["A"], ["C"], ["total"])}
    assert "steps 0-100" in table["A"] and "steps 100" in table["C"] and "h" in table["total"]


def test_the_estimate_finds_the_length_root_where_length_does_without_making_it(tmp_path, monkeypatch):
    from compsense.nearmiss.length_run import LENGTH_ROOT_ENV, length_root

    monkeypatch.setenv(LENGTH_ROOT_ENV, str(tmp_path / "from-env"))
    assert length_root(create=False) == tmp_path / "from-env" and not (tmp_path / "from-env").exists()
    assert length_root(create=False) == length_root()  # the same folder (length_root makes it)
    assert length_root(tmp_path / "given", create=False) == length_root(tmp_path / "given")
    monkeypatch.delenv(LENGTH_ROOT_ENV)
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert length_root(create=False) == tmp_path / "home" / ".cache" / "compsense" / "length"
    assert len(E.length_estimate([25], ["A"])) == 3  # A, Base and the total, from the committed record
    assert not (tmp_path / "home").exists()  # the estimate of a piece reads the root and never makes it
