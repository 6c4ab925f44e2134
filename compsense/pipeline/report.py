"""The report of a `reproduce` run: report.md and report.html assembled from tidy tables and figures.

It reads what the stages wrote (runs/<profile>/results/*.parquet, the figures folder and the runner's
summary) and never recomputes a result. Table 1 puts the paper's numbers beside ours.
"""
from __future__ import annotations

import html
import os
import subprocess
from pathlib import Path

import pandas as pd

from compsense.core.storage import write_text
from compsense.core.paths import repo_root, resolve
from compsense.nearmiss.evaluation import separation_table
from compsense.pipeline.doctor import report as machine
from compsense.pipeline.estimate import display_frame, estimate, headline
from compsense.retrieval.harness import table1, variant_table

# Result tables the stages write, in report order, with the heading each gets.
SECTIONS = [
    ("retrieval", "Retrieval, every model and set with its regime (notebook 02)"),
    ("geometry", "Pooled-space separation (notebook 03)"),
    ("verifiers", "Verifier near-miss separation (notebook 04)"),
    ("rerank", "Reranking with verifiers (notebook 05)"),
]
GROUP_DROP = {"run", "seed", "value"}


def git_commit() -> str:
    try:
        out = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=repo_root(), capture_output=True,
                             text=True, timeout=10)
        dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], cwd=repo_root(),
                               capture_output=True, text=True, timeout=10).stdout.strip()
        return out.stdout.strip() + ("-dirty" if dirty else "") if out.returncode == 0 else "unknown"
    except (OSError, subprocess.SubprocessError):
        return "unknown"


MAX_ROWS = 80  # rows a report table shows; the rest are counted and the full table is named


def summarize(table: pd.DataFrame) -> pd.DataFrame:
    """Mean (and n) over seeds and runs for every other grouping column: one line per result."""
    keys = [c for c in table.columns if c not in GROUP_DROP and table[c].notna().any()]
    return table.groupby(keys, dropna=False).value.agg(["mean", "std", "count"]).reset_index()


def table_blocks(title: str, df: pd.DataFrame, source: Path | str, max_rows: int = MAX_ROWS) -> list:
    """A report table of at most `max_rows` rows; a longer one says how many rows it leaves out and
    where all of them are, never cutting silently."""
    blocks = [("table", title, df.head(max_rows))]
    if len(df) > max_rows:
        blocks.append(("text", f"{title}: {len(df) - max_rows:,} more rows",
                       f"{len(df) - max_rows:,} more rows not shown ({len(df):,} in all): the full table is "
                       f"`{source}` (pandas.read_parquet)."))
    return blocks


def build_report(work_dir: str | os.PathLike, figures_dir: str | os.PathLike, run_dir: str | os.PathLike,
                 summary: dict | None = None) -> dict[str, Path]:
    """Write run_dir/report.md and run_dir/report.html; returns their paths."""
    work, figs, run = resolve(work_dir), resolve(figures_dir), resolve(run_dir)
    info = machine()
    blocks: list[tuple[str, str, pd.DataFrame | str]] = []  # (kind, title, payload)
    meta = pd.DataFrame({"item": ["profile", "git commit", "device", "python"] +
                         [f"{k}" for k in info["versions"]],
                         "value": [(summary or {}).get("profile", "?"), git_commit(), info["device"],
                                   info["python"]] + list(info["versions"].values())})
    for name, title in SECTIONS:
        path = work / "results" / f"{name}.parquet"
        if not path.exists():
            blocks.append(("text", title, f"No results yet: `{path.relative_to(repo_root()) if path.is_relative_to(repo_root()) else path}` "
                                          "does not exist (run its notebook)."))
            continue
        table = pd.read_parquet(path)
        where = path.relative_to(repo_root()) if path.is_relative_to(repo_root()) else path
        if name == "retrieval":
            blocks += _retrieval_blocks(table, work / "results" / "retrieval_per_query.parquet")
        if name == "verifiers":
            blocks += _separation_blocks(table, where)
        blocks += table_blocks(title, summarize(table), where)
    # The answer first, then how it was run.
    blocks.append(("table", "Run metadata", meta))
    if summary:
        stages = pd.DataFrame([{"stage": k, **{f: v.get(f) for f in ("status", "seconds", "reason", "cell", "error")}}
                               for k, v in summary.get("stages", {}).items()])
        blocks.append(("table", "Stages (time per stage in seconds)", stages.dropna(axis=1, how="all")))
    blocks += _estimate_blocks(work)
    figures = sorted(figs.glob("*.html")) if figs.exists() else []
    md_path, html_path = run / "report.md", run / "report.html"
    write_text(md_path, _markdown(blocks, figures, run))
    write_text(html_path, _html(blocks, figures, run))
    return {"md": md_path, "html": html_path}


TABLE1_TITLE = "Table 1 (zero-shot sets only): mean nDCG@10 / Acc@1 over seeds, ours beside the paper's"


