"""`make readme-tables`: the result tables and quoted numbers of README.md and docs/results.md, rewritten from
the committed tables in figures/tables/ so the documents cannot keep an older run's numbers. A table sits
between markers that start lines, a number quoted in prose between inline ones:

    <!-- table:separation from figures/tables/separation.csv by `make readme-tables` -->
    | ... |
    <!-- /table -->
    B − A = <!-- value:table1.csv metric=ndcg@10 drop +3 -->−0.009<!-- /value -->

A value names its file, `column=value` filters that select exactly one row, the column, and the format: `3`
three decimals, `+3` with a sign, `p` a p-value, `s` the text as it is (a commit, a run folder); `m2` the mean
of the rows the filters select at two decimals (a row per seed). Numbers are rounded half up from their
decimal text (0.725 -> 0.73), the minus sign is U+2212. `--check` changes nothing and exits 1 when a
document is not what the tables give.
"""

from __future__ import annotations

import argparse
import difflib
import functools
import itertools
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
VALUE = re.compile(
    r"<!-- value:(?P<file>[A-Za-z0-9_.-]+\.csv)(?P<filters>(?: [^\s=]+=\S+)*) (?P<column>\S+) (?P<fmt>m?\+?\d|p|s) -->"
    r"(?P<body>[^<]*)<!-- /value -->"
)
DASH = "–"  # a cell with no number
TABLES_AT = f"figures/{TABLES_DIR}"
DOCUMENTS = ("README.md", "docs/results.md")  # the files whose marked tables are generated

# the paper's names
BACKBONE_LABELS = {
    "minilm-l6": "MiniLM-L6",
    "minilm-l12": "MiniLM-L12",
    "gte-small": "GTE-Small",
    "gte-modernbert-base": "GTE-ModernBERT-base",
}
METRIC_LABELS = {"ndcg@10": "nDCG@10", "acc@1": "Acc@1", "mrr@10": "MRR@10", "recall@100": "Recall@100"}
ENCODER_LABELS = {"base": "Base", "A": "Model A", "B": "Model B"}
VERIFIER_LABELS = {"F0": "F0 mean", "F1": "F1 MaxSim", "F2": "F2 alignment", "F3": "F3 CNN", "F4": "F4 Transformer"}
VARIANT_NOTES = {"B-all": "all families", "C-identity": "control"}


class TableError(ValueError):
    """A README marker or a source table that cannot give a table; the message names the file and the fix."""


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
    return (f"{d:+f}" if sign else f"{d:f}").replace("-", "−")


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


def bracket(low, high, places: int = 3, sign: bool = True) -> str:
    return f"[{num(low, places, sign)}, {num(high, places, sign)}]"


def mean_std(mean, std) -> str:
    return num(mean) if _decimal(std) is None else f"{num(mean)} ± {num(std)}"


def interval(delta, low, high) -> str:
    """ "+0.007 [−0.008, +0.022]"; the delta alone when there is no interval."""
    if _decimal(delta) is None:
        return DASH
    return num(delta, sign=True) + (f" {bracket(low, high)}" if _decimal(low) is not None else "")


def _percent(delta, pct) -> str:
    return DASH if _decimal(delta) is None else f"{num(delta, sign=True)} ({num(pct, 1, sign=True)}%)"


def _noise_label(scorer) -> str | None:
    """ "F1 MaxSim frozen + 2x noise (control)" for the noise control "F1-frozen+noise2x"; None for another."""
    noise = parse_noise_name(scorer)
    if noise is None:
        return None
    name, _, regime = noise[0].partition("-")
    return " ".join(filter(None, [VERIFIER_LABELS.get(name, name), regime, f"+ {noise[1]:g}x noise (control)"]))


def markdown(headers: list[str], rows: list[list[str]]) -> str:
    """A markdown table: `headers` its first line's cells, `rows` the others'."""
    lines = ["| " + " | ".join(headers) + " |", "|" + "---|" * len(headers)]
    lines += ["| " + " | ".join(cell.replace("|", "\\|") for cell in row) + " |" for row in rows]
    return "\n".join(lines)


