"""`python -m compsense estimate`: seconds = the work units a profile asks for / the rate a run measured.

Hand-written because the units are this project's own (triplets trained, texts encoded, candidates
reranked: UNITS) and so are the records that time them: DONE.json per trained model, verifier.json per
verifier, and the papermill metadata of each executed notebook (its duration less the trainings recorded
as finished inside it; no cell text is read). Every row names its source file and device. Nothing is
guessed: a component no run measured, or measured at other data settings (SAME), is "not measured", and
the total says how many rows it leaves out. The one modelling assumption: a backbone no run measured
takes (its parameter count / the measured one's) times as long (`n_parameters` in core.encoders.BACKBONES).

Without a run (`--from`) the rates are the published run's, figures/tables/measured_rates.csv (the report
writes it); stages 00 and 06, which only run a notebook, fall back on docs/notebooks/run_summary.json.
`length_estimate` prices a `python -m compsense length` piece from figures/tables/length_record.json.
"""

from __future__ import annotations

import glob
import json
import math
import re
from datetime import datetime, timezone
from pathlib import Path

import pandas as pd

from compsense.core.encoders import BACKBONES
from compsense.core.layout import model_dir, results_file, trained_model_dirs, verifiers_root
from compsense.core.paths import repo_root, resolve
from compsense.core.storage import CorruptFile, read_json, read_table
from compsense.nearmiss.length_curve import POINTS
from compsense.nearmiss.length_run import length_root
from compsense.pipeline import screen
from compsense.pipeline.profiles import stage_parameters
from compsense.pipeline.stages import read_summary, shown, stage_key
from compsense.retrieval.length import LENGTH_VARIANTS, SCHEDULE_STEPS, finished_steps
from compsense.retrieval.training import TrainConfig, plan_runs
from compsense.verifiers.groups import flat
from compsense.verifiers.study import size_plan

UNITS = {
    ("00", "notebook"): "notebook runs at the same settings",
    ("01", "negatives"): "notebook runs at the same sentence settings",
    ("02", "train"): "triplets trained: trained runs (A, B, share-sweep extras) x steps x batch",
    ("02", "evaluate"): "texts encoded: models evaluated (base + trained) x (queries + docs); "
    "the rate also pays for data loading, bootstrap and figures",
    ("03", "score"): "models scored (base + variants x seeds), each on the pairs its settings select",
    ("04", "train"): "triplets a verifier sees: budget_examples (0 for frozen F0/F1: nothing to train)",
    ("04", "score"): "scorers (3 cosines + verifiers x regimes) on the held-out pairs",
    ("05", "rerank"): "candidates scored: verifiers x regimes x verifier seeds x notebook-04 variants x queries x "
    "max(ks), + corpus (variants: an upper bound, a paper-size one holds only what `size_scope` gives it)",
    ("06", "notebook"): "notebook runs at the same settings",
}
# Settings under which a measured rate transfers; a difference makes the row "not measured".
SAME = {
    ("00", "notebook"): ["backbone"],
    ("06", "notebook"): ["backbone"],
    ("01", "negatives"): "mrpc_train_sentences mrpc_test_sentences user_sentences_path families max_per_family".split(),
    ("02", "evaluate"): ["max_seq_length", "eval_extra_docs"],
    ("03", "score"): "families negatives_split max_pairs_per_family mrpc_split max_positives n_reference_pairs "
    "sugarcrepe_subsets sugarcrepe_per_subset max_seq_length".split(),
    ("04", "train"): ["batch_size", "in_batch_negatives", "max_seq_length", "include_special"],
    ("04", "score"): "max_pairs train_split heldout_split mrpc_split max_seq_length include_special".split(),
    ("05", "rerank"): ["first_stage", "eval_extra_docs", "max_seq_length", "cache_dtype"],
}
NOTED = {("02", "train"): ["batch_size", "max_seq_length"]}  # differences noted, rate still used
# The part of a stage its notebook's own time measures (the trainings recorded inside it excluded).
REST = dict(zip("00 01 02 03 04 05 06".split(), "notebook negatives evaluate score score rerank notebook".split()))
TRAINS = ("02", "04")  # stages whose trainings DONE.json / verifier.json time (subtracted from the notebook's)
UNTRAINED = {("F0", "frozen"), ("F1", "frozen")}  # no trainable parameters, frozen encoder
NOT_MEASURED = "not measured"
UNRECORDED = "not recorded"  # the device of a measurement whose record does not say it
WORK = ["stage", "component", "backbone", "units", "unit", "settings", "note"]
MEASURED = ["stage", "component", "backbone", "units", "seconds", "source", "device", "settings"]
COLUMNS = ["stage", "component", "backbone", "units", "unit", "rate", "seconds", "source", "device", "assumption"]


def stage_params(profile: str, overrides=()) -> dict[str, dict]:
    """Each stage's parameters as the runner injects them (and papermill records), keyed by notebook prefix."""
    return {stage_key(nb): p for nb, p in stage_parameters(profile, overrides).items() if nb.stem[:2].isdigit()}


