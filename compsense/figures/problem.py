"""The problem in thirty seconds: paraphrases and meaning-flipping near-misses under pooled cosine.

Used by notebooks/00_the_problem.ipynb; the examples are hand-written for this project.
"""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import plotly.graph_objects as go

from compsense.figures.export import fit_width
from compsense.nearmiss.geometry import cosine_matrix, pair_cosines


def examples() -> list[dict]:
    path = Path(__file__).resolve().parents[1] / "resources" / "problem_examples.json"
    return json.loads(path.read_text(encoding="utf-8"))["examples"]


def cosine_table(encoder, items: list[dict] | None = None) -> pd.DataFrame:
    """One row per (anchor, other text): its kind (paraphrase or a near-miss family) and pooled cosine."""
    rows = []
    for ex in items or examples():
        rows.append({"anchor": ex["anchor"], "other": ex["paraphrase"], "kind": "paraphrase"})
        for family, text in ex["near_misses"].items():
            rows.append({"anchor": ex["anchor"], "other": text, "kind": f"near-miss: {family}"})
    df = pd.DataFrame(rows)
    df["cosine"] = pair_cosines(encoder, list(zip(df["anchor"], df["other"])))
    return df


def heatmap(encoder, items: list[dict] | None = None):
    """A plotly heatmap of pooled cosines between every anchor, paraphrase and near-miss."""
    texts = []
    for ex in items or examples():
        texts += [ex["anchor"], ex["paraphrase"], *ex["near_misses"].values()]
    sims = cosine_matrix(encoder, texts)
    labels = [t if len(t) < 48 else t[:45] + "..." for t in texts]
    fig = go.Figure(
        go.Heatmap(
            z=sims,
            x=labels,
            y=labels,
            zmin=-1,
            zmax=1,
            colorscale="RdBu_r",
            hovertemplate="%{y}<br>%{x}<br>cosine %{z:.3f}<extra></extra>",
        )
    )
    fig.update_layout(
        title="Pooled cosine between anchors, paraphrases and near-misses",
        height=700,
        yaxis_autorange="reversed",
    )
    return fit_width(fig, 900)
