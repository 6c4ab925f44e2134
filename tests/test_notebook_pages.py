"""The executed notebooks published as pages (scripts/notebook_pages.py): the run each stage's
page comes from, figures drawn with the published plotly.js, widgets as their text, stale pages found."""

from __future__ import annotations

import json

import nbformat
import plotly.graph_objects as go
import pytest

from scripts import load_script

P = load_script("notebook_pages")


def _executed(folder, name="03_pooled_geometry.ipynb", commit="abc1234"):
    folder.mkdir(parents=True)
    nb = nbformat.v4.new_notebook()
    cell = nbformat.v4.new_code_cell("fig.show()")
    figure = go.Figure(go.Bar(x=["negation"], y=[0.84])).to_plotly_json()
    cell.outputs = [
        nbformat.v4.new_output("display_data", {P.PLOTLY_MIME: json.loads(json.dumps(figure, default=list))}),
        nbformat.v4.new_output("display_data", {P.WIDGET_MIME: {"model_id": "x"}, "text/plain": "encode: 3/3 done"}),
    ]
    nb.cells = [nbformat.v4.new_markdown_cell("# 03 · Pooled geometry"), cell]
    nbformat.write(nb, folder / name)
    (folder / "summary.json").write_text(json.dumps({"profile": "local", "commit": commit}))
    return folder / name


def test_each_stage_gets_a_page_from_its_own_last_run_with_figures_drawn(tmp_path):
    work = tmp_path / "runs" / "local"
    first = _executed(work / "20261203-0900")
    (work / "stages.json").write_text(
        json.dumps(
            {
                "03": {"fingerprint": "f", "output": str(first)},
                "05": {"fingerprint": "f", "output": str(work / "gone" / "05_reranking.ipynb")},
            }
        )
    )
    out, figures = tmp_path / "docs" / "notebooks", tmp_path / "figures"
    done = P.write_pages(work, out, figures=str(figures))
    assert done["written"] == ["03_pooled_geometry.html", P.CSS_FILE]  # a stage whose notebook is gone has none
    html = (out / "03_pooled_geometry.html").read_text()
    # JupyterLab's CSS lives once beside the pages, not in each (~300 KB a page)
    assert f'href="{P.CSS_FILE}"' in html and len(html) < 60_000 < len((out / P.CSS_FILE).read_text())
    assert "run <code>20261203-0900</code>" in html and "commit <code>abc1234</code>" in html
    assert 'src="../../figures/plotly.min.js"' in html and 'id="figure-2-0"' in html  # drawn, offline
    assert "encode: 3/3 done" in html and P.WIDGET_MIME not in html
    assert P.write_pages(work, out, figures=str(figures), check=True) == {
        "written": [],
        "unchanged": ["03_pooled_geometry.html", P.CSS_FILE],
        "stale": [],
    }
    # a later run of the stage makes the page stale until it is written again
    second = _executed(work / "20261203-1000", commit="def5678")
    (work / "stages.json").write_text(json.dumps({"03": {"fingerprint": "f", "output": str(second)}}))
    assert P.write_pages(work, out, figures=str(figures), check=True)["stale"] == ["03_pooled_geometry.html"]
    assert P.main(["--work-dir", str(work), "--out", str(out), "--check"]) == 1


def test_a_work_dir_without_runs_is_a_named_error(tmp_path, capsys):
    with pytest.raises(FileNotFoundError, match="no stage has finished into it"):
        P.executed_notebooks(tmp_path)
    assert P.main(["--work-dir", str(tmp_path)]) == 2 and "make reproduce" in capsys.readouterr().err