def table1(df: pd.DataFrame) -> str:
    """Table 1: Base, A and B (mean ± std over seeds), B − A with its interval and Holm p, the seed-level
    tests (`compsense.core.stats.seed_level_test`; a dash before they existed), the paper's beside."""
    df = df.assign(_order=df.metric.map({"ndcg@10": 0, "acc@1": 1}).fillna(2)).sort_values(["_order"], kind="stable")
    rows = []
    for backbone in dict.fromkeys(df.backbone):
        for r in df[df.backbone == backbone].itertuples():
            paper, drop, seeds = _percent(r.paper_drop, r.paper_drop_pct), _percent(r.drop, r.drop_pct), DASH
            if _decimal(getattr(r, "ci_low", None)) is not None:
                drop += f" {bracket(r.ci_low, r.ci_high)}"
            means = [mean_std(r.base_mean, r.base_std), mean_std(r.A_mean, r.A_std), mean_std(r.B_mean, r.B_std)]
            if _decimal(getattr(r, "t_p", None)) is not None:
                holm = "" if _decimal(getattr(r, "t_p_holm", None)) is None else f" (Holm {pvalue(r.t_p_holm)})"
                seeds = f"{bracket(r.t_ci_low, r.t_ci_high)}, p {pvalue(r.t_p)}{holm}; "
                seeds += f"{pvalue(r.perm_p)} (≥ {pvalue(r.perm_p_floor)})"
            row = [BACKBONE_LABELS.get(backbone, backbone), METRIC_LABELS.get(r.metric, r.metric), *means, drop]
            rows.append([*row, pvalue(getattr(r, "p_holm", None)), seeds, num(r.paper_A), num(r.paper_B), paper])
    seeds = "over seeds: paired t [95% CI], p; sign flips p (floor)"
    return markdown(
        ["backbone", "metric", "Base", "Model A", "Model B", "B − A [95% CI]", "Holm p", seeds]
        + ["paper A", "paper B", "paper B − A"],
        rows,
    )


def variants(df: pd.DataFrame) -> str:
    """Every variant against Model A: share, retrieval rows, seeds, nDCG@10, − A with its interval, Holm p
    and the held-out near-miss AUC gain. Bold: the multi-seed points of the dose-response curve."""
    several = df.backbone.nunique() > 1
    rows = []
    for r in df.itertuples():
        delta = getattr(r, "mean_delta", None)
        reference = _decimal(delta) is None
        label = r.variant + (f" ({VARIANT_NOTES[r.variant]})" if r.variant in VARIANT_NOTES else "")
        if r.n_seeds > 1 and not reference and r.variant != "C-identity":  # bold; the control is not a point
            label = f"**{r.variant}**" + label[len(r.variant) :]
        share = DASH if _decimal(r.structural_share) is None else f"{float(r.structural_share):g}"
        row = [label, share, f"{int(r.retrieval_rows):,}", str(int(r.n_seeds)), mean_std(r.mean, r.std)]
        row += [interval(delta, getattr(r, "ci_low", None), getattr(r, "ci_high", None))]
        row += [pvalue(getattr(r, "p_holm", None)), DASH if reference else num(getattr(r, "auc_gain", None), 2, True)]
        rows.append(([BACKBONE_LABELS.get(r.backbone, r.backbone)] if several else []) + row)
    metric = METRIC_LABELS.get(df.metric.iloc[0], df.metric.iloc[0]) if "metric" in df and len(df) else "nDCG@10"
    headers = ["variant", "share", "retrieval rows", "seeds", metric, "− A [95% CI]", "Holm p"]
    return markdown((["backbone"] if several else []) + headers + ["held-out near-miss AUC gain"], rows)


