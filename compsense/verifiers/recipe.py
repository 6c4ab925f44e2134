"""The authors' verifier training recipe, per verifier and regime, as their shell script sets it.

Ralev et al. train each verifier for a fixed wall-clock budget (4 minutes on an A10 GPU) and turn
it into steps with a table of measured throughputs; batch size, learning rates and weight decay
also depend on the verifier and on the encoder's size. All of it lives in
`run_frozen_vs_e2e_experiment.sh` (its functions get_verifier_batch_size,
get_verifier_throughput_samples_per_sec, compute_iterations, compute_encoder_learning_rate,
compute_encoder_weight_decay, compute_verifier_learning_rate, compute_verifier_weight_decay);
the Python defaults of `train_and_eval_verifiers_experiment.py` (temperature 0.05, 5,000 steps,
encoder learning rate 1e-5) are overridden there and are not their values.

`authors_recipe` returns those settings as keyword arguments of
`verifier_training.train_verifier`, so notebook 04 can run the authors' unequal budgets
(`recipe: authors`) or our equal ones, and report one beside the other.
"""

from __future__ import annotations

from compsense.verifiers.architectures import canonical_name

MINUTES = 4  # TIME_MINUTES
LIGHT = ("F0", "F1", "F2")  # batch 128 (BATCH_SIZE); F3/F4 run at 32 (out of memory at 64 on their GPU)

# Samples per second by (verifier, regime), for encoders of < 50M, < 120M and more parameters.
THROUGHPUT = {
    ("light", "frozen"): (600, 300, 150),
    ("F3", "frozen"): (50, 30, 20),
    ("F4", "frozen"): (200, 120, 60),
    ("light", "end2end"): (440, 165, 90),
    ("F3", "end2end"): (55, 35, 25),
    ("F4", "end2end"): (150, 80, 40),
}
# Encoder learning rate and weight decay for encoders of < 30M, < 50M, < 120M and more parameters.
ENCODER_LR = (2e-5, 1.5e-5, 1e-5, 5e-6)
ENCODER_WEIGHT_DECAY = (0.001, 0.005, 0.01, 0.01)

# Settings that do not depend on the verifier (the script's MNRL_TEMPERATURE, WARMUP_RATIO, and
# the loss of train_and_eval_verifiers_experiment.py: each anchor against every positive of the
# batch and its own hard negative, B x (B + 1); [CLS]/[SEP] are part of the token embeddings).
COMMON = {
    "temperature": 0.1,
    "warmup_ratio": 0.1,
    "in_batch_negatives": None,
    "hard_negatives": "own",
    "lr": 1e-4,
    "max_grad_norm": 1.0,
}


def encoder_millions(encoder) -> int:
    """The encoder's parameters in whole millions (the script looks them up by name: MiniLM-L6 22,
    MiniLM-L12 and gte-small 33, gte-modernbert-base 149; counting gives the same)."""
    return int(sum(p.numel() for p in encoder.parameters()) // 1_000_000)


def authors_recipe(name: str, regime: str, encoder_params_millions: int) -> dict:
    """Keyword arguments of `train_verifier` for one verifier and regime, the authors' way:
    batch_size, budget_examples (steps x batch), lr, weight_decay, encoder_lr,
    encoder_weight_decay, temperature, warmup_ratio, in_batch_negatives, hard_negatives."""
    if regime not in ("frozen", "end2end"):
        raise ValueError(f"regime must be 'frozen' or 'end2end', got {regime!r}")
    key = canonical_name(name)
    m = int(encoder_params_millions)
    kind = "light" if key in LIGHT else key
    throughput = THROUGHPUT[(kind, regime)][0 if m < 50 else 1 if m < 120 else 2]
    batch = 128 if key in LIGHT else 32
    steps = MINUTES * 60 * throughput // batch  # bash integer division, as compute_iterations
    size_class = 0 if m < 30 else 1 if m < 50 else 2 if m < 120 else 3
    return {
        **COMMON,
        "batch_size": batch,
        "budget_examples": steps * batch,
        "weight_decay": 0.0 if key in LIGHT else 0.01,
        "encoder_lr": ENCODER_LR[size_class],
        "encoder_weight_decay": ENCODER_WEIGHT_DECAY[size_class],
    }


def authors_budget(name: str, regime: str, encoder_params_millions: int) -> int:
    """Examples the authors' script trains `name` on in `regime` (steps x batch size)."""
    return authors_recipe(name, regime, encoder_params_millions)["budget_examples"]
