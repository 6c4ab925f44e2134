import socket

import numpy as np
import pytest

from compsense.core import encoders as models


@pytest.mark.slow
def test_tiny_bert_is_deterministic(tiny_encoder):
    again = models.build_tiny_bert(seed=0)
    other = models.build_tiny_bert(seed=1)
    texts = ["The cat chased the dog.", "A red cup on a blue box."]
    np.testing.assert_array_equal(tiny_encoder.encode(texts), again.encode(texts))
    assert not np.allclose(tiny_encoder.encode(texts), other.encode(texts))
    assert tiny_encoder.tokenizer.get_vocab() == other.tokenizer.get_vocab()


def test_tiny_bert_tokenizes_with_its_own_wordpiece(tiny_encoder):
    tokens = tiny_encoder.tokenizer.tokenize("The cat chased the zebra.")
    assert tokens[:3] == ["the", "cat", "chased"]
    assert "[UNK]" not in tokens  # unseen words fall back to sub-word pieces, not UNK


def test_registry_resolves_short_names_and_hub_ids():
    assert models.find_backbone("minilm-l6").hub_id == "sentence-transformers/all-MiniLM-L6-v2"
    assert models.find_backbone("Sentence-Transformers/all-MiniLM-L6-v2").name == "minilm-l6"
    assert models.find_backbone("thenlper/gte-small").name == "gte-small"
    assert models.find_backbone("no/such-model") is None
    assert models.BACKBONES["gte-modernbert-base"].recipe == {
        "max_steps": 500,
        "learning_rate": 4e-5,
        "weight_decay": 0.01,
    }


@pytest.mark.slow
def test_minilm_l6_loads_offline_from_the_package():
    enc = models.load_encoder("minilm-l6")
    emb = enc.encode(["A short sentence."], normalize_embeddings=True)
    assert emb.shape == (1, 384)
    same = models.load_encoder("sentence-transformers/all-MiniLM-L6-v2")
    np.testing.assert_allclose(same.encode(["A short sentence."], normalize_embeddings=True), emb, atol=1e-6)


def test_unreachable_hub_id_fails_without_touching_the_network(monkeypatch):
    # Offline, the loader must give up before any connection attempt (an attempt is what hangs ~70 s
    # on these machines); counting attempts tests that without timing anything.
    attempts = []

    def refuse(*args, **kwargs):
        attempts.append(args)
        raise OSError("network disabled by the test")

    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setattr(socket, "getaddrinfo", refuse)
    monkeypatch.setattr(socket.socket, "connect", refuse)
    with pytest.raises(models.BackboneUnavailable) as err:
        models.load_encoder("thenlper/gte-small")
    assert attempts == []
    message = str(err.value)
    assert "minilm-l6" in message and "tiny-bert" in message and "local directory" in message


def test_unreachable_hub_when_online_mode_probes_instead_of_hanging(monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "0")
    monkeypatch.delenv("HF_ENDPOINT", raising=False)
    monkeypatch.setattr(models, "HUB_HOST", ("127.0.0.1", 9))  # nothing listens on the discard port
    with pytest.raises(models.BackboneUnavailable, match="127.0.0.1:9. cannot be reached.*HF_HUB_OFFLINE=1"):
        models.load_encoder("Alibaba-NLP/gte-modernbert-base")
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")  # offline by choice: the advice is how to go online
    with pytest.raises(models.BackboneUnavailable, match="HF_HUB_OFFLINE is set.*export HF_HUB_OFFLINE=0"):
        models.load_encoder("Alibaba-NLP/gte-modernbert-base")


def test_hf_endpoint_names_the_host_the_check_tries(monkeypatch):
    monkeypatch.delenv("HF_ENDPOINT", raising=False)
    assert models.hub_host() == models.HUB_HOST
    monkeypatch.setenv("HF_ENDPOINT", "http://mirror.example:8080")
    assert models.hub_host() == ("mirror.example", 8080)
    monkeypatch.setenv("HF_ENDPOINT", "https://hf-mirror.example")
    assert models.hub_host() == ("hf-mirror.example", 443)


def test_import_compsense_leaves_the_environment_untouched(tmp_path):
    import json
    import os
    import subprocess
    import sys

    env = {k: v for k, v in os.environ.items() if k not in ("HF_HUB_OFFLINE", "TOKENIZERS_PARALLELISM")}
    code = (
        "import os, json; before = dict(os.environ); import compsense, compsense.core.encoders, "
        "compsense.data.datasets, compsense.pipeline.runner; "
        "print(json.dumps({k: os.environ.get(k) for k in set(before) ^ set(os.environ)}))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True, cwd=tmp_path
    )
    assert json.loads(out.stdout.strip().splitlines()[-1]) == {}


