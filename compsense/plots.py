"""Saving figures: interactive HTML always, a PNG beside it where an export engine (kaleido) exists.

Plots read tidy tables and never recompute results; the figure-making functions of each stage live
in that stage's module, this module only writes them out.
"""
from __future__ import annotations

import logging
import os
from pathlib import Path

from .io import atomic_path
from .paths import resolve

log = logging.getLogger(__name__)


def save_figure(fig, name: str, figures_dir: str | os.PathLike = "figures", png: bool = True) -> dict[str, Path]:
    """Write `fig` (a plotly Figure) as figures_dir/name.html, and name.png when kaleido works."""
    out_dir = resolve(figures_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    written = {}
    html = out_dir / f"{name}.html"
    with atomic_path(html) as tmp:
        # A CDN link keeps each file small; offline viewers still get the data and layout.
        fig.write_html(tmp, include_plotlyjs="cdn", full_html=True)
    written["html"] = html
    if png and _png_engine_available():
        target = out_dir / f"{name}.png"
        try:
            with atomic_path(target) as tmp:
                fig.write_image(tmp, format="png", scale=2)
            written["png"] = target
        except Exception as err:  # an engine present but broken (no Chrome for kaleido >= 1): HTML still stands
            log.warning("PNG export of %s failed (%s); the HTML was written", name, err)
    return written


def _png_engine_available() -> bool:
    try:
        import kaleido  # noqa: F401
    except ImportError:
        return False
    return True
