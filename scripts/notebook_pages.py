"""`make figures` (second step): each stage's executed notebook, from its last successful run (stages.json,
`provenance.stage_records`), as a page under docs/notebooks/ that names the run, so a reader sees the numbers.

    python scripts/notebook_pages.py --profile local            # -> docs/notebooks/
    python scripts/notebook_pages.py --profile local --check    # exit 1 when a page is stale

nbconvert writes each page with scripts/page_template/ (lab's template, each <head> reduced to the page's own).
The notebook is edited as data first: the defaults cell goes where papermill injected the run's parameters;
stderr (warnings, logs, progress bars) and widget views (no widget state in a headless run: bars frozen at 0%)
go, the run's notebook keeps them; plotly's JSON figures are drawn with the plotly.js `make figures` publishes.
"""

from __future__ import annotations

import argparse
import json
import os
import posixpath
import sys
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

import nbformat
import plotly.io as pio
from bs4 import BeautifulSoup
from jinja2 import pass_context
from markupsafe import Markup
from nbconvert import HTMLExporter
from nbconvert.preprocessors import TagRemovePreprocessor

from compsense.core.paths import repo_root, resolve
from compsense.core.storage import write_text
from compsense.figures.export import PLOTLY_JS
from compsense.pipeline.profiles import load_profile
from compsense.pipeline.provenance import stage_records
from compsense.pipeline.runner import Refused
from compsense.pipeline.stages import stage_key

PAGES_DIR, NOTEBOOKS_DIR = "docs/notebooks", "notebooks"  # the pages; where the notebooks' links start
CSS_FILE, RUN_RECORD = "notebook.css", "run_summary.json"  # the pages' shared CSS; the run they show
TEMPLATE = Path(__file__).resolve().parent / "page_template"
MATH_MARKS = ("$", "\\(", "\\[", "\\begin{")  # what lab's MathJax typesets
PLOTLY_MIME, WIDGET_MIME = "application/vnd.plotly.v1+json", "application/vnd.jupyter.widget-view+json"
# Beside JupyterLab's CSS, which gives an output a fixed table cell with its overflow hidden (a 21-column table
# was cut at 1,244 px): a flex row where the output shrinks and scrolls, and table cells that wrap after 40em.
PAGE_CSS = """
/* compsense pages: wide outputs scroll inside the column */
.jp-OutputArea-child { display: flex; overflow: visible; }
.jp-OutputArea-prompt { flex: 0 0 auto; }
.jp-OutputArea-output { display: block; flex: 1 1 auto; min-width: 0; overflow-x: auto; }
.jp-RenderedHTMLCommon td, .jp-RenderedHTMLCommon th { max-width: 40em; white-space: normal; }
"""


class PageExporter(HTMLExporter):
    """nbconvert's HTML exporter with scripts/page_template/; Markdown links moved from `dirs[0]` to `dirs[1]`."""

    def __init__(self, *dirs: Path):
        super().__init__(template_name=TEMPLATE.name, extra_template_basedirs=[str(TEMPLATE.parent)])
        self.dirs = dirs

    @pass_context
    def markdown2html(self, context, source):
        # mistune writes a link inside nbconvert's markdown2html filter, which takes no hook for its URL: links
        # are moved in the HTML of one Markdown cell or output, never over the page
        soup = BeautifulSoup(super().markdown2html(context, source), features="html.parser")
        for elem in soup.find_all(["a", "img"]):
            attr = "src" if elem.name == "img" else "href"
            if elem.get(attr):
                elem[attr] = moved_link(elem[attr], *self.dirs)
        return str(soup)


def moved_link(link: str, source_dir: Path, page_dir: Path) -> str:
    """`link`, relative to `source_dir`, made relative to `page_dir`: `../docs/results.md` in a notebook is
    `../results.md` on its page. Anchors, absolute paths and URLs stay."""
    parts = urlsplit(link)
    if parts.scheme or parts.netloc or not parts.path or parts.path.startswith("/"):
        return link
    target = posixpath.normpath(posixpath.join(source_dir.as_posix(), parts.path))
    return urlunsplit(("", "", posixpath.relpath(target, page_dir.as_posix()), parts.query, parts.fragment))


