"""`python -m compsense crossencoder --publish`: the cross-encoder's results (issue 50, item 4) into figures/.

Reads only what `compsense crossencoder` left under <out>/results/ (`verifiers.joint`'s tables) and the
committed map-verifier tables, and writes (each atomically, through `core.storage` and `figures.export`):

- tables/crossencoder.csv: every cross-encoder row, one per model x seed x dataset x family x metric;
- tables/crossencoder_summary.csv: the mean over seeds per model (rows kind, loss, precision, budget) x
  dataset x family x metric, with its interval and which interval it is (`INTERVALS`);
- tables/crossencoder_vs_maps.csv: the cross-encoder's pairwise accuracy beside the best map verifier's
  trained on the same rows, both with intervals, per held-out paper family, CondaQA and SugarCrepe: paired
  by seed where `crossencoder --maps` trained map verifiers at the model's budget (`paired_versus`), else
  notebook 04's grid (`versus_best_map`);
- tables/crossencoder_maps.csv: the rows of those `--maps` verifiers, per seed;
- tables/crossencoder_rerank.csv: SciFact reranking as notebook 05's rerank.csv (`rerank.rerank_answer` of
  `rerank.bootstrap_vs_baseline`: nDCG@10, the delta against Base, its interval and p), with ms per query;
- tables/crossencoder_record.json: each model's run record, the command and the time of publication;
- 04_crossencoder.html (+ .png where the export engine works): notebook 04's checks figure
  (`figures.verifiers.checks_figure`: near-miss AUC against self-match AUC, the noise line) with the
  cross-encoder's models beside the map verifiers of all_verifiers.csv and the budget curve's at its budgets.
"""

from __future__ import annotations

import json
from datetime import datetime, timezone
from pathlib import Path

import numpy as np
import pandas as pd
import plotly.graph_objects as go

from compsense.core.paths import repo_root, resolve
from compsense.core.stats import holm, seed_level_test
from compsense.core.storage import read_csv, read_json, read_table, write_json, write_table
from compsense.data.family_names import PAPER_FAMILIES
from compsense.figures.export import save_figure
from compsense.figures.verifiers import checks_figure
from compsense.nearmiss.checks import checks_per_run, split_variant
from compsense.nearmiss.evaluation import parse_noise_name
from compsense.nearmiss.metrics import ALL_FAMILIES, AUC, CHECKS, PAIRWISE_ACCURACY, PAIRWISE_CI, SELF_MATCH
from compsense.verifiers.names import DEFAULT_JOINT_LOSS, with_train_data
from compsense.verifiers.names import JOINT_MAPS as MAPS
from compsense.verifiers.names import JOINT_OUT as DEFAULT_OUT
from compsense.verifiers.names import JOINT_PRECISIONS as PRECISIONS
from compsense.verifiers.names import JOINT_RERANK_FILES as RERANK_FILES
from compsense.verifiers.names import JOINT_RESULTS as RESULTS
from compsense.verifiers.names import JOINT_RUNS as RUNS

HELDOUT = "negatives-heldout"
FIGURE = "04_crossencoder"
TABLES = {  # tables/<name>: what `publish` writes beside the figure
    "rows": "crossencoder.csv",
    "summary": "crossencoder_summary.csv",
    "vs_maps": "crossencoder_vs_maps.csv",
    "maps": "crossencoder_maps.csv",
    "rerank": "crossencoder_rerank.csv",
    "record": "crossencoder_record.json",
}
# What names one cross-encoder model across its seeds; a row before the loss or precision column was one
# is cmnrl / fp32 (`verifiers.joint`'s defaults, which named nothing then). `size` (`joint.joint_size`) also
# names the head's own learning rate, so runs that differ only there never average together.
MODEL = ["backbone", "profile", "train_data", "size", "loss", "precision", "budget"]
DEFAULTS = {"loss": DEFAULT_JOINT_LOSS, "precision": PRECISIONS[0], "profile": ""}
SUMMARY_KEY = [*MODEL, "dataset", "family", "metric"]
INTERVALS = {  # the summary's `interval` column: which 95% interval ci_low/ci_high are
    "seeds": "t over seeds",  # two seeds or more: `core.stats.seed_level_test`'s t interval
    "anchors": "anchor bootstrap, one seed",  # pairwise accuracy's own rows (`nearmiss.evaluation.near_miss_table`)
    "none": "none",  # one seed and no interval carried
}
# The comparison of issue 50: pairwise accuracy per held-out paper family (and pooled), CondaQA, SugarCrepe
VERSUS = [
    *((HELDOUT, f) for f in (*PAPER_FAMILIES, ALL_FAMILIES)),
    ("condaqa", ALL_FAMILIES),
    ("sugarcrepe", ALL_FAMILIES),
]
ROW_ORDER = [*MODEL, "seed", "dataset", "family", "metric"]
# What names one map verifier trained beside the cross-encoder (`--maps`): its folder (rows, size, budget) and name
MAP_MODEL = ["backbone", "profile", "train_data", "size", "budget", "verifier_variant", "variant"]
PAIRINGS = {
    "paired": "paired by seed: same rows, budget and seeds (--maps)",
    "unpaired": "unpaired: notebook 04's grid (all_verifiers.csv), at its own budget",
}


