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
