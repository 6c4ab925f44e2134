"""compsense.retrieval.length (the authors' schedule stopped early), length_curve (scoring the points and
their differences) and the length figure, on tiny-bert and hand-made rows."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from safetensors.numpy import load_file

from compsense.nearmiss import length_curve as LC
from compsense.retrieval import length as L
from compsense.retrieval.training import TrainConfig
from tests.test_train import retrieval_rows, structural_rows


def test_schedule_rows_prefix_stable_share_and_repeats():
    ret, st = retrieval_rows(40), structural_rows(30)
    long = L.schedule_rows(ret, st, 0.19, 7, 800)
    short = L.schedule_rows(ret, st, 0.19, 7, 200)
    pd.testing.assert_frame_equal(long.iloc[:200], short)  # a longer schedule extends a shorter one
    assert abs((long.kind == "structural").mean() - 0.19) < 0.05
    counts = L.repeat_counts(long, 80)
    # passes: no retrieval row is read twice before all 40 were read once
    n_ret = counts["retrieval"]["rows"]
    assert counts["retrieval"]["max_reads"] == -(-n_ret // 40)
    a = L.schedule_rows(ret, st, 0.0, 7, 200)
    b_ret = long[long.kind == "retrieval"].reset_index(drop=True)
    # B's retrieval rows are A's, in A's order (a prefix of the same stream)
    pd.testing.assert_frame_equal(b_ret[["anchor", "positive"]].iloc[:50], a[["anchor", "positive"]].iloc[:50])


def test_control_keeps_positions_and_anchors_changes_negatives():
    ret, st = retrieval_rows(40), structural_rows(30)
    b = L.schedule_rows(ret, st, 0.19, 3, 300)
    c = L.schedule_rows(ret, st, 0.19, 3, 300, negatives="random")
    assert (b.kind == c.kind).all() and (b.anchor == c.anchor).all()
    s = b.kind == "structural"
    assert (b.negative[~s] == c.negative[~s]).all()
    assert (b.negative[s] != c.negative[s]).mean() > 0.9
    with pytest.raises(ValueError, match="negatives"):
        L.schedule_rows(ret, st, 0.19, 3, 10, negatives="other")
    with pytest.raises(ValueError, match="structural triplets"):
        L.schedule_rows(ret, st.iloc[:0], 0.5, 3, 10)


def test_b_para_pool_takes_the_anchors_paraphrase_as_positive_and_keeps_positions():
    from compsense.nearmiss.length_run import paraphrase_pool

    ret, st = retrieval_rows(40), structural_rows(30)
    # three anchors have a training paraphrase: on either side of its pair, and once only by id (s6 is
    # sentence1 under another spelling, so its partner is sentence2)
    para = pd.DataFrame(
        {
            "sentence1": [st.anchor[0], f"reworded {st.anchor[3]}", "unrelated"],
            "sentence2": [f"reworded {st.anchor[0]}", st.anchor[3], "by id only"],
            "id1": ["x0", "x3", "s6"],
            "id2": ["y0", "y3", "y6"],
        }
    )
    pool = paraphrase_pool(st, paraphrases=para)
    assert list(pool.anchor) == [st.anchor[0], st.anchor[3], st.anchor[6]]
    assert list(pool.positive) == [f"reworded {st.anchor[0]}", f"reworded {st.anchor[3]}", "by id only"]
    assert (pool.negative == st.negative[[0, 3, 6]].to_numpy()).all()  # the near-miss stays the negative
    b = L.schedule_rows(ret, st, 0.19, 3, 300)
    bp = L.schedule_rows(ret, pool, 0.19, 3, 300)
    assert (b.kind == bp.kind).all()  # the same positions are structural, and the same retrieval rows fill the rest
    r = b.kind == "retrieval"
    assert (b[r].anchor == bp[r].anchor).all()
    assert (bp[~r].positive != bp[~r].anchor).all()
    with pytest.raises(ValueError, match="B-para: no structural anchor has a paraphrase"):
        paraphrase_pool(st, paraphrases=para.assign(sentence1="a", sentence2="b", id1="n", id2="m"))
    assert L.LENGTH_VARIANTS["B-para"][:2] == L.LENGTH_VARIANTS["B"][:2]  # only the positives differ


def test_schedule_config_is_the_authors_and_lr_at_matches_transformers():
    cfg = L.schedule_config("B", 42, "/tmp/x")
    assert (cfg.max_steps, cfg.batch_size, cfg.learning_rate, cfg.weight_decay, cfg.warmup_ratio, cfg.scale) == (
        3375,
        128,
        1e-4,
        0.001,
        0.1,
        10.0,
    )
    assert cfg.structural_share == 0.19 and cfg.variant == "length-B"
    import torch
    from transformers import get_linear_schedule_with_warmup

    opt = torch.optim.SGD([torch.nn.Parameter(torch.zeros(1))], lr=1e-4)
    sched = get_linear_schedule_with_warmup(opt, 338, 3375)
    lrs = []
    for _ in range(401):
        lrs.append(sched.get_last_lr()[0])
        opt.step()
        sched.step()
    for step in (0, 25, 100, 338, 400):
        assert L.lr_at(step) == pytest.approx(lrs[step], rel=1e-9, abs=1e-15)
    with pytest.raises(ValueError, match="unknown length variant"):
        L.schedule_config("D", 42, "/tmp/x")


def _tiny_config(tmp_path, variant="length-C"):
    return TrainConfig(
        backbone="tiny-bert",
        variant=variant,
        seed=42,
        structural_share=0.19,
        max_steps=20,
        batch_size=8,
        max_seq_length=32,
        keep_checkpoints=True,
        logging_steps=2,
        work_dir=str(tmp_path),
        fp16=False,
        bf16=False,
    )


@pytest.mark.slow
def test_train_to_steps_resumes_to_the_same_weights(tmp_path):
    rows = L.schedule_rows(retrieval_rows(40), structural_rows(30), 0.19, 42, 160, negatives="random")
    whole = L.train_to_steps(_tiny_config(tmp_path / "whole"), rows, [2, 4])
    parts = L.train_to_steps(_tiny_config(tmp_path / "parts"), rows, [2])
    parts = L.train_to_steps(_tiny_config(tmp_path / "parts"), rows, [2, 4])
    assert sorted(parts) == [2, 4]
    for step in (2, 4):
        w1 = load_file(whole[step] / "model.safetensors")
        w2 = load_file(parts[step] / "model.safetensors")
        assert all(np.allclose(w1[k], w2[k], atol=1e-6) for k in w1)
        info = json.loads((parts[step] / "STEP.json").read_text())
        assert info["step"] == step and info["triplets"] == step * 8 and info["loss"] is not None
    assert L.loss_curve(whole[4].parents[1]).step.tolist() == [1, 2, 4]
    # between exported steps a resumable checkpoint is kept every `checkpoint_every` steps
    L.train_to_steps(_tiny_config(tmp_path / "every"), rows, [5], checkpoint_every=3)
    assert (tmp_path / "every" / "models" / "tiny-bert" / "length-C-seed42" / "checkpoint-3").is_dir()
    # finished steps are not trained again; other rows in the same folder are refused
    assert L.train_to_steps(_tiny_config(tmp_path / "whole"), rows, [4]) == {4: whole[4]}
    other = L.schedule_rows(retrieval_rows(40), structural_rows(30), 0.19, 43, 160)
    with pytest.raises(ValueError, match="different setup"):
        L.train_to_steps(_tiny_config(tmp_path / "whole"), other, [6])
    with pytest.raises(ValueError, match="fewer than"):
        L.train_to_steps(_tiny_config(tmp_path / "x"), rows.iloc[:20], [4])


def _points():
    rows, pq = [], []
    rng = np.random.default_rng(0)
    qids = [f"q{i}" for i in range(60)]
    base = rng.uniform(0.3, 0.8, len(qids))
    for variant, shift, step in [("Base", 0.0, 0), ("A", -0.05, 25), ("B", -0.08, 25), ("C", -0.05, 25)]:
        vals = np.clip(base + shift + rng.normal(0, 0.01, len(qids)), 0, 1)
        pq.append(
            pd.DataFrame(
                {
                    "qid": qids,
                    "ndcg@10": vals,
                    "acc@1": (vals > 0.5).astype(float),
                    "dataset": "scifact",
                    "variant": variant,
                    "seed": 42,
                    "step": step,
                    "triplets": step * 128,
                }
            )
        )
        for family in ("negation", "binding"):
            rows.append(
                {
                    "dataset": "heldout-near-miss",
                    "family": family,
                    "metric": "auc",
                    "value": 0.3 + shift,
                    "variant": variant,
                    "seed": 42,
                    "step": step,
                    "triplets": step * 128,
                }
            )
    return pd.DataFrame(rows), pd.concat(pq, ignore_index=True)


def test_deltas_and_figure():
    from compsense.figures.length import length_figure

    points, pq = _points()
    d = LC.deltas(points, pq, n=500)
    got = d[(d.metric == "ndcg@10")].set_index("comparison").mean_delta
    assert got["B-A"] == pytest.approx(-0.03, abs=0.01)
    assert got["A-Base"] == pytest.approx(-0.05, abs=0.01)
    assert got["C-A"] == pytest.approx(0.0, abs=0.01)
    row = d[(d.metric == "ndcg@10") & (d.comparison == "B-A")].iloc[0]
    assert row.ci_low < row.mean_delta < row.ci_high and row.ci_high < 0
    assert LC.seed_t_tests(d).empty  # one seed: no t over seeds
    three = pd.concat([d.assign(seed=s, mean_delta=d.mean_delta + 0.001 * s) for s in (42, 43, 44)])
    t = LC.seed_t_tests(three)
    assert set(t.n_seeds) == {3} and (t.t_ci_low <= t.mean_delta).all()
    fig = length_figure(d, points)
    names = {tr.name for tr in fig.data}
    assert {"B-A (seed 42)", "paper B-A (-0.038)", "A negation", "Base binding"} <= names
    # each later seed is drawn apart from the first and from each other
    seeds = length_figure(pd.concat([d, d.assign(seed=43), d.assign(seed=44)]), points)
    styles = {tr.name: (tr.line.dash, tr.marker.symbol) for tr in seeds.data if tr.name.startswith("B-A (seed")}
    assert styles == {
        "B-A (seed 42)": ("solid", "circle"),
        "B-A (seed 43)": ("dash", "diamond"),
        "B-A (seed 44)": ("dot", "square"),
    }


def test_describe_curve_states_each_comparison_with_its_interval_and_the_families():
    points, pq = _points()
    d = LC.deltas(points, pq, n=500)
    text = LC.describe_curve(d, points)
    b_a = d[(d.metric == "ndcg@10") & (d.comparison == "B-A")].iloc[0]
    assert f"B-A: {b_a.mean_delta:+.3f} [{b_a.ci_low:+.3f}, {b_a.ci_high:+.3f}] at 3,200 triplets" in text
    assert "its interval excludes 0 at step(s) 25" in text  # B - A is -0.03 with a tight interval
    assert "negation, step 25: Base 0.30, A 0.25, B 0.22, C 0.25" in text
    para = points[(points.variant == "B") & (points.family == "negation")].assign(variant="B-para", value=0.6)
    assert "negation, step 25: Base 0.30, A 0.25, B 0.22, C 0.25, B-para 0.60" in LC.describe_curve(
        d, pd.concat([points, para], ignore_index=True)
    )
    assert "0.7% of that" in text  # 3,200 of the paper's 432,000 triplets
    assert LC.describe_curve(d[d.dataset == "none"], points).startswith("No scored step")
    external = pd.DataFrame(
        [
            {
                "dataset": "condaqa",
                "family": "all",
                "metric": "auc",
                "value": v,
                "ci_low": v - 0.05,
                "ci_high": v + 0.05,
                "n": 111,
                "variant": var,
                "seed": seed,
                "step": step,
            }
            for var, seed, step, v in [
                ("Base", 0, 0, 0.51),
                ("A", 42, 25, 0.52),
                ("B", 42, 25, 0.55),
                ("B", 42, 50, 0.9),
            ]
        ]
    )
    text = LC.describe_curve(d, points, external=external)
    assert "condaqa near-miss AUC at step 25 (111 near-misses): Base 0.510 [0.460, 0.560], A 0.520" in text
    assert "B 0.550 [0.500, 0.600]." in text and "0.900" not in text  # only the curve's longest step


@pytest.mark.slow
def test_evaluate_point_on_tiny_bert(tmp_path):
    from compsense.core.encoders import load_encoder
    from compsense.data.datasets import BeirDataset

    enc = load_encoder("tiny-bert", device="cpu", max_seq_length=32, seed=0)
    corpus = {f"d{i}": {"title": "", "text": f"document {i} about cells and the sun {i % 3}"} for i in range(30)}
    queries = {f"q{i}": f"cells {i}" for i in range(10)}
    qrels = {f"q{i}": {f"d{i}": 1} for i in range(10)}
    ds = BeirDataset(name="toy", corpus=corpus, queries=queries, qrels=qrels, split="test")
    nm = pd.DataFrame(
        {
            "sentence1": ["the cat is on the mat", "the dog bit the man"],
            "sentence2": ["the cat is not on the mat", "the man bit the dog"],
            "family": ["negation", "binding"],
            "edit": "",
            "source_id": ["a", "b"],
            "split": "test",
        }
    )
    para = pd.DataFrame(
        {
            "sentence1": ["the cat is on the mat", "the dog bit the man"],
            "sentence2": ["a cat sits on the mat", "the man was bitten by the dog"],
        }
    )
    sets = LC.nearmiss_sets(nm, para)
    assert len(sets["triples"]) == 2
    rows, pq = LC.evaluate_point(enc, [ds], sets, {"variant": "A", "seed": 42, "step": 25}, batch_size=8)
    assert set(rows.metric) == {"ndcg@10", "acc@1", "auc", "mean_near_miss_cosine", "pairwise_accuracy"}
    assert rows.value.between(-1, 1).all() and len(pq) == 10 and set(pq.variant) == {"A"}


def _negatives(work_dir: Path) -> None:
    """A tiny notebook-01 output: identity triplets (train) and held-out near-miss pairs of the
    paper's three families."""
    from compsense.core.storage import write_table

    edits = {
        "negation": ("the valve is open {i}", "the valve is not open {i}"),
        "binding": ("the dog chased the cat {i}", "the cat chased the dog {i}"),
        "spatial": ("the lamp is left of the desk {i}", "the lamp is right of the desk {i}"),
    }
    trip, pairs = [], []
    for family, (a, b) in edits.items():
        for i in range(12):
            split = "train" if i < 8 else "test"
            trip.append(
                {
                    "anchor": a.format(i=i),
                    "positive": a.format(i=i),
                    "negative": b.format(i=i),
                    "family": family,
                    "source_id": f"{family}{i}",
                    "split": split,
                }
            )
            pairs.append(
                {
                    "sentence1": a.format(i=i),
                    "sentence2": b.format(i=i),
                    "family": family,
                    "edit": "x",
                    "direction": "",
                    "marker": "",
                    "source_id": f"{family}{i}",
                    "split": split,
                    "source": "toy",
                }
            )
    write_table(pd.DataFrame(trip), work_dir / "negatives" / "triplets.parquet")
    write_table(pd.DataFrame(pairs), work_dir / "negatives" / "pairs.parquet")


