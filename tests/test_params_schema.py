"""compsense.pipeline.schema: every notebook parameter has a type, a range or its allowed values, checked
before anything runs (a DVC stage, `piece`, `estimate`, and what a stage injects); the schema and the
notebooks' `parameters` cells stay in step, and so do its names and the registries that own them."""

import pytest
import yaml

from compsense.__main__ import main as cli
from compsense.pipeline import profiles, runner, schema
from compsense.pipeline.pieces import load_pieces
from compsense.pipeline.stages import notebooks
from compsense.verifiers.groups import PARAMETER_GROUPS, flat


def _one_line(err: str) -> str:
    assert "Traceback" not in err and len(err.strip().splitlines()) == 1, err
    return err


def test_every_notebook_parameter_has_a_schema_entry_and_every_entry_a_parameter():
    stems = set()
    for nb in notebooks():
        if profiles.parameters_cell(nb) is None:
            continue
        stems.add(nb.stem)
        declared = profiles.declared_parameters(nb)
        fields = set(schema.SCHEMA[nb.stem].model_fields)  # a KeyError: a notebook the schema does not know
        assert set(declared) == fields, (nb.name, set(declared) ^ fields)
        assert schema.problems(nb.stem, declared) == []  # the cell's own defaults are allowed values
    assert stems == set(schema.SCHEMA)  # and no model for a notebook that is gone


@pytest.mark.slow  # imports the registries' modules (torch, spaCy): what the schema avoids importing
def test_the_schemas_names_are_the_registries():
    from dataclasses import fields
    from typing import get_args

    from compsense.data.datasets import STSB_SPLITS, SUGARCREPE_SUBSETS
    from compsense.data.negatives import FAMILIES
    from compsense.retrieval.harness import MAX_K
    from compsense.retrieval.training import NAMED_VARIANTS, OFFLINE_SOURCES
    from compsense.verifiers import architectures, config
    from compsense.verifiers.data import TRAIN_DATA

    assert get_args(schema.Variant) == NAMED_VARIANTS
    assert sorted(get_args(schema.Family)) == sorted(FAMILIES)  # the schema lists them alphabetically
    assert get_args(schema.TrainSource) == (*OFFLINE_SOURCES, "nq")
    assert get_args(schema.VerifierName) == architectures.NAMES
    assert get_args(schema.Regime) == config.REGIMES
    assert get_args(schema.Size) == architectures.SIZES
    assert get_args(schema.TrainData) == TRAIN_DATA
    assert get_args(schema.SugarCrepeSubset) == SUGARCREPE_SUBSETS
    assert set(get_args(schema.ParaphraseSplit)) == set(STSB_SPLITS)
    assert schema.MAX_K == MAX_K
    assert get_args(schema.Verifiers.model_fields["recipe"].annotation) == config.RECIPES
    assert get_args(schema.Training.model_fields["hard_negatives"].annotation) == config.HARD_NEGATIVES
    # notebook 04's `training` is VerifierTraining's fields, with F2's own f2_learnable (VerifierGrid's)
    assert set(schema.Training.model_fields) - {"f2_learnable"} < {f.name for f in fields(config.VerifierTraining)}


def test_the_shipped_profiles_and_pieces_fit_the_schema():
    for name in profiles.PROFILES:
        profiles.load_profile(name)
    assert load_pieces()  # every piece's --set checked as well


# Each case the probe of issue 51 found, as `--set` gives it: refused, naming the parameter, the value
# and what is allowed. user_sentences_split: the notebook puts anything but "train" on the held-out side.
BAD_VALUES = [
    ("data_and_negatives.user_sentences_split=tarin", "'tarin'", "one of 'train', 'test'"),
    ("verifiers.training.budget_examples=-128", "-128", "a whole number >= 1"),  # a key inside a group
    ("training_ab.seeds=42", "42", "a list of 1+ (a whole number >= 0"),
    ("training_ab.backbones=[nosuch]", "['nosuch']", "a list of 1+ (one of 'minilm-l6', 'minilm-l12'"),
    ("data_and_negatives.mrpc_train_sentences=-5", "-5", "a whole number >= 0 or null"),
    ("common.seed=abc", "'abc'", "a whole number >= 0"),
]


@pytest.mark.parametrize("override, value, allowed", BAD_VALUES, ids=[b[0] for b in BAD_VALUES])
def test_a_bad_value_is_refused_naming_the_parameter_the_value_and_what_is_allowed(override, value, allowed):
    name = override.partition("=")[0]
    with pytest.raises(ValueError) as err:
        profiles.load_profile("smoke", [override])
    text = str(err.value)
    assert text.startswith(f"--set {override}: `{name}` = {value}: ") and f"allowed: {allowed}" in text, text
    assert "\n" not in text


@pytest.mark.parametrize("override, value, allowed", BAD_VALUES, ids=[b[0] for b in BAD_VALUES])
def test_estimate_refuses_it_in_one_line_before_anything_runs(override, value, allowed, capsys):
    assert cli(["estimate", "--profile", "smoke", "--set", override]) == 2
    err = _one_line(capsys.readouterr().err)
    assert f"--set {override}: `{override.partition('=')[0]}` = {value}: " in err and allowed in err, err


