import copy
import math

import pandas as pd
import pytest
import torch

from compsense import verifier_training as T
from compsense import verifiers as V


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
    history = T.train_verifier(V.create("F3", seed=0), tiny_encoder, triplets, regime="frozen", budget_examples=64,
                               batch_size=8, cache_dir=tmp_path, show_progress=False)
    n_texts = len(set(triplets.anchor) | set(triplets.positive) | set(triplets.negative))
    assert history["steps"] == 8 and history["examples_seen"] == 64 == history["budget_examples"]
    assert history["texts_encoded"] == n_texts
    assert calls["n"] == math.ceil(n_texts / 32)  # the one caching pass, whatever the budget
    calls["n"] = 0
    again = T.train_verifier(V.create("F4", seed=0), tiny_encoder, triplets, regime="frozen", budget_examples=64,
                             batch_size=8, cache_dir=tmp_path, show_progress=False)
    assert calls["n"] == 0 and again["texts_encoded"] == 0 and again["trained"]  # warm cache: no encoding at all
    assert all(torch.equal(v, tiny_encoder.state_dict()[k]) for k, v in weights.items())


def test_frozen_training_moves_verifier_weights_and_skips_parameter_free(tiny_encoder, tmp_path):
    verifier = V.create("F2", seed=0)
    before = verifier.raw.detach().clone()
    history = T.train_verifier(verifier, tiny_encoder, _triplets(), regime="frozen", budget_examples=48,
                               batch_size=16, lr=0.05, cache_dir=tmp_path, show_progress=False)
    assert history["trained"] and not torch.equal(before, verifier.raw.detach())
    assert len(history["loss"]) == 3 and all(math.isfinite(x) for x in history["loss"])
    skipped = T.train_verifier(V.create("F1"), tiny_encoder, _triplets(), regime="frozen", budget_examples=48,
                               show_progress=False)
    assert not skipped["trained"] and skipped["steps"] == 0 and "nothing to train" in skipped["note"]


def test_end_to_end_training_changes_the_encoder():
    from compsense.models import build_tiny_bert

    encoder = build_tiny_bert(seed=7)
    before = {k: v.clone() for k, v in encoder.state_dict().items()}
    history = T.train_verifier(V.create("F1"), encoder, _triplets(), regime="end2end", budget_examples=20,
                               batch_size=8, encoder_lr=1e-3, show_progress=False)
    assert history["trained"] and history["steps"] == 3 and history["examples_seen"] == 20
    assert history["texts_encoded"] == 60
    changed = [k for k, v in encoder.state_dict().items()
               if v.dtype.is_floating_point and not torch.equal(v, before[k])]
    assert changed and not encoder.training


def test_training_is_reproducible_by_seed(tiny_encoder, tmp_path):
    runs = [T.train_verifier(V.create("F3", seed=1), tiny_encoder, _triplets(), budget_examples=32, batch_size=8,
                             cache_dir=tmp_path, seed=3, show_progress=False)["loss"] for _ in range(2)]
    assert runs[0] == runs[1]


def test_training_rejects_bad_input(tiny_encoder):
    with pytest.raises(ValueError, match="regime"):
        T.train_verifier(V.create("F2"), tiny_encoder, _triplets(), regime="thawed")
    with pytest.raises(ValueError, match="lacks columns"):
        T.train_verifier(V.create("F2"), tiny_encoder, pd.DataFrame({"anchor": ["a"]}))


def test_fit_verifier_resumes_instead_of_retraining(tiny_encoder, tmp_path):
    kwargs = dict(budget_examples=16, batch_size=8, cache_dir=tmp_path / "cache", show_progress=False)
    first, _, history = T.fit_verifier("F2", "frozen", tiny_encoder, _triplets(), tmp_path / "F2-frozen", **kwargs)
    again, _, history2 = T.fit_verifier("F2", "frozen", tiny_encoder, _triplets(), tmp_path / "F2-frozen", **kwargs)
    assert history2 == history and torch.equal(first.raw, again.raw)
