"""`make figures` (second step): each stage's executed notebook, from its last successful run, as an
HTML page under docs/notebooks/, so a reader sees the real numbers where the argument is made.

    python scripts/notebook_pages.py --profile local            # -> docs/notebooks/
    python scripts/notebook_pages.py --profile local --check    # exit 1 when a page is stale

Which run: the stages.json records (one per profile, `provenance.stage_records`) name, per
stage, the executed notebook of its last success writing into the work_dir (a declared piece runs some
stages; the pages follow each stage's own run). Each page opens with the profile, the run folder and
the commit that made it, and is titled with the notebook's first heading.

nbconvert writes the page (its lab template), and every change to what it shows is made on the
notebook before that, by nbconvert preprocessors that edit cells and outputs as data: plotly figures,
kept in the notebook as JSON only, are drawn with the plotly.js `make figures` publishes into figures/
(no network needed); the notebook's default `parameters` cell is left out where papermill injected the
run's own; stderr (library warnings, logs, progress bars) and widget views (a headless run saves no
widget state, so their text is the widget as created: a progress bar frozen at 0%) are left out, the run
folder's notebook keeps them. The template is nbconvert's lab template with each page's <head> reduced
to the page's own (scripts/page_template/, which extends it): what lab puts in every head goes out of the
pages through the template's blocks and hooks, not by cutting the HTML afterwards (a regular expression
over the HTML once swallowed cells behind a pandas Styler's <style>). Its CSS (JupyterLab's, Pygments'
and lab's own rules, the same on every page, ~260 KB) goes to one stylesheet the pages link, notebook.css;
require.js and the widget loader, which nothing on the pages uses, are left out; MathJax (from its CDN,
as lab loads it) and mermaid stay only on a page whose notebook has TeX in its Markdown or a mermaid
diagram: none does today, and MathJax over the pages' HTML tables would set MRPC's prices ($ 60 to
$ 120) as formulas. A page's <head> is its title and the stylesheet's link.
Links in the notebooks are written from notebooks/; on a page they are rewritten to resolve from
docs/notebooks/. The committed .ipynb files stay without outputs.
"""

from __future__ import annotations

import argparse
import copy
import json
import os
import posixpath
import sys
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

import markupsafe
from bs4 import BeautifulSoup
from nbconvert import HTMLExporter
from nbconvert.preprocessors import Preprocessor
from traitlets import Unicode

from compsense.core.paths import repo_root, resolve
from compsense.core.storage import write_text
from compsense.figures.export import PLOTLY_JS
from compsense.pipeline.provenance import run_summary, stage_records
from compsense.pipeline.runner import Refused
from compsense.pipeline.stages import stage_key

PAGES_DIR = "docs/notebooks"
NOTEBOOKS_DIR = "notebooks"  # where the notebooks' own relative links start
CSS_FILE = "notebook.css"  # the template's CSS, shared by the pages
TEMPLATE = Path(__file__).resolve().parent / "page_template"  # lab, its <head> reduced to the page's own
MATH_MARKS = ("$", "\\(", "\\[", "\\begin{")  # what the lab template's MathJax typesets
RUN_RECORD = "run_summary.json"  # the run the pages show (`run_record`)
PLOTLY_MIME = "application/vnd.plotly.v1+json"
WIDGET_MIME = "application/vnd.jupyter.widget-view+json"
PARAMETERS, INJECTED = "parameters", "injected-parameters"  # papermill's cell tags
# Beside JupyterLab's CSS, which lays an output out as a fixed table cell with its overflow hidden (a
# 21-column table ran 2,651 px wide into a 1,244 px column, its last column cut): the prompt and the
# output side by side in a flex row, where the output may shrink, so a wide table scrolls inside it,
# and a table cell wraps its text after 40em instead of widening the table without end.
PAGE_CSS = """
/* compsense pages: wide outputs scroll inside the column */
.jp-OutputArea-child { display: flex; overflow: visible; }
.jp-OutputArea-prompt { flex: 0 0 auto; }
.jp-OutputArea-output { display: block; flex: 1 1 auto; min-width: 0; overflow-x: auto; }
.jp-RenderedHTMLCommon td, .jp-RenderedHTMLCommon th { max-width: 40em; white-space: normal; }
"""