@pytest.mark.slow
def test_length_piece_and_publish_on_smoke_data(tmp_path, monkeypatch):
    """The whole command path (the GPU script's CPU check): tiny-bert, the smoke data, a schedule of
    40 steps instead of 3,375, two steps exported per variant, then the published tables and figure."""
    from compsense.core.paths import smoke_data_dir
    from compsense.figures import length_tables
    from compsense.nearmiss import length_run

    monkeypatch.setattr(L, "SCHEDULE_STEPS", 40)
    work = tmp_path / "work"
    _negatives(work)
    root = tmp_path / "root"
    results = length_run.run_piece(
        42, [1, 2], ["A", "B", "C"], "fp32", root, work, smoke_data_dir(), "cpu", "tiny-bert", eval_max_queries=5
    )
    points = pd.read_parquet(results / LC.POINTS)
    assert set(points.variant) == {"Base", "A", "B", "C"}
    assert sorted(points[points.variant == "B"].step.unique()) == [1, 2]
    record = json.loads((results / "record.json").read_text())
    assert {p["variant"] for p in record["parts"]} == {"A", "B", "C"}
    assert record["data"]["42"]["repeats-B"]["2"]["rows"] == 256
    # a second call scores nothing again and trains nothing again
    before = len(points)
    length_run.run_piece(42, [2], ["A"], "fp32", root, work, smoke_data_dir(), "cpu", "tiny-bert", eval_max_queries=5)
    assert len(pd.read_parquet(results / LC.POINTS)) == before
    # the near-miss tests of `compsense nearmiss` for Base and every exported step, each model scored once
    external = length_run.score_external(
        42, ["A", "B"], root=root, work_dir=work, data_dir=smoke_data_dir(), backbone="tiny-bert"
    )
    assert set(zip(external.variant, external.step)) == {("Base", 0), ("A", 1), ("A", 2), ("B", 1), ("B", 2)}
    assert {"condaqa", "sugarcrepe"} <= set(external.dataset) and (external.triplets == external.step * 128).all()
    calls = []
    monkeypatch.setattr("compsense.nearmiss.external.evaluate_near_misses", lambda *a, **k: calls.append(a))
    again = length_run.score_external(
        42, ["A", "B"], root=root, work_dir=work, data_dir=smoke_data_dir(), backbone="tiny-bert"
    )
    assert calls == [] and len(again) == len(external)
    written = length_tables.publish(root=root, figures_dir=tmp_path / "figures")
    names = {Path(p).name for p in written}
    assert "length_external.csv" in names
    assert {
        "length_curve.csv",
        "length_deltas.csv",
        "length_record.json",
        "length_parts.csv",
        "02_length_curve.html",
    } <= names
    deltas = pd.read_csv(tmp_path / "figures" / "tables" / "length_deltas.csv")
    assert {"B-A", "A-Base", "C-A"} <= set(deltas.comparison)
    # the precision control: only the points that have a twin in the control root (same seed, step, variant)
    control = tmp_path / "control" / "results"
    control.mkdir(parents=True)
    (control / "record.json").write_text(json.dumps({"parts": []}))
    twin = points[(points.variant == "A") & (points.step == 1)]
    twin.assign(stamp=twin.stamp.str.replace("-fp32", "-bf16")).to_parquet(control / LC.POINTS)
    length_tables.publish(root=root, figures_dir=tmp_path / "figures", control_root=tmp_path / "control")
    both = pd.read_csv(tmp_path / "figures" / "tables" / "length_precision_control.csv")
    assert set(zip(both.seed, both.step, both.variant)) == {(42, 1, "A")} and set(both.precision) == {"fp32", "bf16"}
    with pytest.raises(FileNotFoundError, match="no scored point"):
        length_tables.publish(root=tmp_path / "empty", figures_dir=tmp_path / "f2")


