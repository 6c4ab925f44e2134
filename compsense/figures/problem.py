"""The problem in thirty seconds: paraphrases and meaning-flipping near-misses under pooled cosine.

Used by notebooks/00_the_problem.ipynb; the examples are hand-written for this project. The notebook's
point is a small contrast (a role swap at 0.995 against its paraphrase at 0.990), so the figure's colour
scale spans the cosines the text compares, not [-1, 1], and every number shown has three decimals.
"""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import numpy as np
import pandas as pd
import plotly.graph_objects as go
from plotly.colors import sample_colorscale

from compsense.figures.export import fit_width
from compsense.nearmiss.geometry import cosine_matrix, pair_cosines

PARAPHRASE = "paraphrase"
DECIMALS = 3  # a cosine shown anywhere in notebook 00: enough to tell 0.990 from 0.995, no more
LABEL_WIDTH = 40  # characters per line of a tick label (a sentence and its label prefix run to 80)
LABEL_LINES = 2  # lines per tick label; a longer sentence is shortened, its whole text is in the hover
PALETTE = "Viridis"  # sequential: brighter is closer, with no false midpoint at 0 as RdBu had
CHAR_PX = 7  # width of one tick-label character at the figure's font size (12 px), generously
LINE_PX = 16  # height of one tick-label line


def examples() -> list[dict]:
    path = Path(__file__).resolve().parents[1] / "resources" / "problem_examples.json"
    return json.loads(path.read_text(encoding="utf-8"))["examples"]


def cosine_table(encoder, items: list[dict] | None = None) -> pd.DataFrame:
    """One row per (anchor, other text): its kind (paraphrase or a near-miss family) and pooled cosine."""
    rows = []
    for ex in items or examples():
        rows.append({"anchor": ex["anchor"], "other": ex["paraphrase"], "kind": PARAPHRASE})
        for family, text in ex["near_misses"].items():
            rows.append({"anchor": ex["anchor"], "other": text, "kind": f"near-miss: {family}"})
    df = pd.DataFrame(rows)
    df["cosine"] = pair_cosines(encoder, list(zip(df["anchor"], df["other"])))
    return df


def confusable(table: pd.DataFrame) -> pd.DataFrame:
    """The near-misses that score at least as high as their anchor's paraphrase (compared at full
    precision), each with that paraphrase's cosine beside its own: the pairs a cosine ranking cannot
    tell apart."""
    paraphrase = table[table.kind == PARAPHRASE].set_index("anchor").cosine
    near = table[table.kind != PARAPHRASE].assign(paraphrase_cosine=lambda d: d.anchor.map(paraphrase))
    return near[near.cosine >= near.paraphrase_cosine].reset_index(drop=True)


def styled(table: pd.DataFrame):
    """`table` as notebook 00 shows it: every cosine column to three decimals (0.995, not 0.995166),
    the cosine as a bar on [0, 1]."""
    cosines = [c for c in table.columns if "cosine" in c]
    return table.style.format({c: f"{{:.{DECIMALS}f}}" for c in cosines}).bar(
        subset=cosines, vmin=0, vmax=1, color="#8fb8de"
    )


def entries(items: list[dict] | None = None) -> list[dict]:
    """Every text of the heatmap in order, with its block (the anchor it belongs to, from 1) and kind."""
    out = []
    for block, ex in enumerate(items or examples(), start=1):
        out.append({"block": block, "kind": "anchor", "text": ex["anchor"]})
        out.append({"block": block, "kind": PARAPHRASE, "text": ex["paraphrase"]})
        out += [{"block": block, "kind": family, "text": text} for family, text in ex["near_misses"].items()]
    return out


def wrap_label(text: str, width: int = LABEL_WIDTH, lines: int = LABEL_LINES) -> str:
    """`text` on at most `lines` lines of `width` characters (plotly's <br>), shortened with an ellipsis
    past that: a tick label that fits beside the map instead of being cut at the figure's edge."""
    wrapped = textwrap.wrap(text, width) or [""]
    if len(wrapped) > lines:
        wrapped = wrapped[:lines]
        wrapped[-1] = textwrap.shorten(wrapped[-1] + " …", width, placeholder=" …")
    return "<br>".join(wrapped)


def compared_values(sims: np.ndarray, blocks: list[int], anchors: list[bool]) -> np.ndarray:
    """The cosine of each anchor with every other text of its own block: the values the notebook asks the
    reader to compare (the anchor's near-misses against its paraphrase)."""
    block, anchor = np.asarray(blocks), np.asarray(anchors, dtype=bool)
    compared = (block[:, None] == block[None, :]) & ~np.eye(len(block), dtype=bool) & anchor[:, None]
    return np.asarray(sims, dtype=float)[compared]