def work_units(profile: str, work_dir=None, sizes: dict | None = None, overrides=(), only=None) -> pd.DataFrame:
    """The work `profile` (with `overrides`, as `dvc exp run -S` gives them; `only`: these stage keys)
    asks for, per stage, component and backbone (see UNITS). Dataset sizes: `sizes`, else the result
    tables of the run in `work_dir`; an unknown size gives NaN units."""
    if sizes is None:
        sizes = run_sizes(resolve(work_dir)) if work_dir is not None else {}
    params = sorted(stage_params(profile, overrides).items())
    return pd.DataFrame([r for s, p in params if only is None or s in only for r in _units(s, p, sizes)], columns=WORK)


def _units(stage: str, p: dict, sizes: dict) -> list[list]:
    p = flat(p)  # notebook 04's grouped settings (`training`, `rows`, ...) by name, as older runs recorded them

    def row(component, backbone, units, note="", **given):
        kind = (stage, component.split()[0])
        settings = {k: given.get(k, p.get(k)) for k in SAME.get(kind, []) + NOTED.get((stage, component), [])}
        return [stage, component, backbone, units, UNITS[kind], settings, note]

    if stage == "02":
        extras = {k: p.get(k) or () for k in ("sweep_all_seeds", "first_seed_only")}
        sweep = p.get("share_sweep") or ()
        runs = plan_runs(p["backbones"], p["seeds"], p["variants"], p["structural_share"], sweep, **extras)
        texts, note = _sized(p["eval_datasets"], p.get("eval_max_queries"), sizes, with_docs=True)
        out = []
        for b in p["backbones"]:
            mine = [r for r in runs if r.backbone == b]
            cfg = TrainConfig.paper(b, max_steps=p.get("max_steps"), batch_size=p.get("batch_size"))
            trained = sum(r.variant != "base" for r in mine) * cfg.max_steps * cfg.batch_size
            out += [row("train", b, trained, batch_size=cfg.batch_size), row("evaluate", b, len(mine) * texts, note)]
        return out
    if stage == "03":
        return [row("score", b, 1 + len(p["seeds"]) * len(p["variants"])) for b in p["backbones"]]
    if stage == "04":
        # every (training data, seed) trains each verifier once per size; sizes train at their own rates
        repeats = len(p.get("train_data") or [None]) * len(p.get("verifier_seeds") or [None])
        plan = size_plan(p.get("sizes") or ["small"], p["verifiers"], p["regimes"], p.get("size_scope"))
        trains = [
            row(_verifier(v, r, size), p["backbone"], 0 if (v, r) in UNTRAINED else repeats * p["budget_examples"])
            for size, (names, regimes) in plan.items()
            for v in names
            for r in regimes
        ]
        return trains + [row("score", p["backbone"], 3 + repeats * sum(len(n) * len(r) for n, r in plan.values()))]
    if stage == "05":
        queries, note = _sized(p["eval_datasets"], p.get("eval_max_queries"), sizes, with_docs=False)
        # A run made before notebook 05 read several variants has `verifier_variant`, one folder.
        variants = len(p.get("verifier_variants") or [None])
        methods = len(p["verifiers"]) * len(p["regimes"]) * len(p.get("verifier_seeds") or [None]) * variants
        return [row("rerank", p["backbone"], methods * queries * max(p["ks"]), note)]
    return [row(REST[stage], p.get("backbone") or "", 1)]


def _sized(datasets, max_queries, sizes: dict, with_docs: bool) -> tuple[float, str]:
    """Σ over datasets of their recorded queries (+ docs); NaN and a note when a size is unknown."""
    names = [f"{d}@q{max_queries}" if max_queries else str(d) for d in datasets]
    unknown = [n for n in names if n not in sizes]
    if unknown:
        which = ", ".join(unknown[:3]) + " ..." * (len(unknown) > 3)
        return math.nan, f"size of {which} unknown: no run in this work_dir evaluated it (results/*.parquet)"
    return float(sum(sizes[n][0] + sizes[n][1] * with_docs for n in names)), ""


def run_sizes(work: Path) -> dict[str, tuple[int, int]]:
    """Dataset name -> (queries, docs), as the run's result tables recorded them."""
    sizes = {}
    for path in (results_file(work, "retrieval"), results_file(work, "rerank")):
        if path.exists():
            table = read_table(path)[["dataset", "n_queries", "n_docs"]].dropna().drop_duplicates()
            sizes.update({r.dataset: (int(r.n_queries), int(r.n_docs)) for r in table.itertuples()})
    return sizes


def _verifier(name: str, regime: str, size: str) -> str:
    """`train F3-frozen`; the authors' sizes train at other rates: `train F3-frozen (paper size)`."""
    return f"train {name}-{regime}" + ("" if size == "small" else f" ({size} size)")


# ---------------------------------------------------------------------------------------------
# What a run measured


