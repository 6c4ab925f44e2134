"""`python -m compsense crossencoder`: the cross-encoder ceiling of issue 50, item 4, from the shell.

Trains a real CrossEncoder (`compsense.verifiers.joint`) on notebook 04's `balanced` and `model_b` rows
at the budget curve's budget and the verifier seeds, scores it on notebook 04's near-miss sets with
the verifiers' table code (held-out families, pairwise accuracy, self-match, copy > near-miss, mean
scores, CondaQA, SugarCrepe), and reranks notebook 05's SciFact top-100 with it beside frozen MaxSim
(and any notebook-04 map verifiers named), with ms per query. Rows, sets and settings are the
profile's (`--profile`, params/<profile>.yaml's verifiers and reranking sections), so the cross-encoder
stands beside that profile's verifiers.

A module of its own, apart from `joint`, because the command line builds every subcommand's parser at
start-up: this one imports only argparse and the import-free `verifiers.names` there, and torch and
sentence-transformers when it runs.

`--loss` picks the objective (`joint.joint_loss` says why each): cmnrl (default; the verifiers' in-batch
contrast, `--mini-batch-size` pairs a forward pass so memory stays bounded), mnrl (the same in one pass,
for a GPU), bce (binary cross-entropy on labelled pairs, the classic cross-encoder objective). A model
off the default loss goes to <rows>-joint-<loss>-b<budget>/, and every row names its loss (`loss`
column; `size` joint-<loss>), so the tables never average two objectives together.

`--precision bf16` trains with bf16 autocast over fp32 weights (the trainer's `bf16=True`, on a CPU with
`use_cpu`, as the bi-encoder's `length --precision bf16` trains) and scores in it (`joint.JointScorer`);
fp32, the default, is fp32 on a GPU too. A bf16 model goes to <rows>-joint[-<loss>]-bf16-b<budget>/ (size
joint[-<loss>]-bf16), and every row has a `precision` column, so a bf16 model never loads, replaces or
averages with an fp32 one; its rerank rows are labelled CE-end2end@<its folder>.

Writes under --out/results/ (each atomically, rows of a model run again replaced):
crossencoder.parquet (near-miss rows, notebook 04's verifiers.parquet shape, with budget, loss, precision
and commit), crossencoder_runs.parquet/.csv (one row per model: commit, seed, rows, loss, precision, budget,
steps, train and scoring seconds), crossencoder_rerank.parquet, crossencoder_rerank_per_query.parquet and
crossencoder_rerank_cost.parquet (`verifiers.rerank`'s three tables, with `precision`: the cross-encoder's,
fp32 for the encoder and map verifiers). Models go beside the map verifiers:
<work-dir>/verifiers/<rows>-joint[-<loss>][-bf16]-b<budget>/seed<seed>/CE-end2end/, loaded when finished.

`--publish` trains nothing: it reads those tables under --out and writes them, their summary over seeds,
the comparison with the best map verifier, the record of each model and the figure beside the map verifiers
and the noise line into the committed figures/ (`compsense.figures.crossencoder`), then stops.
"""

from __future__ import annotations

import argparse

from compsense.verifiers.groups import flat
from compsense.verifiers.names import DEFAULT_JOINT_LOSS, JOINT_LOSSES
from compsense.verifiers.names import JOINT_MAPS as MAPS
from compsense.verifiers.names import JOINT_OUT as DEFAULT_OUT
from compsense.verifiers.names import JOINT_PRECISIONS as PRECISIONS
from compsense.verifiers.names import JOINT_RERANK_FILES as RERANK_FILES