def publish(out=DEFAULT_OUT, dest=None, maps=None, command: str | None = None, png: bool = True) -> list[Path]:
    """Write the tables and the figure of the cross-encoder results under `out`/results/ into `dest`
    (default: the committed figures/), the map verifiers read from `maps` (default figures/tables/).
    Returns the paths written. A missing results folder is one line naming it and the command."""
    results = results_dir(out)
    dest = Path(dest) if dest is not None else repo_root() / "figures"
    maps = Path(maps) if maps is not None else repo_root() / "figures" / "tables"
    tables = dest / "tables"
    # what an earlier publication holds of models this run did not make stays (their raw results may be on
    # another machine): one publication, every cross-encoder run so far
    earlier = _optional_csv(tables / TABLES["rows"])
    rows = seed_rows(read_table(results / f"{RESULTS}.parquet"))
    rows = seed_rows(keep_earlier(rows, earlier, [*MODEL, "seed"]))
    summary = summary_table(rows)
    verifiers = _optional_csv(maps / "all_verifiers.csv")
    beside = map_rows(results, _optional_csv(tables / TABLES["maps"]))
    written = [
        write_table(rows, tables / TABLES["rows"]),
        write_table(summary, tables / TABLES["summary"]),
        write_table(versus_maps(rows, summary, beside, verifiers), tables / TABLES["vs_maps"]),
    ]
    if beside is not None:
        written.append(write_table(beside, tables / TABLES["maps"]))
    record = run_record(read_table(results / f"{RUNS}.parquet"), command or publish_command(out), _now())
    earlier_record = read_json(tables / TABLES["record"]) if (tables / TABLES["record"]).is_file() else None
    rerank = read_rerank(results)
    if rerank is not None:
        earlier_rerank = _optional_csv(tables / TABLES["rerank"])
        if earlier_rerank is not None and "published_at" not in earlier_rerank:
            earlier_rerank["published_at"] = (earlier_record or {}).get("published_at")
        answer = rerank_table(*rerank).assign(published_at=record["published_at"])
        written.append(write_table(keep_earlier(answer, earlier_rerank, ["variant"]), tables / TABLES["rerank"]))
    written.append(write_json(tables / TABLES["record"], with_earlier_models(record, earlier_record)))
    points = pd.concat(
        [
            map_points(verifiers),
            curve_points(_optional_csv(maps / "verifier_budget.csv"), set(rows.budget)),
            paired_points(beside).assign(beside_ce=True),
            model_points(rows),
        ],
        ignore_index=True,
    )
    written += list(save_figure(crossencoder_figure(points), FIGURE, dest, png=png).values())
    return written


def keep_earlier(new: pd.DataFrame, earlier: pd.DataFrame | None, key: list[str]) -> pd.DataFrame:
    """`new` with the rows of `earlier` (a table published before) whose `key` `new` lacks: a model this
    run did not make keeps its published rows; one it made again is replaced. Columns of either kept;
    an earlier row has the defaults (`DEFAULTS`) where it predates a column. The rerank rows carry
    `published_at`: each publication's Holm p adjusts over its own comparisons, so a row kept from an
    earlier one keeps that one's p and says when it was computed."""
    if earlier is None or earlier.empty:
        return new
    defaults = {c: DEFAULTS.get(c, "") for c in key}
    earlier = earlier.assign(**{c: earlier[c].fillna(v) if c in earlier else v for c, v in defaults.items()})
    mine = set(map(tuple, new[key].astype(str).itertuples(index=False)))
    kept = earlier[[k not in mine for k in map(tuple, earlier[key].astype(str).itertuples(index=False))]]
    return pd.concat([new, kept], ignore_index=True) if not kept.empty else new


