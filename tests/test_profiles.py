"""compsense.pipeline.profiles: a misspelt section or key, or an unsafe profile name, is an error naming it."""

import json

import pytest
import yaml

from compsense.pipeline import profiles


@pytest.fixture
def project(tmp_path, monkeypatch):
    cell = {
        "cell_type": "code",
        "metadata": {"tags": ["parameters"]},
        "outputs": [],
        "execution_count": None,
        "source": "seed = 42\nwork_dir = 'runs/smoke'\nmax_steps = 20",
    }
    (tmp_path / "notebooks").mkdir()
    (tmp_path / "notebooks" / "02_training_ab.ipynb").write_text(
        json.dumps({"cells": [cell], "metadata": {}, "nbformat": 4, "nbformat_minor": 5})
    )
    (tmp_path / "params").mkdir()
    monkeypatch.setattr(profiles, "params_dir", lambda: tmp_path / "params")
    return tmp_path


def _profile(project, data, name="smoke"):
    (project / "params" / f"{name}.yaml").write_text(yaml.safe_dump(data))


def test_a_valid_profile_loads(project):
    _profile(project, {"common": {"seed": 1, "work_dir": "runs/x"}, "training_ab": {"max_steps": 5}})
    nb = project / "notebooks" / "02_training_ab.ipynb"
    assert profiles.notebook_parameters("smoke", nb) == {"seed": 1, "work_dir": "runs/x", "max_steps": 5}


@pytest.mark.parametrize(
    "data, message",
    [
        (
            {"common": {"seed": 1, "work_dir": "w", "max_steps": 2}, "training_ab": {"max_step": 5}},
            r"`training_ab\.max_step` is not a parameter of 02_training_ab\.ipynb \(did you mean `max_steps`\?\)",
        ),
        (
            {"common": {"seed": 1, "work_dir": "w", "max_steps": 2}, "trainng_ab": {"max_steps": 5}},
            r"unknown section `trainng_ab` \(did you mean `training_ab`\?\)",
        ),
        (
            {"common": {"sed": 1, "work_dir": "w", "max_steps": 2}},
            r"`common\.sed` is not a parameter of any notebook \(did you mean `seed`\?\)",
        ),
        ({"common": {"seed": 1, "work_dir": "w", "max_steps": 2}, "training_ab": [1, 2]}, "must be a mapping"),
        (
            {"common": {"seed": 1, "work_dir": "w", "max_steps": 2}, "02_training_ab": {"max_steps": 5}},
            r"unknown section `02_training_ab`; it is `training_ab` now .*DVC's -S cannot set a key that starts",
        ),
    ],
)
def test_misspelt_key_or_section_is_an_error_naming_it(project, data, message):
    _profile(project, data)
    with pytest.raises(ValueError, match=message) as err:
        profiles.load_profile("smoke")
    assert str(project / "params" / "smoke.yaml") in str(err.value)


@pytest.mark.parametrize("name", ["../smoke", "a/b", "..", "smoke/../../x", "", ".hidden", "a\\b"])
def test_profile_name_with_a_path_is_refused(project, name):
    with pytest.raises(ValueError, match="no '/', no '..'"):
        profiles.load_profile(name)


@pytest.mark.slow
def test_the_project_profiles_are_clean():
    for name in profiles.PROFILES:
        profiles.load_profile(name)  # no stray keys in the shipped params/*.yaml


def test_an_exponent_without_a_dot_is_read_as_a_number(project):
    notebook = project / "notebooks" / "02_training_ab.ipynb"  # declares learning_rate too (the schema's float)
    notebook.write_text(notebook.read_text().replace("max_steps = 20", "max_steps = 20\\nlearning_rate = None"))
    path = project / "params" / "smoke.yaml"
    path.write_text("common:\n  seed: 1\n  work_dir: w\n  max_steps: 2\n  learning_rate: 1e-3\n")
    common = profiles.load_profile("smoke")["common"]
    assert common["learning_rate"] == 0.001 and isinstance(common["learning_rate"], float)
    assert common["work_dir"] == "w"  # other strings stay strings


