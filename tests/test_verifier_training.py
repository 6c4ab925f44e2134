import copy
import json
import math

import pandas as pd
import pytest
import torch

from compsense.verifiers import architectures as V
from compsense.verifiers import training as T
from compsense.verifiers.config import Compute, VerifierGrid, VerifierTraining

QUIET = Compute(show_progress=False)


def _triplets(n=24):
    subjects = ["dog", "cat", "man", "girl", "bird", "horse"]
    objects = ["ball", "box", "cup", "tree"]
    rows = []
    for i in range(n):
        s, o = subjects[i % len(subjects)], objects[i % len(objects)]
        anchor = f"The {s} is near the {o}."
        rows.append(
            dict(
                anchor=anchor,
                positive=anchor if i % 2 else f"A {s} near a {o}.",
                negative=f"The {s} is not near the {o}.",
                family="negation",
                source_id=str(i),
                split="train",
            )
        )
    return pd.DataFrame(rows)


def _count_forward(monkeypatch, encoder):
    calls = {"n": 0}
    original = encoder.forward

    def counting(*args, **kwargs):
        calls["n"] += 1
        return original(*args, **kwargs)

    monkeypatch.setattr(encoder, "forward", counting)
    return calls


def test_frozen_training_never_re_encodes(tiny_encoder, tmp_path, monkeypatch):
    triplets = _triplets()
    calls = _count_forward(monkeypatch, tiny_encoder)
    weights = copy.deepcopy(tiny_encoder.state_dict())
    history = T.train_verifier(
        V.create("F3", seed=0),
        tiny_encoder,
        triplets,
        regime="frozen",
        training=VerifierTraining(budget_examples=64, batch_size=8),
        cache_dir=tmp_path,
        compute=QUIET,
    )
    n_texts = len(set(triplets.anchor) | set(triplets.positive) | set(triplets.negative))
    assert history["steps"] == 8 and history["examples_seen"] == 64 == history["budget_examples"]
    assert history["texts_encoded"] == n_texts
    assert calls["n"] == math.ceil(n_texts / 32)  # the one caching pass, whatever the budget
    calls["n"] = 0
    again = T.train_verifier(
        V.create("F4", seed=0),
        tiny_encoder,
        triplets,
        regime="frozen",
        training=VerifierTraining(budget_examples=64, batch_size=8),
        cache_dir=tmp_path,
        compute=QUIET,
    )
    assert calls["n"] == 0 and again["texts_encoded"] == 0 and again["trained"]  # warm cache: no encoding at all
    assert all(torch.equal(v, tiny_encoder.state_dict()[k]) for k, v in weights.items())


def test_frozen_training_moves_verifier_weights_and_skips_parameter_free(tiny_encoder, tmp_path):
    verifier = V.create("F2", seed=0, learnable=True)
    before = verifier.raw.detach().clone()
    history = T.train_verifier(
        verifier,
        tiny_encoder,
        _triplets(),
        regime="frozen",
        training=VerifierTraining(budget_examples=48, batch_size=16, lr=0.05),
        cache_dir=tmp_path,
        compute=QUIET,
    )
    assert history["trained"] and not torch.equal(before, verifier.raw.detach())
    assert len(history["loss"]) == 3 and all(math.isfinite(x) for x in history["loss"])
    for name in ("F1", "F2"):  # F2 with lam = tau = 0.1 fixed (the default) has nothing to learn either
        skipped = T.train_verifier(
            V.create(name), tiny_encoder, _triplets(), "frozen", VerifierTraining(budget_examples=48), compute=QUIET
        )
        assert not skipped["trained"] and skipped["steps"] == 0 and "nothing to train" in skipped["note"]


