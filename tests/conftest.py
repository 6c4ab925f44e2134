import os

os.environ.setdefault("HF_HUB_OFFLINE", "1")

import pytest


@pytest.fixture(scope="session")
def tiny_encoder():
    """The unit-test backbone: a random BERT built offline, deterministic by seed."""
    from compsense.core.encoders import load_encoder

    return load_encoder("tiny-bert", seed=0)