def compared_range(sims: np.ndarray, blocks: list[int], anchors: list[bool]) -> tuple[float, float]:
    """(lowest, highest) of `compared_values`: the colour scale's ends, so a 0.005 difference is a step
    within the scale instead of a shade of one colour on [-1, 1]."""
    values = compared_values(sims, blocks, anchors)
    low, high = float(values.min()), float(values.max())
    if high - low < 1e-6:  # one value only: any scale shows it; keep plotly's range valid
        low, high = low - 0.01, high + 0.01
    return low, high


def rank_colorscale(values: np.ndarray, low: float, high: float, palette: str = PALETTE) -> list | str:
    """A plotly colour scale on [low, high] that gives each compared value its own step of `palette`, in
    rank order. Why: a linear scale over 0.73-0.995 (MiniLM on notebook 00's anchors) still draws 0.990 and
    0.995 in nearly one colour, because most compared cosines crowd near the top; spaced by rank, two
    neighbouring values always differ by one step. The colour bar shows the mapping, crowded where the
    values are."""
    points = np.unique(np.clip(np.asarray(values, dtype=float), low, high))
    if len(points) < 2 or high - low < 1e-9:
        return palette
    positions = (points - low) / (high - low)
    positions[0], positions[-1] = 0.0, 1.0
    colours = sample_colorscale(palette, list(np.linspace(0, 1, len(points))))
    return [[float(p), c] for p, c in zip(positions, colours)]


def heatmap_figure(sims: np.ndarray, items: list[dict] | None = None):
    """The heatmap of `sims` (pooled cosines between `entries(items)`, in that order).

    Colour: the range of each anchor's cosines with its own paraphrase and near-misses (`compared_range`),
    each of those values a step of a sequential palette in rank order (`rank_colorscale`); lower cosines
    (between different anchors, or a paraphrase against a near-miss) are drawn in its darkest colour. Each cell
    inside a block prints its cosine; the hover gives both whole sentences. Rows are labelled with the
    sentence (wrapped), columns with the block and kind, and the margins are sized from the labels."""
    texts = entries(items)
    blocks = [t["block"] for t in texts]
    sims = np.asarray(sims, dtype=float)
    anchors = [t["kind"] == "anchor" for t in texts]
    low, high = compared_range(sims, blocks, anchors)
    rows = [f"{t['block']} {t['kind']}: {t['text']}" for t in texts]
    y_labels = [wrap_label(r) for r in rows]
    x_labels = [f"{t['block']} {t['kind']}" for t in texts]
    same_block = np.equal.outer(blocks, blocks)
    cell_text = np.where(same_block, np.vectorize(lambda v: f"{v:.{DECIMALS}f}")(sims), "")
    hover = [[f"{rows[i]}<br>{rows[j]}" for j in range(len(rows))] for i in range(len(rows))]
    fig = go.Figure(
        go.Heatmap(
            z=sims,
            x=x_labels,
            y=y_labels,
            zmin=low,
            zmax=high,
            colorscale=rank_colorscale(compared_values(sims, blocks, anchors), low, high),
            text=cell_text,
            texttemplate="%{text}",
            textfont={"size": 9},
            hovertext=hover,
            hovertemplate=f"%{{hovertext}}<br>cosine %{{z:.{DECIMALS}f}}<extra></extra>",
            colorbar={"title": {"text": f"cosine<br>{low:.{DECIMALS}f}–{high:.{DECIMALS}f}"}},
        )
    )
    left, bottom = label_margins(y_labels, x_labels)
    fig.update_layout(
        title="Pooled cosine; the colours span each anchor's cosines with its own texts",
        height=max(700, LINE_PX * LABEL_LINES * len(texts) + bottom + 100),
        margin={"l": left, "b": bottom, "t": 60, "r": 20},
        font={"size": 12},
        xaxis={"tickangle": -60, "automargin": True},
        yaxis={"autorange": "reversed", "automargin": True},
    )
    return fit_width(fig, 1100)


def label_margins(y_labels: list[str], x_labels: list[str]) -> tuple[int, int]:
    """(left, bottom) margins in px that hold the longest row label line and the longest (slanted)
    column label: plotly's default 80 px cut the sentences off."""
    longest_line = max(len(line) for label in y_labels for line in label.split("<br>"))
    longest_column = max(len(label) for label in x_labels)
    return CHAR_PX * longest_line + 20, int(CHAR_PX * longest_column * 0.9) + 20


def heatmap(encoder, items: list[dict] | None = None):
    """A plotly heatmap of pooled cosines between every anchor, paraphrase and near-miss."""
    sims = cosine_matrix(encoder, [t["text"] for t in entries(items)])
    return heatmap_figure(sims, items)
