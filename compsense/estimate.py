"""`python -m compsense estimate`: time estimates from measured throughput: seconds = work units of the
target profile / measured rate. Operations tooling beside the pipeline (it reads the profiles and the
runs' records; the report writes its measurements into figures/tables/ for a fresh clone), not one of
the pipeline's stages.

A run leaves measurements behind: DONE.json (or, unfinished, train_log.jsonl) per trained model,
verifier.json per verifier, and the executed notebooks, whose papermill metadata holds each
execution's start, end and duration and the parameters the stage ran with (a notebook's own time
is its duration less the trainings recorded as finished inside it: no cell text is read). A rate
is the units / seconds of one such measurement, and every estimate row names the file it came
from and the device it was measured on. Nothing is guessed: a component no run measured, or whose
data settings differ from the measured ones (other datasets, caps, in-batch negatives), is "not
measured", and the total says how many rows it leaves out. Rates measured elsewhere (a
benchmarks/bench_training.py --out JSON, or `rates=`) are used only with their citation.

Without a run (`--from`), the rates are the committed figures/tables/measured_rates.csv; a row says
when the run file it was measured from is not in this checkout. The stages that only run a notebook
(00, 06) that no run measured are priced from docs/notebooks/run_summary.json, the committed record
of the run the notebook pages show. `length_estimate` prices a `python -m compsense length` piece
from figures/tables/length_record.json. The command prints 100 columns (`screen_text`, `length_text`).

The one modelling assumption: with a backbone no run measured, a unit takes (its parameter count /
the measured backbone's) times as long. It needs `n_parameters` on both Backbone entries of
compsense.core.encoders.BACKBONES; where a count is absent the row is "not measured".
"""

from __future__ import annotations

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
from compsense.pipeline.stages import STATE_RECOVER, SUMMARY, read_summary, shown, stage_key
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
    ("01", "negatives"): [
        "mrpc_train_sentences",
        "mrpc_test_sentences",
        "user_sentences_path",
        "families",
        "max_per_family",
    ],
    ("02", "evaluate"): ["max_seq_length", "eval_extra_docs"],
    ("03", "score"): [
        "families",
        "negatives_split",
        "max_pairs_per_family",
        "mrpc_split",
        "max_positives",
        "n_reference_pairs",
        "sugarcrepe_subsets",
        "sugarcrepe_per_subset",
        "max_seq_length",
    ],
    ("04", "train"): ["batch_size", "in_batch_negatives", "max_seq_length", "include_special"],
    ("04", "score"): ["max_pairs", "train_split", "heldout_split", "mrpc_split", "max_seq_length", "include_special"],
    ("05", "rerank"): ["first_stage", "eval_extra_docs", "max_seq_length", "cache_dtype"],
}
NOTED = {("02", "train"): ["batch_size", "max_seq_length"]}  # differences noted, rate still used
REST = {
    "00": "notebook",
    "01": "negatives",
    "02": "evaluate",
    "03": "score",
    "04": "score",
    "05": "rerank",
    "06": "notebook",
}  # the part of a stage timed by its notebook, the trainings recorded inside its execution excluded
TRAINS = ("02", "04")  # stages whose trainings DONE.json / verifier.json time (subtracted from the notebook's)
UNTRAINED = {("F0", "frozen"), ("F1", "frozen")}  # no trainable parameters, frozen encoder
NOT_MEASURED = "not measured"
UNRECORDED = "not recorded"  # the device of a measurement whose record does not say it


def stage_params(profile: str, overrides=()) -> dict[str, dict]:
    """Each stage's parameters, exactly as the runner injects them (the same set papermill records
    in an executed notebook, which the measured settings come from), keyed by notebook prefix."""
    return {stage_key(nb): p for nb, p in stage_parameters(profile, overrides).items() if nb.stem[:2].isdigit()}


def work_units(profile: str, work_dir=None, sizes: dict | None = None, overrides=(), only=None) -> pd.DataFrame:
    """The work `profile` (with `overrides`, as `dvc exp run -S` gives them; `only`: these stage keys)
    asks for, per stage, component and backbone (see UNITS). Dataset sizes come from the result tables
    of the run in `work_dir` (or `sizes`); unknown sizes give NaN units."""
    if sizes is None:
        sizes = run_sizes(resolve(work_dir)) if work_dir is not None else {}
    params = sorted(stage_params(profile, overrides).items())
    rows = [r for stage, p in params if only is None or stage in only for r in _units(stage, p, sizes)]
    return pd.DataFrame(rows, columns=["stage", "component", "backbone", "units", "unit", "settings", "note"])


def _units(stage: str, p: dict, sizes: dict) -> list[dict]:
    p = flat(p)  # notebook 04's grouped settings (`training`, `rows`, ...) by name, as older runs recorded them

    def row(component, backbone, units, settings=None, note=""):
        keys = SAME.get((stage, component.split()[0]), []) + NOTED.get((stage, component), [])
        return {
            "stage": stage,
            "component": component,
            "backbone": backbone,
            "units": units,
            "unit": UNITS[(stage, component.split()[0])],
            "note": note,
            "settings": settings or {k: p.get(k) for k in keys},
        }

    if stage == "02":
        runs = plan_runs(
            p["backbones"],
            p["seeds"],
            p["variants"],
            p["structural_share"],
            p.get("share_sweep") or (),
            sweep_all_seeds=p.get("sweep_all_seeds") or (),
            first_seed_only=p.get("first_seed_only") or (),
        )
        texts, note = _sized(p["eval_datasets"], p.get("eval_max_queries"), sizes, "texts")
        out = []
        for b in p["backbones"]:
            mine = [r for r in runs if r.backbone == b]
            cfg = TrainConfig.paper(b, max_steps=p.get("max_steps"), batch_size=p.get("batch_size"))
            trained = sum(r.variant != "base" for r in mine)
            out.append(
                row(
                    "train",
                    b,
                    trained * cfg.max_steps * cfg.batch_size,
                    {"batch_size": cfg.batch_size, "max_seq_length": p.get("max_seq_length")},
                )
            )
            out.append(row("evaluate", b, len(mine) * texts, note=note))
        return out
    if stage == "03":
        return [row("score", b, 1 + len(p["seeds"]) * len(p["variants"])) for b in p["backbones"]]
    if stage == "04":
        # every (training data, seed) trains each verifier once per size; sizes train at their own rates
        repeats = len(p.get("train_data") or [None]) * len(p.get("verifier_seeds") or [None])
        plan = size_plan(p.get("sizes") or ["small"], p["verifiers"], p["regimes"], p.get("size_scope"))
        trains = [
            row(
                _verifier_component(v, r, size),
                p["backbone"],
                0 if (v, r) in UNTRAINED else repeats * p["budget_examples"],
            )
            for size, (names, regimes) in plan.items()
            for v in names
            for r in regimes
        ]
        scorers = repeats * sum(len(names) * len(regimes) for names, regimes in plan.values())
        return trains + [row("score", p["backbone"], 3 + scorers)]
    if stage == "05":
        queries, note = _sized(p["eval_datasets"], p.get("eval_max_queries"), sizes, "queries")
        # A run made before notebook 05 read several variants has `verifier_variant`, one folder.
        variants = len(p.get("verifier_variants") or [None])
        methods = len(p["verifiers"]) * len(p["regimes"]) * len(p.get("verifier_seeds") or [None]) * variants
        return [row("rerank", p["backbone"], methods * queries * max(p["ks"]), note=note)]
    return [row(REST[stage], p.get("backbone") or "", 1)]


