"""`make figures`: copy a run's figures, result tables and report into the committed figures/ folder.

A run writes its figures into the profile's own folder (`figures_dir`, under runs/) and its report
with every table whole into runs/<profile>/report/ (the report stage: report.md, tables/*.csv), so the
main command leaves a clone clean.
figures/ changes only when this is asked for:

    python -m compsense.pipeline.publish --profile local        # the local profile's report
    python -m compsense.pipeline.publish --run runs/local/<run>  # one run
    python -m compsense.pipeline.publish --piece NAME            # only the files a declared piece publishes

What it writes, each file only when its bytes change: the run's figures (*.html, *.png and the
plotly.min.js they load), figures/tables/*.csv (the report's tables, and provenance.csv: which run,
piece and commit made each stage's results, and the commits the rows of each of its result tables were
computed at, `compsense.pipeline.provenance`), figures/<profile>_report.md (the
report, its figure links pointing beside it) and figures/published.json (which run, and the sha256 of
every file). The same run gives byte-identical files (figures carry fixed div ids; nothing here
stamps a date). A file the previous publication wrote that this run lacks is removed, if it is inside
the destination and unchanged since (its sha256 is the manifest's); any other file in figures/ is
left as it is and named.

`--piece NAME` publishes only the files the piece declares (`publishes` in params/pieces.yaml) from
its last finished run (or `--run`, which must be that piece's), beside a publication made from other
runs: a run folder is not kept from one machine to the next, so a piece that adds one table (the
verifier budget curve) is published on its own, without the stages its machine never ran. Its row in
provenance.csv names the files it published; the other rows, files and the report stay as they are.
"""

from __future__ import annotations

import argparse
import hashlib
import io
import os
import re
import sys
import tempfile
from pathlib import Path
from typing import Callable, NamedTuple

import pandas as pd

from compsense.core.paths import repo_root, resolve
from compsense.core.storage import CorruptFile, atomic_path, exclusive, read_csv, read_json, write_json
from compsense.figures.ab import dose_response_figure
from compsense.figures.export import PLOTLY_JS, save_figure
from compsense.figures.verifiers import budget_figure
from compsense.pipeline.profiles import check_profile_name
from compsense.pipeline.provenance import COLUMNS, PROVENANCE_FILE, run_records, stage_code_changes, stage_provenance
from compsense.pipeline.report import TABLES_DIR
from compsense.pipeline.runner import Refused
from compsense.pipeline.stage import REPORT
from compsense.pipeline.stages import read_summary
from compsense.verifiers.budget import over_seeds
from compsense.verifiers.names import DEFAULT_TRAIN_DATA

MANIFEST = "published.json"
BUDGET_RUNS = "tables/verifier_budget_runs.csv"
# a budget point's columns, in the order the published table has always been sorted by
BUDGET_POINT = ["scorer", "regime", "size", "recipe", "train_data", "budget"]
MODEL_B = {"train_data": DEFAULT_TRAIN_DATA}  # what a budget row from before its train_data column is
FIGURE_SUFFIXES = (".html", ".png")


class Merged(NamedTuple):
    """A table several pieces publish points of (each piece its budgets and seeds, as one machine's run
    fits). `publish --piece` merges it point by point: a point keeps the rows of the piece that ran it at
    more seeds (on a tie, of the piece published last), each row names its piece, and the figure is
    drawn again from the merged table, as the notebook draws it from its own. Rows of pieces whose runs
    of `stage` were made at other code stand together only where a piece's `code_note` says why."""

    key: list[str]  # the columns that name a point
    seeds: str | None  # the column counting a point's seeds (None: a row is one seed)
    stage: str  # the stage that writes the table
    figure: str | None = None  # the figure drawn from the table
    draw: Callable | None = None  # how
    # key columns the table gained later, with what a row without one means (verifier_budget.csv's
    # rows before its train_data column were all model_b rows)
    defaults: dict | None = None
    # a table of the same points, one row per seed, merged first (listed before in MERGED): where the piece
    # publishes it, the piece's points are recomputed over every seed it then holds (`budget.over_seeds`),
    # so seeds trained by pieces on different machines make one point
    per_seed: str | None = None