def executed_notebooks(work_dir: str | os.PathLike, records: dict | None = None) -> dict[str, Path]:
    """{stage: executed notebook} of each stage's last success writing into `work_dir` (the
    stages.json records, `provenance.stage_records`); a notebook may be gone (a run folder deleted, or
    records copied from another machine): `write_pages` names those. `records`: stages.json already read."""
    records = stage_records(work_dir) if records is None else records
    if not records:
        raise FileNotFoundError(
            f"{resolve(work_dir)}: no stage has finished into it (no stages.json records it); run "
            "`make reproduce` for this profile first"
        )
    return {stage: Path(r["output"]) for stage, r in sorted(records.items())}


def tags(cell) -> list[str]:
    return list(cell.get("metadata", {}).get("tags", []))


class OneParametersCell(Preprocessor):
    """Where papermill injected the run's parameters, leave out the notebook's defaults cell above
    them: two parameter cells with different values, the first not the run's, read as a contradiction."""

    def preprocess(self, nb, resources):
        if any(INJECTED in tags(cell) for cell in nb.cells):
            nb.cells = [cell for cell in nb.cells if PARAMETERS not in tags(cell) or INJECTED in tags(cell)]
        return nb, resources


class NoRunLog(Preprocessor):
    """Leave out what belongs to the run's log, not to the argument: stderr (library warnings, logging,
    tqdm bars written as text) and widget views (their text is the widget when it was created, since a
    headless run saves no widget state: every progress bar at 0%)."""

    def preprocess_cell(self, cell, resources, index):
        if cell.cell_type == "code":
            cell.outputs = [out for out in cell.outputs if not is_run_log(out)]
        return cell, resources


def is_run_log(output) -> bool:
    """Whether a cell output is a stderr stream or a widget view."""
    if output.get("output_type") == "stream":
        return output.get("name") == "stderr"
    return WIDGET_MIME in (output.get("data") or {})


class PlotlyAsHTML(Preprocessor):
    """Each plotly figure (saved as JSON only) as HTML that draws it, the first loading plotly.js from
    `plotly_src` (relative to the page), with fixed div ids: the same notebook gives the same bytes."""

    plotly_src = Unicode("")

    def preprocess(self, nb, resources):
        import plotly.io as pio

        first = True
        for i, cell in enumerate(nb.cells):
            for j, out in enumerate(cell.get("outputs", [])):
                data = out.get("data") or {}
                if PLOTLY_MIME in data and "text/html" not in data:
                    data["text/html"] = pio.to_html(
                        copy.deepcopy(data.pop(PLOTLY_MIME)),
                        include_plotlyjs=self.plotly_src if first else False,
                        full_html=False,
                        div_id=f"figure-{i}-{j}",
                    )
                    first = False
        return nb, resources


class TitleFromHeading(Preprocessor):
    """The page's <title> (the lab template reads the notebook's `title` metadata): the notebook's first
    heading, instead of nbconvert's default, which for every page here was "Notebook"."""

    def preprocess(self, nb, resources):
        title = first_heading(nb)
        if title:
            nb.metadata["title"] = title
        return nb, resources


def first_heading(nb) -> str | None:
    """The text of the first Markdown heading line of the notebook (`# 02 · Training ...`)."""
    for cell in nb.cells:
        if cell.cell_type != "markdown":
            continue
        for line in cell.source.splitlines():
            if line.startswith("#"):
                return line.lstrip("#").strip() or None
    return None


class PageExporter(HTMLExporter):
    """nbconvert's HTML exporter with the lab template reduced to each page's own content
    (`TEMPLATE`): the CSS the template writes into every page's <head> goes to `self.css`, for one
    shared stylesheet that the page links; and its relative links are rewritten from `source_dir`
    (where the notebook lives) to `page_dir` (where the page is written)."""

    source_dir = Unicode("")
    page_dir = Unicode("")

    def __init__(self, **kw):
        super().__init__(template_name=TEMPLATE.name, extra_template_basedirs=[str(TEMPLATE.parent)], **kw)
        self.css: list[str] = []
        self.register_preprocessor(SharedHighlightCSS(css=self.css), enabled=True)
        self.register_preprocessor(PageNeeds(), enabled=True)

    def _init_resources(self, resources):
        resources = super()._init_resources(resources)

        def share_css(fragment):  # the template's hook for lab's CSS block: its <style>s, a <link> instead
            block = BeautifulSoup(fragment, features="html.parser")
            for style in block.find_all("style"):
                self.css.append(style.string or "")
                style.decompose()
            link, rest = f'<link rel="stylesheet" href="{CSS_FILE}"/>', str(block).strip()  # rest: none today
            return markupsafe.Markup(f"{link}\n{rest}" if rest else link)

        resources["share_css"] = share_css
        return resources

    def from_notebook_node(self, nb, resources=None, **kw):
        html, resources = super().from_notebook_node(nb, resources, **kw)
        if self.source_dir and self.page_dir:
            html = relink(html, Path(self.source_dir), Path(self.page_dir))
        return html, resources


