"""`make readme-tables`: the README's result tables, generated from the committed tables in figures/tables/.

Each generated table sits between two markers in README.md or docs/results.md (`DOCUMENTS`):

    <!-- table:separation from figures/tables/separation.csv by `make readme-tables` -->
    | ... |
    <!-- /table -->

and is rewritten from its CSV (written by the run's report, copied by `make figures`), so the numbers
in the README cannot drift from a run's. `--check` changes nothing and exits 1 when the README is not
what the tables give (tests/test_readme_tables.py runs it on the committed files).

A number quoted in prose is marked the same way, inline, and rewritten from one cell of a table:

    B − A = <!-- value:table1.csv metric=ndcg@10 drop +3 -->−0.009<!-- /value -->

(file, `column=value` filters that select exactly one row, the column, and the format: `3` three
decimals, `+3` with a sign, `p` a p-value, `s` the text as it is (a commit, a run folder); `m2` is
the mean of the rows the filters select, at two decimals, for tables with a row per seed), so the
README's reading of a run cannot keep an older run's numbers.

Numbers are rounded half up from their decimal text (0.725 -> 0.73), as a reader rounds; the minus
sign is U+2212. Which columns and rows each table shows is set here, and every table says where all
of its rows are.
"""

from __future__ import annotations

import argparse
import difflib
import math
import os
import re
import sys
from decimal import ROUND_HALF_UP, Decimal

import pandas as pd

from compsense.core.paths import resolve
from compsense.core.storage import read_csv, write_text
from compsense.data.family_names import PAPER_FAMILIES
from compsense.nearmiss.evaluation import parse_noise_name
from compsense.pipeline.report import TABLES_DIR
from compsense.verifiers.names import DEFAULT_TRAIN_DATA, with_train_data
from compsense.verifiers.rerank import ENCODER_ONLY, TRAINING_FREE, noise_level, regime_rank, variant_folders

MARKER = re.compile(
    r"^<!-- table:(?P<name>[A-Za-z0-9_-]+)(?P<rest>[^>]*)-->\n(?P<body>.*?)<!-- /table -->", re.S | re.M
)
DASH = "–"  # a cell with no number
VALUE = re.compile(
    r"<!-- value:(?P<file>[A-Za-z0-9_.-]+\.csv)(?P<filters>(?: [^\s=]+=\S+)*) (?P<column>\S+) (?P<fmt>m?\+?\d|p|s) -->"
    r"(?P<body>[^<]*)<!-- /value -->"
)

BACKBONE_LABELS = {
    "minilm-l6": "MiniLM-L6",
    "minilm-l12": "MiniLM-L12",
    "gte-small": "GTE-Small",
    "gte-modernbert-base": "GTE-ModernBERT-base",
    "tiny-bert": "tiny-bert",
}  # the paper's names
METRIC_LABELS = {"ndcg@10": "nDCG@10", "acc@1": "Acc@1", "mrr@10": "MRR@10", "recall@100": "Recall@100"}
ENCODER_LABELS = {"base": "Base", "A": "Model A", "B": "Model B"}
VERIFIER_LABELS = {"F0": "F0 mean", "F1": "F1 MaxSim", "F2": "F2 alignment", "F3": "F3 CNN", "F4": "F4 Transformer"}
VARIANT_NOTES = {"B-all": "all families", "C-identity": "control"}
CONTROLS = ("C-identity",)


class TableError(ValueError):
    """A README marker or a source table that cannot give a table; the message names the file and the fix."""


# ----------------------------------------------------------------------------------------------
# Numbers as the README writes them


def _decimal(value) -> Decimal | None:
    if value is None or (isinstance(value, float) and math.isnan(value)) or str(value).strip() in ("", "nan"):
        return None
    # separation cells are "mean ± std" (a pairwise one with "[low, high]" after it); this is the mean
    text = str(value).split("[")[0].split("±")[0].strip()
    return Decimal(repr(float(text)) if isinstance(value, float) else text)


