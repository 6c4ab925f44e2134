"""compsense.verifiers.joint and `compsense crossencoder` (issue 50, item 4): a real CrossEncoder with a
fresh head, trained by sentence-transformers' trainer on the verifiers' triplets, scored by the
verifiers' own table and reranking code, on the offline tiny BERT and the smoke data."""

from __future__ import annotations

import json
import math
import shutil
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import torch

from compsense.__main__ import main as cli
from compsense.core.encoders import load_encoder
from compsense.core.storage import read_csv, read_json, read_table, write_table
from compsense.data.structural import heldout_paraphrase_pairs
from compsense.nearmiss import evaluation as N
from compsense.nearmiss.geometry import positive_pairs
from compsense.retrieval.harness import load_eval_datasets
from compsense.verifiers import joint as J
from compsense.verifiers import joint_cli
from compsense.verifiers import rerank as R
from compsense.verifiers.architectures import create
from compsense.verifiers.training import _sample_batches

SMOKE = Path(__file__).resolve().parents[1] / "data" / "smoke"
TRAINING = J.JointTraining(budget_examples=20, batch_size=8, lr=1e-3, max_length=64)
ROWS = pd.DataFrame(
    {
        "anchor": [f"the cat {i} sat on the mat" for i in range(12)],
        "positive": [f"a cat {i} was sitting on the mat" for i in range(12)],
        "negative": [f"the cat {i} did not sit on the mat" for i in range(12)],
        "row_kind": "paraphrase",
        "family": "negation",
    }
)


@pytest.fixture(autouse=True)
def bf16_cpu(monkeypatch):
    """The tiny model's bf16 tests run on any CPU: where it has no bf16 instructions the command refuses
    bf16 (test_bf16_is_refused_on_a_cpu_without_it), but a few tiny steps emulated are cheap."""
    monkeypatch.setattr(J, "cpu_has_bf16", lambda: True)


def test_bf16_is_refused_on_a_cpu_without_it(monkeypatch, tmp_path):
    monkeypatch.setattr(J, "cpu_has_bf16", lambda: False)
    with pytest.raises(ValueError, match="no bf16 instructions .* use fp32"):
        J.fit_joint("tiny-bert", ROWS, tmp_path / "bf16", TRAINING.replace(precision="bf16"), seed=1)


def _head(model) -> torch.Tensor:
    return next(p for n, p in model.named_parameters() if "classifier" in n and n.endswith("weight")).detach().clone()


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    folder = tmp_path_factory.mktemp("joint") / "ce"
    model, history = J.fit_joint("tiny-bert", ROWS, folder, TRAINING, seed=1)
    return model, history, folder


def test_budget_rows_are_the_verifiers_triplets_in_their_order():
    rows = J.budget_rows(ROWS, 30, 8, seed=5)
    order = np.concatenate(_sample_batches(len(ROWS), 30, 8, 5))
    assert len(rows) == 30 and rows.anchor.tolist() == ROWS.anchor.iloc[order].tolist()
    # epoch after epoch without replacement: the first 12 are every row once
    assert sorted(rows.anchor[:12]) == sorted(ROWS.anchor)
    assert not rows.equals(J.budget_rows(ROWS, 30, 8, seed=6))
    with pytest.raises(ValueError, match="no training rows"):
        J.budget_rows(ROWS.iloc[:0], 8, 8, seed=1)


def test_fit_joint_draws_the_budget_once_and_trains_on_those_triplets(tmp_path, monkeypatch):
    drawn, seen = [], {}
    real = J.budget_rows
    monkeypatch.setattr(J, "budget_rows", lambda *a, **k: drawn.append(a) or real(*a, **k))
    monkeypatch.setattr(J, "joint_model", lambda *a, **k: "model")

    def train(model, rows, training, seed=42, show_progress=False, batch=None):
        seen["batch"] = batch
        raise RuntimeError("stop before saving")

    monkeypatch.setattr(J, "train_joint", train)
    with pytest.raises(RuntimeError, match="stop before saving"):
        J.fit_joint("tiny-bert", ROWS, tmp_path / "ce", TRAINING, seed=1)
    assert len(drawn) == 1
    assert seen["batch"].equals(real(ROWS, TRAINING.budget_examples, TRAINING.batch_size, 1))