def with_earlier_models(record: dict, earlier: dict | None) -> dict:
    """`record` (`run_record`) with the models of the record published before (`earlier`, None: none)
    that it lacks (by folder name and seed), each marked with the publication it came from."""
    if not earlier:
        return record
    mine = {(m.get("verifier_variant"), m.get("seed")) for m in record["models"]}
    when = earlier.get("published_at")
    kept = [
        {**m, "published_at": m.get("published_at") or when}
        for m in earlier.get("models", [])
        if (m.get("verifier_variant"), m.get("seed")) not in mine
    ]
    return {**record, "models": record["models"] + kept}


def results_dir(out) -> Path:
    """<out>/results/ with the cross-encoder's tables, else FileNotFoundError naming the folder (and the
    table it lacks) and the command that makes them."""
    folder = resolve(out) / "results"
    missing = [f"{name}.parquet" for name in (RESULTS, RUNS) if not (folder / f"{name}.parquet").is_file()]
    if missing:
        what = "no such folder" if not folder.is_dir() else f"no {' or '.join(missing)}"
        raise FileNotFoundError(
            f"{folder}: {what}, so no cross-encoder results to publish; "
            f"`python -m compsense crossencoder --out {out}` makes them"
        )
    return folder


def publish_command(out) -> str:
    return f"python -m compsense crossencoder --publish --out {out}"


def _now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


def _optional_csv(path: Path) -> pd.DataFrame | None:
    return read_csv(path) if path.is_file() else None


# -- the tables ---------------------------------------------------------------------------------


def seed_rows(results: pd.DataFrame) -> pd.DataFrame:
    """The cross-encoder's rows (crossencoder.parquet), one per model x seed x dataset x family x metric,
    sorted, the model's columns first; `run` (backbone/verifiers/<folder>/seed<seed>) is left out."""
    rows = results.assign(**{c: results[c].fillna(v) if c in results else v for c, v in DEFAULTS.items()})
    first = [*ROW_ORDER, "value", "n", "variant", "verifier_variant", "examples_seen", "commit"]
    columns = [c for c in first if c in rows] + [c for c in rows if c not in first and c != "run"]
    return rows.sort_values(ROW_ORDER, kind="stable")[columns].reset_index(drop=True)


def summary_table(rows: pd.DataFrame) -> pd.DataFrame:
    """Per `SUMMARY_KEY`: the mean over seeds, the number of seeds, the pairs (`n`), ci_low/ci_high and
    `interval` (`INTERVALS`), and the commits. Pairwise accuracy's interval rows (`metrics.PAIRWISE_CI`)
    are its one-seed interval here, not metrics of their own."""
    bounds = carried_bounds(rows)
    values = rows[~rows.metric.isin(PAIRWISE_CI) & rows.value.notna()]
    out = []
    for key, group in values.groupby(SUMMARY_KEY, sort=True):
        low, high, kind = interval(group, bounds)
        out.append(
            {
                **dict(zip(SUMMARY_KEY, key, strict=True)),
                "mean": float(group.value.mean()),
                "ci_low": low,
                "ci_high": high,
                "interval": kind,
                "seeds": int(group.seed.nunique()),
                "n": int(group.n.max()),
                "commit": _commits(group),
            }
        )
    return pd.DataFrame(out, columns=[*SUMMARY_KEY, "mean", "ci_low", "ci_high", "interval", "seeds", "n", "commit"])


def _commits(group: pd.DataFrame) -> str:
    """The commits that computed a summary row's seed rows, comma-separated ("" for rows without one)."""
    return ",".join(sorted(set(group["commit"].dropna().astype(str)))) if "commit" in group else ""


