"""`make figures` (second step): each stage's executed notebook, from its last successful run, as an
HTML page under docs/notebooks/, so a reader sees the real numbers where the argument is made.

    python scripts/notebook_pages.py --profile local            # -> docs/notebooks/
    python scripts/notebook_pages.py --profile local --check    # exit 1 when a page is stale

Which run: the runner's stages.json records (one per profile, `provenance.stage_records`) name, per
stage, the executed notebook of its last success writing into the work_dir (a declared piece runs some
stages; the pages follow each stage's own run). Each page opens with the
profile, the run folder and the commit that made it. nbconvert writes the page; plotly figures, kept
in the notebook as JSON only, are drawn with the plotly.js `make figures` publishes into figures/
(no network needed), and progress-bar widgets keep their text. The committed .ipynb files stay
without outputs.
"""

from __future__ import annotations

import argparse
import copy
import os
import re
import sys
from pathlib import Path

from compsense.core.paths import resolve
from compsense.core.storage import write_text
from compsense.figures.export import PLOTLY_JS
from compsense.pipeline.provenance import run_summary, stage_records
from compsense.pipeline.runner import Refused

PAGES_DIR = "docs/notebooks"
CSS_FILE = "notebook.css"  # JupyterLab's CSS, shared by the pages
LARGE_STYLE = re.compile(r'<style type="text/css">\n?(.{20000,}?)</style>\s*', re.S)  # the template's, not a cell's
PLOTLY_MIME = "application/vnd.plotly.v1+json"
WIDGET_MIME = "application/vnd.jupyter.widget-view+json"


def executed_notebooks(work_dir: str | os.PathLike) -> dict[str, Path]:
    """{stage: executed notebook} of each stage's last success writing into `work_dir` (the runner's
    stages.json records, `provenance.stage_records`)."""
    records = stage_records(work_dir)
    if not records:
        raise FileNotFoundError(
            f"{resolve(work_dir)}: no stage has finished into it (no stages.json records it); run "
            "`make reproduce` for this profile first"
        )
    found = {stage: Path(r["output"]) for stage, r in sorted(records.items())}
    return {stage: path for stage, path in found.items() if path.is_file()}


def page(executed: Path, plotly_src: str) -> str:
    """The HTML page of one executed notebook: plotly figures drawn, widgets as their text, a header
    naming the run (its summary.json beside the notebook: profile, commit)."""
    import nbformat
    import plotly.io as pio
    from nbconvert import HTMLExporter

    nb = nbformat.read(executed, as_version=4)
    summary = run_summary(executed)
    header = (
        f"**Executed notebook**: profile `{summary.get('profile', '?')}`, run `{executed.parent.name}`, "
        f"commit `{summary.get('commit', '?')}`. The committed notebook is `notebooks/{executed.name}`; "
        "run it with `python -m compsense reproduce`."
    )
    record = nbformat.v4.new_markdown_cell(header)
    record.id = "run-record"  # a fixed id: the same notebook gives the same bytes
    nb.cells.insert(0, record)
    first = True
    for i, cell in enumerate(nb.cells):
        for j, out in enumerate(cell.get("outputs", [])):
            data = out.get("data") or {}
            if WIDGET_MIME in data and "text/plain" in data:
                data.pop(WIDGET_MIME)  # the widget's state is not saved: its text is what a reader can see
            if PLOTLY_MIME in data and "text/html" not in data:
                figure = copy.deepcopy(data[PLOTLY_MIME])
                data["text/html"] = pio.to_html(
                    figure,
                    include_plotlyjs=plotly_src if first else False,
                    full_html=False,
                    div_id=f"figure-{i}-{j}",  # fixed ids: the same notebook gives the same bytes
                )
                data.pop(PLOTLY_MIME)
                first = False
    nb.metadata.pop("widgets", None)
    body, _ = HTMLExporter(template_name="lab").from_notebook_node(nb)
    return body


def shared_css(html: str) -> tuple[str, str]:
    """(page, css): the template's large style blocks (JupyterLab's CSS, the same on every page, ~300 KB)
    moved into one stylesheet the pages link, so each page carries only its own content."""
    css = []

    def take(match: re.Match) -> str:
        css.append(match.group(1))
        return ""

    page_html = LARGE_STYLE.sub(take, html)
    if not css:
        return html, ""
    return page_html.replace("</head>", f'<link rel="stylesheet" href="{CSS_FILE}"/>\n</head>', 1), "\n".join(css)


def write_pages(work_dir, out: str | os.PathLike = PAGES_DIR, figures: str = "figures", check: bool = False) -> dict:
    """Write (or, with `check`, compare) one page per stage; returns {"written", "unchanged", "stale"}."""
    out_dir = resolve(out)
    plotly_src = Path(os.path.relpath(resolve(figures) / PLOTLY_JS, out_dir)).as_posix()
    done = {"written": [], "unchanged": [], "stale": []}
    files = {}
    for executed in executed_notebooks(work_dir).values():
        html, css = shared_css(page(executed, plotly_src))
        files[f"{executed.stem}.html"] = html
        if css:
            files[CSS_FILE] = css
    for name, text in files.items():
        target = out_dir / name
        if target.is_file() and target.read_text(encoding="utf-8") == text:
            done["unchanged"].append(name)
        elif check:
            done["stale"].append(name)
        else:
            write_text(target, text)
            done["written"].append(name)
    return done


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python scripts/notebook_pages.py", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)  # fmt: skip
    parser.add_argument("--profile", default="local")
    parser.add_argument("--work-dir", help="default: the profile's work_dir")
    parser.add_argument("--out", default=PAGES_DIR)
    parser.add_argument("--check", action="store_true", help="change nothing; exit 1 when a page is stale")
    args = parser.parse_args(argv)
    if args.work_dir is None:
        from compsense.pipeline.profiles import load_profile

        args.work_dir = load_profile(args.profile)["common"]["work_dir"]
    try:
        done = write_pages(args.work_dir, args.out, check=args.check)
    except (FileNotFoundError, Refused) as err:  # Refused: a damaged stages.json, named with its fix
        print(f"notebook-pages: {err}", file=sys.stderr)
        return 2
    for key, names in done.items():
        if names:
            print(f"{key}: {', '.join(names)}")
    return 1 if done["stale"] else 0


if __name__ == "__main__":
    sys.exit(main())