def test_the_head_is_fresh_and_seeded_on_the_backbones_weights():
    a, again, other = (J.joint_model("tiny-bert", seed=s, max_length=64) for s in (3, 3, 4))
    assert torch.equal(_head(a), _head(again)) and not torch.equal(_head(a), _head(other))
    bert = load_encoder("tiny-bert", seed=3)[0].auto_model
    weights = dict(a.named_parameters())
    name = next(n for n in weights if n.endswith("word_embeddings.weight"))
    assert torch.equal(weights[name].detach(), bert.embeddings.word_embeddings.weight.detach())
    assert J.joint_model("tiny-bert", seed=3, max_length=4096).max_length == bert.config.max_position_embeddings


def test_training_sees_exactly_the_budget_and_moves_the_head(trained):
    model, history, folder = trained
    assert history["examples_seen"] == 20 and history["steps"] == math.ceil(20 / 8)
    assert history["loss"] and all(np.isfinite(history["loss"])) and not history["loaded"]
    assert history["settings"] == TRAINING.settings() and history["n_rows"] == len(ROWS)
    assert not torch.equal(_head(model), _head(J.joint_model("tiny-bert", seed=1, max_length=64)))
    assert (folder / J.JOINT_FILE).is_file()


def test_a_finished_run_is_loaded_and_other_settings_retrain(trained, monkeypatch):
    model, _, folder = trained
    monkeypatch.setattr(J, "train_joint", lambda *a, **k: pytest.fail("retrained a finished run"))
    again, history = J.fit_joint("tiny-bert", ROWS, folder, TRAINING, seed=1)
    pairs = list(zip(ROWS.anchor, ROWS.negative))
    assert history["loaded"] and history["steps"] == 3
    np.testing.assert_allclose(J.JointScorer(again)(pairs), J.JointScorer(model)(pairs), rtol=1e-5, atol=1e-6)
    monkeypatch.setattr(J, "train_joint", lambda *a, **k: (_ for _ in ()).throw(RuntimeError("would train")))
    with pytest.raises(RuntimeError, match="would train"):  # another seed is another run
        J.fit_joint("tiny-bert", ROWS, folder, TRAINING, seed=2)


@pytest.mark.parametrize("loss", J.JOINT_LOSSES)
def test_each_loss_trains_two_steps_on_the_budgets_triplets_and_names_itself(loss, tmp_path):
    two_steps = TRAINING.replace(budget_examples=16, loss=loss, mini_batch_size=5)
    model, history = J.fit_joint("tiny-bert", ROWS, tmp_path / loss, two_steps, seed=1)
    assert history["steps"] == 2 and history["examples_seen"] == 16  # bce: the same steps, each triplet two pairs
    assert history["loss"] and all(np.isfinite(history["loss"])) and history["settings"]["loss"] == loss
    assert not torch.equal(_head(model), _head(J.joint_model("tiny-bert", seed=1, max_length=64)))
    name = {"cmnrl": "CachedMultipleNegativesRankingLoss", "mnrl": "MultipleNegativesRankingLoss"}.get(
        loss, "BinaryCrossEntropyLoss"
    )
    assert type(J.joint_loss(model, two_steps)).__name__ == name
    assert f"loss:{name}\n" in (tmp_path / loss / "README.md").read_text()  # the saved model's card names it
    assert J.joint_size(loss) == ("joint" if loss == "cmnrl" else f"joint-{loss}")


def test_the_head_trains_at_its_own_rate_and_the_transformer_at_its_own(tmp_path):
    two_rates = TRAINING.replace(lr=1e-5, head_lr=1e-2, head_weight_decay=0.0, budget_examples=16, loss="bce")
    model = J.joint_model("tiny-bert", seed=1, max_length=64)
    named = dict(model.model.named_parameters())
    decay = [n for n in named if not n.endswith("bias") and "LayerNorm" not in n]  # what the trainer gives
    optimizer = J.joint_optimizer(model, two_rates, decay)
    by_rate = {g["lr"]: g for g in optimizer.param_groups}
    head = {id(p) for p in by_rate[1e-2]["params"]}
    # the fresh classifier and the pooler a mean-pooling bi-encoder never trained
    expected = {id(p) for n, p in named.items() if n.startswith(("classifier.", "bert.pooler."))}
    assert head == expected and len(head) == 4
    assert sum(len(g["params"]) for g in optimizer.param_groups) == len(named)  # every weight in one group
    assert by_rate[1e-2]["weight_decay"] == 0.0
    decayed = {id(p) for g in optimizer.param_groups if g["lr"] == 1e-5 and g["weight_decay"] > 0 for p in g["params"]}
    assert decayed == {id(named[n]) for n in decay if not n.startswith(("classifier.", "bert.pooler."))}
    assert J.joint_optimizer(model, TRAINING, decay) is None  # one rate: the trainer's own optimizer
    # trained: the head moves far more than with one small rate, the same triplets and steps
    one_rate = two_rates.replace(head_lr=None, head_weight_decay=None)
    fresh = _head(model)
    moved = {}
    for name, training in (("two", two_rates), ("one", one_rate)):
        trained, history = J.fit_joint("tiny-bert", ROWS, tmp_path / name, training, seed=1)
        moved[name] = float((_head(trained) - fresh).abs().max())
        assert history["settings"]["head_lr"] == training.head_lr
    assert moved["two"] > 10 * moved["one"], moved
    assert J.joint_size("bce", "bf16", 1e-3) == "joint-bce-bf16-head0.001" and J.joint_size("bce", "bf16") == (
        "joint-bce-bf16"
    )


