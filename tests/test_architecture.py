"""The package's shape: dependencies run one way, from the foundation up to the command line.

Layers, lowest first (a module may import its own layer and the ones below, never above):
core -> data -> retrieval -> nearmiss -> verifiers -> figures and explorer -> pipeline and the time
estimate -> the command line and doctor: the near-miss tests judge any scorer, and the verifiers are scorers
they judge. The estimate shares the pipeline's layer (it reads the profiles and stages; the run's report
shows its sections); nothing in the package imports the command line or doctor (the report takes the
machine's description from core.machine).
Every import counts, at the top of a module or inside a function, so a cycle cannot hide behind a
late import.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "compsense"
LAYERS = [
    ("core",),
    ("data",),
    ("retrieval",),
    ("nearmiss",),
    ("verifiers",),
    ("figures", "explorer"),
    ("pipeline", "estimate"),
    ("__main__", "doctor"),
]


def modules() -> dict[str, Path]:
    found = {}
    for path in PACKAGE.rglob("*.py"):
        parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
        name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        found[name] = path
    return found


def imports_of(name: str, path: Path, known: dict[str, Path]) -> dict[str, int]:
    """{imported compsense module: line} for every import in `path`, wherever it sits."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found = {}
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            targets = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - node.level + 1]
                module = ".".join(base + ([node.module] if node.module else []))
            else:
                module = node.module or ""
            targets = [f"{module}.{a.name}" if f"{module}.{a.name}" in known else module for a in node.names]
        else:
            continue
        for target in targets:
            while target and target not in known:
                target = target.rpartition(".")[0]
            if target and target != name and target != "compsense":
                found.setdefault(target, node.lineno)
    return found


def layer(name: str) -> int:
    top = name.split(".")[1] if "." in name else ""
    for i, roles in enumerate(LAYERS):
        if top in roles:
            return i
    raise AssertionError(f"{name}: not in any layer of tests/test_architecture.py; add its subpackage to LAYERS")


GRAPH = {name: imports_of(name, path, modules()) for name, path in modules().items()}


def find_cycle(graph: dict[str, dict]) -> list[str] | None:
    state, stack = {}, []

    def visit(node):
        state[node] = "open"
        stack.append(node)
        for nxt in sorted(graph.get(node, {})):
            if state.get(nxt) == "open":
                return stack[stack.index(nxt) :] + [nxt]
            if nxt not in state:
                cycle = visit(nxt)
                if cycle:
                    return cycle
        state[node] = "done"
        stack.pop()
        return None

    for node in sorted(graph):
        if node not in state:
            cycle = visit(node)
            if cycle:
                return cycle
    return None


def test_no_import_cycle():
    cycle = find_cycle(GRAPH)
    assert cycle is None, "import cycle: " + " -> ".join(cycle)


def test_the_cycle_finder_finds_one():
    assert find_cycle({"a": {"b": 1}, "b": {"c": 1}, "c": {"a": 1}}) == ["a", "b", "c", "a"]
    assert find_cycle({"a": {"b": 1}, "b": {}}) is None


@pytest.mark.parametrize("name", sorted(n for n in GRAPH if n != "compsense"))
def test_imports_point_down(name):
    upward = [f"{target} (line {line})" for target, line in GRAPH[name].items() if layer(target) > layer(name)]
    assert not upward, f"{name} imports from a higher layer: {', '.join(upward)}"


def test_no_module_shadows_the_standard_library():
    import sys

    clashes = [n for n in GRAPH if n.rpartition(".")[2] in sys.stdlib_module_names and n.count(".") == 1]
    assert not clashes, f"rename: {clashes}"


MAX_PARAMETERS = 10  # beyond this a call site cannot be read: group settings in a config object


def public_functions():
    for name, path in sorted(modules().items()):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and not node.name.startswith("_"):
                args = node.args
                named = [a.arg for a in args.posonlyargs + args.args + args.kwonlyargs if a.arg not in ("self", "cls")]
                yield f"{name}.{node.name}", len(named) + (args.vararg is not None) + (args.kwarg is not None)


def test_no_public_function_takes_more_than_ten_parameters():
    long = {name: n for name, n in public_functions() if n > MAX_PARAMETERS}
    assert not long, (
        f"public functions with more than {MAX_PARAMETERS} parameters (*args and **kwargs count one): {long}"
    )


def test_the_parameter_count_sees_keyword_only_and_star_parameters(tmp_path):
    counts = dict(public_functions())
    assert counts["compsense.verifiers.study.run_study"] == 10  # nine named and **labels


# The commands a message names live in compsense/core/commands.py, outside every stage's content key: a
# renamed command then re-runs no stage (compsense.pipeline.runner.OPERATIONAL). A command written into a
# module a notebook reaches would put the tooling's wording into that notebook's key again.
COMMAND_TEXTS = ("make reproduce", "dvc repro", "compsense reproduce", "dvc exp run")


def test_no_module_in_a_stages_key_writes_a_command_out():
    from compsense.pipeline.runner import code_dependencies
    from compsense.pipeline.stages import notebooks

    found = {}
    for nb in notebooks():
        for path in code_dependencies(nb):
            text = path.read_text(encoding="utf-8")
            hits = [c for c in COMMAND_TEXTS if c in text]
            if hits:
                found[path.relative_to(PACKAGE.parent).as_posix()] = hits
    assert not found, f"name commands through compsense.core.commands (outside the content key): {found}"
