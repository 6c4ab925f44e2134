"""`compsense nearmiss MODEL`: near-miss sensitivity of any sentence-transformers encoder, from the shell
(issue 50, item 1), on text nobody here wrote and on the generator's held-out pairs.

Three sets, each a (positives, near-misses, key) triple built by notebook 04's own code
(`compsense.nearmiss.evaluation`):

- "condaqa": every usable CondaQA dev passage (`condaqa_pairs`, sentence unit): the original
  against its crowd paraphrase edit (positive) and against its negation-undone edit (near-miss),
  keyed by passage;
- "sugarcrepe": every SugarCrepe swap_att, swap_obj and replace_rel example (`sugarcrepe_pairs`):
  another caption of the same image as the query, the caption as positive and the negative caption
  as near-miss, keyed by example; family = subset;
- "heldout": notebook 01's near-miss pairs outside its train split (<work_dir>/negatives/pairs.parquet,
  `geometry.load_near_misses`) against MRPC/STS-B test paraphrases (`evaluation.heldout_positives`,
  from `structural.heldout_paraphrase_pairs`), keyed by the query sentence; skipped with a note when
  notebook 01 has not run.

Per set and family (and "all": the paper's families pooled where present, else every family of the
set, as `near_miss_table` pools), with the encoder's pooled cosine as the score:

- auc: `metrics.near_miss_auc`, every positive's cosine against the family's near-misses' (unpaired);
  interval `metrics.near_miss_auc_interval` (positives and near-misses resampled separately);
- pairwise_accuracy: `metrics.pairwise_accuracy`, each near-miss against the positives of its key;
  interval `metrics.keyed_pairwise_accuracy_interval` (keys resampled, their pairs together).

Both intervals are 95% percentile bootstraps over pairs, seeded. Rows: model, dataset, family, metric,
value, ci_low, ci_high, n (near-misses; for pairwise accuracy those with a positive), n_positives,
n_keys. Written to <out>/results/nearmiss.parquet (a later run of the same model replaces its rows)
and, per set, an MTEB-shaped JSON (<out>/mteb/<model>/no_revision_available/<Task>.json, one score
entry per family as its hf_subset, main score the near-miss AUC).
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Sequence

import numpy as np
import pandas as pd

from compsense.core.commands import run_stage
from compsense.core.encoders import Encoding, find_backbone, load_encoder, quiet_transformers
from compsense.core.paths import resolve
from compsense.core.storage import append_results, write_json
from compsense.data.datasets import as_pairs, load_sugarcrepe
from compsense.data.family_names import PAPER_FAMILIES
from compsense.nearmiss.evaluation import condaqa_pairs, cosine_scorer, heldout_positives, sugarcrepe_pairs
from compsense.nearmiss.geometry import load_near_misses
from compsense.nearmiss.metrics import (
    ALL_FAMILIES,
    AUC,
    PAIRWISE_ACCURACY,
    has_positive,
    keyed_pairwise_accuracy_interval,
    near_miss_auc,
    near_miss_auc_interval,
    pairwise_accuracy,
)
from compsense.retrieval.evaluate import (
    MTEB_FORMAT_VERSION,
    NO_REVISION,
    _check_model_and_out,
    _mteb_model_name,
    model_label,
)

SETS = ("condaqa", "sugarcrepe", "heldout")
SUGARCREPE_SUBSETS = ("swap_att", "swap_obj", "replace_rel")  # the swaps and the relation replacement
MTEB_TASKS = {"condaqa": "CondaQANearMiss", "sugarcrepe": "SugarCrepeNearMiss", "heldout": "HeldoutNearMiss"}
COLUMNS = ["model", "dataset", "family", "metric", "value", "ci_low", "ci_high", "n", "n_positives", "n_keys"]
KEY = ["model", "dataset", "family", "metric"]
DEFAULT_OUT = "runs/nearmiss"
TABLE = "nearmiss.parquet"


def parse_sets(sets: str | Sequence[str] | None) -> list[str]:
    """ "condaqa,heldout" -> ["condaqa", "heldout"]; None -> all of `SETS`; an unknown name is a ValueError."""
    names = list(SETS) if sets is None else [s.strip() for s in (sets.split(",") if isinstance(sets, str) else sets)]
    names = [n for n in names if n]
    unknown = [n for n in names if n not in SETS]
    if unknown or not names:
        raise ValueError(f"unknown near-miss set(s) {unknown or names}. Fix: choose from {', '.join(SETS)}")
    return names


def external_sets(
    sets: Sequence[str] = SETS, work_dir="runs/local", data_dir=None, seed: int = 0
) -> tuple[dict, list[str]]:
    """{set: (positives, near_misses, key column)} and notes. CondaQA and SugarCrepe must be here (a
    missing folder is a `MissingDataError` naming it and the fix); the held-out pairs are skipped with
    a note when notebook 01 has not written them."""
    out, notes = {}, []
    for name in parse_sets(list(sets)):
        if name == "condaqa":
            pos, neg = condaqa_pairs(data_dir=data_dir, seed=seed)
            out[name] = (pos, neg, "passage_id")
            notes.append(f"condaqa: {len(neg)} passages with a paraphrase and a negation-undone edit")
        elif name == "sugarcrepe":
            examples = load_sugarcrepe(SUGARCREPE_SUBSETS, data_dir=data_dir)
            pos, neg = sugarcrepe_pairs(examples, data_dir=data_dir, seed=seed)
            out[name] = (pos, neg, "example_id")
            notes.append(
                f"sugarcrepe: {len(neg)} of {len(examples)} {'/'.join(SUGARCREPE_SUBSETS)} examples "
                "(those whose image has another caption)"
            )
        else:
            try:
                heldout = load_near_misses(work_dir, split="heldout")
            except FileNotFoundError:
                notes.append(
                    f"heldout: skipped, no {work_dir}/negatives/pairs.parquet (notebook 01 writes it: "
                    f"{run_stage('01')}, or pass --work-dir)"
                )
                continue
            pos = heldout_positives(heldout, data_dir=data_dir, seed=seed)
            out[name] = (pos, heldout, "sentence1")
            notes.append(
                f"heldout: {len(heldout)} near-misses outside the train split, {len(pos)} paraphrase positives"
            )
    return out, notes


def score_sets(
    scorer: Callable[[list], np.ndarray], sets: dict, model: str = "", n_boot: int = 1000, seed: int = 0
) -> pd.DataFrame:
    """The tidy rows (`COLUMNS`) of `scorer` (pairs -> scores, higher = more alike) on `sets`."""
    rows = []
    for dataset, (positives, near_misses, key) in sets.items():
        pos, neg = positives.reset_index(drop=True), near_misses.reset_index(drop=True)
        if pos.empty or neg.empty:
            raise ValueError(f"{dataset}: no pairs to score ({len(pos)} positives, {len(neg)} near-misses)")
        scores = np.asarray(scorer(as_pairs(pos) + as_pairs(neg)), dtype=float)
        pos_scores, neg_scores = scores[: len(pos)], scores[len(pos) :]
        families = neg["family"].astype(str)
        in_paper = families.isin(PAPER_FAMILIES).to_numpy()
        pooled = in_paper if in_paper.any() else np.ones(len(neg), bool)
        pos_keys = pos[key].to_numpy()
        for family in [*sorted(families.unique()), ALL_FAMILIES]:
            sel = pooled if family == ALL_FAMILIES else (families == family).to_numpy()
            fam_scores, fam_keys = neg_scores[sel], neg[key].to_numpy()[sel]
            base = dict(model=model, dataset=dataset, family=family, n_positives=len(pos))
            low, high = _interval(near_miss_auc_interval, pos_scores, fam_scores, n=n_boot, seed=seed)
            rows.append(
                dict(
                    base,
                    metric=AUC,
                    value=near_miss_auc(pos_scores, fam_scores),
                    ci_low=low,
                    ci_high=high,
                    n=int(sel.sum()),
                    n_keys=len(set(fam_keys)),
                )
            )
            matched = has_positive(pos_keys, fam_keys)
            n_keys = len(set(fam_keys[matched]))
            value = pairwise_accuracy(pos_scores, fam_scores, pos_keys, fam_keys) if matched.any() else np.nan
            low, high = (np.nan, np.nan)
            if n_keys >= 2:
                low, high = keyed_pairwise_accuracy_interval(
                    pos_scores, fam_scores, pos_keys, fam_keys, n=n_boot, seed=seed
                )
            rows.append(
                dict(
                    base,
                    metric=PAIRWISE_ACCURACY,
                    value=value,
                    ci_low=low,
                    ci_high=high,
                    n=int(matched.sum()),
                    n_keys=n_keys,
                )
            )
    return pd.DataFrame(rows, columns=COLUMNS)


def _interval(fn, pos, neg, **kwargs) -> tuple[float, float]:
    """`fn`'s interval, NaN where there is too little to resample (one positive or one near-miss)."""
    if len(pos) < 2 or len(neg) < 2:
        return float("nan"), float("nan")
    return fn(pos, neg, **kwargs)