def measured_rates(work_dir, sizes: dict | None = None) -> pd.DataFrame:
    """Per stage, component and backbone: the units and seconds the run in `work_dir` measured, the rate,
    its source file and device (the run's), and the settings it ran at. Every run folder's notebooks count.
    `sizes`: the run's dataset sizes when the caller has read them (`run_sizes`)."""
    work = resolve(work_dir)
    if not work.is_dir():
        raise FileNotFoundError(f"{work}: no such run folder; pass the work_dir of a run (e.g. runs/local)")
    device = run_device(work)
    notebooks = _notebook_rates(work, device, run_sizes(work) if sizes is None else sizes)
    backbone04 = next((r[2] for r in notebooks if r[0] == "04"), None)  # what notebook 04 trained verifiers on
    rows = _train_rates(work, device) + _verifier_rates(work, device, backbone04) + notebooks
    df = pd.DataFrame(rows, columns=MEASURED)
    return df.assign(rate=df.units / df.seconds)


def _train_rates(work: Path, device: str) -> list[list]:
    """Triplets per second per backbone: the DONE.json of all its finished trainings together."""
    found: dict[str, list] = {}
    for done in (f / "DONE.json" for f in trained_model_dirs(work)):
        d = read_json(done) if done.exists() else {}
        cfg, seconds, per_s = d.get("config", {}), d.get("duration_s") or 0, d.get("triplets_per_s") or 0
        units = per_s * seconds or d.get("global_step", 0) * cfg.get("batch_size", 0) * d.get("world_size", 1)
        if seconds > 0 and units > 0:
            found.setdefault(done.parent.parent.name, []).append((units, seconds, cfg))
    rows = []
    for b, ms in found.items():
        units, seconds, cfgs = zip(*ms)
        settings = {k: _one(c.get(k) for c in cfgs) for k in NOTED[("02", "train")]}
        source = f"{shown(work)}/models/{b}/*/DONE.json ({len(ms)} runs)"
        rows.append(["02", "train", b, sum(units), sum(seconds), source, device, settings])
    return rows


def _verifier_rates(work: Path, device: str, backbone: str | None) -> list[list]:
    """Examples per second per verifier and regime, from each verifier.json's training history."""
    rows = []
    # verifiers/<train_data>-<size>/seed<s>/<name>-<regime>/verifier.json (older runs: verifiers/<name>-<regime>/)
    for path in sorted(verifiers_root(work).glob("**/verifier.json")):
        d = read_json(path)
        h, settings = d.get("history", {}), d.get("settings", {})
        if h.get("trained") and h.get("seconds") and h.get("examples_seen"):
            size = d.get("size") or settings.get("verifier_kwargs", {}).get("size", "small")
            recorded = {k: {**settings, **h}.get(k, UNRECORDED) for k in SAME[("04", "train")]}
            component = _verifier(h["verifier"], h["regime"], size)
            rows.append(["04", component, backbone, h["examples_seen"], h["seconds"], shown(path), device, recorded])
    return rows


def _notebook_rates(work: Path, device: str, sizes: dict) -> list[list]:
    """Per stage, its own part (REST) from its slowest finished execution: a re-run that finds finished models
    and caches does less. A training stage's own time is its duration less the trainings that finished inside
    its window; an execution without a window (run by hand) is left out, its training share unknown."""
    best: dict[str, list] = {}
    trainings = _finished_trainings(work)
    for path in sorted(work.glob("*/[0-9][0-9]_*.ipynb")):
        stage, pm = path.name[:2], read_json(path).get("metadata", {}).get("papermill", {})
        window, trains = (_utc(pm.get("start_time")), _utc(pm.get("end_time"))), stage in TRAINS
        if pm.get("duration") is None or pm.get("exception") or stage not in REST or (trains and None in window):
            continue
        try:
            rows = [r for r in _units(stage, pm.get("parameters", {}), sizes) if r[1] == REST[stage]]
        except (KeyError, TypeError):  # run by hand, without parameters the runner would have injected
            continue
        inside = sum(t for finished, t in trainings if window[0] <= finished <= window[1]) if trains else 0.0
        seconds = pm["duration"] - inside
        units, old = sum(r[3] for r in rows), best.get(stage)
        if seconds <= 0 or not rows or math.isnan(units) or (old and units / seconds >= old[3] / old[4]):
            continue
        source = f"{shown(path)} (papermill duration" + ", less the trainings recorded inside it" * trains + ")"
        backbone = ",".join(sorted({str(r[2]) for r in rows}))
        best[stage] = [stage, REST[stage], backbone, units, seconds, source, device, rows[0][5]]
    return list(best.values())


def _utc(stamp) -> datetime | None:
    """An ISO time as aware UTC (papermill writes naive UTC, DONE.json '+00:00'); None if absent or unreadable."""
    try:
        t = datetime.fromisoformat(str(stamp))
    except (TypeError, ValueError):
        return None
    return t if t.tzinfo else t.replace(tzinfo=timezone.utc)