MERGED = {
    BUDGET_RUNS: Merged([*BUDGET_POINT, "seed"], None, "04", defaults=MODEL_B),
    "tables/verifier_budget.csv": Merged(
        BUDGET_POINT, "seeds", "04", "04_verifier_budget", budget_figure, MODEL_B, BUDGET_RUNS
    ),
    # notebook 02's study table: A, B and the control at five seeds from one piece, B-all and the share
    # sweep at the first seed from others (each trains its own A of that seed, which is the same model)
    "tables/variants.csv": Merged(["backbone", "variant", "metric", "structural_share"], "n_seeds", "02"),
    "tables/dose_response.csv": Merged(
        ["backbone", "variant", "seed"], None, "02", "02_dose_response", dose_response_figure
    ),
}


class NothingToPublish(RuntimeError):
    """No run to publish from, or a run without its report; the message says which command makes one."""


def latest_run(profile: str, runs_dir: str | os.PathLike = "runs") -> Path:
    """runs/<profile>/report/: the run `make figures` publishes, which the report stage of the profile whose
    DVC stages run `profile` writes (`stage.report`; the study runs local's stages and shares its work_dir,
    so after a study piece that report holds the piece's tables and figures). One a profile: DVC rebuilds
    it whole each time it runs."""
    from compsense.pipeline.pieces import dvc_profile

    run = resolve(runs_dir) / dvc_profile(check_profile_name(profile)) / REPORT
    if not ((run / "report.md").exists() and (run / "summary.json").exists()):
        raise NothingToPublish(
            f"{run}: no report.md and summary.json. Fix: run `make reproduce PROFILE={profile}` "
            "(or pass --run <run folder>) first."
        )
    return run


def publish(
    profile: str | None = None, run: str | os.PathLike | None = None, dest: str | os.PathLike = "figures"
) -> dict:
    """Copy run `run` (default: the report of `profile`, `latest_run`) into `dest`. Returns {"run", "written",
    "unchanged", "removed", "others", "stale_png"}: file names relative to `dest`."""
    if run is None:
        if profile is None:
            raise ValueError("publish: give a profile or a run folder")
        run_dir = latest_run(profile)
    else:
        run_dir = resolve(run)
    summary_path, report_path = run_dir / "summary.json", run_dir / "report.md"
    for needed in (summary_path, report_path):
        if not needed.exists():
            raise NothingToPublish(
                f"{needed}: missing, so {run_dir} is not a finished run. Fix: publish a run "
                "that `make reproduce` finished (its report stage writes both)."
            )
    summary = read_summary(summary_path)
    profile = profile or summary.get("profile") or run_dir.parent.name
    figures = resolve(summary.get("figures_dir") or Path(summary.get("work_dir") or f"runs/{profile}") / "figures")
    out = resolve(dest)

    out.parent.mkdir(parents=True, exist_ok=True)
    # Two publishes at once take turns: each one's files and manifest come from one run.
    with exclusive(out.parent / f".{out.name}.publish.lock"):
        return _publish(run_dir, profile, summary, figures, report_path, out)


