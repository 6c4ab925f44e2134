"""The published runs as declared pieces (params/pieces.yaml): a profile, its stages and the overrides
that narrow it, one command each that fits in about two hours on 2 CPU cores.

A piece is a DVC experiment: `python -m compsense piece NAME` runs `dvc exp run -n NAME -S ... <stages>`
(`Piece.dvc_args`: each value it changes as one `-S`, on the DVC stages of its profile or of the profile
it extends), so DVC re-runs only the stages whose values it changes (and what they need) and caches the
rest, then writes the profile's report of what it ran. `python -m compsense piece --list` says where to
start and which have a finished run and at which commit, in 100 columns (`--verbose`: each piece's
command and what it makes in full). A run counts as a piece's when its record has the piece's values:
the report stage's summary.json records the profile's values it ran with (`stage.report`).
"""

from __future__ import annotations

import os
import shlex
import subprocess
import sys
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path

import yaml

from compsense.core.paths import resolve
from compsense.core.storage import CorruptFile
from compsense.pipeline import screen, stage
from compsense.pipeline.profiles import EXTENDS, PROFILES, load_profile, params_dir, section_name
from compsense.pipeline.runner import Refused, select_stages
from compsense.pipeline.stages import DEPENDS_ON, SUMMARY, read_summary, shown, stage_key

PIECES_FILE = "pieces.yaml"
KEYS = {"profile", "only", "set", "makes", "hours", "publishes", "code_note", "alone"}


@dataclass(frozen=True)
class Piece:
    name: str
    profile: str
    only: tuple[str, ...]
    overrides: tuple[str, ...] = ()
    makes: str = ""
    hours: float | None = None
    # The files (relative to figures/) this piece publishes on its own (`publish --piece`), for a piece that
    # adds one table to a publication made from other runs; empty: its run is published whole.
    publishes: tuple[str, ...] = ()
    # Why this piece's rows may stand in a published table beside rows another piece made at other code
    # (`publish --piece` refuses that otherwise): the files whose differences it judged (`code_files`) and
    # its judgement (`code_why`); a difference in any other file is refused again.
    code_files: tuple[str, ...] = ()
    code_why: str = ""
    # Its stages run without the stages they need (`dvc exp run --single-item`), where what those make is
    # not part of what the piece makes: the budget pieces run notebook 04, whose DVC stage needs notebook
    # 02's models for its pooled-cosine rows, which they do not publish; on a machine without them DVC
    # would train them first (~70 min). An absent folder they would have made stands in empty (`stand_ins`).
    alone: bool = False

    @cached_property  # globs the notebooks: once per piece
    def stages(self) -> list[str]:
        return [stage_key(nb) for nb in select_stages(list(self.only))]

    def runs_as(self, summary: dict) -> bool:
        """Whether a run's summary.json (the report stage's) was made with this piece's values: its recorded
        `params` equal the piece's in `common` and the sections of its stages (the label `common.profile`
        aside), on the profile whose DVC stages run it."""
        if "params" not in summary or summary.get("profile") != dvc_profile(self.profile):
            return False
        return all(_values(self.values, s) == _values(summary["params"] or {}, s) for s in self.sections)

    @cached_property
    def values(self) -> dict:
        """The profile's values with the piece's overrides (`load_profile`): read once, as `--list` compares
        them with every run's record."""
        return load_profile(self.profile, self.overrides)

    @cached_property
    def sections(self) -> list[str]:
        """The params sections the piece's stages read: common and one per notebook."""
        return ["common", *(section_name(nb) for nb in select_stages(list(self.only)))]

    def made(self, summary: dict) -> bool:
        """Whether a run's summary.json is a finished run of this piece: its values (`runs_as`), and every
        stage of the piece "ok", or "skipped" (unchanged since its last success, whose outputs it reuses: a
        chained piece skips the notebook 01 its predecessor ran)."""
        stages = summary.get("stages", {})
        done = ("ok", "skipped")
        return self.runs_as(summary) and all(stages.get(key, {}).get("status") in done for key in self.stages)

    def dvc_args(self) -> list[str]:
        """The piece as a DVC experiment: `dvc exp run -n NAME -S ... <profile>-<key>`, one argument an item.
        A profile with no DVC stages of its own (study, which shares local's work_dir) runs on the profile
        it extends, with every value it changes there as a `-S` (the runner's label `common.profile` aside),
        followed by the piece's own overrides: the same values the runner injects."""
        base = dvc_profile(self.profile)
        mine, theirs = self.values, load_profile(base)
        sets = []
        for section in self.sections:
            sets += [
                f"-S 'params/{base}.yaml:{o}'"
                for o in overrides(section, _values(mine, section), _values(theirs, section))
            ]
        return [f"dvc exp run -n {self.name}", *(["--single-item"] if self.alone else []), *sets, *self.dvc_targets()]

    def dvc_targets(self) -> list[str]:
        """The DVC stages the piece names (`<profile>-<key>` on the profile it runs on); DVC runs what they need."""
        return [f"{dvc_profile(self.profile)}-{key}" for key in self.stages]