def _sized(datasets, max_queries, sizes: dict, kind: str) -> tuple[float, str]:
    """Σ over datasets of their measured size (texts = queries + docs, or queries); NaN if unknown."""
    names = [f"{d}@q{max_queries}" if max_queries else str(d) for d in datasets]
    unknown = [n for n in names if n not in sizes]
    if unknown:
        return (
            math.nan,
            f"size of {', '.join(unknown[:3])}{' ...' if len(unknown) > 3 else ''} unknown: no run "
            "in this work_dir evaluated it (results/retrieval.parquet, rerank.parquet)",
        )
    return float(sum(sizes[n][0] + (sizes[n][1] if kind == "texts" else 0) for n in names)), ""


def run_sizes(work: Path) -> dict[str, tuple[int, int]]:
    """Dataset name -> (queries, docs), as the run's result tables recorded them."""
    sizes = {}
    for name in ("retrieval", "rerank"):
        path = results_file(work, name)
        if path.exists():
            table = read_table(path)[["dataset", "n_queries", "n_docs"]].dropna().drop_duplicates()
            sizes.update({r.dataset: (int(r.n_queries), int(r.n_docs)) for r in table.itertuples()})
    return sizes


# ---------------------------------------------------------------------------------------------
# What a run measured


def measured_rates(work_dir, summary_json=None) -> pd.DataFrame:
    """Per stage, component and backbone: units and seconds a run measured, the rate, its source
    file and device, and the settings it ran with. `summary_json` limits the notebook timings to
    that run (and the runs its skipped stages point to); by default every run in work_dir counts."""
    work = resolve(work_dir)
    if not work.is_dir():
        raise FileNotFoundError(f"{work}: no such run folder; pass the work_dir of a run (e.g. runs/local)")
    device = run_device(work)
    execs = _executions(work, summary_json)
    backbone04 = next((e["params"].get("backbone") for e in reversed(execs) if e["stage"] == "04"), None)
    rows = _train_rates(work, device) + _verifier_rates(work, device, backbone04) + _notebook_rates(work, execs, device)
    df = pd.DataFrame(
        rows, columns=["stage", "component", "backbone", "units", "seconds", "source", "device", "settings"]
    )
    df["rate"] = df.units / df.seconds
    return df


def _train_rates(work: Path, device: str) -> list[dict]:
    """Triplets per second per backbone from DONE.json (or an unfinished run's train_log.jsonl)."""
    found: dict[str, list] = {}
    for folder in trained_model_dirs(work):
        done = folder / "DONE.json"
        m = _from_done(done, device) if done.exists() else _from_log(folder, device)
        if m:
            found.setdefault(folder.parent.name, []).append(m)
    rows = []
    for backbone, ms in found.items():
        settings = {k: _one(m[2][k] for m in ms) for k in NOTED[("02", "train")]}
        files = sorted({m[3] for m in ms})
        rows.append(
            {
                "stage": "02",
                "component": "train",
                "backbone": backbone,
                "units": sum(m[0] for m in ms),
                "seconds": sum(m[1] for m in ms),
                "device": _one(m[4] for m in ms),
                "settings": settings,
                "source": f"{shown(work)}/models/{backbone}/*/{', '.join(files)} ({len(ms)} runs)",
            }
        )
    return rows


def _from_done(path: Path, run_dev: str):
    d = read_json(path)
    cfg, seconds = d.get("config", {}), d.get("duration_s") or 0
    units = (
        d["triplets_per_s"] * seconds
        if d.get("triplets_per_s")
        else d["global_step"] * cfg["batch_size"] * d.get("world_size", 1)
    )
    device = cfg.get("device") or _cpu_build(d, "build, in DONE.json") or run_dev
    return (units, seconds, cfg, "DONE.json", device) if seconds > 0 and units > 0 else None


def _from_log(folder: Path, run_dev: str):
    """An unfinished run: the steps and seconds between the first and last logged step of its
    latest session (batch size from run_config.json)."""
    log, cfg_path = folder / "train_log.jsonl", folder / "run_config.json"
    if not (log.exists() and cfg_path.exists()):
        return None
    recs = [r for r in map(_json_line, log.read_text(errors="replace").splitlines()) if r is not None]
    starts = [i for i, r in enumerate(recs) if r.get("event") in ("start", "resume")]
    session = recs[starts[-1] :] if starts else recs
    steps = [r for r in session if "step" in r and "loss" in r]
    if len(steps) < 2:
        return None
    recipe = read_json(cfg_path)["recipe"]
    seconds = (datetime.fromisoformat(steps[-1]["time"]) - datetime.fromisoformat(steps[0]["time"])).total_seconds()
    units = (steps[-1]["step"] - steps[0]["step"]) * recipe["batch_size"] * session[0].get("world_size", 1)
    return (units, seconds, recipe, "train_log.jsonl", run_dev) if seconds > 0 and units > 0 else None


