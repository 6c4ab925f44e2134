"""Data-parallel training smoke run, launched by tests/test_train.py with
`python -m torch.distributed.run --standalone --nproc_per_node 2 tests/ddp_train_script.py <work_dir>`.
Two CPU processes (gloo) train tiny-bert for a few steps through compsense.retrieval.training.train_model."""

import sys
from pathlib import Path

import pandas as pd

from compsense.retrieval.training import TrainConfig, train_model

lines = [
    ln.strip()
    for ln in (Path(__file__).parents[1] / "compsense/resources/tiny_corpus.txt").read_text().splitlines()
    if ln.strip()
]
df = pd.DataFrame({"anchor": lines, "positive": [ln.lower() for ln in lines], "negative": lines[1:] + lines[:1]})
config = TrainConfig(
    backbone="tiny-bert", max_steps=3, batch_size=4, save_steps=3, logging_steps=1, work_dir=sys.argv[1], device="cpu"
)
print("final:", train_model(config, df))
