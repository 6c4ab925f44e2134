"""Command line: `python -m compsense doctor [--profile local]`, `python -m compsense stage 02 --profile smoke`
(one notebook as a DVC stage runs it; `make reproduce` is `dvc repro`),
`python -m compsense evaluate MODEL DATASET...` (retrieval metrics, tidy parquet and MTEB-shaped JSON),
`python -m compsense nearmiss MODEL` (near-miss AUC and pairwise accuracy on CondaQA, SugarCrepe and
the held-out pairs),
`python -m compsense crossencoder --rows balanced,model_b --seeds 42,43,44 --budget 8192` (a real
cross-encoder on the verifiers' rows, scored beside them: compsense.verifiers.joint),
`python -m compsense estimate --profile paper --from runs/local` (a profile's time from a run's
measured throughput), `python -m compsense piece NAME | --list` (the declared pieces of
params/pieces.yaml, each a DVC experiment). The GPU bundle is a script: `python scripts/bundle.py`."""

from __future__ import annotations

import argparse
import sys

from compsense.explorer import scorers_cli  # both argparse only: the CLI starts light
from compsense.verifiers import joint_cli


def offline_defaults() -> None:
    """What the command line sets for itself and the notebook kernels it starts, never `import
    compsense`: HF_HUB_OFFLINE=1 when the variable is unset and the hub cannot be reached (a fast
    check; a failed hub lookup would hang ~70 s per model), and no tokenizer threads in forked workers.
    A variable already set is left as it is."""
    import os

    if "HF_HUB_OFFLINE" not in os.environ:
        from compsense.core.encoders import hub_reachable

        if hub_reachable() is not None:
            os.environ["HF_HUB_OFFLINE"] = "1"
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")


