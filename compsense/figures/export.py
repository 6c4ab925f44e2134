"""Saving figures: interactive HTML always, a PNG beside it where an export engine (kaleido) exists.

Every HTML figure loads plotly.js from one `plotly.min.js` in the same folder (the copy plotly.py
ships, written when missing or of another version), so figures draw offline, the project's default,
without each file carrying its own 4.8 MB copy.

The same figure written twice gives the same bytes: the plot's div id is derived from the figure's
name (plotly draws a random one otherwise), so figures/ (`make figures`) changes only when a result does.

Plots read tidy tables and never recompute results; the figure-making functions of each stage live
in that stage's module, this module only writes them out.
"""

from __future__ import annotations

import logging
import os
import re
from pathlib import Path

from plotly.offline import get_plotlyjs

from compsense.core.paths import resolve
from compsense.core.storage import atomic_path

log = logging.getLogger(__name__)

PLOTLY_JS = "plotly.min.js"  # the src of every figure's script tag, relative to the HTML file
EXPORT_WIDTH = "export_width"  # layout.meta key: the width in px a PNG of a wide (many-panel) figure is drawn at


def fit_width(fig, export_width: int):
    """Let `fig` take the width of where it is shown (a notebook's output area, a browser window) and
    remember `export_width` for its PNG. Why: a fixed layout width wider than JupyterLab's output area
    (1,200-1,800 px for the many-panel figures of notebook 03) is cut off at a normal window width;
    a PNG has no window, so it is drawn at the width the panels need."""
    meta = dict(fig.layout.meta) if isinstance(fig.layout.meta, dict) else {}
    fig.update_layout(width=None, autosize=True, meta={**meta, EXPORT_WIDTH: int(export_width)})
    return fig


def save_figure(fig, name: str, figures_dir: str | os.PathLike, png: bool = True) -> dict[str, Path]:
    """Write `fig` (a plotly Figure) as figures_dir/name.html, and name.png when kaleido works.

    `figures_dir` is the run's folder (the profile's `figures_dir`, under runs/); the committed
    figures/ changes only through `make figures` (compsense.pipeline.publish)."""
    out_dir = resolve(figures_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    written = {}
    html = out_dir / f"{name}.html"
    with atomic_path(html) as tmp:
        fig.write_html(tmp, include_plotlyjs=PLOTLY_JS, full_html=True, div_id=div_id(name))
    written["html"] = html
    written["plotly_js"] = write_plotly_js(out_dir)
    if png and _png_engine_available():
        target = out_dir / f"{name}.png"
        try:
            with atomic_path(target) as tmp:
                meta = fig.layout.meta if isinstance(fig.layout.meta, dict) else {}
                fig.write_image(tmp, format="png", scale=2, width=meta.get(EXPORT_WIDTH))
            written["png"] = target
        except Exception as err:  # an engine present but broken (no Chrome for kaleido >= 1): HTML still stands
            log.warning("PNG export of %s failed (%s); the HTML was written", name, err)
    return written


def div_id(name: str) -> str:
    """The HTML id of figure `name`'s plot: fixed, so that its file is byte-identical run to run, and
    a valid id whatever the name holds."""
    return "fig-" + re.sub(r"[^A-Za-z0-9_-]", "-", name)


def write_plotly_js(out_dir: str | os.PathLike) -> Path:
    """figures_dir/plotly.min.js: plotly.py's bundled plotly.js, rewritten only when it differs."""
    target = Path(out_dir) / PLOTLY_JS
    bundled = get_plotlyjs()
    if not target.exists() or target.read_text(encoding="utf-8") != bundled:
        with atomic_path(target) as tmp:
            tmp.write_text(bundled, encoding="utf-8")
    return target


def _png_engine_available() -> bool:
    try:
        import kaleido  # noqa: F401, PLC0415 - an optional PNG engine: probing it is the point
    except ImportError:
        return False
    return True