def test_end_to_end_training_changes_the_encoder():
    from compsense.core.encoders import build_tiny_bert

    encoder = build_tiny_bert(seed=7)
    before = {k: v.clone() for k, v in encoder.state_dict().items()}
    history = T.train_verifier(
        V.create("F1"),
        encoder,
        _triplets(),
        regime="end2end",
        training=VerifierTraining(budget_examples=20, batch_size=8, encoder_lr=1e-3),
        compute=QUIET,
    )
    assert history["trained"] and history["steps"] == 3 and history["examples_seen"] == 20
    # each distinct text of a batch is encoded once: the identity rows' positives are their anchors
    table = _triplets()
    expected = sum(
        len({t for i in batch for t in (table.anchor[i], table.positive[i], table.negative[i])})
        for batch in T._sample_batches(len(table), 20, 8, 42)
    )
    assert history["texts_encoded"] == expected < 60
    changed = [
        k for k, v in encoder.state_dict().items() if v.dtype.is_floating_point and not torch.equal(v, before[k])
    ]
    assert changed and not encoder.training


def test_training_is_reproducible_by_seed(tiny_encoder, tmp_path):
    runs = [
        T.train_verifier(
            V.create("F3", seed=1),
            tiny_encoder,
            _triplets(),
            training=VerifierTraining(budget_examples=32, batch_size=8),
            cache_dir=tmp_path,
            seed=3,
            compute=QUIET,
        )["loss"]
        for _ in range(2)
    ]
    assert runs[0] == runs[1]


def test_training_rejects_bad_input(tiny_encoder):
    with pytest.raises(ValueError, match="regime"):
        T.train_verifier(V.create("F2"), tiny_encoder, _triplets(), regime="thawed")
    with pytest.raises(ValueError, match="lacks columns"):
        T.train_verifier(V.create("F2"), tiny_encoder, pd.DataFrame({"anchor": ["a"]}))


def test_fit_verifier_resumes_instead_of_retraining(tiny_encoder, tmp_path):
    kwargs = dict(
        training=VerifierTraining(budget_examples=16, batch_size=8), cache_dir=tmp_path / "cache", compute=QUIET
    )
    first, _, history = T.fit_verifier("F2", "frozen", tiny_encoder, _triplets(), tmp_path / "F2-frozen", **kwargs)
    again, _, history2 = T.fit_verifier("F2", "frozen", tiny_encoder, _triplets(), tmp_path / "F2-frozen", **kwargs)
    assert history2 == history and torch.equal(first.raw, again.raw)


def _loss_inputs(tiny_encoder, texts_p, texts_n, anchors):
    from compsense.verifiers.simmap import encode_tokens

    tiny_encoder.eval()  # no dropout: the same embeddings score_pairs computes
    with torch.no_grad():
        q = encode_tokens(tiny_encoder, anchors)
        cands = encode_tokens(tiny_encoder, texts_p + texts_n)
    return q, cands


def test_sampled_in_batch_negatives_match_all_pairs_when_k_covers_the_batch(tiny_encoder):
    t = _triplets(6)
    a, p, n = t.anchor.tolist(), t.positive.tolist(), t.negative.tolist()
    q, cands = _loss_inputs(tiny_encoder, p, n, a)
    verifier = V.create("F3", seed=0).eval()
    full, _ = T.contrastive_loss(verifier, q, cands, p, p + n, 0.1, in_batch_negatives=None)
    covered, _ = T.contrastive_loss(verifier, q, cands, p, p + n, 0.1, in_batch_negatives=10)
    assert torch.allclose(full, covered)
    # k = 0: positive against its own hard negative only, i.e. a two-way softmax per anchor
    pair, _ = T.contrastive_loss(verifier, q, cands, p, p + n, 0.1, in_batch_negatives=0)
    scores = V.score_pairs(tiny_encoder, verifier, list(zip(a, p)) + list(zip(a, n)))
    logits = torch.tensor(scores).view(2, -1).T / 0.1
    expected = torch.nn.functional.cross_entropy(logits, torch.zeros(len(a), dtype=torch.long))
    assert torch.allclose(pair, expected, atol=1e-5)


