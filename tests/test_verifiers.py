import numpy as np
import pandas as pd
import pytest
import torch

from compsense.core.storage import CorruptFile
from compsense.verifiers import architectures as V
from compsense.verifiers.simmap import pad_to, similarity_map, token_embeddings

QUERIES = ["A dog bites a man.", "The cat is not on the mat.", "Hi", "The red cup sits left of the blue box."]
DOCS = ["A man bites a dog.", "The cat is on the mat.", "Hello there, friend", "The blue box sits left of the red cup."]


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


# Every verifier at every size; the paper-size F3/F4 on a small canvas so the test stays fast.
SIZED = [(n, "small") for n in V.NAMES] + [("F3", "paper"), ("F4", "paper")]
SMALL_CANVAS = {"F3": {"canvas": 32, "channels": 8, "hidden": 16}, "F4": {"canvas": 32, "dim": 16}}


def _make(name, size, **kwargs):
    return V.create(name, size=size, **(SMALL_CANVAS[name] if size == "paper" else {}), **kwargs)


@pytest.mark.parametrize("name,size", SIZED)
@pytest.mark.parametrize("trained", [False, True])
def test_padding_never_contributes(name, size, trained, pair_batches):
    q, d = pair_batches
    verifier = _make(name, size, seed=0)
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
    M = torch.tensor(
        [[[0.9, 0.1, 5.0], [0.2, 0.5, 5.0], [7.0, 7.0, 7.0]]]
    )  # the 5s and 7s sit in padding and must never win a max
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
    torch.testing.assert_close(
        V.score_maps(sharp, M, torch.ones(3, 4, dtype=torch.bool), torch.ones(3, 6, dtype=torch.bool)),
        V.score_maps(f1, M, torch.ones(3, 4, dtype=torch.bool), torch.ones(3, 6, dtype=torch.bool)),
        atol=1e-3,
        rtol=0,
    )


def test_names_aliases_and_parameter_counts():
    assert [V.canonical_name(n) for n in ["mean", "maxsim", "align", "cnn", "transformer", "f3"]] == [
        "F0",
        "F1",
        "F2",
        "F3",
        "F4",
        "F3",
    ]
    with pytest.raises(ValueError, match="unknown verifier"):
        V.create("F9")
    counts = {n: V.n_parameters(V.create(n)) for n in V.NAMES}
    assert counts["F0"] == counts["F1"] == counts["F2"] == 0  # F2: lam = tau = 0.1 fixed, as the authors'
    assert 0 < counts["F3"] < 100_000 and 0 < counts["F4"] < 200_000
    assert V.n_parameters(V.create("F2", learnable=True)) == 2


def test_paper_sizes_have_the_authors_parameter_counts():
    # The authors' F3 (3->128->256 conv + BN, MLP 256->128->1) and F4 (dim 384, canvas 128, 8x8
    # patches, 1 layer, 1 head, ff 32): counts worked out from their verifiers.py layer by layer.
    f3 = V.create("F3", size="paper", **V.sized_kwargs("F3", "paper", 384, 128))
    f4 = V.create("F4", size="paper", **V.sized_kwargs("F4", "paper", 384, 128))
    assert V.n_parameters(f3) == 3 * 128 * 9 + 128 + 2 * 128 + 128 * 256 * 9 + 256 + 2 * 256 + 256 * 128 + 128 + 129
    assert V.n_parameters(f4) == (3 * 64 * 384 + 384) + 384 + 257 * 384 + 2 * 384 + (
        384 * 3 * 384 + 3 * 384 + 384 * 384 + 384 + 384 * 32 + 32 + 32 * 384 + 384 + 4 * 384
    ) + (384 * 384 + 384 + 385)
    assert (V.n_parameters(f3), V.n_parameters(f4)) == (332_545, 940_065)
    assert V.sized_kwargs("F2", "paper", 384, 128) == {} and V.sized_kwargs("F4", "small", 384, 128) == {}
    with pytest.raises(ValueError, match="dimension"):
        V.sized_kwargs("F4", "paper", None, 128)
    with pytest.raises(ValueError, match="size must be"):
        V.create("F3", size="large")
    with pytest.raises(ValueError, match="multiple of patch_size"):
        V.create("F4", size="paper", canvas=20)
    one, two = V.create("F4", seed=5), V.create("F4", seed=5)
    assert all(torch.equal(a, b) for a, b in zip(one.parameters(), two.parameters()))


def test_f4_says_when_a_map_is_too_large():
    verifier = V.create("F4", max_patches=2)
    M = torch.zeros(1, 20, 8)
    with pytest.raises(ValueError, match="max_patches"):
        verifier(M, torch.ones(1, 20, dtype=torch.bool), torch.ones(1, 8, dtype=torch.bool))