def carried_bounds(rows: pd.DataFrame) -> pd.DataFrame:
    """Pairwise accuracy's anchor-bootstrap interval as the rows carry it (metric rows pairwise_accuracy_ci_low
    and _ci_high), one row per model x seed x dataset x family: columns ci_low, ci_high."""
    sel = rows[rows.metric.isin(PAIRWISE_CI)]
    wide = sel.pivot_table(index=[*MODEL, "seed", "dataset", "family"], columns="metric", values="value")
    return wide.reindex(columns=list(PAIRWISE_CI)).set_axis(["ci_low", "ci_high"], axis=1)


def interval(group: pd.DataFrame, bounds: pd.DataFrame) -> tuple[float, float, str]:
    """(low, high, kind) of one summary row's seed values: the t interval over seeds with two or more
    (zero width where they agree exactly, as `verifiers.budget.budget_table`), else the anchor
    bootstrap the one seed's pairwise accuracy carries, else none."""
    if len(group) > 1:
        return (*_seed_interval(group.value), INTERVALS["seeds"])
    row = group.iloc[0]
    key = (*(row[c] for c in MODEL), row.seed, row.dataset, row.family)
    if row.metric == PAIRWISE_ACCURACY and key in bounds.index:
        low, high = bounds.loc[key, ["ci_low", "ci_high"]]
        if pd.notna(low) and pd.notna(high):
            return float(low), float(high), INTERVALS["anchors"]
    return float("nan"), float("nan"), INTERVALS["none"]


def map_rows(results: Path, earlier: pd.DataFrame | None) -> pd.DataFrame | None:
    """The map verifiers `crossencoder --maps` trained beside the cross-encoder (results/MAPS.parquet), one row
    per verifier x seed x dataset x family x metric, with those of an earlier publication (`earlier`) this run
    did not train kept; None where neither has any."""
    path = results / f"{MAPS}.parquet"
    if not path.is_file():
        return earlier
    kept = keep_earlier(read_table(path).drop(columns="run", errors="ignore"), earlier, [*MAP_MODEL, "seed"])
    order = [*MAP_MODEL, "seed", "dataset", "family", "metric"]
    return kept.sort_values(order, kind="stable").reset_index(drop=True)


def versus_maps(
    rows: pd.DataFrame, summary: pd.DataFrame, beside: pd.DataFrame | None, verifiers: pd.DataFrame | None
) -> pd.DataFrame:
    """The decision's table (issue 50, item 5): per cross-encoder model and `VERSUS` set, its pairwise accuracy
    beside the best map verifier's. Where `--maps` trained map verifiers on the model's rows at its budget
    (`beside`), the comparison is paired by seed (`paired_versus`); for a model without them it is notebook 04's
    grid, unpaired (`versus_best_map`). The `pairing` column says which."""
    paired = paired_versus(rows, beside)
    unpaired = versus_best_map(summary, verifiers).assign(pairing=PAIRINGS["unpaired"])
    if not paired.empty:
        done = set(map(tuple, paired[MODEL].astype(str).itertuples(index=False)))
        mine = [tuple(r) in done for r in unpaired[MODEL].astype(str).itertuples(index=False)]
        unpaired = unpaired[~np.array(mine, dtype=bool)]
    return pd.concat([paired, unpaired], ignore_index=True) if not paired.empty else unpaired