class SharedHighlightCSS(Preprocessor):
    """The code highlighting CSS (Pygments') that the lab template's own preprocessor leaves for the
    page's <head>, to `css`, the shared stylesheet's parts. Registered after that preprocessor."""

    def __init__(self, css: list[str], **kw):
        super().__init__(**kw)
        self.css = css

    def preprocess(self, nb, resources):
        inlining = resources.get("inlining") or {}
        self.css.extend(inlining.get("css", []))
        inlining["css"] = []
        return nb, resources


class PageNeeds(Preprocessor):
    """resources["page_needs"]: whether the page needs MathJax (TeX in a Markdown cell or a Markdown
    or LaTeX output) or mermaid (a mermaid diagram), which the template then loads as the lab template
    does; the other pages go without. HTML outputs are not typeset: the `$` in them are prices in
    MRPC's sentences (page 01), which MathJax would set as formulas."""

    def preprocess(self, nb, resources):
        resources["page_needs"] = page_needs(nb)
        return nb, resources


def page_needs(nb) -> dict[str, bool]:
    """{"math": ..., "mermaid": ...} of a notebook (`PageNeeds`)."""
    markdown, mimes = [], set()
    for cell in nb.cells:
        if cell.cell_type == "markdown":
            markdown.append(cell.source)
        for out in cell.get("outputs", []):
            data = out.get("data") or {}
            mimes |= set(data)
            markdown.append(data.get("text/markdown", ""))
    text = "\n".join(markdown)
    return {
        "math": "text/latex" in mimes or any(mark in text for mark in MATH_MARKS),
        "mermaid": "text/vnd.mermaid" in mimes or "mermaid" in text,
    }


def relink(html: str, source_dir: Path, page_dir: Path) -> str:
    """`html` with each relative link (a[href], img[src]) that was written from `source_dir` rewritten
    to resolve from `page_dir`: `../docs/results.md` in a notebook is `../results.md` on its page.
    Anchors, absolute paths and URLs are left as they are."""
    soup = BeautifulSoup(html, features="html.parser")
    for tag, attr in (("a", "href"), ("img", "src")):
        for elem in soup.find_all(tag, attrs={attr: True}):
            elem[attr] = moved_link(elem[attr], source_dir, page_dir)
    return str(soup)


def moved_link(link: str, source_dir: Path, page_dir: Path) -> str:
    """One link, relative to `source_dir`, made relative to `page_dir` (unchanged unless relative)."""
    parts = urlsplit(link)
    if parts.scheme or parts.netloc or not parts.path or parts.path.startswith("/"):
        return link
    target = posixpath.normpath(posixpath.join(source_dir.as_posix(), parts.path))
    moved = posixpath.relpath(target, page_dir.as_posix())
    return urlunsplit(("", "", moved, parts.query, parts.fragment))