def publish_piece(name: str, run: str | os.PathLike | None = None, dest: str | os.PathLike = "figures") -> dict:
    """Copy the files piece `name` declares (`Piece.publishes`) from its run into `dest`, and set its
    rows of provenance.csv (one per stage of the piece, naming those files). Returns {"run",
    "written", "unchanged"}. Refused, with the fix, when the piece declares nothing to publish on its
    own, has no finished run, `run` was not made by it, or a declared file is missing from the run
    (NothingToPublish); Refused when params/pieces.yaml has no such piece."""
    from compsense.pipeline.pieces import get_piece, last_run

    piece = get_piece(name)  # Refused, naming the pieces, when there is none
    if not piece.publishes:
        raise NothingToPublish(
            f"piece {name} has no `publishes` list in params/pieces.yaml: its run is published whole. "
            "Fix: python -m compsense.pipeline.publish --run <its run folder>"
        )
    if run is None:
        found = last_run(piece)
        if found is None:
            raise NothingToPublish(f"piece {name}: no finished run. Fix: python -m compsense piece {name}")
        run = found["run"]
    run_dir = resolve(run)
    summary_path = run_dir / "summary.json"
    if not summary_path.exists():
        raise NothingToPublish(f"{summary_path}: missing, so {run_dir} is not a finished run of piece {name}")
    summary = read_summary(summary_path)
    if not piece.made(summary):
        raise NothingToPublish(
            f"{run_dir}: not a finished run of piece {name} (its profile, --set overrides or stage status "
            f"differ from params/pieces.yaml). Fix: publish the run `python -m compsense piece {name}` made"
        )
    work_dir = summary.get("work_dir") or f"runs/{piece.profile}"
    figures = resolve(summary.get("figures_dir") or Path(work_dir) / "figures")
    files: dict[str, bytes] = {}
    for rel in piece.publishes:
        source = run_dir / rel if Path(rel).parts[0] == TABLES_DIR else figures / rel
        if not source.is_file():
            raise NothingToPublish(
                f"{source}: missing; piece {name} publishes {rel}. Fix: re-run the piece "
                f"(python -m compsense piece {name}) or correct `publishes` in params/pieces.yaml"
            )
        files[rel] = source.read_bytes()
    if any(rel.endswith(".html") for rel in files) and (figures / PLOTLY_JS).exists():
        files[PLOTLY_JS] = (figures / PLOTLY_JS).read_bytes()
    out = resolve(dest)
    out.parent.mkdir(parents=True, exist_ok=True)
    with exclusive(out.parent / f".{out.name}.publish.lock"):
        not_drawn, sharing, notes = _merge(out, files, piece, summary)
        done = _publish_files(out, files, piece, run_dir, work_dir, sharing, notes)
        return {**done, "not_drawn": not_drawn, "code_notes": notes}


def _merge(out: Path, files: dict[str, bytes], piece, summary: dict) -> tuple[list[str], set[str], list[str]]:
    """Merge each `MERGED` table among `files` with the one published in `out`, and draw its figure
    again from the merged table, in `files`; each table's rows are judged at the commit of the stage that
    made them (`stage_commit`). Returns the figure files that could not be drawn (a PNG
    without its engine): they are left out, never published from the piece's run alone; the pieces
    whose rows the merged tables still hold (their provenance rows stay); and what `check_code` said."""
    not_drawn, sharing, notes = [], set(), []
    merged: dict[str, pd.DataFrame] = {}
    for rel, (key, seeds, stage, figure, draw, defaults, per_seed) in MERGED.items():
        if rel not in files:
            continue
        new = read_csv(io.BytesIO(files[rel]))
        if per_seed in merged:  # merged above, its defaults filled: every published seed of the piece's points
            new = over_seeds(new, merged[per_seed])
        table = merged[rel] = merge_points(out / rel, new, key, piece.name, seeds, defaults)
        notes += check_code(out, rel, stage, set(table.piece), piece, stage_commit(summary, stage))
        files[rel] = table.to_csv(index=False).encode("utf-8")
        sharing |= set(table.piece)
        wanted = [n for n in files if figure and Path(n).stem == figure and Path(n).suffix in FIGURE_SUFFIXES]
        if not wanted:
            continue
        with tempfile.TemporaryDirectory() as tmp:
            drawn = save_figure(draw(table), figure, tmp)
            for name in wanted:
                path = drawn.get(Path(name).suffix.lstrip("."))
                if path is None:
                    del files[name]
                    not_drawn.append(name)
                else:
                    files[name] = path.read_bytes()
    return not_drawn, sharing, notes


def stage_commit(summary: dict, stage: str) -> str:
    """The commit stage `stage` of a run's `summary` ran at (its stages.json record), else the report's.
    Why not the report's alone: a piece's report is written after `dvc exp run` has left the piece's values
    in params/<profile>.yaml, so it is stamped "-dirty", which no commit compares with, while its stages ran
    clean (params files are left out of their stamp inside the experiment: `core.paths.git_commit`)."""
    return str((summary.get("stages") or {}).get(stage, {}).get("commit") or summary.get("commit") or "")


