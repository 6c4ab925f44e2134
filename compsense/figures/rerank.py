"""Figures of notebook 05 (reranking): Figure 2 (reranked nDCG@10 per verifier against the encoders
alone), the K sweep, and the trade-off between near-miss separation and retrieval. They read the
tables `compsense.verifiers.rerank` makes (`rerank_grid`'s results, `tradeoff_table`) and never
recompute them; `compsense.figures.export.save_figure` writes them.
"""

from __future__ import annotations

import itertools

import numpy as np
import pandas as pd
import plotly.express as px
import plotly.graph_objects as go

from compsense.verifiers.rerank import (
    ENCODER_ONLY,
    is_noise_control,
    regime_rank,
    tradeoff_noise_line,
    variant_folders,
)


def figure_rerank(
    results: pd.DataFrame, k: int | None = None, weight: float = 0.0, metric: str = "ndcg@10", title: str | None = None
):
    """Figure 2: reranked `metric` per verifier, frozen vs end-to-end bars (mean over datasets),
    with the encoder-only Base / Model A / Model B as horizontal lines. When several notebook-04
    variants were reranked, each (regime, variant) is its own bar beside the others of that verifier.
    The noise control (frozen MaxSim plus noise) is not a verifier: it is left out here (its rows share
    F1's name and would be averaged into F1's bar) and drawn on the trade-off figure."""
    df = results[results.metric == metric]
    reranked = df[(df.verifier != "none") & np.isclose(df.weight.astype(float), weight)]
    reranked = reranked[~is_noise_control(reranked.variant)]
    reranked = reranked.assign(verifier_variant=variant_folders(reranked))
    k = int(k if k is not None else reranked.k.max())
    at_k = reranked[reranked.k == k]
    keys = ["verifier_variant", "verifier", "regime"]
    grouped = at_k.groupby(keys, as_index=False, sort=False)
    bars = grouped.agg(value=("value", "mean"), n_datasets=("dataset", "nunique"))
    # The interval: the spread over verifier seeds (each seed's mean over datasets), where there are several.
    if "seed" in at_k.columns:
        per_seed = at_k.groupby([*keys, "seed"], as_index=False, sort=False).value.mean()
        spread = per_seed.groupby(keys, as_index=False, sort=False).agg(std=("value", "std"), seeds=("seed", "nunique"))
        bars = bars.merge(spread, on=keys, how="left")
    else:
        bars = bars.assign(std=np.nan, seeds=1)
    several = bars.verifier_variant.nunique() > 1
    bars = bars.assign(_r=regime_rank(bars.regime)).sort_values(["_r"], kind="stable").drop(columns="_r")
    bars["series"] = bars.regime + (", " + bars.verifier_variant if several else "")
    fig = px.bar(
        bars,
        x="verifier",
        y="value",
        color="series",
        barmode="group",
        error_y="std" if bars["std"].notna().any() else None,
        hover_data=["n_datasets", "verifier_variant", "seeds"],
        category_orders={"verifier": ["F0", "F1", "F2", "F3", "F4"]},
        labels={"value": f"{metric} after reranking (bars: ± std over verifier seeds)", "verifier": ""},
        title=title or f"Reranking the pooled top-{k} with each verifier (w = {weight:g})",
    )
    names = {"base": "Base", "A": "Model A", "B": "Model B"}
    only = df[df.regime == ENCODER_ONLY].groupby("variant").value.mean()
    # The encoders alone are lines named in the legend, not text on the plot: their values are often
    # within 0.01 of each other, where labels would collide.
    for variant, dash in (("base", "dot"), ("A", "dash"), ("B", "dashdot")):
        if variant in only.index:
            fig.add_hline(y=float(only[variant]), line_dash=dash, line_color="gray")
            fig.add_trace(
                go.Scatter(
                    x=[None],
                    y=[None],
                    mode="lines",
                    line=dict(dash=dash, color="gray"),
                    name=f"{names[variant]} encoder only ({only[variant]:.3f})",
                )
            )
    # The y axis fits the bars, their intervals and the lines (from 0 it squeezed 0.63-0.80 into a band).
    tops = bars.value + bars["std"].fillna(0)
    bottoms = bars.value - bars["std"].fillna(0)
    values = pd.concat([tops, bottoms, only], ignore_index=True).dropna()
    if len(values):
        pad = 0.15 * max(float(values.max() - values.min()), 0.01)
        fig.update_yaxes(range=[float(values.min()) - pad, float(values.max()) + pad])
    fig.update_layout(template="plotly_white", legend_title_text="regime, trained on" if several else "regime")
    return fig


def figure_k_sweep(results: pd.DataFrame, weight: float = 0.0, metric: str = "ndcg@10"):
    """`metric` against K per method (mean over datasets): how deep reranking pays."""
    df = results[
        (results.metric == metric) & (results.verifier != "none") & np.isclose(results.weight.astype(float), weight)
    ]
    lines = df.groupby(["variant", "regime", "k"], as_index=False).value.mean()
    fig = px.line(
        lines,
        x="k",
        y="value",
        color="variant",
        line_dash="regime",
        markers=True,
        labels={"value": metric, "k": "K (candidates reranked)"},
        title=f"{metric} against the reranking depth K (w = {weight:g})",
    )
    only = results[(results.metric == metric) & (results.regime == ENCODER_ONLY)].groupby("variant").value.mean()
    if "base" in only.index:
        fig.add_hline(
            y=float(only["base"]),
            line_dash="dot",
            line_color="gray",
            annotation_text=f"Base encoder only ({only['base']:.3f})",
        )
    fig.update_layout(template="plotly_white")
    return fig