CHECKS = {  # a near-miss check: its README heading, in the separation table and the budget curve
    "pairwise_accuracy": "pairwise (all)",
    "self_match": "self-match",
    "copy_vs_near_miss": "copy > nm",
    "mean_near_miss": "mean nm score",  # the paper's Figure 3 metric
    "mean_paraphrase": "mean para score",
}
SEPARATION_COLUMNS = {  # README heading: column of separation.csv
    "held-out all": "negatives-heldout auc",
    **{f: f"negatives-heldout:{f} auc" for f in PAPER_FAMILIES},
    **{heading: f"negatives-heldout {check}" for check, heading in CHECKS.items()},
    "SugarCrepe": "sugarcrepe auc",
    "CondaQA": "condaqa auc",
}
# checks shown as one value when every scorer of a row agrees; AUCs never
COLLAPSED = (CHECKS["self_match"], CHECKS["copy_vs_near_miss"])


def _mean_std_cell(value) -> str:
    """A separation cell: "mean ± std" over seeds at 2 decimals, the mean alone when the spread rounds
    to 0; a pairwise cell's interval ("... [low, high]") follows it at 2 decimals."""
    text, _, ci = str(value).partition("[")
    if ci:
        low, high = ci.rstrip("] ").split(",")
        ci = " " + bracket(low, high, 2, False)
    mean, std = text.split("±") if "±" in text else (text, None)
    spread = num(std, 2)
    return (num(mean, 2) if spread in ("0.00", DASH) else f"{num(mean, 2)} ± {spread}") + ci


def separation(df: pd.DataFrame) -> str:
    """Pooled cosine (Base / A / B) and each verifier frozen / end2end, per training set and size. Frozen F0-F2
    learn nothing (F2's λ and τ are fixed): shown under the first training set only. The noise control (frozen
    MaxSim plus seeded noise) learns nothing either: a row per noise level, after frozen F1."""
    df = df.astype(object).where(df.notna(), "")
    for column in ("regime", "train_data", "size"):
        df[column] = df[column].astype(str)
    cosine = df.scorer.str.startswith("cosine ")
    names = " / ".join(s.removeprefix("cosine ").removeprefix("Model ") for s in df[cosine].scorer)
    groups = [(f"pooled cosine {names}", df[cosine])] if cosine.any() else []
    verifiers = df[~cosine]
    is_noise = verifiers.scorer.map(lambda s: parse_noise_name(s) is not None)
    noise, verifiers = verifiers[is_noise], verifiers[~is_noise]
    levels = sorted(dict.fromkeys(noise.scorer), key=lambda s: parse_noise_name(s)[1])
    noise_rows = [(_noise_label(s), noise[noise.scorer == s].iloc[:1]) for s in levels]
    train_sets, sizes = list(dict.fromkeys(verifiers.train_data)), list(dict.fromkeys(verifiers["size"]))
    for train_data, size, scorer in itertools.product(train_sets, sizes, sorted(set(verifiers.scorer))):
        rows = verifiers[
            (verifiers.scorer == scorer) & (verifiers.train_data == train_data) & (verifiers["size"] == size)
        ]
        if train_data != train_sets[0] and scorer in TRAINING_FREE:
            rows = rows[rows.regime != "frozen"]  # the same function as under the first set
        if rows.empty:
            continue
        rows = rows.sort_values("regime", key=regime_rank, kind="stable")
        what = train_data
        if len(sizes) > 1 and scorer not in TRAINING_FREE:  # F0-F2 have one size: their label names none
            counts = {str(v) for v in rows.get("parameters", []) if str(v).strip()}  # one verifier at one size
            what += f", {size}" + (f": {int(float(counts.pop())):,} parameters" if len(counts) == 1 else "")
        groups.append((f"{VERIFIER_LABELS.get(scorer, scorer)} {' / '.join(rows.regime)} ({what})", rows))
        if scorer == "F1":
            groups, noise_rows = groups + noise_rows, []
    out = []
    for label, rows in groups + noise_rows:  # noise rows left: no F1 row to follow
        seeds = [str(s) for s in rows["seeds"]] if "seeds" in rows else []
        if seeds and not label.startswith("pooled"):
            label = label[:-1] + f"; {seeds[0] if len(set(seeds)) == 1 else ' / '.join(seeds)} seeds)"
        cells = [label]
        for heading, column in SEPARATION_COLUMNS.items():
            values = [_mean_std_cell(v) for v in rows[column]] if column in rows else [DASH] * len(rows)
            same = len(set(values)) == 1 and (heading in COLLAPSED or values[0] == DASH)
            cells.append(values[0] if same else " / ".join(values))
        out.append(cells)
    return markdown(["scorer (train data)", *SEPARATION_COLUMNS], out)