def _finished_trainings(work: Path) -> list[tuple[datetime, float]]:
    """(finished at, seconds) of every training the run recorded, read once for all its executions: the part
    of a notebook's time the training rates already count (a model reused from an earlier run is not in it).
    A verifier.json written before verifiers recorded finished_at counts at its file's time."""
    root = verifiers_root(work)
    verifiers = sorted(root.rglob("verifier.json")) if root.is_dir() else []
    out = []
    for path in [f / "DONE.json" for f in trained_model_dirs(work)] + verifiers:
        try:
            d = json.loads(path.read_text())
        except (OSError, ValueError):
            continue
        if path.name == "verifier.json":
            d = d.get("history", {})
            d["finished_at"] = d.get("finished_at") or datetime.fromtimestamp(path.stat().st_mtime, timezone.utc)
        if (finished := _utc(d.get("finished_at"))) is not None:
            out.append((finished, float(d.get("duration_s") or d.get("seconds") or 0)))
    return out


def run_device(work: Path) -> str:
    """The device the run recorded: results/rerank_cost's column, else a CPU-only torch build in a DONE.json."""
    cost = results_file(work, "rerank_cost")
    if cost.exists() and (devices := sorted(read_table(cost)["device"].dropna().astype(str).unique())):
        return ", ".join(devices)
    for done in (f / "DONE.json" for f in trained_model_dirs(work) if (f / "DONE.json").exists()):
        if device := _cpu_build(read_json(done).get("versions", {}).get("torch", "")):
            return device
    return UNRECORDED


def _cpu_build(torch: str, where: str = "") -> str | None:
    """'cpu (torch 2.x+cpu<where>)' for a CPU-only torch build's version string, else None."""
    return f"cpu (torch {torch}{where})" if torch.endswith("+cpu") else None


def _one(values):
    vals = {json.dumps(v, sort_keys=True, default=str) for v in values}
    return json.loads(vals.pop()) if len(vals) == 1 else "mixed"


# ---------------------------------------------------------------------------------------------
# Measurements kept in the repository: the published run's rates, the notebook pages' run

# The report writes these beside its tables and `make figures` publishes them, so a fresh clone
# estimates without a run of its own (`estimate --profile local`).
RATES_TABLE, SIZES_TABLE = "measured_rates", "dataset_sizes"
PAGES_SUMMARY = Path("docs") / "notebooks" / "run_summary.json"
PAGES_SOURCE = "the whole stage, in the run the notebook pages show"


def published_measurements(tables_dir=None) -> tuple[pd.DataFrame, dict]:
    """(measured rates, dataset sizes) from figures/tables/{measured_rates,dataset_sizes}.csv. A row's source
    says whether the run file it was measured from is in this checkout; of its device only the device is
    kept (what followed in parentheses cited the measuring run's files)."""
    folder = resolve(tables_dir) if tables_dir is not None else repo_root() / "figures" / "tables"
    rates_path, sizes_path = folder / f"{RATES_TABLE}.csv", folder / f"{SIZES_TABLE}.csv"
    fix = "pass --from runs/<profile> (a run's work_dir)"
    if not rates_path.exists():
        raise FileNotFoundError(f"{rates_path}: no published measurements. Fix: {fix}, or publish a run (make figures)")
    try:
        rates = pd.read_csv(rates_path, dtype={"stage": str, "component": str, "backbone": object, "source": str})
        rates["settings"] = [json.loads(v) if isinstance(v, str) and v else {} for v in rates.get("settings", [])]
        rates["backbone"] = rates.backbone.astype(object).where(rates.backbone.notna(), None)
        table = pd.read_csv(sizes_path, dtype={"dataset": str}) if sizes_path.exists() else pd.DataFrame()
        sizes = {r.dataset: (int(r.n_queries), int(r.n_docs)) for r in table.itertuples()}
    except (ValueError, KeyError, AttributeError, UnicodeDecodeError) as err:  # pandas' ParserError is a ValueError
        raise CorruptFile(
            f"{rates_path} or {sizes_path.name}: not the table the report publishes ({type(err).__name__}: {err}). "
            f"Fix: restore them (git checkout -- {shown(folder)}), or {fix}"
        ) from None
    here = {True: "not in this checkout", False: "here"}
    rates["source"] = [
        s if not s or s.startswith(NOT_MEASURED) else f"{shown(rates_path)}, measured from {s} ({here[_absent(s)]})"
        for s in rates.source.fillna("")
    ]
    rates["device"] = [d.split(" (")[0] if isinstance(d, str) else d for d in rates.device]
    return rates, sizes


def _absent(text: str) -> bool:
    """Whether `text` cites a file (under runs/, or absolute; `*` any folder) that this machine lacks."""
    cited = re.findall(r"(?<![\w/.-])((?:/|runs/)[^\s,;()]+)", text)
    return any(not glob.glob(c if c.startswith("/") else str(repo_root() / c)) for c in cited)