def test_overrides_replace_values_for_one_run(project):
    _profile(project, {"common": {"seed": 1, "work_dir": "runs/x"}, "training_ab": {"max_steps": 5}})
    nb = project / "notebooks" / "02_training_ab.ipynb"
    data = profiles.load_profile("smoke", ["training_ab.max_steps=7", "common.seed=3"])
    assert profiles.notebook_parameters("smoke", nb, data) == {"seed": 3, "work_dir": "runs/x", "max_steps": 7}
    # the file itself is untouched: the next run without --set reads it as written
    assert profiles.load_profile("smoke")["training_ab"]["max_steps"] == 5
    assert profiles.parse_override("verifiers.regimes=[frozen]") == ("verifiers", "regimes", ["frozen"])
    assert profiles.parse_override("common.device=") == ("common", "device", None)
    assert profiles.parse_override("verifiers.training.lr=0.01") == ("verifiers", "training.lr", 0.01)
    # a notebook's stem names its section too, as runs recorded their overrides before sections lost the number
    assert profiles.parse_override("04_verifiers.regimes=[frozen]") == ("verifiers", "regimes", ["frozen"])
    assert profiles.load_profile("smoke", ["02_training_ab.max_steps=7"])["training_ab"]["max_steps"] == 7
    assert profiles.section_name("notebooks/02_training_ab.ipynb") == profiles.section_name("training_ab")


@pytest.mark.parametrize(
    "override, message",
    [
        ("training_ab.max_step=7", r"sets no `training_ab\.max_step` \(did you mean `training_ab\.max_steps`"),
        ("nosection=3", "write SECTION.KEY=VALUE"),
        ("training_ab.max_steps", "write SECTION.KEY=VALUE"),
        ("training_ab.max_steps=[1,", "VALUE is not YAML"),
    ],
)
def test_a_bad_override_is_an_error_naming_it(project, override, message):
    _profile(project, {"common": {"seed": 1, "work_dir": "runs/x"}, "training_ab": {"max_steps": 5}})
    with pytest.raises(ValueError, match=message):
        profiles.load_profile("smoke", [override])


def test_a_profile_extends_another_section_by_section(project):
    _profile(project, {"common": {"seed": 42, "work_dir": "runs/local"}, "training_ab": {"max_steps": 100}}, "local")
    _profile(project, {"extends": "local", "common": {"seed": 7}}, "study")
    _profile(project, {"extends": "study", "training_ab": {"max_steps": 5}}, "tiny")
    assert profiles.load_profile("study") == {
        "common": {"seed": 7, "work_dir": "runs/local"},
        "training_ab": {"max_steps": 100},
    }
    assert profiles.load_profile("tiny")["training_ab"] == {"max_steps": 5}  # a chain is followed
    assert profiles.load_profile("tiny")["common"]["seed"] == 7
    _profile(project, {"extends": "local", "training_ab": {"max_step": 5}}, "typo")
    with pytest.raises(ValueError, match="max_step.*did you mean `max_steps`"):  # checked after the merge
        profiles.load_profile("typo")
    _profile(project, {"extends": "loop-b", "common": {"seed": 1}}, "loop-a")
    _profile(project, {"extends": "loop-a", "common": {"seed": 2}}, "loop-b")
    with pytest.raises(ValueError, match=r"makes a cycle \(loop-a -> loop-b -> loop-a\)"):
        profiles.load_profile("loop-a")
    _profile(project, {"extends": "nowhere", "common": {"seed": 1}}, "orphan")
    with pytest.raises(FileNotFoundError, match="nowhere.yaml: no such profile"):
        profiles.load_profile("orphan")


def test_the_study_profile_is_local_with_its_own_keys_only():
    local, study = profiles.load_profile("local"), profiles.load_profile("study")
    changed = {f"{s}.{k}" for s in local for k in local[s] if study[s][k] != local[s][k]} | {
        f"{s}.{k}" for s in study for k in study[s] if k not in local.get(s, {})
    }
    assert changed == {
        "common.profile",
        "training_ab.seeds",
        "training_ab.variants",
        "training_ab.share_sweep",
        "training_ab.sweep_all_seeds",
        "training_ab.first_seed_only",
        "verifiers.budget_curve",
        "verifiers.regimes",  # local keeps frozen verifiers only, to fit its 2.5 h
        "reranking.regimes",
    }
