"""What each notebook's parameters may be: one pydantic model per notebook (types, ranges, allowed
values), checked against the merged profile (params/<profile>.yaml with its `--set` overrides) before
anything runs, by `reproduce`, `piece`, `estimate` and the parameters the runner injects with papermill.

Why a schema and not checks in the notebooks: a bad value used to fail only when a cell reached it,
minutes into a run, naming neither the parameter nor the fix ("Sample larger than population or is
negative" for `mrpc_train_sentences=-5`), or not at all (`user_sentences_split=tarin` put the user's
sentences on the held-out side). Refused here, the message names the parameter, the value and what is
allowed (rendered from the model's JSON Schema, so the text cannot drift from the check).

The allowed names (backbones, variants, families, verifiers, ...) are written here as literals, since
the registries that own them import torch and spaCy (seconds, where `reproduce` should take its lock
at once); tests/test_params_schema.py keeps each literal equal to its registry, and each model's fields
equal to its notebook's `parameters` cell.
"""

from __future__ import annotations

from typing import Annotated, Literal, Optional

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from compsense.core.encoders import BACKBONES
from compsense.verifiers.groups import PARAMETER_GROUPS
from compsense.verifiers.names import TRAIN_DATA

# ---------------------------------------------------------------------------------------------
# The allowed names, each equal to its registry (tests/test_params_schema.py)

Backbone = Literal[tuple(BACKBONES)]  # compsense.core.encoders.BACKBONES (a light import: read directly)
Variant = Literal["base", "A", "B", "B-all", "C-identity"]  # compsense.retrieval.training.NAMED_VARIANTS
# every family notebook 01 can make, in alphabetical order (compsense.data.negatives.families.FAMILIES;
# written out: importing the rules costs seconds before `reproduce` takes its lock)
Family = Literal["binding", "comparative", "negation", "numeric", "quantifier", "spatial", "temporal"]
TrainSource = Literal["nfcorpus", "scifact", "mrpc", "stsb", "nq"]  # training.OFFLINE_SOURCES + "nq"
VerifierName = Literal["F0", "F1", "F2", "F3", "F4"]  # compsense.verifiers.architectures.NAMES
Regime = Literal["frozen", "end2end"]  # compsense.verifiers.config.REGIMES
Size = Literal["small", "paper"]  # compsense.verifiers.architectures.SIZES
TrainData = Literal[TRAIN_DATA]  # compsense.verifiers.names (imports nothing): the one list of row sets
SugarCrepeSubset = Literal[
    "add_att", "add_obj", "replace_att", "replace_obj", "replace_rel", "swap_att", "swap_obj"
]  # compsense.data.datasets.SUGARCREPE_SUBSETS
ParaphraseSplit = Literal["train", "dev", "test"]  # MRPC and STS-B splits both have (datasets.STSB_SPLITS)
PairSplit = Literal["train", "test"]  # the splits notebook 01 writes into pairs.parquet and triplets.parquet
CacheDtype = Literal["float16", "fp16", "half", "float32", "fp32", "float", "bfloat16"]  # simmap.storage_dtype
MAX_K = 100  # compsense.retrieval.harness.MAX_K: the depth a first stage retrieves

# ---------------------------------------------------------------------------------------------
# Value types shared by several notebooks

Seed = Annotated[int, Field(ge=0, le=2**32 - 1)]  # numpy's seeds
Count = Annotated[int, Field(ge=0)]
Positive = Annotated[int, Field(ge=1)]
Rate = Annotated[float, Field(gt=0)]
Decay = Annotated[float, Field(ge=0)]
Share = Annotated[float, Field(ge=0, lt=1)]  # retrieval.training.mix_structural: 0 <= share < 1
Text = Annotated[str, Field(min_length=1)]
Device = Optional[Annotated[str, Field(pattern=r"^(cpu|cuda|mps|xpu)(:\d+)?$")]]
# "paper" (the authors' three), one family, a list of them, or None (every family): resolve_families
StructuralFamilies = Optional[Literal["paper"] | Family | Annotated[list[Family], Field(min_length=1)]]


def _list(item, minimum: int = 1):
    return Annotated[list[item], Field(min_length=minimum)]


class _Parameters(BaseModel):
    """A notebook's parameters: strict (42.0 is not a whole number, "42" not a number, true not 1),
    and no parameter the model does not name."""

    model_config = ConfigDict(strict=True, extra="forbid")


class _Common(_Parameters):
    profile: Text  # every notebook's (its banner says which profile ran it)


class TheProblem(_Parameters):
    """notebooks/00_the_problem.ipynb"""

    profile: Text
    backbone: Text  # load_encoder: a short name, a hub id or a saved model's folder
    device: Device
    figures_dir: Text