def rerank(df: pd.DataFrame) -> str:
    """Each encoder alone and each verifier reranking its top K: the metric and the gain over Base. With
    verifiers of several notebook-04 variants, each label says its training data and size."""
    metric = df.columns[df.columns.get_loc("weight") + 1]  # rerank.csv: ..., k, weight, <metric>, mean_delta, ...
    reranked = df[df.regime != ENCODER_ONLY]
    k = int(reranked.k.max()) if not reranked.empty else None
    folders = variant_folders(df)
    several = folders[folders != ""].nunique() > 1
    rows = []
    for r, folder in zip(df.to_dict("records"), folders, strict=True):
        if r["regime"] == ENCODER_ONLY:
            label, regime = ENCODER_LABELS.get(r["variant"], r["variant"]), "encoder only"
        else:
            label, regime = VERIFIER_LABELS.get(r["verifier"], r["verifier"]), r["regime"]
            if noise := noise_level(r["variant"]):  # the noise control: frozen MaxSim plus noise, not F1 itself
                label += f" + {noise[1]:g}x noise (control)"
            if several and folder:
                label += f" ({folder.replace('-', ', ')})"
        delta = interval(r.get("mean_delta"), r.get("ci_low"), r.get("ci_high"))
        rows.append([label, regime, num(r[metric]), delta, pvalue(r.get("p_holm"))])
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
        rows.append([family])
        for corpus, split in columns:
            r = df[(df.family == family) & (df.source == corpus) & (df.split == split)]
            r = None if r.empty else r.iloc[0]
            rows[-1].append(DASH if r is None else f"{int(r.pure):,} / {int(r.pairs):,} ({100 * float(r.purity):.1f}%)")
    return markdown(["family", *(f"{PURITY_CORPORA[c]} {PURITY_SPLITS[s]}" for c, s in columns)], rows)


def geometry(df: pd.DataFrame) -> str:
    """Notebook 03's near-miss AUC and within-anchor pairwise accuracy [95% CI] under pooled cosine, Base / A / B
    (mean over seeds), per family: the paper's three, their pool "all", the others, SugarCrepe's swaps."""

    def cell(variant, dataset, family, metric):
        r = df[(df.variant == variant) & (df.dataset == dataset) & (df.family == family) & (df.metric == metric)]
        return None if r.empty else float(r["mean"].mean())

    variants = [v for v in ENCODER_LABELS if v in set(df.variant)]
    own = set(df[df.dataset == "negatives"].family)
    others = sorted(own - set(PAPER_FAMILIES) - {"all"})
    families = [("negatives", f) for f in (*PAPER_FAMILIES, "all", *others) if f in own]
    families += [("sugarcrepe", f) for f in ("swap_att", "swap_obj") if f in set(df[df.dataset == "sugarcrepe"].family)]
    rows = []
    for dataset, family in families:
        label = f"SugarCrepe {family}" if dataset == "sugarcrepe" else {"all": "the three pooled"}.get(family, family)
        rows.append([label + (" (trained)" if family in PAPER_FAMILIES else "")])
        rows[-1] += [num(cell(v, dataset, family, "auc"), 2) for v in variants]
        for v in variants:
            acc = cell(v, dataset, family, "pairwise_accuracy")
            low, high = (cell(v, dataset, family, f"pairwise_accuracy_ci_{end}") for end in ("low", "high"))
            ci = f" {bracket(low, high, 2, False)}" if low is not None else ""
            rows[-1].append(DASH if acc is None else num(acc, 2) + ci)
    names = [ENCODER_LABELS[v] for v in variants]
    return markdown(["family", *(f"AUC {v}" for v in names), *(f"pairwise {v} [95% CI]" for v in names)], rows)