def main(argv: list[str] | None = None) -> int:
    offline_defaults()
    parser = argparse.ArgumentParser(prog="compsense", description=__doc__)
    parser.add_argument("--debug", action="store_true", help="show the full traceback of an error")
    sub = parser.add_subparsers(dest="command", required=True)
    doc = sub.add_parser(
        "doctor",
        help="versions, device, offline backbones and local datasets; "
        "exits 1 when something a profile needs is missing",
    )
    doc.add_argument("--profile", default="local", help="the profile whose needs to check (smoke, local, paper)")
    ev = sub.add_parser(
        "evaluate",
        help="retrieval metrics of one encoder on BEIR folders or NanoBEIR sets "
        "(tidy parquet + MTEB-shaped JSON under --out)",
    )
    _one_encoder(ev, "runs/evaluate", seed_help="recorded in the table; tiny-bert's random weights")
    ev.add_argument(
        "datasets",
        nargs="+",
        metavar="DATASET",
        help="BEIR folder (corpus.jsonl, queries.jsonl, qrels/), a name under the data folder (scifact), "
        "or a NanoBEIR set (NanoSciFact; from <data folder>/nanobeir, else the hub)",
    )
    ev.add_argument("--split", default="test", help="qrels split (qrels/<split>.tsv)")
    ev.add_argument(
        "--nanobeir-dataset-id",
        default="sentence-transformers/NanoBEIR-en",
        help="hub dataset NanoBEIR sets come from when no local copy exists (the paper's: lightonai/NanoBEIR-en)",
    )
    ev.add_argument(
        "--allow-subset",
        action="store_true",
        help="evaluate a dataset named under the data folder whose files differ from data/MANIFEST.json's "
        "release (cut or altered) anyway; its results are named <name>-subset (refused otherwise)",
    )
    nm = sub.add_parser(
        "nearmiss",
        help="near-miss sensitivity of one encoder: CondaQA, SugarCrepe swaps and the held-out pairs "
        "(tidy parquet + MTEB-shaped JSON under --out; compsense.nearmiss.external)",
    )
    _one_encoder(nm, "runs/nearmiss", seed_help="the bootstrap's and SugarCrepe's query draw; tiny-bert's weights")
    nm.add_argument(
        "--sets", default="condaqa,sugarcrepe,heldout", help="comma-separated: condaqa, sugarcrepe, heldout"
    )
    nm.add_argument("--work-dir", default="runs/local", help="where notebook 01 left negatives/pairs.parquet (heldout)")
    nm.add_argument("--n-boot", type=int, default=1000, help="bootstrap resamples per interval")
    stg = sub.add_parser("stage", help="run one notebook of a profile (what each stage of dvc.yaml runs)")
    stg.add_argument("key", help="the notebook's prefix, e.g. 02; `libraries` writes the library versions record")
    stg.add_argument("--profile", default="local", help="params/<profile>.yaml")
    pie = sub.add_parser("piece", help="run one declared piece of params/pieces.yaml, or --list them")
    pie.add_argument("name", nargs="?", help="the piece (see --list)")
    pie.add_argument("--list", action="store_true", help="where to start, each piece's time and last finished run")
    pie.add_argument(
        "--verbose", action="store_true", help="with --list: each piece's command and what it makes in full"
    )
    pie.add_argument(
        "--force", action="store_true", help="re-run its stages even when nothing changed (dvc exp run --force)"
    )
    est = sub.add_parser("estimate", help="a profile's time from the throughput a run measured")
    est.add_argument("--profile", default="paper", help="the profile to estimate (params/<profile>.yaml)")
    est.add_argument(
        "--from",
        dest="work_dir",
        default=None,
        help="the work_dir of a run, e.g. runs/local (default: the published run's rates, figures/tables/)",
    )
    est.add_argument(
        "--set",
        dest="overrides",
        action="append",
        default=[],
        metavar="SECTION.KEY=VALUE",
        help="a parameter by its path, as `dvc exp run -S` gives it (repeatable): estimate a narrowed profile",
    )
    est.add_argument("--only", default=None, help="comma-separated notebook prefixes, e.g. 02,03")
    est.add_argument("--piece", default=None, help="estimate a declared piece (its profile, stages and --set)")
    est.add_argument(
        "--rate",
        action="append",
        default=[],
        metavar="STAGE/COMPONENT[/BACKBONE]=UNITS_PER_S",
        help="a rate measured elsewhere, e.g. 02/train/minilm-l6=2322; needs --rate-device/--rate-source",
    )
    est.add_argument("--rate-device", default=None, help="the device the --rate values were measured on")
    est.add_argument("--rate-source", default=None, help="where the --rate values were measured (cite it)")
    est.add_argument(
        "--verbose", action="store_true", help="the whole table, one row a line, and what a unit is at each stage"
    )
    est.add_argument(
        "--length",
        action="store_true",
        help="price a `length` piece (the training-length curve) from figures/tables/length_record.json, "
        "with --steps, --variants, --precision, --seed and --root as `length` takes them",
    )
    est.add_argument("--steps", default="25,50", help="with --length: the steps the piece exports")
    est.add_argument("--variants", default="A,B,C", help="with --length: A, B, C")
    est.add_argument("--precision", default="bf16", choices=["fp32", "bf16"], help="with --length")
    est.add_argument("--seed", type=int, default=42, help="with --length: whose runs under --root count as begun")
    est.add_argument(
        "--root",
        default=None,
        help="with --length: the length root, whose exported steps and checkpoints are not trained again "
        "(default $COMPSENSE_LENGTH_DIR or ~/.cache/compsense/length)",
    )
    ln = sub.add_parser(
        "length",
        help="the training-length curve: A, B and the control C on the authors' schedule, stopped at chosen "
        "steps and scored (compsense.nearmiss.length_run)",
    )
    ln.add_argument("--seed", type=int, default=42)
    ln.add_argument(
        "--steps",
        default=None,
        help="comma-separated steps of the 3,375-step schedule to export (default 25,50; with --external: "
        "every exported step)",
    )
    ln.add_argument(
        "--variants",
        default="A,B,C",
        help="comma-separated: A, B, C (the control), B-para (the anchor's paraphrase as the structural positive)",
    )
    ln.add_argument("--precision", default="bf16", choices=["fp32", "bf16"], help="training and scoring precision")
    ln.add_argument(
        "--root", default=None, help="runs and scores (default $COMPSENSE_LENGTH_DIR or ~/.cache/compsense/length)"
    )
    ln.add_argument("--work-dir", default="runs/local", help="where notebook 01 left negatives/ (the structural rows)")
    ln.add_argument("--data-dir", default=None, help=scorers_cli.DATA_DIR_HELP)
    ln.add_argument("--device", default=None, help="cuda or cpu (default: cuda when available)")
    ln.add_argument("--backbone", default="minilm-l6", help="tiny-bert only to check the path (the curve is minilm-l6)")
    ln.add_argument("--eval-max-queries", type=int, default=None, help="subsample the test queries (checks only)")
    ln.add_argument("--publish", action="store_true", help="write the curve's tables and figure into figures/ and stop")
    ln.add_argument(
        "--external",
        action="store_true",
        help="score Base and every exported step of --variants (or only --steps when given) with `nearmiss` "
        "(CondaQA, SugarCrepe, the held-out pairs), each model once, and stop",
    )
    ln.add_argument(
        "--control-root", default=None, help="with --publish: a root of pieces run in the other precision (the control)"
    )
    scorers_cli.add_parser(sub)
    joint_cli.add_parser(sub)
    args = parser.parse_args(argv)
    try:
        return _dispatch(args)
    except Exception as err:
        # What a user can cause (a wrong path, a damaged file, a bad value) ends in one line that
        # names it and the fix; --debug shows where it was raised. Anything else is a bug: traceback.
        if args.debug or not _user_error(err):
            raise
        print(f"compsense {args.command}: {type(err).__name__}: {err}", file=sys.stderr)
        return 2