def pages_measurements(path=None) -> pd.DataFrame:
    """Rates of the notebook-only stages (00, 06: one run each, nothing trained) from the committed summary
    of the run the notebook pages show (docs/notebooks/run_summary.json): the settings are its profile's,
    the device is not recorded. Empty when the file is absent."""
    path = resolve(path) if path is not None else repo_root() / PAGES_SUMMARY
    summary = read_summary(path) if path.is_file() else {}
    params = stage_params(summary.get("profile", "local"), summary.get("overrides") or ()) if summary else {}
    source = f"{shown(path)}: {PAGES_SOURCE} (profile {summary.get('profile')}, commit {summary.get('commit', '?')})"
    rows = []
    for stage, r in sorted(summary.get("stages", {}).items()):
        p = params.get(stage)
        if REST.get(stage) == "notebook" and r.get("status") == "ok" and r.get("seconds") and p is not None:
            settings = {k: p.get(k) for k in SAME[(stage, "notebook")]}
            rows.append([stage, "notebook", p.get("backbone"), 1.0, float(r["seconds"]), source, UNRECORDED, settings])
    df = pd.DataFrame(rows, columns=MEASURED)
    return df.assign(rate=1.0 / df.seconds)


def measurement_tables(work_dir) -> tuple[pd.DataFrame, pd.DataFrame]:
    """What the report writes for `published_measurements`: the rates (settings as JSON) and sizes."""
    work = resolve(work_dir)
    rates = measured_rates(work)
    rates = rates.assign(settings=[json.dumps(v, sort_keys=True, default=str) for v in rates.settings])
    sizes = [(name, q, d) for name, (q, d) in sorted(run_sizes(work).items())]
    return rates, pd.DataFrame(sizes, columns=["dataset", "n_queries", "n_docs"])


def rates_origin(work_dir=None) -> str:
    """Where the estimate's rates come from, in words (the command prints it above the table)."""
    if work_dir is not None:
        text = f"Rates measured by the run in {work_dir} (its DONE.json, verifier.json and executed notebooks)"
    else:
        text = (
            f"No measured run given (--from): using the committed rates of figures/tables/{RATES_TABLE}.csv and "
            f"the dataset sizes of {SIZES_TABLE}.csv (each note says whether the run file it cites is here)"
        )
    return f"{text}; stages that only run a notebook (00, 06) that it did not measure come from {PAGES_SUMMARY}."


# ---------------------------------------------------------------------------------------------
# The estimate


def estimate(
    target_profile: str, work_dir=None, rates=None, tables_dir=None, overrides=(), only=None, pages_summary=None
) -> pd.DataFrame:
    """Seconds per stage/component/backbone of `target_profile` at the rates measured in `work_dir` (None:
    `published_measurements(tables_dir)`), and a last `total` row over the measured rows (its source counts
    the rows left out). Stages 00 and 06 that neither measured come from `pages_measurements(pages_summary)`
    (False: not read). rates: rates measured elsewhere, cited:
    {(stage, component, backbone or None): {"rate": units/s, "device": ..., "source": ...}}."""
    cited = _check_rates(rates or {})
    if work_dir is None:
        measured, sizes = published_measurements(tables_dir)
    else:
        sizes = run_sizes(resolve(work_dir))
        measured = measured_rates(work_dir, sizes)
    if pages_summary is not False:
        pages = pages_measurements(pages_summary)
        pages = pages[~pages.stage.isin(measured.stage[measured.component == "notebook"])]
        measured = pd.concat([measured, pages], ignore_index=True) if not pages.empty else measured
    units = work_units(target_profile, work_dir, sizes=sizes, overrides=overrides, only=only)
    df = pd.DataFrame([_price(u, measured, cited) for u in units.to_dict("records")], columns=COLUMNS)
    left_out = int(df.seconds.isna().sum())
    source = f"{left_out} row(s) {NOT_MEASURED}: the total leaves them out (a lower bound)" if left_out else ""
    total = {"stage": "total", "component": "measured rows", "seconds": df.seconds.sum(min_count=1)}
    total["device"] = "; ".join(sorted(set(df.device.dropna())))
    return pd.concat([df, pd.DataFrame([{**total, "source": source or "every row measured"}])], ignore_index=True)


def _price(u: dict, measured: pd.DataFrame, cited: dict) -> list:
    """One row: `u`'s units at a cited rate, else at the rate measured for its backbone at the same settings
    (SAME), else at another backbone's scaled by parameter count; else "not measured"."""

    def row(rate=math.nan, source=NOT_MEASURED, device=None, assumption=""):
        seconds = 0.0 if u["units"] == 0 else u["units"] / rate
        return [*(u[k] for k in COLUMNS[:5]), rate, seconds, source, device, assumption]

    key, target, settings = (u["stage"], u["component"]), u["backbone"], u["settings"]
    if u["units"] == 0:
        return row(source="nothing to do")
    if math.isnan(u["units"]):
        return row(source=f"{NOT_MEASURED}: {u['note']}")
    for c in (cited.get((*key, b)) for b in (target, None)):
        if c:
            return row(c["rate"], c["source"], c["device"], "measured elsewhere (cited)")
    same = measured[(measured.stage == u["stage"]) & (measured.component == u["component"])]
    for m in same.itertuples():
        if pd.isna(m.backbone) or str(target) in str(m.backbone).split(","):
            if strict := _strict_diff(u, m.settings):
                return row(source=f"{NOT_MEASURED} at these settings ({strict}); measured: {m.source}")
            diff = {k: v for k, v in settings.items() if m.settings.get(k) != v}
            noted = [f"measured at {k}={m.settings.get(k)}, target {v}" for k, v in diff.items()]
            return row(m.rate, m.source, m.device, ", ".join(noted))
    # A backbone no run measured: a cited or (at the same settings) measured backbone's rate, scaled.
    others = [(b, c["rate"], c["source"], c["device"]) for (*k, b), c in cited.items() if tuple(k) == key and b]
    others += [(m.backbone, m.rate, m.source, m.device) for m in same.itertuples() if not _strict_diff(u, m.settings)]
    if not others and not same.empty:
        m = same.iloc[0]
        why = f"measured for {m.backbone} at other settings ({_strict_diff(u, m.settings)}); measured: {m.source}"
        return row(source=f"{NOT_MEASURED} for {target}: {why}")
    count = {name: b.n_parameters for name, b in BACKBONES.items()}
    for b, rate, source, device in others:
        if count.get(b) and count.get(target):
            why = f"scaled from {b} by parameter count ({count[b]:,} / {count[target]:,})"
            return row(rate * count[b] / count[target], source, device, why)
    why = (
        f"measured for {', '.join(same.backbone.astype(str))} only, and compsense/core/encoders.py "
        "BACKBONES has no n_parameters to scale by"
    )
    return row(source=f"{NOT_MEASURED} for {target}: {'no run measured it' if same.empty else why}")