def paired_versus(rows: pd.DataFrame, beside: pd.DataFrame | None) -> pd.DataFrame:
    """Per cross-encoder model and `VERSUS` set with map verifiers trained on the same rows kind at the same
    budget (`beside`) at every seed the model has: the map verifier with the highest mean pairwise accuracy
    over those seeds (chosen per set: the strongest map verifier each family has, which favours the maps),
    both means with their t intervals over those seeds, and the mean within-seed difference (cross-encoder
    minus map) with the paired t interval and p over seeds (`core.stats.seed_level_test`; differences equal at
    every seed: an interval of no width and no p, as `_seed_interval`), and that p Holm-adjusted over the
    model's sets (`difference_p_holm`). Empty where no model has such maps."""
    if beside is None or beside.empty:
        return pd.DataFrame()
    wanted = pd.DataFrame(VERSUS, columns=["dataset", "family"])
    ce = rows[rows.metric == PAIRWISE_ACCURACY].merge(wanted, on=["dataset", "family"])
    maps = beside[
        (beside.metric == PAIRWISE_ACCURACY) & is_map_verifier(beside.variant) & (beside.budget.astype(float) > 0)
    ].merge(wanted, on=["dataset", "family"])
    maps = maps.assign(map_verifier=maps.variant + "@" + maps.verifier_variant)
    out = []
    on = ["train_data", "budget", "dataset", "family"]
    for key, model in ce.groupby([*MODEL, "dataset", "family"], sort=True):
        info = dict(zip([*MODEL, "dataset", "family"], key, strict=True))
        same = maps
        for column in on:
            same = same[same[column].astype(str) == str(info[column])]
        # a map verifier pairs only where it has every seed of the model: a one-seed control (e.g. --map-lr at
        # seed 42) is never chosen as the best on one lucky seed; its rows stay in crossencoder_maps.csv
        seeds = set(model.seed)
        same = same[same.seed.isin(seeds)]
        same = same[same.groupby("map_verifier").seed.transform("nunique") == len(seeds)]
        if same.empty:
            continue
        means = same.groupby("map_verifier").value.mean().sort_values(ascending=False, kind="stable")
        best = same[same.map_verifier == means.index[0]].set_index("seed").value
        mine = model.set_index("seed").value.loc[best.index]
        differences = mine - best
        test = seed_level_test(differences.to_numpy(float))
        diff_low, diff_high = _seed_interval(differences, test)
        ce_low, ce_high = _seed_interval(mine)
        map_low, map_high = _seed_interval(best)
        out.append(
            {
                **info,
                "mean": float(mine.mean()),
                "ci_low": ce_low,
                "ci_high": ce_high,
                "interval": INTERVALS["seeds"],
                "seeds": int(len(mine)),
                "map_verifier": means.index[0],
                "map_examples_seen": float(same.examples_seen.max()) if "examples_seen" in same else float("nan"),
                "map_mean": float(best.mean()),
                "map_ci_low": map_low,
                "map_ci_high": map_high,
                "map_seeds": int(len(best)),
                "difference": float(test["mean_delta"]),
                "difference_ci_low": diff_low,
                "difference_ci_high": diff_high,
                "difference_p": test["t_p"],
                "pairing": PAIRINGS["paired"],
            }
        )
    out = pd.DataFrame(out)
    if out.empty:
        return out
    # Holm over each model's sets with a p (differences equal at every seed have none), as Table 1 adjusts
    out["difference_p_holm"] = np.nan
    for _, group in out.groupby(MODEL, sort=False):
        tested = group.index[group.difference_p.notna()]
        out.loc[tested, "difference_p_holm"] = holm(out.loc[tested, "difference_p"])
    return out


def _seed_interval(values: pd.Series, test: dict | None = None) -> tuple[float, float]:
    """The t interval over seeds of `values` (one per seed): zero width where they agree, NaN with one.
    `test`: `seed_level_test(values)` where the caller has it already."""
    v = values.to_numpy(float)
    if len(v) > 1 and np.allclose(v, v[0]):
        return float(v[0]), float(v[0])
    test = test if test is not None else seed_level_test(v)
    return test["t_ci_low"], test["t_ci_high"]


def versus_best_map(summary: pd.DataFrame, verifiers: pd.DataFrame | None) -> pd.DataFrame:
    """Per model and `VERSUS` set: the cross-encoder's pairwise accuracy (mean over seeds, its interval)
    beside the best map verifier's (F0-F4, the highest mean over seeds, trained on the same rows kind, as
    all_verifiers.csv has it: notebook 04's grid) with its t interval over seeds, and the difference."""
    wanted = pd.DataFrame(VERSUS, columns=["dataset", "family"])
    ce = summary[summary.metric == PAIRWISE_ACCURACY].merge(wanted, on=["dataset", "family"])
    ce = ce[[*MODEL, "dataset", "family", "mean", "ci_low", "ci_high", "interval", "seeds"]]
    best = best_maps(verifiers)
    out = ce.merge(best, on=["train_data", "dataset", "family"], how="left")
    return out.assign(difference=out["mean"] - out.map_mean)