BUDGET_METRICS = {"auc": "near-miss AUC", **CHECKS, "noise_excess": "above the noise line"}


def budget(df: pd.DataFrame) -> str:
    """The verifier budget curve (`verifiers.budget.budget_table`): a row per scorer x regime x training rows
    x size x recipe x budget, each check's mean over seeds with its seed-level 95% interval. Budget 0, frozen
    MaxSim and its noise control, is the line every point is read against: trained on no rows, it is shown
    once (its `model_b` rows); a point trained on other rows than the authors' `model_b` says so."""
    df = df.astype({"budget": int, "seeds": int}).assign(regime=lambda d: d["regime"].fillna("").astype(str))
    df = with_train_data(df).astype({"train_data": str})
    line = df.budget == 0
    first = df[line].sort_values("train_data", key=lambda t: t != DEFAULT_TRAIN_DATA, kind="stable")
    first = first.drop_duplicates(["scorer", "regime", "size", "recipe", "metric"])
    df = pd.concat([first, df[~line]], ignore_index=True)
    keys = ["scorer", "regime", "train_data", "size", "recipe", "budget"]

    def label(scorer, regime, train_data, size, recipe, budget) -> str:
        if (noise := _noise_label(scorer)) is not None:
            return noise
        notes = [f"`{train_data}` rows"] if budget > 0 and train_data != DEFAULT_TRAIN_DATA else []
        notes += [f"{size} size"] if scorer in ("F3", "F4") and isinstance(size, str) and size else []
        notes += ["the authors' whole recipe"] if recipe == "authors" else []
        return f"{VERIFIER_LABELS.get(scorer, scorer)} {regime}".strip() + (f" ({', '.join(notes)})" if notes else "")

    def order(p) -> tuple:  # end-to-end points after the frozen curve, other rows after the authors' at each point
        noise = parse_noise_name(p["scorer"])
        size = p["size"] if isinstance(p["size"], str) else ""
        first = (p["budget"] > 0, noise[1] if noise else 0.0, p["scorer"], p["regime"] != "frozen", size)
        return (*first, p["recipe"] != "equal", p["train_data"] != DEFAULT_TRAIN_DATA, p["train_data"], p["budget"])

    rows = []
    for point in sorted((p for _, p in df.drop_duplicates(keys).iterrows()), key=order):
        sel = df[(df[keys].astype(str) == point[keys].astype(str)).all(axis=1)].set_index("metric")
        rows.append([label(*point[keys]), f"{point['budget']:,}"])
        for metric in BUDGET_METRICS:
            if metric not in sel.index or (metric == "noise_excess" and point["budget"] == 0):
                rows[-1].append(DASH)  # budget 0 is the line itself: its distance to it says nothing
                continue
            r = sel.loc[metric]
            places, sign = (3, True) if metric == "noise_excess" else (2, False)
            ci = r["seeds"] > 1 and _decimal(r["ci_low"]) is not None
            ci = f" {bracket(r['ci_low'], r['ci_high'], places, sign)}" if ci else ""
            rows[-1].append(num(r["mean"], places, sign) + ci)
        rows[-1].append(str(int(sel["seeds"].max())))
    return markdown(["scorer", "triplets", *BUDGET_METRICS.values(), "seeds"], rows)


def provenance(df: pd.DataFrame) -> str:
    """Which command, run and commit made each stage's results; a row of a piece published on its own
    (`publish --piece`) names the files it gave."""
    rows = []
    for r in df.fillna("").to_dict("records"):
        only = f" (only {r['publishes']})" if r.get("publishes") else ""
        stage = f"{str(r['stage']).zfill(2)} `{r['notebook']}`"  # the CSV reads "01" back as 1
        rows.append(
            [stage, f"`{r['command']}`{only}", f"`{r['run']}`", f"`{r['commit']}`", f"{float(r['minutes']):.0f} min"]
        )
    return markdown(["stage", "made by", "run", "commit", "wall time (2 cores)"], rows)