def num(value, places: int = 3, sign: bool = False) -> str:
    """`value` rounded half up to `places` decimals ("–" when missing); `sign`: always a sign."""
    d = _decimal(value)
    if d is None:
        return DASH
    d = d.quantize(Decimal(1).scaleb(-places), rounding=ROUND_HALF_UP)
    text = f"{d:+f}" if sign else f"{d:f}"
    return text.replace("-", "−")


def pvalue(value) -> str:
    """A p-value with two significant digits; "1" at 1, "< 0.001" below it."""
    d = _decimal(value)
    if d is None:
        return DASH
    if d >= Decimal("0.995"):
        return "1"
    if d < Decimal("0.001"):
        return "< 0.001"
    return f"{d.quantize(Decimal(1).scaleb(d.adjusted() - 1), rounding=ROUND_HALF_UP):f}"


def mean_std(mean, std, places: int = 3) -> str:
    """ "mean ± std", or the mean alone when there is no std (one seed)."""
    return num(mean, places) if _decimal(std) is None else f"{num(mean, places)} ± {num(std, places)}"


def interval(delta, low, high) -> str:
    """ "+0.007 [−0.008, +0.022]"; the delta alone when there is no interval."""
    if _decimal(delta) is None:
        return DASH
    ci = f" [{num(low, sign=True)}, {num(high, sign=True)}]" if _decimal(low) is not None else ""
    return num(delta, sign=True) + ci


def markdown(header: list[str], rows: list[list[str]]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(cell.replace("|", "\\|") for cell in row) + " |" for row in rows]
    return "\n".join(lines)


# ----------------------------------------------------------------------------------------------
# The tables


def table1(df: pd.DataFrame) -> str:
    """Table 1: Base, A and B (mean ± std over seeds), B − A with its interval and Holm p, the paper's beside."""
    order = {m: i for i, m in enumerate(["ndcg@10", "acc@1"])}
    df = df.assign(_order=df.metric.map(order).fillna(len(order))).sort_values(["_order"], kind="stable")
    backbones = list(dict.fromkeys(df.backbone))
    rows = []
    for backbone in backbones:
        for r in df[df.backbone == backbone].itertuples():
            paper = (
                DASH
                if _decimal(r.paper_drop) is None
                else f"{num(r.paper_drop, sign=True)} ({num(r.paper_drop_pct, 1, sign=True)}%)"
            )
            drop = DASH if _decimal(r.drop) is None else f"{num(r.drop, sign=True)} ({num(r.drop_pct, 1, sign=True)}%)"
            if _decimal(getattr(r, "ci_low", None)) is not None:
                drop += f" [{num(r.ci_low, sign=True)}, {num(r.ci_high, sign=True)}]"
            rows.append(
                [
                    BACKBONE_LABELS.get(backbone, backbone),
                    METRIC_LABELS.get(r.metric, r.metric),
                    mean_std(r.base_mean, r.base_std),
                    mean_std(r.A_mean, r.A_std),
                    mean_std(r.B_mean, r.B_std),
                    drop,
                    pvalue(getattr(r, "p_holm", None)),
                    _seed_level(r),
                    num(r.paper_A),
                    num(r.paper_B),
                    paper,
                ]
            )
    return markdown(
        [
            "backbone",
            "metric",
            "Base",
            "Model A",
            "Model B",
            "B − A [95% CI]",
            "Holm p",
            "over seeds: paired t [95% CI], p; sign flips p (floor)",
            "paper A",
            "paper B",
            "paper B − A",
        ],
        rows,
    )


def _seed_level(r) -> str:
    """The seed-level tests of Table 1 (`compsense.core.stats.seed_level_test`), or a dash before they existed."""
    if _decimal(getattr(r, "t_p", None)) is None:
        return DASH
    holm = "" if _decimal(getattr(r, "t_p_holm", None)) is None else f" (Holm {pvalue(r.t_p_holm)})"
    return (
        f"[{num(r.t_ci_low, sign=True)}, {num(r.t_ci_high, sign=True)}], p {pvalue(r.t_p)}{holm}; "
        f"{pvalue(r.perm_p)} (≥ {pvalue(r.perm_p_floor)})"
    )


