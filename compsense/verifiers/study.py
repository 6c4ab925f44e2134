"""Notebook 04's grid: every training-data variant x size x seed, trained and scored on every
near-miss set, with the results appended to one tidy table as each variant finishes.

Why a module: the loop holds state (fitted verifiers, their encoders) that must be dropped after
each variant, and a notebook cell should stay a call. Each variant trains into its own folder
(`layout.verifier_dir`: verifiers/<train_data>-<size>/seed<seed>/...), so variants
sit side by side in one work_dir and a re-run resumes finished ones.
"""

from __future__ import annotations

from typing import Sequence

import pandas as pd

from compsense.core import layout
from compsense.core.storage import append_results
from compsense.nearmiss import evaluation as N
from compsense.verifiers.architectures import PAPER_SIZE, Verifier, score_pairs, verifier_names
from compsense.verifiers.config import Compute, VerifierGrid, VerifierTraining
from compsense.verifiers.training import fit_grid, variant_name

SCOPE_KEYS = ("verifiers", "regimes")


def verifier_scorer(encoder, verifier: Verifier, batch_size: int = 64, cache_dir=None, device=None):
    """A scorer for `compsense.nearmiss.evaluation.near_miss_table`: pairs -> verifier scores."""
    return lambda pairs: score_pairs(
        encoder, verifier, pairs, batch_size=batch_size, cache_dir=cache_dir, device=device
    )


def verifier_scorers(fitted: dict, batch_size: int = 64, cache_dir=None, device=None) -> dict:
    """{label: scorer} for `near_miss_table` from `fit_grid`'s result (each with its own encoder).

    Frozen verifiers share the backbone, so their token embeddings are cached on disk once for all;
    an end-to-end encoder serves one verifier only, so its embeddings stay in memory.
    """
    return {
        label: verifier_scorer(
            enc,
            verifier,
            batch_size=batch_size,
            device=device,
            cache_dir=cache_dir if history["regime"] == "frozen" else None,
        )
        for label, (verifier, enc, history) in fitted.items()
    }


def size_plan(
    sizes: Sequence[str], names: Sequence[str], regimes: Sequence[str], size_scope: dict | None = None
) -> dict[str, tuple[list[str], list[str]]]:
    """What each size trains: {size: (verifiers, regimes)}, sizes with nothing to train left out.

    F0-F2 are one function at every size, so when `sizes` holds several they train under the first
    only (a second folder of the same F0-F2 would cost an end-to-end training each and add nothing).
    `size_scope` narrows a size further: {"paper": {"verifiers": ["F4"], "regimes": ["frozen"]}}
    trains only the frozen F4 at the authors' size (their F3 costs ~280x ours a map on a CPU:
    benchmarks/bench_verifier_sizes.py); a size it does not name trains everything.
    """
    scope = dict(size_scope or {})
    stray = sorted(set(scope) - set(sizes))
    if stray:
        raise ValueError(f"size_scope names sizes {stray} that `sizes` {list(sizes)} does not hold; fix one of them")
    plan = {}
    for i, size in enumerate(sizes):
        limits = scope.get(size) or {}
        unknown = sorted(set(limits) - set(SCOPE_KEYS))
        if unknown:
            raise ValueError(f"size_scope[{size!r}]: unknown keys {unknown}; use {list(SCOPE_KEYS)}")
        allowed = set(verifier_names(limits["verifiers"])) if "verifiers" in limits else None
        these = [n for n in verifier_names(names) if allowed is None or n in allowed]
        if i > 0:
            these = [n for n in these if n in PAPER_SIZE]
        regs = [r for r in regimes if "regimes" not in limits or r in limits["regimes"]]
        if these and regs:
            plan[size] = (these, regs)
    return plan


def run_study(
    rows_by_data: dict,
    grid: VerifierGrid,
    encoder,
    work_dir,
    sets: dict,
    backbone: str,
    training: VerifierTraining | None = None,
    results_path=None,
    compute: Compute | None = None,
    **labels,
):
    """Train and evaluate every (training data, size, seed) of `grid` (`VerifierGrid`), seed by
    seed, each verifier as `training` (`VerifierTraining`) says. Returns (training summary, tidy
    results). Which verifiers and regimes each size trains: `size_plan`.

    rows_by_data: {train_data: training rows} (`verifier_data.training_rows`); sets: `nearmiss_eval.eval_sets`.
    Results carry train_data, size, recipe and verifier_variant columns, `backbone` and the `labels`
    (e.g. profile="local"); with `results_path` they are appended there after each variant
    (`nearmiss.evaluation.NEARMISS_KEY`). Where F1-frozen is trained (nothing to learn), the noise
    control rides along: F1 plus seeded noise at `grid.noise_multiples` of its paraphrase spread
    (`nearmiss.evaluation.noise_controls`; () for none). `grid.folder_suffix` is added to each
    variant's folder name (the budget curve's budgets: `verifiers.budget`). `compute`: the device and
    the scorers' batch size.
    """
    compute = compute or Compute()
    summaries, results = [], []
    cache_dir = layout.cache_dir(work_dir)
    plan = size_plan(grid.sizes, grid.verifiers, grid.regimes, grid.size_scope)
    # Seed by seed, as notebook 02's runs: a run cut short has every variant at the first seeds,
    # side by side, rather than all seeds of the first variant and nothing of the others.
    for seed in grid.seeds:
        for train_data, rows in rows_by_data.items():
            for size, (size_names, size_regimes) in plan.items():
                variant = variant_name(train_data, size, grid.recipe) + grid.folder_suffix
                fitted, summary = fit_grid(
                    grid.replace(verifiers=size_names, regimes=size_regimes),
                    encoder,
                    rows,
                    work_dir,
                    training=training,
                    seed=seed,
                    size=size,
                    variant=variant,
                    compute=compute,
                )
                summaries.append(summary.assign(train_data=train_data, recipe=grid.recipe))
                scorers = verifier_scorers(
                    fitted, batch_size=compute.batch_size, cache_dir=cache_dir, device=compute.device
                )
                # the noise control: frozen MaxSim plus noise, beside what was trained
                scorers.update(N.noise_controls(scorers, sets, multiples=grid.noise_multiples, seed=seed))
                table = N.evaluate_sets(scorers, sets)
                tidy = N.to_tidy(
                    table,
                    "",
                    backbone,
                    seed,
                    verifier_variant=variant,
                    train_data=train_data,
                    size=size,
                    recipe=grid.recipe,
                    **labels,
                )
                tidy = tidy.merge(
                    summary[["verifier", "parameters", "examples_seen"]].rename(columns={"verifier": "variant"}),
                    on="variant",
                    how="left",
                )
                # the noise control's level, so notebook 05 reranks with the very same control
                sigmas = {name: s.sigma for name, s in scorers.items() if isinstance(s, N.NoisyScorer)}
                tidy["noise_sigma"] = tidy.variant.map(sigmas).astype(float)
                if results_path is not None:
                    append_results(tidy, results_path, key=N.NEARMISS_KEY)
                results.append(tidy)
                del fitted, scorers  # end-to-end encoders are large; one variant at a time
    return pd.concat(summaries, ignore_index=True), pd.concat(results, ignore_index=True)
