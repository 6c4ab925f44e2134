import os

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

from pathlib import Path

import pytest

from compsense.core.encoders import load_encoder

# Slow tests (`make test-fast` skips them) in files whose authors mark them here rather than in the file:
# node ids without parameters; a listed file name marks the whole file. Measured with
# `pytest tests --durations=60` on 2 busy CPU cores: slow = over ~5 s. Elsewhere tests carry
# @pytest.mark.slow or a module-level `pytestmark = pytest.mark.slow`.
SLOW_TESTS = {
    "tests/test_geometry.py::test_score_frame_rows_and_cosines",
    "tests/test_geometry.py::test_separation_auc_figure_groups_bars_by_variant",
    "tests/test_geometry.py::test_a_model_given_by_name_is_loaded_with_the_seed_of_its_key",
    "tests/test_geometry.py::test_family_filter_and_per_family_sampling",
    "tests/test_geometry.py::test_pooled_nearmiss_auc_per_family_with_intervals_and_cache",
    "tests/test_geometry.py::test_geometry_summary_is_wide_by_metric_and_variant",
    "tests/test_geometry.py::test_the_table_s_auc_is_the_metric_on_the_score_frame",
    "tests/test_packaging.py::test_every_imported_third_party_module_is_declared",  # the file has no `import pytest`
    "tests/test_plots.py::test_the_same_figure_gives_the_same_bytes",
    "tests/test_plots.py::test_dose_response_figure_sweep_line_controls_and_seed_bars",
    "tests/test_report.py::test_report_shows_the_separation_table_with_seeds_and_families",
    "tests/test_report.py::test_long_tables_say_how_many_rows_they_leave_out_and_link_all_of_them",
    # each runs the stages of tests/miniproject.py's project, a kernel per stage (8-60 s each)
    "tests/test_runner.py::test_stages_run_with_the_profiles_values_and_record_their_success",
    "tests/test_runner.py::test_a_failing_stage_is_named_in_one_line_with_its_cell",
    "tests/test_runner.py::test_killed_mid_stage_then_rerun_resumes",
    "tests/test_runner.py::test_a_damaged_stages_json_is_refused_naming_it_before_the_kernel_starts",
    "tests/test_runner.py::test_figures_go_to_the_stages_own_folder_beside_the_work_dir",
    # Chromium draws each committed figure (13 s for the first, ~1 s each after)
    "tests/browser/test_figures_offline.py",
    "tests/test_verifier_training.py::test_frozen_training_never_re_encodes",
    "tests/test_explore.py::test_text_cache_encodes_each_text_once_and_drops_the_least_recent",  # loads MiniLM
}


@pytest.hookimpl(tryfirst=True)  # before -m and -k deselect: the marks must be there when they look
def pytest_collection_modifyitems(config, items):
    found = set()
    for item in items:
        test, path = item.nodeid.split("[", 1)[0], item.nodeid.split("::", 1)[0]
        for listed in (test, path):
            if listed in SLOW_TESTS:
                item.add_marker(pytest.mark.slow)
                found.add(listed)
    # A renamed test would lose its mark in silence: a listed test that a wholly collected file lacks fails.
    collected = {item.nodeid.split("::", 1)[0] for item in items}
    whole = {path for path in collected if _collected_whole(config, path)}
    stale = sorted(t for t in SLOW_TESTS - found if t.split("::", 1)[0] in whole)
    if stale:
        raise pytest.UsageError(
            f"tests/conftest.py: SLOW_TESTS lists {', '.join(stale)}, which the test files no "
            "longer have; rename or remove them in SLOW_TESTS"
        )


def _collected_whole(config, path: str) -> bool:
    """Whether the command line asked for all of `path` (the file or a folder above it), not some of its tests."""
    target = (config.rootpath / path).resolve()
    for arg in config.args:
        if "::" in arg:
            continue
        asked = (Path(config.invocation_params.dir) / arg).resolve()
        if asked == target or asked in target.parents:
            return True
    return False


@pytest.fixture(scope="session")
def tiny_encoder():
    """The unit-test backbone: a random BERT built offline, deterministic by seed."""
    return load_encoder("tiny-bert", seed=0)