def variants(df: pd.DataFrame) -> str:
    """Every variant against Model A: share, retrieval rows, seeds, nDCG@10, − A with its interval, Holm p
    and the held-out near-miss AUC gain. Bold: the multi-seed points of the dose-response curve."""
    several = df.backbone.nunique() > 1
    rows = []
    for r in df.itertuples():
        label = r.variant + (f" ({VARIANT_NOTES[r.variant]})" if r.variant in VARIANT_NOTES else "")
        reference = _decimal(getattr(r, "mean_delta", None)) is None
        if r.n_seeds > 1 and not reference and r.variant not in CONTROLS:
            label = f"**{r.variant}**" + label[len(r.variant) :]
        share = DASH if _decimal(r.structural_share) is None else f"{float(r.structural_share):g}"
        gain = getattr(r, "auc_gain", None)
        delta = interval(getattr(r, "mean_delta", None), getattr(r, "ci_low", None), getattr(r, "ci_high", None))
        rows.append(
            ([BACKBONE_LABELS.get(r.backbone, r.backbone)] if several else [])
            + [
                label,
                share,
                f"{int(r.retrieval_rows):,}",
                str(int(r.n_seeds)),
                mean_std(r.mean, r.std),
                delta,
                pvalue(getattr(r, "p_holm", None)),
                DASH if reference else num(gain, 2, sign=True),
            ]
        )
    metric = METRIC_LABELS.get(df.metric.iloc[0], df.metric.iloc[0]) if "metric" in df and len(df) else "nDCG@10"
    return markdown(
        (["backbone"] if several else [])
        + [
            "variant",
            "share",
            "retrieval rows",
            "seeds",
            metric,
            "− A [95% CI]",
            "Holm p",
            "held-out near-miss AUC gain",
        ],
        rows,
    )


# (README heading, column of separation.csv, collapse equal values): the near-miss AUCs are always shown
# per scorer; a check (self-match, copy > near-miss) shows one value when every scorer of the row agrees.
SEPARATION_COLUMNS = (
    [("held-out all", "negatives-heldout auc", False)]
    + [(f, f"negatives-heldout:{f} auc", False) for f in PAPER_FAMILIES]
    + [
        ("pairwise (all)", "negatives-heldout pairwise_accuracy", False),
        ("self-match", "negatives-heldout self_match", True),
        ("copy > nm", "negatives-heldout copy_vs_near_miss", True),
        ("mean nm score", "negatives-heldout mean_near_miss", False),  # the paper's Figure 3 metric
        ("mean para score", "negatives-heldout mean_paraphrase", False),
        ("SugarCrepe", "sugarcrepe auc", False),
        ("CondaQA", "condaqa auc", False),
    ]
)


def _mean_std_cell(value) -> str:
    """A separation cell: "mean ± std" over seeds at 2 decimals, the mean alone when the spread rounds
    to 0; a pairwise cell's interval ("... [low, high]") follows it at 2 decimals."""
    text, _, bracket = str(value).partition("[")
    interval = ""
    if bracket:
        low, high = (part.strip() for part in bracket.rstrip("] ").split(","))
        interval = f" [{num(low, 2)}, {num(high, 2)}]"
    if "±" not in text:
        return num(text.strip(), 2) + interval
    mean, std = (part.strip() for part in text.split("±"))
    spread = num(std, 2)
    return (num(mean, 2) if spread in ("0.00", DASH) else f"{num(mean, 2)} ± {spread}") + interval


def _parameter_count(rows: pd.DataFrame) -> str:
    """ ": 940,065 parameters" when the rows (one verifier at one size) agree on a count, else "": with
    two sizes in the table, the label says what each size is."""
    counts = {str(v) for v in rows.get("parameters", pd.Series(dtype=object)) if str(v).strip()}
    if len(counts) != 1:
        return ""
    return f": {int(float(counts.pop())):,} parameters"


