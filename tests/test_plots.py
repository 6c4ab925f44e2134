import logging
from pathlib import Path

import plotly.graph_objects as go
import pytest

from compsense.figures import export as plots


def _fig():
    return go.Figure(go.Bar(x=["a", "b"], y=[1, 2]))


def test_html_always_written_png_only_with_an_engine(tmp_path, monkeypatch):
    monkeypatch.setattr(plots, "_png_engine_available", lambda: False)
    written = plots.save_figure(_fig(), "bars", tmp_path)
    assert set(written) == {"html", "plotly_js"} and "plotly" in written["html"].read_text()
    assert not (tmp_path / "bars.png").exists()


def test_html_loads_plotly_js_from_beside_it_not_a_cdn(tmp_path, monkeypatch):
    from plotly.offline import get_plotlyjs

    monkeypatch.setattr(plots, "_png_engine_available", lambda: False)
    (tmp_path / "plotly.min.js").write_text("stale copy of another version")
    written = plots.save_figure(_fig(), "bars", tmp_path)
    plots.save_figure(_fig(), "more_bars", tmp_path)
    html = written["html"].read_text()
    assert '<script charset="utf-8" src="plotly.min.js"></script>' in html
    assert "cdn.plot.ly" not in html
    assert written["plotly_js"] == tmp_path / "plotly.min.js"
    assert written["plotly_js"].read_text() == get_plotlyjs()  # the stale copy was replaced
    assert sorted(p.name for p in tmp_path.iterdir()) == ["bars.html", "more_bars.html", "plotly.min.js"]


def test_broken_png_engine_keeps_the_html_and_warns(tmp_path, monkeypatch, caplog):
    monkeypatch.setattr(plots, "_png_engine_available", lambda: True)

    def no_browser(self, *args, **kwargs):
        raise RuntimeError("no Chrome found")

    monkeypatch.setattr(go.Figure, "write_image", no_browser)
    with caplog.at_level(logging.WARNING):
        written = plots.save_figure(_fig(), "bars", tmp_path)
    assert set(written) == {"html", "plotly_js"}
    assert "PNG export of bars failed" in caplog.text
    assert sorted(p.name for p in tmp_path.iterdir()) == ["bars.html", "plotly.min.js"]  # no half-written PNG


def test_dose_response_figure_sweep_line_controls_and_seed_bars():
    import pandas as pd

    from compsense.figures.ab import dose_response_figure

    points = pd.DataFrame(
        [
            ("m", "A", 42, 0.0, 0.0, 0.0),
            ("m", "A", 43, 0.0, 0.0, 0.0),
            ("m", "B", 42, 0.19, -0.02, 0.40),
            ("m", "B", 43, 0.19, -0.04, 0.30),
            ("m", "B-share0.5", 42, 0.5, -0.05, 0.5),
            ("m", "C-identity", 42, 0.19, -0.01, 0.02),
            ("m", "base", 42, float("nan"), 0.02, -0.01),
        ],
        columns=["backbone", "variant", "seed", "structural_share", "drop", "auc_gain"],
    )
    fig = dose_response_figure(points)
    sweep, controls = fig.data
    assert list(sweep.text) == ["A (0)", "B (0.19)", "B-share0.5"]
    assert list(sweep.y) == pytest.approx([0.0, -0.03, -0.05])
    assert sweep.error_y.array[1] == pytest.approx(0.01414, abs=1e-4) and sweep.error_y.array[2] == 0
    assert set(controls.text) == {"C-identity", "base"}
    lo, hi = fig.layout.xaxis.range  # room for the labels at both ends of the sweep
    assert lo < -0.01 and hi > 0.5


def test_the_same_figure_gives_the_same_bytes(tmp_path, monkeypatch):
    """figures/ is committed: a figure redrawn from the same table must not change it (plotly draws a
    random div id unless it is given one)."""
    monkeypatch.setattr(plots, "_png_engine_available", lambda: False)
    first = plots.save_figure(_fig(), "02_bars", tmp_path / "one")["html"]
    second = plots.save_figure(_fig(), "02_bars", tmp_path / "two")["html"]
    assert first.read_bytes() == second.read_bytes()
    assert 'id="fig-02_bars"' in first.read_text()
    other = plots.save_figure(_fig(), "03 cosines/minilm", tmp_path / "one")["html"]
    assert 'id="fig-03-cosines-minilm"' in other.read_text()  # a valid HTML id whatever the name holds