def test_sampled_in_batch_negatives_are_seeded_and_never_the_positive_text(tiny_encoder):
    # Every positive is the same text, so only the five hard negatives can be negatives of an anchor.
    a = [f"The dog is near box {i}." for i in range(5)]
    p, n = ["A dog near a box."] * 5, [f"The dog is not near box {i}." for i in range(5)]
    q, cands = _loss_inputs(tiny_encoder, p, n, a)
    verifier = V.create("F4", seed=0).eval()
    # k = 6 > the 4 other hard negatives: the draw must take those and mask the rest, which is exactly
    # the all-pairs loss (where the duplicated positives are masked too).
    drawn, _ = T.contrastive_loss(
        verifier, q, cands, p, p + n, 0.1, in_batch_negatives=6, generator=torch.Generator().manual_seed(7)
    )
    full, _ = T.contrastive_loss(verifier, q, cands, p, p + n, 0.1, in_batch_negatives=None)
    assert torch.allclose(drawn, full, atol=1e-6)
    losses = [
        T.contrastive_loss(
            verifier, q, cands, p, p + n, 0.1, in_batch_negatives=2, generator=torch.Generator().manual_seed(7)
        )[0]
        for _ in range(2)
    ]
    assert torch.equal(losses[0], losses[1]) and torch.isfinite(losses[0])
    with pytest.raises(ValueError, match="2B candidates"):
        T.contrastive_loss(verifier, q, cands.select(range(7)), p, (p + n)[:7], 0.1)
    with pytest.raises(ValueError, match=">= 0"):
        T.contrastive_loss(verifier, q, cands, p, p + n, 0.1, in_batch_negatives=-2)


def test_paraphrase_positives_replace_identity_where_a_paraphrase_exists():
    t = _triplets(6)
    t["positive"] = t["anchor"]  # the paper's identity triplets
    para = pd.DataFrame(
        {
            "sentence1": ["A stray sentence.", t.anchor[0], "A bird flew."],
            "sentence2": [t.anchor[1], "The dog is close to the ball.", "A bird took off."],
            "label": [1, 1, 1],
        }
    )
    para.loc[len(para)] = [t.anchor[2], "Not a paraphrase of it.", 0]  # label 0 never counts
    same, counts = T.with_paraphrase_positives(t, para, "identity")
    assert same.positive.tolist() == t.anchor.tolist() and counts["with_paraphrase"] == 0
    mixed, counts = T.with_paraphrase_positives(t, para, "mixed")
    assert mixed.positive[0] == "The dog is close to the ball."  # anchor as sentence1
    assert mixed.positive[1] == "A stray sentence."  # anchor as sentence2
    assert mixed.positive[2] == t.anchor[2] and len(mixed) == 6
    assert mixed.positive_kind.tolist()[:3] == ["paraphrase", "paraphrase", "identity"]
    assert counts == {"mode": "mixed", "triplets": 6, "with_paraphrase": 2, "dropped": 0}
    only, counts = T.with_paraphrase_positives(t, para, "paraphrase")
    assert len(only) == 2 and counts["dropped"] == 4 and set(only.negative) == set(t.negative[:2])
    assert T.triplets_digest(only) != T.triplets_digest(t) == T.triplets_digest(t.copy())
    with pytest.raises(ValueError, match="positives mode"):
        T.with_paraphrase_positives(t, para, "both")
    with pytest.raises(ValueError, match="MRPC train"):
        T.with_paraphrase_positives(t, para.iloc[[0]].assign(sentence2="x"), "paraphrase")


def test_training_positives_reads_mrpc_train_paraphrases():
    from pathlib import Path

    fixtures = Path(__file__).parent / "fixtures" / "data"
    t = pd.DataFrame(
        {
            "anchor": ["Sales rose 5 % in May .", "The shop opens at nine ."],
            "positive": ["Sales rose 5 % in May .", "The shop opens at nine ."],
            "negative": ["Sales fell 5 % in May .", "The shop does not open at nine ."],
        }
    )
    same, counts = T.training_positives(t, "identity")
    assert same.positive.tolist() == t.anchor.tolist() and counts["with_paraphrase"] == 0
    mixed, counts = T.training_positives(t, "mixed", data_dir=fixtures)
    # the second pair is labelled 0 in the fixture: no paraphrase, so it stays an identity triplet
    assert mixed.positive.tolist() == ["May sales were up 5 % .", "The shop opens at nine ."]
    assert counts["with_paraphrase"] == 1