def add_parser(sub) -> argparse.ArgumentParser:
    """The `crossencoder` subcommand on the command line's subparsers."""
    p = sub.add_parser(
        "crossencoder",
        help="train a real cross-encoder (MiniLM-L6 + a fresh head) on notebook 04's verifier rows and score it "
        "beside the map verifiers: near-miss sets and SciFact reranking (compsense.verifiers.joint)",
    )
    p.add_argument("--profile", default="local", help="whose verifiers/reranking settings (default local)")
    p.add_argument("--rows", default="balanced,model_b", help="comma-separated training data kinds (verifiers.data)")
    p.add_argument("--seeds", default="42,43,44", help="comma-separated training seeds (the verifier seeds)")
    p.add_argument("--budget", default="8192", help="triplets each model sees; comma-separated for several")
    p.add_argument("--work-dir", default=None, help="where notebook 01 left negatives/ (default: the profile's)")
    p.add_argument("--data-dir", default=None, help="the local data folder (default: the profile's)")
    p.add_argument("--out", default=DEFAULT_OUT, help=f"folder for results/ (default {DEFAULT_OUT})")
    p.add_argument("--backbone", default=None, help="the transformer under the head (default: the profile's)")
    p.add_argument("--device", default=None, help="cuda or cpu (default: what sentence-transformers picks)")
    p.add_argument(
        "--loss",
        default=DEFAULT_JOINT_LOSS,
        choices=JOINT_LOSSES,
        help=f"training objective (default {DEFAULT_JOINT_LOSS}): cmnrl, the verifiers' in-batch contrast in "
        "mini-batches of bounded memory; mnrl, the same in one pass (a GPU); bce, (anchor, positive) = 1 and "
        "(anchor, negative) = 0 pairs, the classic cross-encoder objective",
    )
    p.add_argument(
        "--mini-batch-size",
        type=int,
        default=None,
        help="with --loss cmnrl: (query, document) pairs a forward pass holds, which bounds memory (default: "
        "joint.JointTraining's, 16; a batch of 32 triplets is 192 pairs)",
    )
    p.add_argument(
        "--precision",
        default=PRECISIONS[0],
        help=f"training and scoring precision, one of {', '.join(PRECISIONS)} (default {PRECISIONS[0]}): bf16 is "
        "bf16 autocast over fp32 weights, as `length --precision bf16` trains the bi-encoder; its models and rows "
        "are kept apart from fp32 ones",
    )
    p.add_argument(
        "--lr",
        type=float,
        default=None,
        help="learning rate of the transformer (default: the verifiers' `encoder_lr`, as an end-to-end map verifier "
        "trains its encoder); a rate given here names the models' size (joint-...-lr0.0001)",
    )
    p.add_argument(
        "--head-lr",
        default=None,
        help="learning rate of the fresh head (default: the verifiers' `lr`, as an end-to-end map verifier trains "
        "its head; the transformer takes their `encoder_lr`); `same`: the transformer's, one rate for all, as the "
        "first run trained. A head rate names the models' size (joint-...-head0.001)",
    )
    p.add_argument(
        "--maps",
        default="",
        help="also train these map verifiers (e.g. F3,F4) on the same rows, budgets and seeds, through notebook "
        "04's budget-curve code, so the cross-encoder and the map verifiers pair seed by seed (issue 50, item 5); "
        f"their rows go to results/{MAPS}.parquet (default: none)",
    )
    p.add_argument(
        "--map-regimes",
        default="frozen,end2end",
        help="with --maps: the regimes they train in (default frozen,end2end; the profile's size_scope still "
        "narrows the authors' size)",
    )
    p.add_argument(
        "--map-sizes",
        default=None,
        help="with --maps: the sizes they train at (e.g. paper; default: the profile's sizes, size_scope still "
        "narrowing the authors' size): a reproduction check of one published point need not train the other",
    )
    p.add_argument(
        "--map-lr",
        type=float,
        default=None,
        help="with --maps: the end-to-end map verifiers' encoder learning rate (default: the profile's "
        "encoder_lr); a rate given names their folders, <rows>-<size>-lr<rate>-b<budget>, as --lr names the "
        "cross-encoder's",
    )
    p.add_argument("--ks", default="100", help="comma-separated rerank depths (default 100)")
    p.add_argument(
        "--map-verifiers",
        default="F1",
        help="map verifiers reranked beside it (default F1: frozen MaxSim, untrained where notebook 04 left "
        "none); F3,F4 add notebook 04's trained ones of the --rows variants",
    )
    p.add_argument("--cost-queries", type=int, default=20, help="queries the ms-per-query cost is timed on")
    p.add_argument(
        "--maps-only",
        action="store_true",
        help="with --maps: train and score only the map verifiers (no cross-encoder, no reranking): e.g. to check "
        "that notebook 04's budget curve points reproduce; --publish needs a cross-encoder's results",
    )
    p.add_argument("--no-rerank", action="store_true", help="skip SciFact reranking (near-miss sets only)")
    p.add_argument(
        "--publish",
        action="store_true",
        help="train nothing: write the results under --out (per seed, the summary over seeds, the rerank table, "
        "each model's record) into figures/tables/crossencoder*, the figure figures/04_crossencoder.*, and stop",
    )
    return p