def _user_error(err: BaseException) -> bool:
    """Whether a user's input caused `err` (imported only when one is raised: the CLI starts light).
    DataError (a bad dataset row) and a profile value the schema refuses are ValueErrors;
    BackboneUnavailable is a model name that cannot be loaded here (its message names the offline ones);
    WriteFailed, a file of the runner's own that a full disk refused (it names the file). A full disk, a
    quota or a read-only file system met while writing is the user's to fix too (free space, another folder)."""
    import errno

    from compsense.core.encoders import BackboneUnavailable
    from compsense.core.storage import CorruptFile
    from compsense.pipeline.runner import Refused, WriteFailed  # Refused: a bad --only or piece name, anywhere

    paths = (FileNotFoundError, NotADirectoryError, IsADirectoryError, PermissionError)
    return isinstance(err, (*paths, ValueError, CorruptFile, Refused, BackboneUnavailable, WriteFailed)) or (
        isinstance(err, OSError) and err.errno in (errno.ENOSPC, errno.EDQUOT, errno.EROFS)
    )


def _one_encoder(sub, out: str, seed_help: str) -> None:
    """The arguments `evaluate` and `nearmiss` share: the model, where data and results are, and how it encodes."""
    sub.add_argument("model", help="short name (minilm-l6, tiny-bert), hub id, or a saved SentenceTransformer folder")
    sub.add_argument("--data-dir", default=None, help=scorers_cli.DATA_DIR_HELP)
    sub.add_argument("--out", default=out, help=f"folder for results/ and mteb/ (default {out})")
    sub.add_argument("--batch-size", type=int, default=64)
    sub.add_argument("--max-seq-length", type=int, default=128, help="tokens per text (the paper's 128)")
    sub.add_argument("--device", default=None, help="cpu, cuda, ... (default: what sentence-transformers picks)")
    sub.add_argument("--seed", type=int, default=0, help=seed_help)


def _dispatch(args) -> int:
    if args.command == "scorers":
        from compsense.explorer.scorers_cli import run as build_scorers

        return build_scorers(args)
    if args.command == "crossencoder" and args.publish:
        from compsense.figures.crossencoder import main as publish_crossencoder

        return publish_crossencoder(args)
    if args.command == "crossencoder":
        from compsense.pipeline.profiles import load_profile
        from compsense.verifiers.joint_cli import run as crossencoder

        return crossencoder(args, load_profile(args.profile))
    if args.command == "length":
        return _length(args)
    if args.command == "estimate":
        return _estimate(args)
    if args.command == "doctor":
        from compsense.doctor import main as doctor

        return doctor(profile=args.profile)
    if args.command in ("nearmiss", "evaluate"):
        from compsense.core.encoders import Encoding

        shared = {"data_dir": args.data_dir, "out": args.out, "seed": args.seed}
        shared["encoding"] = Encoding(
            batch_size=args.batch_size, max_seq_length=args.max_seq_length, device=args.device
        )
        if args.command == "nearmiss":
            from compsense.nearmiss.external import main as nearmiss

            return nearmiss(args.model, sets=args.sets, work_dir=args.work_dir, n_boot=args.n_boot, **shared)
        from compsense.retrieval.evaluate import main as evaluate

        subsets = _evaluate_subsets(args.datasets, args.data_dir, args.allow_subset)
        extra = {"split": args.split, "nanobeir_dataset_id": args.nanobeir_dataset_id, "subsets": subsets}
        return evaluate(args.model, args.datasets, **extra, **shared)
    if args.command == "stage":
        from compsense.pipeline import stage

        return stage.main(args.profile, args.key, debug=args.debug)
    from compsense.pipeline.pieces import list_pieces, run_piece

    if args.list or not args.name:
        print(list_pieces(verbose=args.verbose))
        return 0
    return run_piece(args.name, force=args.force)