def best_maps(verifiers: pd.DataFrame | None) -> pd.DataFrame:
    """Per rows kind x dataset x family the map verifier with the highest mean pairwise accuracy in
    all_verifiers.csv (noise controls and pooled cosines are not verifiers), its mean, seeds, t interval
    from the table's standard deviation over seeds, and the triplets it saw."""
    columns = ["train_data", "dataset", "family", "map_verifier", "map_examples_seen", "map_mean"]
    columns += ["map_ci_low", "map_ci_high", "map_seeds"]
    if verifiers is None:
        return pd.DataFrame(columns=columns)
    sel = verifiers[(verifiers.metric == PAIRWISE_ACCURACY) & is_map_verifier(verifiers.variant)]
    sel = sel.sort_values("mean", ascending=False, kind="stable").groupby(["train_data", "dataset", "family"]).head(1)
    low, high = t_interval(sel["mean"], sel["std"], sel["count"])
    return pd.DataFrame(
        {
            "train_data": sel.train_data,
            "dataset": sel.dataset,
            "family": sel.family,
            "map_verifier": sel.variant + "@" + sel.verifier_variant,
            "map_examples_seen": sel.examples_seen,
            "map_mean": sel["mean"],
            "map_ci_low": low,
            "map_ci_high": high,
            "map_seeds": sel["count"],
        }
    )[columns]


def is_map_verifier(variants: pd.Series) -> pd.Series:
    """F0-F4 in a regime ("F3-frozen"); not a noise control ("F1-frozen+noise2x") nor a pooled cosine."""
    return variants.map(lambda v: split_variant(str(v))[1] != "")


def t_interval(mean: pd.Series, std: pd.Series, count: pd.Series, level: float = 0.95):
    """The t interval of a mean over `count` seeds with sample standard deviation `std` (NaN with one)."""
    from scipy.stats import t  # noqa: PLC0415

    n = count.astype(float)
    half = t.ppf(0.5 + level / 2, n - 1) * std / np.sqrt(n)
    half = half.where(n > 1)
    return mean - half, mean + half


def read_rerank(results: Path):
    """(results, per_query, cost) of the cross-encoder's reranking, or None where the run had --no-rerank."""
    paths = [results / f"{name}.parquet" for name in RERANK_FILES]
    if not all(p.is_file() for p in paths):
        return None
    return tuple(read_table(p) for p in paths)


def rerank_table(results: pd.DataFrame, per_query: pd.DataFrame, cost: pd.DataFrame, metric: str = "ndcg@10"):
    """Notebook 05's answer table for the cross-encoder's reranking (`rerank.rerank_answer` with
    `rerank.bootstrap_vs_baseline`: each method's `metric` at the largest K, its delta against Base with
    the 95% interval and p, Holm-corrected), with each method's precision and ms per query at that K."""
    from compsense.verifiers import rerank as R  # noqa: PLC0415 - torch: only when publishing

    answer = R.rerank_answer(results, R.bootstrap_vs_baseline(per_query, metric=metric), metric=metric)
    precision = results.groupby("variant").precision.first()
    answer.insert(4, "precision", answer.variant.map(precision))
    k = answer.k.max()
    return answer.merge(ms_per_query(R.cost_table(cost), k), on="variant", how="left")


def ms_per_query(costs: pd.DataFrame, k) -> pd.DataFrame:
    """Per method (`rerank.cost_table`): first-stage and rerank ms per query at `k`, and their sum."""
    rerank = costs[f"rerank_ms@{int(k)}"] if pd.notna(k) and f"rerank_ms@{int(k)}" in costs else np.nan
    out = pd.DataFrame({"variant": costs.variant, "first_stage_ms": costs.first_stage_ms, "rerank_ms": rerank})
    return out.assign(ms_per_query=out.first_stage_ms + out.rerank_ms.fillna(0.0))


def run_record(runs: pd.DataFrame, command: str, published_at: str) -> dict:
    """crossencoder_runs' rows as a JSON record (one per model: commit, seed, rows, loss, precision,
    budget, steps, seconds, ...; not the local folder), the command and when it published them."""
    keep = [c for c in runs.columns if c != "folder"]
    models = runs.assign(**{c: runs[c].fillna(v) if c in runs else v for c, v in DEFAULTS.items()})
    models = models.sort_values([c for c in ("train_data", "loss", "precision", "budget", "seed") if c in models])
    return {
        "command": command,
        "published_at": published_at,
        "models": json.loads(models[[*keep, *(c for c in DEFAULTS if c not in keep)]].to_json(orient="records")),
    }