def mteb_records(table: pd.DataFrame, provenance: dict | None = None, split: str = "test") -> dict[str, dict]:
    """{task name: an MTEB TaskResult-shaped dict} per set in `table`: one score entry per family
    (hf_subset), main score the near-miss AUC; the intervals and counts sit beside the scores."""
    records = {}
    for dataset, rows in table.groupby("dataset", sort=True):
        entries = []
        for family, fam in rows.groupby("family", sort=True):
            entry = {"hf_subset": family, "languages": ["eng-Latn"]}
            for r in fam.itertuples():
                entry[r.metric] = _number(r.value)
                entry[f"{r.metric}_ci_low"] = _number(r.ci_low)
                entry[f"{r.metric}_ci_high"] = _number(r.ci_high)
                entry[f"{r.metric}_n"] = int(r.n)
            entry["n_positives"] = int(fam.n_positives.iloc[0])
            entry["main_score"] = entry.get(AUC)
            entries.append(entry)
        task = MTEB_TASKS.get(dataset, dataset)
        records[task] = {
            "dataset_revision": NO_REVISION,
            "task_name": task,
            "mteb_version": MTEB_FORMAT_VERSION,
            "scores": {split: entries},
            "evaluation_time": None,
            "kg_co2_emissions": None,
            "compsense": dict(provenance or {}, dataset=dataset, metric_definitions="compsense.nearmiss.external"),
        }
    return records


