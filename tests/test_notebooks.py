"""Every notebook is wired into every profile, has a `parameters` cell, and is committed clean."""

import json

import pytest
import yaml

from compsense.pipeline import profiles, stages

NOTEBOOKS = stages.notebooks()


def test_there_are_notebooks():
    assert any(p.name.startswith("00_") for p in NOTEBOOKS)


@pytest.mark.parametrize("notebook", NOTEBOOKS, ids=lambda p: p.stem)
def test_notebook_has_parameters_cell_and_no_outputs(notebook):
    assert profiles.parameters_cell(notebook) is not None, f"{notebook.name}: add a cell tagged `parameters`"
    nb = json.loads(notebook.read_text())
    for i, cell in enumerate(nb["cells"]):
        if cell["cell_type"] == "code":
            assert not cell["outputs"] and cell["execution_count"] is None, (
                f"{notebook.name} cell {i} has outputs; run `python scripts/clean_notebooks.py` before committing"
            )
    assert set(nb["metadata"]) <= {"kernelspec", "language_info"}, f"{notebook.name}: volatile metadata"


@pytest.mark.parametrize("profile", profiles.PROFILES)
@pytest.mark.parametrize("notebook", NOTEBOOKS, ids=lambda p: p.stem)
def test_every_profile_sets_every_declared_parameter(profile, notebook):
    params = profiles.notebook_parameters(profile, notebook)  # raises with the missing names
    assert set(params) == set(profiles.declared_parameters(notebook))


@pytest.mark.parametrize("notebook", NOTEBOOKS, ids=lambda p: p.stem)
def test_parameters_cell_defaults_are_the_smoke_profile(notebook):
    assert profiles.declared_parameters(notebook) == profiles.notebook_parameters("smoke", notebook)


def test_missing_parameter_is_reported(tmp_path, monkeypatch):
    nb = {
        "cells": [
            {
                "cell_type": "code",
                "metadata": {"tags": ["parameters"]},
                "source": "alpha = 1\nbeta = 'x'",
                "outputs": [],
                "execution_count": None,
            }
        ],
        "metadata": {},
        "nbformat": 4,
        "nbformat_minor": 5,
    }
    (tmp_path / "notebooks").mkdir()
    path = tmp_path / "notebooks" / "99_new.ipynb"
    path.write_text(json.dumps(nb))
    (tmp_path / "params").mkdir()
    (tmp_path / "params" / "smoke.yaml").write_text(yaml.safe_dump({"common": {"alpha": 2}}))
    monkeypatch.setattr(profiles, "params_dir", lambda: tmp_path / "params")
    with pytest.raises(KeyError, match=r"does not set \['beta'\]"):
        profiles.notebook_parameters("smoke", path)


def test_notebook_without_parameters_cell_is_reported(tmp_path):
    path = tmp_path / "x.ipynb"
    path.write_text(json.dumps({"cells": [], "metadata": {}, "nbformat": 4, "nbformat_minor": 5}))
    with pytest.raises(ValueError, match="tagged `parameters`"):
        profiles.declared_parameters(path)


@pytest.mark.parametrize("notebook", NOTEBOOKS, ids=lambda p: p.stem)
def test_papermill_reads_every_parameter_line(notebook, caplog):
    """`papermill --help-notebook` and its parameter inspection warn on lines they cannot parse (an
    `=` in a trailing comment is enough); every declared parameter should come out with its type."""
    import logging

    import nbformat
    from papermill.translators import PythonTranslator

    nb = nbformat.read(notebook, as_version=4)
    cell = next(c for c in nb.cells if "parameters" in c.metadata.get("tags", []))
    with caplog.at_level(logging.WARNING, logger="papermill"):
        found = {p.name for p in PythonTranslator.inspect(cell)}
    assert not [r.getMessage() for r in caplog.records if "Unable to parse" in r.getMessage()]
    assert found == set(profiles.declared_parameters(notebook))


@pytest.mark.parametrize("notebook", NOTEBOOKS, ids=lambda p: p.stem)
def test_the_first_thing_a_notebook_shows_is_its_profile(notebook):
    """The cell after `parameters` (where papermill injects the profile) shows the profile banner, so a
    smoke number is labelled before any table, not at the bottom."""
    nb = json.loads(notebook.read_text())
    index = next(i for i, c in enumerate(nb["cells"]) if "parameters" in c.get("metadata", {}).get("tags", []))
    after = "".join(nb["cells"][index + 1]["source"])
    # `profile_banner(profile)`, or `profile_banner(profile, backbone)` where the notebook loads an encoder
    assert "profile_banner(profile" in after, f"{notebook.name}: put `profile_banner(profile)` right after parameters"


def test_the_banner_says_smoke_numbers_are_not_results():
    from compsense.core.banner import banner_text, profile_banner

    assert "only prove that the code runs; they are not results" in banner_text("smoke")
    assert "not results" not in banner_text("local") and "params/local.yaml" in banner_text("local")
    assert "compsense-banner" in profile_banner("smoke").data and "&lt;" in profile_banner("<x>").data