def test_the_verifiers_settings_give_the_head_their_rate_and_the_transformer_the_encoders():
    params = {"batch_size": 32, "lr": 1e-3, "encoder_lr": 2e-5, "weight_decay": 0.0, "encoder_weight_decay": 0.001}
    training = J.JointTraining.from_verifier_params({**params, "in_batch_negatives": 4, "max_seq_length": 128})
    assert (training.lr, training.weight_decay, training.head_lr, training.head_weight_decay) == (2e-5, 1e-3, 1e-3, 0.0)
    assert joint_cli._head_rate("same") == {"head_lr": None, "head_weight_decay": None}
    assert joint_cli._head_rate("5e-4") == {"head_lr": 5e-4} and joint_cli._head_rate(None) == {}
    with pytest.raises(ValueError, match="--head-lr 'fast'"):
        joint_cli._head_rate("fast")


def test_a_transformer_rate_given_names_the_run_and_its_folder(tmp_path, capsys):
    assert J.joint_size("bce", "fp32", 1e-3, 1e-4) == "joint-bce-head0.001-lr0.0001"
    work, out = tmp_path / "work", tmp_path / "out"
    _work_dir(work)
    args = ["crossencoder", "--profile", "smoke", "--rows", "balanced", "--seeds", "7", "--budget", "16"]
    args += ["--loss", "bce", "--work-dir", str(work), "--data-dir", str(SMOKE), "--out", str(out)]
    args += ["--no-rerank", "--lr", "3e-4"]
    assert cli(args) == 0
    folder = work / "verifiers" / "balanced-joint-bce-head0.001-lr0.0003-b16" / "seed7" / J.LABEL
    history = read_json(folder / J.JOINT_FILE)
    assert history["settings"]["lr"] == 3e-4 and history["settings"]["lr_named"] is True
    assert cli(args[:-1] + ["0"]) == 2 and "--lr 0.0: give a positive" in capsys.readouterr().err


def test_a_run_recorded_before_the_head_rate_reads_as_one_rate():
    old = {"settings": {k: v for k, v in TRAINING.settings().items() if not k.startswith("head_")}, "device": "cpu"}
    assert J._recorded_settings(old) == TRAINING.settings()


def test_bce_pairs_each_triplet_positive_one_negative_zero_in_order():
    pairs = J._labelled_pairs({c: list(ROWS[c][:2]) for c in ("anchor", "positive", "negative")})
    assert pairs["anchor"] == [ROWS.anchor[0]] * 2 + [ROWS.anchor[1]] * 2
    assert pairs["candidate"] == [ROWS.positive[0], ROWS.negative[0], ROWS.positive[1], ROWS.negative[1]]
    assert pairs["label"] == [1.0, 0.0, 1.0, 0.0]


def test_the_cached_loss_is_the_uncached_one():
    """Same objective, computed in mini-batches: equal on one batch (eval mode, the same in-batch draw)."""
    from sentence_transformers.cross_encoder import losses

    model = J.joint_model("tiny-bert", seed=2, max_length=64).eval()
    inputs = [list(ROWS[c][:6]) for c in ("anchor", "positive", "negative")]
    values = []
    for loss in (
        losses.MultipleNegativesRankingLoss(model, num_negatives=3),
        losses.CachedMultipleNegativesRankingLoss(model, num_negatives=3, mini_batch_size=4),
    ):
        torch.manual_seed(0)  # the in-batch negatives are drawn at random
        with torch.no_grad():
            values.append(float(loss(inputs, None)))
    assert values[0] == pytest.approx(values[1], rel=1e-5)
    with pytest.raises(ValueError, match="loss must be one of"):
        TRAINING.replace(loss="nll")
    with pytest.raises(ValueError, match="mini_batch_size"):
        TRAINING.replace(mini_batch_size=0)