def page(executed: Path, plotly_src: str, page_dir=None, source_dir=None, record=None, profile=None):
    """(html, css) of one executed notebook; `css`: the template's stylesheets, for the shared file. The run is
    the DVC stage of `profile` that `record` (its stages.json record) names."""
    nb, record, profile = nbformat.read(executed, as_version=4), record or {}, profile or executed.parent.parent.name
    stage, finished = f"{profile}-{stage_key(executed)}", str(record.get("finished", "?"))[:16].replace("T", " ")
    minutes = f", {float(record['seconds']) / 60:.0f} min" if record.get("seconds") else ""
    ran = f"DVC stage `{stage}` at commit `{record.get('commit', '?')}` (finished {finished} UTC{minutes})"
    command = f"`dvc repro {stage}` (`make reproduce PROFILE={profile}` runs the profile)"
    header = (
        f"**Executed notebook**: profile `{profile}`, {ran}. The committed notebook is `notebooks/{executed.name}`; "
        f"run it with {command}. Shown here: the run's parameters, outputs and figures; its warnings, logs and "
        "progress bars are in the executed notebook the run left."
    )
    nb.cells.insert(0, nbformat.v4.new_markdown_cell(header, id="run-record"))  # a fixed id: the same bytes
    nb.metadata.pop("widgets", None)  # the state of the widget views left out below
    if any("injected-parameters" in cell.metadata.get("tags", []) for cell in nb.cells):  # papermill's tags
        nb, _ = TagRemovePreprocessor(remove_cell_tags={"parameters"}).preprocess(nb, {})  # the run's, not both
    plotly_js = plotly_src  # loaded by the first figure
    for i, cell in enumerate(nb.cells):
        if cell.cell_type == "code":  # the run's log: stderr, widget views (their text: the bar at 0%)
            cell.outputs = [
                o for o in cell.outputs if o.get("name") != "stderr" and WIDGET_MIME not in o.get("data", {})
            ]
        for j, data in enumerate(out.get("data") or {} for out in cell.get("outputs", [])):
            if PLOTLY_MIME in data and "text/html" not in data:  # fixed div ids: the same bytes
                figure, div_id = data.pop(PLOTLY_MIME), f"figure-{i}-{j}"
                data["text/html"] = pio.to_html(figure, include_plotlyjs=plotly_js, full_html=False, div_id=div_id)
                plotly_js = False
    lines = (line for cell in nb.cells if cell.cell_type == "markdown" for line in cell.source.splitlines())
    if title := next((line.lstrip("#").strip() or None for line in lines if line.startswith("#")), None):
        nb.metadata["title"] = title  # the <title>: the first heading, not nbconvert's "Notebook"
    # MathJax and mermaid, as lab loads them, only for TeX in Markdown or a LaTeX output, or a diagram: HTML
    # outputs are not typeset (MathJax would set the `$` of MRPC's prices in page 01's tables as formulas)
    data = [out.get("data") or {} for cell in nb.cells for out in cell.get("outputs", [])]
    text = "\n".join(
        [c.source for c in nb.cells if c.cell_type == "markdown"] + [d.get("text/markdown", "") for d in data]
    )
    mimes = set().union(*data)
    needs = {"math": "text/latex" in mimes or any(m in text for m in MATH_MARKS)}
    needs["mermaid"] = "text/vnd.mermaid" in mimes or "mermaid" in text
    css = []

    def highlight_css(nb, resources):  # Pygments' CSS, which lab's head inlines: to the shared stylesheet
        css.extend(resources["inlining"]["css"])
        resources["inlining"]["css"] = []
        return nb, resources

    def share_css(block):  # the template's hook for lab's CSS block: its <style>s to the stylesheet, a link
        block = BeautifulSoup(block, features="html.parser")
        css.extend(style.extract().string or "" for style in block.find_all("style"))
        rest = str(block).strip()  # nothing else, today
        return Markup(f'<link rel="stylesheet" href="{CSS_FILE}"/>' + (f"\n{rest}" if rest else ""))

    exporter = PageExporter(source_dir or repo_root() / NOTEBOOKS_DIR, page_dir or resolve(PAGES_DIR))
    exporter.register_preprocessor(highlight_css)  # after lab's own, which makes it
    html, _ = exporter.from_notebook_node(nb, {"share_css": share_css, "page_needs": needs})
    return html, "\n".join(css + [PAGE_CSS])