def test_paraphrase_positives_from_sentence_pairs():
    from compsense.data.datasets import SentencePair

    t = _triplets(2)
    pairs = [
        SentencePair(t.anchor[0], "A dog close to a ball.", 1, id1="1", id2="2", source="mrpc"),
        SentencePair(t.anchor[1], "Something else entirely.", 0, id1="3", id2="4", source="mrpc"),
    ]
    mixed, counts = T.with_paraphrase_positives(t, pairs, "mixed")
    assert mixed.positive.tolist() == ["A dog close to a ball.", t.positive[1]] and counts["with_paraphrase"] == 1


def test_authors_loss_shape_is_every_positive_plus_the_own_hard_negative(tiny_encoder):
    t = _triplets(6)
    a, n = t.anchor.tolist(), t.negative.tolist()
    p = [f"A {w} sentence." for w in ["first", "second", "third", "fourth", "fifth", "sixth"]]  # distinct texts
    q, cands = _loss_inputs(tiny_encoder, p, n, a)
    verifier = V.create("F3", seed=0).eval()
    own, _ = T.contrastive_loss(verifier, q, cands, p, p + n, 0.1, in_batch_negatives=None, hard_negatives="own")
    # By hand: anchor i against all six positives, then its own hard negative (B x (B + 1)).
    pos = torch.tensor(V.score_pairs(tiny_encoder, verifier, [(x, y) for x in a for y in p])).view(6, 6)
    neg = torch.tensor(V.score_pairs(tiny_encoder, verifier, list(zip(a, n))))
    expected = torch.nn.functional.cross_entropy(torch.cat([pos, neg[:, None]], 1) / 0.1, torch.arange(6))
    assert torch.allclose(own, expected, atol=1e-5)
    everything, _ = T.contrastive_loss(verifier, q, cands, p, p + n, 0.1, in_batch_negatives=None)
    assert not torch.allclose(own, everything)  # the other anchors' hard negatives are candidates there
    # Sampling k >= B - 1 others from the positives only is the same loss.
    covered, _ = T.contrastive_loss(verifier, q, cands, p, p + n, 0.1, in_batch_negatives=5, hard_negatives="own")
    assert torch.allclose(own, covered, atol=1e-6)
    with pytest.raises(ValueError, match="hard_negatives"):
        T.contrastive_loss(verifier, q, cands, p, p + n, 0.1, hard_negatives="some")


