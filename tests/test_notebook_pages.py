"""The executed notebooks as pages (scripts/notebook_pages.py): each stage's page from its own run, figures
drawn offline, stale pages found; every cell kept (behind pandas Styler tables too), the run's log and the
defaults cell left out, the Markdown's links resolving from the page; each <head> holding only its own."""

from __future__ import annotations

import json
from pathlib import Path

import nbformat
import plotly.graph_objects as go
import pytest
from bs4 import BeautifulSoup
from nbconvert import HTMLExporter

from scripts import load_script

P = load_script("notebook_pages")
PAGES = Path(__file__).resolve().parents[1] / P.PAGES_DIR


def _inlined_head(html: str) -> list[str]:
    """Each <style> and <script> in a page's <head> but MathJax's and, with a mermaid diagram, mermaid's."""
    soup = BeautifulSoup(html, "html.parser")
    mathjax = {"src": HTMLExporter().mathjax_url}, {"type": "text/x-mathjax-config"}
    diagrams = bool(soup.select(".jp-Mermaid"))
    left = []
    for elem in soup.head.find_all(["style", "script"]):
        if any(all(elem.get(k) == v for k, v in attrs.items()) for attrs in mathjax):
            continue
        if diagrams and (elem.name == "style" or elem.get("type") == "module") and "Mermaid" in elem.get_text():
            continue
        left.append(f"<{elem.name}> of {len(elem.get_text().splitlines())} lines {str(elem)[:80]!r}")
    return left


def _executed(folder, name="03_pooled_geometry.ipynb"):
    folder.mkdir(parents=True)
    v4, cell = nbformat.v4, nbformat.v4.new_code_cell("fig.show()")
    figure = json.loads(json.dumps(go.Figure(go.Bar(x=["negation"], y=[0.84])).to_plotly_json(), default=list))
    widget = {P.WIDGET_MIME: {"model_id": "x"}, "text/plain": "encode: 3/3 done"}
    cell.outputs = [
        v4.new_output("display_data", data) for data in ({P.PLOTLY_MIME: figure}, widget, {P.PLOTLY_MIME: figure})
    ]
    nbformat.write(v4.new_notebook(cells=[v4.new_markdown_cell("# 03 · Pooled geometry"), cell]), folder / name)
    return folder / name


def test_each_stage_gets_a_page_from_its_own_last_run_with_figures_drawn(tmp_path):
    work = tmp_path / "runs" / "local"
    first = _executed(work / "20261203-0900")
    gone = work / "gone" / "05_reranking.ipynb"
    dvc = {"commit": "abc1234"}
    records = {"03": {**dvc, "output": str(first)}, "05": {**dvc, "output": str(gone)}}
    (work / "stages.json").write_text(json.dumps(records))
    out, figures = tmp_path / "docs" / "notebooks", tmp_path / "figures"
    done = P.write_pages(work, out, figures=str(figures))
    assert done["written"] == ["03_pooled_geometry.html", P.CSS_FILE]  # a stage whose notebook is gone has none
    html = (out / "03_pooled_geometry.html").read_text()
    # JupyterLab's CSS lives once beside the pages, not in each (~300 KB a page)
    css = (out / P.CSS_FILE).read_text()
    assert f'href="{P.CSS_FILE}"' in html and len(html) < 60_000 < len(css) and P.PAGE_CSS in css
    # and so is the rest of what the lab template puts in every page's head: its highlighting and page CSS
    # in the stylesheet, no script (require.js, MathJax, mermaid: the page has no TeX and no diagram)
    assert ".highlight .k {" in css and "a.anchor-link {" in css and not _inlined_head(html)
    assert "<title>03 · Pooled geometry</title>" in html
    assert "DVC stage <code>local-03</code> at commit <code>abc1234</code>" in html
    assert html.count('src="../../figures/plotly.min.js"') == 1  # drawn offline, plotly.js loaded once
    assert 'id="figure-2-0"' in html and 'id="figure-2-1"' in html
    assert "encode: 3/3 done" not in html and P.WIDGET_MIME not in html  # a widget view's text is not its state
    assert P.write_pages(work, out, figures=str(figures), check=True) == {
        "written": [],
        "unchanged": ["03_pooled_geometry.html", P.CSS_FILE],
        "stale": [],
        "missing": [f"05 ({gone})"],  # named, not skipped in silence
    }
    # a later run of the stage makes the page stale until it is written again
    second = _executed(work / "20261203-1000")
    (work / "stages.json").write_text(json.dumps({"03": {**dvc, "output": str(second), "commit": "def5678"}}))
    assert P.write_pages(work, out, figures=str(figures), check=True)["stale"] == ["03_pooled_geometry.html"]
    assert P.main(["--work-dir", str(work), "--out", str(out), "--check"]) == 1


