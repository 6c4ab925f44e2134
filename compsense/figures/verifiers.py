"""Figures of notebook 04 (verifiers) beyond the per-family bars: what one check costs another.

`checks_figure` takes `compsense.nearmiss.evaluation.checks_per_run`'s table (one row per run) and
returns a plotly Figure; `compsense.figures.export.save_figure` writes it.
"""

from __future__ import annotations

import pandas as pd
import plotly.express as px
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from compsense.nearmiss.evaluation import NOISE_MARK, parse_noise_name, split_variant
from compsense.nearmiss.metrics import (
    AUC,
    COPY_VS_NEAR_MISS,
    LABELS,
    MEAN_NEAR_MISS,
    MEAN_PARAPHRASE,
    MEAN_SCORE,
    PAIRWISE_ACCURACY,
    SELF_MATCH,
)
from compsense.verifiers.names import DEFAULT_TRAIN_DATA, with_train_data

# Issue 14's goal for a verifier that reads the edit: near-miss AUC >= 0.85 and self-match AUC >= 0.9.
GOAL = {AUC: 0.85, SELF_MATCH: 0.9}


def checks_figure(runs: pd.DataFrame, x: str = SELF_MATCH, y: str = AUC, title: str | None = None):
    """One point per run: near-miss AUC (y) against self-match AUC (x), colour = scorer, symbol =
    regime, hover = training data, size, seed and copy > near-miss. The goal corner (both checks
    at issue 14's thresholds) is shaded: a verifier that reads the edit lands there; one that only
    learns to distrust near-identical pairs trades one axis for the other, along the dashed line
    y = 1 - x where a near-miss scores as the sentence's copy does."""
    data = runs.assign(regime=runs.regime.replace("", "pooled"))
    noise = noise_line(data, x, y)
    data = data[~data.scorer.astype(str).str.contains(NOISE_MARK, regex=False)]
    fig = px.scatter(
        data,
        x=x,
        y=y,
        color="scorer",
        symbol="regime",
        hover_data=["train_data", "size", "seed", COPY_VS_NEAR_MISS],
        labels={x: LABELS[x], y: LABELS[y]},
        range_x=[0, 1.02],
        range_y=[0, 1.02],
        title=title or f"{LABELS[y]} against {LABELS[x]}, one point per run",
        template="plotly_white",
    )
    if x in GOAL and y in GOAL:
        fig.add_shape(
            type="rect", x0=GOAL[x], x1=1.0, y0=GOAL[y], y1=1.0, line_width=0, fillcolor="green", opacity=0.12
        )
        fig.add_annotation(x=GOAL[x], y=GOAL[y], text="goal", showarrow=False, xanchor="left", yanchor="bottom")
    if (x, y) == (SELF_MATCH, AUC):
        # Near-miss AUC is P(paraphrase > near-miss), 1 - self-match is P(paraphrase > copy): a scorer
        # that gives a near-miss what it gives the sentence's own copy sits on this line.
        fig.add_shape(type="line", x0=0, y0=1, x1=1, y1=0, line_dash="dash", line_color="grey")
        fig.add_annotation(x=0.3, y=0.7, text="near-miss scored like the copy", showarrow=False, textangle=-35)
    fig.add_hline(y=0.5, line_dash="dot", annotation_text="chance")
    fig.update_traces(marker_size=10)
    if not noise.empty:
        # The noise control: frozen MaxSim (nothing learned) plus seeded Gaussian noise of 1, 2, 4...
        # times its paraphrase spread. A trained verifier is evidence of reading the edit only off it.
        fig.add_trace(
            go.Scatter(
                x=noise[x],
                y=noise[y],
                mode="lines+markers+text",
                text=noise["label"],
                textposition="top right",
                line={"dash": "dot", "color": "black"},
                marker={"symbol": "x", "size": 8, "color": "black"},
                name="noise control: frozen MaxSim + noise",
            )
        )
    return fig