def _values(profile: dict, section: str) -> dict:
    """A profile's values in `section`, less the runner's label `common.profile` (not a value a stage reads)."""
    return {k: v for k, v in (profile.get(section) or {}).items() if (section, k) != ("common", "profile")}


def overrides(key: str, mine, theirs) -> list[str]:
    """Hydra overrides (DVC's `-S` grammar) that turn `theirs` into `mine` at dotted `key`, one per
    differing leaf: `key=value` for a changed value, `++key=value` for one `theirs` lacks, `~key` for
    one `mine` dropped. A mapping is compared key by key (a whole nested mapping as one value read over
    100 columns and left Hydra to decide between merging and replacing); a list is one value."""
    if isinstance(mine, dict) and isinstance(theirs, dict):
        found = []
        for k in [*mine, *(k for k in theirs if k not in mine)]:
            if k not in mine:
                found.append(f"~{key}.{k}")
            elif k not in theirs:
                found.append(f"++{key}.{k}={_flow(mine[k])}")
            else:
                found += overrides(f"{key}.{k}", mine[k], theirs[k])
        return found
    return [] if mine == theirs else [f"{key}={_flow(mine)}"]


def _flow(value) -> str:
    return yaml.safe_dump(value, default_flow_style=True, width=10**6).strip().removesuffix("...").strip()


def dvc_profile(profile: str) -> str:
    """The profile whose DVC stages run `profile`: itself where dvc.yaml has stages for it, else the
    profile it extends (study -> local)."""
    from compsense.pipeline.dvcfile import PROFILES as DVC_PROFILES  # noqa: PLC0415 (dvcfile imports this module's peers)

    seen = profile
    while seen not in DVC_PROFILES:
        base = (yaml.safe_load((params_dir() / f"{seen}.yaml").read_text(encoding="utf-8")) or {}).get(EXTENDS)
        if base is None:
            raise ValueError(f"profile {profile!r}: no DVC stages and no profile it extends has them")
        seen = str(base)
    return seen


def load_pieces(path=None) -> dict[str, Piece]:
    """params/pieces.yaml, each piece checked: a known profile, stages that exist, overrides that
    replace keys the profile sets (as `--set` would check them); an error names the file and piece."""
    path = Path(path) if path is not None else params_dir() / PIECES_FILE
    data = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
    pieces = {}
    for name, spec in (data.get("pieces") or {}).items():
        where = f"{path}: piece {name!r}"
        if not isinstance(spec, dict) or set(spec) - KEYS or "profile" not in spec or "only" not in spec:
            raise ValueError(f"{where}: needs `profile` and `only`, may have {sorted(KEYS - {'profile', 'only'})}")
        if spec["profile"] not in PROFILES:
            raise ValueError(f"{where}: profile {spec['profile']!r} is not one of {', '.join(PROFILES)}")
        piece = Piece(
            str(name),
            spec["profile"],
            tuple(s.strip() for s in str(spec["only"]).split(",")),
            tuple(str(s) for s in spec.get("set") or ()),
            str(spec.get("makes", "")),
            spec.get("hours"),
            tuple(str(f) for f in spec.get("publishes") or ()),
            *_code_note(spec.get("code_note"), where),
            bool(spec.get("alone", False)),
        )
        bad = [f for f in piece.publishes if Path(f).is_absolute() or ".." in Path(f).parts]
        if bad:
            raise ValueError(f"{where}: publishes {bad}: name files inside figures/ (e.g. tables/x.csv)")
        try:
            piece.stages  # noqa: B018  (a prefix that names no stage raises)
            load_profile(piece.profile, piece.overrides)  # the overrides checked as `--set` and by the schema
        except (Refused, ValueError) as err:
            raise ValueError(f"{where}: {err}") from None
        pieces[piece.name] = piece
    return pieces


def _code_note(note, where: str) -> tuple[tuple[str, ...], str]:
    """(files, why) of a piece's `code_note: {files: [...], why: "..."}`; ((), "") when it has none."""
    if note is None:
        return (), ""
    if not isinstance(note, dict) or set(note) != {"files", "why"} or not str(note["why"]).strip():
        raise ValueError(f"{where}: code_note needs `files` (the files whose changes it judged) and `why`")
    return tuple(str(f) for f in note["files"] or ()), str(note["why"])