def test_the_grid_keeps_each_loss_apart_in_folders_rows_and_tables(tmp_path):
    positives = ROWS[["anchor", "positive"]].set_axis(["sentence1", "sentence2"], axis=1)
    near = ROWS[["anchor", "negative", "family"]].set_axis(["sentence1", "sentence2", "family"], axis=1)
    sets = {"toy": (positives, near, "sentence1")}
    for loss in ("cmnrl", "bce"):
        at = TRAINING.replace(budget_examples=8, loss=loss)
        J.run_joint_grid({"toy": ROWS}, sets, "tiny-bert", tmp_path, at, seeds=[1], budgets=[8], results_dir=tmp_path)
    runs = read_csv(tmp_path / f"{J.RUNS}.csv")
    assert sorted(runs["loss"]) == ["bce", "cmnrl"]  # a bce model does not replace the cmnrl one's row
    assert sorted(runs.verifier_variant) == ["toy-joint-b8", "toy-joint-bce-b8"]
    tidy = read_table(tmp_path / f"{J.RESULTS}.parquet")
    assert set(zip(tidy["size"], tidy["loss"])) == {("joint", "cmnrl"), ("joint-bce", "bce")}
    assert sorted(N.separation_table(tidy).index.get_level_values("size")) == ["joint", "joint-bce"]


@pytest.mark.slow
def test_bf16_trains_with_the_trainers_bf16_on_the_cpu_and_records_its_precision(tmp_path, monkeypatch):
    """As the bi-encoder's `length --precision bf16` trains (`retrieval.training.build_trainer`): the trainer's
    bf16=True with use_cpu, fp32 weights saved; the precision is in joint.json's settings and the history."""
    made = []
    real = J.CrossEncoderTrainingArguments
    monkeypatch.setattr(J, "CrossEncoderTrainingArguments", lambda **k: made.append(k) or real(**k))
    bf16 = TRAINING.replace(budget_examples=16, loss="bce", precision="bf16")
    model, history = J.fit_joint("tiny-bert", ROWS, tmp_path / "bf16", bf16, seed=1)
    assert made[-1]["bf16"] is True and made[-1]["use_cpu"] is True
    assert history["precision"] == "bf16" and history["settings"]["precision"] == "bf16" and history["steps"] == 2
    assert history["loss"] and all(np.isfinite(history["loss"]))
    assert not torch.equal(_head(model), _head(J.joint_model("tiny-bert", seed=1, max_length=64)))
    assert all(p.dtype == torch.float32 for p in model.parameters())  # autocast: the weights stay fp32
    recorded = read_json(tmp_path / "bf16" / J.JOINT_FILE)
    assert recorded["precision"] == "bf16" and recorded["settings"] == bf16.settings()
    J.fit_joint("tiny-bert", ROWS, tmp_path / "fp32", bf16.replace(precision="fp32"), seed=1)
    assert made[-1]["bf16"] is False  # fp32 is fp32


