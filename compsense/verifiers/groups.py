"""Notebook 04's settings, grouped: its `parameters` cell holds them in mappings, one per idea (39 flat
parameters were too many to follow), and params/<profile>.yaml's `verifiers` section follows:

    training        how each verifier learns (`verifiers.config.VerifierTraining`'s fields, f2_learnable)
    rows            what the training rows are built from (`verifiers.data.training_rows`)
    near_miss_sets  what is scored (`nearmiss.evaluation.eval_sets`)

`flat` lifts them to the top level for code that reads the settings by name: `compsense estimate` (which
also reads runs recorded before the grouping, flat already) and `compsense crossencoder`. The pipeline's
schema (compsense.pipeline.schema) checks each group's keys; tests/test_params_schema.py keeps its groups
equal to `PARAMETER_GROUPS`. A module of its own that imports nothing, so that neither the command line
nor the schema loads the verifier code to read a profile.
"""

PARAMETER_GROUPS = ("training", "rows", "near_miss_sets")


def flat(params: dict) -> dict:
    """Notebook 04's `params` with its groups (`PARAMETER_GROUPS`) lifted to the top level: {"training":
    {"lr": ...}} gives {"lr": ...}. Parameters recorded before the grouping (already flat) come back unchanged."""
    out = {k: v for k, v in params.items() if not (k in PARAMETER_GROUPS and isinstance(v, dict))}
    for group in PARAMETER_GROUPS:
        if isinstance(params.get(group), dict):
            out.update(params[group])
    return out
