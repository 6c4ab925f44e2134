"""Figures of notebook 03: the paper's Figure 1 (near-miss cosine distributions) and separation AUCs.

Both read what `compsense.nearmiss.geometry` wrote (the score frame and the tidy table) and never touch an
encoder, so a figure can be redrawn from {work_dir}/results/03/ alone. Distributions are histograms
over [-1, 1] (`geometry.histogram`): negative cosines are shown, not dropped as the authors' [0, 1]
bins did.
"""

from __future__ import annotations

from typing import Sequence

import numpy as np
import pandas as pd
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from compsense.figures.export import fit_width
from compsense.nearmiss.geometry import NEAR_MISS_DATASETS, PANEL_ORDER, SUGARCREPE_FAMILY, histogram, variant_order
from compsense.nearmiss.metrics import AUC

VARIANT_LABELS = {"base": "Base", "A": "Model A", "B": "Model B"}
VARIANT_COLORS = {"base": "#7f7f7f", "A": "#1f77b4", "B": "#d62728"}
REFERENCE_STYLE = {
    "paraphrase": ("rgba(44,160,44,0.18)", "paraphrase pairs (reference)"),
    "random": ("rgba(148,103,189,0.18)", "random pairs (reference)"),
}
_EXTRA_COLORS = ["#2ca02c", "#9467bd", "#8c564b", "#e377c2", "#17becf", "#bcbd22"]


def variant_label(variant: str) -> str:
    return VARIANT_LABELS.get(variant, variant)


def variant_color(variant: str, others: Sequence[str] = ()) -> str:
    if variant in VARIANT_COLORS:
        return VARIANT_COLORS[variant]
    extra = [v for v in variant_order(others) if v not in VARIANT_COLORS]
    return _EXTRA_COLORS[extra.index(variant) % len(_EXTRA_COLORS)] if variant in extra else _EXTRA_COLORS[0]


def family_order(families: Sequence[str]) -> list[str]:
    """The paper's three families first (its panel order), then the rest by name."""
    present = set(families)
    return [f for f in PANEL_ORDER if f in present] + sorted(present - set(PANEL_ORDER))


def family_label(dataset: str, family: str) -> str:
    if dataset == "sugarcrepe":
        return f"{family}: {SUGARCREPE_FAMILY.get(family, '?')}"
    return family


