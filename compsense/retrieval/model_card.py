"""A trained encoder's evaluated metrics, written into its model card after evaluation.

Training writes the card (sentence-transformers' model card data, filled by
`compsense.retrieval.training.describe_model_card`); the metrics only exist once notebook 02 has evaluated the
model. `add_card_metrics` puts them into final/README.md twice: as the Hub's `model-index` (through
huggingface_hub's `ModelCard` and `EvalResult`, so the Hub and tools that read model cards see them)
and as a Markdown table that also says each set's regime (zero-shot or in-domain), which
`model-index` has no field for. The card is the one file of final/ that changes after training, so
DONE.json's record of final/'s file sizes is updated with it: the finished-run check
(`train._finished_problem`) keeps holding, and a truncated card would still be caught.
"""

from __future__ import annotations

import os
from pathlib import Path

import pandas as pd
from huggingface_hub import EvalResult, ModelCard

from compsense.core.storage import read_json, write_json, write_text
from compsense.retrieval.evaluate import MTEB_SCORE_KEYS, mteb_task_name

SECTION = "## Evaluation (compsense)"
_END = "<!-- end of compsense evaluation -->"


def add_card_metrics(run_dir: str | os.PathLike, rows: pd.DataFrame) -> Path:
    """Write `rows` (tidy retrieval rows of this run: dataset, metric, value, regime, n_queries,
    n_docs) into `run_dir`/final/README.md; a second call replaces the first's metrics. Returns
    the card's path."""
    run_dir = Path(run_dir)
    card_path, done_path = run_dir / "final" / "README.md", run_dir / "DONE.json"
    for path, what in ((card_path, "model card"), (done_path, "DONE.json")):
        if not path.is_file():
            raise FileNotFoundError(f"{path}: no {what}; train the model first (notebook 02, run_grid)")
    missing = {"dataset", "metric", "value", "regime"} - set(rows.columns)
    if missing:
        raise ValueError(
            f"{run_dir}: metric rows lack columns {sorted(missing)}; pass the rows of "
            "results/retrieval.parquet (compsense.retrieval.harness.evaluate_runs)"
        )
    rows = rows[rows.metric.isin(MTEB_SCORE_KEYS)].sort_values(["regime", "dataset", "metric"])
    if rows.empty:
        raise ValueError(f"{run_dir}: no rows with a metric among {sorted(MTEB_SCORE_KEYS)} to write")
    card = ModelCard.load(card_path)
    card.data.model_name = card.data.model_name or run_dir.name
    card.data.eval_results = [
        EvalResult(
            task_type="retrieval",
            task_name=f"Retrieval ({r.regime})",
            dataset_type=f"BeIR/{r.dataset}",
            dataset_name=mteb_task_name(r.dataset),
            dataset_split=getattr(r, "split", "test"),
            metric_type=MTEB_SCORE_KEYS[r.metric],
            metric_value=round(float(r.value), 5),
        )
        for r in rows.itertuples()
    ]
    text = _strip_section(str(card)) + "\n" + _section(rows) + "\n"
    write_text(card_path, text)
    done = read_json(done_path, recover=f"delete {run_dir} to train it again")
    if "final_files" in done:
        done["final_files"]["README.md"] = card_path.stat().st_size
        write_json(done_path, done)
    return card_path


def write_card_metrics(models: pd.DataFrame, results: pd.DataFrame) -> list[Path]:
    """`add_card_metrics` for every trained model of `models` (run_grid's rows; base models are
    not ours to describe) with its rows of `results` (evaluate_runs' tidy table)."""
    written = []
    for m in models[models.variant != "base"].to_dict("records"):
        run = f"{m['backbone']}/{m['variant']}-seed{m['seed']}"
        mine = results[results.run == run]
        if not mine.empty:
            written.append(add_card_metrics(Path(m["model"]).parent, mine))
    return written


def _section(rows: pd.DataFrame) -> str:
    table = rows.pivot_table(index=["regime", "dataset"], columns="metric", values="value").round(4)
    sizes = rows.groupby(["regime", "dataset"])[[c for c in ("n_queries", "n_docs") if c in rows]].first()
    table = table.join(sizes).reset_index()
    head = "| " + " | ".join(table.columns) + " |"
    lines = [head, "|" + "---|" * len(table.columns)]
    lines += ["| " + " | ".join(_cell(v) for v in rec) + " |" for rec in table.itertuples(index=False)]
    return "\n".join(
        [
            SECTION,
            "",
            "Measured by compsense's retrieval harness (exact cosine search over the full corpus of each BEIR "
            "test split). **zero-shot**: no query or document of the set is among this model's training texts; "
            "**in-domain**: the model trained on that corpus, so the number says nothing about transfer.",
            "",
            *lines,
            "",
            _END,
        ]
    )


def _strip_section(text: str) -> str:
    if SECTION not in text:
        return text.rstrip() + "\n"
    start = text.index(SECTION)
    end = text.find(_END, start)
    rest = text[end + len(_END) :] if end >= 0 else ""
    return (text[:start].rstrip() + "\n" + rest.lstrip("\n")).rstrip() + "\n"


def _cell(value) -> str:
    if isinstance(value, float):
        return f"{value:,.0f}" if value.is_integer() and value > 1 else f"{value:.4f}"
    return str(value)