class DataAndNegatives(_Common):
    """notebooks/01_data_and_negatives.ipynb"""

    seed: Seed
    data_dir: Optional[Text]
    work_dir: Text
    figures_dir: Text
    mrpc_train_sentences: Optional[Count]
    mrpc_test_sentences: Optional[Count]
    stsb_train_sentences: Optional[Count]
    stsb_test_sentences: Optional[Count]
    coco_test_sentences: Optional[Count]
    user_sentences_path: Optional[Text]
    # the notebook puts the user's sentences on the train side when "train", on the held-out side otherwise
    user_sentences_split: PairSplit
    families: Optional[Family | _list(Family)]  # negatives.family_names: None (all), a name or a list
    max_per_family: Positive
    sample_size: Count


class TrainingAB(_Common):
    """notebooks/02_training_ab.ipynb"""

    seed: Seed
    device: Device
    data_dir: Optional[Text]
    work_dir: Text
    figures_dir: Text
    backbones: _list(Backbone)  # TrainConfig.paper: a registry name (its recipe)
    seeds: _list(Seed)
    variants: _list(Variant)
    train_sources: _list(TrainSource)
    nq_path: Optional[Text]
    max_pairs_per_query: Optional[Positive]
    max_train_rows: Optional[Positive]
    max_steps: Optional[Positive]
    batch_size: Optional[Positive]
    learning_rate: Optional[Rate]
    weight_decay: Optional[Decay]
    max_seq_length: Positive
    structural_share: Share
    structural_families: StructuralFamilies
    share_sweep: _list(Annotated[float, Field(gt=0, lt=1)], 0)
    sweep_all_seeds: _list(Annotated[float, Field(gt=0, lt=1)], 0)
    first_seed_only: _list(Variant, 0)
    eval_datasets: _list(Text)
    nanobeir_dataset_id: Text
    eval_max_queries: Optional[Positive]
    eval_extra_docs: Count
    eval_batch_size: Positive
    nearmiss_pairs_per_family: Optional[Positive]
    bootstrap_samples: Positive
    force: bool
    push_to_hub: Optional[Annotated[str, Field(pattern=r"^[\w.-]+/[\w.-]+$")]]  # "<user or org>/<prefix>"

    @model_validator(mode="after")
    def _sweeps(self):
        # a share of sweep_all_seeds that share_sweep lacks would silently not be trained (plan_runs)
        stray = [s for s in self.sweep_all_seeds if s not in self.share_sweep]
        if stray:
            raise ValueError(f"sweep_all_seeds {stray} must be shares of share_sweep {self.share_sweep}")
        return self


class PooledGeometry(_Common):
    """notebooks/03_pooled_geometry.ipynb"""

    seed: Seed
    device: Device
    data_dir: Optional[Text]
    work_dir: Text
    figures_dir: Text
    backbones: _list(Backbone)  # the folders notebook 02 trained under models/<backbone>/
    seeds: _list(Seed)
    # trained variants beside Base (scored once anyway): notebook 02's names and its share-sweep points
    variants: _list(Literal["A", "B", "B-all", "C-identity"] | Annotated[str, Field(pattern=r"^B-share[0-9.]+$")])
    families: StructuralFamilies
    negatives_split: Optional[Literal["heldout"] | PairSplit]  # heldout: all but Model B's training split
    max_pairs_per_family: Optional[Positive]
    mrpc_split: ParaphraseSplit
    max_positives: Optional[Positive]
    n_reference_pairs: Positive
    sugarcrepe_subsets: Optional[SugarCrepeSubset | _list(SugarCrepeSubset)]
    sugarcrepe_per_subset: Optional[Positive]
    max_seq_length: Positive
    batch_size: Positive


class SizeScope(_Parameters):
    """What one verifier size trains (`verifiers.study.size_plan`); a key left out: everything."""

    verifiers: _list(VerifierName, 0) = None
    regimes: _list(Regime, 0) = None


def _scope_sizes(scope: dict, sizes, where: str) -> None:
    stray = sorted(set(scope) - set(sizes))
    if stray:
        raise ValueError(f"{where} names sizes {stray} that `sizes` {list(sizes)} does not hold")


class BudgetCurve(_Parameters):
    """notebook 04's `budget_curve` (`verifiers.budget.BudgetCurve`): {} or no examples, not run."""

    examples: _list(Positive, 0) = None
    verifiers: _list(VerifierName) = None
    sizes: _list(Size) = None
    size_scope: dict[Size, SizeScope] = None
    regimes: _list(Regime) = None
    seeds_at_largest: _list(Seed) | None = None
    end2end_examples: _list(Positive) | None = None
    train_data: TrainData = None
    authors_recipe: bool = None

    @model_validator(mode="after")
    def _budgets(self):
        examples = list(self.examples or [])
        if examples != sorted(set(examples)):
            raise ValueError(f"budget_curve.examples must be ascending without repeats, got {examples}")
        stray = sorted(set(self.end2end_examples or []) - set(examples))
        if stray:
            raise ValueError(f"budget_curve.end2end_examples {stray} are not budgets of `examples` {examples}")
        if self.size_scope and self.sizes:
            _scope_sizes(self.size_scope, self.sizes, "budget_curve.size_scope")
        return self


