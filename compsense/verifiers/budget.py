"""The verifier budget curve: does a verifier read the edit once it has seen enough triplets, or is
what it learns at a small budget what an untrained MaxSim plus noise would give?

Why a module: the authors train their verifiers on 12k-106k triplets
(`run_frozen_vs_e2e_experiment.sh`, as `compsense.verifiers.recipe` records it); notebook 04's
grid gives every verifier one small, equal budget. Here the same verifiers train at a list of
budgets, on the same rows, each budget into its own folder (verifiers/<variant>-b<budget>/), and are
scored on notebook 04's near-miss sets. Frozen MaxSim (F1, nothing learned) and its noise control
(`nearmiss.evaluation.noise_controls`) are scored beside them at every budget and seed, so each
point can be read against the noise line (`noise_excess`).

`BudgetCurve` is the plan (a profile's `budget_curve` mapping), `run_budget_curve` runs it,
`budget_table` turns its tidy results into one row per scorer x budget x family x metric with a
seed-level interval, and `noise_excess` measures how far each run sits above the noise line.
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from typing import Sequence

import numpy as np
import pandas as pd
from scipy import stats as sps

from compsense.core import layout
from compsense.core.stats import seed_level_test
from compsense.core.storage import COMMIT, append_results
from compsense.nearmiss import evaluation as N
from compsense.nearmiss.metrics import AUC, PAIRWISE_ACCURACY, SELF_MATCH, SEPARATION
from compsense.verifiers.architectures import verifier_names
from compsense.verifiers.config import REGIMES, Compute, VerifierGrid, VerifierTraining
from compsense.verifiers.names import DEFAULT_TRAIN_DATA, with_train_data
from compsense.verifiers.study import run_study

HELDOUT = "negatives-heldout"
RESULTS = "verifier_budget"  # results/<this>.parquet: every point's tidy results, appended as it finishes
CURVE_FILE = "verifier_budget_curve.parquet"  # results/<this>: `budget_table` as notebook 04 writes it
# results/<this>: `budget_runs` (one row per seed) as notebook 04 writes it. Published beside the curve, so a
# piece that trains one seed on a new machine merges with the seeds other machines published
RUNS_FILE = "verifier_budget_runs.parquet"
BUDGET = "examples_seen"  # the tidy results' column that holds the triplets a verifier saw
# What names one point of the curve. `train_data` ("model_b", "balanced"): which rows trained it, so
# curves on two training sets stand in one table without being averaged together.
POINT = ["scorer", "regime", "train_data", "size", "recipe", "budget"]
AUTHORS_RECIPE_POINT = {"verifiers": ["F4"], "size": "paper", "regime": "frozen"}  # their F4, at their 48,000


@dataclass(frozen=True)
class BudgetCurve:
    """What the curve trains. `examples`: the budgets (triplets a verifier sees), ascending; the
    first seed trains at every budget, `seeds_at_largest` (default: every verifier seed) at the
    largest, so the largest budget has a seed-level interval. `verifiers`/`sizes`/`regimes`: as
    notebook 04's grid, narrowed per size by `size_scope` (default: the authors' size trains F4
    only, their F3 being a GPU job). `authors_recipe`: also train the authors' F4 frozen with their
    whole recipe (budget, loss, learning rate, weight decay, special tokens), at the first seed, so
    both recipes stand in one table. `end2end_examples`: the budgets at which the end-to-end regime
    (when `regimes` has it) trains, since a step there runs the encoder and costs ~100x a frozen one
    here (default: every budget). `train_data`: which of notebook 04's training sets the curve trains
    on ("model_b", the authors'; "balanced", where the negative is a one-edit change of the positive:
    `verifiers.data`); it names each point's rows in the table, so a curve per set stands in one table
    (one piece per set). Empty `examples`: nothing to run."""

    examples: tuple[int, ...] = ()
    verifiers: tuple[str, ...] = ("F3", "F4")
    sizes: tuple[str, ...] = ("small", "paper")
    size_scope: dict = field(default_factory=lambda: {"paper": {"verifiers": ["F4"]}})
    regimes: tuple[str, ...] = ("frozen",)
    seeds_at_largest: tuple[int, ...] | None = None
    end2end_examples: tuple[int, ...] | None = None
    train_data: str = DEFAULT_TRAIN_DATA
    authors_recipe: bool = True

    @classmethod
    def from_params(cls, params: dict | None, where: str = "budget_curve") -> "BudgetCurve":
        """From a profile's mapping; an unknown key or a bad value is an error naming it and the fix."""
        params = dict(params or {})
        known = {f.name for f in fields(cls)}
        unknown = sorted(set(params) - known)
        if unknown:
            raise ValueError(f"{where}: unknown keys {unknown}; use some of {sorted(known)}")
        for key in ("examples", "verifiers", "sizes", "regimes", "seeds_at_largest", "end2end_examples"):
            if params.get(key) is not None:
                value = params[key]
                if isinstance(value, (str, int)):
                    raise ValueError(f"{where}.{key} must be a list, got {value!r}; write [{value}]")
                params[key] = tuple(value)
        curve = cls(**params)
        curve.check(where)
        return curve

    def check(self, where: str = "budget_curve") -> None:
        bad = [b for b in self.examples if not isinstance(b, (int, np.integer)) or isinstance(b, bool) or b < 1]
        if bad:
            raise ValueError(f"{where}.examples: budgets are whole numbers of triplets >= 1, got {bad}")
        if list(self.examples) != sorted(set(self.examples)):
            raise ValueError(f"{where}.examples must be ascending without repeats, got {list(self.examples)}")
        stray = sorted(set(self.regimes) - set(REGIMES))
        if stray:
            raise ValueError(f"{where}.regimes: unknown {stray}; use some of {list(REGIMES)}")
        verifier_names(self.verifiers)  # raises on an unknown verifier name
        stray = sorted(set(self.end2end_examples or ()) - set(self.examples))
        if stray:
            raise ValueError(f"{where}.end2end_examples: {stray} are not budgets of `examples` {list(self.examples)}")

    def regimes_at(self, budget: int) -> tuple[str, ...]:
        """The regimes that train at `budget`: end-to-end only at `end2end_examples` (when given)."""
        if self.end2end_examples is None:
            return tuple(self.regimes)
        return tuple(r for r in self.regimes if r != "end2end" or budget in self.end2end_examples)

    @property
    def enabled(self) -> bool:
        return bool(self.examples)

    def plan(self, seeds: Sequence[int]) -> list[tuple[int, int]]:
        """(budget, seed) pairs in run order: every budget at the first seed, ascending (a run cut
        short has the whole curve at one seed), then the other seeds at the largest budget."""
        if not self.enabled:
            return []
        if not seeds:
            raise ValueError("budget_curve needs at least one seed")
        largest = self.examples[-1]
        extra = [s for s in (self.seeds_at_largest or seeds) if s != seeds[0]]
        return [(b, seeds[0]) for b in self.examples] + [(largest, s) for s in dict.fromkeys(extra)]


