"""The banner says what the notebook ran: the profile, and whether the encoder it loaded has real
weights (issue 52: notebooks 00 and 06 load the pretrained MiniLM at smoke and must not call its
cosines "not results")."""

from compsense.core.banner import banner_text, describe_backbone, meaningless, profile_banner


def test_smoke_with_the_pretrained_minilm_does_not_call_its_numbers_not_results():
    text = banner_text("smoke", "minilm-l6")
    assert "sentence-transformers/all-MiniLM-L6-v2" in text and "pretrained" in text
    assert "the pretrained encoder below are that model's own" in text
    assert "they are not results" not in text  # only what smoke trains is flagged
    assert not meaningless("smoke", "minilm-l6")
    assert "#eef4fb" in profile_banner("smoke", "minilm-l6").data  # blue, not the amber of a warning


def test_the_random_tiny_bert_is_not_results_at_any_profile():
    for profile in ("smoke", "local"):
        text = banner_text(profile, "tiny-bert")
        assert "random weights" in text and "they are not results" in text
        assert meaningless(profile, "tiny-bert") and "#fff4d6" in profile_banner(profile, "tiny-bert").data
    # notebook 03 passes its list of backbones: one random one is enough to say so
    assert "they are not results" in banner_text("smoke", ["minilm-l6", "tiny-bert"])


def test_a_notebook_without_an_encoder_keeps_the_profile_banner():
    assert "only prove that the code runs; they are not results" in banner_text("smoke")
    local = banner_text("local", ["minilm-l6"])
    assert "params/local.yaml" in local and "not results" not in local and "minilm-l6" in local


def test_a_checkpoint_folder_is_named_as_the_model_in_it():
    assert describe_backbone("runs/local/models/minilm-l6/A-seed42/final") == (
        "the model in runs/local/models/minilm-l6/A-seed42/final"
    )
    assert not meaningless("smoke", "runs/local/models/minilm-l6/A-seed42/final")