def _noise_groups(noise: pd.DataFrame) -> list:
    """One row per noise level ("F1 MaxSim frozen + 2x noise (control)"), the first of each scorer's rows
    (the same control under every training set), in increasing noise."""
    if noise.empty:
        return []
    first = noise.drop_duplicates("scorer")
    first = first.assign(_m=first.scorer.map(lambda s: parse_noise_name(s)[1])).sort_values("_m", kind="stable")
    groups = []
    for scorer, multiple in zip(first.scorer, first._m, strict=True):
        base = parse_noise_name(scorer)[0]
        name, _, regime = base.partition("-")
        label = f"{VERIFIER_LABELS.get(name, name)} {regime} + {multiple:g}x noise (control)"
        groups.append((label.replace("  ", " "), first[first.scorer == scorer].drop(columns="_m")))
    return groups


def separation(df: pd.DataFrame) -> str:
    """Pooled cosine (Base / A / B) and each verifier frozen / end2end, per training set. Frozen F0-F2
    have no trained parameters of their own (F2's λ and τ are fixed): one function whatever the
    training data, shown under the first training set only; end-to-end, their encoder is fine-tuned
    on the data, so those rows are shown under every training set. Every row is in the CSV."""
    df = df.astype(object).where(df.notna(), "")
    for col in ("regime", "train_data", "size"):
        df[col] = df[col].astype(str)
    groups = []
    pooled = df[df.scorer.str.startswith("cosine ")]
    if not pooled.empty:
        names = [s.removeprefix("cosine ").removeprefix("Model ") for s in pooled.scorer]
        groups.append((f"pooled cosine {' / '.join(names)}", pooled))
    verifiers = df[~df.scorer.str.startswith("cosine ")]
    # The noise control (frozen MaxSim plus seeded noise) learns nothing: one row per noise level,
    # after the frozen F1 it is built on, whatever training set the run also scored.
    is_noise = verifiers.scorer.map(lambda s: parse_noise_name(s) is not None)
    noise, verifiers = verifiers[is_noise], verifiers[~is_noise]
    train_sets = list(dict.fromkeys(verifiers.train_data))
    sizes = list(dict.fromkeys(verifiers["size"]))
    for train_data in train_sets:
        for size in sizes:
            for scorer in sorted(set(verifiers.scorer)):
                rows = verifiers[
                    (verifiers.scorer == scorer) & (verifiers.train_data == train_data) & (verifiers["size"] == size)
                ]
                if train_data != train_sets[0] and scorer in TRAINING_FREE:
                    rows = rows[rows.regime != "frozen"]  # the same function as under the first set
                if rows.empty:
                    continue
                rows = rows.sort_values("regime", key=regime_rank, kind="stable")
                # F0-F2 have one size: their label names none
                sized = len(sizes) > 1 and scorer not in TRAINING_FREE
                what = train_data + (f", {size}{_parameter_count(rows)}" if sized else "")
                groups.append((f"{VERIFIER_LABELS.get(scorer, scorer)} {' / '.join(rows.regime)} ({what})", rows))
                if scorer == "F1" and not noise.empty:
                    groups += _noise_groups(noise)
                    noise = noise.iloc[:0]
    groups += _noise_groups(noise)  # no F1 row to follow
    out = []
    for label, rows in groups:
        seeds = [str(s) for s in rows["seeds"]] if "seeds" in rows else []
        if seeds and not label.startswith("pooled"):
            label = (
                label[:-1]
                + f"; {' / '.join(dict.fromkeys(seeds)) if len(set(seeds)) == 1 else ' / '.join(seeds)} seeds)"
            )
        cells = [label]
        for _, column, collapse in SEPARATION_COLUMNS:
            values = [_mean_std_cell(v) for v in rows[column]] if column in rows else [DASH] * len(rows)
            same = len(set(values)) == 1 and (collapse or values[0] == DASH)
            cells.append(values[0] if same else " / ".join(values))
        out.append(cells)
    return markdown(["scorer (train data)"] + [heading for heading, _, _ in SEPARATION_COLUMNS], out)