def budget_suffix(budget: int) -> str:
    """The folder suffix of one budget: verifiers/<variant>-b<budget>/ (e.g. model_b-paper-b48000)."""
    return f"-b{int(budget)}"


def run_budget_curve(
    curve: BudgetCurve,
    rows_by_data: dict,
    grid: VerifierGrid,
    encoder,
    work_dir,
    sets: dict,
    backbone: str,
    training: VerifierTraining | None = None,
    compute: Compute | None = None,
    **labels,
):
    """Train and score every point of `curve.plan(grid.seeds)` on notebook 04's training rows of
    `curve.train_data` (`rows_by_data[curve.train_data]`), then the authors' recipe point. Returns
    (training summary, tidy results) as `run_study` does, with a `budget` column; results are
    appended to {work_dir}/results/04/verifier_budget.parquet as each point finishes, and a cut run
    resumes (finished verifiers are loaded, not retrained).
    `grid`: notebook 04's grid, of which the curve keeps the seeds, `include_special`,
    `f2_learnable` and `folder_suffix` (it sets verifiers, sizes, regimes and budgets itself; a suffix, ""
    in notebook 04, goes before each budget's, so a curve at a setting no folder names has folders of its
    own: `crossencoder --map-lr`); `training`: notebook 04's training settings (batch size, learning
    rate, loss...), whose `budget_examples` the curve sets. The noise line (budget 0) trains nothing and
    keeps its one folder.
    """
    if curve.enabled and curve.train_data not in rows_by_data:
        raise ValueError(
            f"budget_curve.train_data is {curve.train_data!r}, but notebook 04 built rows for {sorted(rows_by_data)}; "
            f"add it to `train_data` or set budget_curve.train_data to one of those"
        )
    training = training or VerifierTraining()
    results_path = layout.results_file(work_dir, RESULTS)
    rows = {curve.train_data: rows_by_data.get(curve.train_data)}
    seeds = list(grid.seeds)
    summaries, results = [], []
    shared = dict(compute=compute, backbone=backbone, **labels)
    plan = curve.plan(seeds)
    # The noise line, once per seed: frozen MaxSim (nothing to learn) and its noise control, as budget 0.
    for seed in dict.fromkeys(s for _, s in plan):
        line = grid.replace(
            verifiers=["F1"], regimes=["frozen"], sizes=curve.sizes[:1], size_scope=None, seeds=[seed],
            folder_suffix=budget_suffix(0),
        )  # fmt: skip
        first = training.replace(budget_examples=int(curve.examples[0]))
        summary, tidy = run_study(rows, line, encoder, work_dir, sets, training=first, budget=0, **shared)
        summaries.append(summary.assign(budget=0))
        results.append(_append(tidy, results_path))
    for budget, seed in plan:
        regimes = curve.regimes_at(budget)
        if not regimes:
            continue
        point = grid.replace(
            verifiers=curve.verifiers, regimes=regimes, sizes=curve.sizes, size_scope=curve.size_scope,
            seeds=[seed], noise_multiples=(), folder_suffix=grid.folder_suffix + budget_suffix(budget),
        )  # fmt: skip
        at = training.replace(budget_examples=int(budget))
        summary, tidy = run_study(rows, point, encoder, work_dir, sets, training=at, budget=int(budget), **shared)
        summaries.append(summary.assign(budget=int(budget)))
        results.append(_append(tidy, results_path))
    if curve.enabled and curve.authors_recipe:
        theirs = AUTHORS_RECIPE_POINT
        # their recipe sets batch size, budget, learning rates, weight decay and the loss; they keep
        # [CLS]/[SEP] in the token embeddings (`recipe.COMMON`)
        point = grid.replace(
            verifiers=theirs["verifiers"], regimes=[theirs["regime"]], sizes=[theirs["size"]], size_scope=None,
            seeds=seeds[:1], recipe="authors", include_special=True, noise_multiples=(), folder_suffix="",
        )  # fmt: skip
        summary, tidy = run_study(rows, point, encoder, work_dir, sets, training=training, **shared)
        tidy = tidy.assign(budget=tidy[BUDGET].astype(int))
        summaries.append(summary.assign(budget=summary["examples_seen"]))
        results.append(_append(tidy, results_path))
    if not results:
        return pd.DataFrame(), pd.DataFrame()
    return pd.concat(summaries, ignore_index=True), pd.concat(results, ignore_index=True)