class Training(_Parameters):
    """notebook 04's `training`: how each verifier learns (`verifiers.config.VerifierTraining`'s fields),
    and whether F2's lam and tau learn."""

    budget_examples: Positive
    batch_size: Positive
    lr: Rate
    encoder_lr: Rate
    weight_decay: Decay
    encoder_weight_decay: Optional[Decay]  # None: weight_decay (VerifierTraining.encoder_decay)
    temperature: Rate
    in_batch_negatives: Optional[Count]
    hard_negatives: Literal["all", "own"]  # compsense.verifiers.config.HARD_NEGATIVES
    f2_learnable: bool


class Rows(_Parameters):
    """notebook 04's `rows`: what `verifiers.data.training_rows` builds the training rows from."""

    train_split: PairSplit
    retrieval_sources: _list(TrainSource, 0)
    max_pairs_per_query: Optional[Positive]
    zero_shot_datasets: _list(Text, 0)
    max_retrieval_rows: Optional[Positive]
    structural_share: Share
    structural_families: StructuralFamilies
    max_paraphrase_pairs: Optional[Positive]


class NearMissSets(_Parameters):
    """notebook 04's `near_miss_sets`: what `nearmiss.evaluation.eval_sets` scores."""

    heldout_split: PairSplit
    mrpc_split: ParaphraseSplit
    condaqa_unit: Literal["sentence", "passage"]  # nearmiss.evaluation.condaqa_pairs
    max_pairs: Optional[Positive]


class Verifiers(_Common):
    """notebooks/04_verifiers.ipynb"""

    seed: Seed
    device: Device
    data_dir: Optional[Text]
    work_dir: Text
    figures_dir: Text
    backbone: Backbone  # its Model A/B (models/<backbone>/) stand beside the verifiers
    max_seq_length: Positive
    verifiers: _list(VerifierName)
    regimes: _list(Regime)
    train_data: _list(TrainData)
    sizes: _list(Size)
    size_scope: dict[Size, SizeScope]
    recipe: Literal["equal", "authors"]  # compsense.verifiers.config.RECIPES
    verifier_seeds: _list(Seed)
    include_special: bool
    training: Training
    rows: Rows
    near_miss_sets: NearMissSets
    budget_curve: BudgetCurve

    @model_validator(mode="after")
    def _scope(self):
        _scope_sizes(self.size_scope, self.sizes, "size_scope")
        return self


class Reranking(_Common):
    """notebooks/05_reranking.ipynb"""

    seed: Seed
    device: Device
    data_dir: Optional[Text]
    work_dir: Text
    figures_dir: Text
    backbone: Backbone
    eval_datasets: _list(Text)
    eval_split: ParaphraseSplit  # a BEIR folder's qrels/<split>.tsv
    eval_max_queries: Optional[Positive]
    eval_extra_docs: Count
    ks: _list(Annotated[int, Field(ge=1, le=MAX_K)])
    fusion_weights: _list(Annotated[float, Field(ge=0, le=1)])
    verifiers: _list(VerifierName)
    regimes: _list(Regime)
    verifier_seeds: _list(Seed)
    # notebook 04's folders verifiers/<train_data>-<size>[-authors]/
    verifier_variants: _list(Annotated[str, Field(pattern=rf"^({'|'.join(TRAIN_DATA)})-(small|paper)(-[\w.-]+)?$")])
    first_stage: Literal["own", "base"]  # compsense.verifiers.rerank.rerank_grid
    max_seq_length: Positive
    batch_size: Positive
    candidate_batch: Positive
    cache_dtype: CacheDtype
    cost_queries: Optional[Positive]
    bootstrap_samples: Positive


class Explorer(_Common):
    """notebooks/06_explorer.ipynb"""

    device: Device
    work_dir: Text
    backbone: Text  # load_encoder: a short name, a hub id or a saved model's folder
    sentence_a: str
    sentence_b: str
    interactive: Optional[bool]  # None: live widgets in a front-end, static headless


# The schema: one model per notebook stem. A notebook not named here (a test's miniature) is not checked.
SCHEMA: dict[str, type[BaseModel]] = {
    "00_the_problem": TheProblem,
    "01_data_and_negatives": DataAndNegatives,
    "02_training_ab": TrainingAB,
    "03_pooled_geometry": PooledGeometry,
    "04_verifiers": Verifiers,
    "05_reranking": Reranking,
    "06_explorer": Explorer,
}


# ---------------------------------------------------------------------------------------------
# Checking a profile