def test_length_external_cli_scores_every_exported_step_unless_steps_are_given(monkeypatch, capsys):
    from compsense.__main__ import main
    from compsense.nearmiss import length_run

    calls = []

    def fake(seed, variants, steps, root, work_dir, data_dir, backbone):
        calls.append((seed, variants, steps))
        return pd.DataFrame(
            [{"dataset": "condaqa", "family": "all", "metric": "auc", "value": 0.5, "variant": "A", "step": 25}]
        )

    monkeypatch.setattr(length_run, "score_external", fake)
    assert main(["length", "--external", "--variants", "A,B-para"]) == 0
    assert main(["length", "--external", "--steps", "100,200", "--seed", "43"]) == 0
    assert calls == [(42, ["A", "B-para"], None), (43, ["A", "B", "C"], [100, 200])]
    assert "condaqa" in capsys.readouterr().out


@pytest.mark.parametrize("extra", [[], ["--external"]])
def test_an_empty_steps_list_is_refused_not_read_as_the_default_steps(monkeypatch, capsys, extra):
    from compsense.__main__ import main
    from compsense.nearmiss import length_run

    def started(**kwargs):
        raise AssertionError(f"a run started with {kwargs}")

    monkeypatch.setattr(length_run, "run_piece", started)
    monkeypatch.setattr(length_run, "score_external", started)
    assert main(["length", "--steps", "", *extra]) != 0
    assert "--steps is empty" in capsys.readouterr().err