def check_code(out: Path, rel: str, stage: str, pieces_in: set[str], piece, commit: str) -> list[str]:
    """Refused when table `rel` would hold rows of another piece whose run of `stage` (provenance.csv in
    `out`) was made at other code than `piece`'s (at `commit`): the stage's notebook or a module it
    imports differs (`provenance.stage_code_changes`), or git cannot tell, unless every differing file is
    among the `code_note` files of one of the two pieces. Returns, for each such pair, what differs and
    the notes' reasons (the command prints them and the manifest keeps them)."""
    from compsense.pipeline.pieces import load_pieces

    path = out / TABLES_DIR / PROVENANCE_FILE
    recorded = pd.read_csv(path, dtype=str, keep_default_na=False) if path.exists() else pd.DataFrame()
    recorded = recorded.reindex(columns=COLUMNS, fill_value="")
    declared = load_pieces()
    # who made the other rows: a named piece's provenance row for the stage, and for rows published
    # before tables named their piece (""), the stage's row of the run published whole
    others = pieces_in - {piece.name, ""}
    mine = recorded.stage == stage
    made = recorded[mine & (recorded.piece.isin(others) | ((recorded.publishes == "") & ("" in pieces_in)))]
    makers = sorted(set(zip(made.piece, made.commit)) | {(o, "") for o in others - set(made.piece)})
    said = []
    for other, old in makers:
        changed = stage_code_changes(stage, old, commit)
        if changed == []:
            continue
        judged = [p for p in (piece, declared.get(other)) if p is not None and p.code_why]
        covered = {f for p in judged for f in p.code_files}
        what = (
            f"git cannot compare {old or '(no commit recorded)'} with {commit or '(none)'} here"
            if changed is None
            else f"stage {stage}'s code differs in {', '.join(changed)}"
        )
        maker = f"{other or 'a run published whole'} (made at {old or '?'})"
        head = f"{rel}: rows of {maker} beside piece {piece.name}'s (at {commit}): {what}"
        if changed is None or not set(changed) <= covered:
            raise Refused(
                f"{head}. Fix: re-run {other or 'that run'} at this code, or judge the changes and say why its "
                f"rows stand: `code_note: {{files: [...], why: ...}}` under piece {piece.name} in params/pieces.yaml"
            )
        said.append(f"{head}; judged comparable: {' / '.join(p.code_why for p in judged)}")
    return said


def merge_points(
    published: Path,
    new: pd.DataFrame,
    key: list[str],
    piece: str,
    seeds: str | None = "seeds",
    defaults: dict | None = None,
) -> pd.DataFrame:
    """The rows of table `published` (absent: none) and `new` (piece `piece`'s), point by point (a point:
    the rows sharing `key`): each point from the side with more seeds (column `seeds`; None: one a row),
    `new` on a tie; the piece's own earlier rows are replaced whole. Each row names its piece (column
    `piece`); rows published before tables named theirs get "". A key column of `defaults` that a
    side lacks (or leaves blank) takes its default there."""
    new = _with_defaults(new.assign(piece=piece), defaults)
    old = _with_defaults(read_csv(published), defaults) if published.exists() else new.iloc[:0]
    old = old.assign(piece=old["piece"].fillna("") if "piece" in old else "")
    old = old[old.piece != piece]

    def points(df: pd.DataFrame) -> tuple[pd.Series, pd.Series]:  # each row's point, and its seeds
        names = pd.Series(
            ["|".join(map(str, t)) for t in df[key].itertuples(index=False)], index=df.index, dtype=object
        )
        count = df[seeds] if seeds else pd.Series(1, index=df.index)
        return names, count.groupby(names).transform("max")

    old_point, old_seeds = points(old)
    new_point, new_seeds = points(new)
    seeds_new = dict(zip(new_point, new_seeds, strict=True))
    keep_old = [seeds_new.get(p, -1) < n for p, n in zip(old_point, old_seeds, strict=True)]
    seeds_kept = dict(zip(old_point[keep_old], old_seeds[keep_old], strict=True))
    keep_new = [p not in seeds_kept for p in new_point]
    merged = pd.concat([old[keep_old], new[keep_new]], ignore_index=True)
    order = [*key, *(["metric"] if "metric" in merged and "metric" not in key else [])]
    return merged.sort_values(order, kind="stable", na_position="first").reset_index(drop=True)


