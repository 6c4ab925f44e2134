"""The last words of each notebook: its result in sentences, generated from the notebook's own tables.

Why generated: a hand-written conclusion drifts from the numbers the moment a run changes them, and
a reader who reaches the end of a notebook should not be sent to the README to learn what it showed.
Each function takes the tables its notebook has already built (as `compsense.retrieval.harness.
describe_result` does for notebook 02), quotes intervals where the tables have them, and says when the
numbers mean nothing: with the random tiny BERT (the smoke profile of notebooks 03-05) they only prove
that the code runs, and at smoke the data are the few sentences written for the tests.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
import pandas as pd

from compsense.core.banner import SMOKE, describe_backbone, is_random
from compsense.data.family_names import PAPER_FAMILIES
from compsense.figures.problem import confusable
from compsense.nearmiss.checks import check_correlation, checks_per_run
from compsense.nearmiss.metrics import AUC, CHECKS, COPY_VS_NEAR_MISS, SELF_MATCH

ARTEFACT_TARGET = 0.65  # notebook 01: a blind bag-of-words AUC at or below this leaves no give-away
PARAPHRASE = "paraphrase"


def random_caveat(backbones: str | Sequence[str]) -> str:
    """The sentence that opens an ending whose encoder has random weights ("" otherwise)."""
    names = [backbones] if isinstance(backbones, str) else list(backbones)
    random = [b for b in names if is_random(b)]
    if not random:
        return ""
    return (
        f"With {', '.join(random)} (a tiny BERT with random weights, the smoke profile) the numbers below mean "
        "nothing: they only prove that the code runs. Run the local profile for results."
    )


def wilson(k: int, n: int, z: float = 1.96) -> tuple[float, float]:
    """The 95% Wilson score interval of a proportion k / n (NaN for n = 0): right at 0 or 1 and for small
    n, where the normal approximation gives intervals outside [0, 1]."""
    if n <= 0:
        return math.nan, math.nan
    p = k / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return max(0.0, centre - half), min(1.0, centre + half)


def _pct(value: float) -> str:
    return f"{100 * value:.1f}%"


def _interval_pct(k: int, n: int) -> str:
    low, high = wilson(k, n)
    return f"{_pct(k / n)} [{_pct(low)}, {_pct(high)}]" if n else "–"


# ----------------------------------------------------------------------------- 00: the problem


def problem_result(table: pd.DataFrame, backbone: str) -> str:
    """Notebook 00 in words, from its cosine table (`compsense.figures.problem.cosine_table`): how many
    near-misses a pooled cosine ranks at or above their anchor's paraphrase, per family, and the
    closest call."""
    near = table[table.kind != PARAPHRASE]
    hits = confusable(table)
    families = near.kind.str.replace("near-miss: ", "", regex=False)
    hit_families = hits.kind.str.replace("near-miss: ", "", regex=False).value_counts()
    per_family = ", ".join(
        f"{family} {hit_families.get(family, 0)} of {n}" for family, n in families.value_counts().sort_index().items()
    )
    paraphrase_mean = table.loc[table.kind == PARAPHRASE, "cosine"].mean()
    lines = [
        random_caveat(backbone),
        f"Under the pooled cosine of {describe_backbone(backbone)}, {len(hits)} of the {len(near)} near-misses "
        f"score at least as high as their anchor's paraphrase ({per_family}); the paraphrases average "
        f"{paraphrase_mean:.3f}, the near-misses {near.cosine.mean():.3f}.",
    ]
    if len(hits):
        top = hits.assign(margin=hits.cosine - hits.paraphrase_cosine).sort_values("margin").iloc[-1]
        lines.append(
            f'The widest gap the wrong way: "{top.other}" ({top.kind}) at {top.cosine:.3f} against its '
            f"anchor's paraphrase at {top.paraphrase_cosine:.3f}. A retriever ranking by this cosine puts such "
            "edits above a real paraphrase."
        )
    lines.append(
        f"These are {table.anchor.nunique()} hand-written anchors, an illustration rather than a measurement: "
        "notebook 03 measures the same contrast on held-out pairs, with intervals."
    )
    return "\n".join(line for line in lines if line)


# ----------------------------------------------------------------------------- 01: data and negatives


def negatives_result(
    counts: pd.DataFrame,
    precision: pd.DataFrame,
    purity: pd.DataFrame,
    aucs: pd.DataFrame,
    profile: str,
    paper_families: Sequence[str] = PAPER_FAMILIES,
) -> str:
    """Notebook 01 in words, from its tables: pairs per split (`counts`, family x split), the audited
    precision (`audit_precision`) and the independent checker's purity (`family_purity`) of the paper's
    families, each with a 95% Wilson interval, and the blind artefact AUC (`aucs`, balanced and
    unbalanced) against its 0.65 target."""
    lines = []
    if profile == SMOKE:
        lines.append(
            "At the smoke profile the source sentences are the few hundred that scripts/make_smoke_data.py "
            "composes from templates (data/smoke), not MRPC and STS-B: the pair counts, purity and artefact "
            "AUCs below describe those and only prove that the code runs; the audit precision is the same "
            "hand-judged set at every profile."
        )
    totals = counts.sum()
    split_text = ", ".join(f"{int(n):,} {split}" for split, n in totals.items())
    lines.append(
        f"The generator made {int(totals.sum()):,} near-miss pairs ({split_text}) over {len(counts)} families."
    )
    lines.append(_audit_sentence(precision))
    lines.append(_purity_sentence(purity, paper_families))
    lines.append(_artefact_sentence(aucs))
    return "\n".join(line for line in lines if line)


def _audit_sentence(precision: pd.DataFrame) -> str:
    by = precision.set_index("family")
    if "all" not in by.index:
        return ""
    every = by.loc["all"]
    families = by.drop(index="all")
    weakest = families.sort_values("precision").iloc[0] if len(families) else None
    text = (
        f"On the hand-judged audit set, {_interval_pct(int(every.accepted), int(every.judged))} of "
        f"{int(every.judged):,} near-misses are correct edits (95% Wilson interval)"
    )
    if weakest is not None:
        text += (
            f"; the weakest family is {weakest.name} at "
            f"{_interval_pct(int(weakest.accepted), int(weakest.judged))} of {int(weakest.judged)}"
        )
    return text + "."


def _purity_sentence(purity: pd.DataFrame, paper_families: Sequence[str]) -> str:
    paper = purity[purity.family.isin(paper_families)]
    if paper.empty:
        return ""
    pooled = paper.groupby("family")[["pure", "pairs"]].sum()
    parts = ", ".join(f"{family} {_interval_pct(int(r.pure), int(r.pairs))}" for family, r in pooled.iterrows())
    worst = paper.sort_values("purity").iloc[0]
    return (
        f"The independent checker files the paper's families under their own name: {parts}; the lowest cell is "
        f"{worst.family} on {worst.source} {worst.split} at {_pct(worst.purity)} of {int(worst.pairs)} pairs."
    )


def _artefact_sentence(aucs: pd.DataFrame) -> str:
    table = aucs.pivot(index="family", columns="source", values="auc")
    balanced = next((c for c in table.columns if str(c).startswith("balanced")), None)
    if balanced is None or "all" not in table.index:
        return ""
    every = table.loc["all", balanced]
    above = table[balanced].drop(index="all").dropna()
    above = above[above > ARTEFACT_TARGET].sort_values(ascending=False)
    unbalanced = f" (unbalanced: {table.loc['all', 'unbalanced']:.3f})" if "unbalanced" in table.columns else ""
    verdict = "within" if every <= ARTEFACT_TARGET else "above"
    text = (
        f"A blind bag-of-words classifier tells a written near-miss from an original at AUC {every:.3f} over all "
        f"families{unbalanced}, {verdict} the {ARTEFACT_TARGET} target"
    )
    if len(above):
        text += "; families above it, where a model could learn the words instead of the meaning: " + ", ".join(
            f"{family} {auc:.3f}" for family, auc in above.items()
        )
    return text + "."


# ----------------------------------------------------------------------------- 03: pooled geometry


def geometry_result(table: pd.DataFrame, backbones: str | Sequence[str]) -> str:
    """Notebook 03 in words, from its tidy separation table (`separation_metrics`): per backbone and model
    (Base, A, B), the near-miss AUC of the paper's families pooled and the within-anchor pairwise accuracy
    with its 95% interval over anchors (one seed; with several, the mean and the seeds' range), each
    family's AUC from A to B, and SugarCrepe's caption edits."""
    names = [backbones] if isinstance(backbones, str) else list(backbones)
    lines = [random_caveat(names)]
    for backbone in names:
        rows = table[table.backbone == backbone]
        if rows.empty:
            continue
        lines.append(_geometry_backbone(rows, backbone))
    return "\n".join(line for line in lines if line)


def _variants(rows: pd.DataFrame) -> list[str]:
    order = {"base": 0, "A": 1, "B": 2}
    return sorted(rows.variant.unique(), key=lambda v: (order.get(v, 3), v))


def _metric(rows: pd.DataFrame, variant: str, dataset: str, family: str, metric: str) -> pd.Series:
    """The metric's values over seeds (one per seed)."""
    pick = rows[
        (rows.variant == variant) & (rows.dataset == dataset) & (rows.family == family) & (rows.metric == metric)
    ]
    return pick.set_index("seed").value.sort_index()


def _pairwise_text(rows: pd.DataFrame, variant: str) -> str:
    values = _metric(rows, variant, "negatives", "all", "pairwise_accuracy")
    if values.empty or values.isna().all():
        return "–"
    if len(values) == 1:
        low = _metric(rows, variant, "negatives", "all", "pairwise_accuracy_ci_low")
        high = _metric(rows, variant, "negatives", "all", "pairwise_accuracy_ci_high")
        if len(low) and len(high):
            return f"{values.iloc[0]:.3f} [{low.iloc[0]:.3f}, {high.iloc[0]:.3f}]"
        return f"{values.iloc[0]:.3f}"
    return f"{values.mean():.3f} (seeds {values.min():.3f}–{values.max():.3f})"


def _geometry_backbone(rows: pd.DataFrame, backbone: str) -> str:
    variants = _variants(rows)
    n_seeds = rows[rows.variant != "base"].seed.nunique() or 1
    auc = {v: _metric(rows, v, "negatives", "all", "auc").mean() for v in variants}
    text = (
        f"{backbone}: pooled cosine ranks a held-out paraphrase above a near-miss of the paper's three families "
        f"with AUC {', '.join(f'{v} {auc[v]:.3f}' for v in variants)} (0.5 = chance; below it the near-miss sits "
        "closer than the paraphrase)"
        + (f", mean over {n_seeds} seeds" if n_seeds > 1 else "")
        + ". Within an anchor, its own paraphrase beats its own near-miss in a share of the pairs: "
        + ", ".join(f"{v} {_pairwise_text(rows, v)}" for v in variants)
        + " (95% interval over anchors)."
    )
    if {"A", "B"} <= set(variants):
        families = sorted(
            f for f in rows[(rows.dataset == "negatives") & (rows.metric == "auc")].family.unique() if f != "all"
        )
        a_to_b = {f: [_metric(rows, v, "negatives", f, "auc").mean() for v in ("A", "B")] for f in families}
        per_family = ", ".join(f"{f} {a:.3f} → {b:.3f}" for f, (a, b) in a_to_b.items())
        text += (
            f" Model B − Model A: {auc['B'] - auc['A']:+.3f} AUC on the paper's families; per family, A → B: "
            f"{per_family}."
        )
    sugar = rows[(rows.dataset == "sugarcrepe") & (rows.metric == "auc")]
    if not sugar.empty:
        means = sugar.groupby("variant").value.mean()
        lowest = sugar[sugar.variant == variants[-1]].groupby("family").value.mean().sort_values()
        text += (
            f" On SugarCrepe's caption edits, which nobody here wrote, the AUC averages "
            f"{', '.join(f'{v} {means[v]:.3f}' for v in variants if v in means)} over {sugar.family.nunique()} "
            f"subsets, lowest for {variants[-1]} on {lowest.index[0]} ({lowest.iloc[0]:.3f})."
        )
    return text


# ----------------------------------------------------------------------------- 04: verifiers

LEARNED = ("F3", "F4")  # the verifiers with weights to learn (F0, F1 have none; F2's lam and tau are fixed)
HELDOUT = "negatives-heldout"
GROUP = ["scorer", "regime", "train_data", "size"]


def verifiers_result(scored: pd.DataFrame, backbone: str, curve: pd.DataFrame | None = None) -> str:
    """Notebook 04 in words, from its tidy results (pooled cosines and verifiers, `scored`) and the budget
    curve's table (`budget_table`, or None): what pooled cosine does on the held-out near-misses, the
    trained verifier that separates them best and what it pays in self-match, whether near-miss AUC and
    self-match move against each other over the runs, which verifiers pass all three checks on every
    set, and each curve's distance above the noise line at its largest budget with its interval."""
    runs = {dataset: checks_per_run(scored, dataset) for dataset in scored.dataset.unique()}
    held = runs.get(HELDOUT)
    lines = [random_caveat(backbone)]
    if held is None:
        return "\n".join(line for line in lines if line) + "\nNo held-out near-miss rows in these results."
    lines.append(_pooled_sentence(held))
    lines.append(_best_verifier_sentence(held))
    lines.append(_tradeoff_sentence(held))
    lines.append(_reads_the_edit_sentence(runs))
    if curve is not None and not curve.empty:
        lines.append(_curve_sentence(curve))
    return "\n".join(line for line in lines if line)


def _by_verifier(runs: pd.DataFrame) -> pd.DataFrame:
    """Mean, std and count over seeds of each check, per scorer x regime x training data x size."""
    checks = [c for c in CHECKS if c in runs]
    return runs.groupby(GROUP, sort=False)[checks].agg(["mean", "std", "count"])


def _checks_text(row: pd.Series) -> str:
    return f"self-match {row[(SELF_MATCH, 'mean')]:.3f}, copy > near-miss {row[(COPY_VS_NEAR_MISS, 'mean')]:.3f}"


def _pooled_sentence(held: pd.DataFrame) -> str:
    pooled = held[held.regime == ""].loc[lambda d: d.scorer.str.startswith("cosine")]
    if pooled.empty:
        return ""
    means = pooled.groupby("scorer", sort=False)[list(CHECKS)].mean()
    first = means.iloc[0]
    others = "; ".join(f"{name.removeprefix('cosine ')} {row[AUC]:.3f}" for name, row in means.iloc[1:].iterrows())
    return (
        f"On the held-out near-misses, pooled cosine ({means.index[0]}) has near-miss AUC {first[AUC]:.3f} "
        f"(0.5 = chance), self-match {first[SELF_MATCH]:.3f} and copy > near-miss {first[COPY_VS_NEAR_MISS]:.3f}"
        + (f"; near-miss AUC of {others}" if others else "")
        + "."
    )


def _best_verifier_sentence(held: pd.DataFrame) -> str:
    learned = held[held.scorer.isin(LEARNED) & held.regime.isin(["frozen", "end2end"])]
    if learned.empty:
        return "No verifier with weights to learn (F3, F4) was trained here."
    table = _by_verifier(learned)
    best_key = table[(AUC, "mean")].idxmax()
    best = table.loc[best_key]
    scorer, regime, train_data, size = best_key
    n = int(best[(AUC, "count")])
    spread = f" ± {best[(AUC, 'std')]:.3f} over {n} seeds" if n > 1 else " (one seed)"
    return (
        f"The trained verifier that separates them best is {scorer} {regime} ({train_data}, {size}): near-miss AUC "
        f"{best[(AUC, 'mean')]:.3f}{spread}, at {_checks_text(best)}."
    )


def _tradeoff_sentence(held: pd.DataFrame) -> str:
    learned = held[held.scorer.isin(LEARNED) & held.regime.isin(["frozen", "end2end"])]
    corr = check_correlation(learned, x=SELF_MATCH, y=AUC)
    if not np.isfinite(corr["rho"]):
        return ""
    text = (
        f"Over the {corr['n']} F3/F4 runs, near-miss AUC against self-match: Spearman ρ = {corr['rho']:.2f} "
        f"(p = {corr['p']:.2g})"
    )
    if corr["rho"] < 0 and corr["p"] < 0.05:
        return (
            text
            + ": what a verifier gains on near-misses it loses on a sentence's own copy, as penalising overlap would."
        )
    return text + ": the runs do not show separation bought with self-match."


def _reads_the_edit_sentence(runs: dict[str, pd.DataFrame]) -> str:
    """Which scorers have all three checks above chance (0.5) on every set, as means over seeds."""
    passing = None
    for dataset_runs in runs.values():
        table = _by_verifier(dataset_runs)
        ok = {key for key, row in table.iterrows() if all(row[(c, "mean")] > 0.5 for c in CHECKS)}
        passing = ok if passing is None else passing & ok
    names = sorted(" ".join(str(p) for p in key if p) for key in passing or ())
    sets = ", ".join(runs)
    if not names:
        return (
            f"No scorer has near-miss AUC, self-match and copy > near-miss all above 0.5 on every set ({sets}): "
            "none reads the edit by this test."
        )
    return f"Near-miss AUC, self-match and copy > near-miss all above 0.5 on every set ({sets}): {', '.join(names)}."


def _curve_sentence(curve: pd.DataFrame) -> str:
    excess = curve[(curve.metric == "noise_excess") & (curve.budget > 0)]
    if excess.empty:
        return ""
    parts = []
    for (scorer, regime, size, recipe), group in excess.groupby(["scorer", "regime", "size", "recipe"], sort=True):
        top = group.sort_values("budget").iloc[-1]
        interval = (
            f" [{top.ci_low:+.3f}, {top.ci_high:+.3f}] over {int(top.seeds)} seeds"
            if int(top.seeds) > 1 and pd.notna(top.ci_low)
            else " (one seed, no interval)"
        )
        label = f"{scorer} {regime} {size}" + ("" if recipe == "equal" else f" ({recipe} recipe)")
        verdict = "above the line" if int(top.seeds) > 1 and top.ci_low > 0 else "not shown above it"
        parts.append(f"{label} at {int(top.budget):,} triplets {top['mean']:+.3f}{interval}, {verdict}")
    return (
        "The budget curve, near-miss AUC above the noise line (frozen MaxSim plus noise) at each verifier's largest "
        "budget: " + "; ".join(parts) + "."
    )


# ----------------------------------------------------------------------------- 05: reranking

NOISE = "+noise"  # the noise-control rerankers' variant names: F1-frozen+noise2x@...


def rerank_result(answer: pd.DataFrame, backbone: str, metric: str = "ndcg@10") -> str:
    """Notebook 05 in words, from its answer table (`rerank_answer`: each encoder alone, each reranker at
    the largest K against Base with its paired 95% interval and Holm p): Base, A and B alone, the best and
    worst reranker, how many rerankers the interval puts above or below Base, and the noise control."""
    lines = [random_caveat(backbone)]
    alone = answer[answer.verifier == "none"].set_index("variant")[metric]
    if len(alone):
        lines.append(f"Encoders alone, {metric}: " + ", ".join(f"{v} {value:.3f}" for v, value in alone.items()) + ".")
    reranked = answer[(answer.verifier != "none") & answer.mean_delta.notna()] if "mean_delta" in answer else None
    if reranked is None or reranked.empty:
        lines.append("No reranker has a paired comparison with Base in this table.")
        return "\n".join(line for line in lines if line)
    noise = reranked[reranked.variant.str.contains(NOISE, regex=False)]
    verifiers = reranked[~reranked.variant.str.contains(NOISE, regex=False)]
    k, n_queries = int(verifiers.k.max()), int(verifiers.n_queries.max())
    seeds = int(verifiers.n_seeds.max())
    over = f"{n_queries} queries" + (f" and {seeds} verifier seeds" if seeds > 1 else "")
    above = verifiers[verifiers.ci_low > 0]
    below = verifiers[verifiers.ci_high < 0]
    best = verifiers.sort_values("mean_delta").iloc[-1]
    worst = verifiers.sort_values("mean_delta").iloc[0]
    lines.append(
        f"Reranking the top {k} (reranked − Base, paired 95% interval over {over}): the best is "
        f"{_delta_text(best)}, the worst {_delta_text(worst)}. Of {len(verifiers)} rerankers, {len(above)} "
        f"{'is' if len(above) == 1 else 'are'} above Base with the interval ("
        + (", ".join(above.sort_values("mean_delta", ascending=False).variant) or "none")
        + f"), {len(below)} below it."
    )
    if not noise.empty:
        lines.append(
            f"The noise control (frozen MaxSim plus noise) moves {metric} by {noise.mean_delta.max():+.3f} to "
            f"{noise.mean_delta.min():+.3f}: a reranker near that has bought nothing a random score would not."
        )
    return "\n".join(line for line in lines if line)


def _delta_text(row: pd.Series) -> str:
    return f"{row.variant} {row.mean_delta:+.3f} [{row.ci_low:+.3f}, {row.ci_high:+.3f}] (Holm p {row.p_holm:.2g})"


# ----------------------------------------------------------------------------- 06: the explorer


def explorer_result(
    sentence_a: str,
    sentence_b: str,
    scores: dict[str, float],
    near_misses: pd.DataFrame | None,
    backbone: str,
    cosine_scorers: Sequence[str],
) -> str:
    """Notebook 06 in words, from the explorer's scores of (A, B) and its near-miss table of A (one row
    per near-miss, the first row A against itself): each cosine-scale scorer's score of the pair, and how
    far each falls from A-against-itself on A's near-misses. Trained verifiers score logits with no
    fixed range, so only the scorers in `cosine_scorers` (pooled cosine, F0-F2) are compared."""
    shown = [s for s in cosine_scorers if s in scores]
    pair = ", ".join(f"{s} {scores[s]:.3f}" for s in shown)
    lines = [
        random_caveat(backbone),
        f'Under {describe_backbone(backbone)}, A = "{sentence_a}" and B = "{sentence_b}" score: {pair} '
        "(each on the cosine's scale, -1 to 1).",
    ]
    if near_misses is not None and len(near_misses) > 1:
        itself, near = near_misses.iloc[0], near_misses.iloc[1:]
        drops = {s: float(itself[s] - near[s].mean()) for s in shown if s in near_misses}
        if drops:
            text = ", ".join(f"{s} by {d:.3f}" for s, d in sorted(drops.items(), key=lambda kv: kv[1]))
            least = min(drops, key=drops.get)
            lines.append(
                f"On the {len(near)} near-misses the generator made of A, the scores fall on average from A "
                f"against itself: {text}. The smaller the fall, the less a scorer tells these edits from the "
                f"sentence itself ({least} least)."
            )
    lines.append("One pair and a few edits: an illustration; notebooks 03 and 04 measure this on held-out sets.")
    return "\n".join(line for line in lines if line)