def last_run(piece: Piece, runs_dir="runs") -> dict | None:
    """The run of `piece` in the report of the profile whose DVC stages run it (runs/<profile>/report/,
    `stage.report`), when it made the piece (`Piece.made`: its values, every stage of the piece "ok").
    {"run", "commit", "finished", "seconds"} or None."""
    summary = resolve(runs_dir) / dvc_profile(piece.profile) / stage.REPORT / SUMMARY
    try:
        record = read_summary(summary) if summary.is_file() else None
    except (CorruptFile, ValueError):
        record = None
    if record is None or not piece.made({"profile": piece.profile, **record}):
        return None
    seconds = sum(float(record["stages"][key].get("seconds") or 0) for key in piece.stages)
    return {
        "run": str(summary.parent),
        "commit": record.get("commit", ""),
        "finished": record.get("finished", ""),
        "seconds": round(seconds, 1),
    }


def list_pieces(runs_dir="runs", path=None, verbose: bool = False) -> str:
    """Where to start (`start_piece`), then one line per piece: its name, hours, last finished run and what
    it makes, cut to fit `screen.WIDTH` columns. `verbose`: one block per piece instead, with its command,
    what it makes in full and its last run's folder, wrapped to the same width."""
    pieces = load_pieces(path)
    runs = {name: last_run(piece, runs_dir) for name, piece in pieces.items()}
    out = [
        screen.wrap(
            f"Declared pieces (params/{PIECES_FILE}): each is one command, `python -m compsense piece NAME`, of about "
            "two hours or less on 2 CPU cores, writing into its profile's work_dir, so a later piece reuses "
            "what an earlier one made."
        )
    ]
    start = start_piece(pieces)
    if start is not None:
        out += ["", screen.wrap(_start_here(start, pieces, runs[start.name]))]
    if verbose:
        for piece in pieces.values():
            out += ["", *_piece_block(piece, runs[piece.name])]
        return "\n".join(out)
    rows = [
        [
            piece.name,
            f"{piece.hours:g}" if piece.hours is not None else "?",
            f"{runs[name]['commit']}, {runs[name]['seconds'] / 60:.0f} min" if runs[name] else "none here",
            piece.makes,
        ]
        for name, piece in pieces.items()
    ]
    out += ["", screen.table(["piece", "hours", "last finished run", "makes"], rows, right={1})]
    out += [
        "",
        screen.wrap(
            "--verbose: each piece's command, what it makes in full, and its last run's folder. "
            "`python -m compsense estimate --piece NAME` prices a piece from the published rates."
        ),
    ]
    return "\n".join(out)


def start_piece(pieces: dict[str, Piece]) -> Piece | None:
    """The piece a newcomer runs first: of the pieces that need no stage they do not run themselves
    (`stages.DEPENDS_ON`), the shortest (declared hours), the first declared on a tie."""
    alone = [p for p in pieces.values() if all(d in p.stages for s in p.stages for d in DEPENDS_ON.get(s, []))]
    if not alone:
        return None
    order = list(pieces)
    return min(alone, key=lambda p: (p.hours is None, p.hours or 0.0, order.index(p.name)))


def _start_here(start: Piece, pieces: dict[str, Piece], run: dict | None) -> str:
    readers = [
        p.name
        for p in pieces.values()
        if p.name != start.name
        and p.profile == start.profile
        and any(d in start.stages and d not in p.stages for s in p.stages for d in DEPENDS_ON.get(s, []))
    ]
    minutes = f"~{start.hours * 60:.0f} min: " if start.hours is not None else ""
    text = f"Start here: `python -m compsense piece {start.name}` ({minutes}{start.makes})"
    if readers:
        many = len(readers) > 1
        text += (
            f"; {len(readers)} other piece{'s' * many} of profile {start.profile} read{'s' * (not many)} what it writes"
        )
    if run:
        text += f". It has a finished run here (commit {run['commit']}): any piece below is next"
    return text + "."


def _piece_block(piece: Piece, run: dict | None) -> list[str]:
    hours = f", ~{piece.hours:g} h" if piece.hours is not None else ""
    made = (
        f"last run {shown(run['run'])} at commit {run['commit']}, finished {run['finished']}, "
        f"{run['seconds'] / 60:.0f} min"
        if run
        else "no finished run here"
    )
    # the command one argument a line, never cut inside one: it is copied into a shell as it stands
    dvc = piece.dvc_args()
    lines = [screen.wrap(f"{piece.name}{hours}: {piece.makes}", indent="    ", first="")]
    lines += [f"  {a}" + (" \\" if i < len(dvc) - 1 else "") for i, a in enumerate(dvc)]
    lines.append(screen.wrap(made, indent="    ", first="  "))
    return lines


def get_piece(name: str, path=None) -> Piece:
    """Piece `name` of params/pieces.yaml, or Refused naming the pieces there."""
    pieces = load_pieces(path)
    if name not in pieces:
        raise Refused(f"no piece {name!r} in {PIECES_FILE}; the pieces are {', '.join(pieces)}")
    return pieces[name]