def rerank(df: pd.DataFrame) -> str:
    """Each encoder alone and each verifier reranking its top K: the metric and the gain over Base."""
    metric = df.columns[df.columns.get_loc("weight") + 1]  # rerank.csv: ..., k, weight, <metric>, mean_delta, ...
    reranked = df[df.regime != ENCODER_ONLY]
    k = int(reranked.k.max()) if not reranked.empty else None
    # Verifiers of several notebook-04 variants: each label says its training data and size.
    folders = variant_folders(df)
    several = folders[folders != ""].nunique() > 1
    rows = []
    for r, folder in zip(df.to_dict("records"), folders, strict=True):
        if r["regime"] == ENCODER_ONLY:
            label, regime = ENCODER_LABELS.get(r["variant"], r["variant"]), "encoder only"
        else:
            label, regime = VERIFIER_LABELS.get(r["verifier"], r["verifier"]), r["regime"]
            noise = noise_level(r["variant"])
            if noise:  # the noise control: frozen MaxSim plus noise, not F1 itself
                label += f" + {noise[1]:g}x noise (control)"
            if several and folder:
                label += f" ({folder.replace('-', ', ')})"
        rows.append(
            [
                label,
                regime,
                num(r[metric]),
                interval(r.get("mean_delta"), r.get("ci_low"), r.get("ci_high")),
                pvalue(r.get("p_holm")),
            ]
        )
    at = f" (top {k} reranked)" if k else ""
    return markdown(["method", "regime", f"{METRIC_LABELS.get(metric, metric)}{at}", "− Base [95% CI]", "Holm p"], rows)


PURITY_CORPORA = {"mrpc": "MRPC", "stsb": "STS-B", "coco": "COCO captions", "user": "your sentences"}
PURITY_SPLITS = {"train": "train", "test": "held out"}


def purity(df: pd.DataFrame) -> str:
    """The paper's families x (corpus, split): pure / pairs (purity), from notebook 01's purity table."""
    df = df[df.family.isin(PAPER_FAMILIES)]
    columns = [(c, s) for c in PURITY_CORPORA for s in PURITY_SPLITS if ((df.source == c) & (df.split == s)).any()]
    rows = []
    for family in [f for f in PAPER_FAMILIES if f in set(df.family)]:
        cells = []
        for corpus, split in columns:
            r = df[(df.family == family) & (df.source == corpus) & (df.split == split)]
            if r.empty:
                cells.append(DASH)
                continue
            r = r.iloc[0]
            cells.append(f"{int(r.pure):,} / {int(r.pairs):,} ({100 * float(r.purity):.1f}%)")
        rows.append([family, *cells])
    header = ["family", *[f"{PURITY_CORPORA[c]} {PURITY_SPLITS[s]}" for c, s in columns]]
    return markdown(header, rows)


GEOMETRY_VARIANTS = {"base": "Base", "A": "Model A", "B": "Model B"}


def geometry(df: pd.DataFrame) -> str:
    """Notebook 03's separation under pooled cosine, from the report's all_geometry table: per family
    (the paper's three, their pool "all", the others, then SugarCrepe's swap subsets) the near-miss AUC
    and the within-anchor pairwise accuracy with its interval, Base / A / B (mean over seeds)."""

    def cell(variant, dataset, family, metric):
        r = df[(df.variant == variant) & (df.dataset == dataset) & (df.family == family) & (df.metric == metric)]
        return None if r.empty else float(r["mean"].mean())

    variants = [v for v in GEOMETRY_VARIANTS if v in set(df.variant)]
    own = set(df[df.dataset == "negatives"].family)
    families = [("negatives", f) for f in (*PAPER_FAMILIES, "all") if f in own]
    families += [("negatives", f) for f in sorted(own - set(PAPER_FAMILIES) - {"all"})]
    families += [("sugarcrepe", f) for f in ("swap_att", "swap_obj") if f in set(df[df.dataset == "sugarcrepe"].family)]
    rows = []
    for dataset, family in families:
        label = {"all": "the three pooled"}.get(family, family)
        label = f"SugarCrepe {family}" if dataset == "sugarcrepe" else label
        label += " (trained)" if family in PAPER_FAMILIES else ""
        aucs = [num(cell(v, dataset, family, "auc"), 2) for v in variants]
        pairwise = []
        for v in variants:
            acc = cell(v, dataset, family, "pairwise_accuracy")
            low, high = (cell(v, dataset, family, f"pairwise_accuracy_ci_{end}") for end in ("low", "high"))
            ci = f" [{num(low, 2)}, {num(high, 2)}]" if low is not None else ""
            pairwise.append(DASH if acc is None else num(acc, 2) + ci)
        rows.append([label, *aucs, *pairwise])
    header = ["family", *[f"AUC {GEOMETRY_VARIANTS[v]}" for v in variants]]
    header += [f"pairwise {GEOMETRY_VARIANTS[v]} [95% CI]" for v in variants]
    return markdown(header, rows)


