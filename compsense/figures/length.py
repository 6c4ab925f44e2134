"""The training-length figure: what B costs and buys as the authors' schedule goes on.

Panel 1: SciFact nDCG@10 differences (B - A, A - Base, C - A) against training triplets on a log axis,
with each point's query-bootstrap interval and the paper's drop as lines (absolute -0.038 and the -8.7%
of the run's own A, drawn at each step). Panel 2: held-out near-miss AUC of the pooled cosine per paper
family for A, B and C (0.5 = chance). Both read the tables of `compsense.nearmiss.length_curve`.
"""

from __future__ import annotations

import pandas as pd
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from compsense.nearmiss.length_curve import PAPER_DROP, PAPER_DROP_PCT

COLOURS = {"B-A": "#d62728", "A-Base": "#1f77b4", "C-A": "#7f7f7f", "B-C": "#9467bd", "B-para-A": "#ff7f0e"}
VARIANT_COLOURS = {"A": "#1f77b4", "B": "#d62728", "C": "#7f7f7f", "B-para": "#ff7f0e"}
DASH = {"negation": "solid", "binding": "dot", "spatial": "dash"}
# (dash, marker) of the first, second, third ... seed in panel 1
SEED_STYLES = (("solid", "circle"), ("dash", "diamond"), ("dot", "square"), ("dashdot", "triangle-up"))


def length_figure(deltas: pd.DataFrame, points: pd.DataFrame, dataset: str = "scifact", metric: str = "ndcg@10"):
    """Two panels over training triplets (log axis): panel 1 each seed's differences (each later seed
    with a dash and marker of its own, `SEED_STYLES`), panel 2 each variant's AUC averaged over the seeds
    scored at each step."""
    fig = make_subplots(
        rows=1,
        cols=2,
        subplot_titles=(
            f"{dataset} {metric}: differences (95% query bootstrap)",
            "held-out near-miss AUC, pooled cosine (mean over seeds)",
        ),
        horizontal_spacing=0.1,
    )
    d = deltas[(deltas.dataset == dataset) & (deltas.metric == metric)].sort_values("triplets")
    order = {seed: i for i, seed in enumerate(sorted(d.seed.unique()))}
    for comp, g in d.groupby("comparison", sort=False):
        if comp not in COLOURS:
            continue
        for seed, gs in g.groupby("seed"):
            # each later seed its own dash and marker, so the seeds of one comparison part
            later, style = order[seed] > 0, SEED_STYLES[min(order[seed], len(SEED_STYLES) - 1)]
            fig.add_trace(
                go.Scatter(
                    x=gs.triplets,
                    y=gs.mean_delta,
                    mode="lines+markers",
                    name=f"{comp} (seed {seed})",
                    line={"color": COLOURS[comp], "dash": style[0]},
                    marker={"symbol": style[1]},
                    opacity=0.75 if later else 1.0,
                    error_y={
                        "type": "data",
                        "symmetric": False,
                        "array": gs.ci_high - gs.mean_delta,
                        "arrayminus": gs.mean_delta - gs.ci_low,
                    },
                    legendgroup=comp,
                ),
                row=1,
                col=1,
            )
    if not d.empty:
        xs = sorted(d.triplets.unique())
        fig.add_trace(
            go.Scatter(
                x=[xs[0], xs[-1]],
                y=[PAPER_DROP] * 2,
                mode="lines",
                name="paper B-A (-0.038)",
                line={"color": "black", "dash": "dash"},
            ),
            row=1,
            col=1,
        )
        a = d[d.comparison == "B-A"].groupby("triplets").reference_value.mean()
        if not a.empty:
            fig.add_trace(
                go.Scatter(
                    x=a.index,
                    y=a.values * PAPER_DROP_PCT / 100,
                    mode="lines",
                    name="paper's -8.7% of our A",
                    line={"color": "black", "dash": "dot"},
                ),
                row=1,
                col=1,
            )
    fig.add_hline(y=0, line={"color": "#bbbbbb", "width": 1}, row=1, col=1)
    auc = points[(points.metric == "auc") & (points.variant.isin(list(VARIANT_COLOURS)))]
    auc = auc.groupby(["variant", "family", "triplets"], as_index=False).value.mean().sort_values("triplets")
    base = points[(points.metric == "auc") & (points.variant == "Base")].groupby("family").value.mean()
    for (variant, family), g in auc.groupby(["variant", "family"]):
        fig.add_trace(
            go.Scatter(
                x=g.triplets,
                y=g.value,
                mode="lines+markers",
                name=f"{variant} {family}",
                line={"color": VARIANT_COLOURS[variant], "dash": DASH.get(family, "solid")},
            ),
            row=1,
            col=2,
        )
    if not auc.empty:
        xs = sorted(auc.triplets.unique())
        for family, value in base.items():
            fig.add_trace(
                go.Scatter(
                    x=[xs[0], xs[-1]],
                    y=[value] * 2,
                    mode="lines",
                    name=f"Base {family}",
                    line={"color": "#2ca02c", "dash": DASH.get(family, "solid"), "width": 1},
                ),
                row=1,
                col=2,
            )
    fig.add_hline(y=0.5, line={"color": "#bbbbbb", "width": 1}, row=1, col=2)
    fig.update_xaxes(type="log", title_text="training triplets (batch 128; the authors' schedule: 432,000)")
    fig.update_yaxes(title_text=f"{metric} difference", row=1, col=1)
    fig.update_yaxes(title_text="near-miss AUC", range=[0, 1], row=1, col=2)
    fig.update_layout(
        title="Model A, B and the control C along the authors' MiniLM-L6 schedule",
        height=640,
        width=1200,
        # below the panels, in rows: every series (A/B/C x three families, Base, the paper's lines) stays visible
        legend={"font": {"size": 10}, "orientation": "h", "y": -0.22, "x": 0},
        margin={"b": 190},
    )
    return fig