def test_authors_recipe_follows_their_shell_script():
    from compsense.verifiers.recipe import authors_budget, authors_recipe

    # run_frozen_vs_e2e_experiment.sh, 4 minutes: F3 frozen at 50 samples/s, batch 32 -> 375 steps.
    f3 = authors_recipe("F3", "frozen", 33)
    assert (f3["batch_size"], f3["budget_examples"] // f3["batch_size"]) == (32, 375)
    assert (f3["weight_decay"], f3["encoder_lr"], f3["encoder_weight_decay"]) == (0.01, 1.5e-5, 0.005)
    assert (f3["temperature"], f3["in_batch_negatives"], f3["hard_negatives"]) == (0.1, None, "own")
    steps = {
        (v, r): authors_budget(v, r, 22) // authors_recipe(v, r, 22)["batch_size"]
        for v in ("F2", "F3", "F4")
        for r in ("frozen", "end2end")
    }
    assert steps == {
        ("F2", "frozen"): 1125,
        ("F2", "end2end"): 825,
        ("F3", "frozen"): 375,
        ("F3", "end2end"): 412,
        ("F4", "frozen"): 1500,
        ("F4", "end2end"): 1125,
    }
    light = authors_recipe("maxsim", "end2end", 22)
    assert (light["batch_size"], light["weight_decay"], light["encoder_lr"]) == (128, 0.0, 2e-5)
    assert authors_recipe("F4", "frozen", 149)["budget_examples"] == 4 * 60 * 60 // 32 * 32
    with pytest.raises(ValueError, match="regime"):
        authors_recipe("F3", "both", 22)


@pytest.mark.slow
def test_fit_grid_keeps_variants_and_seeds_apart_and_reports_budgets(tiny_encoder, tmp_path):
    kwargs = dict(training=VerifierTraining(budget_examples=16, batch_size=8), compute=QUIET)
    _, small = T.fit_grid(
        VerifierGrid(verifiers=["F1", "F3"], regimes=["frozen"]),
        tiny_encoder,
        _triplets(),
        tmp_path,
        seed=1,
        variant=T.variant_name("identity", "small"),
        **kwargs,
    )
    _, paper = T.fit_grid(
        VerifierGrid(verifiers=["F3"], regimes=["frozen"]),
        tiny_encoder,
        _triplets(),
        tmp_path,
        seed=2,
        size="paper",
        variant=T.variant_name("identity", "paper"),
        **kwargs,
    )
    assert (T.verifier_dir(tmp_path, "identity-small", 1, "F3-frozen") / V.CONFIG_FILE).exists()
    assert (T.verifier_dir(tmp_path, "identity-paper", 2, "F3-frozen") / V.CONFIG_FILE).exists()
    assert V.read_info(T.verifier_dir(tmp_path, "identity-paper", 2, "F3-frozen"))["size"] == "paper"
    assert small.set_index("verifier").loc["F3-frozen", "examples_seen"] == 16
    assert paper.parameters.iloc[0] == 332_545 and small.set_index("verifier").loc["F3-frozen", "parameters"] < 10_000
    # The authors' budget for each verifier is reported beside ours (F1 frozen: 144,000, never trained).
    assert small.set_index("verifier").loc["F1-frozen", "authors_budget"] == 144_000
    assert not small.set_index("verifier").loc["F1-frozen", "trained"]
    with pytest.raises(ValueError, match="recipe"):
        VerifierGrid(verifiers=["F1"], regimes=["frozen"], recipe="mine")


def test_run_study_trains_each_variant_and_seed_into_its_own_folder(tiny_encoder, tmp_path):
    from compsense.verifiers.study import run_study

    t = _triplets()
    rows = {"identity": t.assign(positive=t.anchor), "paraphrase": t}
    positives = pd.DataFrame({"sentence1": t.anchor[:4], "sentence2": ["A dog near a ball."] * 4})
    sets = {
        "toy": (
            positives,
            t[["anchor", "negative", "family"]].rename(columns={"anchor": "sentence1", "negative": "sentence2"})[:4],
            "sentence1",
        )
    }
    training, results = run_study(
        rows,
        VerifierGrid(verifiers=["F1", "F2"], regimes=["frozen"], seeds=[1, 2], f2_learnable=True),
        tiny_encoder,
        tmp_path,
        sets,
        "tiny",
        training=VerifierTraining(budget_examples=8, batch_size=4),
        results_path=tmp_path / "results.parquet",
        compute=QUIET,
    )
    assert len(training) == 2 * 2 * 2 and set(training.train_data) == {"identity", "paraphrase"}
    # seed by seed: both variants of the first seed come before any of the second
    assert list(
        training.drop_duplicates(["seed", "train_data"])[["seed", "train_data"]].itertuples(index=False, name=None)
    ) == [(1, "identity"), (1, "paraphrase"), (2, "identity"), (2, "paraphrase")]
    for variant in ("identity-small", "paraphrase-small"):
        for seed in (1, 2):
            assert (T.verifier_dir(tmp_path, variant, seed, "F2-frozen") / V.CONFIG_FILE).exists()
    assert set(results.verifier_variant) == {"identity-small", "paraphrase-small"} and set(results.seed) == {1, 2}
    assert {"train_data", "size", "parameters", "examples_seen"} <= set(results.columns)
    saved = pd.read_parquet(tmp_path / "results.parquet")
    assert len(saved) == len(results)  # no variant or seed overwrote another
    assert set(results[results.variant == "F2-frozen"].parameters) == {2}  # learnable lam and tau


def test_size_plan_trains_one_size_verifiers_once_and_follows_the_scope():
    from compsense.verifiers.study import size_plan

    names, regimes = ["F0", "F1", "F2", "F3", "F4"], ["frozen", "end2end"]
    assert size_plan(["paper"], names, regimes) == {"paper": (names, regimes)}  # the only size trains all
    # a second size trains only the verifiers whose size it changes
    assert size_plan(["small", "paper"], names, regimes)["paper"] == (["F3", "F4"], regimes)
    scoped = size_plan(
        ["small", "paper"], names, regimes, {"paper": {"verifiers": ["transformer"], "regimes": ["frozen"]}}
    )
    assert scoped == {"small": (names, regimes), "paper": (["F4"], ["frozen"])}
    assert size_plan(["small", "paper"], ["F1"], regimes) == {"small": (["F1"], regimes)}  # nothing left at paper
    with pytest.raises(ValueError, match="does not hold"):
        size_plan(["small"], names, regimes, {"paper": {"verifiers": ["F4"]}})
    with pytest.raises(ValueError, match="unknown keys"):
        size_plan(["paper"], names, regimes, {"paper": {"verifier": ["F4"]}})


def test_run_study_trains_a_scoped_second_size_into_its_own_folder(tiny_encoder, tmp_path):
    from compsense.verifiers.study import run_study

    t = _triplets()
    positives = pd.DataFrame({"sentence1": t.anchor[:4], "sentence2": ["A dog near a ball."] * 4})
    near = t[["anchor", "negative", "family"]].rename(columns={"anchor": "sentence1", "negative": "sentence2"})[:4]
    grid = VerifierGrid(
        verifiers=["F1", "F4"],
        regimes=["frozen"],
        sizes=["small", "paper"],
        size_scope={"paper": {"verifiers": ["F4"]}},
        seeds=[1],
    )
    training, results = run_study(
        {"model_b": t},
        grid,
        tiny_encoder,
        tmp_path,
        {"toy": (positives, near, "sentence1")},
        "tiny",
        training=VerifierTraining(budget_examples=8, batch_size=4),
        compute=QUIET,
    )
    trained = set(zip(training.verifier, training["size"]))
    assert trained == {("F1-frozen", "small"), ("F4-frozen", "small"), ("F4-frozen", "paper")}
    assert (T.verifier_dir(tmp_path, "model_b-paper", 1, "F4-frozen") / V.CONFIG_FILE).exists()
    assert not T.verifier_dir(tmp_path, "model_b-paper", 1, "F1-frozen").exists()
    scored = set(zip(results.verifier_variant, results.variant))
    assert scored == {("model_b-small", "F1-frozen"), ("model_b-small", "F4-frozen"), ("model_b-paper", "F4-frozen")}


def test_encode_distinct_matches_encoding_every_text(tiny_encoder):
    from compsense.verifiers.simmap import encode_tokens

    queries = ["The dog is near the box.", "A cat sat."]
    candidates = ["The dog is near the box.", "A cat sat.", "The dog is not near the box.", "A cat stood."]
    with torch.no_grad():
        q, c, encoded = T.encode_distinct(tiny_encoder, queries, candidates, include_special=False)
        every = encode_tokens(tiny_encoder, queries + candidates)
    assert encoded == 4
    torch.testing.assert_close(q.embeddings, every.select([0, 1]).embeddings, atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(c.embeddings, every.select([2, 3, 4, 5]).embeddings, atol=1e-5, rtol=1e-5)
    assert c.tokens == every.select([2, 3, 4, 5]).tokens and torch.equal(c.mask, every.select([2, 3, 4, 5]).mask)


def test_a_verifier_recorded_before_every_training_setting_was_recorded_is_reused(tiny_encoder, tmp_path):
    # verifier.json files written before VerifierTraining recorded only the settings a run changed;
    # the others were at their defaults, so the run is the same and must not be trained again
    out, how = tmp_path / "F3-frozen", VerifierTraining(budget_examples=16, batch_size=8)
    _, _, history = T.fit_verifier("F3", "frozen", tiny_encoder, _triplets(), out, training=how, compute=QUIET)
    info = V.read_info(out)
    for key in ("warmup_ratio", "max_grad_norm", "encoder_weight_decay"):
        del info["settings"][key]
    (out / V.CONFIG_FILE).write_text(json.dumps(info))
    _, _, again = T.fit_verifier("F3", "frozen", tiny_encoder, _triplets(), out, training=how, compute=QUIET)
    assert again == history  # loaded, not retrained
    # a setting that differs from what was recorded retrains
    changed = how.replace(lr=0.1)
    _, _, retrained = T.fit_verifier("F3", "frozen", tiny_encoder, _triplets(), out, training=changed, compute=QUIET)
    assert retrained["lr"] == 0.1 and retrained["loss"] != history["loss"]


def test_the_training_settings_refuse_bad_values_naming_them():
    with pytest.raises(ValueError, match="budget_examples and batch_size"):
        VerifierTraining(budget_examples=0)
    with pytest.raises(ValueError, match="hard_negatives"):
        VerifierTraining(hard_negatives="some")
    with pytest.raises(ValueError, match="in_batch_negatives"):
        VerifierTraining(in_batch_negatives=-1)
    with pytest.raises(TypeError, match="no settings \\['lr_verifier'\\]"):
        VerifierTraining().replace(lr_verifier=1.0)
    with pytest.raises(ValueError, match="regimes"):
        VerifierGrid(regimes=["thawed"])
    assert VerifierTraining(weight_decay=0.01).encoder_decay == 0.01
    assert VerifierTraining(weight_decay=0.01, encoder_weight_decay=0.0).encoder_decay == 0.0


def test_stage_inputs_reads_notebook_01s_splits_and_samples_held_out_pairs(tmp_path):
    from compsense.core import layout
    from compsense.core.storage import write_table

    with pytest.raises(FileNotFoundError, match="pairs.parquet is missing: run notebooks/01"):
        T.stage_inputs(tmp_path)
    pairs = pd.DataFrame({"anchor": [f"a{i}" for i in range(10)], "family": ["negation", "spatial"] * 5})
    pairs["split"] = ["train"] * 4 + ["test"] * 6
    triplets = pd.DataFrame({"anchor": ["t0", "t1", "t2"], "split": ["train", "train", "test"]})
    write_table(pairs, layout.pairs_file(tmp_path, create=True))
    write_table(triplets, layout.triplets_file(tmp_path, create=True))

    train, heldout = T.stage_inputs(tmp_path)
    assert list(train.anchor) == ["t0", "t1"] and list(heldout.anchor) == [f"a{i}" for i in range(4, 10)]
    _, few = T.stage_inputs(tmp_path, max_pairs=3, seed=7)
    assert len(few) == 3 and set(few.anchor) <= set(heldout.anchor)
    assert list(few.anchor) == sorted(few.anchor, key=lambda a: int(a[1:]))  # the sample keeps the file's order
    assert list(T.stage_inputs(tmp_path, max_pairs=3, seed=7)[1].anchor) == list(few.anchor)  # seeded
    with pytest.raises(ValueError, match=r"has no rows with split='dev' \(found: \['test', 'train'\]\)"):
        T.stage_inputs(tmp_path, heldout_split="dev")
