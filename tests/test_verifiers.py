import copy
import math
from dataclasses import dataclass

import numpy as np
import pandas as pd
import pytest
import torch

from compsense import verifiers as V
from compsense.simmap import pad_to, similarity_map, token_embeddings

QUERIES = ["A dog bites a man.", "The cat is not on the mat.", "Hi", "The red cup sits left of the blue box."]
DOCS = ["A man bites a dog.", "The cat is on the mat.", "Hello there, friend", "The blue box sits left of the red cup."]


def _triplets(n=24):
    subjects = ["dog", "cat", "man", "girl", "bird", "horse"]
    objects = ["ball", "box", "cup", "tree"]
    rows = []
    for i in range(n):
        s, o = subjects[i % len(subjects)], objects[i % len(objects)]
        anchor = f"The {s} is near the {o}."
        rows.append(dict(anchor=anchor, positive=anchor if i % 2 else f"A {s} near a {o}.",
                         negative=f"The {s} is not near the {o}.", family="negation", source_id=str(i), split="train"))
    return pd.DataFrame(rows)


def _scramble(M, q_mask, d_mask, seed=0):
    """The same map with its valid rows/columns scattered among padding (any mask layout)."""
    g = torch.Generator().manual_seed(seed)
    B, lq, ld = M.shape
    big_q, big_d = lq + 5, ld + 7
    out = torch.full((B, big_q, big_d), 3.0)  # junk in padded cells must not matter
    qm = torch.zeros(B, big_q, dtype=torch.bool)
    dm = torch.zeros(B, big_d, dtype=torch.bool)
    for b in range(B):
        rows = torch.sort(torch.randperm(big_q, generator=g)[: int(q_mask[b].sum())]).values
        cols = torch.sort(torch.randperm(big_d, generator=g)[: int(d_mask[b].sum())]).values
        out[b][rows[:, None], cols[None, :]] = M[b, : len(rows), : len(cols)]
        qm[b, rows], dm[b, cols] = True, True
    return out, qm, dm


@pytest.fixture(scope="module")
def pair_batches(tiny_encoder):
    return token_embeddings(tiny_encoder, QUERIES), token_embeddings(tiny_encoder, DOCS)


def _perturbed(verifier, seed=1):
    """A 'trained' verifier: every parameter moved off its initialisation."""
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for p in verifier.parameters():
            p.add_(torch.randn(p.shape, generator=g) * 0.3)
    return verifier


@pytest.mark.parametrize("name", V.NAMES)
@pytest.mark.parametrize("trained", [False, True])
def test_padding_never_contributes(name, trained, pair_batches):
    q, d = pair_batches
    verifier = V.create(name, seed=0)
    if trained:
        _perturbed(verifier)
    reference = V.score_maps(verifier, *similarity_map(q, d))
    for lq, ld in [(q.embeddings.shape[1] + 1, d.embeddings.shape[1]), (19, 33), (40, 17), (64, 64)]:
        padded = V.score_maps(verifier, *similarity_map(pad_to(q, lq), pad_to(d, ld)))
        torch.testing.assert_close(padded, reference, atol=1e-5, rtol=0)
    # Masks need not be prefixes: valid cells scattered among junk-filled padding score the same.
    M, q_mask, d_mask = similarity_map(q, d)
    torch.testing.assert_close(V.score_maps(verifier, *_scramble(M, q_mask, d_mask)), reference, atol=1e-5, rtol=0)
    # Row i's score does not depend on the other rows of the batch.
    alone = V.score_maps(verifier, *similarity_map(q.select([2]), d.select([2])))
    torch.testing.assert_close(alone, reference[2:3], atol=1e-5, rtol=0)


