"""Figures of the A/B experiment (notebook 02): learning curves and the dose-response.

Each function takes a table the pipeline already wrote (train logs, tidy retrieval results) and
returns a plotly Figure; nothing is recomputed here. `compsense.figures.export.save_figure` writes them.
"""

from __future__ import annotations

import pandas as pd
import plotly.express as px
import plotly.graph_objects as go


def learning_curves(curves: pd.DataFrame):
    """Training loss per step, one line per variant x seed, one panel per backbone."""
    df = curves.assign(run=curves.variant + " · seed " + curves.seed.astype(str))
    fig = px.line(
        df,
        x="step",
        y="loss",
        color="variant",
        line_group="run",
        facet_col="backbone",
        hover_data=["seed", "learning_rate"],
        markers=len(df) < 200,
    )
    fig.update_yaxes(matches=None)
    fig.update_layout(
        title="MNRL training loss (Model A: retrieval only; B: + structural triplets)", legend_title_text="variant"
    )
    return fig


def dose_response_figure(points: pd.DataFrame, metric: str = "ndcg@10"):
    """Zero-shot drop against held-out near-miss AUC gain, both relative to Model A of the same seed
    (`retrieval.dose_response`): one marker per variant (mean over its seeds, bars = std where it has
    more than one seed), labelled with the variant. The B share sweep is not joined by a line: most of
    its shares have one seed, whose spread is what the A/B seeds show, so a line would draw noise."""
    agg = points.groupby(["backbone", "variant"], as_index=False).agg(
        structural_share=("structural_share", "first"),
        drop=("drop", "mean"),
        drop_std=("drop", "std"),
        auc_gain=("auc_gain", "mean"),
        auc_gain_std=("auc_gain", "std"),
        n_seeds=("seed", "nunique"),
    )
    fig = go.Figure()
    for backbone, grp in agg.groupby("backbone", sort=False):
        sweep = grp[grp.variant.str.match(r"^(A|B|B-share.*)$")].sort_values("structural_share")
        other = grp[~grp.index.isin(sweep.index)]
        for part, mode, name in (
            (sweep, "markers+text", f"{backbone}: B by share"),
            (other, "markers+text", f"{backbone}: controls"),
        ):
            if part.empty:
                continue
            label = [
                f"{v} ({s:g})" if v in ("A", "B") else "base" if v == "base" else v
                for v, s in zip(part.variant, part.structural_share.fillna(0))
            ]
            fig.add_trace(
                go.Scatter(
                    x=part.auc_gain,
                    y=part["drop"],
                    mode=mode,
                    name=name,
                    text=label,
                    textposition="top center",
                    error_x=dict(type="data", array=part.auc_gain_std.fillna(0)),
                    error_y=dict(type="data", array=part.drop_std.fillna(0)),
                    customdata=part.n_seeds,
                    hovertemplate="%{text}<br>AUC gain %{x:.3f}<br>Δ %{y:.4f}<br>seeds %{customdata}<extra></extra>",
                )
            )
    fig.add_hline(y=0, line_color="gray")
    fig.add_vline(x=0, line_color="gray")
    # room for the text labels at both ends, which plotly does not count when it sizes the axes
    lo, hi = float(agg.auc_gain.min()), float(agg.auc_gain.max())
    pad = 0.2 * max(hi - lo, 1e-3)
    fig.update_xaxes(range=[min(lo, 0.0) - pad, max(hi, 0.0) + pad])
    fig.update_layout(
        title="Dose-response: zero-shot cost against near-miss separation<br>"
        "<sup>both relative to Model A of the same seed; bars: std over seeds; base: not fine-tuned</sup>",
        xaxis_title="held-out near-miss separation AUC, minus Model A's",
        yaxis_title=f"zero-shot Δ {metric} vs Model A",
        margin=dict(r=40),
    )
    return fig
