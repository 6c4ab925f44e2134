"""Figures draw with no network: headless Chromium, offline, opens a figure `save_figure` writes and
every committed figure under figures/, and finds plotly's drawn <svg class="main-svg">. A control
figure that loads plotly.js from the CDN must stay blank, so the test sees the network really off.
"""

from __future__ import annotations

from pathlib import Path

import plotly.graph_objects as go
import pytest

from compsense.figures import export as plots

REPO = Path(__file__).resolve().parents[2]
COMMITTED = sorted((REPO / "figures").glob("*.html"))
DRAWN = "svg.main-svg"


@pytest.fixture(scope="module")
def offline_page(chromium):
    """A page with the network off: the context is offline and any http(s) request is aborted
    (and recorded, so a test can say what a figure tried to fetch)."""
    context = chromium.new_context(offline=True)
    context.set_default_timeout(20_000)
    fetched: list[str] = []

    def block(route):
        fetched.append(route.request.url)
        route.abort()

    context.route("http*://**/*", block)
    page = context.new_page()
    page.fetched = fetched
    try:
        yield page
    finally:
        context.close()


def _drawn(page, html: Path) -> bool:
    page.goto(html.as_uri())
    try:
        page.wait_for_selector(DRAWN, timeout=10_000)
    except Exception:  # playwright's TimeoutError: nothing drawn
        return False
    return page.locator(DRAWN).count() > 0


def _figure():
    return go.Figure(go.Bar(x=["negation", "role swap"], y=[0.4, 0.3]))


def test_a_saved_figure_draws_offline_and_a_cdn_one_does_not(offline_page, tmp_path, monkeypatch):
    monkeypatch.setattr(plots, "_png_engine_available", lambda: False)
    written = plots.save_figure(_figure(), "bars", tmp_path / "figures")
    assert _drawn(offline_page, written["html"])
    assert offline_page.locator(".xtick text").all_text_contents() == ["negation", "role swap"]

    control = tmp_path / "cdn" / "bars.html"
    control.parent.mkdir()
    _figure().write_html(control, include_plotlyjs="cdn")
    assert not _drawn(offline_page, control)
    assert any("cdn.plot.ly" in url for url in offline_page.fetched)


@pytest.mark.skipif(not COMMITTED, reason="no committed figures")
@pytest.mark.parametrize("html", COMMITTED, ids=[p.stem for p in COMMITTED])
def test_committed_figure_draws_offline(offline_page, html):
    assert _drawn(offline_page, html), f"{html.name} draws nothing offline (plotly.min.js beside it?)"


def test_a_wide_figure_fits_a_normal_window(offline_page, tmp_path, monkeypatch):
    """A many-panel figure (notebook 03's near-miss cosines: 1,200-1,800 px when its width was fixed)
    takes the window's width at 1,366 px: nothing is cut off and the page does not scroll sideways."""
    from plotly.subplots import make_subplots

    monkeypatch.setattr(plots, "_png_engine_available", lambda: False)
    fig = make_subplots(rows=1, cols=6, subplot_titles=[f"family {i}" for i in range(6)])
    for col in range(1, 7):
        fig.add_trace(go.Bar(x=["A", "B"], y=[0.2, 0.8], showlegend=False), row=1, col=col)
    plots.fit_width(fig, 1800)
    written = plots.save_figure(fig, "wide", tmp_path / "figures")
    offline_page.set_viewport_size({"width": 1366, "height": 900})
    assert _drawn(offline_page, written["html"])
    width, scroll = offline_page.evaluate("[window.innerWidth, document.documentElement.scrollWidth]")
    drawn = offline_page.locator(DRAWN).first.bounding_box()["width"]
    assert scroll <= width and drawn <= width, (drawn, scroll, width)