def write_pages(work_dir, out=PAGES_DIR, figures: str = "figures", check: bool = False, profile=None) -> dict:
    """Write (or, with `check`, compare) one page per stage; returns {"written", "unchanged", "stale",
    "missing"}: "missing" names the stages whose executed notebook is gone (a run folder deleted, records
    from another machine), so their pages can be neither written nor checked (said, not skipped in silence)."""
    records = stage_records(work_dir)
    if not records:
        raise FileNotFoundError(
            f"{resolve(work_dir)}: no stage has finished into it (no stages.json records it); run "
            "`make reproduce` for this profile first"
        )
    out_dir = resolve(out)
    plotly_src = Path(os.path.relpath(resolve(figures) / PLOTLY_JS, out_dir)).as_posix()
    done, files = {"written": [], "unchanged": [], "stale": [], "missing": []}, {}
    for stage, record in sorted(records.items()):
        executed = Path(record["output"])
        if not executed.is_file():
            done["missing"].append(f"{stage} ({executed})")
            continue
        html, css = page(executed, plotly_src, page_dir=out_dir, record=record, profile=profile)
        files[f"{executed.stem}.html"] = html
        if files.setdefault(CSS_FILE, css) != css:  # one stylesheet serves every page
            raise RuntimeError(f"{executed.name}: its page's CSS differs from the other pages' {CSS_FILE}")
    if profile is not None and files:  # the run the pages show, as a runner's summary.json (`estimate` prices
        # stages 00 and 06 from it), each executed notebook as runs/<profile>/<folder>/<notebook>: no machine's path
        stages = {
            key: {"status": "ok", **{k: r.get(k) for k in ("seconds", "commit", "finished")}}
            | {"output": Path(*Path(r["output"]).parts[-4:]).as_posix()}
            for key, r in sorted(records.items())
        }
        commits = ", ".join(sorted({r["commit"] for r in stages.values() if r["commit"]})) or "?"
        summary = {"profile": profile, "commit": commits, "stages": stages}
        files[RUN_RECORD] = json.dumps(summary, indent=2, sort_keys=True) + "\n"
    for name, text in files.items():
        same = (out_dir / name).is_file() and (out_dir / name).read_text(encoding="utf-8") == text
        done["unchanged" if same else "stale" if check else "written"].append(name)
        if not same and not check:
            write_text(out_dir / name, text)
    return done


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python scripts/notebook_pages.py", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)  # fmt: skip
    parser.add_argument("--profile", default="local")
    parser.add_argument("--work-dir", help="default: the profile's work_dir")
    parser.add_argument("--out", default=PAGES_DIR)
    parser.add_argument("--check", action="store_true", help="change nothing; exit 1 when a page is stale")
    args = parser.parse_args(argv)
    args.work_dir = args.work_dir or load_profile(args.profile)["common"]["work_dir"]
    try:
        done = write_pages(args.work_dir, args.out, check=args.check, profile=args.profile)
    except (FileNotFoundError, Refused) as err:  # Refused: a damaged stages.json, named with its fix
        print(f"notebook-pages: {err}", file=sys.stderr)
        return 2
    for key, names in done.items():
        if names:
            print(f"{key}: {', '.join(names)}")
    if done["missing"]:
        print(
            "missing: the executed notebooks above are gone, so their pages were left as they are; re-run "
            f"those stages (`make reproduce PROFILE={args.profile}`) to write or check them",
            file=sys.stderr,
        )
    return 1 if done["stale"] else 0


if __name__ == "__main__":
    sys.exit(main())