def run(args, profile: dict) -> int:
    """Run the grid as `args` say on `profile` (params/<profile>.yaml as `pipeline.profiles.load_profile`
    read it) and print the separation table, the rerank table and where the files went (`--publish` is
    dispatched by the command line to `figures.crossencoder.main`)."""
    # torch, sentence-transformers and the training code load only when the command runs
    import pandas as pd  # noqa: PLC0415

    from compsense.core.paths import check_not_protected, resolve  # noqa: PLC0415
    from compsense.nearmiss.evaluation import separation_table  # noqa: PLC0415
    from compsense.verifiers import joint  # noqa: PLC0415

    settings = profile_settings(profile, args)
    kinds = comma_list(args.rows, "--rows")
    seeds, budgets = _ints(args.seeds, "--seeds"), _ints(args.budget, "--budget")
    _check_kinds(kinds)
    maps = _map_plan(args)
    if args.maps_only and maps is None:
        raise ValueError("--maps-only trains the map verifiers --maps names: give --maps (e.g. --maps F3,F4)")
    training = joint.JointTraining.from_verifier_params(settings["04"], budgets[0]).replace(
        loss=args.loss,
        precision=args.precision,
        **({} if args.mini_batch_size is None else {"mini_batch_size": args.mini_batch_size}),
        **_head_rate(args.head_lr),
        **({} if args.lr is None else {"lr": _positive(args.lr, "--lr"), "lr_named": True}),
    )
    # before anything loads: results never go into the committed figures/, data/ or the data folder
    check_not_protected(args.out, f"--out {args.out}", f"pass --out a folder under runs/ (default {DEFAULT_OUT})",
                        also=[settings["data_dir"]])  # fmt: skip
    _check_model_path(settings["backbone"])
    results_dir = resolve(args.out) / "results"
    inputs = load_inputs(settings, kinds, args.device)
    for note in inputs["notes"]:
        print(note)
    if args.maps_only:
        beside = train_maps(inputs, settings, maps, seeds, budgets, results_dir, args.device)
        with pd.option_context("display.width", 200, "display.max_columns", 40):
            print(separation_table(beside).to_string())
        print(f"results: {results_dir}")
        return 0
    runs, tidy, fitted = joint.run_joint_grid(
        inputs["rows"],
        inputs["sets"],
        settings["backbone"],
        settings["work_dir"],
        training,
        seeds=seeds,
        budgets=budgets,
        results_dir=results_dir,
        device=args.device,
        profile=settings["profile"],
    )
    if maps:
        beside = train_maps(inputs, settings, maps, seeds, budgets, results_dir, args.device)
        tidy = pd.concat([tidy, beside])
    with pd.option_context("display.width", 200, "display.max_columns", 40):
        print(separation_table(tidy).to_string())
        if not args.no_rerank:
            print(rerank(fitted, inputs["encoder"], settings, args, results_dir).to_string())
    print(
        runs[
            ["train_data", "loss", "precision", "budget", "seed", "steps", "train_seconds", "eval_seconds", "loaded"]
        ].to_string()
    )
    print(f"results: {results_dir}")
    return 0


def profile_settings(profile: dict, args) -> dict:
    """What the run reads from the profile, with the command line's overrides: {"04": notebook 04's
    parameters (its `training`, `rows` and `near_miss_sets` mappings lifted to the top: `verifiers.groups.flat`), "05":
    notebook 05's, and the shared ones (profile, seed, work_dir, data_dir, backbone)}."""
    common = profile.get("common") or {}
    p04 = flat({**common, **(profile.get("verifiers") or {})})  # notebook 04's section (the pipeline's layer is above)
    p05 = {**common, **(profile.get("reranking") or {})}
    return {
        "04": p04,
        "05": p05,
        "profile": common.get("profile", args.profile),
        "seed": int(common.get("seed", 42)),
        "work_dir": args.work_dir or common.get("work_dir"),
        "data_dir": args.data_dir or common.get("data_dir"),
        "backbone": args.backbone or p04["backbone"],
    }


