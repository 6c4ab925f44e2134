"""Which run made each stage's published results: `make figures` writes it beside the tables
(figures/tables/provenance.csv) and docs/results.md shows it, so every table traces to a command, a
declared piece where there is one, a run folder and a commit.

The source is `stages.json` (one per profile; see `stage_records`), where each DVC stage records
(`stage.record`) its executed notebook, its commit, its time and its outputs. The command is the stage's
`dvc repro`; a piece's publication names the piece's command instead (`publish.publish_piece`).

That run's commit is not always the code that computed a table's rows: a stage reuses results of
earlier runs (an evaluation of the same model on the same data, an AUC on the same pairs). So
`row_commits` lists, per result table the stage wrote (results/<stage>/*.parquet among its recorded
outputs), the commits its rows record (`storage.COMMIT`, stamped when a row is computed), "not
recorded" for rows written before rows carried one.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pandas as pd

from compsense.core.layout import RESULTS
from compsense.core.paths import repo_root, resolve
from compsense.core.storage import COMMIT, CorruptFile, read_table
from compsense.pipeline.stages import SUMMARY, read_summary

PROVENANCE_FILE = "provenance.csv"
# publishes: blank where the row's run was published whole; else the files of it a piece published on its
# own (`publish.publish_piece`), beside rows of other runs for the same stage
COLUMNS = ["stage", "notebook", "piece", "command", "run", "commit", "finished", "minutes", "row_commits", "publishes"]
NOT_RECORDED = "not recorded"


def stage_records(work_dir) -> dict[str, dict]:
    """{stage: the record of its last success writing into `work_dir`}. Each profile keeps one
    stages.json (runs/<profile>/), and profiles may share a work_dir (study writes into
    runs/local), so every stages.json beside it is read and, per stage, the latest success kept."""
    from compsense.pipeline.profiles import PROFILES
    from compsense.pipeline.runner import read_state

    work = resolve(work_dir).resolve()
    found: dict[str, dict] = {}
    # runs/<profile>/stages.json for every profile (the work_dir is runs/<profile> in the usual layout)
    for state in sorted({work / "stages.json", *(work.parent / name / "stages.json" for name in PROFILES)}):
        if not state.is_file():
            continue
        for stage, record in read_state(state).items():  # a damaged one is refused, named
            if not record.get("output"):
                continue
            if Path(record.get("work_dir") or state.parent).resolve() != work:
                continue
            if stage not in found or str(record.get("finished", "")) > str(found[stage].get("finished", "")):
                found[stage] = record
    return found


def stage_provenance(work_dir, records: dict | None = None) -> pd.DataFrame:
    """One row per stage with a recorded success in {work_dir}/stages.json (see the module doc), or per
    stage of `records` ({stage: record}, as stages.json holds them: one run's, `run_records`)."""
    rows = []
    for stage, record in sorted((stage_records(work_dir) if records is None else records).items()):
        notebook = Path(record["output"])  # runs/<profile>/notebooks/<notebook>: the same on every machine
        profile = notebook.parent.parent.name
        rows.append(
            {
                "stage": stage,
                "notebook": notebook.name,
                "piece": "",
                "command": f"dvc repro {profile}-{stage}",
                "run": f"runs/{profile}/{notebook.parent.name}",
                "commit": record.get("commit", ""),
                "finished": record.get("finished", ""),
                "minutes": round(float(record.get("seconds") or 0) / 60, 1),
                "row_commits": "; ".join(
                    f"{path.name}: {row_commits(path)}" for path in result_tables(work_dir, stage)
                ),
                "publishes": "",
            }
        )
    return pd.DataFrame(rows, columns=COLUMNS)


def result_tables(work_dir, stage: str) -> list[Path]:
    """The result tables of a stage: results/<stage>/*.parquet under `work_dir`, the stage's own DVC output
    (`stage.stage_folders`), so every table in it is one the stage's last run left."""
    return sorted((resolve(work_dir) / RESULTS / stage).glob("*.parquet"))


def row_commits(path: Path) -> str:
    """The commits a table's rows record, each with its count of rows, most rows first:
    "195e5fb (96 rows), a8cc157 (24 rows)"; rows without one are counted as "not recorded". A damaged
    table is said to be, not raised: publishing the run's report does not need it."""
    try:
        table = read_table(path)
    except CorruptFile:
        return "unreadable"
    if COMMIT not in table.columns:
        return NOT_RECORDED
    counts = table[COMMIT].fillna(NOT_RECORDED).astype(str).value_counts()
    ordered = sorted(counts.items(), key=lambda item: (-item[1], item[0]))
    return ", ".join(f"{commit} ({n} row{'' if n == 1 else 's'})" for commit, n in ordered)


def run_records(run_dir: Path) -> dict[str, dict]:
    """{stage: record} of the stages a report's summary.json lists as finished: its executed notebook, the
    stage's commit and times, as the report stage copied them from stages.json (`stage.report`)."""
    summary = read_summary(Path(run_dir) / SUMMARY)
    return {
        stage: {**done, "finished": str(done.get("finished") or summary.get("finished", ""))}
        for stage, done in (summary.get("stages") or {}).items()
        if done.get("status") == "ok"
    }


def stage_code_changes(stage: str, old: str, new: str) -> list[str] | None:
    """The files of stage `stage`'s code that differ between commits `old` and `new`: its notebook, the
    compsense modules it imports (`runner.code_dependencies`, as they are now) and the package's
    resources. [] when none does; None when git cannot compare the two here (a commit this clone lacks,
    a "-dirty" or unknown one). Why the stage's code and not the commits: a commit that changed the
    README or another stage changes nothing this stage's rows were computed with."""
    from compsense.pipeline.runner import code_dependencies
    from compsense.pipeline.stages import notebooks, stage_key

    if old == new and "dirty" not in old:
        return []
    notebook = next((nb for nb in notebooks() if stage_key(nb) == stage), None)
    if notebook is None or not old or not new or any("dirty" in c or c == "unknown" for c in (old, new)):
        return None
    root = repo_root()
    paths = [notebook, *code_dependencies(notebook), root / "compsense" / "resources"]
    command = ["git", "diff", "--name-only", old, new, "--", *(p.relative_to(root).as_posix() for p in paths)]
    try:
        done = subprocess.run(command, cwd=root, capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.SubprocessError):
        return None
    return sorted(done.stdout.split()) if done.returncode == 0 else None
