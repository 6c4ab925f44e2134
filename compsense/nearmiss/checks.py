"""The three checks of a scorer run side by side: one row per run (scorer, regime, training data,
size, seed) with near-miss AUC, self-match AUC and copy > near-miss as columns, and the rank
correlation between two checks over runs. Apart from `compsense.nearmiss.evaluation`, which builds
the pairs and scores them, because what reads a finished table (notebook 04's ending,
`compsense.figures.endings`) should not depend on the pair builders and, through them, on the
near-miss generator's rules (a stage's content key follows imports).
"""

from __future__ import annotations

import pandas as pd
from scipy.stats import spearmanr

from compsense.nearmiss.metrics import AUC, CHECKS, SELF_MATCH


def split_variant(variant: str) -> tuple[str, str]:
    """("F4", "frozen") from "F4-frozen"; a pooled cosine ("cosine Base") has regime ""."""
    name, _, regime = variant.rpartition("-")
    return (name, regime) if regime in ("frozen", "end2end") else (variant, "")


RUN_KEYS = ["scorer", "regime", "train_data", "size", "seed"]


def checks_per_run(results, dataset: str = "negatives-heldout") -> pd.DataFrame:
    """One row per run on one near-miss set: scorer, regime, train_data, size, seed, then the three
    checks of `metrics.CHECKS` as columns (near-miss AUC, self-match AUC, copy > near-miss). The
    separation table averages these over seeds; this keeps each seed, so one can ask whether the
    checks move together across runs. Pooled cosines are runs with regime "". A run that lacks one
    of the checks is an error naming it (it would otherwise fall out of any correlation unseen)."""
    data = results[results.dataset == dataset]
    if data.empty:
        raise ValueError(f"checks_per_run: no rows for dataset {dataset!r}; have {sorted(results.dataset.unique())}")
    data = data.assign(
        **{c: data[c].fillna("") if c in data.columns else "" for c in ("train_data", "size")},
    )
    data["scorer"], data["regime"] = zip(*map(split_variant, data.variant), strict=True)
    columns = {}
    for check, (family, metric) in CHECKS.items():
        sel = data[(data.family == family) & (data.metric == metric)]
        columns[check] = sel.groupby(RUN_KEYS, sort=False).value.mean()
    runs = pd.DataFrame(columns)
    lacking = runs[runs.isna().any(axis=1)]
    if not lacking.empty:
        run = " ".join(f"{k}={v}" for k, v in zip(RUN_KEYS, lacking.index[0], strict=True))
        missing = [c for c in CHECKS if pd.isna(lacking.iloc[0][c])]
        raise ValueError(
            f"checks_per_run: {len(lacking)} run(s) on {dataset!r} lack a check, e.g. ({run}) lacks {missing}; "
            "re-run notebook 04 for it, or leave its rows out"
        )
    return runs.reset_index()


def check_correlation(runs: pd.DataFrame, x: str = SELF_MATCH, y: str = AUC, scorers=None) -> dict:
    """Spearman's rho (scipy.stats.spearmanr) between two checks over the runs of `scorers` (all
    runs when None): {"rho", "p", "n"}; rho and p are NaN with fewer than three runs or a constant
    column, where a rank correlation says nothing."""
    sel = runs if scorers is None else runs[runs.scorer.isin(list(scorers))]
    n = len(sel)
    if n < 3 or sel[x].nunique() < 2 or sel[y].nunique() < 2:
        return {"rho": float("nan"), "p": float("nan"), "n": n}
    result = spearmanr(sel[x], sel[y])
    return {"rho": float(result.statistic), "p": float(result.pvalue), "n": n}
