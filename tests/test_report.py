"""The run report (compsense.pipeline.report): long tables are cut with a count and the full table's path,
never silently; notebook 04's separation table is in it as the notebook shows it."""
from __future__ import annotations

import pandas as pd
import pytest

from compsense.pipeline import doctor

from compsense.pipeline import report


@pytest.fixture()
def work(tmp_path, monkeypatch):
    monkeypatch.setattr(doctor, "report", lambda: {"device": "cpu", "python": "3", "versions": {}})
    results = tmp_path / "work" / "results"
    results.mkdir(parents=True)
    # 100 distinct geometry results: more than a report table shows
    pd.DataFrame({"run": "m/A-seed42", "variant": "A", "seed": 42, "dataset": "heldout",
                  "family": [f"family{i:03d}" for i in range(100)], "metric": "auc",
                  "value": [i / 100 for i in range(100)]}).to_parquet(results / "geometry.parquet")
    rows = []
    for seed, shift in ((42, 0.0), (43, 0.1)):
        for family, metric, value in (("all", "auc", 0.6), ("self_match", "auc", 0.2),
                                      ("copy_vs_near_miss", "pairwise_accuracy", 0.3)):
            rows.append({"run": f"m/F4-end2end-seed{seed}", "variant": "F4-end2end", "seed": seed,
                         "dataset": "negatives-heldout", "family": family, "metric": metric,
                         "value": value + shift, "train_data": "balanced", "size": "small"})
    pd.DataFrame(rows).to_parquet(results / "verifiers.parquet")
    return tmp_path / "work"


def test_long_tables_say_how_many_rows_they_leave_out_and_where_they_are(work, tmp_path):
    md = report.build_report(work, tmp_path / "figs", tmp_path / "run")["md"].read_text()
    geometry = md.split("## Pooled-space separation (notebook 03)")[1].split("\n## ")[0]
    assert geometry.count("| heldout |") == report.MAX_ROWS
    assert "20 more rows not shown (100 in all)" in md and "geometry.parquet" in md


def test_report_shows_the_separation_table_with_seeds(work, tmp_path):
    md = report.build_report(work, tmp_path / "figs", tmp_path / "run")["md"].read_text()
    assert f"## {report.SEPARATION_TITLE}" in md
    section = md.split(f"## {report.SEPARATION_TITLE}")[1].split("\n## ")[0]
    header, _, row = section.strip().splitlines()[:3]
    assert "negatives-heldout auc" in header and "negatives-heldout self_match" in header
    assert row.startswith("| F4 | end2end | balanced | small | 2 |")
    assert "0.650 ± 0.071" in row and "0.250 ± 0.071" in row  # mean ± std over the two seeds
    # the answer comes before how the run was made
    assert md.index(report.SEPARATION_TITLE) < md.index("## Run metadata")
