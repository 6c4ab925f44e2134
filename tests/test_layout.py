"""The run-folder layout (compsense.core.layout): where each stage writes, and loading a backbone's models."""

import json

import pytest

from compsense.core import layout


def test_paths_follow_the_documented_layout(tmp_path):
    assert layout.model_dir(tmp_path, "minilm-l6", "B", 43) == tmp_path / "models" / "minilm-l6" / "B-seed43"
    assert not layout.model_dir(tmp_path, "minilm-l6", "B", 43).exists()  # asking never creates
    assert layout.model_dir(tmp_path, "minilm-l6", "B", 43, create=True).is_dir()
    assert layout.final_model_dir(tmp_path, "minilm-l6", "A", 42).parts[-2:] == ("A-seed42", "final")
    assert layout.verifier_dir(tmp_path, "balanced-small", 44, "F3-frozen") == (
        tmp_path / "verifiers" / "balanced-small" / "seed44" / "F3-frozen"
    )
    assert layout.results_file(tmp_path, "rerank") == tmp_path / "results" / "05" / "rerank.parquet"
    assert layout.results_file(tmp_path, "table1.parquet") == tmp_path / "results" / "02" / "table1.parquet"
    assert (tmp_path / "results" / "05").is_dir()
    with pytest.raises(KeyError, match="no stage writes it"):
        layout.results_file(tmp_path, "nosuch")
    assert layout.cache_dir(tmp_path, "rerank").is_dir()
    assert layout.pairs_file(tmp_path) == tmp_path / "negatives" / "pairs.parquet"
    assert not (tmp_path / "negatives").exists()  # readers never create it
    assert layout.triplets_file(tmp_path, create=True).parent.is_dir()
    assert layout.trained_model_dirs(tmp_path) == [tmp_path / "models" / "minilm-l6" / "B-seed43"]


def test_model_keys_round_trip():
    assert layout.parse_model_key(layout.model_key("B-share0.5", 44)) == ("B-share0.5", 44)
    assert layout.parse_model_key("base") == ("base", None)


def test_load_models_gives_base_and_says_which_checkpoints_are_missing(tmp_path):
    models, notes = layout.load_models(tmp_path, "tiny-bert", 42, ("base", "A", "B"))
    assert list(models) == ["base"]
    assert len(notes) == 2 and "A-seed42/final" in notes[0] and "02_training_ab" in notes[0]
    with pytest.raises(FileNotFoundError, match="Model B .seed 42.: no checkpoint"):
        layout.load_model(tmp_path, "tiny-bert", "B", 42)


def test_load_model_reads_a_saved_checkpoint(tmp_path):
    base = layout.load_model(tmp_path, "tiny-bert", "base", 42)
    base.save(str(layout.final_model_dir(tmp_path, "tiny-bert", "A", 42)))
    models, notes = layout.load_models(tmp_path, "tiny-bert", 42, ("A",))
    assert list(models) == ["A"] and notes == []


def test_model_sources_lists_missing_checkpoints_without_loading(tmp_path):
    final = layout.final_model_dir(tmp_path, "tiny-bert", "A", 42)
    final.mkdir(parents=True)
    (final / "modules.json").write_text(json.dumps([]))
    models, missing = layout.model_sources(tmp_path, "tiny-bert", [42, 43])
    assert models == {"base-seed42": "tiny-bert", "A-seed42": str(final)}
    assert [p.parent.name for p in missing] == ["B-seed42", "A-seed43", "B-seed43"]
    assert layout.parse_model_key("B-seed43") == ("B", 43) and layout.parse_model_key("custom") == ("custom", None)


def test_check_not_protected_refuses_extra_folders_given_beside_the_repositorys_own(tmp_path):
    """Issue 51 item 3: a profile's own data_dir (or `evaluate --data-dir`) is protected too, not only
    the environment's data folder: `also` adds folders, and a link into one is followed."""
    from compsense.core.paths import check_not_protected, repo_root

    data = tmp_path / "my-data"
    (data / "scifact").mkdir(parents=True)
    (tmp_path / "link").symlink_to(data, target_is_directory=True)
    ok = tmp_path / "runs" / "x"
    assert check_not_protected(ok, "--out", "fix") == ok.resolve()  # existing callers: no `also`
    assert check_not_protected(data / "out", "--out", "fix") == (data / "out").resolve()  # not protected yet
    for inside in (data, data / "out", data / "scifact" / "results", tmp_path / "link" / "out"):
        with pytest.raises(PermissionError, match=f"--out: .* is inside {data}.*Fix: use runs/"):
            check_not_protected(inside, "--out", "use runs/", also=[None, data])
    assert check_not_protected(ok, "--out", "fix", also=[data, None]) == ok.resolve()
    with pytest.raises(PermissionError, match="is inside .*figures"):
        check_not_protected(repo_root() / "figures" / "x", "--out", "fix", also=[data])