def test_learning_curves_draw_one_line_per_run_coloured_by_variant():
    import pandas as pd

    from compsense.figures.ab import learning_curves

    rows = [
        ("m", variant, seed, step, loss, 1e-4)
        for variant, seed in (("A", 42), ("A", 43), ("B", 42))
        for step, loss in ((1, 2.0), (2, 1.5), (3, 1.2))
    ]
    curves = pd.DataFrame(rows, columns=["backbone", "variant", "seed", "step", "loss", "learning_rate"])
    fig = learning_curves(curves)
    assert len(fig.data) == 3  # A seed 42, A seed 43, B seed 42: seeds are separate lines
    assert sorted({trace.legendgroup for trace in fig.data}) == ["A", "B"]
    assert all(list(trace.x) == [1, 2, 3] and list(trace.y) == [2.0, 1.5, 1.2] for trace in fig.data)


def test_checks_figure_draws_one_point_per_run_with_the_goal_corner():
    import pandas as pd

    from compsense.figures.verifiers import GOAL, checks_figure

    runs = pd.DataFrame(
        {
            "scorer": ["F4", "F4", "F3", "cosine Base"],
            "regime": ["frozen", "end2end", "frozen", ""],
            "train_data": ["model_b", "model_b", "balanced", ""],
            "size": ["small"] * 3 + [""],
            "seed": [42, 42, 43, 42],
            "auc": [0.2, 0.3, 0.1, 0.25],
            "self_match": [0.9, 0.8, 1.0, 1.0],
            "copy_vs_near_miss": [0.8, 0.7, 0.95, 1.0],
        }
    )
    fig = checks_figure(runs)
    points = sorted((x, y) for trace in fig.data for x, y in zip(trace.x, trace.y, strict=True))
    assert points == sorted(zip(runs.self_match, runs.auc, strict=True))
    assert {trace.legendgroup.split(",")[0] for trace in fig.data} == {"F4", "F3", "cosine Base"}
    goal = [s for s in fig.layout.shapes if s.type == "rect"]
    assert len(goal) == 1 and (goal[0].x0, goal[0].y0) == (GOAL["self_match"], GOAL["auc"])
    diagonal = [s for s in fig.layout.shapes if s.type == "line" and s.line.dash == "dash"]
    assert len(diagonal) == 1 and (diagonal[0].x0, diagonal[0].y0, diagonal[0].x1, diagonal[0].y1) == (0, 1, 1, 0)
    other_axes = checks_figure(runs, x="copy_vs_near_miss")
    assert not [s for s in other_axes.layout.shapes if s.type in ("rect", "line") and s.line.dash == "dash"]


def test_checks_figure_draws_the_noise_control_as_a_line_off_the_run_points():
    import pandas as pd

    from compsense.figures.verifiers import checks_figure, noise_line

    runs = pd.DataFrame(
        {
            "scorer": ["F1", "F1-frozen+noise1x", "F1-frozen+noise4x", "F1-frozen+noise2x", "F4"],
            "regime": ["frozen", "", "", "", "frozen"],
            "train_data": [""] * 4 + ["model_b"],
            "size": [""] * 4 + ["small"],
            "seed": [42] * 5,
            "auc": [0.1, 0.2, 0.4, 0.3, 0.15],
            "self_match": [1.0, 0.9, 0.6, 0.75, 0.88],
            "copy_vs_near_miss": [1.0, 0.9, 0.7, 0.8, 0.9],
        }
    )
    line = noise_line(runs.assign(regime=runs.regime), "self_match", "auc")
    assert line.label.tolist() == ["0x", "1x", "2x", "4x"] and line.auc.tolist() == [0.1, 0.2, 0.3, 0.4]
    fig = checks_figure(runs)
    noise = [t for t in fig.data if t.name and t.name.startswith("noise control")]
    assert len(noise) == 1 and list(noise[0].y) == [0.1, 0.2, 0.3, 0.4]
    scattered = {(x, y) for t in fig.data if t not in noise for x, y in zip(t.x, t.y)}
    assert scattered == {(1.0, 0.1), (0.88, 0.15)}  # the noisy scorers are the line, not run points
    assert noise_line(runs[runs.scorer == "F4"], "self_match", "auc").empty


def test_a_fitted_figure_is_exported_to_png_at_the_width_its_panels_need(tmp_path, monkeypatch):
    import plotly.graph_objects as go

    from compsense.figures import export

    fig = export.fit_width(go.Figure(go.Bar(x=["a"], y=[1])), 1234)
    calls = []
    monkeypatch.setattr(export, "_png_engine_available", lambda: True)
    monkeypatch.setattr(
        type(fig), "write_image", lambda self, path, **kw: (calls.append(kw), Path(path).write_bytes(b"png"))
    )
    written = export.save_figure(fig, "wide", tmp_path)
    assert calls == [{"format": "png", "scale": 2, "width": 1234}] and written["png"].read_bytes() == b"png"
    assert '"autosize":true' in written["html"].read_text().replace(" ", "")  # the HTML takes the window's width