CSV_FILES = {"geometry": "all_geometry.csv", "budget": "verifier_budget.csv"}  # the others': <table>.csv
TABLES = {  # README table: (its CSV, the function that makes it)
    make.__name__: (CSV_FILES.get(make.__name__, f"{make.__name__}.csv"), make)
    for make in (purity, geometry, table1, variants, separation, rerank, provenance, budget)
}


def render(name: str, tables_dir: str | os.PathLike = TABLES_AT) -> str:
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
            "run's tables again with `make figures`; the file was edited or comes from an older report."
        ) from None


@functools.lru_cache(maxsize=16)
def _text_cells(path: str, _version: tuple[int, int]) -> pd.DataFrame:
    """A CSV's cells as text, read once per file version for all of a document's value markers."""
    return read_csv(path, dtype=str, keep_default_na=False)


def value(file: str, filters: dict, column: str, fmt: str, tables_dir=TABLES_AT, where="") -> str:
    """One cell of `file`, in the row `filters` select, formatted by `fmt` (the module's docstring says how)."""
    path = resolve(tables_dir) / file
    said = " ".join(f"{k}={v}" for k, v in filters.items())
    if not path.exists():
        raise TableError(f"{where}: a value is read from {path}, which is missing. Fix: `make figures`")
    stat = path.stat()
    rows = _text_cells(str(path), (stat.st_mtime_ns, stat.st_size))
    unknown = [c for c in (*filters, column) if c not in rows.columns]
    if unknown:
        raise TableError(f"{where}: {path} has no column {unknown[0]!r} (value `{said} {column}`); it has {list(rows)}")
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
    return pvalue(cell) if fmt == "p" else num(cell, int(fmt.lstrip("+")), sign=fmt.startswith("+"))


def update(text: str, tables_dir: str | os.PathLike = TABLES_AT, where: str = "README.md") -> str:
    """`text` with every marked table, and every marked value in prose, rewritten from its CSV."""

    def at(position: int) -> str:
        return f"{where}, line {text.count(chr(10), 0, position) + 1}"

    for opened in re.finditer(r"^<!-- table:", text, re.M):  # a marker starts a line; a mention in prose does not
        if not MARKER.match(text, opened.start()):
            raise TableError(
                f"{at(opened.start())}: a `<!-- table:NAME ... -->` marker without its closing "
                "`<!-- /table -->` (or not followed by a new line). Fix: add the closing marker."
            )
    for opened in re.finditer(r"<!-- value:", text):
        if not VALUE.match(text, opened.start()):
            raise TableError(
                f"{at(opened.start())}: a `<!-- value:FILE.csv [column=value ...] COLUMN FORMAT -->` marker "
                "that does not parse, or without its closing `<!-- /value -->` on the same line. Fix: write it as "
                "the module's docstring shows"
            )

    def table(m: re.Match) -> str:
        return f"{m.string[m.start() : m.start('body')]}{render(m['name'], tables_dir)}\n<!-- /table -->"

    def inline(m: re.Match) -> str:
        filters = dict(f.split("=", 1) for f in m["filters"].split())
        got = value(m["file"], filters, m["column"], m["fmt"], tables_dir, at(m.start()))
        return f"{m.string[m.start() : m.start('body')]}{got}<!-- /value -->"

    # values first, on `text` itself, so an error names the document's own line (a table rewritten above
    # a value would move it); no value marker sits inside a generated table
    return MARKER.sub(table, VALUE.sub(inline, text))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        "python scripts/readme_tables.py", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--readme", nargs="+", default=list(DOCUMENTS), help="the documents to rewrite")
    parser.add_argument("--tables", default=TABLES_AT, help="the committed tables (figures/tables)")
    parser.add_argument("--check", action="store_true", help="change nothing; exit 1 when a document differs")
    args = parser.parse_args(argv)
    return max(_one_document(name, args.tables, args.check) for name in args.readme)


def _one_document(name: str, tables: str, check: bool) -> int:
    text = resolve(name).read_text(encoding="utf-8")
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
    write_text(resolve(name), new)
    print(
        f"{name}: {len(MARKER.findall(text))} table(s) and {len(VALUE.findall(text))} value(s) rewritten from {tables}/"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