def _json_line(line: str) -> dict | None:
    """One record of an append-only log; None for a blank line or one a killed writer left half-written."""
    try:
        record = json.loads(line) if line.strip() else None
    except ValueError:
        return None
    return record if isinstance(record, dict) else None


def _verifier_rates(work: Path, device: str, backbone: str | None) -> list[dict]:
    """Examples per second per verifier and regime, from verifier.json's training history."""
    rows = []
    # verifiers/<train_data>-<size>/seed<s>/<name>-<regime>/verifier.json (older runs: verifiers/<name>-<regime>/)
    for path in sorted(verifiers_root(work).glob("**/verifier.json")):
        d = read_json(path)
        h = d.get("history", {})
        if not h.get("trained") or not h.get("seconds") or not h.get("examples_seen"):
            continue
        rec = {**d.get("settings", {}), **h}
        size = d.get("size") or d.get("settings", {}).get("verifier_kwargs", {}).get("size", "small")
        rows.append(
            {
                "stage": "04",
                "component": _verifier_component(h["verifier"], h["regime"], size),
                "backbone": backbone,
                "units": h["examples_seen"],
                "seconds": h["seconds"],
                "source": shown(path),
                "device": device,
                "settings": {k: rec.get(k, "not recorded") for k in SAME[("04", "train")]},
            }
        )
    return rows


def _verifier_component(name: str, regime: str, size: str = "small") -> str:
    """`train F3-frozen`; the authors' sizes train at other rates: `train F3-frozen (paper size)`."""
    return f"train {name}-{regime}" + ("" if size == "small" else f" ({size} size)")


def _executions(work: Path, summary_json=None) -> list[dict]:
    """Finished executed notebooks (oldest first): stage, parameters, duration, training-cell seconds."""
    if summary_json:
        summary = read_summary(Path(summary_json))
        outs = [Path(s.get("output") or s.get("last_output") or "") for s in summary.get("stages", {}).values()]
        # the runner records absolute paths, maybe of another checkout: prefer the copy beside summary_json
        mapped = [Path(summary_json).resolve().parent.parent / p.parent.name / p.name for p in outs]
        paths = [m if m.is_file() else p for m, p in zip(mapped, outs)]
    else:
        paths = sorted(work.glob("*/[0-9][0-9]_*.ipynb"))
    execs = []
    for path in (p for p in paths if p.is_file()):
        nb = read_json(path)
        pm = nb.get("metadata", {}).get("papermill", {})
        if pm.get("duration") is None or pm.get("exception"):
            continue
        stage = path.name[:2]
        trained = 0.0
        if stage in TRAINS:
            window = _utc(pm.get("start_time")), _utc(pm.get("end_time"))
            if None in window:  # run by hand, no execution window: its training share is unknown
                continue
            trained = _trained_inside(work, *window)
        execs.append(
            {"stage": stage, "path": path, "params": pm.get("parameters", {}), "seconds": pm["duration"] - trained}
        )
    return execs


def _utc(stamp) -> datetime | None:
    """An ISO time as aware UTC (papermill writes naive UTC, DONE.json '+00:00'); None if absent or unreadable."""
    try:
        t = datetime.fromisoformat(str(stamp))
    except (TypeError, ValueError):
        return None
    return t if t.tzinfo else t.replace(tzinfo=timezone.utc)


def _trained_inside(work: Path, start: datetime, end: datetime) -> float:
    """Seconds of training that finished inside [start, end], as the trainings recorded them: DONE.json
    (duration_s, finished_at) per retrieval model, verifier.json (history seconds and finished_at, or
    the file's time for a record written before finished_at existed) per verifier. This is the part of
    a notebook's time the training rates already count; a model reused from an earlier run is not in it."""
    total = 0.0
    for folder in trained_model_dirs(work):
        try:
            done = json.loads((folder / "DONE.json").read_text())
        except (OSError, ValueError):
            continue
        finished = _utc(done.get("finished_at"))
        if finished is not None and start <= finished <= end:
            total += float(done.get("duration_s") or 0)
    root = verifiers_root(work)
    for record in root.rglob("verifier.json") if root.is_dir() else []:
        try:
            history = json.loads(record.read_text()).get("history", {})
        except (OSError, ValueError):
            continue
        finished = _utc(history.get("finished_at")) or datetime.fromtimestamp(record.stat().st_mtime, timezone.utc)
        if start <= finished <= end:
            total += float(history.get("seconds") or 0)
    return total


def _notebook_rates(work: Path, execs: list[dict], device: str) -> list[dict]:
    """Per stage, the rest of the stage (the trainings recorded inside it excluded) from its slowest execution:
    re-runs that find finished models and caches do less work, so the slowest is the coldest."""
    best: dict[str, dict] = {}
    sizes = run_sizes(work)
    for e in execs:
        if e["stage"] not in REST or e["seconds"] <= 0:
            continue
        try:
            rows = [r for r in _units(e["stage"], e["params"], sizes) if r["component"] == REST[e["stage"]]]
        except (KeyError, TypeError):  # run by hand with parameters the runner would have injected missing
            continue
        units = sum(r["units"] for r in rows)
        if not rows or math.isnan(units):
            continue
        row = {
            "stage": e["stage"],
            "component": REST[e["stage"]],
            "units": units,
            "seconds": e["seconds"],
            "backbone": ",".join(sorted({str(r["backbone"]) for r in rows})),
            "settings": rows[0]["settings"],
            "source": f"{shown(e['path'])} (papermill duration"
            f"{', less the trainings DONE.json / verifier.json record inside it' if e['stage'] in TRAINS else ''})",
            "device": device,
        }
        if e["stage"] not in best or units / e["seconds"] < best[e["stage"]]["units"] / best[e["stage"]]["seconds"]:
            best[e["stage"]] = row
    return list(best.values())