def _append(tidy: pd.DataFrame, results_path) -> pd.DataFrame:
    if results_path is not None and not tidy.empty:
        append_results(tidy, results_path, key=[*N.NEARMISS_KEY, "budget"])
    return tidy


# -- reading the curve -------------------------------------------------------------------------


def budget_runs(results: pd.DataFrame, dataset: str = HELDOUT) -> pd.DataFrame:
    """One row per run (scorer, regime, train_data, size, recipe, budget, seed) on `dataset`, one column per
    `metrics.SEPARATION` entry (the separation table's columns), per paper family its near-miss
    AUC and pairwise accuracy (`auc:<family>`, `pairwise_accuracy:<family>`), and `noise_excess`."""
    data = results[results.dataset == dataset]
    if data.empty:
        raise ValueError(f"budget_runs: no rows for dataset {dataset!r}; have {sorted(results.dataset.unique())}")
    data = with_train_data(data.assign(recipe=data["recipe"].fillna("equal") if "recipe" in data else "equal"))
    data["scorer"], data["regime"] = zip(*map(N.split_variant, data.variant), strict=True)
    keys = [*POINT, "seed"]
    columns = {}
    for column, (family, metric) in SEPARATION.items():
        sel = data[(data.family == family) & (data.metric == metric)]
        columns[column] = sel.groupby(keys, sort=False).value.mean()
    paper = sorted(set(data.family) & set(N.PAPER_FAMILIES))
    for family in paper:
        for metric in (AUC, PAIRWISE_ACCURACY):
            sel = data[(data.family == family) & (data.metric == metric)]
            columns[f"{metric}:{family}"] = sel.groupby(keys, sort=False).value.mean()
    runs = pd.DataFrame(columns).reset_index()
    return noise_excess(runs)