def _with_defaults(df: pd.DataFrame, defaults: dict | None) -> pd.DataFrame:
    """`df` with each column of `defaults` present, its blanks filled with the default."""
    for column, value in (defaults or {}).items():
        df = df.assign(**{column: df[column].fillna(value) if column in df else value})
    return df


def _publish_files(out: Path, files: dict[str, bytes], piece, run_dir: Path, work_dir, sharing, notes) -> dict:
    where = _relative(run_dir)
    mine = stage_provenance(work_dir, records=run_records(run_dir))
    mine = mine[mine.stage.isin(piece.stages)]
    # a DVC piece's stages record no run folder of their own to recognise the piece by: it is this one
    mine = mine.assign(
        piece=piece.name, command=f"python -m compsense piece {piece.name}", publishes=", ".join(piece.publishes)
    )
    table = out / TABLES_DIR / PROVENANCE_FILE
    old = pd.read_csv(table, dtype=str, keep_default_na=False) if table.exists() else pd.DataFrame(columns=COLUMNS)
    old = old.reindex(columns=COLUMNS, fill_value="")
    # its own earlier rows go, and another piece's that published the same files, unless a merged table
    # still holds rows of that piece (`sharing`): then both made what is published
    replaced = old.stage.isin(piece.stages) & (old.publishes == mine.publishes.iloc[0]) & ~old.piece.isin(sharing)
    old = old[~((old.piece == piece.name) | replaced)]
    merged = pd.concat([old, mine.astype(str)], ignore_index=True).sort_values(["stage", "publishes", "piece"])
    files[f"{TABLES_DIR}/{PROVENANCE_FILE}"] = merged.to_csv(index=False).encode("utf-8")
    done = {"run": where, **_write_changed(out, files)}
    manifest = read_json(out / MANIFEST) if (out / MANIFEST).exists() else {"files": {}}
    manifest.setdefault("files", {}).update({name: _sha256(data) for name, data in files.items()})
    manifest["files"] = dict(sorted(manifest["files"].items()))
    entry = {"run": where, "files": sorted(piece.publishes), **({"code_notes": notes} if notes else {})}
    manifest.setdefault("pieces", {})[piece.name] = entry
    write_json(out / MANIFEST, manifest)
    return done


def _publish(run_dir: Path, profile: str, summary: dict, figures: Path, report_path: Path, out: Path) -> dict:
    files: dict[str, bytes] = {}
    drawn = sorted(p for p in figures.iterdir() if p.suffix in FIGURE_SUFFIXES) if figures.is_dir() else []
    for fig in drawn:
        files[fig.name] = fig.read_bytes()
    if any(p.suffix == ".html" for p in drawn) and (figures / PLOTLY_JS).exists():
        files[PLOTLY_JS] = (figures / PLOTLY_JS).read_bytes()
    for table in sorted((run_dir / TABLES_DIR).glob("*.csv")):
        files[f"{TABLES_DIR}/{table.name}"] = table.read_bytes()
    # which run (piece, commit) made each stage's results in the run's work_dir
    work_dir = summary.get("work_dir") or f"runs/{profile}"
    files[f"{TABLES_DIR}/{PROVENANCE_FILE}"] = stage_provenance(work_dir).to_csv(index=False).encode("utf-8")
    files[f"{profile}_report.md"] = _relink(report_path.read_text(encoding="utf-8"), figures, run_dir).encode("utf-8")

    where = _relative(run_dir)
    manifest = {
        "profile": profile,
        "run": where,
        "figures_dir": _relative(figures),
        "files": {name: _sha256(data) for name, data in sorted(files.items())},
    }
    previous = _previous_files(out / MANIFEST)
    done = {"run": where, **_write_changed(out, files), "removed": [], "kept": [], "others": [], "stale_png": []}
    root = out.resolve()
    for name in sorted(set(previous) - set(files)):
        target = (out / name).resolve()
        if not target.is_relative_to(root) or target == root / MANIFEST:
            # a manifest entry naming a path outside the destination (absolute, "../"): never touched
            done["kept"].append(f"{name} (outside {_relative(out)}/: not a file publish wrote)")
        elif target.is_file() and _sha256(target.read_bytes()) != previous[name]:
            done["kept"].append(f"{name} (changed since it was published: yours now)")
        elif target.is_file():
            target.unlink()
            done["removed"].append(name)
    for path in sorted(out.rglob("*")):
        name = path.relative_to(out).as_posix()
        if path.is_file() and name not in files and name != MANIFEST and not name.startswith("."):
            done["others"].append(name)
            if path.suffix == ".png" and path.with_suffix(".html").name in files:
                done["stale_png"].append(name)
    write_json(out / MANIFEST, manifest)
    return done