def test_maxsim_and_mean_on_a_hand_computed_map():
    M = torch.tensor([[[0.9, 0.1, 5.0],
                       [0.2, 0.5, 5.0],
                       [7.0, 7.0, 7.0]]])  # the 5s and 7s sit in padding and must never win a max
    q_mask = torch.tensor([[True, True, False]])
    d_mask = torch.tensor([[True, True, False]])
    assert V.score_maps(V.create("maxsim"), M, q_mask, d_mask).item() == pytest.approx((0.9 + 0.5) / 2)
    assert V.score_maps(V.create("mean"), M, q_mask, d_mask).item() == pytest.approx((0.9 + 0.1 + 0.2 + 0.5) / 4)
    # All-negative rows: padding zeros must not beat a valid -0.4.
    neg = torch.tensor([[[-0.4, -0.6, 0.0]]])
    assert V.score_maps(V.create("F1"), neg, torch.tensor([[True]]), d_mask).item() == pytest.approx(-0.4)


def test_alignment_prefers_the_same_word_order():
    """F1 cannot tell a permutation from the original; F2's distance penalty can."""
    n = 6  # contextual tokens are all somewhat alike (0.6); matching tokens score 1
    same = 0.6 + 0.4 * torch.eye(n)[None]
    swapped = 0.6 + 0.4 * torch.eye(n)[list(reversed(range(n)))][None]
    masks = torch.ones(1, n, dtype=torch.bool), torch.ones(1, n, dtype=torch.bool)
    f1, f2 = V.create("F1"), V.create("F2")
    assert V.score_maps(f1, same, *masks).item() == pytest.approx(V.score_maps(f1, swapped, *masks).item())
    assert V.score_maps(f2, same, *masks).item() > V.score_maps(f2, swapped, *masks).item() + 0.05
    # With no distance penalty and a tiny temperature, F2 is MaxSim.
    sharp = V.create("F2", lam=1e-6, tau=1e-3, learnable=False)
    M = torch.rand(3, 4, 6) * 2 - 1
    torch.testing.assert_close(V.score_maps(sharp, M, torch.ones(3, 4, dtype=torch.bool),
                                            torch.ones(3, 6, dtype=torch.bool)),
                               V.score_maps(f1, M, torch.ones(3, 4, dtype=torch.bool),
                                            torch.ones(3, 6, dtype=torch.bool)), atol=1e-3, rtol=0)


def test_names_aliases_and_parameter_counts():
    assert [V.canonical_name(n) for n in ["mean", "maxsim", "align", "cnn", "transformer", "f3"]] == \
        ["F0", "F1", "F2", "F3", "F4", "F3"]
    with pytest.raises(ValueError, match="unknown verifier"):
        V.create("F9")
    counts = {n: V.n_parameters(V.create(n)) for n in V.NAMES}
    assert counts["F0"] == counts["F1"] == 0 and counts["F2"] == 2
    assert 0 < counts["F3"] < 100_000 and 0 < counts["F4"] < 200_000
    assert V.n_parameters(V.create("F2", learnable=False)) == 0
    one, two = V.create("F4", seed=5), V.create("F4", seed=5)
    assert all(torch.equal(a, b) for a, b in zip(one.parameters(), two.parameters()))


def test_f4_says_when_a_map_is_too_large():
    verifier = V.create("F4", max_patches=2)
    M = torch.zeros(1, 20, 8)
    with pytest.raises(ValueError, match="max_patches"):
        verifier(M, torch.ones(1, 20, dtype=torch.bool), torch.ones(1, 8, dtype=torch.bool))


@pytest.mark.parametrize("name", V.NAMES)
def test_save_load_round_trip(name, pair_batches, tmp_path):
    q, d = pair_batches
    verifier = _perturbed(V.create(name, seed=0, include_special=True))
    before = V.score_maps(verifier, *similarity_map(q, d))
    V.save(verifier, tmp_path / name, extra={"history": {"steps": 3}})
    loaded = V.load(tmp_path / name)
    assert type(loaded) is type(verifier) and loaded.config == verifier.config and loaded.include_special
    torch.testing.assert_close(V.score_maps(loaded, *similarity_map(q, d)), before)
    assert sorted(p.name for p in (tmp_path / name).iterdir()) == [V.CONFIG_FILE, V.WEIGHTS_FILE]
    assert V.read_info(tmp_path / name)["history"] == {"steps": 3}
    with pytest.raises(FileNotFoundError, match="not a saved verifier"):
        V.load(tmp_path / "nothing")