def _strict_diff(u: dict, measured_settings: dict) -> str:
    """The settings (SAME) under which a measurement does not transfer to `u`, as 'k a -> b' text."""
    strict = SAME.get((u["stage"], u["component"].split()[0]), [])
    diff = [(k, measured_settings.get(k), v) for k, v in u["settings"].items() if k in strict]
    return ", ".join(f"{k} {a!r} -> {b!r}" for k, a, b in diff if a != b)


def parse_rates(specs, device=None, source=None) -> dict:
    """`estimate --rate STAGE/COMPONENT[/BACKBONE]=UNITS_PER_S` values as `estimate(rates=)` takes them;
    ValueError in one line naming the --rate and what it should be."""
    rates = {}
    for spec in specs:
        key, _, value = str(spec).partition("=")
        parts = key.split("/")
        if len(parts) not in (2, 3) or not value.strip():
            raise ValueError(f"--rate {spec!r}: expected STAGE/COMPONENT[/BACKBONE]=UNITS_PER_S, e.g. 02/train=2322")
        if (parts[0], (parts[1].split() or [""])[0]) not in UNITS:
            known = ", ".join(f"{s}/{c}" for s, c in UNITS)
            raise ValueError(f"--rate {spec!r}: no component {parts[0]}/{parts[1]}; the components are {known}")
        try:
            rate = float(value)
        except ValueError:
            rate = math.nan
        if not _positive(rate):
            raise ValueError(f"--rate {spec!r}: the rate must be a number of units per second > 0, got {value!r}")
        rates[(*parts[:2], parts[2] if len(parts) == 3 else None)] = {"rate": rate, "device": device, "source": source}
    return rates


def _check_rates(rates: dict) -> dict:
    for key, r in rates.items():
        if not (isinstance(r, dict) and r.get("rate") and r.get("source") and r.get("device")):
            raise ValueError(
                f"rates[{key!r}] = {r!r}: a rate measured elsewhere needs 'rate', 'device' and 'source' (cite it)"
            )
        if not _positive(r["rate"]):
            raise ValueError(f"rates[{key!r}]: the rate must be a number of units per second > 0, got {r['rate']!r}")
    return rates


def _positive(rate) -> bool:  # a negative or NaN rate would price work at negative or no seconds
    return isinstance(rate, (int, float)) and not isinstance(rate, bool) and math.isfinite(rate) and rate > 0


# ---------------------------------------------------------------------------------------------
# Presentation

ESTIMATE_TITLE = "Time estimate for the paper profile from this run's measured throughput"


def report_sections(work_dir) -> list[dict]:
    """The run report's sections on time (`pipeline.report.Block` fields): the paper profile's estimate at
    the rates the run in `work_dir` measured, and those rates and dataset sizes as tables, which `make
    figures` publishes for `estimate` on a fresh clone. Never fails the report: what it lacks is said."""
    work = resolve(work_dir)
    try:
        est = estimate("paper", work)
        rates, sizes = measurement_tables(work)
    except Exception as err:  # noqa: BLE001 - the report must be written whatever the estimate hits
        needs = f"It needs the run's work_dir ({work}) with DONE.json, verifier.json or executed notebooks in it."
        return [{"title": ESTIMATE_TITLE, "text": f"No estimate: {type(err).__name__}: {err}. {needs}"}]
    command = f"`python -m compsense estimate --profile paper --from {shown(work)}` prints it"
    published = (
        "Published beside the other tables, so `python -m compsense estimate --profile local` works on a fresh clone."
    )
    sections = [
        (ESTIMATE_TITLE, f"{headline(est)} {command}; --rate adds rates measured elsewhere.", None, None),
        ("Time estimate per stage and component (paper profile)", None, display_frame(est), "estimate"),
        ("Measured rates (what `estimate` reads when no run is given)", published, rates, RATES_TABLE),
        ("Dataset sizes the run recorded", None, sizes, SIZES_TABLE),
    ]
    return [{k: v for k, v in zip(("title", "text", "table", "name"), s) if v is not None} for s in sections]