def _write_changed(out: Path, files: dict[str, bytes]) -> dict[str, list[str]]:
    """Write each file under `out`, atomically, only where its bytes differ: {"written", "unchanged"}."""
    done: dict[str, list[str]] = {"written": [], "unchanged": []}
    for name, data in sorted(files.items()):
        target = out / name
        if target.is_file() and target.read_bytes() == data:
            done["unchanged"].append(name)
            continue
        with atomic_path(target) as tmp:
            tmp.write_bytes(data)
        done["written"].append(name)
    return done


def _relink(report: str, figures: Path, run_dir: Path) -> str:
    """The run's report.md with its figure links pointing beside it (where publish puts the figures);
    table links (tables/<name>.csv) already point where publish puts the tables."""
    prefix = Path(os.path.relpath(figures, run_dir)).as_posix() + "/"
    return re.sub(r"\]\(" + re.escape(prefix), "](", report)


def _previous_files(path: Path) -> dict[str, str]:
    """The previous publication's {file name: sha256}; {} when there is none or it is unreadable (then
    nothing is removed, and the new manifest replaces it)."""
    if not path.exists():
        return {}
    try:
        files = read_json(path).get("files", {})
    except (CorruptFile, AttributeError):
        return {}
    return {str(k): str(v) for k, v in files.items()} if isinstance(files, dict) else {}


def _relative(path: Path) -> str:
    return path.relative_to(repo_root()).as_posix() if path.is_relative_to(repo_root()) else str(path)


def _sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m compsense.pipeline.publish",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--profile", default="local", help="publish runs/<profile>/report (default local)")
    parser.add_argument("--run", default=None, help="another report folder instead of the profile's")
    parser.add_argument("--dest", default="figures", help="where to publish (default figures/)")
    parser.add_argument(
        "--piece", default=None, help="publish only the files this declared piece lists (params/pieces.yaml)"
    )
    args = parser.parse_args(argv)
    try:
        if args.piece:
            done = publish_piece(args.piece, run=args.run, dest=args.dest)
        else:
            done = publish(args.profile if args.run is None else None, run=args.run, dest=args.dest)
    except (NothingToPublish, Refused, ValueError) as err:  # Refused: a damaged stages.json (provenance)
        print(f"publish: {err}", file=sys.stderr)
        return 2
    print(
        f"published {done['run']} -> {args.dest}/: {len(done['written'])} written, "
        f"{len(done['unchanged'])} unchanged, {len(done.get('removed', []))} removed"
    )
    for name in done["written"] + [
        f"{n} (removed: the previous publication wrote it, this run has none)" for n in done.get("removed", [])
    ]:
        print(f"  {name}")
    if args.piece:
        for note in done.get("code_notes", []):
            print(f"  {note}")
        for name in done.get("not_drawn", []):
            print(f"WARNING: {name}: not drawn (no PNG engine: kaleido needs Chromium), so not published")
        return 0
    for name in done["kept"]:
        print(f"  kept {name}")
    if done["others"]:
        print(f"not from this run, left as they are: {', '.join(done['others'])}")
    if done["stale_png"]:
        print(
            f"WARNING: {', '.join(done['stale_png'])}: an earlier drawing; this run drew HTML only (kaleido "
            "needs Chromium: `apt-get install chromium`, then re-run the stage and publish again)"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