def test_a_dvc_stages_page_names_its_stage_and_commit_and_the_pages_run_is_recorded(tmp_path):
    """A DVC stage leaves its executed notebook in runs/<profile>/notebooks/: the page
    names the stage, its `dvc repro` command and the commit stages.json recorded, and run_summary.json
    (what `estimate` prices 00 and 06 from) is written beside the pages without the machine's path."""
    work = tmp_path / "runs" / "local"
    executed = _executed(work / "notebooks")
    record = {"output": str(executed), "commit": "26df8ef", "seconds": 150.0}
    (work / "stages.json").write_text(json.dumps({"03": {**record, "finished": "2026-12-06T16:30:08+00:00"}}))
    out = tmp_path / "docs" / "notebooks"
    done = P.write_pages(work, out, figures=str(tmp_path / "figures"), profile="local")
    assert P.RUN_RECORD in done["written"]
    html = (out / "03_pooled_geometry.html").read_text()
    assert "DVC stage <code>local-03</code> at commit <code>26df8ef</code>" in html
    assert "<code>dvc repro local-03</code>" in html and "2026-12-06 16:30 UTC, 2 min" in html
    summary = json.loads((out / P.RUN_RECORD).read_text())
    assert summary["profile"] == "local" and summary["commit"] == "26df8ef"
    assert summary["stages"]["03"] == {
        "commit": "26df8ef",
        "finished": "2026-12-06T16:30:08+00:00",
        "output": "runs/local/notebooks/03_pooled_geometry.ipynb",
        "seconds": 150.0,
        "status": "ok",
    }


def test_a_work_dir_without_runs_is_a_named_error(tmp_path, capsys):
    with pytest.raises(FileNotFoundError, match="no stage has finished into it"):
        P.write_pages(tmp_path, tmp_path / "out")
    assert P.main(["--work-dir", str(tmp_path)]) == 2 and "make reproduce" in capsys.readouterr().err


def _styler_html(marker: str) -> str:
    import pandas as pd

    table = pd.DataFrame({"variant": ["A", "B"], "ndcg@10": [0.588123, 0.579456]})
    html = table.style.format({"ndcg@10": "{:.3f}"}).set_caption(marker).to_html()
    assert '<style type="text/css">' in html  # what the old regular expression started its cut at
    return html


def _debris_notebook(folder):
    """An executed notebook as papermill leaves it: the defaults and the injected parameters, two Styler tables
    with over 20 KB of cells between and after them, a warning and a tqdm bar on stderr, a progress-bar widget
    frozen at 0%, links written from notebooks/."""
    v4 = nbformat.v4
    folder.mkdir(parents=True)
    bar = "evaluate:   0%|          | 0/3 [00:00<?, ?model/s]"

    def code(source, outputs=(), tags=()):
        cell = v4.new_code_cell(source)
        cell.outputs, cell.metadata["tags"] = list(outputs), list(tags)
        return cell

    def stream(name, text):
        return v4.new_output("stream", name=name, text=text)

    def html(text):
        return v4.new_output("execute_result", {"text/html": text, "text/plain": "table"}, execution_count=1)

    long_output = "<table>" + "<tr><td>row</td><td>0.123</td></tr>" * 800 + "</table>"  # ~ 28 KB
    cells = [
        v4.new_markdown_cell(
            "A line before the heading\n# 02 · Training Model A and Model B\n\n[results](../docs/results.md), [this "
            "page, executed](../docs/notebooks/02_training_ab.html), [Table 1](#Table-1), [the paper]"
            '(https://arxiv.org/abs/2604.16351), <a href="../docs/results.md">raw HTML</a>'
        ),
        code('profile = "smoke"', tags=["parameters"]),
        code('# Parameters\nprofile = "local"\n', tags=["injected-parameters"]),
        code("table1", [html(_styler_html("first styled table"))]),
        code("print('cell after the table 1')", [stream("stdout", "cell after the table 1\n")]),
        code("big", [html(long_output)]),
        code("variants", [html(_styler_html("second styled table"))]),
        code(
            "train()",
            [
                stream("stderr", "/x/sampler.py:12: UserWarning: produced only 99 batches\n"),
                stream("stderr", "\rtrain:   0%|          | 0/3 [00:00<?, ?it/s]"),
                v4.new_output("display_data", {P.WIDGET_MIME: {"model_id": "m"}, "text/plain": bar}),
                stream("stdout", "cell after the table 2\n"),
            ],
        ),
        code("big_again", [html(long_output)]),
        v4.new_markdown_cell("## The result in words\n\ncell after the table 3"),
    ]
    nbformat.write(v4.new_notebook(cells=cells), folder / "02_training_ab.ipynb")
    return folder / "02_training_ab.ipynb", len(cells)