def headline(est: pd.DataFrame) -> str:
    """One paragraph: the total, on which devices its rates were measured, what it leaves out. Rows whose
    device no record gives (the notebook pages' run) are counted apart and do not decide the verdict."""
    total, rows = est.iloc[-1], est.iloc[:-1].dropna(subset=["device"])
    if total.seconds != total.seconds:  # NaN: no row has a rate
        return (
            f"Estimated total: {NOT_MEASURED}: no run measured any of the {len(est) - 1} rows ({total.source}). "
            "Run the profile's stages once (or pass --from a run that did)."
        )
    known, unrecorded = rows[rows.device != UNRECORDED], rows[rows.device == UNRECORDED]
    on = [f"{d} ({n} row{'s' * (n != 1)})" for d, n in known.groupby("device").size().items()] or ["no device"]
    if not unrecorded.empty:
        which = ", ".join(unrecorded.stage + " " + unrecorded.component)
        on.append(f"{len(unrecorded)} row(s) record no device ({which}: {unrecorded.seconds.sum():,.0f} s)")
    gpu = ("cuda", "nvidia", "gpu", "h100", "h200")
    kinds = {"gpu" if any(w in d.lower() for w in gpu) else "cpu" if "cpu" in d.lower() else "?" for d in known.device}
    verdict = {
        frozenset(): "No row records its device: the total is an estimate for a device nobody named.",
        frozenset({"cpu"}): "These are CPU measurements: this is a CPU estimate, not a GPU (H200) one.",
        frozenset({"gpu"}): "Every rate was measured on a GPU: this is an estimate for that GPU.",
    }.get(frozenset(kinds), "The rows mix devices (or do not record one): read the rows per device.")
    s = total.seconds
    total_text = f"Estimated total: {s:,.0f} s ({s / 60:,.1f} min) over the measured rows; {total.source}."
    return f"{total_text} Rates measured on: {'; '.join(on)}. {verdict}"


def _num(v, fmt: str, empty: str = "–") -> str:
    return empty if v is None or v != v else format(v, fmt)


def display_frame(est: pd.DataFrame) -> pd.DataFrame:
    """The estimate with numbers as readable strings (for markdown: the report and `--verbose`)."""
    formats = {"units": ",.0f", "rate": ".4g", "seconds": ",.1f"}
    numbers = {c: est[c].map(lambda v, f=f: _num(v, f)) for c, f in formats.items()}
    return est.drop(columns="unit").assign(**numbers).fillna("")


def screen_text(est: pd.DataFrame) -> str:
    """The estimate in `screen.WIDTH` columns: one line per row pointing to a numbered note with its source,
    device and assumption (rows that share these share the note); `estimate --verbose` prints the table."""
    notes: dict[str, int] = {}
    rows = []
    for r in est.to_dict("records"):
        parts = [r["source"], isinstance(r["device"], str) and f"device: {r['device']}", r["assumption"]]
        note = notes.setdefault("; ".join(p for p in parts if isinstance(p, str) and p), len(notes) + 1)
        backbone, units = (r["backbone"] if isinstance(r["backbone"], str) else ""), _num(r["units"], ",.0f", "")
        rate = _num(r["rate"], ".4g") + ("/s" if pd.notna(r["rate"]) else "")
        rows.append([r["stage"], r["component"], backbone, units, rate, screen.duration(r["seconds"]), f"[{note}]"])
    table = screen.table("stage component backbone units rate time note".split(), rows, right={3, 4, 5}, fit=1)
    notes_text = [screen.wrap(text, indent=" " * (len(str(n)) + 3), first=f"[{n}] ") for text, n in notes.items()]
    return "\n".join([table, "", *notes_text])


# ---------------------------------------------------------------------------------------------
# The training-length curve's pieces (`python -m compsense length`)

LENGTH_RECORD = Path("figures") / "tables" / "length_record.json"


def length_rates(precision: str, record_path=None) -> dict:
    """Seconds a training step and a scored step take at `precision`, each the slowest recorded part's (a part
    that resumed from a checkpoint trained fewer steps than it lists), from the committed record of the curve's
    parts (`length --publish`): {"train": (s, part), "score": (s, part), "train_range": (lo, hi), "parts": n,
    "device", "source"}."""
    path = resolve(record_path) if record_path is not None else repo_root() / LENGTH_RECORD
    if not path.is_file():
        raise FileNotFoundError(f"{path}: no record of the curve's pieces; `compsense length --publish` writes it")
    record = read_json(path)
    parts = [
        p
        for p in record.get("parts", []) + record.get("precision_control", [])
        if p.get("precision") == precision and p.get("steps") and None not in (p.get("train_s"), p.get("eval_s"))
    ]
    if not parts:
        raise ValueError(
            f"{shown(path)}: no part of the curve ran at {precision}; run one, or estimate the other precision"
        )
    torch = record.get("versions", {}).get("torch", "")
    device = _cpu_build(torch, f", {shown(path)}") or f"not recorded (torch {torch or '?'})"
    per_step = [(float(p["train_s"]) / max(p["steps"]), p) for p in parts]
    return {
        "train": max(per_step, key=lambda x: x[0]),
        "score": max(((float(p["eval_s"]) / len(p["steps"]), p) for p in parts), key=lambda x: x[0]),
        "train_range": (min(x[0] for x in per_step), max(x[0] for x in per_step)),
        "parts": len(parts),
        "device": device,
        "source": shown(path),
    }