def _length(args) -> int:
    from compsense.nearmiss import length_run

    if args.publish:
        from compsense.figures.length_tables import publish

        for path in publish(root=args.root, work_dir=args.work_dir, control_root=args.control_root):
            print(path)
        return 0
    given = args.steps is not None  # "" is a given, empty list: refused by name, never read as the default
    steps, variants = _steps_and_variants(args.steps if given else "25,50", args.variants)
    where = {"root": args.root, "work_dir": args.work_dir, "data_dir": args.data_dir, "backbone": args.backbone}
    if args.external:
        table = length_run.score_external(seed=args.seed, variants=variants, steps=steps if given else None, **where)
        pooled = table[(table.family == "all") & (table.metric == "auc")]
        print(pooled.pivot_table(index="dataset", columns=["variant", "step"], values="value").round(3).to_string())
        return 0
    rest = {"device": args.device, "eval_max_queries": args.eval_max_queries}
    print(
        length_run.run_piece(seed=args.seed, steps=steps, variants=variants, precision=args.precision, **where, **rest)
    )
    return 0


def _steps_and_variants(steps: str, variants: str) -> tuple[list[int], list[str]]:
    """`length`'s and `estimate --length`'s --steps (whole numbers) and --variants, each a comma list."""
    return [int(s) for s in joint_cli.comma_list(steps, "--steps")], joint_cli.comma_list(variants, "--variants")


def _evaluate_subsets(datasets: list[str], data_dir, allow: bool) -> list[str]:
    """The datasets given by name whose files are not the release data/MANIFEST.json describes (cut or
    altered, as a stage checks): refused before anything loads, so half a corpus is never reported
    under the dataset's name; with --allow-subset, returned, and evaluate names their results
    <name>-subset."""
    from pathlib import Path

    from compsense.data.datasets import DataError
    from compsense.data.release import release_checks
    from compsense.retrieval.evaluate import SUBSET_SUFFIX

    altered = {name: c for name, c in release_checks(datasets, data_dir).items() if c.altered}
    if altered and not allow:
        raise DataError(
            "; ".join(f"{c.what}: {c.detail}" for c in altered.values())
            + f". Fix: {next(iter(altered.values())).fix}; or pass --allow-subset to evaluate it anyway, "
            f"its results named {', '.join(Path(n).name + SUBSET_SUFFIX for n in altered)}"
        )
    return list(altered)


def _estimate(args) -> int:
    from compsense import estimate as E
    from compsense.pipeline import screen

    if args.length:
        steps, variants = _steps_and_variants(args.steps, args.variants)
        est = E.length_estimate(steps, variants, args.precision, seed=args.seed, root=args.root)
        command = (
            f"python -m compsense length --seed {args.seed} --steps {','.join(map(str, steps))} "
            f"--variants {','.join(variants)} --precision {args.precision}"
        )
        print(screen.wrap(f"# Time estimate: {command}", indent="  ", first="") + "\n")
        print(E.length_text(est))
        return 0
    rates = E.parse_rates(args.rate, args.rate_device, args.rate_source)  # checked before anything is read
    from compsense.pipeline.runner import select_stages
    from compsense.pipeline.stages import stage_key

    # stage keys as --only selects them (an --only that names no stage is refused, not ignored)
    profile, overrides = args.profile, list(args.overrides)
    only = [stage_key(nb) for nb in select_stages(args.only.split(","))] if args.only else None
    if args.piece:
        from compsense.pipeline.pieces import get_piece

        piece = get_piece(args.piece)
        profile, overrides, only = piece.profile, [*piece.overrides, *overrides], piece.stages
    est = E.estimate(profile, args.work_dir, rates=rates, overrides=overrides, only=only)
    what = f"piece {args.piece} (" if args.piece else ""
    sets = "".join(f" --set '{o}'" for o in overrides) + (f" --only {','.join(only)}" if only else "")
    print(
        screen.wrap(f"# Time estimate: {what}profile {profile}{sets}{')' if args.piece else ''}", indent="  ", first="")
    )
    print("\n" + screen.wrap(E.rates_origin(args.work_dir)) + "\n")
    print(screen.wrap(E.headline(est)) + "\n")
    if not args.verbose:
        more = "--verbose: the whole table (units, rate, seconds, source, device and assumption per row) and what"
        print(E.screen_text(est) + "\n\n" + screen.wrap(f"{more} a unit is at each stage."))
        return 0
    from compsense.pipeline.report import _md_table

    print(_md_table(E.display_frame(est)))
    print("\nUnits (compsense.estimate.UNITS):")
    for (stage, component), unit in E.UNITS.items():
        print(screen.wrap(unit, indent="    ", first=f"  {stage} {component}: "))
    return 0


if __name__ == "__main__":
    sys.exit(main())