def run_device(work: Path) -> str:
    """The device the run recorded: rerank_cost.parquet's column, else the torch build in DONE.json."""
    cost = results_file(work, "rerank_cost")
    if cost.exists():
        devices = sorted(read_table(cost)["device"].dropna().astype(str).unique())
        if devices:
            return f"{', '.join(devices)} (the run's device, recorded in {shown(cost)})"
    for done in sorted(p / "DONE.json" for p in trained_model_dirs(work) if (p / "DONE.json").exists()):
        device = _cpu_build(read_json(done), f"in {shown(done)}")
        if device:
            return device
    return "not recorded"


def _cpu_build(done: dict, where: str) -> str | None:
    """'cpu (torch 2.x+cpu <where>)' when a DONE.json records a CPU-only torch build, else None."""
    torch_version = done.get("versions", {}).get("torch", "")
    return f"cpu (torch {torch_version} {where})" if torch_version.endswith("+cpu") else None


# ---------------------------------------------------------------------------------------------
# The estimate


# The published run's measurements (the report writes them, `make figures` copies them beside the
# other tables), so a fresh clone estimates without a run of its own: `estimate --profile local`.
RATES_TABLE, SIZES_TABLE = "measured_rates", "dataset_sizes"


def published_measurements(tables_dir=None) -> tuple[pd.DataFrame, dict]:
    """(measured rates, dataset sizes) from figures/tables/{measured_rates,dataset_sizes}.csv."""
    folder = resolve(tables_dir) if tables_dir is not None else repo_root() / "figures" / "tables"
    rates_path, sizes_path = folder / f"{RATES_TABLE}.csv", folder / f"{SIZES_TABLE}.csv"
    if not rates_path.exists():
        raise FileNotFoundError(
            f"{rates_path}: no published measurements. Fix: pass --from runs/<profile> (a run's work_dir), "
            "or publish a run with `make figures`"
        )
    try:
        rates = pd.read_csv(rates_path, dtype={"stage": str, "component": str, "backbone": object, "source": str})
        rates["settings"] = [json.loads(v) if isinstance(v, str) and v else {} for v in rates.get("settings", [])]
        rates["backbone"] = rates.backbone.astype(object).where(rates.backbone.notna(), None)
        sizes = {}
        if sizes_path.exists():
            table = pd.read_csv(sizes_path, dtype={"dataset": str})
            sizes = {r.dataset: (int(r.n_queries), int(r.n_docs)) for r in table.itertuples()}
    except (ValueError, KeyError, AttributeError, UnicodeDecodeError) as err:  # pandas' ParserError is a ValueError
        raise CorruptFile(
            f"{rates_path} or {sizes_path.name}: not the table the report publishes ({type(err).__name__}: {err}). "
            f"Fix: restore them (git checkout -- {shown(folder)}), or pass --from runs/<profile> (a run's work_dir)"
        ) from None
    table = shown(rates_path)
    rates["source"] = [_published_source(str(v), table) for v in rates.source]
    rates["device"] = [_published_device(v, table) if isinstance(v, str) else v for v in rates.device]
    return rates, sizes


def absent_run_files(text: str) -> list[str]:
    """The files `text` cites (a path under runs/, or an absolute one; `*` matches any folder) that are
    not on this machine: a fresh clone has the published rates, not the run that measured them."""
    absent = []
    for cited in re.findall(r"(?<![\w/.-])((?:/|runs/)[^\s,;()]+)", text):
        path = Path(cited) if cited.startswith("/") else repo_root() / cited
        anchor = Path(path.anchor) if path.is_absolute() else Path()
        if not path.exists() and not any(anchor.glob(str(path.relative_to(anchor)))):
            absent.append(cited)
    return absent


def _published_source(source: str, table: str) -> str:
    """A published row's source as it stands in this checkout: the committed table, and the run file it
    was measured from, said to be absent where it is."""
    if source.startswith(NOT_MEASURED) or not source:
        return source
    where = "not in this checkout" if absent_run_files(source) else "here"
    return f"{table}, measured from {source} ({where})"


def _published_device(device: str, table: str) -> str:
    """A published row's device, its citation of a run file this checkout lacks replaced by the table."""
    if not absent_run_files(device):
        return device
    return f"{device.split(' (')[0]} (as the measuring run recorded it)"


# The run that `make figures` made the notebook pages from keeps its summary.json beside them (committed):
# each stage's whole time. For a stage whose own part is one notebook run (REST "notebook": 00 and 06,
# which train nothing), that time is the rate, used where no run in the estimate's source measured it.
PAGES_SUMMARY = Path("docs") / "notebooks" / "run_summary.json"
PAGES_SOURCE = "the whole stage, in the run the notebook pages show"


def pages_measurements(path=None) -> pd.DataFrame:
    """Rows as `measured_rates` gives them for the notebook-only stages (00, 06) from the committed
    summary of the run the notebook pages show (docs/notebooks/run_summary.json); its settings are its
    profile's (with its overrides), its device is not recorded there. Empty when the file is absent."""
    path = resolve(path) if path is not None else repo_root() / PAGES_SUMMARY
    columns = ["stage", "component", "backbone", "units", "seconds", "source", "device", "settings", "rate"]
    if not path.is_file():
        return pd.DataFrame(columns=columns)
    summary = read_summary(path)
    params = stage_params(summary.get("profile", "local"), summary.get("overrides") or ())
    rows = []
    for stage, record in sorted(summary.get("stages", {}).items()):
        seconds = record.get("seconds")
        if REST.get(stage) != "notebook" or record.get("status") != "ok" or not seconds or stage not in params:
            continue
        settings = {k: params[stage].get(k) for k in SAME[(stage, "notebook")]}
        rows.append(
            {
                "stage": stage,
                "component": "notebook",
                "backbone": params[stage].get("backbone"),
                "units": 1.0,
                "seconds": float(seconds),
                "source": f"{shown(path)}: {PAGES_SOURCE} (profile {summary.get('profile')}, "
                f"commit {summary.get('commit', '?')})",
                "device": UNRECORDED,
                "settings": settings,
                "rate": 1.0 / float(seconds),
            }
        )
    return pd.DataFrame(rows, columns=columns)