def _retrieval_blocks(table: pd.DataFrame, per_query_path: Path) -> list:
    """Table 1 on the zero-shot sets with its B - A interval over seeds and queries (Holm-corrected),
    every variant against A, and the in-domain reference, each saying what it holds."""
    if "regime" not in table.columns:
        return [("text", TABLE1_TITLE, "No Table 1: the results predate zero-shot checking (no `regime` column); "
                 "re-run notebook 02 with force=True.")]
    pq = pd.read_parquet(per_query_path) if per_query_path.exists() else None
    t1 = table1(table, per_query=pq)
    sets = sorted(set(table.dataset) - set(table.dataset[table.regime != "zero-shot"]))
    blocks = [("table", TABLE1_TITLE, t1),
              ("text", "How to read Table 1", f"Zero-shot sets: {', '.join(sets) or 'none'} (no training query or document "
               "of any model occurs in them; `compsense.retrieval.regime`). ci_low/ci_high: 95% hierarchical bootstrap of B − A "
               "resampling seeds and queries together; p_holm: Holm-corrected over the table's comparisons.")]
    if pq is not None and len(set(table.variant) - {"base"}) > 2:
        blocks.append(("table", "Variants against Model A (zero-shot nDCG@10; p Holm-corrected over all rows)",
                       variant_table(table, pq)))
    in_domain = table[(table.regime == "in-domain") & table.metric.isin(["ndcg@10", "acc@1"])]
    if not in_domain.empty:
        ref = (in_domain.groupby(["backbone", "dataset", "metric", "variant"]).value.agg(["mean", "std", "count"])
               .reset_index())
        blocks.append(("table", "In-domain reference (sets a model trained on; not comparable with the paper)", ref))
    return blocks


SEPARATION_TITLE = "The separation table (notebook 04): near-miss AUC, self-match AUC and copy > near-miss per set"


def _separation_blocks(table: pd.DataFrame, where) -> list:
    """Notebook 04's answer, as it shows it: every scorer x regime x training data x size, mean ± std
    over verifier seeds. A verifier reads the edit only where all three checks are high on every set."""
    try:
        wide = separation_table(table)
    except (KeyError, ValueError) as err:
        return [("text", SEPARATION_TITLE, f"No separation table: {type(err).__name__}: {err} ({where}).")]
    flat = wide.reset_index()
    flat.columns = [" ".join(str(p) for p in c if p).strip() if isinstance(c, tuple) else c for c in flat.columns]
    return table_blocks(SEPARATION_TITLE, flat.fillna(""), where)


ESTIMATE_TITLE = "Time estimate for the paper profile from this run's measured throughput"


def _estimate_blocks(work: Path) -> list:
    """The paper profile's time at the rates this run measured (compsense.pipeline.estimate). Never fails the
    report: whatever is missing or unreadable is said in the section instead."""
    try:
        est = estimate("paper", work)
        where = work.relative_to(repo_root()) if work.is_relative_to(repo_root()) else work
        return [("text", ESTIMATE_TITLE, headline(est) + " `python -m compsense estimate --profile paper --from "
                 f"{where}` prints it; --bench/--rate add rates measured elsewhere."),
                ("table", "Time estimate per stage and component (paper profile)", display_frame(est))]
    except Exception as err:  # noqa: BLE001 - the report must be written whatever the estimate hits
        return [("text", ESTIMATE_TITLE, f"No estimate: {type(err).__name__}: {err}. It needs the run's "
                 f"work_dir ({work}) with DONE.json, verifier.json or executed notebooks in it.")]


def _rel(path: Path, start: Path) -> str:
    return os.path.relpath(path, start)


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


def _markdown(blocks, figures: list[Path], run: Path) -> str:
    parts = ["# compsense report", ""]
    for kind, title, payload in blocks:
        parts += [f"## {title}", "", _md_table(payload) if kind == "table" else payload, ""]
    if figures:
        parts += ["## Figures", ""]
        for fig in figures:
            png = fig.with_suffix(".png")
            parts.append(f"![{fig.stem}]({_rel(png, run)})" if png.exists() else f"- [{fig.stem}]({_rel(fig, run)})")
        parts.append("")
    return "\n".join(parts)


def _html(blocks, figures: list[Path], run: Path) -> str:
    parts = ["<!doctype html><html><head><meta charset='utf-8'><title>compsense report</title>",
             "<style>body{font-family:sans-serif;max-width:1200px;margin:auto}table{border-collapse:collapse;"
             "font-size:13px}td,th{border:1px solid #ccc;padding:2px 6px}iframe{width:100%;height:560px;border:0}"
             "</style></head><body><h1>compsense report</h1>"]
    for kind, title, payload in blocks:
        body = payload.to_html(index=False, float_format=lambda v: f"{v:.4g}", na_rep="–") if kind == "table" \
            else f"<p>{html.escape(payload)}</p>"
        parts.append(f"<h2>{html.escape(title)}</h2>{body}")
    if figures:
        parts.append("<h2>Figures</h2>")
        parts += [f"<h3>{html.escape(f.stem)}</h3><iframe src='{html.escape(_rel(f, run))}'></iframe>" for f in figures]
    parts.append("</body></html>")
    return "\n".join(parts)