def run_piece(name: str, force: bool = False, path=None) -> int:
    """Run piece `name` as its DVC experiment (`Piece.dvc_args`; `force`: `dvc exp run --force`, every
    stage of it runs again), then write the report of what the workspace now holds
    (runs/<profile>/report/, `stage.report`), which records the values the piece ran with, so that
    `make figures PIECE=NAME` finds it. Not the report's DVC stage: that one depends on every stage's
    outputs, and DVC would run the whole profile first. Returns dvc's exit status."""
    piece = get_piece(name, path)
    args = shlex.split(" ".join(piece.dvc_args()))
    unsaved = unsaved_outputs(piece.dvc_targets())
    if unsaved:
        raise Refused(
            f"piece {name}: `dvc exp run` checks out the locked outputs of its stages before it runs, replacing "
            f"what differs from dvc.lock (or deleting it where DVC's cache lacks the locked version), and these "
            f"differ: {', '.join(unsaved)}. Keep them first: `dvc commit -f {' '.join(sorted(set(unsaved.values())))}` "
            f"copies them into the cache and dvc.lock (e.g. after `crossencoder --maps` trained into a stage's "
            f"verifiers), or move them out of the way; then run the piece again"
        )
    if force:
        args.insert(3, "--force")
    if piece.alone:
        for made in stand_ins(piece.dvc_targets()):
            print(f"{made}: absent, stands in empty (piece {name} runs its stages alone: `alone` in pieces.yaml)")
    print("$ " + " ".join(shlex.quote(a) for a in args), flush=True)
    # this interpreter's folder first: its dvc, and the `python` each stage's command names, are the ones
    # that have compsense, with or without an activated environment (as `make reproduce` sets PATH)
    path = os.pathsep.join([str(Path(sys.executable).parent), os.environ.get("PATH", "")])
    status = subprocess.call(args, cwd=resolve("."), env={**os.environ, "PATH": path})
    if status == 0:
        print(f"report: {stage.report(dvc_profile(piece.profile), piece.name)}")
    return status


def stand_ins(targets: list[str], root=None) -> list[str]:
    """Make, empty, each absent folder that DVC stages `targets` depend on and another stage makes, so that
    `dvc exp run --single-item` runs them without that stage (DVC refuses a stage whose dependency is
    missing). Returns the folders made. An absent file (a name with a suffix) is refused, naming its stage."""
    from dvc.repo import Repo  # noqa: PLC0415 - DVC only where a piece runs

    made = []
    with Repo(str(root or resolve("."))) as repo:
        makers = {str(out.fs_path): s.name for s in repo.index.stages for out in s.outs}
        for target in targets:
            for dep in repo.stage.collect(f"{Path(repo.root_dir) / 'dvc.yaml'}:{target}")[0].deps:
                path, maker = Path(dep.fs_path), makers.get(str(dep.fs_path))
                if maker is None or maker in targets or path.exists():
                    continue
                if path.suffix:
                    raise Refused(f"{dep.def_path}: missing; stage {target} needs it. Fix: dvc repro {maker}")
                path.mkdir(parents=True)
                made.append(dep.def_path)
    return made


def unsaved_outputs(targets: list[str], root=None) -> dict[str, str]:
    """The outputs, present here, of DVC stages `targets` and the stages they need whose content differs
    from dvc.lock (DVC's `workspace_status`: "modified"). Why: before it runs, `dvc exp run` checks out
    these stages' locked outputs with force (`dvc.repo.experiments.executor.base`), which replaces what is
    there with the locked version from the cache, or deletes it where the cache lacks it, `persist` or
    not: work no stage of this checkout recorded, e.g. verifiers `crossencoder --maps` trained into
    runs/<profile>/verifiers, was lost that way. An empty folder is not listed: it holds nothing to lose.
    {path as dvc.yaml names it: its stage}, by path."""
    from dvc.repo import Repo  # noqa: PLC0415 - DVC only where a piece runs

    found = {}
    with Repo(str(root or resolve("."))) as repo:
        # each stage once, though several targets need it (local-04 needs local-01): hashing a large output
        # such as runs/<profile>/verifiers twice would double the wait before the piece starts
        stages = {
            dvc_stage.name: dvc_stage
            for target in targets
            # the stage by its dvc.yaml's path: DVC resolves a bare name from the working directory
            for dvc_stage in repo.stage.collect(f"{Path(repo.root_dir) / 'dvc.yaml'}:{target}", with_deps=True)
        }
        for dvc_stage in stages.values():
            for out in dvc_stage.outs:
                # an empty folder holds no work to lose: e.g. the stand-in an `alone` piece made upstream
                empty = Path(out.fs_path).is_dir() and not any(Path(out.fs_path).iterdir())
                if out.exists and not empty and out.workspace_status():
                    found[out.def_path] = dvc_stage.name
    return dict(sorted(found.items()))
