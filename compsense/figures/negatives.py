"""Figures of notebook 01 (near-miss generation): yield per family, the artefact check, edit distances.

Each takes a table `compsense.data.negatives` already computed and returns a plotly Figure;
`compsense.figures.export.save_figure` writes them.
"""

from __future__ import annotations

import pandas as pd
import plotly.express as px


def yield_figure(yields: pd.DataFrame, title: str = "Near-miss yield per family"):
    fig = px.bar(
        yields,
        x="family",
        y="yield",
        text=yields["yield"].map("{:.0%}".format),
        hover_data=["n_with_near_miss", "n_sentences"],
        title=title,
    )
    return fig.update_layout(yaxis_tickformat=".0%", yaxis_range=[0, 1])


def artefact_figure(aucs: pd.DataFrame, target: float = 0.65):
    """Blind bag-of-words AUC per family, with the 0.65 target and chance marked."""
    fig = px.bar(
        aucs,
        x="family",
        y="auc",
        color="source",
        barmode="group",
        range_y=[0, 1],
        title="Artefact check: can a blind bag-of-words spot the near-miss? (0.5 = no)",
    )
    fig.add_hline(y=target, line_dash="dash", annotation_text=f"target ≤ {target}")
    return fig.add_hline(y=0.5, line_dash="dot", annotation_text="chance")


def edit_distance_figure(distances: pd.DataFrame):
    return px.histogram(
        distances,
        x="edit_distance",
        color="family",
        barmode="group",
        title="Edit size: token edit distance between a sentence and its near-miss",
    )
