import logging

import plotly.graph_objects as go

from compsense import plots


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