def page(
    executed: Path,
    plotly_src: str,
    page_dir: Path | None = None,
    source_dir: Path | None = None,
    record: dict | None = None,
    profile: str | None = None,
):
    """(html, css) of one executed notebook: a header naming the run, then the notebook as nbconvert's
    lab template renders it after the preprocessors above; `css` is the template's stylesheets, for the
    shared file. The run is the runner's (its summary.json beside the notebook: profile, commit) or,
    with none, the DVC stage of `profile` whose stages.json `record` names the commit."""
    import nbformat

    nb = nbformat.read(executed, as_version=4)
    summary = run_summary(executed)
    if summary or record is None:
        ran = (
            f"profile `{summary.get('profile', '?')}`, run `{executed.parent.name}`, commit "
            f"`{summary.get('commit', '?')}` (the retired runner). The committed notebook is "
            f"`notebooks/{executed.name}`; run it with `make reproduce`."
        )
    else:
        stage = f"{profile}-{stage_key(executed)}"
        minutes = f", {float(record['seconds']) / 60:.0f} min" if record.get("seconds") else ""
        ran = (
            f"profile `{profile}`, DVC stage `{stage}` at commit `{record.get('commit', '?')}` (finished "
            f"{str(record.get('finished', '?'))[:16].replace('T', ' ')} UTC{minutes}). The committed notebook "
            f"is `notebooks/{executed.name}`; run it with `dvc repro {stage}` (`make reproduce PROFILE={profile}` "
            "runs the profile)."
        )
    header = (
        f"**Executed notebook**: {ran} Shown here: the run's parameters, outputs and figures; its warnings, "
        "logs and progress bars are in the executed notebook the run left."
    )
    record = nbformat.v4.new_markdown_cell(header)
    record.id = "run-record"  # a fixed id: the same notebook gives the same bytes
    nb.cells.insert(0, record)
    nb.metadata.pop("widgets", None)  # the state of widget views the pages leave out
    exporter = PageExporter(
        source_dir=(source_dir or repo_root() / NOTEBOOKS_DIR).as_posix(),
        page_dir=(page_dir or resolve(PAGES_DIR)).as_posix(),
    )
    for step in (OneParametersCell(), NoRunLog(), PlotlyAsHTML(plotly_src=plotly_src), TitleFromHeading()):
        exporter.register_preprocessor(step, enabled=True)
    body, _ = exporter.from_notebook_node(nb)
    return body, "\n".join(exporter.css + [PAGE_CSS]) if exporter.css else ""


def run_record(records: dict, profile: str) -> str:
    """docs/notebooks/run_summary.json: the run the pages show, in the shape of the runner's summary.json
    (`estimate` prices the notebook-only stages 00 and 06 from it): per stage its status, seconds, commit
    and finish time, and the executed notebook as a path under the work_dir's parent (no machine's path)."""
    stages = {
        key: {
            "status": "ok",
            "seconds": r.get("seconds"),
            "commit": r.get("commit"),
            "finished": r.get("finished"),
            "output": _under_runs(Path(r["output"])),
        }
        for key, r in sorted(records.items())
        if r.get("output")
    }
    commits = sorted({r["commit"] for r in stages.values() if r.get("commit")})
    summary = {"profile": profile, "commit": ", ".join(commits) or "?", "overrides": [], "stages": stages}
    return json.dumps(summary, indent=2, sort_keys=True) + "\n"


def _under_runs(path: Path) -> str:
    """runs/<profile>/<folder>/<notebook>: a stage's executed notebook without the machine's path."""
    return path.relative_to(path.parents[3]).as_posix() if len(path.parents) > 3 else path.as_posix()


def write_pages(
    work_dir,
    out: str | os.PathLike = PAGES_DIR,
    figures: str = "figures",
    check: bool = False,
    profile: str | None = None,
) -> dict:
    """Write (or, with `check`, compare) one page per stage; returns {"written", "unchanged", "stale",
    "missing"}: "missing" names the stages whose executed notebook is gone, so their pages can be
    neither written nor checked (said, not skipped in silence)."""
    out_dir = resolve(out)
    plotly_src = Path(os.path.relpath(resolve(figures) / PLOTLY_JS, out_dir)).as_posix()
    done = {"written": [], "unchanged": [], "stale": [], "missing": []}
    files = {}
    records = stage_records(work_dir)
    for stage, executed in executed_notebooks(work_dir, records).items():
        if not executed.is_file():
            done["missing"].append(f"{stage} ({executed})")
            continue
        html, css = page(executed, plotly_src, page_dir=out_dir, record=records.get(stage), profile=profile)
        files[f"{executed.stem}.html"] = html
        if css and files.setdefault(CSS_FILE, css) != css:  # one stylesheet serves every page
            raise RuntimeError(f"{executed.name}: its page's CSS differs from the other pages' {CSS_FILE}")
    if profile is not None and files:
        files[RUN_RECORD] = run_record(records, profile)
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