def _problem_sims(items):
    """A cosine matrix for notebook 00's texts: an anchor at 0.990-0.995 with its own texts, 0.7 between
    its paraphrase and near-misses, 0.1 across anchors."""
    import numpy as np

    from compsense.figures.problem import entries

    texts = entries(items)
    blocks = np.array([t["block"] for t in texts])
    anchor = np.array([t["kind"] == "anchor" for t in texts])
    sims = np.where(np.equal.outer(blocks, blocks), 0.7, 0.1)
    for a in np.flatnonzero(anchor):
        for k, other in enumerate(np.flatnonzero((blocks == blocks[a]) & ~anchor)):
            sims[a, other] = sims[other, a] = 0.995166 if k % 2 else 0.990  # symmetric, as cosines are
    np.fill_diagonal(sims, 1.0)
    return sims


def test_problem_heatmap_colours_span_the_cosines_the_text_compares():
    """Issue 52: on [-1, 1] a role swap at 0.995 and its paraphrase at 0.990 were one colour. The scale
    spans each anchor's cosines with its own paraphrase and near-misses, the contrast the text asks for."""
    from compsense.figures.problem import compared_range, entries, examples, heatmap_figure

    items = examples()
    sims = _problem_sims(items)
    heat = heatmap_figure(sims, items).data[0]
    texts = entries(items)
    blocks, anchors = [t["block"] for t in texts], [t["kind"] == "anchor" for t in texts]
    assert (heat.zmin, heat.zmax) == compared_range(sims, blocks, anchors) == pytest.approx((0.990, 0.995166))
    assert heat.zmax - heat.zmin < 0.01  # the whole scale is the 0.005 the text compares
    # numbers inside a block are printed to three decimals, none across blocks; the hover rounds too
    assert heat.text[0][1] in ("0.990", "0.995") and heat.text[0][-1] == "" and "0.995166" not in str(heat.text)
    assert "%{z:.3f}" in heat.hovertemplate and "senator praised the governor" in heat.hovertext[0][1]


def test_problem_colours_give_each_compared_cosine_its_own_step():
    """MiniLM's compared cosines on notebook 00 run from 0.73 to 0.995, most near the top: linear, 0.990
    and 0.995 are 2% of the scale apart; by rank, they are a whole palette step apart."""
    from plotly.colors import sample_colorscale

    from compsense.figures.problem import rank_colorscale

    values = [0.728, 0.93, 0.951, 0.97, 0.990, 0.994, 0.995166]
    scale = rank_colorscale(values, 0.728, 0.995166)
    positions = [p for p, _ in scale]
    assert positions[0] == 0.0 and positions[-1] == 1.0 and positions == sorted(positions)
    assert len(scale) == len(values) and len({c for _, c in scale}) == len(values)
    # 0.990 (rank 4 of 0-6) and 0.995 (rank 6) are a third of the palette apart; linearly, 2% of it
    assert (scale[4][1], scale[-1][1]) == tuple(sample_colorscale("Viridis", [4 / 6, 1.0]))
    assert (0.995166 - 0.990) / (0.995166 - 0.728) < 0.02
    assert rank_colorscale([0.9], 0.89, 0.91) == "Viridis"  # one value: any scale shows it


def test_problem_heatmap_labels_fit_their_margins():
    from compsense.figures.problem import CHAR_PX, LABEL_WIDTH, examples, heatmap_figure, wrap_label

    fig = heatmap_figure(_problem_sims(examples()), examples())
    heat = fig.data[0]
    lines = [line for label in heat.y for line in label.split("<br>")]
    assert max(len(line) for line in lines) <= LABEL_WIDTH  # wrapped, not one 65-character line
    assert fig.layout.margin.l >= CHAR_PX * max(len(line) for line in lines)
    assert fig.layout.margin.b >= CHAR_PX * 0.8 * max(len(x) for x in heat.x)  # slanted column labels
    assert fig.layout.xaxis.automargin and fig.layout.yaxis.automargin
    assert len(set(heat.y)) == len(heat.y) and len(set(heat.x)) == len(heat.x)  # no two rows merge
    long = "The new drug does not lower blood pressure in elderly patients, nor in the young ones either."
    assert wrap_label(long).count("<br>") == 1 and wrap_label(long).endswith("…")


def test_problem_tables_show_three_decimals_and_compare_at_full_precision():
    import pandas as pd

    from compsense.figures.problem import confusable, styled

    table = pd.DataFrame(
        {
            "anchor": ["a", "a", "a"],
            "other": ["p", "swap", "not"],
            "kind": ["paraphrase", "near-miss: binding", "near-miss: negation"],
            "cosine": [0.990123, 0.995166, 0.9899],
        }
    )
    hits = confusable(table)
    assert hits.other.tolist() == ["swap"] and hits.paraphrase_cosine.tolist() == [0.990123]
    html = styled(hits).to_html()
    assert "0.995" in html and "0.995166" not in html and "0.990" in html and "0.990123" not in html