def _point(table: pd.DataFrame) -> list[str]:
    """`POINT`, less `train_data` where `table` has no such column (a table written before it was one)."""
    return [key for key in POINT if key != "train_data" or key in table.columns]


def noise_excess(runs: pd.DataFrame, x: str = SELF_MATCH, y: str = AUC) -> pd.DataFrame:
    """`runs` with a `noise_excess` column: a run's near-miss AUC minus the noise line's at the run's
    self-match AUC. The line is frozen MaxSim and its noise control at the run's seed
    (`nearmiss.evaluation.noise_controls`), closed by (0.5, 0.5), where infinite noise leaves both
    checks; where several of its points share a self-match, the highest AUC among them; NaN for a
    seed without it.

    Why: adding noise to frozen MaxSim moves it from (self-match ~1, near-miss AUC low) towards
    (0.5, 0.5), so a trained verifier that lost self-match and gained near-miss AUC may have learned
    nothing but noise. Above 0 a run separates near-misses better than noise explains; the noise
    control's own points sit at 0."""
    out = runs.copy()
    out["noise_excess"] = np.nan
    noisy = out.scorer.map(N.parse_noise_name).notna()
    base, regime = N.split_variant(N.NOISE_CONTROL_BASE)
    on_line = noisy | (out.scorer.eq(base) & out.regime.eq(regime))
    for seed, line in out[on_line].groupby("seed"):
        points = line.groupby("scorer")[[x, y]].mean()  # the same at every budget
        # Where noise levels share a self-match (it saturates at 1 for small noise), the line's highest
        # AUC there: "above the line" is then above all of it.
        points = pd.concat([points, pd.DataFrame({x: [0.5], y: [0.5]})]).groupby(x)[y].max().sort_index()
        points = np.column_stack([points.index.to_numpy(float), points.to_numpy(float)])
        mask = out.seed.eq(seed)
        out.loc[mask, "noise_excess"] = out.loc[mask, y].to_numpy(float) - np.interp(
            out.loc[mask, x].to_numpy(float), points[:, 0], points[:, 1]
        )
    return out


def budget_table(runs: pd.DataFrame, decimals: int = 3) -> pd.DataFrame:
    """The curve as a table: one row per scorer x regime x train_data x size x recipe x budget x metric,
    with the mean over seeds, the seed-level 95% t interval (`core.stats.seed_level_test`; NaN with one
    seed) and the number of seeds (seeds that agree exactly give a zero-width interval). Metrics:
    `metrics.SEPARATION`, the per-family columns and `noise_excess`. `train_data` is left out where
    `runs` lacks it (runs read before it was a column)."""
    keys = _point(runs)
    metrics = [c for c in runs.columns if c not in (*keys, "seed")]
    rows = []
    for key, group in runs.groupby(keys, sort=True):
        for metric in metrics:
            values = group[metric].dropna().to_numpy(float)
            if not len(values):
                continue
            test = seed_level_test(values)
            if len(values) > 1 and np.allclose(values, values[0]):  # seeds agree: a zero-width interval
                test = {"t_ci_low": float(values[0]), "t_ci_high": float(values[0])}
            rows.append(
                {
                    **dict(zip(keys, key, strict=True)),
                    "metric": metric,
                    "mean": round(float(values.mean()), decimals),
                    "ci_low": round(test["t_ci_low"], decimals),
                    "ci_high": round(test["t_ci_high"], decimals),
                    "seeds": len(values),
                }
            )
    return pd.DataFrame(rows, columns=[*keys, "metric", "mean", "ci_low", "ci_high", "seeds"])