@pytest.mark.parametrize("name,size", SIZED)
def test_save_load_round_trip(name, size, pair_batches, tmp_path):
    q, d = pair_batches
    verifier = _perturbed(_make(name, size, seed=0, include_special=True))
    before = V.score_maps(verifier, *similarity_map(q, d))
    V.save(verifier, tmp_path / name, extra={"history": {"steps": 3}})
    loaded = V.load(tmp_path / name)
    assert type(loaded) is type(verifier) and loaded.config == verifier.config and loaded.include_special
    assert V.size_of(loaded) == size and V.read_info(tmp_path / name)["size"] == size
    torch.testing.assert_close(V.score_maps(loaded, *similarity_map(q, d)), before)
    assert sorted(p.name for p in (tmp_path / name).iterdir()) == [V.CONFIG_FILE, V.WEIGHTS_FILE]
    assert V.read_info(tmp_path / name)["history"] == {"steps": 3}
    with pytest.raises(FileNotFoundError, match="not a saved verifier"):
        V.load(tmp_path / "nothing")
    weights = tmp_path / name / V.WEIGHTS_FILE
    weights.write_bytes(weights.read_bytes()[: weights.stat().st_size // 2])  # truncated
    with pytest.raises(CorruptFile, match=rf"{V.WEIGHTS_FILE}: not readable verifier weights.*Fix: re-train"):
        V.load(tmp_path / name)


def test_score_pairs_matches_the_maps(tiny_encoder, pair_batches):
    q, d = pair_batches
    verifier = V.create("F2")
    expected = V.score_maps(verifier, *similarity_map(q, d)).numpy()
    pairs = list(zip(QUERIES, DOCS))
    np.testing.assert_allclose(V.score_pairs(tiny_encoder, verifier, pairs, batch_size=3), expected, atol=1e-5)
    frame = pd.DataFrame({"sentence1": QUERIES, "sentence2": DOCS})
    np.testing.assert_allclose(V.score_pairs(tiny_encoder, verifier, frame), expected, atol=1e-5)


def test_loose_configs_and_pairs_are_refused(tmp_path):
    """Issue 18: 'false' is not False, unknown settings are not saved, a corrupt verifier.json names
    itself, None is not the text 'None' and a bare string is not a list of pairs."""
    import pandas as pd

    from compsense.verifiers import architectures as V

    with pytest.raises(ValueError, match="true or false"):
        V.create("F1", include_special="false")
    with pytest.raises(TypeError, match="takes no argument"):
        V.create("F0", bogus=1)
    with pytest.raises(TypeError):
        V.create("F3", bogus=1)
    assert V.create("F1", include_special=True).include_special is True
    folder = V.save(V.create("F2"), tmp_path / "f2")
    (folder / V.CONFIG_FILE).write_text('{"name": "F2", "conf')
    with pytest.raises(ValueError, match=r"verifier.json is truncated or corrupt"):
        V.load(folder)
    (folder / V.CONFIG_FILE).write_text('{"name": "F2"}')
    with pytest.raises(ValueError, match="needs `name` and `config`"):
        V.load(folder)
    with pytest.raises(ValueError, match="non-text"):
        V.as_pairs([("a query", None)])
    with pytest.raises(TypeError, match="not one string"):
        V.as_pairs("a query")
    with pytest.raises(ValueError, match="two texts"):
        V.as_pairs([("only one",)])
    with pytest.raises(ValueError, match="missing text"):
        V.as_pairs(pd.DataFrame({"sentence1": ["a", None], "sentence2": ["b", "c"]}))
    assert V.as_pairs([("q", "d")]) == [("q", "d")]


@pytest.mark.parametrize("layers", [1, 2])
def test_the_authors_f4_on_the_batch_patch_box_scores_as_on_the_whole_canvas(layers, pair_batches):
    q, d = pair_batches
    verifier = V.create("F4", size="paper", canvas=64, dim=16, layers=layers, seed=0).eval()
    with torch.no_grad():
        verifier.pos.normal_(0.0, 1.0)  # positions that matter: a patch at the wrong place changes the score
    M, q_mask, d_mask = similarity_map(q, d)
    assert 8 < M.shape[1] <= 24 and 8 < M.shape[2] <= 24  # short pairs: a corner of the 8 x 8 patch grid
    cropped = V.score_maps(verifier, M, q_mask, d_mask)
    verifier.crop = False
    canvas = V.score_maps(verifier, M, q_mask, d_mask)
    assert canvas.abs().max() < 0.99  # tanh not saturated: a difference would show
    torch.testing.assert_close(cropped, canvas, rtol=0, atol=1e-5)
    # a map longer than the canvas is trimmed both ways, as the authors' is
    long_map = torch.rand(2, 80, 70)
    masks = torch.ones(2, 80, dtype=torch.bool), torch.ones(2, 70, dtype=torch.bool)
    verifier.crop = True
    torch.testing.assert_close(V.score_maps(verifier, long_map, *masks), canvas_scores(verifier, long_map, masks))


def canvas_scores(verifier, M, masks):
    verifier.crop = False
    try:
        return V.score_maps(verifier, M, *masks)
    finally:
        verifier.crop = True