def load_inputs(settings: dict, kinds: list[str], device=None) -> dict:
    """Notebook 04's steps before its grid, at the profile's settings: the backbone (loaded first, so a
    name that cannot load fails before anything else), notebook 01's triplets and held-out pairs, the
    training rows of each kind (retrieval rows touching notebook 05's sets left out, as notebook 04
    does) and the near-miss sets. {"encoder", "rows", "sets", "notes"}."""
    from compsense.core.encoders import load_encoder  # noqa: PLC0415
    from compsense.core.seed import seed_everything  # noqa: PLC0415
    from compsense.nearmiss.evaluation import eval_sets  # noqa: PLC0415
    from compsense.retrieval.harness import load_eval_datasets  # noqa: PLC0415
    from compsense.retrieval.regime import base_name  # noqa: PLC0415
    from compsense.verifiers.data import training_rows  # noqa: PLC0415
    from compsense.verifiers.training import stage_inputs  # noqa: PLC0415

    p, seed, data_dir = settings["04"], settings["seed"], settings["data_dir"]
    seed_everything(seed)
    encoder = load_encoder(settings["backbone"], device=device, max_seq_length=p["max_seq_length"], seed=seed)
    structural, heldout = stage_inputs(
        settings["work_dir"], p["train_split"], p["heldout_split"], max_pairs=p["max_pairs"], seed=seed
    )
    zero_shot = [
        ds
        for ds in load_eval_datasets(p["zero_shot_datasets"], data_dir=data_dir, seed=seed)
        if base_name(ds.name) not in p["retrieval_sources"]
    ]
    rows, notes = {}, []
    for kind in kinds:
        rows[kind], counts = training_rows(
            kind,
            structural,
            data_dir=data_dir,
            retrieval_sources=p["retrieval_sources"],
            structural_share=p["structural_share"],
            families=p["structural_families"],
            max_retrieval_rows=p["max_retrieval_rows"],
            max_paraphrase_pairs=p["max_paraphrase_pairs"],
            seed=seed,
            retrieval_kwargs={"max_pairs_per_query": p["max_pairs_per_query"], "exclude_datasets": zero_shot},
        )
        notes.append(f"{kind}: {len(rows[kind])} rows, {counts.get('rows_by_kind', counts)}")
    sets, set_notes = eval_sets(
        heldout,
        data_dir=data_dir,
        mrpc_split=p["mrpc_split"],
        max_pairs=p["max_pairs"],
        seed=seed,
        condaqa_unit=p["condaqa_unit"],
    )
    return {"encoder": encoder, "rows": rows, "sets": sets, "notes": notes + set_notes}


def rerank(fitted, encoder, settings: dict, args, results_dir):
    """Notebook 05's SciFact top-K reranked by every trained cross-encoder, beside the encoder alone and
    `--map-verifiers` (`verifiers.rerank.find_methods`: notebook 04's, or an untrained frozen F1),
    through `rerank_grid`, the one reranking path. Tables go to `results_dir`; returns the summary
    (nDCG@10 per method and K) joined with the cost table (ms per query). Every row carries `precision`:
    the cross-encoder's own, fp32 for the encoder and the map verifiers. A bf16 cross-encoder's label always
    names its folder (CE-end2end@<rows>-joint-bf16-b<budget>): an fp32 and a bf16 model written to the same
    tables by two commands never share a label, so neither a key nor an average."""
    from compsense.core.storage import append_results  # noqa: PLC0415
    from compsense.retrieval.harness import load_eval_datasets  # noqa: PLC0415
    from compsense.verifiers import rerank as R  # noqa: PLC0415
    from compsense.verifiers.config import Compute  # noqa: PLC0415
    from compsense.verifiers.joint import LABEL, REGIME, SCORER  # noqa: PLC0415
    from compsense.verifiers.training import variant_name  # noqa: PLC0415

    p, seed = settings["05"], settings["seed"]
    names = comma_list(args.map_verifiers, "--map-verifiers")
    seeds = sorted({run.seed for run in fitted})
    # a training-free verifier is one function at every seed: reranked once
    seeds = seeds[:1] if set(names) <= set(R.TRAINING_FREE) else seeds
    datasets = load_eval_datasets(
        p["eval_datasets"],
        data_dir=settings["data_dir"],
        split=p["eval_split"],
        max_queries=p["eval_max_queries"],
        extra_docs=p["eval_extra_docs"],
        seed=seed,
    )
    methods, notes = R.find_methods(
        settings["work_dir"],
        names,
        ["frozen"],
        encoder,
        device=args.device,
        max_seq_length=settings["04"]["max_seq_length"],
        variant=list(dict.fromkeys(variant_name(run.train_data, "small") for run in fitted)),
        seed=seeds,
    )
    source = "cross-encoder (compsense.verifiers.joint)"
    methods += [
        R.Method(
            _joint_label(run, LABEL),
            SCORER,
            REGIME,
            run.scorer,
            encoder,
            source,
            seed=run.seed,
            verifier_variant=run.variant,
        )  # fmt: skip
        for run in fitted
    ]
    for note in notes:
        print(note)
    plan = R.RerankPlan(ks=_ints(args.ks, "--ks"), weights=(0.0,), first_stage="base", cost_queries=args.cost_queries)
    compute = Compute(batch_size=p["batch_size"], candidate_batch=p["candidate_batch"], device=args.device)
    grid = R.rerank_grid(
        datasets,
        {"base": encoder},
        methods,
        settings["work_dir"],  # its embedding caches are notebook 05's
        settings["backbone"],
        seed,
        plan=plan,
        compute=compute,
        write=False,
        profile=settings["profile"],
    )
    precisions = {run.variant: run.precision for run in fitted}
    results, per_query, cost = (_with_precision(t, precisions) for t in (grid.results, grid.per_query, grid.cost))
    keys = (R.RERANK_KEY, R.PER_QUERY_KEY, ["dataset", "variant", "k"])
    for table, name, key in zip((results, per_query, cost), RERANK_FILES, keys, strict=True):
        append_results(table, results_dir / f"{name}.parquet", key=key)
    summary = R.rerank_summary(grid.results).groupby("variant", sort=False).first()
    return summary.join(R.cost_table(grid.cost).set_index("variant").drop(columns=["regime"]), how="left")