def test_the_command_line_goes_offline_only_when_unset_and_the_hub_is_unreachable(monkeypatch):
    import os

    from compsense import __main__ as cli

    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    monkeypatch.setattr(models, "hub_reachable", lambda timeout=3.0: "no network (test)")
    cli.offline_defaults()
    assert os.environ["HF_HUB_OFFLINE"] == "1"
    monkeypatch.setenv("HF_HUB_OFFLINE", "0")  # the user's choice stays
    cli.offline_defaults()
    assert os.environ["HF_HUB_OFFLINE"] == "0"
    monkeypatch.delenv("HF_HUB_OFFLINE")
    monkeypatch.setattr(models, "hub_reachable", lambda timeout=3.0: None)  # online: nothing set
    cli.offline_defaults()
    assert "HF_HUB_OFFLINE" not in os.environ


@pytest.mark.slow
def test_local_directory_round_trip(tmp_path, tiny_encoder):
    tiny_encoder.save(str(tmp_path / "saved"))
    loaded = models.load_encoder(tmp_path / "saved", max_seq_length=32)
    assert loaded.max_seq_length == 32
    np.testing.assert_allclose(loaded.encode(["the dog"]), tiny_encoder.encode(["the dog"]), atol=1e-6)


def test_offline_status_names_every_backbone():
    status = models.offline_status()
    assert set(status) == set(models.BACKBONES)
    assert status["tiny-bert"] == "built"
    assert status["minilm-l6"].startswith("package")


def test_packaged_weights_are_checked_by_sha256(tmp_path):
    from compsense.core.encoders import verify_sha256

    weights = tmp_path / "model.safetensors"
    weights.write_bytes(b"weights")
    good = "a2a5ff0c7b8b4e3f5a9d2f1a0b9c8d7e"  # not the digest: refused, naming the fix
    with pytest.raises(ValueError, match="Fix: reinstall it"):
        verify_sha256(weights, good, fix="reinstall it")
    import hashlib

    verify_sha256(weights, hashlib.sha256(b"weights").hexdigest(), fix="-")  # the right digest passes
    weights.write_bytes(b"weightz")  # changed after a check: checked again
    with pytest.raises(ValueError, match="damaged"):
        verify_sha256(weights, hashlib.sha256(b"weights").hexdigest(), fix="-")


def test_encode_pooled_is_unit_length_and_the_three_kinds_agree_without_prompts(tiny_encoder):
    import torch

    texts = ["the kettle is on the stove", "the kettle is not on the stove", "a lamp stood by the door"]
    kinds = {kind: models.encode_pooled(tiny_encoder, texts, kind) for kind in models.POOLED_KINDS}
    for emb in kinds.values():
        assert emb.dtype == torch.float32 and emb.shape == (3, models.embedding_dim(tiny_encoder))
        assert torch.allclose(emb.norm(dim=-1), torch.ones(3), atol=1e-5)
    assert torch.allclose(kinds["query"], kinds["document"]) and torch.allclose(kinds["query"], kinds["sentence"])
    assert models.encode_pooled(tiny_encoder, [], "document").shape == (0, models.embedding_dim(tiny_encoder))


def test_encode_pooled_uses_the_models_query_and_document_encoders():
    import torch

    class Prompted:
        def __init__(self):
            self.calls = []

        def _fake(self, name):
            def encode(texts, **kwargs):
                self.calls.append(name)
                return torch.tensor([[3.0, 4.0]] * len(texts))

            return encode

        def __getattr__(self, name):
            if name in ("encode", "encode_query", "encode_document"):
                return self._fake(name)
            raise AttributeError(name)

    fake = Prompted()
    emb = models.encode_pooled(fake, ["q"], "query")
    models.encode_pooled(fake, ["d"], "document")
    models.encode_pooled(fake, ["s"], "sentence")
    assert fake.calls == ["encode_query", "encode_document", "encode"]
    assert torch.allclose(emb, torch.tensor([[0.6, 0.8]]))  # normalised again in float32
    with pytest.raises(ValueError, match="kind='passage'"):
        models.encode_pooled(fake, ["x"], "passage")


def test_push_to_hub_offline_says_how_to_go_online(monkeypatch):
    import pandas as pd

    from compsense.retrieval import training

    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    runs = pd.DataFrame({"variant": ["A"], "model": ["nowhere"], "backbone": ["m"], "seed": [42]})
    with pytest.raises(RuntimeError, match="HF_HUB_OFFLINE is set. Fix: .*export HF_HUB_OFFLINE=0"):
        training.push_models(runs, "me/compsense")