# -- the figure ---------------------------------------------------------------------------------


def model_points(rows: pd.DataFrame) -> pd.DataFrame:
    """One point per cross-encoder model and seed on the held-out near-misses (`checks_per_run`), its
    size naming loss, precision and budget ("joint, 8,192 triplets"), so budgets never average."""
    labelled = rows.assign(size=_at_budget(rows["size"], rows.budget), seed=rows.seed.astype(str))
    return checks_per_run(labelled, HELDOUT)


def map_points(verifiers: pd.DataFrame | None) -> pd.DataFrame:
    """Notebook 04's map verifiers (and the noise control and frozen MaxSim: the noise line) on the held-out
    near-misses as all_verifiers.csv has them, one point per verifier x rows kind x size, the mean over
    its seeds (`seed` says "mean of N")."""
    if verifiers is None:
        return pd.DataFrame()
    sel = verifiers[
        (verifiers.dataset == HELDOUT) & (is_map_verifier(verifiers.variant) | _is_noise(verifiers.variant))
    ]
    seeds = sel.groupby(["variant", "verifier_variant"])["count"].transform("max")
    labelled = sel.rename(columns={"mean": "value"}).assign(
        seed="mean of " + seeds.astype(int).astype(str),
        size=_at_budget(sel["size"], sel.examples_seen.fillna(0)),
    )
    return checks_per_run(labelled, HELDOUT)


def curve_points(curve: pd.DataFrame | None, budgets: set) -> pd.DataFrame:
    """The budget curve's trained verifiers at the cross-encoder's `budgets` (verifier_budget.csv, mean over
    seeds), as points like `map_points`': the map verifiers at the triplets the cross-encoder saw."""
    if curve is None:
        return pd.DataFrame()
    curve = with_train_data(curve)
    sel = curve[curve.budget.isin(budgets) & (curve.budget > 0) & curve.metric.isin(CHECKS)]
    if sel.empty:
        return pd.DataFrame()
    keys = ["scorer", "regime", "train_data", "size", "recipe", "budget"]
    wide = sel.pivot_table(index=keys, columns="metric", values="mean").reset_index()
    wide = wide.merge(sel.groupby(keys, as_index=False).seeds.max(), on=keys)
    size = _at_budget(wide["size"], wide.budget) + np.where(wide.recipe == "authors", ", authors recipe", "")
    points = wide.assign(size=size, seed="mean of " + wide.seeds.astype(int).astype(str))
    return points[["scorer", "regime", "train_data", "size", "seed", *CHECKS]]


def paired_points(beside: pd.DataFrame | None) -> pd.DataFrame:
    """The map verifiers `--maps` trained beside the cross-encoder (`beside`, per seed), one point per verifier
    and folder at the mean of its seeds, as `map_points`' (the noise line at budget 0 is `map_points`' own)."""
    if beside is None or beside.empty:
        return pd.DataFrame()
    sel = beside[is_map_verifier(beside.variant) & (beside.budget.astype(float) > 0) & (beside.dataset == HELDOUT)]
    if sel.empty:
        return pd.DataFrame()
    keys = ["variant", "verifier_variant", "train_data", "size", "budget", "dataset", "family", "metric"]
    mean = sel.groupby(keys, as_index=False).agg(value=("value", "mean"), seeds=("seed", "nunique"))
    # the size as the folder names it, between the rows kind and the budget: "small", or "small-lr0.0001"
    # where `--map-lr` trained the encoder at a rate of its own (a point apart from the profile's rate)
    folder = [v.removeprefix(f"{t}-").rsplit("-b", 1)[0] for v, t in zip(mean.verifier_variant, mean.train_data)]
    size = _at_budget(pd.Series(folder, index=mean.index), mean.budget)
    return checks_per_run(mean.assign(seed="mean of " + mean.seeds.astype(str), size=size), HELDOUT)