def length_progress(variant: str, seed: int, root, backbone: str = "minilm-l6") -> tuple[int, set[int]]:
    """(the step a `length` run would resume from, the steps it has exported) under the length root:
    its newest checkpoint or exported step; (0, set()) for a run not begun. Reads only."""
    run = model_dir(Path(root) / "runs", backbone, f"length-{variant}", seed)
    exported = set(finished_steps(run)) if run.is_dir() else set()
    checkpoints = [int(c.name.split("-")[1]) for c in run.glob("checkpoint-*") if c.name.split("-")[1].isdigit()]
    return max([0, *exported, *checkpoints]), exported


def length_estimate(steps, variants, precision="bf16", seed=42, root=None, record_path=None) -> pd.DataFrame:
    """Seconds of one `python -m compsense length` piece: per variant, the training from where its run stands
    under the length root (`length_progress`) to max(steps) and the scoring of the steps it has not exported;
    Base is scored once per root and precision, priced as one step. One row per model and a `total` row;
    attrs "rates" and "root" say what it assumed."""
    steps = sorted({int(s) for s in steps})
    if [v for v in variants if v not in LENGTH_VARIANTS] or not steps or steps[0] < 1 or steps[-1] > SCHEDULE_STEPS:
        raise ValueError(
            f"length: variants {list(variants)}, steps {steps}: the variants are {', '.join(LENGTH_VARIANTS)} and "
            f"the steps lie in 1..{SCHEDULE_STEPS} (the authors' schedule)"
        )
    rates = length_rates(precision, record_path)
    (train_s, train_part), (score_s, score_part) = rates["train"], rates["score"]
    root = length_root(root, create=False)  # an estimate only reads the root
    points = root / "results" / POINTS
    scored = read_table(points) if points.is_file() else pd.DataFrame(columns=["variant", "stamp"])
    base_done = bool(((scored.variant == "Base") & (scored.stamp == f"pretrained-{precision}")).any())
    rows = [["Base", "", 0.0, "scored here" if base_done else "1 model", 0.0 if base_done else score_s]]
    for variant in variants:
        start, exported = length_progress(variant, seed, root)
        todo = [s for s in steps if s not in exported]
        trained = max(steps[-1] - start, 0) if todo else 0
        trains = f"steps {start}-{steps[-1]}" if trained else "nothing"
        scores = f"steps {','.join(map(str, todo))}" if todo else "nothing"
        rows.append([variant, trains, trained * train_s, scores, len(todo) * score_s])
    df = pd.DataFrame(rows, columns=["model", "trains", "train_s", "scores", "score_s"])
    df["seconds"] = df.train_s + df.score_s
    df.loc[len(df)] = ["total", "", df.train_s.sum(), "", df.score_s.sum(), df.seconds.sum()]

    def part(p):
        return f"{p['variant']} of seed {p['seed']} at {p['commit']}, steps {','.join(map(str, p['steps']))}"

    lo, hi = rates["train_range"]
    df.attrs["rates"] = (
        f"From {rates['source']} ({rates['parts']} {precision} part(s) of the curve): training "
        f"{train_s:.1f} s a step at batch 128 (the slowest part, {part(train_part)}: "
        f"{train_part['train_s']:,.1f} s to step {max(train_part['steps'])}; the parts ranged {lo:.1f}-{hi:.1f} "
        "s a step, and one that resumed from a checkpoint trained fewer steps than it lists), "
        f"scoring {score_s:.1f} s a "
        f"step ({score_s / 60:.1f} min; the slowest part, {part(score_part)}: {score_part['eval_s']:,.1f} s "
        f"for {len(score_part['steps'])} step(s)). Measured on {rates['device']}. Base is priced as one "
        "scored step; loading the data, not recorded, is left out."
    )
    df.attrs["root"] = (
        f"Runs under {shown(root)}: a step exported there is neither trained nor scored again, and a run resumes "
        "from its newest checkpoint."
    )
    return df


def length_text(est: pd.DataFrame) -> str:
    """`length_estimate` in `screen.WIDTH` columns."""
    d = screen.duration
    rows = [
        [r.model, r.trains, d(r.train_s) if r.model != "Base" else "–", r.scores, d(r.score_s), d(r.seconds)]
        for r in est.itertuples()
    ]
    table = screen.table(["model", "trains", "training", "scores", "scoring", "time"], rows, right={2, 4, 5}, fit=3)
    return "\n\n".join([screen.wrap(est.attrs["rates"]), screen.wrap(est.attrs["root"]), table])