def measurement_tables(work_dir) -> tuple[pd.DataFrame, pd.DataFrame]:
    """What the report writes for `published_measurements`: the rates (settings as JSON) and sizes."""
    work = resolve(work_dir)
    rates = measured_rates(work)
    rates = rates.assign(settings=[json.dumps(v, sort_keys=True, default=str) for v in rates.settings])
    sizes = pd.DataFrame(
        [(name, q, d) for name, (q, d) in sorted(run_sizes(work).items())], columns=["dataset", "n_queries", "n_docs"]
    )
    return rates, sizes


ESTIMATE_COLUMNS = [
    "stage",
    "component",
    "backbone",
    "units",
    "unit",
    "rate",
    "seconds",
    "source",
    "device",
    "assumption",
]


def estimate(
    target_profile: str,
    work_dir=None,
    summary_json=None,
    bench=None,
    rates: dict | None = None,
    tables_dir=None,
    overrides=(),
    only=None,
    pages_summary=None,
) -> pd.DataFrame:
    """Seconds per stage/component/backbone of `target_profile` at the rates measured in `work_dir`
    (None: the published run's, `published_measurements(tables_dir)`), and a last `total` row
    (measured rows only; its `source` counts the rows left out). The notebook-only stages (00, 06)
    that neither measured come from the notebook pages' run (`pages_measurements(pages_summary)`;
    False: not read).

    bench: a benchmarks/bench_training.py --out JSON: its compsense triplets/s is the 02 train rate
    of its model on its device. rates: rates measured elsewhere, cite them:
    {(stage, component, backbone or None): {"rate": units/s, "device": ..., "source": ...}}.
    """
    measured_elsewhere = _check_rates({**(_bench_rate(bench) if bench else {}), **(rates or {})})
    if work_dir is None:
        measured, sizes = published_measurements(tables_dir)
    else:
        measured, sizes = measured_rates(work_dir, summary_json), None
    pages = pages_measurements(pages_summary) if pages_summary is not False else pd.DataFrame()
    if not pages.empty:
        fresh = pages[~pages.stage.isin(set(measured.stage[measured.component == "notebook"]))]
        measured = pd.concat([measured, fresh], ignore_index=True) if not fresh.empty else measured
    units = work_units(target_profile, work_dir, sizes=sizes, overrides=overrides, only=only)
    rows = [_estimate_row(u, measured, measured_elsewhere) for u in units.to_dict("records")]
    df = pd.DataFrame(rows, columns=ESTIMATE_COLUMNS)
    left_out = int(df.seconds.isna().sum())
    total = {
        "stage": "total",
        "component": "measured rows",
        "seconds": df.seconds.sum(min_count=1),
        "device": "; ".join(sorted(set(df.device.dropna()))),
        "source": f"{left_out} row(s) {NOT_MEASURED}: the total leaves them out (a lower bound)"
        if left_out
        else "every row measured",
    }
    return pd.concat([df, pd.DataFrame([total])], ignore_index=True)


def _estimate_row(u: dict, measured: pd.DataFrame, overrides: dict) -> dict:
    out = {k: u[k] for k in ("stage", "component", "backbone", "units", "unit")}

    def done(rate=math.nan, source=NOT_MEASURED, device=None, assumption=""):
        return {
            **out,
            "rate": rate,
            "seconds": u["units"] / rate if rate == rate else math.nan,
            "source": source,
            "device": device,
            "assumption": assumption,
        }

    if u["units"] == 0:
        return {**done(source="nothing to do"), "seconds": 0.0}
    if u["units"] != u["units"]:
        return done(source=f"{NOT_MEASURED}: {u['note']}")
    for key in ((u["stage"], u["component"], u["backbone"]), (u["stage"], u["component"], None)):
        if key in overrides:
            o = overrides[key]
            return done(o["rate"], o["source"], o["device"], "measured elsewhere (cited)")
    same = measured[(measured.stage == u["stage"]) & (measured.component == u["component"])]
    exact = same[same.backbone.isna() | same.backbone.apply(lambda b: str(u["backbone"]) in str(b).split(","))]
    if not exact.empty:
        m = exact.iloc[0]
        diff = {k: (m.settings.get(k), v) for k, v in u["settings"].items() if m.settings.get(k) != v}
        text = _strict_diff(u, m.settings)
        if text:
            return done(source=f"{NOT_MEASURED} at these settings ({text}); measured: {m.source}")
        noted = ", ".join(f"measured at {k}={a}, target {b}" for k, (a, b) in diff.items())
        return done(m.rate, m.source, m.device, noted)
    return _scaled(u, same, done, overrides)


def _strict_diff(u: dict, measured_settings: dict) -> str:
    """The settings (SAME) under which a measurement does not transfer to `u`, as 'k a -> b' text."""
    strict = SAME.get((u["stage"], u["component"].split()[0]), [])
    return ", ".join(
        f"{k} {measured_settings.get(k)!r} -> {v!r}"
        for k, v in u["settings"].items()
        if k in strict and measured_settings.get(k) != v
    )


def _scaled(u: dict, same: pd.DataFrame, done, overrides: dict) -> dict:
    """A backbone no run measured: a measured backbone's rate x its parameter count / the target's.
    A rate measured elsewhere (cited, e.g. on a GPU) is preferred to the run's own."""
    count = {name: getattr(b, "n_parameters", None) for name, b in BACKBONES.items()}
    cited = [
        (b, o["rate"], o["source"], o["device"])
        for (stage, component, b), o in overrides.items()
        if stage == u["stage"] and component == u["component"] and b
    ]
    # A measurement at other data settings does not transfer to another backbone either.
    comparable = [m for m in same.itertuples() if not _strict_diff(u, m.settings)]
    if not cited and same.shape[0] and not comparable:
        m = same.iloc[0]
        return done(
            source=f"{NOT_MEASURED} for {u['backbone']}: measured for {m.backbone} at other settings "
            f"({_strict_diff(u, m.settings)}); measured: {m.source}"
        )
    for backbone, rate, source, device in cited + [(m.backbone, m.rate, m.source, m.device) for m in comparable]:
        if count.get(backbone) and count.get(u["backbone"]):
            return done(
                rate * count[backbone] / count[u["backbone"]],
                source,
                device,
                f"scaled from {backbone} by parameter count ({count[backbone]:,} / {count[u['backbone']]:,})",
            )
    why = (
        "no run measured it"
        if same.empty
        else (
            f"measured for {', '.join(same.backbone.astype(str))} only, and compsense/core/encoders.py "
            "BACKBONES has no n_parameters to scale by"
        )
    )
    return done(source=f"{NOT_MEASURED} for {u['backbone']}: {why}")