def near_miss_figure(
    scores: pd.DataFrame,
    dataset: str = "negatives",
    families: Sequence[str] | None = None,
    backbone: str | None = None,
    bins: int = 50,
    reference_variant: str | None = None,
    title: str | None = None,
    max_cols: int = 4,
    scale: str = "peak",
):
    """Figure 1: one facet per family, the (anchor, near-miss) cosine distribution of each model
    (Base, A, B; seeds pooled) as outlines over [-1, 1], the reference paraphrase and random-pair
    distributions shaded behind them. Lower is better for near-misses.

    `scale="peak"` (default) draws each curve divided by its own highest bin: near-misses pile into
    a few bins near 1 (densities above 20) and on a common density axis flatten the references to
    a line at the bottom; the position of each curve is what the figure compares. `scale="density"`
    draws densities as they are; the hover gives the density either way.

    References move with the model, so a menu picks whose references are shaded (default: Base).
    Facets wrap after `max_cols` families.
    """
    scores = _one_backbone(scores, backbone)
    near = scores[(scores.kind == "near_miss") & (scores.dataset == dataset)]
    if near.empty:
        raise ValueError(f"no near-miss scores for dataset {dataset!r}; found {sorted(scores.dataset.unique())}")
    families = family_order(families or near.family.unique())
    variants = variant_order(scores.variant.unique())
    reference_variant = reference_variant or variants[0]
    counts = near[near.model == near.model.iloc[0]].groupby("family").size()  # pairs per family, one model
    n_cols = min(len(families), max_cols)
    n_rows = -(-len(families) // n_cols)
    fig = make_subplots(
        rows=n_rows,
        cols=n_cols,
        shared_yaxes=True,
        horizontal_spacing=0.02,
        vertical_spacing=0.3 / n_rows,
        subplot_titles=[f"{family_label(dataset, f)} (n={int(counts.get(f, 0))})" for f in families],
    )
    reference_traces: dict[str, list[int]] = {v: [] for v in variants}
    for i, family in enumerate(families):
        row, col = divmod(i, n_cols)
        row, col, first = row + 1, col + 1, i == 0
        for variant in variants:
            for kind, values in _reference_values(scores, variant).items():
                color, name = REFERENCE_STYLE[kind]
                fig.add_trace(
                    _step_trace(
                        values,
                        bins,
                        peak=scale == "peak",
                        name=name,
                        legendgroup=f"ref-{kind}",
                        showlegend=first,
                        fill="tozeroy",
                        fillcolor=color,
                        line=dict(width=0),
                        visible=variant == reference_variant,
                        hovertemplate=f"{name} [{variant_label(variant)}]<br>"
                        "cosine %{x:.2f}: density %{customdata:.2f}<extra></extra>",
                    ),
                    row=row,
                    col=col,
                )
                reference_traces[variant].append(len(fig.data) - 1)
        for variant in variants:
            values = near.loc[(near.family == family) & (near.variant == variant), "cosine"]
            if values.empty:
                continue
            label = variant_label(variant)
            fig.add_trace(
                _step_trace(
                    values,
                    bins,
                    peak=scale == "peak",
                    name=f"{label} near-misses",
                    legendgroup=variant,
                    showlegend=first,
                    line=dict(color=variant_color(variant, variants), width=2),
                    hovertemplate=f"{label}, {family}<br>cosine %{{x:.2f}}: density %{{customdata:.2f}}"
                    f"<br>mean {values.mean():.3f}<extra></extra>",
                ),
                row=row,
                col=col,
            )
    fig.update_xaxes(range=[-1, 1], title_text="pooled cosine")
    if scale not in ("peak", "density"):
        raise ValueError(f"scale={scale!r}: use 'peak' (each curve / its highest bin) or 'density'")
    fig.update_yaxes(title_text="density / its peak" if scale == "peak" else "density", col=1)
    if scale == "peak":
        fig.update_yaxes(range=[0, 1.05])
    fig.update_layout(
        title=title
        or f"Near-miss cosine under pooled embeddings ({scores.backbone.iloc[0]}, {dataset}); lower is better",
        height=120 + 300 * n_rows,
        legend=dict(orientation="h", y=-0.1 - 0.15 / n_rows),
        updatemenus=_reference_menu(fig, reference_traces, reference_variant),
    )
    return fit_width(fig, max(520, 300 * n_cols))


def _one_backbone(frame: pd.DataFrame, backbone: str | None) -> pd.DataFrame:
    backbones = list(frame.backbone.unique())
    if backbone is None:
        if len(backbones) > 1:
            raise ValueError(f"the frame holds several backbones {backbones}; pass backbone=")
        return frame
    if backbone not in backbones:
        raise ValueError(f"no rows for backbone {backbone!r}; found {backbones}")
    return frame[frame.backbone == backbone]


def _reference_values(scores: pd.DataFrame, variant: str) -> dict[str, pd.Series]:
    """The shaded distributions of one model: training-data references when scored, else the
    held-out paraphrase positives alone."""
    rows = scores[scores.variant == variant]
    paraphrase = rows.loc[rows.kind == "reference_positive", "cosine"]
    if paraphrase.empty:
        paraphrase = rows.loc[rows.kind == "positive", "cosine"]
    out = {"paraphrase": paraphrase}
    random = rows.loc[rows.kind == "reference_random", "cosine"]
    if not random.empty:
        out["random"] = random
    return {k: v for k, v in out.items() if not v.empty}


def _step_trace(values, bins: int, peak: bool = False, **kwargs):
    """A histogram outline; `peak`: divided by its highest bin (the density itself rides along as
    customdata for the hover)."""
    density, edges = histogram(values, bins=bins, density=True)
    centers = (edges[:-1] + edges[1:]) / 2
    y = density / density.max() if peak and density.max() > 0 else density
    return go.Scatter(x=centers, y=y, customdata=density, mode="lines", line_shape="hvh", **kwargs)


def _reference_menu(fig, reference_traces: dict[str, list[int]], current: str) -> list[dict]:
    if len(reference_traces) < 2:
        return []
    shown = {i for idx in reference_traces.values() for i in idx}
    buttons = []
    for variant, idx in reference_traces.items():
        visible = [(i in idx) if i in shown else True for i in range(len(fig.data))]
        buttons.append(
            dict(label=f"references of {variant_label(variant)}", method="restyle", args=[{"visible": visible}])
        )
    return [
        dict(
            buttons=buttons,
            active=list(reference_traces).index(current),
            x=1.0,
            xanchor="right",
            y=1.22,
            yanchor="top",
            direction="down",
        )
    ]


def separation_auc_figure(
    table: pd.DataFrame, metric: str = AUC, backbone: str | None = None, title: str | None = None
):
    """Grouped bars: `metric` per family for Base, A and B (mean over seeds, error bars the seed
    std), the repo's near-miss families and SugarCrepe subsets side by side; 0.5 = chance."""
    rows = _one_backbone(table, backbone)
    rows = rows[(rows.metric == metric) & rows.dataset.isin(NEAR_MISS_DATASETS)]
    if rows.empty:
        raise ValueError(f"no {metric!r} rows for near-miss datasets in the table")
    stats = rows.groupby(["dataset", "family", "variant"]).value.agg(["mean", "std", "count"]).reset_index()
    datasets = [d for d in NEAR_MISS_DATASETS if d in set(stats.dataset)]
    fams = {d: family_order(stats.loc[stats.dataset == d, "family"].unique()) for d in datasets}
    variants = variant_order(stats.variant.unique())
    fig = make_subplots(
        rows=1,
        cols=len(datasets),
        shared_yaxes=True,
        horizontal_spacing=0.04,
        column_widths=[len(fams[d]) for d in datasets],
        subplot_titles=[
            "near-miss families (MRPC paraphrases as positives)"
            if d == "negatives"
            else "SugarCrepe subsets (external)"
            for d in datasets
        ],
    )
    for col, dataset in enumerate(datasets, start=1):
        for variant in variants:
            part = stats[(stats.dataset == dataset) & (stats.variant == variant)].set_index("family")
            part = part.reindex([f for f in fams[dataset] if f in part.index])
            fig.add_trace(
                go.Bar(
                    x=[family_label(dataset, f) for f in part.index],
                    y=part["mean"],
                    name=variant_label(variant),
                    legendgroup=variant,
                    showlegend=col == 1,
                    marker_color=variant_color(variant, variants),
                    error_y=dict(type="data", array=part["std"].fillna(0), visible=bool((part["count"] > 1).any())),
                    customdata=np.c_[part["count"]],
                    hovertemplate="%{x}<br>" + f"{variant_label(variant)}: " + "%{y:.3f} (%{customdata[0]} seeds)"
                    "<extra></extra>",
                ),
                row=1,
                col=col,
            )
        fig.add_hline(
            y=0.5, line_dash="dash", line_color="black", row=1, col=col, annotation_text="chance" if col == 1 else None
        )
    fig.update_yaxes(range=[0, 1.02], title_text=metric.replace("_", " "), row=1, col=1)
    fig.update_layout(
        barmode="group",
        height=440,
        title=title
        or f"Paraphrase vs near-miss separation under pooled cosine ({rows.backbone.iloc[0]}); higher is better",
        legend=dict(orientation="h", y=-0.3),
    )
    return fit_width(fig, max(560, 120 * sum(len(f) for f in fams.values())))