def test_nearmiss_seed_tests_pair_variants_within_a_seed():
    """B - A of a near-miss score is taken within each seed, then a paired t over the seeds: here B
    gains 0.30, 0.32 and 0.34 at seeds 42-44 (interval around 0.32, excluding 0); Base, one untrained
    model, never enters; two seeds give no row."""
    import scipy.stats

    rows = []
    for i, seed in enumerate((42, 43, 44)):
        for variant, value in (("A", 0.2 + 0.01 * i), ("B", 0.5 + 0.03 * i), ("Base", 0.1)):
            rows.append(
                {"seed": seed, "variant": variant, "step": 0 if variant == "Base" else 200, "dataset": "condaqa"}
                | {"family": "all", "metric": "auc", "value": value}
            )
    t = LC.nearmiss_seed_tests(pd.DataFrame(rows))
    assert list(t.comparison) == ["B-A"] and t.n_seeds.iloc[0] == 3 and t.step.iloc[0] == 200
    d = [0.30, 0.32, 0.34]
    want = scipy.stats.ttest_1samp(d, 0.0).confidence_interval(0.95)
    assert t.mean_delta.iloc[0] == pytest.approx(0.32)
    assert (t.t_ci_low.iloc[0], t.t_ci_high.iloc[0]) == pytest.approx((want.low, want.high))
    assert t.t_ci_low.iloc[0] > 0
    assert LC.nearmiss_seed_tests(pd.DataFrame([r for r in rows if r["seed"] != 44])).empty