def _bench_rate(path) -> dict:
    path = resolve(path)
    data = read_json(path, recover=f"write it again with benchmarks/bench_training.py --out {path.name}")
    missing = [k for k in ("model", "device", "compsense_triplets_per_s") if k not in data]
    if missing:
        raise ValueError(f"{path}: missing {missing}; write it with benchmarks/bench_training.py --out {path.name}")
    backbone = data["model"].removesuffix("-random")
    source = (
        f"{shown(path)} (bench_training.py: batch {data.get('batch_size')}, {data.get('precision')}, "
        f"{data.get('data')} data)"
    )
    return {
        ("02", "train", backbone): {
            "rate": float(data["compsense_triplets_per_s"]),
            "device": data["device"],
            "source": source,
        }
    }


def parse_rates(specs, device=None, source=None) -> dict:
    """`estimate --rate STAGE/COMPONENT[/BACKBONE]=UNITS_PER_S` values as `estimate(rates=)` takes them;
    ValueError in one line naming the --rate and what it should be (a stage and component of UNITS, a
    rate > 0: a negative one would price work at negative seconds)."""
    rates = {}
    for spec in specs:
        key, _, value = str(spec).partition("=")
        parts = key.split("/")
        if len(parts) not in (2, 3) or not value.strip():
            raise ValueError(
                f"--rate {spec!r}: expected STAGE/COMPONENT[/BACKBONE]=UNITS_PER_S, e.g. 02/train/minilm-l6=2322"
            )
        stage, component = parts[0], parts[1]
        if (stage, component.split()[0] if component.strip() else "") not in UNITS:
            known = ", ".join(f"{s}/{c}" for s, c in UNITS)
            raise ValueError(f"--rate {spec!r}: no component {stage}/{component}; the components are {known}")
        try:
            rate = float(value)
        except ValueError:
            rate = math.nan
        if not (math.isfinite(rate) and rate > 0):
            raise ValueError(f"--rate {spec!r}: the rate must be a number of units per second > 0, got {value!r}")
        rates[(stage, component, parts[2] if len(parts) == 3 else None)] = {
            "rate": rate,
            "device": device,
            "source": source,
        }
    return rates


def _check_rates(rates: dict) -> dict:
    for key, r in rates.items():
        if not (isinstance(r, dict) and r.get("rate") and r.get("source") and r.get("device")):
            raise ValueError(
                f"rates[{key!r}] = {r!r}: a rate measured elsewhere needs 'rate', 'device' and "
                "'source' (cite the measurement)"
            )
        rate = r["rate"]
        if isinstance(rate, bool) or not isinstance(rate, (int, float)) or not (math.isfinite(rate) and rate > 0):
            raise ValueError(f"rates[{key!r}]: the rate must be a number of units per second > 0, got {rate!r}")
    return rates


# ---------------------------------------------------------------------------------------------
# Presentation

ESTIMATE_TITLE = "Time estimate for the paper profile from this run's measured throughput"


def report_sections(work_dir) -> list[dict]:
    """The run report's sections on time (`pipeline.report.Block` fields): the paper profile's estimate at
    the rates the run in `work_dir` measured, and those rates and dataset sizes as tables, which `make
    figures` publishes for `estimate` on a fresh clone. Never fails the report: whatever is missing or
    unreadable is said in the section instead."""
    work = resolve(work_dir)
    try:
        est = estimate("paper", work)
        rates, sizes = measurement_tables(work)
    except Exception as err:  # noqa: BLE001 - the report must be written whatever the estimate hits
        text = (
            f"No estimate: {type(err).__name__}: {err}. It needs the run's "
            f"work_dir ({work}) with DONE.json, verifier.json or executed notebooks in it."
        )
        return [{"title": ESTIMATE_TITLE, "text": text}]
    return [
        {
            "title": ESTIMATE_TITLE,
            "text": headline(est) + f" `python -m compsense estimate --profile paper --from {shown(work)}` prints "
            "it; --bench/--rate add rates measured elsewhere.",
        },
        {
            "title": "Time estimate per stage and component (paper profile)",
            "table": display_frame(est),
            "name": "estimate",
        },
        {
            "title": "Measured rates (what `estimate` reads when no run is given)",
            "text": "Published beside the other tables, so `python -m compsense estimate --profile local` "
            "works on a fresh clone; with the dataset sizes the run's results recorded.",
            "table": rates,
            "name": RATES_TABLE,
        },
        {"title": "Dataset sizes the run recorded", "table": sizes, "name": SIZES_TABLE},
    ]


