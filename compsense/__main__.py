"""Command line: `python -m compsense doctor` and `python -m compsense reproduce --profile smoke`,
`python -m compsense bundle` (what a GPU machine with no network needs)."""
from __future__ import annotations

import argparse
import sys


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="compsense", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("doctor", help="versions, device, offline backbones and local datasets")
    rep = sub.add_parser("reproduce", help="run the notebooks in order with papermill")
    rep.add_argument("--profile", default="local", help="smoke, local or paper (params/<profile>.yaml)")
    rep.add_argument("--only", default=None, help="comma-separated notebook prefixes, e.g. 02,03")
    rep.add_argument("--force", action="store_true", help="re-run stages even when nothing changed")
    rep.add_argument("--out", default=None, help="run folder (default runs/<profile>/<timestamp>)")
    bun = sub.add_parser("bundle", help="wheels, weights and data a GPU machine with no network needs")
    bun.add_argument("--out", default=".bundle", help="git-ignored folder to write (default .bundle)")
    bun.add_argument("--weights", default="int8", choices=["int8", "fp16", "none"],
                     help="minilm-l6 weights: per-row int8 (~23 MB) or fp16 (~45 MB)")
    bun.add_argument("--data", default="", help="local datasets to copy, e.g. scifact,mrpc,stsb,sugarcrepe")
    bun.add_argument("--python-version", default="3.12", help="the GPU machine's Python (wheel tags)")
    args = parser.parse_args(argv)
    if args.command == "bundle":
        from .bundle import main as bundle

        return bundle(args.out, args.weights, args.data, args.python_version)
    if args.command == "doctor":
        from .doctor import main as doctor

        return doctor()
    from .runner import reproduce

    only = [s.strip() for s in args.only.split(",")] if args.only else None
    return reproduce(args.profile, only=only, force=args.force, out=args.out)


if __name__ == "__main__":
    sys.exit(main())
