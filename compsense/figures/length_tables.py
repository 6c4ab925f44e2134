"""`python -m compsense length --publish`: the training-length curve's tables, its record and its figure,
from the length root (`compsense.nearmiss.length_run`) into figures/ (numbers only, no text of any dataset).
A module of the figures layer, since it draws the curve; the runs themselves are `nearmiss.length_run`'s."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from compsense.core.paths import repo_root
from compsense.core.storage import read_table, sha256_file, write_json, write_table
from compsense.figures.export import save_figure
from compsense.figures.length import length_figure
from compsense.nearmiss import length_curve as LC
from compsense.nearmiss.length_run import external_table, length_root

TABLES = {  # figures/tables/<name>: what `publish` writes (numbers only)
    "points": "length_curve.csv",  # every model x step x dataset x family x metric
    "deltas": "length_deltas.csv",  # A - Base, B - A, C - A, B - C per seed and step, query bootstrap
    "seed_tests": "length_seed_tests.csv",  # paired t over seeds where a step has three or more
    "nearmiss_seed_tests": "length_nearmiss_seed_tests.csv",  # the same for the near-miss scores
    "record": "length_record.json",  # what made them: commits, schedule, data counts, wall times, versions
    "parts": "length_parts.csv",  # one row per piece part: seed, variant, steps, precision, seconds, commit
    "external": "length_external.csv",  # CondaQA, SugarCrepe and held-out near-miss tests per model and step
}
FIGURE = "02_length_curve"


def publish(root=None, figures_dir=None, work_dir="runs/local", control_root=None) -> list[Path]:
    """The curve's tables, the record and the figure from the length root into figures/ (atomic writes).
    The record gets the sha256 of notebook 01's files the pieces read (under `work_dir`), and, with
    `control_root` (a root whose pieces ran in the other precision), that control's points as
    figures/tables/length_precision_control.csv. Refuses when nothing was scored yet."""
    results = length_root(root) / "results"
    if not (results / LC.POINTS).exists():
        raise FileNotFoundError(f"{results / LC.POINTS}: no scored point yet; run `python -m compsense length` first")
    figures = Path(figures_dir) if figures_dir is not None else repo_root() / "figures"
    points = read_table(results / LC.POINTS)
    per_query = read_table(results / LC.PER_QUERY)
    delta = LC.deltas(points, per_query)
    tests = LC.seed_t_tests(delta)
    record = LC.read_record(results / "record.json")
    negatives = Path(work_dir) / "negatives"
    if negatives.is_dir():
        record["negatives_sha256"] = {p.name: sha256_file(p) for p in sorted(negatives.glob("*.parquet"))}
    written = []
    if control_root is not None:
        control = length_root(control_root) / "results"
        control_points = read_table(control / LC.POINTS)
        both = pd.concat([control_points, points], ignore_index=True)
        both["precision"] = both.stamp.str.rsplit("-", n=1).str[-1]
        # the control compares the two precisions at the same seed, step and variant: nothing else is its twin
        same = ["seed", "step", "variant"]
        both = both.merge(control_points[same].drop_duplicates(), on=same)
        written.append(write_table(both.drop(columns=["stamp"]), figures / "tables" / "length_precision_control.csv"))
        record["precision_control"] = LC.read_record(control / "record.json").get("parts", [])
    written += [
        write_table(
            points.drop(columns=["stamp"]).sort_values(["seed", "variant", "step", "dataset", "family", "metric"]),
            figures / "tables" / TABLES["points"],
        ),
        write_table(delta, figures / "tables" / TABLES["deltas"]),
        write_table(tests, figures / "tables" / TABLES["seed_tests"]),
        write_json(figures / "tables" / TABLES["record"], record),
        write_table(_parts_table(record), figures / "tables" / TABLES["parts"]),
    ]
    external = external_table(root)
    if not external.empty:
        written.append(write_table(external, figures / "tables" / TABLES["external"]))
    # the held-out families as the point scored them, beside the external sets as `compsense nearmiss` did
    cols = ["seed", "variant", "step", "dataset", "family", "metric", "value"]
    heldout = points[points.dataset == "heldout-near-miss"][cols]
    near = LC.nearmiss_seed_tests(pd.concat([heldout, *([external[cols]] if not external.empty else [])]))
    if not near.empty:
        written.append(write_table(near, figures / "tables" / TABLES["nearmiss_seed_tests"]))
    saved = save_figure(length_figure(delta, points), FIGURE, figures)
    return written + list(saved.values())


def _parts_table(record: dict) -> pd.DataFrame:
    """The record's parts as a table (the README's provenance markers read it); steps as "25,50"."""
    parts = pd.DataFrame(record.get("parts", []))
    if not parts.empty:
        parts["steps"] = parts["steps"].map(lambda s: ",".join(map(str, s)))
    return parts