def crossencoder_figure(points: pd.DataFrame):
    """`figures.verifiers.checks_figure` (near-miss AUC against self-match AUC, the goal corner, the copy
    line and the noise line: frozen MaxSim plus seeded noise) of the map verifiers and the cross-encoder
    (scorer CE, regime end2end). The static PNG has no hover, so each cross-encoder model gets a number at
    the mean of its seeds' points and a legend entry that names it (`ce_models`), and the map verifiers
    `--maps` trained on the cross-encoder's rows (a true `beside_ce` column) get a black ring."""
    fig = checks_figure(
        points,
        title="Held-out near-misses: the cross-encoder (CE) beside the map verifiers<br><sup>CE: one point per "
        "model and seed, numbered at their mean; map verifiers: mean over seeds, ringed where trained on the "
        "CE's rows; noise line: MaxSim + noise</sup>",
    )
    beside = points[points["beside_ce"].eq(True)] if "beside_ce" in points else points.iloc[:0]
    if not beside.empty:
        fig.add_trace(
            go.Scatter(
                x=beside[SELF_MATCH],
                y=beside[AUC],
                mode="markers",
                marker={"symbol": "circle-open", "size": 18, "color": "black", "line": {"width": 1.5}},
                name="ring: map verifier trained on the CE's rows (--maps)",
                hovertext=beside[["scorer", "regime", "train_data", "size"]].astype(str).agg(", ".join, axis=1),
            )
        )
    for row in ce_models(points).itertuples(index=False):
        fig.add_trace(
            go.Scatter(
                x=[getattr(row, SELF_MATCH)],
                y=[getattr(row, AUC)],
                mode="text",
                text=[f"<b>{row.number}</b>"],
                textposition="top left",
                textfont={"size": 12},
                name=f"{row.number}: CE on {row.label}",
            )
        )
    fig.update_layout(width=1250, height=720, legend={"font": {"size": 10}})
    return fig


def ce_models(points: pd.DataFrame) -> pd.DataFrame:
    """One row per cross-encoder model in `points` (scorer CE): the mean of its seeds' self-match and
    near-miss AUC, how many seeds, its number (1, 2, ... in order of near-miss AUC) and a label naming
    its rows, loss, rates and budget ("balanced_pairs, bce-head0.001-lr0.0001, 8,192 (3 seeds)")."""
    columns = ["number", "train_data", "size", SELF_MATCH, AUC, "seeds", "label"]
    ce = points[points.scorer == "CE"].dropna(subset=[SELF_MATCH, AUC]) if "scorer" in points else points.iloc[:0]
    if ce.empty:
        return pd.DataFrame(columns=columns)
    ce = ce.groupby(["train_data", "size"], as_index=False).agg(
        **{SELF_MATCH: (SELF_MATCH, "mean"), AUC: (AUC, "mean"), "seeds": (AUC, "size")}
    )
    ce = ce.sort_values([AUC, SELF_MATCH], ignore_index=True)
    seeds = np.where(ce.seeds > 1, " (" + ce.seeds.astype(str) + " seeds)", "")
    size = ce["size"].str.replace("joint-", "", regex=False).str.replace(" triplets", "", regex=False)
    return ce.assign(number=range(1, len(ce) + 1), label=ce.train_data + ", " + size + seeds)[columns]


def _at_budget(size: pd.Series, budget: pd.Series) -> pd.Series:
    """ "small, 2,048 triplets" where a verifier trained, "small" where nothing was trained."""
    counts = budget.astype(float)
    return size.astype(str) + counts.map(lambda b: f", {int(b):,} triplets" if b > 0 else "")


def _is_noise(variants: pd.Series) -> pd.Series:
    return variants.map(lambda v: parse_noise_name(str(v)) is not None)


def main(args, dest=None) -> int:
    """`compsense crossencoder --publish`: the results under `args.out` into `dest` (default the committed
    figures/); prints each file written. Dispatched by the command line, not by `verifiers.joint_cli`:
    the verifiers layer does not import the figures."""
    written = publish(args.out, dest=dest, command=publish_command(args.out))
    for path in written:
        print(f"wrote {path}")
    if TABLES["rerank"] not in {p.name for p in written}:
        print(f"{args.out}: no rerank tables (a --no-rerank run): {TABLES['rerank']} not written")
    return 0
