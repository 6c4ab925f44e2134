"""Which run made each stage's published results (compsense.pipeline.provenance): read from the
work_dir's stages.json and each run's summary.json, matched to a declared piece when one fits."""

from __future__ import annotations

import json

import pandas as pd

from compsense.core.layout import results_file
from compsense.pipeline import pieces as P
from compsense.pipeline.provenance import COLUMNS, stage_provenance
from scripts import load_script

T = load_script("readme_tables")


def _run(runs, profile, stamp, overrides, notebook, commit):
    folder = runs / profile / stamp
    folder.mkdir(parents=True)
    (folder / notebook).write_text("{}")
    record = {"profile": profile, "commit": commit, "overrides": overrides}
    (folder / "summary.json").write_text(json.dumps(record))
    return folder / notebook


def test_each_stage_names_its_run_commit_and_piece(tmp_path):
    pieces = P.load_pieces()
    runs, work = tmp_path / "runs", tmp_path / "runs" / "local"
    two = _run(runs, "local", "20261203-1200", list(pieces["local-02"].overrides), "02_training_ab.ipynb", "a8cc157")
    three = _run(runs, "local", "20261203-1400", ["pooled_geometry.seeds=[43]"], "03_pooled_geometry.ipynb", "caee724")
    (work / "stages.json").write_text(
        json.dumps(
            {
                "02": {
                    "fingerprint": "f",
                    "output": str(two),
                    "seconds": 7984.9,
                    "finished": "2026-12-03T14:23:02+00:00",
                },
                "03": {
                    "fingerprint": "f",
                    "output": str(three),
                    "seconds": 324.4,
                    "finished": "2026-12-03T14:29:51+00:00",
                },
            }
        )
    )
    table = stage_provenance(work, pieces)
    assert list(table.columns) == COLUMNS and list(table.stage) == ["02", "03"]
    first, second = table.to_dict("records")
    assert first["piece"] == "local-02" and first["command"] == "python -m compsense piece local-02"
    assert first["run"] == "runs/local/20261203-1200" and first["commit"] == "a8cc157" and first["minutes"] == 133.1
    # overrides no declared piece has: the plain command that made it, with its --set
    assert second["piece"] == "" and second["command"] == (
        "python -m compsense reproduce --profile local --only 03 --set 'pooled_geometry.seeds=[43]'"
    )
    csv = tmp_path / "provenance.csv"
    table.to_csv(csv, index=False)
    rendered = T.provenance(pd.read_csv(csv))
    assert "| 02 `02_training_ab.ipynb` | `python -m compsense piece local-02` |" in rendered


def test_a_work_dir_without_stages_gives_an_empty_record(tmp_path):
    assert stage_provenance(tmp_path, {}).empty


def test_a_stage_run_by_another_profile_into_the_same_work_dir_is_the_latest(tmp_path):
    # the study profile writes into runs/local but keeps its record in runs/study/stages.json
    pieces = P.load_pieces()
    runs = tmp_path / "runs"
    work = runs / "local"
    local = _run(runs, "local", "20261203-1200", list(pieces["local-02"].overrides), "02_training_ab.ipynb", "a8cc157")
    study = _run(
        runs, "study", "20261203-1547", list(pieces["study-02-seed-45"].overrides), "02_training_ab.ipynb", "079e026"
    )
    other = tmp_path / "elsewhere"
    (work / "stages.json").write_text(
        json.dumps(
            {"02": {"fingerprint": "f", "output": str(local), "work_dir": str(work), "finished": "2026-12-03T14:23"}}
        )
    )
    (runs / "study" / "stages.json").write_text(
        json.dumps(
            {
                "02": {"fingerprint": "f", "output": str(study), "work_dir": str(work), "finished": "2026-12-03T16:59"},
                "04": {
                    "fingerprint": "f",
                    "output": str(study),
                    "work_dir": str(other),
                    "finished": "2026-12-03T17:30",
                },  # not this work_dir
            }
        )
    )
    table = stage_provenance(work, pieces)
    assert table.to_dict("records") == [
        {
            "stage": "02",
            "notebook": "02_training_ab.ipynb",
            "piece": "study-02-seed-45",
            "command": "python -m compsense piece study-02-seed-45",
            "run": "runs/study/20261203-1547",
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
        stage_provenance(tmp_path / "runs" / "local", {})


def test_each_result_table_lists_the_commits_its_rows_were_computed_at(tmp_path):
    from compsense.core.storage import write_table

    runs, work = tmp_path / "runs", tmp_path / "runs" / "local"
    two = _run(runs, "local", "20261204-0900", [], "02_training_ab.ipynb", "ccccccc")
    # this run evaluated one model and reused two evaluations of earlier runs; Table 1 was written
    # before rows carried a commit
    retrieval = pd.DataFrame({"run": ["A", "A", "B", "C"], "commit": ["aaaaaaa", "aaaaaaa", "bbbbbbb", "ccccccc"]})
    write_table(retrieval, results_file(work, "retrieval.parquet"))
    write_table(pd.DataFrame({"run": ["A", "B"], "commit": ["ccccccc", None]}), results_file(work, "variants.parquet"))
    write_table(pd.DataFrame({"metric": ["ndcg@10"]}), results_file(work, "table1.parquet"))
    # "gone" was deleted since; DONE.json is not a result table
    outputs = {f"results/02/{name}.parquet": "1:x" for name in ("retrieval", "variants", "table1", "gone")}
    outputs["models/A/DONE.json"] = "1:x"
    (work / "stages.json").write_text(
        json.dumps({"02": {"fingerprint": "f", "output": str(two), "work_dir": str(work), "outputs": outputs}})
    )
    record = stage_provenance(work, {}).to_dict("records")[0]
    assert record["commit"] == "ccccccc"  # the run's, as before
    assert record["row_commits"] == (
        "retrieval.parquet: aaaaaaa (2 rows), bbbbbbb (1 row), ccccccc (1 row); "
        "table1.parquet: not recorded; variants.parquet: ccccccc (1 row), not recorded (1 row)"
    )
    csv = tmp_path / "provenance.csv"
    stage_provenance(work, {}).to_csv(csv, index=False)
    assert "| 02 `02_training_ab.ipynb` |" in T.provenance(pd.read_csv(csv))  # the README's table still renders


def test_a_stage_dvc_ran_names_its_dvc_stage_and_the_commit_it_recorded(tmp_path):
    work = tmp_path / "runs" / "smoke"
    executed = work / "notebooks" / "02_training_ab.ipynb"
    executed.parent.mkdir(parents=True)
    executed.write_text("{}")
    record = {"fingerprint": "dvc", "output": str(executed), "seconds": 90.0, "work_dir": str(work)}
    (work / "stages.json").write_text(json.dumps({"02": {**record, "commit": "908ddb0", "outputs": {}}}))
    row = stage_provenance(work, {}).to_dict("records")[0]
    assert (row["command"], row["commit"], row["run"], row["minutes"]) == (
        "dvc repro smoke-02",
        "908ddb0",
        "runs/smoke/notebooks",
        1.5,
    )