BUDGET_METRICS = {
    "auc": "near-miss AUC",
    "pairwise_accuracy": "pairwise (all)",
    "self_match": "self-match",
    "copy_vs_near_miss": "copy > nm",
    "mean_near_miss": "mean nm score",
    "mean_paraphrase": "mean para score",
    "noise_excess": "above the noise line",
}


def budget(df: pd.DataFrame) -> str:
    """The verifier budget curve (notebook 04's `verifiers.budget.budget_table`): one row per scorer x
    regime x training rows x size x recipe x budget, each check's mean over seeds with its seed-level 95%
    interval where there are several seeds. Budget 0 is frozen MaxSim (nothing learned) and its noise
    control, the line every trained point is read against: it trains on no rows, so where several rows
    kinds' pieces scored it, it is shown once (its `model_b` rows). A point trained on other rows than the
    authors' `model_b` (e.g. `balanced`) says so; per-family columns stay in the CSV."""
    df = df.astype({"budget": int, "seeds": int})
    df["regime"] = df["regime"].fillna("").astype(str)
    df = with_train_data(df).astype({"train_data": str})
    line = df.budget == 0
    first = df[line].sort_values("train_data", key=lambda t: t != DEFAULT_TRAIN_DATA, kind="stable")
    first = first.drop_duplicates(["scorer", "regime", "size", "recipe", "metric"])
    df = pd.concat([first, df[~line]], ignore_index=True)
    keys = ["scorer", "regime", "train_data", "size", "recipe", "budget"]

    def label(scorer, regime, train_data, size, recipe, budget) -> str:
        noise = parse_noise_name(scorer)
        if noise is not None:
            name, _, base_regime = noise[0].partition("-")
            return f"{VERIFIER_LABELS.get(name, name)} {base_regime} + {noise[1]:g}x noise (control)"
        text = f"{VERIFIER_LABELS.get(scorer, scorer)} {regime}".strip()
        notes = [f"{size} size"] if scorer in ("F3", "F4") and isinstance(size, str) and size else []
        if budget > 0 and train_data != DEFAULT_TRAIN_DATA:
            notes.insert(0, f"`{train_data}` rows")
        if recipe == "authors":
            notes.append("the authors' whole recipe")
        return text + (f" ({', '.join(notes)})" if notes else "")

    def order(row) -> tuple:
        noise = parse_noise_name(row["scorer"])
        size = row["size"] if isinstance(row["size"], str) else ""
        return (
            row["budget"] > 0,
            noise[1] if noise else 0.0,
            row["scorer"],
            row["regime"] != "frozen",  # end-to-end points after the frozen curve they are read beside
            size,
            row["recipe"] != "equal",
            row["train_data"] != DEFAULT_TRAIN_DATA,  # other rows after the authors' at each point
            row["train_data"],
            row["budget"],
        )

    points = df.drop_duplicates(keys).copy()
    points["_order"] = points.apply(order, axis=1)
    rows = []
    for _, point in points.sort_values("_order", kind="stable").iterrows():
        sel = df[(df[keys].astype(str) == point[keys].astype(str)).all(axis=1)].set_index("metric")
        cells = []
        for metric in BUDGET_METRICS:
            if metric not in sel.index or (metric == "noise_excess" and point["budget"] == 0):
                cells.append(DASH)  # budget 0 is the line itself: its distance to it says nothing
                continue
            r = sel.loc[metric]
            places, sign = (3, True) if metric == "noise_excess" else (2, False)
            ci = ""
            if r["seeds"] > 1 and _decimal(r["ci_low"]) is not None:
                ci = f" [{num(r['ci_low'], places, sign)}, {num(r['ci_high'], places, sign)}]"
            cells.append(num(r["mean"], places, sign) + ci)
        seeds = int(sel["seeds"].max())
        rows.append([label(*point[keys]), f"{point['budget']:,}", *cells, str(seeds)])
    return markdown(["scorer", "triplets", *BUDGET_METRICS.values(), "seeds"], rows)