def test_score_pairs_matches_the_maps(tiny_encoder, pair_batches):
    q, d = pair_batches
    verifier = V.create("F2")
    expected = V.score_maps(verifier, *similarity_map(q, d)).numpy()
    pairs = list(zip(QUERIES, DOCS))
    np.testing.assert_allclose(V.score_pairs(tiny_encoder, verifier, pairs, batch_size=3), expected, atol=1e-5)
    frame = pd.DataFrame({"sentence1": QUERIES, "sentence2": DOCS})
    np.testing.assert_allclose(V.score_pairs(tiny_encoder, verifier, frame), expected, atol=1e-5)


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
    history = V.train_verifier(V.create("F3", seed=0), tiny_encoder, triplets, regime="frozen", budget_examples=64,
                               batch_size=8, cache_dir=tmp_path, show_progress=False)
    n_texts = len(set(triplets.anchor) | set(triplets.positive) | set(triplets.negative))
    assert history["steps"] == 8 and history["examples_seen"] == 64 == history["budget_examples"]
    assert history["texts_encoded"] == n_texts
    assert calls["n"] == math.ceil(n_texts / 32)  # the one caching pass, whatever the budget
    calls["n"] = 0
    again = V.train_verifier(V.create("F4", seed=0), tiny_encoder, triplets, regime="frozen", budget_examples=64,
                             batch_size=8, cache_dir=tmp_path, show_progress=False)
    assert calls["n"] == 0 and again["texts_encoded"] == 0 and again["trained"]  # warm cache: no encoding at all
    assert all(torch.equal(v, tiny_encoder.state_dict()[k]) for k, v in weights.items())


def test_frozen_training_moves_verifier_weights_and_skips_parameter_free(tiny_encoder, tmp_path):
    verifier = V.create("F2", seed=0)
    before = verifier.raw.detach().clone()
    history = V.train_verifier(verifier, tiny_encoder, _triplets(), regime="frozen", budget_examples=48,
                               batch_size=16, lr=0.05, cache_dir=tmp_path, show_progress=False)
    assert history["trained"] and not torch.equal(before, verifier.raw.detach())
    assert len(history["loss"]) == 3 and all(math.isfinite(x) for x in history["loss"])
    skipped = V.train_verifier(V.create("F1"), tiny_encoder, _triplets(), regime="frozen", budget_examples=48,
                               show_progress=False)
    assert not skipped["trained"] and skipped["steps"] == 0 and "nothing to train" in skipped["note"]


def test_end_to_end_training_changes_the_encoder():
    from compsense.models import build_tiny_bert

    encoder = build_tiny_bert(seed=7)
    before = {k: v.clone() for k, v in encoder.state_dict().items()}
    history = V.train_verifier(V.create("F1"), encoder, _triplets(), regime="end2end", budget_examples=20,
                               batch_size=8, encoder_lr=1e-3, show_progress=False)
    assert history["trained"] and history["steps"] == 3 and history["examples_seen"] == 20
    assert history["texts_encoded"] == 60
    changed = [k for k, v in encoder.state_dict().items()
               if v.dtype.is_floating_point and not torch.equal(v, before[k])]
    assert changed and not encoder.training


def test_training_is_reproducible_by_seed(tiny_encoder, tmp_path):
    runs = [V.train_verifier(V.create("F3", seed=1), tiny_encoder, _triplets(), budget_examples=32, batch_size=8,
                             cache_dir=tmp_path, seed=3, show_progress=False)["loss"] for _ in range(2)]
    assert runs[0] == runs[1]


def test_training_rejects_bad_input(tiny_encoder):
    with pytest.raises(ValueError, match="regime"):
        V.train_verifier(V.create("F2"), tiny_encoder, _triplets(), regime="thawed")
    with pytest.raises(ValueError, match="lacks columns"):
        V.train_verifier(V.create("F2"), tiny_encoder, pd.DataFrame({"anchor": ["a"]}))


