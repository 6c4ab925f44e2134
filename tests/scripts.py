"""The repository's scripts/ and benchmarks/ as modules, for tests (they sit beside the package, not in it)."""

from __future__ import annotations

import importlib.util
from pathlib import Path

SCRIPTS = Path(__file__).resolve().parents[1] / "scripts"
BENCHMARKS = SCRIPTS.parent / "benchmarks"


def load_script(name: str, folder: Path = SCRIPTS, suffix: str = "_script"):
    """scripts/<name>.py (or <folder>/<name>.py) imported as a module named `<name><suffix>`."""
    spec = importlib.util.spec_from_file_location(f"{name}{suffix}", folder / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def load_benchmark(name: str):
    """benchmarks/<name>.py imported as a module named `<name>_benchmark`."""
    return load_script(name, BENCHMARKS, "_benchmark")
