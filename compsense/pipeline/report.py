"""The report of a `reproduce` run: report.md assembled from tidy tables and figures.

It reads what the stages wrote (<work_dir>/results/<stage>/*.parquet, the run's figures folder and the
runner's summary) and never recomputes a result. It leads with the answer (Table 1 beside the
paper's numbers, the near-miss separation table, reranking against Base, the figures), then every
result table, then how the run was made (machine, versions, stage times, the time estimate).

Every table it shows is also written whole as <run_dir>/tables/<name>.csv, and a table cut to
MAX_ROWS says how many rows it leaves out and links that file: nothing is cut silently.
`make figures` (compsense.pipeline.publish) copies these tables and the figures into figures/, and
`make readme-tables` (scripts/readme_tables.py) sets the README's result tables from them.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from compsense.core.layout import purity_file, results_file
from compsense.core.machine import machine
from compsense.core.paths import git_commit, resolve
from compsense.core.storage import COMMIT, atomic_path, read_table, write_text
from compsense.estimate import report_sections
from compsense.nearmiss.evaluation import SEPARATION_FILE
from compsense.pipeline.stages import shown as _where
from compsense.retrieval.harness import DOSE_FILE, TABLE1_FILE, VARIANT_TESTS_FILE, VARIANTS_FILE
from compsense.verifiers.budget import CURVE_FILE, RUNS_FILE
from compsense.verifiers.rerank import RERANK_ANSWER_FILE

# Result tables the stages write, with the heading of the section that shows all of them.
SECTIONS = [
    ("retrieval", "Retrieval, every model and set with its regime (notebook 02)"),
    ("nearmiss_pooled", "Held-out near-miss AUC of every trained model under pooled cosine, per family (notebook 02)"),
    ("geometry", "Pooled-space separation (notebook 03)"),
    ("verifiers", "Verifier near-miss separation (notebook 04)"),
    ("rerank", "Reranking with verifiers (notebook 05)"),
]
GROUP_DROP = {"run", "seed", "value", COMMIT}  # COMMIT: seeds computed at other commits are still one result
MAX_ROWS = 80  # rows a report table shows; the rest are counted and the full table is linked
TABLES_DIR = "tables"  # beside report.md: every table of the report, whole, as CSV

PURITY_TITLE = "Near-miss families: the independent purity check (notebook 01)"
TABLE1_TITLE = "Table 1 (zero-shot sets only): mean nDCG@10 / Acc@1 over seeds, ours beside the paper's"
BUDGET_TITLE = "The verifier budget curve (notebook 04): held-out checks against training triplets, seed-level 95% CIs"
SEPARATION_TITLE = "The separation table (notebook 04): near-miss AUC, self-match AUC and copy > near-miss per set"
RERANK_TITLE = "Reranking against Base (notebook 05): nDCG@10 at the largest K, paired bootstrap over queries"
VARIANTS_TITLE = "Variants against Model A (zero-shot nDCG@10; p Holm-corrected over all rows)"
IN_DOMAIN_TITLE = "In-domain reference (sets a model trained on; not comparable with the paper)"

# What each section says about the table a notebook wrote, and what it says when the notebook has not written it.
PURITY_NOTE = (
    "The share of each family's pairs that `compsense.data.purity` (token rules sharing no code with the generator) "
    "files under the pair's own family, per corpus and split; written by notebook 01."
)
TABLE1_MISSING = (
    "No Table 1 yet: `{where}` does not exist. Notebook 02 writes it (re-run it: "
    "`make reproduce ONLY=02`; finished trainings and evaluations are reused)."
)
VARIANT_TESTS_NOTE = (
    "As notebook 02 wrote it: each comparison (variant minus reference, C-identity against B included) "
    "with the hierarchical bootstrap over seeds and queries (ci_low, ci_high, p_value, p_holm) and the "
    "seed-level tests over the per-seed differences (paired t: t_p, t_ci_low, t_ci_high; exact sign "
    "flips: perm_p, whose floor at S seeds is perm_p_floor = 2 / 2^S)."
)
SEPARATION_MISSING = (
    "No separation table: notebook 04 did not write {file} ({where}). Fix: run notebook 04 (`make reproduce ONLY=04`)."
)
BUDGET_NOTE = (
    "As notebook 04 wrote it: per scorer, size, recipe and budget (triplets seen; 0 is frozen MaxSim and its "
    "noise control, nothing learned), the mean over verifier seeds and a seed-level 95% t interval (blank with "
    "one seed). noise_excess: near-miss AUC above the noise line at the run's self-match AUC."
)
BUDGET_RUNS_TITLE = "The verifier budget curve per seed (notebook 04)"
BUDGET_RUNS_NOTE = (
    "One row per scorer, size, recipe, budget and seed, unrounded: the runs the curve's means and intervals "
    "are taken over. `publish --piece` merges them with the seeds other pieces published."
)
RERANK_NOTE = (
    "As notebook 05 wrote it. mean_delta/ci_low/ci_high: reranked minus Base's nDCG@10 over the same "
    "queries, 95% interval (n_resamples): BCa over queries for one verifier seed, hierarchical over verifier "
    "seeds and queries for several (n_seeds); p_holm: Holm over every K and weight of the run (the noise-control "
    "rerankers, F1-frozen+noise, corrected as a family of their own), with enough resamples that its floor "
    "p_floor_holm (the smallest p_holm the table can show) is 0.005 or below."
)
RERANK_MISSING = "No reranking table yet: `{where}` does not exist. Notebook 05 writes it (`make reproduce ONLY=05`)."


@dataclass
class Block:
    """One section of the report: a heading, a paragraph, a table (written whole to tables/<name>.csv)
    or the figures."""

    title: str
    text: str = ""
    table: pd.DataFrame | None = None
    name: str | None = None  # tables/<name>.csv
    source: str | None = None  # the file the table was read from
    figures: tuple[Path, ...] = ()


def summarize(table: pd.DataFrame) -> pd.DataFrame:
    """Mean (and n) over seeds and runs for every other grouping column: one line per result."""
    keys = [c for c in table.columns if c not in GROUP_DROP and table[c].notna().any()]
    return table.groupby(keys, dropna=False).value.agg(["mean", "std", "count"]).reset_index()


def build_report(
    work_dir: str | os.PathLike, figures_dir: str | os.PathLike, run_dir: str | os.PathLike, summary: dict | None = None
) -> dict[str, Path]:
    """Write run_dir/report.md and run_dir/tables/*.csv; returns {"md": the report's path}. (No HTML copy: `make
    figures` publishes the markdown, which GitHub renders, and the executed notebooks are the pages.)"""
    work, figs, run = resolve(work_dir), resolve(figures_dir), resolve(run_dir)
    profile = (summary or {}).get("profile")
    tables = {name: read_table(results_file(work, name)) for name, _ in SECTIONS if results_file(work, name).exists()}

    answer: list[Block] = []
    details = _written(PURITY_TITLE, purity_file(work), "purity", PURITY_NOTE)
    if "retrieval" in tables:
        answer += _written(
            TABLE1_TITLE, results_file(work, TABLE1_FILE), "table1", _table1_note(tables["retrieval"]), TABLE1_MISSING
        )
        details += _retrieval_details(tables["retrieval"], work)
    details += _written(
        "Tests between variants", results_file(work, VARIANT_TESTS_FILE), "variant_tests", VARIANT_TESTS_NOTE
    )
    if "verifiers" in tables:
        answer += _written(
            SEPARATION_TITLE, results_file(work, SEPARATION_FILE), "separation", missing=SEPARATION_MISSING
        )
    answer += _written(BUDGET_TITLE, results_file(work, CURVE_FILE), "verifier_budget", BUDGET_NOTE)
    details += _written(BUDGET_RUNS_TITLE, results_file(work, RUNS_FILE), "verifier_budget_runs", BUDGET_RUNS_NOTE)
    if "rerank" in tables:
        answer += _written(RERANK_TITLE, results_file(work, RERANK_ANSWER_FILE), "rerank", RERANK_NOTE, RERANK_MISSING)
    figures = tuple(sorted(figs.glob("*.html"))) if figs.exists() else ()
    answer.append(Block("Figures", text="" if figures else f"No figures in `{_where(figs)}` yet.", figures=figures))

    every = []
    for name, title in SECTIONS:
        path = results_file(work, name)
        if name not in tables:
            every.append(Block(title, text=f"No results yet: `{_where(path)}` does not exist (run its notebook)."))
        else:
            every.append(Block(title, table=summarize(tables[name]), name=f"all_{name}", source=_where(path)))

    # The answer first, then how it was run.
    info = machine()
    started_at = (summary or {}).get("commit")
    commit_item = "git commit (at the run's start)" if started_at else "git commit (when the report was written)"
    # an experiment's -S values narrow the profile: a table made by one is not the profile's own
    experiment = (summary or {}).get("experiment") or "none (the profile as committed)"
    meta = pd.DataFrame(
        {
            "item": ["profile", "experiment (dvc exp run -n)", commit_item, "device", "python"]
            + list(info["versions"]),
            "value": [profile or "?", experiment, started_at or git_commit(), info["device"], info["python"]]
            + list(info["versions"].values()),
        }
    )
    run_info = [Block("Run metadata", table=meta, name="run_metadata")]
    if summary:
        stages = pd.DataFrame(
            [
                {"stage": k, **{f: v.get(f) for f in ("status", "seconds", "cell", "error")}}
                for k, v in summary.get("stages", {}).items()
            ]
        )
        run_info.append(
            Block("Stages (time per stage in seconds)", table=stages.dropna(axis=1, how="all"), name="stages")
        )
    run_info += [Block(**section) for section in report_sections(work)]  # never fails: it says what it lacks

    blocks = answer + details + every + run_info
    written = set()
    for block in blocks:
        if block.table is not None and block.name:
            written.add(_write_csv(block.table, run / TABLES_DIR / f"{block.name}.csv"))
    for old in set((run / TABLES_DIR).glob("*.csv")) - written:  # an earlier report's table in this folder
        old.unlink()
    md_path = run / "report.md"
    write_text(md_path, _markdown(blocks, run))
    (run / "report.html").unlink(missing_ok=True)  # an older report's HTML copy would show stale tables
    return {"md": md_path}


def _write_csv(df: pd.DataFrame, path: Path) -> Path:
    """A table as CSV, the same bytes for the same table (no index, fixed line ends)."""
    with atomic_path(path) as tmp:
        df.to_csv(tmp, index=False, lineterminator="\n")
    return path


def _written(title: str, path: Path, name: str, note: str = "", missing: str | None = None) -> list[Block]:
    """The table a notebook wrote at `path`, shown as it wrote it (read, never recomputed) and written
    whole to tables/<name>.csv; when there is none, a section saying so (`missing`, with the notebook
    that writes it and `{where}` for the path), or nothing."""
    if path.exists():
        return [Block(title, text=note, table=read_table(path), name=name, source=_where(path))]
    return [Block(title, text=missing.format(where=_where(path), file=path.name))] if missing else []


def _table1_note(retrieval: pd.DataFrame) -> str:
    # a set is zero-shot when every model's rows on it are (Base alone is zero-shot everywhere)
    sets = (
        sorted(set(retrieval.dataset) - set(retrieval.dataset[retrieval.regime != "zero-shot"]))
        if "regime" in retrieval
        else []
    )
    return (
        f"Zero-shot sets: {', '.join(sets) or 'none'} (no training query or document "
        "of any model occurs in them; `compsense.retrieval.regime`). ci_low/ci_high: 95% hierarchical bootstrap "
        "of B − A resampling seeds and queries together; p_holm: Holm-corrected over the table's comparisons; "
        "p_floor_holm: the smallest p_holm the table can show (2 x comparisons / (samples + 1)); t_p, "
        "t_ci_low/high: paired t over the per-seed drops; perm_p: exact sign-flip test over them, never below "
        "perm_p_floor (2 / 2^seeds)."
    )


def _retrieval_details(table: pd.DataFrame, work: Path) -> list[Block]:
    """Every variant against A (with its held-out near-miss AUC gain when notebook 02 measured it) and
    the in-domain reference."""
    if "regime" not in table.columns:
        return []
    blocks = []
    variants_path = results_file(work, VARIANTS_FILE)
    if variants_path.exists() and len(set(table.variant) - {"base"}) > 2:
        note = (
            "As notebook 02 wrote it. auc_gain: held-out near-miss AUC (pooled cosine, the paper's families) "
            "minus Model A's of the same seed, mean over seeds."
        )
        variants = read_table(variants_path)
        blocks.append(Block(VARIANTS_TITLE, text=note, table=variants, name="variants", source=_where(variants_path)))
    blocks += _written(
        "Dose-response points",
        results_file(work, DOSE_FILE),
        "dose_response",
        "As notebook 02 wrote it, one row per variant and seed: the zero-shot nDCG@10 drop and the held-out "
        "near-miss AUC gain against Model A of the same seed (the dose-response figure's points).",
    )
    in_domain = table[(table.regime == "in-domain") & table.metric.isin(["ndcg@10", "acc@1"])]
    if not in_domain.empty:
        ref = (
            in_domain.groupby(["backbone", "dataset", "metric", "variant"])
            .value.agg(["mean", "std", "count"])
            .reset_index()
        )
        blocks.append(
            Block(IN_DOMAIN_TITLE, table=ref, name="in_domain", source=_where(results_file(work, "retrieval")))
        )
    return blocks


def _rel(path: Path, start: Path) -> str:
    return Path(os.path.relpath(path, start)).as_posix()


def _cut_note(block: Block) -> str:
    """What a table leaves out and where all of it is; empty when it shows every row."""
    n = len(block.table)
    if n <= MAX_ROWS:
        return ""
    link = f"[{TABLES_DIR}/{block.name}.csv]({TABLES_DIR}/{block.name}.csv)"
    source = f" (read from `{block.source}`)" if block.source else ""
    return f"{n - MAX_ROWS:,} more rows not shown ({n:,} in all): the full table is {link}{source}."


def _md_table(df: pd.DataFrame) -> str:
    """A GitHub markdown table (pandas' to_markdown needs tabulate, which compsense does not install)."""

    def cell(v):
        if isinstance(v, float):
            return "–" if pd.isna(v) else f"{v:.4g}"
        return str(v).replace("|", "\\|").replace("\n", " ")

    head = "| " + " | ".join(map(str, df.columns)) + " |"
    rule = "|" + "---|" * len(df.columns)
    rows = ["| " + " | ".join(cell(v) for v in row) + " |" for row in df.itertuples(index=False)]
    return "\n".join([head, rule, *rows])


def _markdown(blocks: list[Block], run: Path) -> str:
    parts = ["# compsense report", ""]
    for block in blocks:
        parts += [f"## {block.title}", ""]
        if block.text:
            parts += [block.text, ""]
        if block.table is not None:
            parts += [_md_table(block.table.head(MAX_ROWS)), ""]
            if _cut_note(block):
                parts += [_cut_note(block), ""]
        for fig in block.figures:
            png = fig.with_suffix(".png")
            parts.append(f"![{fig.stem}]({_rel(png, run)})" if png.exists() else f"- [{fig.stem}]({_rel(fig, run)})")
        if block.figures:
            parts.append("")
    return "\n".join(parts)