def provenance(df: pd.DataFrame) -> str:
    """Which command, run and commit made each stage's results; a row of a piece published on its own
    (`publish --piece`) names the files it gave."""
    df = df.copy()
    if "publishes" not in df:
        df["publishes"] = ""
    rows = [
        [
            f"{str(r['stage']).zfill(2)} `{r['notebook']}`",  # the CSV reads "01" back as 1
            f"`{r['command']}`" + (f" (only {r['publishes']})" if r["publishes"] else ""),
            f"`{r['run']}`",
            f"`{r['commit']}`",
            f"{float(r['minutes']):.0f} min",
        ]
        for r in df.fillna("").to_dict("records")
    ]
    return markdown(["stage", "made by", "run", "commit", "wall time (2 cores)"], rows)


TABLES = {
    "purity": ("purity.csv", purity),
    "geometry": ("all_geometry.csv", geometry),
    "table1": ("table1.csv", table1),
    "variants": ("variants.csv", variants),
    "separation": ("separation.csv", separation),
    "rerank": ("rerank.csv", rerank),
    "provenance": ("provenance.csv", provenance),
    "budget": ("verifier_budget.csv", budget),
}


# ----------------------------------------------------------------------------------------------
# The README


def render(name: str, tables_dir: str | os.PathLike = f"figures/{TABLES_DIR}") -> str:
    """README table `name` from its CSV in `tables_dir`."""
    if name not in TABLES:
        raise TableError(f"no README table named `{name}`; the tables are {', '.join(TABLES)}")
    file, make = TABLES[name]
    path = resolve(tables_dir) / file
    if not path.exists():
        raise TableError(
            f"{path}: missing; README table `{name}` is generated from it. Fix: run the notebook that "
            "writes it, then `make figures` (or restore the file from git)."
        )
    try:
        return make(read_csv(path))
    except (KeyError, AttributeError, ValueError) as err:
        raise TableError(
            f"{path}: cannot make README table `{name}` ({type(err).__name__}: {err}). Fix: publish a "
            "run's tables again with `make figures`; the file was edited or comes from an older "
            "report."
        ) from None


def value(file: str, filters: dict, column: str, fmt: str, tables_dir=f"figures/{TABLES_DIR}", where="") -> str:
    """One cell of `file` in `tables_dir`, in the row `filters` select (exactly one), formatted by
    `fmt`: "3" three decimals, "+3" three with a sign, "p" a p-value (`pvalue`), "s" the text; "m2" ("m+2"): the
    mean of `column` over every row the filters select (one per seed), two decimals."""
    path = resolve(tables_dir) / file
    said = " ".join(f"{k}={v}" for k, v in filters.items())
    if not path.exists():
        raise TableError(f"{where}: a value is read from {path}, which is missing. Fix: `make figures`")
    df = pd.read_csv(path, dtype=str, keep_default_na=False)
    unknown = [c for c in (*filters, column) if c not in df.columns]
    if unknown:
        raise TableError(
            f"{where}: {path} has no column {unknown[0]!r} (value `{said} {column}`); it has {list(df.columns)}"
        )
    rows = df
    for key, wanted in filters.items():
        rows = rows[rows[key] == wanted]
    mean = fmt.startswith("m")
    if len(rows) != 1 and not (mean and len(rows)):
        raise TableError(
            f"{where}: `{said}` selects {len(rows)} rows of {path}, not one. Fix: add or correct a "
            "column=value filter in the marker" + ("" if len(rows) else ", or a format `m...` for the mean of several")
        )
    cell = repr(float(pd.to_numeric(rows[column]).mean())) if mean else rows[column].iloc[0]
    fmt = fmt.lstrip("m")
    if fmt == "s":
        return str(cell).replace("<", "&lt;")
    if fmt == "p":
        return pvalue(cell)
    return num(cell, int(fmt.lstrip("+")), sign=fmt.startswith("+"))