def test_a_stage_refuses_a_bad_value_in_its_params_file_before_the_kernel_starts(tmp_path, monkeypatch, capsys):
    """What `dvc exp run -S` leaves: the value written into params/<profile>.yaml, read by the stage."""
    folder = profiles.params_dir()
    data = yaml.safe_load((folder / "smoke.yaml").read_text())
    data["verifiers"]["training"]["temperature"] = 0
    (tmp_path / "smoke.yaml").write_text(yaml.safe_dump(data))
    monkeypatch.setattr(profiles, "params_dir", lambda: tmp_path)
    monkeypatch.setattr(runner, "execute", lambda *a, **k: pytest.fail("the stage got past the schema"))
    assert cli(["stage", "04", "--profile", "smoke"]) == 2
    err = _one_line(capsys.readouterr().err)
    assert "smoke.yaml" in err and "verifiers.training.temperature" in err, err


def test_a_value_in_the_profile_file_is_named_with_the_file(tmp_path, monkeypatch):
    folder = profiles.params_dir()
    training = {**profiles.load_profile("smoke")["verifiers"]["training"], "temperature": 0}
    (tmp_path / "bad.yaml").write_text(yaml.safe_dump({"extends": "smoke", "verifiers": {"training": training}}))
    (tmp_path / "smoke.yaml").write_text((folder / "smoke.yaml").read_text())
    monkeypatch.setattr(profiles, "params_dir", lambda: tmp_path)
    with pytest.raises(ValueError, match=r"bad\.yaml: `verifiers\.training\.temperature` = 0: Input should be greater"):
        profiles.load_profile("bad")


def test_a_group_given_whole_must_name_every_key_and_no_other():
    with pytest.raises(ValueError) as err:
        profiles.load_profile("smoke", ["verifiers.training={lr: 0.01}"])
    assert str(err.value).startswith("--set verifiers.training={lr: 0.01}: `verifiers.training.budget_examples`")
    assert "missing" in str(err.value) and "verifiers.training.hard_negatives" in str(err.value)
    typo = r"the profile sets no `verifiers\.training\.lrr` \(did you mean `verifiers\.training\.lr`"
    with pytest.raises(ValueError, match=typo):
        profiles.load_profile("smoke", ["verifiers.training.lrr=0.01"])
    assert profiles.load_profile("smoke", ["verifiers.training.lr=0.01"])["verifiers"]["training"]["lr"] == 0.01


def test_flat_lifts_notebook_04s_groups_and_leaves_a_flat_record_alone():
    p = profiles.load_profile("smoke")["verifiers"]
    lifted = flat(p)
    assert lifted["budget_examples"] == p["training"]["budget_examples"] and "training" not in lifted
    assert lifted["condaqa_unit"] == p["near_miss_sets"]["condaqa_unit"] and lifted["verifiers"] == p["verifiers"]
    assert flat(lifted) == lifted  # parameters recorded before the grouping
    # the schema's group models are the ones `flat` lifts (and `problems` names by their keys' paths)
    groups = (schema.Training, schema.Rows, schema.NearMissSets)
    models = {name for name, f in schema.Verifiers.model_fields.items() if f.annotation in groups}
    assert models == set(PARAMETER_GROUPS)


def test_notebook_04_is_easy_to_follow():
    """Issue 52 item 8: at most 20 parameters (its settings grouped into mappings, one per idea)."""
    nb = next(nb for nb in notebooks() if nb.stem == "04_verifiers")
    assert len(profiles.declared_parameters(nb)) <= 20


def test_checks_across_parameters_and_inside_mappings():
    cases = {
        "verifiers.budget_curve={examples: [64, 16]}": "ascending without repeats",
        "verifiers.size_scope={paper: {verifiers: [F9]}}": "(at paper/verifiers/0: 'F9')",
        "verifiers.size_scope={paper: {verifiers: [F4]}}": "size_scope names sizes ['paper'] that `sizes`",
        "training_ab.sweep_all_seeds=[0.3]": "sweep_all_seeds [0.3] must be shares of share_sweep [0.5]",
        "reranking.ks=[10, 200]": "(at 1: 200)",
        "training_ab.structural_share=1": "Input should be less than 1",
        "common.device=gpu": "allowed: text matching ^(cpu|cuda|mps|xpu)(:\\d+)?$ or null",
    }
    for override, message in cases.items():
        with pytest.raises(ValueError) as err:
            profiles.load_profile("smoke", [override])
        assert message in str(err.value), (override, str(err.value))


def test_a_piece_whose_set_the_schema_refuses_is_named(tmp_path):
    path = tmp_path / "pieces.yaml"
    piece = {"profile": "smoke", "only": "02", "set": ["training_ab.seeds=42"]}
    path.write_text(yaml.safe_dump({"pieces": {"bad": piece}}))
    with pytest.raises(ValueError, match=r"piece 'bad': --set training_ab\.seeds=42: `training_ab\.seeds` = 42"):
        load_pieces(path)


def test_what_the_runner_injects_is_checked_too():
    data = profiles.load_profile("smoke")
    data["data_and_negatives"]["user_sentences_split"] = "heldout"  # a profile changed after it was read
    nb = next(nb for nb in notebooks() if nb.stem == "01_data_and_negatives")
    with pytest.raises(ValueError, match=r"01_data_and_negatives\.ipynb: `user_sentences_split` = 'heldout'"):
        profiles.notebook_parameters("smoke", nb, data)
