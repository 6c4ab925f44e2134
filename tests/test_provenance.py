"""Which run made each stage's published results (compsense.pipeline.provenance): read from the
work_dir's stages.json, where each DVC stage records itself."""

from __future__ import annotations

import json

import pandas as pd

from compsense.core.layout import results_file
from compsense.pipeline.provenance import COLUMNS, stage_provenance
from scripts import load_script

T = load_script("readme_tables")


def _executed(work, notebook):
    """An executed notebook where a DVC stage leaves it: runs/<profile>/notebooks/."""
    path = work / "notebooks" / notebook
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("{}")
    return path


def _record(executed, commit, **more):
    return {"output": str(executed), "commit": commit, **more}


def test_each_stage_names_its_dvc_stage_run_and_commit(tmp_path):
    work = tmp_path / "runs" / "local"
    two, three = _executed(work, "02_training_ab.ipynb"), _executed(work, "03_pooled_geometry.ipynb")
    records = {
        "02": _record(two, "a8cc157", seconds=7984.9, finished="2026-12-03T14:23:02+00:00"),
        "03": _record(three, "caee724", seconds=324.4, finished="2026-12-03T14:29:51+00:00"),
    }
    (work / "stages.json").write_text(json.dumps(records))
    table = stage_provenance(work)
    assert list(table.columns) == COLUMNS and list(table.stage) == ["02", "03"]
    first, second = table.to_dict("records")
    assert first["piece"] == "" and first["command"] == "dvc repro local-02"  # a piece's publication names it
    assert first["run"] == "runs/local/notebooks" and first["commit"] == "a8cc157" and first["minutes"] == 133.1
    assert second["command"] == "dvc repro local-03" and second["commit"] == "caee724"
    csv = tmp_path / "provenance.csv"
    table.to_csv(csv, index=False)
    rendered = T.provenance(pd.read_csv(csv))
    assert "| 02 `02_training_ab.ipynb` | `dvc repro local-02` |" in rendered


def test_a_work_dir_without_stages_gives_an_empty_record(tmp_path):
    assert stage_provenance(tmp_path).empty


def test_a_stage_run_by_another_profile_into_the_same_work_dir_is_the_latest(tmp_path):
    # the study profile writes into runs/local but keeps its record in runs/study/stages.json
    runs = tmp_path / "runs"
    work = runs / "local"
    executed = _executed(work, "02_training_ab.ipynb")
    other = tmp_path / "elsewhere"
    local = _record(executed, "a8cc157", work_dir=str(work), finished="2026-12-03T14:23")
    (work / "stages.json").write_text(json.dumps({"02": local}))
    (runs / "study").mkdir()
    study = {
        "02": _record(executed, "079e026", work_dir=str(work), finished="2026-12-03T16:59"),
        "04": _record(executed, "079e026", work_dir=str(other), finished="2026-12-03T17:30"),  # not this work_dir
    }
    (runs / "study" / "stages.json").write_text(json.dumps(study))
    table = stage_provenance(work)
    assert table.to_dict("records") == [
        {
            "stage": "02",
            "notebook": "02_training_ab.ipynb",
            "piece": "",
            "command": "dvc repro local-02",
            "run": "runs/local/notebooks",
            "commit": "079e026",
            "finished": "2026-12-03T16:59",
            "minutes": 0.0,
            "row_commits": "",  # no result tables recorded
            "publishes": "",  # its run published whole
        }
    ]


def test_a_damaged_record_beside_the_work_dir_is_refused_with_its_name(tmp_path):
    import pytest

    from compsense.pipeline.runner import Refused

    (tmp_path / "runs" / "local").mkdir(parents=True)
    (tmp_path / "runs" / "study").mkdir()
    (tmp_path / "runs" / "study" / "stages.json").write_text('{"02": {')  # cut mid-write
    (tmp_path / "runs" / "scratch").mkdir()
    (tmp_path / "runs" / "scratch" / "stages.json").write_text("not json")  # not a profile: never read
    with pytest.raises(Refused, match=r"study/stages.json"):
        stage_provenance(tmp_path / "runs" / "local")


def test_each_result_table_lists_the_commits_its_rows_were_computed_at(tmp_path):
    from compsense.core.storage import write_table

    work = tmp_path / "runs" / "local"
    two = _executed(work, "02_training_ab.ipynb")
    # this run evaluated one model and reused two evaluations of earlier runs; Table 1 was written
    # before rows carried a commit
    retrieval = pd.DataFrame({"run": ["A", "A", "B", "C"], "commit": ["aaaaaaa", "aaaaaaa", "bbbbbbb", "ccccccc"]})
    write_table(retrieval, results_file(work, "retrieval.parquet"))
    write_table(pd.DataFrame({"run": ["A", "B"], "commit": ["ccccccc", None]}), results_file(work, "variants.parquet"))
    write_table(pd.DataFrame({"metric": ["ndcg@10"]}), results_file(work, "table1.parquet"))
    write_table(
        pd.DataFrame({"run": ["A"]}), work / "models" / "A" / "rows.parquet"
    )  # not in results/02: no table of 02
    (work / "stages.json").write_text(json.dumps({"02": _record(two, "ccccccc", work_dir=str(work))}))
    record = stage_provenance(work).to_dict("records")[0]
    assert record["commit"] == "ccccccc"  # the stage's
    assert record["row_commits"] == (
        "retrieval.parquet: aaaaaaa (2 rows), bbbbbbb (1 row), ccccccc (1 row); "
        "table1.parquet: not recorded; variants.parquet: ccccccc (1 row), not recorded (1 row)"
    )
    csv = tmp_path / "provenance.csv"
    stage_provenance(work).to_csv(csv, index=False)
    assert "| 02 `02_training_ab.ipynb` |" in T.provenance(pd.read_csv(csv))  # the README's table still renders