def train_maps(inputs: dict, settings: dict, plan: dict, seeds, budgets, results_dir, device=None):
    """Notebook 04's map verifiers `plan["names"]` in `plan["regimes"]` on each rows kind of `inputs`
    (`load_inputs`), at every budget and seed the cross-encoder trains at, through the budget curve's own code
    (`verifiers.budget.run_budget_curve`: the same folders, verifiers/<rows>-<size>-b<budget>/, so a finished
    verifier is loaded, and frozen MaxSim with its noise control at budget 0, the noise line), with the
    profile's sizes, size_scope and training settings, on `device`. `plan["encoder_lr"]` (None: the profile's)
    sets the end-to-end encoder's rate and names the folders (`joint.lr_suffix`, as `joint_size` names a
    model). Rows are appended to `results_dir`/MAPS.parquet as each kind finishes; returns them (tidy
    near-miss rows with `budget`)."""
    from dataclasses import fields  # noqa: PLC0415

    import pandas as pd  # noqa: PLC0415

    from compsense.core.storage import append_results  # noqa: PLC0415
    from compsense.nearmiss.evaluation import NEARMISS_KEY  # noqa: PLC0415
    from compsense.verifiers.budget import BudgetCurve, run_budget_curve  # noqa: PLC0415
    from compsense.verifiers.config import Compute, VerifierGrid, VerifierTraining  # noqa: PLC0415
    from compsense.verifiers.joint import lr_suffix  # noqa: PLC0415

    p, names, regimes, rate = settings["04"], plan["names"], plan["regimes"], plan.get("encoder_lr")
    sizes = tuple(plan.get("sizes") or p["sizes"])
    # `--map-sizes small` leaves the profile's scope of the authors' size with nothing to narrow
    scope = {size: limits for size, limits in (p["size_scope"] or {}).items() if size in sizes}
    training = VerifierTraining(**{f.name: p[f.name] for f in fields(VerifierTraining) if f.name in p})
    training = training if rate is None else training.replace(encoder_lr=rate)
    grid = VerifierGrid(
        verifiers=names, regimes=regimes, sizes=sizes, size_scope=scope, seeds=seeds,
        include_special=p["include_special"], f2_learnable=p["f2_learnable"], folder_suffix=lr_suffix(rate),
    )  # fmt: skip
    tables = []
    for kind, rows in inputs["rows"].items():
        curve = BudgetCurve(
            examples=tuple(sorted(budgets)), verifiers=tuple(names), sizes=sizes,
            size_scope=scope, regimes=tuple(regimes), seeds_at_largest=tuple(seeds),
            train_data=kind, authors_recipe=False,
        )  # fmt: skip
        _, tidy = run_budget_curve(
            curve, {kind: rows}, grid, inputs["encoder"], settings["work_dir"], inputs["sets"], settings["backbone"],
            training=training, compute=Compute(device=device), profile=settings["profile"],
        )  # fmt: skip
        append_results(tidy, results_dir / f"{MAPS}.parquet", key=[*NEARMISS_KEY, "budget"])
        tables.append(tidy)
    return pd.concat(tables, ignore_index=True)