def test_a_bf16_run_never_loads_an_fp32_runs_folder_nor_shares_its_name(trained, tmp_path, monkeypatch):
    _, _, folder = trained
    fp32 = tmp_path / "fp32"
    shutil.copytree(folder, fp32)
    monkeypatch.setattr(J, "train_joint", lambda *a, **k: (_ for _ in ()).throw(RuntimeError("would train")))
    with pytest.raises(RuntimeError, match="would train"):
        J.fit_joint("tiny-bert", ROWS, fp32, TRAINING.replace(precision="bf16"), seed=1)
    assert J.fit_joint("tiny-bert", ROWS, fp32, TRAINING, seed=1)[1]["loaded"]
    # a run recorded before the option (no precision) trained fp32 on a CPU: loaded as fp32, not as bf16
    record = json.loads((fp32 / J.JOINT_FILE).read_text())
    del record["settings"]["precision"], record["precision"]
    (fp32 / J.JOINT_FILE).write_text(json.dumps(record))
    assert J.fit_joint("tiny-bert", ROWS, fp32, TRAINING, seed=1)[1]["loaded"]
    with pytest.raises(RuntimeError, match="would train"):
        J.fit_joint("tiny-bert", ROWS, fp32, TRAINING.replace(precision="bf16"), seed=1)
    # ... and on a GPU in bf16 where supported: neither precision's, so trained again
    (fp32 / J.JOINT_FILE).write_text(json.dumps({**record, "device": "cuda:0"}))
    with pytest.raises(RuntimeError, match="would train"):
        J.fit_joint("tiny-bert", ROWS, fp32, TRAINING, seed=1)
    # the grid's folders and sizes keep them apart; fp32, the default, names nothing (folders as before)
    assert [J.joint_size(loss, "fp32") for loss in J.JOINT_LOSSES] == ["joint", "joint-mnrl", "joint-bce"]
    assert [J.joint_size(loss, "bf16") for loss in J.JOINT_LOSSES] == [
        "joint-bf16",
        "joint-mnrl-bf16",
        "joint-bce-bf16",
    ]


@pytest.mark.parametrize(
    "make",
    [
        lambda: TRAINING.replace(precision="fp16"),
        lambda: J.JointTraining(precision="BF16"),
        lambda: J.JointScorer(None, precision="fp16"),
        lambda: J.precision_context("half", "cpu"),
    ],
)
def test_an_unknown_precision_is_one_clear_line(make):
    with pytest.raises(ValueError, match=r"precision must be one of fp32, bf16, got '") as err:
        make()
    assert len(str(err.value).splitlines()) == 1


def test_the_command_lines_precisions_are_joints():
    assert joint_cli.PRECISIONS == J.PRECISIONS and J.PRECISIONS[0] == J.DEFAULT_PRECISION == "fp32"
    assert J.JointTraining().precision == "fp32"


def test_a_bf16_scorer_scores_in_bf16_autocast_close_to_fp32(trained):
    model, _, _ = trained
    pairs = list(zip(ROWS.anchor, ROWS.positive)) + list(zip(ROWS.anchor, ROWS.negative))
    fp32, bf16 = (J.JointScorer(model, batch_size=4, precision=p)(pairs) for p in ("fp32", "bf16"))
    assert bf16.dtype == np.float64 and not np.array_equal(fp32, bf16)  # autocast was on
    np.testing.assert_allclose(bf16, fp32, atol=0.05 * max(1.0, np.abs(fp32).max()))
    assert J.JointScorer(model, precision="bf16")([]).shape == (0,)


def test_the_grid_keeps_each_precision_apart_in_folders_rows_and_tables(tmp_path):
    positives = ROWS[["anchor", "positive"]].set_axis(["sentence1", "sentence2"], axis=1)
    near = ROWS[["anchor", "negative", "family"]].set_axis(["sentence1", "sentence2", "family"], axis=1)
    sets = {"toy": (positives, near, "sentence1")}
    for precision in ("fp32", "bf16"):
        at = TRAINING.replace(budget_examples=8, precision=precision)
        _, _, fitted = J.run_joint_grid(
            {"toy": ROWS}, sets, "tiny-bert", tmp_path, at, seeds=[1], budgets=[8], results_dir=tmp_path
        )
        assert fitted[0].precision == fitted[0].scorer.precision == precision
    runs = read_csv(tmp_path / f"{J.RUNS}.csv")
    assert sorted(zip(runs.precision, runs.verifier_variant)) == [
        ("bf16", "toy-joint-bf16-b8"),
        ("fp32", "toy-joint-b8"),
    ]
    assert (tmp_path / "verifiers" / "toy-joint-bf16-b8" / "seed1" / J.LABEL / J.JOINT_FILE).is_file()
    tidy = read_table(tmp_path / f"{J.RESULTS}.parquet")
    assert set(zip(tidy["size"], tidy["precision"])) == {("joint", "fp32"), ("joint-bf16", "bf16")}
    assert sorted(N.separation_table(tidy).index.get_level_values("size")) == ["joint", "joint-bf16"]


