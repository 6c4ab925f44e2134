"""`python -m compsense scorers`: train and calibrate the explorer's shipped scorers again
(`compsense.explorer.scorers.build`) from the shared MRPC/STS-B files with the real all-MiniLM-L6-v2.

A module of its own, apart from `scorers`, because the command line builds every subcommand's parser
at start-up: this one imports only argparse there, and torch, sentence-transformers and the
training code only when the command runs (the CLI starts in about a second).
"""

from __future__ import annotations

import argparse

DATA_DIR_HELP = "the local data folder (default: COMPSENSE_DATA_DIR or shared/data)"


def add_parser(sub) -> argparse.ArgumentParser:
    """The `scorers` subcommand on the command line's subparsers."""
    p = sub.add_parser(
        "scorers",
        help="train and calibrate the explorer's shipped MiniLM scorers (F3, F4, the authors' F4) into "
        "compsense/resources/scorers/ (minutes on one CPU core)",
    )
    p.add_argument("--data-dir", default=None, help=DATA_DIR_HELP)
    p.add_argument("--out", default=None, help="where to write them (default: the package's resources/scorers/)")
    p.add_argument("--backbone", default="minilm-l6", help="the encoder whose maps they read (default minilm-l6)")
    p.add_argument("--budget", type=int, default=None, help="training examples per scorer (default: scorers.TRAINING)")
    p.add_argument(
        "--max-train-pairs",
        type=int,
        default=None,
        help="paraphrase pairs to train on (default: scorers.MAX_TRAIN_PAIRS)",
    )
    p.add_argument(
        "--max-heldout-pairs", type=int, default=None, help="held-out pairs (default: scorers.MAX_HELDOUT_PAIRS)"
    )
    p.add_argument("--seed", type=int, default=42)
    p.add_argument("--device", default=None, help="cuda or cpu (default: cuda when available)")
    return p


def run(args) -> int:
    """Build the scorers as `args` say and print where they went and their held-out accuracies."""
    # torch and the training code load only when the command runs
    from compsense.explorer import scorers  # noqa: PLC0415
    from compsense.verifiers.config import Compute  # noqa: PLC0415

    training = scorers.TRAINING if args.budget is None else scorers.TRAINING.replace(budget_examples=args.budget)
    out = scorers.build(
        data_dir=args.data_dir,
        out_dir=args.out or scorers.SCORERS_DIR,
        backbone=args.backbone,
        training=training,
        max_train_pairs=args.max_train_pairs or scorers.MAX_TRAIN_PAIRS,
        max_heldout_pairs=args.max_heldout_pairs or scorers.MAX_HELDOUT_PAIRS,
        seed=args.seed,
        compute=Compute(device=args.device),
    )
    print(scorers.readme(out))
    print(f"written to {out}")
    return 0