def test_fit_verifier_resumes_instead_of_retraining(tiny_encoder, tmp_path):
    kwargs = dict(budget_examples=16, batch_size=8, cache_dir=tmp_path / "cache", show_progress=False)
    first, _, history = V.fit_verifier("F2", "frozen", tiny_encoder, _triplets(), tmp_path / "F2-frozen", **kwargs)
    again, _, history2 = V.fit_verifier("F2", "frozen", tiny_encoder, _triplets(), tmp_path / "F2-frozen", **kwargs)
    assert history2 == history and torch.equal(first.raw, again.raw)


def test_near_miss_table_on_a_toy_case():
    positives = pd.DataFrame({"sentence1": ["s1", "s2", "s3"], "sentence2": ["p1", "p2", "p3"]})
    near = pd.DataFrame({"sentence1": ["s1", "s1", "s2", "zz"], "sentence2": ["n1", "n2", "n3", "n4"],
                         "family": ["negation", "swap", "negation", "swap"]})
    fixed = {("s1", "p1"): 0.9, ("s2", "p2"): 0.5, ("s3", "p3"): 0.7,
             ("s1", "n1"): 0.8, ("s1", "n2"): 0.95, ("s2", "n3"): 0.5, ("zz", "n4"): 0.1}
    table = V.near_miss_table({"toy": lambda pairs: [fixed[p] for p in pairs]}, positives, near)
    get = table.set_index(["family", "metric"])["value"]
    n = table.set_index(["family", "metric"])["n"]
    assert get["paraphrase", "mean_score"] == pytest.approx(0.7)
    assert get["negation", "mean_score"] == pytest.approx(0.65)
    # AUC = P(positive > near-miss), ties count half: of the 6 comparisons, 0.9 wins 2, 0.7 wins 1, 0.5 ties 1
    assert get["negation", "auc"] == pytest.approx(3.5 / 6)
    assert get["negation", "pairwise_accuracy"] == pytest.approx((1 + 0.5) / 2)
    assert n["negation", "pairwise_accuracy"] == 2
    assert get["swap", "pairwise_accuracy"] == pytest.approx(0.0) and n["swap", "pairwise_accuracy"] == 1
    assert n["all", "pairwise_accuracy"] == 3 and n["all", "auc"] == 4
    wide = V.separation_view(table)
    assert ("auc", "negation") in wide.columns
    V.figure_near_miss_scores(table)  # builds without error
    with pytest.raises(ValueError, match="family"):
        V.near_miss_table({}, positives, near.drop(columns="family"))


def test_paraphrase_positives_orient_pairs_toward_near_miss_sources():
    paraphrases = pd.DataFrame({"sentence1": ["a", "b", "c", "d"], "sentence2": ["a2", "s", "c2", "d2"],
                                "label": [1, 1, 1, 0]})
    near = pd.DataFrame({"sentence1": ["a", "s"], "sentence2": ["na", "ns"], "family": ["x", "x"]})
    pos = V.paraphrase_positives(paraphrases, near)
    assert set(map(tuple, pos[pos.matched][["sentence1", "sentence2"]].values)) == {("a", "a2"), ("s", "b")}
    assert list(pos[~pos.matched].sentence1) == ["c"]  # unmatched positives stay for the AUC; label 0 dropped


@dataclass(frozen=True)
class _Example:
    caption: str
    negative_caption: str
    subset: str
    example_id: str
    image: str


def test_sugarcrepe_protocol_uses_another_caption_of_the_same_image():
    examples = [_Example("a cat on a mat", "a mat on a cat", "swap_obj", "swap_obj/0", "1.jpg"),
                _Example("a small cat on a red mat", "a small cat on a blue mat", "replace_att", "replace_att/0",
                         "1.jpg"),
                _Example("a lone dog", "a lone dog and a cat", "add_obj", "add_obj/0", "2.jpg")]
    positives, near = V.sugarcrepe_pairs(examples)
    assert list(near.example_id) == ["swap_obj/0", "replace_att/0"]  # 2.jpg has no other caption
    assert positives.sentence1.tolist() == ["a small cat on a red mat", "a cat on a mat"]
    assert (positives.sentence1 == near.sentence1).all() and (positives.sentence2 != positives.sentence1).all()
    assert near.family.tolist() == ["swap_obj", "replace_att"]