def problems(stem: str, params: dict) -> list[tuple[str, str]]:
    """[(parameter, what is wrong with its value and what is allowed)] of notebook `stem`'s `params` (its
    model's fields only; a field `params` lacks is not a problem here: `profiles.notebook_parameters`
    names a parameter a profile does not set). A key inside one of notebook 04's groups is named by its
    path ("training.lr"), and one missing from a group is a problem. [] when the notebook has no model or
    every value fits."""
    model = SCHEMA.get(stem)
    if model is None:
        return []
    try:
        model.model_validate({k: v for k, v in params.items() if k in model.model_fields})
    except ValidationError as err:
        return _explain(model, params, [e for e in err.errors() if e["type"] != "missing" or len(e["loc"]) > 1])
    return []


def _explain(model: type[BaseModel], params: dict, errors: list[dict]) -> list[tuple[str, str]]:
    """One (parameter, text) per parameter with an error: pydantic's reason (one line where a union
    gave several) and what the schema allows."""
    by_field: dict[str, list[dict]] = {}
    for e in errors:
        loc = [str(p) for p in e["loc"]]
        # a key of one of notebook 04's groups (the models Training, Rows, NearMissSets) by its path
        depth = 2 if loc and loc[0] in PARAMETER_GROUPS and len(loc) > 1 else 1
        by_field.setdefault(".".join(loc[:depth]), []).append({**e, "loc": tuple(e["loc"][depth - 1 :])})
    out = []
    root = model.model_json_schema()
    for name, errs in by_field.items():
        if not name:  # a check across parameters (model_validator): its message names them
            out.append((name, "; ".join(str(e["msg"]).removeprefix("Value error, ") for e in errs)))
            continue
        node, value = root, params
        for part in name.split("."):
            node = _resolve(root, node).get("properties", {}).get(part, {})
            value = value.get(part) if isinstance(value, dict) else None
        if errs[0]["type"] == "missing":
            out.append((name, f"missing; allowed: {describe(root, node)}"))
            continue
        # a union's several errors, or a value outside a list of names (which `allowed` spells out): no more to say
        reason = "not allowed" if len(errs) > 1 else _reason(errs[0])
        out.append((name, f"{value!r}: {reason}; allowed: {describe(root, node)}"))
    return out


def _resolve(root: dict, node: dict) -> dict:
    """A JSON Schema node with its $ref followed."""
    return root["$defs"][node["$ref"].rsplit("/", 1)[-1]] if "$ref" in node else node


def _reason(error: dict) -> str:
    """pydantic's message, with where inside a list or mapping the bad item sits; for a name outside
    a list of names, only "not allowed" (`allowed` spells the names out)."""
    where = [str(p) for p in error["loc"][1:] if not str(p).startswith(("literal[", "list[", "function-"))]
    inside = f" (at {'/'.join(where)}: {error['input']!r})" if where else ""
    plain = error["type"] in ("literal_error", "enum")
    return ("not allowed" if plain else str(error["msg"]).removeprefix("Value error, ")) + inside


def describe(root: dict, node: dict) -> str:
    """A JSON Schema node in words: "a whole number >= 1, or null", "a list of 1+ of 'F0', 'F1'"."""
    if "$ref" in node:
        return describe(root, root["$defs"][node["$ref"].rsplit("/", 1)[-1]])
    if "anyOf" in node:
        return " or ".join(describe(root, n) for n in node["anyOf"])
    if "const" in node:
        return repr(node["const"])
    if "enum" in node:
        return "one of " + ", ".join(repr(v) for v in node["enum"])
    kind = node.get("type")
    if kind == "null":
        return "null"
    if kind == "boolean":
        return "true or false"
    if kind in ("integer", "number"):
        return ("a whole number" if kind == "integer" else "a number") + _bounds(node)
    if kind == "string":
        if "pattern" in node:
            return f"text matching {node['pattern']}"
        return "non-empty text" if node.get("minLength") else "text"
    if kind == "array":
        least = node.get("minItems", 0)
        return f"a list of {f'{least}+ ' if least else ''}({describe(root, node.get('items', {}))})"
    if kind == "object" and "properties" in node:
        return "a mapping with some of the keys " + ", ".join(node["properties"])
    if kind == "object":
        keys = node.get("propertyNames")
        values = node.get("additionalProperties")
        inner = f" of {describe(root, keys)} to {describe(root, values)}" if keys and values else ""
        return f"a mapping{inner}"
    return "anything"


def _bounds(node: dict) -> str:
    parts = [
        f"{sign} {node[key]}"
        for key, sign in (("minimum", ">="), ("exclusiveMinimum", ">"), ("maximum", "<="), ("exclusiveMaximum", "<"))
        if key in node
    ]
    return f" {' and '.join(parts)}" if parts else ""