def headline(est: pd.DataFrame) -> str:
    """One paragraph: the total, on which devices its rates were measured, what it leaves out. Rows whose
    device no record gives (the notebook pages' run) are counted apart and do not decide the verdict."""
    total = est.iloc[-1]
    rows = est.iloc[:-1].dropna(subset=["device"])
    unrecorded = rows[rows.device == UNRECORDED]
    devices = rows[rows.device != UNRECORDED].groupby("device").size()
    on = "; ".join(f"{d} ({n} row{'s' * (n != 1)})" for d, n in devices.items()) or "no device"
    if not unrecorded.empty:
        which = ", ".join(f"{r.stage} {r.component}" for r in unrecorded.itertuples())
        on += f"; {len(unrecorded)} row(s) record no device ({which}: {unrecorded.seconds.sum():,.0f} s)"
    kinds = {_kind(d) for d in devices.index}
    if total.seconds != total.seconds:  # NaN: no row has a rate
        return (
            f"Estimated total: {NOT_MEASURED}: no run measured any of the {len(est) - 1} rows "
            f"({total.source}). Run the profile's stages once (or pass --from a run that did)."
        )
    secs = total.seconds
    verdict = {
        frozenset(): "No row records its device: the total is an estimate for a device nobody named.",
        frozenset({"cpu"}): "These are CPU measurements: this is a CPU estimate, not a GPU (H200) one.",
        frozenset({"gpu"}): "Every rate was measured on a GPU: this is an estimate for that GPU.",
    }.get(
        frozenset(kinds),
        "The rows mix devices (or do not record one): the total is an estimate for no single "
        "device; read the rows per device.",
    )
    return (
        f"Estimated total: {secs:,.0f} s ({secs / 60:,.1f} min) over the measured rows; {total.source}. "
        f"Rates measured on: {on}. {verdict}"
    )


def _kind(device: str) -> str:
    d = device.lower()
    return "gpu" if any(w in d for w in ("cuda", "nvidia", "gpu", "h100", "h200")) else "cpu" if "cpu" in d else "?"


def display_frame(est: pd.DataFrame) -> pd.DataFrame:
    """The estimate with numbers as readable strings (for markdown and the report)."""

    def num(v, fmt):
        return "–" if v is None or v != v else format(v, fmt)

    out = est.drop(columns=["unit"]).copy()
    out["units"] = out.units.map(lambda v: num(v, ",.0f"))
    out["rate"] = out.rate.map(lambda v: num(v, ".4g"))
    out["seconds"] = out.seconds.map(lambda v: num(v, ",.1f"))
    return out.fillna("")


def screen_text(est: pd.DataFrame) -> str:
    """The estimate for a terminal of `screen.WIDTH` columns: one line per row (stage, component,
    backbone, units, rate, time) pointing to a numbered note that says where its rate comes from, on
    which device, and under which assumption (rows that share these share the note). Every column of
    `display_frame` is in the notes; `estimate --verbose` prints that table whole."""
    notes: dict[str, int] = {}
    rows = []
    for r in est.to_dict("records"):
        parts = [str(r.get("source") or "")]
        if isinstance(r.get("device"), str) and r["device"] and r["stage"] != "total":
            parts.append(f"device: {r['device']}")
        if isinstance(r.get("assumption"), str) and r["assumption"]:
            parts.append(r["assumption"])
        note = notes.setdefault("; ".join(p for p in parts if p), len(notes) + 1)
        units, rate = r.get("units"), r.get("rate")
        rows.append(
            [
                r["stage"],
                r["component"],
                "" if r.get("backbone") is None or r.get("backbone") != r.get("backbone") else r["backbone"],
                "" if units is None or units != units else f"{units:,.0f}",
                "–" if rate is None or rate != rate else f"{rate:.4g}/s",
                screen.duration(r.get("seconds")),
                f"[{note}]",
            ]
        )
    table = screen.table(
        ["stage", "component", "backbone", "units", "rate", "time", "note"], rows, right={3, 4, 5}, fit=1
    )
    lines = [table, ""]
    for text, n in notes.items():
        lines.append(screen.wrap(text, indent=" " * (len(str(n)) + 3), first=f"[{n}] "))
    return "\n".join(lines)


def stage_comparison(est: pd.DataFrame, work_dir) -> pd.DataFrame:
    """Estimated seconds per stage beside the recorded ones: stages.json (latest success, which may
    have skipped finished work) and the slowest ok execution in the run folders' summary.json."""
    work = resolve(work_dir)
    path = work / "stages.json"
    state = read_json(path, recover=STATE_RECOVER) if path.exists() else {}
    slowest: dict[str, float] = {}
    for path in work.glob(f"*/{SUMMARY}"):
        for k, s in read_summary(path).get("stages", {}).items():
            if s.get("status") == "ok":
                slowest[k] = max(slowest.get(k, 0.0), s["seconds"])
    per = est.iloc[:-1].groupby("stage").seconds.sum(min_count=1)
    return pd.DataFrame(
        [
            {
                "stage": k,
                "estimated_s": per.get(k),
                "stages.json_s": state.get(k, {}).get("seconds"),
                "slowest_summary_s": slowest.get(k),
            }
            for k in sorted(set(per.index) | set(state))
        ]
    )


def measured_profile(work_dir) -> str | None:
    """The profile the run in work_dir ran (from its summaries), or None."""
    for path in sorted(resolve(work_dir).glob(f"*/{SUMMARY}"), reverse=True):
        return read_summary(path).get("profile")
    return None


def _one(values):
    vals = {json.dumps(v, sort_keys=True, default=str) for v in values}
    return json.loads(vals.pop()) if len(vals) == 1 else "mixed"


def rates_origin(est: pd.DataFrame, work_dir=None) -> str:
    """Where the estimate's rates come from, in words: the run in `work_dir`, or (none given) the committed
    tables, saying when the run files they were measured from are not in this checkout."""
    sources = [str(v) for v in est.source.dropna()]
    pages = sorted({s.split(": ")[0] for s in sources if PAGES_SOURCE in s})
    if work_dir is not None:
        text = f"Rates measured by the run in {work_dir} (its DONE.json, verifier.json and executed notebooks)"
    else:
        text = (
            f"No measured run given (--from): using the committed rates of figures/tables/{RATES_TABLE}.csv "
            f"and the dataset sizes of {SIZES_TABLE}.csv"
        )
        absent = sorted({_run_folder(f) for s in sources for f in absent_run_files(s)})
        if absent:
            text += (
                f"; the run that measured them is not in this checkout (the files each note cites under "
                f"{', '.join(absent)} are its)"
            )
    if pages:
        text += f"; stages that only run a notebook (00, 06) from {pages[0]}, where nothing else measured them"
    return text + "."


def _run_folder(path: str) -> str:
    """runs/<profile>/ of a cited run file (the folder a reader looks for), else the file's folder."""
    found = re.match(r"^(.*?runs/[^/]+/)", path)
    return found.group(1) if found else f"{Path(path).parent}/"