def test_a_page_keeps_every_cell_and_leaves_out_the_run_log(tmp_path):
    executed, n_cells = _debris_notebook(tmp_path / "runs" / "local" / "20261206-0100")
    repo = tmp_path / "repo"
    (repo / "docs" / "notebooks").mkdir(parents=True)
    (repo / "docs" / "results.md").write_text("results")
    (repo / "docs" / "notebooks" / "02_training_ab.html").write_text("page")
    html, css = P.page(executed, "../../figures/plotly.min.js", repo / "docs" / "notebooks", repo / "notebooks")
    soup = BeautifulSoup(html, "html.parser")
    text = soup.get_text()
    # every cell is there: the run record added, the defaults cell left out; both Styler tables too
    assert len(soup.select("div.jp-Cell")) == n_cells + 1 - 1
    for marker in ("cell after the table 1", "cell after the table 2", "cell after the table 3", "The result in words"):
        assert marker in text
    assert "first styled table" in text and "second styled table" in text and "0.579" in text
    assert text.count("row0.123") == 1600  # both 28 KB outputs whole
    # one parameters cell, the run's own
    assert 'profile = "local"' in text and 'profile = "smoke"' not in text
    # no run log: warnings, tqdm text on stderr, the frozen widget
    assert "UserWarning" not in text and "0%|" not in text and "it/s" not in text and P.WIDGET_MIME not in html
    assert not soup.select('[data-mime-type="application/vnd.jupyter.stderr"]')
    # the title is the notebook's first heading (after lines and cells without one), the CSS linked, not inlined
    assert soup.title.string == "02 · Training Model A and Model B"
    assert soup.find("link", href=P.CSS_FILE) and len(html) < 120_000 < len(css)
    # links written from notebooks/ resolve from docs/notebooks/, inside the repository
    hrefs = {a.get_text(): a["href"] for a in soup.select(".jp-RenderedMarkdown a") if not a.get("class")}
    assert hrefs["results"] == "../results.md" and hrefs["this page, executed"] == "02_training_ab.html"
    assert hrefs["Table 1"] == "#Table-1" and hrefs["the paper"] == "https://arxiv.org/abs/2604.16351"
    assert hrefs["raw HTML"] == "../results.md"
    for link in ("../results.md", "02_training_ab.html"):
        target = (repo / "docs" / "notebooks" / link).resolve()
        assert target.is_file() and target.is_relative_to(repo)


def test_moved_links_leave_urls_anchors_and_absolute_paths_alone():
    source, page_dir = Path("/r/notebooks"), Path("/r/docs/notebooks")
    assert P.moved_link("../docs/results.md#table-1", source, page_dir) == "../results.md#table-1"
    assert P.moved_link("../figures/a.png", source, page_dir) == "../../figures/a.png"
    for kept in ("#Table-1", "https://example.org/x.md", "/abs/path.md", "mailto:a@b.c"):
        assert P.moved_link(kept, source, page_dir) == kept


def test_a_pages_head_loads_mathjax_and_mermaid_only_where_the_notebook_has_them(tmp_path):
    """lab puts MathJax (from its CDN) and mermaid's loader in every head; a page keeps them, as lab writes them,
    only where its notebook has TeX in Markdown (or a LaTeX output) or a mermaid diagram."""
    v4 = nbformat.v4
    prices = v4.new_code_cell("table")
    prices.outputs = [  # a table's $ are prices, not TeX: HTML outputs are not typeset
        v4.new_output("execute_result", {"text/html": "<td>save $ 60 to $ 120 .</td>"}, execution_count=1)
    ]
    notebooks = {
        "plain": [v4.new_markdown_cell("# 03 · Pooled geometry\n\nno formula"), prices],
        "math": [v4.new_markdown_cell("# 03\n\nthe cosine $\\cos(a, b) = a \\cdot b$")],
        "latex": [v4.new_code_cell("Math(...)")],
        "mermaid": [v4.new_markdown_cell("# 03\n\n```mermaid\ngraph LR; A-->B\n```")],
    }
    notebooks["latex"][0].outputs = [v4.new_output("display_data", {"text/latex": "$x^2$", "text/plain": "x"})]
    mathjax_url = HTMLExporter().mathjax_url
    for name, cells in notebooks.items():
        folder = tmp_path / name
        folder.mkdir()
        nbformat.write(v4.new_notebook(cells=cells), folder / "03_pooled_geometry.ipynb")
        html, _ = P.page(folder / "03_pooled_geometry.ipynb", "../../figures/plotly.min.js", tmp_path, folder)
        head = BeautifulSoup(html, "html.parser").head
        assert head.find("link", href=P.CSS_FILE), name
        assert bool(head.find("script", src=mathjax_url)) == (name in ("math", "latex")), name
        assert bool(head.find("script", type="module")) == (name == "mermaid"), name
        assert not _inlined_head(html), name  # nothing else: no require.js, no CSS
        assert head.title.string == {"plain": "03 · Pooled geometry", "latex": "Notebook"}.get(name, "03"), name


@pytest.mark.skipif(not PAGES.is_dir(), reason="no published pages in this checkout")
def test_the_published_pages_link_the_shared_head_instead_of_inlining_it():
    """docs/notebooks/: each page links the shared stylesheet, and its <head> inlines none of the lab template's
    CSS or scripts again (once ~610 lines on every page, the same on each)."""
    pages = sorted(PAGES.glob("0*.html"))
    assert pages and (PAGES / P.CSS_FILE).is_file()
    for page in pages:
        html = page.read_text(encoding="utf-8")
        head = BeautifulSoup(html, "html.parser").head
        assert head.find("link", rel="stylesheet", href=P.CSS_FILE), page.name
        assert _inlined_head(html) == [], page.name
        assert len(str(head).splitlines()) < 20, f"{page.name}: its <head> is {len(str(head).splitlines())} lines"