def _map_plan(args) -> dict | None:
    """`train_maps`' plan from `--maps`, `--map-regimes`, `--map-lr` and `--map-sizes` ({"names", "regimes",
    "encoder_lr", "sizes"}: None, the profile's),
    checked before anything loads; None without `--maps`."""
    from compsense.verifiers.architectures import SIZES, verifier_names  # noqa: PLC0415
    from compsense.verifiers.config import REGIMES  # noqa: PLC0415

    if not args.maps:
        return None
    names = verifier_names(comma_list(args.maps, "--maps"))
    regimes = _chosen(args.map_regimes, "--map-regimes", REGIMES)
    rate = None if args.map_lr is None else _positive(args.map_lr, "--map-lr")
    sizes = None if args.map_sizes is None else _chosen(args.map_sizes, "--map-sizes", SIZES)
    return {"names": names, "regimes": regimes, "encoder_lr": rate, "sizes": sizes}


def _chosen(text: str, option: str, allowed) -> list[str]:
    """`option`'s comma-separated values, each one of `allowed`, or ValueError naming the others."""
    values = comma_list(text, option)
    stray = sorted(set(values) - set(allowed))
    if stray:
        raise ValueError(f"{option}: unknown {stray}; use some of {list(allowed)}")
    return values


def _joint_label(run, label: str) -> str:
    """A cross-encoder's rerank label, always with its folder (CE-end2end@balanced-joint-bce-b8192): two
    commands writing to the same --out, or two publications merged (`figures.crossencoder.keep_earlier`),
    never share a label for different models."""
    return f"{label}@{run.variant}"


def _with_precision(table, precisions: dict):
    """`table` (rerank rows with `verifier_variant`) with a `precision` column: each cross-encoder folder's
    precision, fp32 for every other row (the first-stage encoder and the map verifiers run in fp32)."""
    from compsense.verifiers.rerank import variant_folders  # noqa: PLC0415

    return table.assign(precision=variant_folders(table).map(precisions).fillna(PRECISIONS[0]))


def _check_model_path(backbone: str) -> None:
    """A --backbone that names a folder (a path) must be one: otherwise it would be read as a hub id,
    and the hub's error says nothing of the folder."""
    from pathlib import Path  # noqa: PLC0415

    given = Path(str(backbone)).expanduser()
    if (given.is_absolute() or str(backbone).startswith(".")) and not given.is_dir():
        raise FileNotFoundError(
            f"--backbone {backbone}: no such model folder. Fix: pass a short name (minilm-l6, tiny-bert), a saved "
            "SentenceTransformer or transformers folder, or a hub id"
        )


def _head_rate(text: str | None) -> dict:
    """--head-lr as JointTraining changes: {} (the verifiers' rate), one rate for all ("same"), or a rate."""
    if text is None:
        return {}
    if text.strip().lower() == "same":
        return {"head_lr": None, "head_weight_decay": None}
    try:
        return {"head_lr": _positive(float(text), "--head-lr")}
    except ValueError:
        raise ValueError(f"--head-lr {text!r}: give a positive learning rate such as 1e-3, or `same`") from None


def _positive(rate: float, option: str) -> float:
    if not rate > 0:
        raise ValueError(f"{option} {rate!r}: give a positive learning rate such as 1e-4")
    return float(rate)


def comma_list(text: str, option: str) -> list[str]:
    names = [t.strip() for t in str(text).split(",") if t.strip()]
    if not names:
        raise ValueError(f"{option} is empty; give comma-separated values")
    return names


def _ints(text: str, option: str) -> list[int]:
    try:
        values = [int(t) for t in comma_list(text, option)]
    except ValueError:
        raise ValueError(f"{option} {text!r}: give comma-separated whole numbers, e.g. 42,43,44") from None
    if any(v < 0 for v in values):
        raise ValueError(f"{option} {text!r}: values must be >= 0")
    return list(dict.fromkeys(values))


def _check_kinds(kinds: list[str]) -> None:
    from compsense.verifiers.names import TRAIN_DATA  # noqa: PLC0415

    unknown = [k for k in kinds if k not in TRAIN_DATA]
    if unknown:
        raise ValueError(f"--rows {','.join(unknown)}: unknown training data; choose from {', '.join(TRAIN_DATA)}")