def noise_line(runs: pd.DataFrame, x: str, y: str) -> pd.DataFrame:
    """The noise control's points, mean over runs, ordered by noise: frozen MaxSim itself ("0x"),
    then each "F1-frozen+noise<m>x" scorer (`nearmiss.evaluation.noise_controls`). Empty without them."""
    parsed = runs.scorer.map(parse_noise_name)
    noisy = runs[parsed.notna()]
    if noisy.empty:
        return pd.DataFrame(columns=[x, y, "label", "multiple"])
    scorer, regime = split_variant(parsed[noisy.index[0]][0])  # ("F1", "frozen")
    base = runs[(runs.scorer == scorer) & (runs.regime == regime)]
    rows = [{"multiple": 0.0, x: base[x].mean(), y: base[y].mean()}] if not base.empty else []
    for multiple, group in noisy.groupby(parsed[noisy.index].map(lambda p: p[1])):
        rows.append({"multiple": float(multiple), x: group[x].mean(), y: group[y].mean()})
    line = pd.DataFrame(rows).sort_values("multiple").reset_index(drop=True)
    return line.assign(label=[f"{m:g}x" for m in line.multiple])


# The budget curve's panels: (column of `verifiers.budget.budget_table`'s metric, axis title, chance line)
BUDGET_PANELS = (
    (AUC, "near-miss AUC (paper families)", 0.5),
    (PAIRWISE_ACCURACY, "within-anchor pairwise accuracy", 0.5),
    (SELF_MATCH, "self-match AUC", 0.5),
    ("noise_excess", "near-miss AUC above the noise line", 0.0),
    (MEAN_NEAR_MISS, "mean near-miss score (the paper's Figure 3)", None),
    (MEAN_PARAPHRASE, "mean paraphrase score", None),
)
DASHES = ("solid", "dash", "dot", "dashdot")  # the budget curve's training sets: the authors' rows solid