def _number(value) -> float | None:
    return None if value is None or pd.isna(value) else float(value)


def evaluate_near_misses(
    model: str,
    sets: Sequence[str] | str | None = None,
    work_dir="runs/local",
    data_dir=None,
    out: str | os.PathLike = DEFAULT_OUT,
    encoding: Encoding | None = None,
    seed: int = 0,
    n_boot: int = 1000,
) -> dict:
    """Score `model` (short name, hub id or saved folder) on `sets` and write the table and MTEB JSON
    files under `out`. Returns {"table": DataFrame, "tidy": path, "mteb": [paths], "notes": [...]}."""
    encoding = encoding or Encoding()
    names = parse_sets(sets)
    backbone = find_backbone(model)
    _check_model_and_out(model, backbone, out, [data_dir])  # --out may sit in the run folder (--work-dir)
    label = model_label(model, backbone)
    loaded, notes = external_sets(names, work_dir=work_dir, data_dir=data_dir, seed=seed)  # fail before encoding
    if not loaded:
        raise FileNotFoundError("; ".join(notes) + ". Nothing to score")
    started = time.monotonic()
    with quiet_transformers():
        encoder = load_encoder(model, device=encoding.device, max_seq_length=encoding.max_seq_length, seed=seed)
    table = score_sets(cosine_scorer(encoder, encoding.batch_size), loaded, model=label, n_boot=n_boot, seed=seed)
    seconds = time.monotonic() - started
    out_dir = resolve(out)
    tidy_path = out_dir / "results" / TABLE
    append_results(table, tidy_path, key=KEY)
    mteb_dir = out_dir / "mteb" / _mteb_model_name(model, backbone, label) / NO_REVISION
    provenance = {
        "model": str(model),
        "label": label,
        "max_seq_length": encoding.max_seq_length,
        "seed": seed,
        "n_boot": n_boot,
        "score": "pooled cosine",
        "seconds_all_sets": seconds,
    }
    files = [write_json(mteb_dir / f"{task}.json", record) for task, record in mteb_records(table, provenance).items()]
    write_json(
        mteb_dir / "model_meta.json",
        {"name": _mteb_model_name(model, backbone, label).replace("__", "/", 1), "revision": NO_REVISION},
    )
    return {"table": table, "tidy": tidy_path, "mteb": files, "notes": notes}


def main(model: str, **kwargs) -> int:
    result = evaluate_near_misses(model, **kwargs)
    for note in result["notes"]:
        print(note)
    table = result["table"]
    print(f"\n{'dataset':12s} {'family':14s} {'metric':18s} {'value':>7s}  95% interval      n")
    for r in table.itertuples():
        print(f"{r.dataset:12s} {r.family:14s} {r.metric:18s} {r.value:7.3f}  [{r.ci_low:.3f}, {r.ci_high:.3f}]  {r.n}")
    print(f"\ntidy table: {result['tidy']}")
    for path in result["mteb"]:
        print(f"MTEB JSON:  {path}")
    return 0