# ---------------------------------------------------------------------------------------------
# The training-length curve's pieces (`python -m compsense length`)

LENGTH_RECORD = Path("figures") / "tables" / "length_record.json"


def length_rates(precision: str, record_path=None) -> dict:
    """Seconds per training step and per scored step at `precision`, from the committed record of the
    curve's pieces (`length --publish` writes it: each part's variant, steps, train_s and eval_s). A part
    trains from its run's last checkpoint to its last step and scores the steps it lists, so a part that
    resumed records fewer steps trained (or scored) than it lists: the slowest part per step is the rate.
    {"train": (s, part), "score": (s, part), "parts": n, "train_range": (lo, hi), "device": ..., "source": ...};
    FileNotFoundError when the record is absent, ValueError when no part ran at `precision`."""
    path = resolve(record_path) if record_path is not None else repo_root() / LENGTH_RECORD
    if not path.is_file():
        raise FileNotFoundError(
            f"{path}: no record of the curve's pieces; `python -m compsense length --publish` writes it"
        )
    record = read_json(path)
    parts = [
        p for p in record.get("parts", []) + record.get("precision_control", []) if p.get("precision") == precision
    ]
    parts = [p for p in parts if p.get("steps") and p.get("train_s") is not None and p.get("eval_s") is not None]
    if not parts:
        raise ValueError(
            f"{shown(path)}: no part of the curve ran at {precision}; run one, or estimate the other precision"
        )
    per_step = [(float(p["train_s"]) / max(p["steps"]), p) for p in parts]
    per_score = [(float(p["eval_s"]) / len(p["steps"]), p) for p in parts]
    torch = record.get("versions", {}).get("torch", "")
    device = f"cpu (torch {torch}, {shown(path)})" if torch.endswith("+cpu") else f"not recorded (torch {torch or '?'})"
    return {
        "train": max(per_step, key=lambda x: x[0]),
        "score": max(per_score, key=lambda x: x[0]),
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


def length_estimate(
    steps, variants, precision: str = "bf16", seed: int = 42, root=None, record_path=None
) -> pd.DataFrame:
    """Seconds of one `python -m compsense length` piece: per variant, the training from where its run
    stands under the length root (`length_progress`) to max(steps) and the scoring of the steps it has not
    exported yet; Base is scored once per root and precision (as one step: one model on the same sets).
    Rates: `length_rates`. One row per model and a last `total` row."""
    steps = sorted({int(s) for s in steps})
    unknown = [v for v in variants if v not in LENGTH_VARIANTS]
    if unknown or not steps or steps[0] < 1 or steps[-1] > SCHEDULE_STEPS:
        raise ValueError(
            f"length: variants {list(variants)}, steps {steps}: the variants are {', '.join(LENGTH_VARIANTS)} and "
            f"the steps lie in 1..{SCHEDULE_STEPS} (the authors' schedule)"
        )
    rates = length_rates(precision, record_path)
    train_s, train_part = rates["train"]
    score_s, score_part = rates["score"]
    root = length_root(root, create=False)  # an estimate only reads the root
    points = root / "results" / POINTS
    base_done = False
    if points.is_file():
        scored = read_table(points)
        base_done = bool(((scored.variant == "Base") & (scored.stamp == f"pretrained-{precision}")).any())
    rows = [
        {
            "model": "Base",
            "trains": "",
            "train_s": 0.0,
            "scores": "scored here" if base_done else "1 model",
            "score_s": 0.0 if base_done else score_s,
        }
    ]
    for variant in variants:
        start, exported = length_progress(variant, seed, root)
        todo = [s for s in steps if s not in exported]
        trained = max(steps[-1] - start, 0) if todo else 0
        rows.append(
            {
                "model": variant,
                "trains": f"steps {start}-{steps[-1]}" if trained else "nothing",
                "train_s": trained * train_s,
                "scores": f"steps {','.join(map(str, todo))}" if todo else "nothing",
                "score_s": len(todo) * score_s,
            }
        )
    df = pd.DataFrame(rows)
    df["seconds"] = df.train_s + df.score_s
    total = {"model": "total", "trains": "", "scores": "", **df[["train_s", "score_s", "seconds"]].sum().to_dict()}
    df = pd.concat([df, pd.DataFrame([total])], ignore_index=True)

    def part(p):
        return f"{p['variant']} of seed {p['seed']} at {p['commit']}, steps {','.join(map(str, p['steps']))}"

    lo, hi = rates["train_range"]
    df.attrs.update(
        {
            "rates": f"From {rates['source']} ({rates['parts']} {precision} part(s) of the curve): training "
            f"{train_s:.1f} s a step at batch 128 (the slowest part, {part(train_part)}: "
            f"{train_part['train_s']:,.1f} s to step {max(train_part['steps'])}; the parts ranged {lo:.1f}-{hi:.1f} "
            "s a step, and one that resumed from a checkpoint trained fewer steps than it lists), "
            f"scoring {score_s:.1f} s a "
            f"step ({score_s / 60:.1f} min; the slowest part, {part(score_part)}: {score_part['eval_s']:,.1f} s "
            f"for {len(score_part['steps'])} step(s)). Measured on {rates['device']}. Base is priced as one "
            "scored step; loading the data, not recorded, is left out.",
            "root": f"Runs under {shown(root)}: a step exported there is neither trained nor scored again, and "
            "a run resumes from its newest checkpoint.",
        }
    )
    return df


def length_text(est: pd.DataFrame) -> str:
    """`length_estimate` for a terminal of `screen.WIDTH` columns."""
    rows = [
        [
            r.model,
            r.trains,
            "–" if r.model == "Base" else screen.duration(r.train_s),
            r.scores,
            screen.duration(r.score_s),
            screen.duration(r.seconds),
        ]
        for r in est.itertuples()
    ]
    table = screen.table(["model", "trains", "training", "scores", "scoring", "time"], rows, right={2, 4, 5}, fit=3)
    return "\n\n".join([screen.wrap(est.attrs["rates"]), screen.wrap(est.attrs["root"]), table])