def over_seeds(curve: pd.DataFrame, runs: pd.DataFrame, decimals: int = 3) -> pd.DataFrame:
    """`curve` (a `budget_table`) with each point that `runs` (`budget_runs`' rows, from any number of
    pieces) holds recomputed over every seed it has there, by `budget_table`; points `runs` lacks stay as
    they are. Each recomputed row's commit: its seeds' commits, in seed order, joined with "+".

    Why: a piece trains what fits one session, and a session may be on a machine without the runs of
    the earlier seeds. Their per-seed rows are published (tables/verifier_budget_runs.csv), so a point
    trained one seed per machine is one point with a seed-level interval, as if one run had made it."""
    keys = [k for k in _point(curve) if k in runs.columns]
    if runs.empty or not keys:
        return curve
    points = curve[keys].drop_duplicates()
    mine = runs.merge(points, on=keys)  # the runs of `curve`'s points only
    if mine.empty:
        return curve
    # the metrics: every numeric column but the seed (not the commit, piece or a backfilled row's `source`)
    metrics = [c for c in mine.columns if c not in (*keys, "seed") and pd.api.types.is_numeric_dtype(mine[c])]
    table = budget_table(mine[[*keys, "seed", *metrics]], decimals)
    if COMMIT in mine:
        ordered = mine.sort_values("seed", kind="stable")
        commits = ordered.groupby(keys, sort=False)[COMMIT].agg(lambda c: "+".join(dict.fromkeys(c.astype(str))))
        table = table.merge(commits.reset_index(), on=keys, how="left")
    done = curve.merge(table[keys].drop_duplicates(), on=keys, how="left", indicator=True)._merge.eq("both")
    out = pd.concat([curve[~done.to_numpy()], table], ignore_index=True)
    return out[[c for c in curve.columns if c in out.columns]].sort_values(keys, kind="stable")


def runs_from_table(table: pd.DataFrame, seeds: int | Sequence[int]) -> pd.DataFrame:
    """The per-seed rows (`budget_runs`' columns) of `table`'s points published before their per-seed rows
    were, so that a later seed can join them (`over_seeds`), each with a `source` saying what it is:
    - one seed (`seeds` an int, or a list of one): the point's mean is that seed's value;
    - two seeds (a list of two): a two-seed mean m with its t interval [m - h, m + h] (`budget_table`) holds
      the pair: h = t(0.975, 1) |x1 - x2| / 2, so x = m -/+ h / t(0.975, 1), the lower value given to the first
      seed. Which seed had which is not in the table, but no mean or interval over seeds depends on it.
    At the table's decimals (a value within ~0.0005 of the run's). A point of another number of seeds, or of a
    number other than `seeds` has, is refused: its seeds' values are not in it."""
    seeds = [int(seeds)] if isinstance(seeds, (int, np.integer)) else [int(s) for s in seeds]
    keys = _point(table)
    wrong = table[table.seeds != len(seeds)]
    if len(seeds) not in (1, 2) or not wrong.empty:
        raise ValueError(
            f"runs_from_table: seeds {seeds} for points of {sorted(set(table.seeds))} seeds; only the values of a "
            "point of one seed, or of two with its interval, are in a table. Fix: select those points and name "
            "their seeds"
        )
    extra = [c for c in (COMMIT, "piece") if c in table.columns]
    table = table.assign(**{c: table[c].fillna("") for c in extra})  # pivot_table drops a blank index
    if len(seeds) == 1:
        parts = [(seeds[0], table["mean"])]
        source = "the published one-seed mean"
    else:
        spread = (table.ci_high - table.ci_low).fillna(0) / 2 / sps.t.ppf(0.975, 1)
        parts = [(seeds[0], table["mean"] - spread), (seeds[1], table["mean"] + spread)]
        source = "the pair in the published two-seed mean and t interval (lower value to the first seed)"
    runs = []
    for seed, values in parts:
        wide = table.assign(value=values).pivot_table(
            index=[*keys, *extra], columns="metric", values="value", aggfunc="first"
        )
        one = wide.reset_index().rename_axis(columns=None).assign(seed=seed, source=source)
        runs.append(one[[*keys, "seed", *wide.columns, *extra, "source"]])  # `budget_runs`' order
    return pd.concat(runs, ignore_index=True)


def budget_view(table: pd.DataFrame, metrics: Sequence[str] = (AUC, PAIRWISE_ACCURACY, SELF_MATCH, "noise_excess")):
    """`budget_table` for reading: one row per scorer x regime x train_data x size x recipe x budget, one column
    per metric, each cell "mean [low, high]" (the mean alone with one seed)."""
    sel = table[table.metric.isin(metrics)]
    cells = [
        f"{m:.3f}" if np.isnan(lo) else f"{m:.3f} [{lo:.3f}, {hi:.3f}]"
        for m, lo, hi in zip(sel["mean"], sel.ci_low, sel.ci_high, strict=True)
    ]
    keys = _point(table)
    wide = sel.assign(cell=cells).pivot_table(index=keys, columns="metric", values="cell", aggfunc="first")
    return wide[[m for m in metrics if m in wide.columns]]