def budget_figure(table: pd.DataFrame, title: str | None = None):
    """The budget curve (`verifiers.budget.budget_table`): one panel per check against the triplets a
    verifier saw (log axis), one line per scorer x regime x size, the seed-level 95% interval as
    error bars where several seeds ran, the authors' recipe as a separate marker. Frozen MaxSim
    (nothing learned) and its noise control are the horizontal dotted lines: a trained verifier
    that stays between them has learned nothing that noise does not explain."""
    panels = [p for p in BUDGET_PANELS if p[0] in set(table.metric)]
    fig = make_subplots(rows=(len(panels) + 1) // 2, cols=2, subplot_titles=[p[1] for p in panels])
    trained = table[table.budget > 0]
    reference = table[table.budget == 0]
    if "seeds" in reference:
        # MaxSim learns nothing, so its line has no size: where pieces scored it at several sizes and seed
        # counts, each line is drawn from its rows with the most seeds (not averaged with a one-seed copy)
        reference = reference[reference.seeds == reference.groupby(["scorer", "metric"]).seeds.transform("max")]
    palette = px.colors.qualitative.Plotly
    # rows published before the train_data column are the authors' rows (publish.MERGED's default)
    trained = with_train_data(trained)
    lines = list(
        dict.fromkeys(zip(trained.scorer, trained.regime, trained["size"], trained.recipe, trained.train_data))
    )
    several_rows = trained.train_data.nunique() > 1
    # a colour per verifier (scorer x regime x size) and a dash per training set: the curve has more lines
    # than the palette has colours, and a line of each set per verifier is read side by side
    colour = {v: palette[k % len(palette)] for k, v in enumerate(dict.fromkeys(line[:3] for line in lines))}
    sets = sorted(set(trained.train_data), key=lambda t: (t != DEFAULT_TRAIN_DATA, t))
    dash = {t: DASHES[k % len(DASHES)] for k, t in enumerate(sets)}
    for i, (metric, _, chance) in enumerate(panels):
        row, col = i // 2 + 1, i % 2 + 1
        for scorer, regime, size, recipe, rows in lines:
            sel = trained[
                (trained.scorer == scorer)
                & (trained.regime == regime)
                & (trained["size"] == size)
                & (trained.recipe == recipe)
                & (trained.train_data == rows)
                & (trained.metric == metric)
            ].sort_values("budget")
            if sel.empty:
                continue
            error = {
                "type": "data",
                "symmetric": False,
                "array": (sel.ci_high - sel["mean"]).fillna(0),
                "arrayminus": (sel["mean"] - sel.ci_low).fillna(0),
            }
            on = f", {rows} rows" if several_rows else ""
            name = f"{scorer}-{regime} ({size}{on}{', authors recipe' if recipe == 'authors' else ''})"
            fig.add_trace(
                go.Scatter(
                    x=sel.budget,
                    y=sel["mean"],
                    error_y=error,
                    mode="markers" if recipe == "authors" else "lines+markers",
                    marker={
                        "symbol": "star" if recipe == "authors" else "circle",
                        "size": 11 if recipe == "authors" else 7,
                    },
                    line={"color": colour[scorer, regime, size], "dash": dash[rows]},
                    name=name,
                    legendgroup=name,
                    showlegend=i == 0,
                    customdata=sel.seeds,
                    hovertemplate="%{x} triplets: %{y:.3f} (%{customdata} seed(s))",
                ),
                row=row,
                col=col,
            )
        lines_here = reference[reference.metric == metric].groupby("scorer")["mean"].mean()
        if metric == "noise_excess":  # the line itself, 0 by definition at every noise level: one line
            lines_here = lines_here.iloc[:0]
            fig.add_hline(y=0, line_dash="dot", line_color="grey", annotation_text="the noise line", row=row, col=col)
        values = pd.concat([trained[trained.metric == metric]["mean"], lines_here])
        labelled: list[float] = []
        order = sorted(lines_here.index, key=lambda name: (parse_noise_name(name) or ("", 0.0))[1])  # MaxSim first
        for scorer, value in lines_here[order].items():
            parsed = parse_noise_name(scorer)
            label = "frozen MaxSim" if parsed is None else f"MaxSim + noise {parsed[1]:g}x"
            # a label only where it does not sit on another's (lines a few hundredths apart)
            free = all(abs(value - v) > 0.06 * (values.max() - values.min() or 1) for v in labelled)
            labelled += [value] if free else []
            text = {"annotation_text": label, "annotation_font_size": 9} if free else {}  # any annotation_* draws one
            fig.add_hline(
                y=value, line_dash="dot", line_color="black" if parsed is None else "grey", row=row, col=col, **text
            )
        if chance is not None:
            fig.add_hline(y=chance, line_width=1, line_color="lightgrey", row=row, col=col)
        if chance == 0.5:  # an AUC or an accuracy: a two-seed t interval (12.7 x the spread) runs off [0, 1]
            fig.update_yaxes(range=[-0.02, 1.02], row=row, col=col)
        budgets = sorted(set(trained.budget))
        fig.update_xaxes(
            type="log",
            title_text="training triplets",
            tickvals=budgets,
            ticktext=[f"{b:,}" for b in budgets],
            row=row,
            col=col,
        )
    fig.update_layout(
        title=title or "Verifiers against their training budget (held-out near-misses)",
        template="plotly_white",
        height=330 * ((len(panels) + 1) // 2),
        legend={"orientation": "h", "y": -0.08},
    )
    return fig


def figure_near_miss_scores(table, title: str = "Mean score on paraphrases and near-misses"):
    """Figure 3's view: mean score per family (and on paraphrases), one group of bars per scorer."""
    data = table[table.metric == MEAN_SCORE]
    fig = px.bar(
        data,
        x="scorer",
        y="value",
        color="family",
        barmode="group",
        title=title,
        labels={"value": "mean score", "scorer": ""},
        hover_data=["n"],
    )
    fig.update_layout(legend_title_text="pairs", template="plotly_white")
    return fig
