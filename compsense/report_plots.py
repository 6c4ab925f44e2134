"""Figures of the A/B experiment (notebook 02): learning curves, per-dataset deltas, share sweep.

Each function takes a table the pipeline already wrote (train logs, tidy retrieval results) and
returns a plotly Figure; nothing is recomputed here. `compsense.plots.save_figure` writes them.
"""
from __future__ import annotations

import pandas as pd


def learning_curves(curves: pd.DataFrame):
    """Training loss per step, one line per variant x seed, one panel per backbone."""
    import plotly.express as px

    df = curves.assign(run=curves.variant + " · seed " + curves.seed.astype(str))
    fig = px.line(df, x="step", y="loss", color="variant", line_group="run", facet_col="backbone",
                  hover_data=["seed", "learning_rate"], markers=len(df) < 200)
    fig.update_yaxes(matches=None)
    fig.update_layout(title="MNRL training loss (Model A: retrieval only; B: + structural triplets)",
                      legend_title_text="variant")
    return fig


def per_dataset_deltas(deltas: pd.DataFrame, metric: str = "nDCG@10"):
    """B - A per evaluation dataset (mean over seeds), one bar group per backbone."""
    import plotly.express as px

    fig = px.bar(deltas, x="dataset", y="delta", color="backbone", barmode="group",
                 hover_data=["A", "B"], labels={"delta": f"B − A {metric}"})
    fig.add_hline(y=0, line_color="gray")
    fig.update_layout(title=f"Model B − Model A, {metric}, per dataset (below 0: structural training cost)")
    return fig


def share_sweep(sweep: pd.DataFrame, metric: str = "ndcg@10"):
    """Drop relative to Model A (share 0) against the structural share, per backbone."""
    import plotly.express as px

    fig = px.line(sweep.sort_values("structural_share"), x="structural_share", y="drop", color="backbone",
                  markers=True, hover_data=[metric, "n_seeds"],
                  labels={"structural_share": "share of structural identity triplets", "drop": f"Δ {metric} vs A"})
    fig.add_hline(y=0, line_color="gray")
    fig.update_layout(title="Retrieval cost of structural training, by share of structural rows (0 = Model A)")
    return fig