def figure_tradeoff(table: pd.DataFrame, k: int | None = None, metric: str = "ndcg@10"):
    """Beyond the paper: x = near-miss separation AUC (± its std over notebook 04's seeds when there
    are several), y = retrieval `metric`, one panel per regime (frozen, end2end). Colour = verifier,
    symbol = notebook-04 variant (training data, size) when several were reranked; each pooled
    encoder (Base / A / B, no reranking) is a horizontal line named in the legend with its AUC, so a
    point above the Base line reranks better than the encoder alone. Up and to the right is
    sensitivity without the retrieval cost. No text on the points (about twenty of them sit close
    together): the legend and the hover name them."""
    error = "auc_std" if "auc_std" in table.columns and table["auc_std"].notna().any() else None
    verifier = table["verifier"] if "verifier" in table.columns else table.label.str.split("-").str[0]
    table = table.assign(verifier=verifier, trained_on=variant_folders(table))
    pooled, noise = table[table.kind == "pooled"], table[table.kind == "noise"]
    points = table[~table.kind.isin(["pooled", "noise"])]
    folders = list(dict.fromkeys(points.trained_on))
    several = len(folders) > 1
    regimes = points.kind.drop_duplicates().sort_values(key=regime_rank, kind="stable").tolist()
    x_label = "near-miss separation AUC (notebook 04)"
    fig = px.scatter(
        points,
        x="auc",
        y="value",
        color="verifier",
        symbol="trained_on" if several else None,
        facet_col="kind" if len(regimes) > 1 else None,
        hover_name="label",
        hover_data=[c for c in ("seeds", "auc_std") if c in points.columns],
        error_x=error,
        category_orders={"kind": regimes, "verifier": sorted(set(points.verifier)), "trained_on": folders},
        labels={
            "auc": x_label,
            "value": f"{metric} (reranked{'' if k is None else f' top-{k}'})",
            "trained_on": "variant",
        },
        title="Compositional sensitivity against retrieval quality",
    )
    fig.update_traces(marker_size=11)
    fig.for_each_annotation(lambda a: a.update(text=a.text.replace("kind=", "")))
    if len(regimes) > 1:  # one axis title under both panels, not one per panel
        fig.for_each_xaxis(lambda axis: axis.update(title_text=""))
        fig.add_annotation(text=x_label, x=0.5, y=-0.12, xref="paper", yref="paper", showarrow=False, font_size=14)
    # The encoders alone as lines across every panel, named in the legend: their values are often
    # too close for labels on the plot.
    names = {"base": "Base", "A": "Model A", "B": "Model B"}
    shown = pd.concat([points, noise])
    reach = shown.auc + (shown["auc_std"].fillna(0) if "auc_std" in shown.columns else 0)  # error bars' end
    high = max(0.55, float(reach.max()) + 0.03) if len(shown) else 0.55
    dashes = itertools.cycle(("dot", "dash", "dashdot", "longdash"))
    for (_, row), dash in zip(pooled.iterrows(), dashes):
        for col in range(1, max(len(regimes), 1) + 1):
            fig.add_trace(
                go.Scatter(
                    x=[-0.02, high],
                    y=[float(row.value)] * 2,
                    mode="lines",
                    line={"dash": dash, "color": "gray", "width": 1.5},
                    name=f"{names.get(row.label, row.label)} encoder only (AUC {row.auc:.2f})",
                    legendgroup=f"pooled-{row.label}",
                    showlegend=col == 1,
                    hoverinfo="name+y",
                ),
                row=1,
                col=col,
            )
    line = tradeoff_noise_line(table)
    if not line.empty:
        # The noise control: frozen MaxSim plus seeded noise of 1, 2, 4... times its paraphrase spread,
        # in the frozen panel (the first). A trained verifier off this line is more than noise.
        fig.add_trace(
            go.Scatter(
                x=line.auc,
                y=line.value,
                mode="lines+markers+text",
                text=line.multiple_label,
                textposition="top right",
                line={"dash": "dot", "color": "black"},
                marker={"symbol": "x", "size": 8, "color": "black"},
                name="noise control: frozen MaxSim + noise",
            ),
            row=1,
            col=1,
        )
    fig.add_vline(
        x=0.5, line_dash="dot", line_color="gray", annotation_text="chance", annotation_position="bottom left"
    )
    values = pd.concat([points.value, pooled.value, noise.value]).astype(float)
    pad = max(0.01, 0.05 * float(values.max() - values.min())) if len(values) else 0.01
    fig.update_xaxes(range=[-0.03, high])
    if len(values):  # the lines' traces would otherwise let plotly pick a range that hides the points
        fig.update_yaxes(range=[float(values.min()) - pad, float(values.max()) + pad])
    fig.update_layout(template="plotly_white", margin={"b": 90})
    return fig