def update(text: str, tables_dir: str | os.PathLike = f"figures/{TABLES_DIR}", where: str = "README.md") -> str:
    """`text` with every marked table, and every marked value in prose, rewritten from its CSV."""

    def at(document: str, position: int) -> str:
        return f"{where}, line {document.count(chr(10), 0, position) + 1}"

    for opened in re.finditer(r"^<!-- table:", text, re.M):  # a marker starts a line; a mention in prose does not
        if not MARKER.match(text, opened.start()):
            raise TableError(
                f"{at(text, opened.start())}: a `<!-- table:NAME ... -->` marker without its closing "
                "`<!-- /table -->` (or not followed by a new line). Fix: add the closing marker."
            )
    for opened in re.finditer(r"<!-- value:", text):
        if not VALUE.match(text, opened.start()):
            raise TableError(
                f"{at(text, opened.start())}: a `<!-- value:FILE.csv [column=value ...] COLUMN FORMAT -->` marker "
                "that does not parse, or without its closing `<!-- /value -->` on the same line. Fix: write it as "
                "the module's docstring shows"
            )

    def one(match: re.Match) -> str:
        head = match.group(0)[: match.start("body") - match.start()]
        return f"{head}{render(match.group('name'), tables_dir)}\n<!-- /table -->"

    def inline(match: re.Match) -> str:
        filters = dict(f.split("=", 1) for f in match.group("filters").split())
        got = value(
            match.group("file"), filters, match.group("column"), match.group("fmt"), tables_dir, at(text, match.start())
        )
        return match.group(0)[: match.start("body") - match.start()] + got + "<!-- /value -->"

    # values first, on `text` itself, so an error names the document's own line (a table rewritten above
    # a value would move it); no value marker sits inside a generated table
    return MARKER.sub(one, VALUE.sub(inline, text))


DOCUMENTS = ("README.md", "docs/results.md")  # the files whose marked tables are generated


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python scripts/readme_tables.py",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--readme", nargs="+", default=list(DOCUMENTS), help="the documents to rewrite")
    parser.add_argument("--tables", default=f"figures/{TABLES_DIR}", help="the committed tables (figures/tables)")
    parser.add_argument("--check", action="store_true", help="change nothing; exit 1 when a document differs")
    args = parser.parse_args(argv)
    return max(_one_document(name, args.tables, args.check) for name in args.readme)


def _one_document(name: str, tables: str, check: bool) -> int:
    path = resolve(name)
    text = path.read_text(encoding="utf-8")
    try:
        new = update(text, tables, where=name)
    except TableError as err:
        print(f"readme-tables: {err}", file=sys.stderr)
        return 2
    if new == text:
        print(f"{name}: its tables are those of {tables}/ already")
        return 0
    if check:
        sys.stdout.writelines(
            difflib.unified_diff(text.splitlines(True), new.splitlines(True), name, f"{name} from {tables}/")
        )
        print(f"{name}: the tables differ from {tables}/. Fix: make readme-tables", file=sys.stderr)
        return 1
    write_text(path, new)
    print(
        f"{name}: {len(MARKER.findall(text))} table(s) and {len(VALUE.findall(text))} value(s) rewritten from {tables}/"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