def test_rerank_rows_name_the_cross_encoders_precision_and_every_label_its_folder():
    runs = [J.JointRun("toy", 8, 1, v, None, p) for v, p in (("toy-joint-b8", "fp32"), ("toy-joint-bf16-b8", "bf16"))]
    assert joint_cli._joint_label(runs[0], J.LABEL) == "CE-end2end@toy-joint-b8"  # alone too
    assert joint_cli._joint_label(runs[1], J.LABEL) == "CE-end2end@toy-joint-bf16-b8"
    table = pd.DataFrame({"verifier_variant": ["toy-joint-bf16-b8", "toy-joint-b8", "", None, "toy-small"]})
    got = joint_cli._with_precision(table, {r.variant: r.precision for r in runs})
    assert got.precision.tolist() == ["bf16", "fp32", "fp32", "fp32", "fp32"]
    assert joint_cli._with_precision(table.iloc[:0], {}).columns.tolist() == ["verifier_variant", "precision"]


def test_the_scorer_gives_logits_in_pair_order_to_the_verifiers_table_code(trained):
    model, _, _ = trained
    scorer = J.JointScorer(model, batch_size=4)
    pairs = list(zip(ROWS.anchor, ROWS.positive)) + list(zip(ROWS.anchor, ROWS.negative))
    scores = scorer(pairs)
    logits = model.predict([list(p) for p in pairs], activation_fn=torch.nn.Identity(), convert_to_numpy=True)
    np.testing.assert_allclose(scores, logits, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(scorer(pairs[::-1]), scores[::-1], rtol=1e-5, atol=1e-6)
    assert (scores < 0).any() or (scores > 1).any() or len(set(np.round(scores, 6))) > 1  # not squashed to a tie
    positives = ROWS[["anchor", "positive"]].set_axis(["sentence1", "sentence2"], axis=1)
    near = ROWS[["anchor", "negative", "family"]].set_axis(["sentence1", "sentence2", "family"], axis=1)
    table = N.evaluate_sets({J.LABEL: scorer}, {"toy": (positives, near, "sentence1")})
    auc = table[(table.family == "negation") & (table.metric == "auc")].value.item()
    assert auc == pytest.approx(N.near_miss_auc(scores[:12], scores[12:]))
    assert {"self_match", "copy_vs_near_miss", "paraphrase", "all"} <= set(table.family)
    assert N.split_variant(J.LABEL) == ("CE", "end2end")


def test_the_reranker_gives_a_joint_scorer_the_texts_and_costs_no_token_cache(trained, tiny_encoder, tmp_path):
    model, _, _ = trained
    scorer = J.JointScorer(model)
    (ds,) = load_eval_datasets(["scifact"], data_dir=SMOKE, max_queries=3, extra_docs=20, seed=0)
    reranker = R.Reranker(tiny_encoder, ds.corpus)
    queries = {q: ds.queries[q] for q in ds.qrels}
    cands = reranker.search(queries, 4)
    got = reranker.verifier_scores(scorer, queries, cands)
    pairs = [(queries[q], reranker.doc_texts[i]) for q, row in zip(cands.qids, cands.indices.tolist()) for i in row]
    np.testing.assert_allclose(got.numpy().ravel(), scorer(pairs), rtol=1e-5, atol=1e-6)
    assert not reranker._tokens  # no corpus token embeddings were computed for it

    methods = [
        R.Method("CE-end2end", "CE", "end2end", scorer, tiny_encoder, "test", seed=1, verifier_variant="toy-joint"),
        R.Method("F1-frozen", "F1", "frozen", create("F1").eval(), tiny_encoder, "test", seed=1),
    ]
    plan = R.RerankPlan(ks=(4,), first_stage="base", cost_queries=2, cost_repeats=1)
    grid = R.rerank_grid([ds], {"base": tiny_encoder}, methods, tmp_path, "tiny-bert", 0, plan=plan, write=False)
    rows = grid.results[(grid.results.variant == "CE-end2end") & (grid.results.metric == "ndcg@10")]
    assert len(rows) == 1 and rows.k.item() == 4 and rows.regime.item() == "end2end"
    cost = grid.cost.set_index("variant")
    assert cost.loc["CE-end2end", "token_cache_mb"] == 0 and cost.loc["F1-frozen", "token_cache_mb"] > 0
    assert cost.loc["CE-end2end", "rerank_ms"] > 0


def _work_dir(work: Path) -> None:
    """Notebook 01's two files, by hand: train-split structural triplets of the paper's families and three
    held-out near-misses of smoke MRPC/STS-B test sentences (so they have paraphrase positives)."""
    triplets = pd.DataFrame(
        [
            dict(anchor=a, positive=a, negative=n, family=f, source_id=str(i), split="train")
            for i, (a, n, f) in enumerate(
                [
                    ("The dog chased the cat.", "The cat chased the dog.", "binding"),
                    ("The box is on the table.", "The box is under the table.", "spatial"),
                    ("The man is happy.", "The man is not happy.", "negation"),
                    ("A red cup on a blue mat.", "A blue cup on a red mat.", "binding"),
                ]
            )
        ]
    )
    write_table(triplets, work / "negatives" / "triplets.parquet")
    anchors = list(positive_pairs(heldout_paraphrase_pairs("test", data_dir=SMOKE)).sentence1[:3])
    pairs = pd.DataFrame(
        [
            (anchors[0], "It is not the case that " + anchors[0], "negation", "not", "m1", "test"),
            (anchors[1], anchors[1] + " Under the table.", "spatial", "on->under", "m2", "test"),
            (anchors[2], " ".join(reversed(anchors[2].split())), "binding", "swap", "m3", "test"),
        ],
        columns=["sentence1", "sentence2", "family", "edit", "source_id", "split"],
    )
    write_table(pairs, work / "negatives" / "pairs.parquet")


@pytest.mark.slow
def test_cli_trains_scores_and_reranks_each_rows_kind(tmp_path, capsys):
    work, out = tmp_path / "work", tmp_path / "out"
    _work_dir(work)
    common = ["--profile", "smoke", "--seeds", "7", "--budget", "16", "--work-dir", str(work)]
    common += ["--data-dir", str(SMOKE), "--out", str(out)]
    assert cli(["crossencoder", *common, "--rows", "model_b,balanced", "--ks", "5", "--cost-queries", "2"]) == 0
    results = out / "results"
    table = read_table(results / "crossencoder.parquet")
    assert set(table.variant) == {"CE-end2end"} and set(table.train_data) == {"model_b", "balanced"}
    assert set(table.verifier_variant) == {"model_b-joint-head0.001-b16", "balanced-joint-head0.001-b16"}
    assert (table.budget == 16).all() and (table.examples_seen == 16).all() and table["commit"].notna().all()
    assert {"negatives-heldout", "sugarcrepe", "condaqa"} <= set(table.dataset)
    assert {"self_match", "copy_vs_near_miss", "negation", "all"} <= set(table.family)
    assert {"auc", "pairwise_accuracy", "mean_score"} <= set(table.metric)
    runs = read_csv(results / "crossencoder_runs.csv")
    assert sorted(runs.train_data) == ["balanced", "model_b"] and (runs.seed == 7).all()
    assert (runs.steps == 2).all() and (runs.budget == 16).all() and runs["commit"].notna().all()
    assert {"train_seconds", "eval_seconds", "n_rows"} <= set(runs.columns) and not runs.loaded.any()
    rerank = read_table(results / "crossencoder_rerank.parquet")
    assert {
        "CE-end2end@model_b-joint-head0.001-b16",
        "CE-end2end@balanced-joint-head0.001-b16",
        "F1-frozen@model_b-small",
        "base",
    } <= set(rerank.variant)
    cost = read_table(results / "crossencoder_rerank_cost.parquet").set_index("variant")
    assert cost.loc["CE-end2end@model_b-joint-head0.001-b16", "rerank_ms"] > 0
    assert "results:" in capsys.readouterr().out
    # a second run loads the finished models instead of training them again
    assert cli(["crossencoder", *common, "--rows", "model_b", "--no-rerank"]) == 0
    runs = read_csv(results / "crossencoder_runs.csv").set_index("train_data")
    assert bool(runs.loc["model_b", "loaded"]) and not bool(runs.loc["balanced", "loaded"])
    # bf16: its own folder, trained (not the fp32 model loaded), and a precision on every row of every table
    args = ["crossencoder", *common, "--rows", "model_b", "--precision", "bf16", "--ks", "5", "--cost-queries", "2"]
    assert cli(args) == 0
    runs = read_csv(results / "crossencoder_runs.csv").set_index("verifier_variant")
    assert (
        runs.loc["model_b-joint-bf16-head0.001-b16", "precision"] == "bf16"
        and not runs.loc["model_b-joint-bf16-head0.001-b16", "loaded"]
    )
    assert runs.loc["model_b-joint-head0.001-b16", "precision"] == "fp32" and len(runs) == 3
    table = read_table(results / "crossencoder.parquet")
    assert set(zip(table.verifier_variant, table.precision)) == {
        ("model_b-joint-head0.001-b16", "fp32"),
        ("balanced-joint-head0.001-b16", "fp32"),
        ("model_b-joint-bf16-head0.001-b16", "bf16"),
    }
    for name in ("crossencoder_rerank", "crossencoder_rerank_per_query", "crossencoder_rerank_cost"):
        rows = read_table(results / f"{name}.parquet")
        precision = rows.set_index("variant").precision.groupby(level=0).first()
        assert precision["CE-end2end@model_b-joint-bf16-head0.001-b16"] == "bf16", name
        assert precision["CE-end2end@model_b-joint-head0.001-b16"] == "fp32" and precision["base"] == "fp32", name


@pytest.mark.parametrize(
    "extra, words",
    [
        (["--rows", "nothing"], ["--rows nothing", "choose from"]),
        (["--seeds", "x"], ["--seeds", "whole numbers"]),
        (["--mini-batch-size", "0"], ["mini_batch_size", ">= 1"]),
        (["--precision", "fp16"], ["ValueError", "precision must be one of fp32, bf16, got 'fp16'"]),
        (["--out", "figures/ce"], ["PermissionError", "--out figures/ce"]),
        (["--backbone", "./no-such-model"], ["FileNotFoundError", "no such model folder", "Fix"]),
        (["--backbone", "no-such-model"], ["BackboneUnavailable", "cannot load 'no-such-model'"]),
        (["--work-dir", "{tmp}/none"], ["pairs.parquet", "notebook"]),
        (["--maps", "F9"], ["ValueError", "unknown verifier 'F9'"]),
        (["--maps", "F3", "--map-regimes", "frozen,warm"], ["ValueError", "--map-regimes", "['warm']"]),
        (["--maps", "F3", "--map-lr", "0"], ["ValueError", "--map-lr 0.0", "positive learning rate"]),
        (["--maps", "F4", "--map-sizes", "paper,huge"], ["ValueError", "--map-sizes", "['huge']"]),
        (["--maps-only"], ["ValueError", "--maps-only", "give --maps"]),
    ],
)
def test_cli_errors_are_one_clear_line(tmp_path, capsys, monkeypatch, extra, words):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")  # the hub is never asked
    args = ["crossencoder", "--profile", "smoke", "--data-dir", str(SMOKE), "--out", str(tmp_path / "out")]
    assert cli(args + [e.replace("{tmp}", str(tmp_path)) for e in extra]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and err.startswith("compsense crossencoder:"), err
    for word in words:
        assert word in err, err


def test_map_sizes_keep_only_the_scope_of_the_sizes_trained(monkeypatch, tmp_path):
    """`--map-sizes small` on a profile that scopes the authors' size (local: paper F4 frozen only) trains our
    size under no scope; it refused before, the scope naming a size the grid no longer held."""
    import pandas as pd

    from compsense.verifiers import budget as B
    from compsense.verifiers import joint_cli as J

    seen = []

    def fake_curve(curve, rows, grid, *args, **kwargs):
        seen.append((curve, grid))
        return None, pd.DataFrame()

    monkeypatch.setattr(B, "run_budget_curve", fake_curve)
    monkeypatch.setattr("compsense.core.storage.append_results", lambda *a, **k: None)
    p = {"sizes": ["small", "paper"], "size_scope": {"paper": {"verifiers": ["F4"], "regimes": ["frozen"]}},
         "include_special": False, "f2_learnable": False}  # fmt: skip
    settings = {"04": p, "work_dir": str(tmp_path), "backbone": "b", "profile": "local"}
    inputs = {"rows": {"model_b": pd.DataFrame()}, "encoder": None, "sets": {}}
    plan = {"names": ["F4"], "regimes": ["end2end"], "encoder_lr": None, "sizes": ["small"]}
    J.train_maps(inputs, settings, plan, seeds=[42], budgets=[8192], results_dir=tmp_path)
    curve, grid = seen[0]
    assert tuple(curve.sizes) == ("small",) and tuple(grid.sizes) == ("small",)
    assert not curve.size_scope and not grid.size_scope
    J.train_maps(inputs, settings, {**plan, "sizes": None}, seeds=[42], budgets=[8192], results_dir=tmp_path)
    assert seen[1][0].size_scope == p["size_scope"]  # the profile's sizes keep the profile's scope
