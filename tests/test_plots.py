import logging

import plotly.graph_objects as go

from compsense import plots


def _fig():
    return go.Figure(go.Bar(x=["a", "b"], y=[1, 2]))


def test_html_always_written_png_only_with_an_engine(tmp_path, monkeypatch):
    monkeypatch.setattr(plots, "_png_engine_available", lambda: False)
    written = plots.save_figure(_fig(), "bars", tmp_path)
    assert set(written) == {"html"} and "plotly" in written["html"].read_text()
    assert not (tmp_path / "bars.png").exists()


def test_broken_png_engine_keeps_the_html_and_warns(tmp_path, monkeypatch, caplog):
    monkeypatch.setattr(plots, "_png_engine_available", lambda: True)

    def no_browser(self, *args, **kwargs):
        raise RuntimeError("no Chrome found")

    monkeypatch.setattr(go.Figure, "write_image", no_browser)
    with caplog.at_level(logging.WARNING):
        written = plots.save_figure(_fig(), "bars", tmp_path)
    assert set(written) == {"html"}
    assert "PNG export of bars failed" in caplog.text
    assert sorted(p.name for p in tmp_path.iterdir()) == ["bars.html"]  # no half-written PNG left
