"""Joint attention: a real sentence-transformers `CrossEncoder`, trained on the map verifiers' rows,
budgets and seeds, as the ceiling of what reading two texts together can do on near-misses (issue 50,
item 4).

Why: every map verifier (F0-F4, `compsense.verifiers.architectures`) sees two texts only through the
token-token cosine map of their separately computed embeddings. When none of them rejects a role swap,
either the map interface loses the edit or the training never asked for it. A cross-encoder puts
both texts through one transformer, each token attending to the other text's tokens; trained on the
same triplets, at the same budget and seeds, and scored by the same code, it separates what the
interface allows to be separated.

How it differs from `compsense.verifiers.cross_encoder`: that module gives a *map verifier* (an
encoder plus F0-F4) CrossEncoder's interface (`VerifierReranker`: predict and rank over two separately
encoded texts). Here the model *is* a CrossEncoder: the backbone's transformer (the packaged
all-MiniLM-L6-v2 on the local profile) with a fresh, seeded one-logit head, trained end to end by
sentence-transformers' own `CrossEncoderTrainer` and one of its losses (`joint_loss`): by default the
verifiers' in-batch contrast in memory-bounded mini-batches (`CachedMultipleNegativesRankingLoss`), or
the classic cross-encoder objective, binary cross-entropy on (anchor, positive) = 1, (anchor, negative) = 0.

- `JointTraining`: how it trains, from notebook 04's verifier settings (`from_verifier_params`).
- `joint_loss`, `joint_size`: the training objective, and the `size` column that names it (and a bf16
  run's precision) in the tables.
- `PRECISIONS`, `precision_context`: fp32, or bf16 autocast in training and scoring, as the bi-encoder's
  training-length curve (`nearmiss.length_run`, `retrieval.training.build_trainer`) runs it.
- `joint_model`: the backbone, loaded by `core.encoders.load_encoder`, with a fresh head.
- `budget_rows`: exactly the triplets a map verifier of the same seed and budget sees, in its order.
- `train_joint`, `fit_joint`: train one (or load a finished run from its folder).
- `JointScorer`: pairs -> scores, for `nearmiss.evaluation` and `verifiers.rerank` alike.
- `run_joint_grid`: every training-data kind x budget x seed, trained and scored on notebook 04's sets.
"""

from __future__ import annotations

import math
import shutil
import tempfile
import time
from contextlib import nullcontext
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Sequence

import numpy as np
import pandas as pd
import torch
from sentence_transformers.cross_encoder import (
    CrossEncoder,
    CrossEncoderTrainer,
    CrossEncoderTrainingArguments,
    losses,
)
from transformers import PrinterCallback

from compsense.core.encoders import load_encoder, quiet_transformers
from compsense.core.layout import verifier_dir
from compsense.core.seed import seed_everything
from compsense.core.storage import append_results, read_json, write_json, write_table
from compsense.nearmiss import evaluation as N

# What the trainer wants (a datasets.Dataset of the three columns) and batches in the given order:
# notebook 02's own adapters, so there is one of each.
from compsense.retrieval.training import MNRL_COLUMNS, _in_order_batches, _to_dataset, data_sha1
from compsense.verifiers import names as N_
from compsense.verifiers.budget import budget_suffix
from compsense.verifiers.names import DEFAULT_JOINT_LOSS, JOINT_LOSSES
from compsense.verifiers.training import _sample_batches, variant_name  # the verifiers' one sampler

SCORER = "CE"  # the scorer's name in the verifier tables, beside F0-F4
REGIME = "end2end"  # the whole transformer learns, as an end-to-end verifier's encoder does
LABEL = f"{SCORER}-{REGIME}"  # `nearmiss.evaluation.split_variant` reads it as ("CE", "end2end")
SIZE = "joint"  # the `size` column (verifiers: "small", "paper"); `joint_size` adds the loss and bf16
JOINT_FILE = "joint.json"  # a finished run's settings and history, written last: its presence means done
RESULTS = N_.JOINT_RESULTS  # results/<this>.parquet: the near-miss rows, in notebook 04's verifiers.parquet shape
RUNS = N_.JOINT_RUNS  # results/<this>.parquet and .csv: one row per trained model
RESULTS_KEY = [*N.NEARMISS_KEY, "budget"]
# Training and scoring precision. fp32: fp32 weights and arithmetic (on a GPU too). bf16: fp32 weights with
# bf16 autocast, the trainer's `bf16=True` (with `use_cpu` on a CPU, as `retrieval.training.build_trainer`
# trains the length curve's bf16 pieces) and `torch.autocast` around scoring (as `nearmiss.length_run`
# scores them): 1.56x faster a MiniLM-L6 bi-encoder step on an AVX-512/AMX CPU (benchmarks/README.md).
PRECISIONS = N_.JOINT_PRECISIONS
DEFAULT_PRECISION = "fp32"  # what every run before the option trained in on a CPU: their folders and rows keep it


@dataclass(frozen=True)
class JointTraining:
    """How one cross-encoder trains.

    budget_examples  triplets seen (the budget curve's 8,192 by default)
    batch_size       triplets a step
    lr, weight_decay AdamW on the transformer, linear decay after `warmup_ratio` of the steps warm up
    head_lr, head_weight_decay
                     AdamW on the head, the fresh one-logit classifier and the pooler the bi-encoder
                     never trained (`joint_optimizer`; None: `lr`, `weight_decay`, one group as the
                     trainer makes it). Why: an end-to-end map verifier trains its fresh head at the
                     verifiers' `lr` (1e-3) and only its encoder at `encoder_lr` (2e-5); a head held at
                     2e-5 moves at most ~5e-3 a weight in 256 steps, and the first BCE run at 8,192
                     triplets stayed at ln 2 (figures/tables/crossencoder_record.json). With the
                     verifiers' two rates the two interfaces are trained alike.
    num_negatives    in-batch negatives per anchor besides its hard negative (the loss's num_negatives)
    scale            the loss's logit scale (sentence-transformers' default, 10)
    max_length       tokens of a (query, document) pair: by default twice the verifiers' per-text length,
                     so the cross-encoder reads as many tokens as a verifier's map has rows and columns
    loss             the objective, one of `names.JOINT_LOSSES` (`joint_loss` says why each exists)
    lr_named         the transformer's rate is part of the run's name (`joint_size`): set where it is not the
                     verifiers' `encoder_lr` (`compsense crossencoder --lr`), so runs at two rates stay apart
    mini_batch_size  (query, document) pairs a forward pass of "cmnrl" holds: what bounds its memory
    precision        "fp32" or "bf16" (`PRECISIONS`): autocast in training and scoring; part of the run's
                     identity (its settings, its folder and `size` through `joint_size`)
    """

    budget_examples: int = 8192
    batch_size: int = 32
    lr: float = 2e-5
    weight_decay: float = 0.001
    head_lr: float | None = None
    head_weight_decay: float | None = None
    lr_named: bool = False
    warmup_ratio: float = 0.1
    num_negatives: int | None = 4
    scale: float = 10.0
    max_length: int = 256
    loss: str = DEFAULT_JOINT_LOSS
    mini_batch_size: int = 16
    precision: str = DEFAULT_PRECISION

    def __post_init__(self):
        if int(self.budget_examples) < 1 or int(self.batch_size) < 1 or int(self.max_length) < 8:
            raise ValueError(
                f"budget_examples and batch_size must be >= 1 and max_length >= 8, got {self.budget_examples}, "
                f"{self.batch_size}, {self.max_length}"
            )
        if self.loss not in JOINT_LOSSES:
            raise ValueError(f"loss must be one of {', '.join(JOINT_LOSSES)}, got {self.loss!r}")
        if int(self.mini_batch_size) < 1:
            raise ValueError(f"mini_batch_size must be >= 1, got {self.mini_batch_size}")
        if self.precision not in PRECISIONS:
            raise ValueError(f"precision must be one of {', '.join(PRECISIONS)}, got {self.precision!r}")

    def replace(self, **changes) -> "JointTraining":
        return replace(self, **changes)

    def settings(self) -> dict:
        return asdict(self)

    @classmethod
    def from_verifier_params(cls, params: dict, budget: int = 8192) -> "JointTraining":
        """The settings of notebook 04's end-to-end verifiers (`params`: a profile's 04_verifiers section):
        their batch size, in-batch negatives, the encoder's learning rate and weight decay for the
        transformer, the verifier's own for the fresh head; max_length covers two of their texts."""
        decay = params.get("encoder_weight_decay")
        return cls(
            budget_examples=int(budget),
            batch_size=int(params["batch_size"]),
            lr=float(params["encoder_lr"]),
            weight_decay=float(params["weight_decay"] if decay is None else decay),
            head_lr=float(params["lr"]),
            head_weight_decay=float(params["weight_decay"]),
            num_negatives=params.get("in_batch_negatives"),
            max_length=2 * int(params["max_seq_length"]),
        )


def joint_model(backbone: str, seed: int = 42, max_length: int = 256, device=None):
    """A `CrossEncoder` with `backbone`'s transformer and a fresh one-logit head, seeded by `seed`.

    The backbone loads through `load_encoder` (a short name such as minilm-l6 from its offline package,
    tiny-bert built, a saved folder, or a hub id), so a name that cannot be loaded here fails with the
    same one-line `BackboneUnavailable` as everywhere else. Its transformer and tokenizer are written
    to a temporary folder that CrossEncoder reads; the head is new there. `max_length` is capped at
    the backbone's position embeddings."""
    with quiet_transformers():
        transformer = load_encoder(backbone, device="cpu", seed=seed)[0]
    bert = getattr(transformer, "auto_model", None) or transformer.model
    tokenizer = getattr(transformer, "tokenizer", None) or transformer.processor
    limit = int(getattr(bert.config, "max_position_embeddings", max_length) or max_length)
    with tempfile.TemporaryDirectory(prefix="joint-") as tmp:
        bert.save_pretrained(tmp)
        tokenizer.save_pretrained(tmp)
        seed_everything(seed)  # the head's initial weights are the seed's
        with quiet_transformers():
            return CrossEncoder(tmp, num_labels=1, max_length=min(int(max_length), limit), device=device)


def joint_loss(model, training: JointTraining):
    """sentence-transformers' loss for `training.loss`, on `model`. Why each:

    cmnrl  the default. The map verifiers' objective (`verifiers.training.contrastive_loss`): each
           anchor's positive against its hard negative and `num_negatives` other candidates of the batch,
           so the cross-encoder and the verifiers are asked the same question and differ only in how they
           read the two texts. Cached (GradCache): the batch's (1 + num_negatives + 1) x batch_size pairs
           are scored `mini_batch_size` at a time, first without a graph, then again with one, the
           loss's gradients carried over. Same loss and gradients as "mnrl" (dropout is replayed), with
           memory bounded by the mini-batch: uncached, batch 32 at 256 tokens (192 pairs at once) took a
           MiniLM-L6 step to 14.3 GB on a CPU, and the OOM killer stopped it. About 20% slower a step.
    mnrl   the same objective in one forward pass: faster where memory allows (a GPU).
    bce    the classic cross-encoder objective: binary cross-entropy on each triplet's (anchor, positive)
           = 1 and (anchor, negative) = 0, each pair judged on its own, no in-batch contrast. How
           rerankers are usually trained: whether the contrast or the objective limits the ceiling.
    """
    if training.loss == "bce":
        return losses.BinaryCrossEntropyLoss(model)
    if training.loss == "mnrl":
        return losses.MultipleNegativesRankingLoss(model, num_negatives=training.num_negatives, scale=training.scale)
    return losses.CachedMultipleNegativesRankingLoss(
        model, num_negatives=training.num_negatives, scale=training.scale, mini_batch_size=training.mini_batch_size
    )


def joint_size(
    loss: str = DEFAULT_JOINT_LOSS, precision: str = DEFAULT_PRECISION, head_lr: float | None = None, lr=None
) -> str:
    """The `size` column of a cross-encoder trained with `loss` at `precision` ("joint", "joint-bce",
    "joint-mnrl"; "joint-bf16", "joint-bce-bf16" in bf16; "joint-bce-bf16-head0.001" with its head at its own
    learning rate, "...-lr0.0001" with the transformer's rate where it is not the verifiers'): the tables group
    runs by scorer x train_data x size, so runs of two objectives, precisions or rates never average together,
    and the folder verifiers/<train_data>-<size>-b<budget>/ keeps each apart (a bf16 run never loads or
    replaces an fp32 one). The defaults (fp32, one learning rate) add nothing: the folders and rows of
    runs before the options stay as they were."""
    size = SIZE if loss == DEFAULT_JOINT_LOSS else f"{SIZE}-{loss}"
    size = size if precision == DEFAULT_PRECISION else f"{size}-{precision}"
    size = size if head_lr is None else f"{size}-head{float(head_lr):g}"
    return size + lr_suffix(lr)


def lr_suffix(lr: float | None) -> str:
    """ "-lr0.0001" for a transformer rate named in a run's size or folder, "" for None (the profile's)."""
    return "" if lr is None else f"-lr{float(lr):g}"


def joint_optimizer(model, training: JointTraining, decay_names):
    """AdamW with the head at `training.head_lr` and the transformer at `training.lr`, or None when
    `head_lr` is None (the trainer's own AdamW, one rate). The head is the fresh one-logit classifier and
    the pooler under it (dense + tanh over [CLS]): a sentence-transformers bi-encoder such as
    all-MiniLM-L6-v2 mean-pools and never trained its pooler (its weights have std 0.009; the pooled
    features of a pair average |0.06|), so the gradient into the transformer through it is ~1e-4 of
    the classifier's, and at the transformer's rate it stays so. Only the transformer's `decay_names`
    (the trainer's own `get_decay_parameter_names`: no biases, no norms) take its weight decay; the
    trainer builds the warm-up and decay schedule over these groups."""
    if training.head_lr is None:
        return None
    inner = getattr(model, "model", model)  # CrossEncoder wraps the AutoModelForSequenceClassification
    body = f"{inner.base_model_prefix}."  # "bert.": the loaded transformer; the rest ("classifier.") is new
    decay_names = set(decay_names)
    groups = {"head": [], "decay": [], "no_decay": []}
    for name, param in inner.named_parameters():
        if not param.requires_grad:
            continue
        if not name.startswith(body) or name.startswith(f"{body}pooler."):  # the pooler is the head's
            groups["head"].append(param)
        else:
            groups["decay" if name in decay_names else "no_decay"].append(param)
    if not groups["head"]:
        raise ValueError(f"no head parameters outside {inner.base_model_prefix!r} in {type(inner).__name__}")
    head_decay = training.weight_decay if training.head_weight_decay is None else training.head_weight_decay
    return torch.optim.AdamW(
        [
            {"params": groups["decay"], "lr": training.lr, "weight_decay": training.weight_decay},
            {"params": groups["no_decay"], "lr": training.lr, "weight_decay": 0.0},
            {"params": groups["head"], "lr": float(training.head_lr), "weight_decay": float(head_decay)},
        ],
        lr=training.lr,
    )


def cpu_has_bf16() -> bool:
    """Whether this CPU computes bf16 in hardware (oneDNN's check: AVX-512 BF16 or AMX), where bf16
    autocast is faster than fp32 (1.24x a cross-encoder step, 1.56x a bi-encoder one, on an AMX CPU)."""
    try:
        return bool(torch.ops.mkldnn._is_mkldnn_bf16_supported())
    except (AttributeError, RuntimeError):  # a torch built without oneDNN: no fast bf16 either
        return False


def precision_context(precision: str, device):
    """What a forward pass at `precision` runs in on `device` (a torch device or its name): bf16 autocast
    for "bf16", as `nearmiss.length_run` scores the length curve's bf16 models; nothing for "fp32"."""
    if precision not in PRECISIONS:
        raise ValueError(f"precision must be one of {', '.join(PRECISIONS)}, got {precision!r}")
    if precision == "fp32":
        return nullcontext()
    return torch.autocast(torch.device(device).type, dtype=torch.bfloat16)


def _labelled_pairs(columns: dict) -> dict:
    """A batch of (anchor, positive, negative) as BCE's pairs, each triplet's two side by side:
    (anchor, positive, 1.0), (anchor, negative, 0.0)."""
    n = len(columns["anchor"])
    return {
        "anchor": [a for a in columns["anchor"] for _ in range(2)],
        "candidate": [c for p, q in zip(columns["positive"], columns["negative"]) for c in (p, q)],
        "label": [1.0, 0.0] * n,
    }


def budget_rows(rows: pd.DataFrame, budget: int, batch_size: int, seed: int) -> pd.DataFrame:
    """Exactly `budget` rows of `rows`, in the order a map verifier of the same seed and batch size
    visits them (`verifiers.training`'s sampler: epoch after epoch without replacement), so the
    cross-encoder and the verifiers learn from the very same triplets, batch for batch."""
    if rows.empty:
        raise ValueError("no training rows: check the training data (notebook 01's triplets, the paraphrases)")
    order = np.concatenate(_sample_batches(len(rows), int(budget), int(batch_size), int(seed)))
    return rows.iloc[order].reset_index(drop=True)


def train_joint(
    model,
    rows: pd.DataFrame,
    training: JointTraining,
    seed: int = 42,
    show_progress: bool = False,
    batch: pd.DataFrame | None = None,
):
    """Train `model` on `training.budget_examples` triplets of `rows` (`budget_rows`) with
    sentence-transformers' CrossEncoderTrainer and `training.loss` (`joint_loss`; by default each anchor's
    positive against its hard negative and `num_negatives` other candidates of the batch, the loss the
    map verifiers train with, `verifiers.training.contrastive_loss`). "bce" sees the same triplets in the
    same steps, each as its two labelled pairs. `batch`: those triplets when the caller has them already
    (`fit_joint`), so they are drawn once. `training.precision` "bf16" is the trainer's `bf16=True` (bf16
    autocast over fp32 weights, on a CPU with `use_cpu`, as `retrieval.training.build_trainer` trains the
    length curve); "fp32" is fp32 on a GPU too. Returns a JSON-ready history."""
    if batch is None:
        batch = budget_rows(rows, training.budget_examples, training.batch_size, seed)
    steps = math.ceil(len(batch) / training.batch_size)
    dataset = _to_dataset(batch)
    per_step = training.batch_size
    if training.loss == "bce":  # a step's triplets as its 2 x batch_size pairs: the same steps, the same rows
        dataset = dataset.map(_labelled_pairs, batched=True, remove_columns=MNRL_COLUMNS)
        per_step = 2 * training.batch_size
    gpu = torch.cuda.is_available() and str(model.device) != "cpu"
    bf16 = training.precision == "bf16"
    if bf16 and gpu and not torch.cuda.is_bf16_supported():
        raise ValueError(f"precision bf16: this GPU ({torch.cuda.get_device_name()}) has no bf16; use fp32")
    if bf16 and not gpu and not cpu_has_bf16():
        # measured on an AMD EPYC (AVX2): the first step of a MiniLM-L6 BCE run took over 5 min, fp32's 49 s
        raise ValueError(
            f"precision bf16: this CPU ({torch.backends.cpu.get_cpu_capability()}) has no bf16 instructions "
            "(AVX-512 BF16 or AMX), so bf16 autocast runs emulated, many times slower than fp32; use fp32"
        )
    with tempfile.TemporaryDirectory(prefix="joint-train-") as tmp:
        args = CrossEncoderTrainingArguments(
            output_dir=tmp,
            num_train_epochs=1,  # one pass over the budget's rows, which already repeat the data as needed
            per_device_train_batch_size=per_step,
            learning_rate=training.lr,
            weight_decay=training.weight_decay,
            lr_scheduler_type="linear",
            warmup_steps=math.ceil(training.warmup_ratio * steps),
            seed=seed,
            data_seed=seed,
            bf16=bf16,
            use_cpu=not gpu,
            # In order, not NO_DUPLICATES: that sampler reorders and may shorten batches, and the budget
            # would then not be the verifiers' triplets.
            batch_sampler=_in_order_batches,
            dataloader_drop_last=False,  # the budget's last, short batch is seen, as the verifiers see it
            save_strategy="no",
            logging_steps=max(1, steps // 20),
            report_to="none",
            disable_tqdm=not show_progress,
        )
        trainer = CrossEncoderTrainer(model=model, args=args, train_dataset=dataset, loss=joint_loss(model, training))
        inner = getattr(model, "model", model)
        optimizer = joint_optimizer(model, training, trainer.get_decay_parameter_names(inner))
        if optimizer is not None:  # two rates; one rate: the trainer makes its own
            trainer.optimizer = optimizer  # the trainer schedules its groups
        if not show_progress:  # the losses stay in the history; the console keeps the tables
            trainer.remove_callback(PrinterCallback)
        start = time.perf_counter()
        trainer.train()
        seconds = time.perf_counter() - start
    model.eval()
    return {
        "settings": training.settings(),
        "precision": training.precision,
        "seed": int(seed),
        "n_rows": len(rows),
        "rows_sha1": data_sha1(batch[MNRL_COLUMNS]),
        "steps": int(trainer.state.global_step),
        "examples_seen": len(batch),
        "loss": [float(e["loss"]) for e in trainer.state.log_history if "loss" in e],
        "train_seconds": round(seconds, 3),
        "parameters": sum(p.numel() for p in model.parameters() if p.requires_grad),
        "device": str(model.device),
    }


def fit_joint(
    backbone: str,
    rows: pd.DataFrame,
    folder: str | Path,
    training: JointTraining,
    seed: int = 42,
    device=None,
    show_progress: bool = False,
):
    """(CrossEncoder, history): trained as `train_joint` and saved in `folder`, or loaded from there
    when a finished run with the same settings (precision included), seed and triplets is there (a cut
    grid resumes); a run of other settings there is trained again, never loaded."""
    folder = Path(folder)
    batch = budget_rows(rows, training.budget_examples, training.batch_size, seed)
    expected = {"settings": training.settings(), "seed": int(seed), "rows_sha1": data_sha1(batch[MNRL_COLUMNS])}
    if (folder / JOINT_FILE).exists():
        history = read_json(folder / JOINT_FILE, recover=f"delete {folder} and run the command again")
        history = {**history, "settings": _recorded_settings(history)}
        if {k: history.get(k) for k in expected} == expected:
            with quiet_transformers():
                model = CrossEncoder(str(folder), device=device)
            return model, {**history, "loaded": True}
    model = joint_model(backbone, seed=seed, max_length=training.max_length, device=device)
    history = train_joint(model, rows, training, seed=seed, show_progress=show_progress, batch=batch)
    # Saved beside the folder and moved into place, joint.json last: a folder with joint.json is whole.
    folder.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{folder.name}.", dir=folder.parent))
    model.save_pretrained(str(staging))
    if folder.exists():
        shutil.rmtree(folder)
    staging.rename(folder)
    write_json(folder / JOINT_FILE, {**history, "backbone": str(backbone)})
    return model, {**history, "loaded": False}


def _recorded_settings(history: dict) -> dict | None:
    """A finished run's recorded settings with its precision and head rate: a run recorded before the
    head's own rate trained everything at `lr` (head_lr None); one recorded before the precision option
    trained fp32 on a CPU; on a GPU it trained in bf16 where supported, so it matches neither (None)."""
    settings = history.get("settings")
    if not isinstance(settings, dict):
        return settings
    settings = {"head_lr": None, "head_weight_decay": None, "lr_named": False, **settings}
    if "precision" in settings:
        return settings
    if str(history.get("device", "cpu")) != "cpu":
        return {**settings, "precision": None}
    return {**settings, "precision": DEFAULT_PRECISION}


class JointScorer:
    """A trained CrossEncoder as a scorer of (query, document) pairs: its head's logit, higher = more
    alike. Callable, as `nearmiss.evaluation.near_miss_table` calls its scorers; `score_texts` is what
    `verifiers.rerank.Reranker` calls for a scorer that reads the two texts together rather than a map.
    `precision`: the one it trained in (`precision_context`), so a bf16 model is scored in bf16 autocast,
    as the length curve scores its bf16 models, and an fp32 one in fp32."""

    def __init__(self, model, batch_size: int = 64, name: str = SCORER, precision: str = DEFAULT_PRECISION):
        self.model, self.batch_size, self.name = model, int(batch_size), name
        self.precision = precision
        precision_context(precision, "cpu")  # an unknown precision fails here, not at the first score

    def score_texts(self, pairs: Sequence) -> np.ndarray:
        """One score per pair. The raw logit, not the sigmoid `predict` applies by default: a saturated
        sigmoid ties high scores, and AUC and pairwise accuracy read ties as half right."""
        if not len(pairs):
            return np.zeros(0)
        with precision_context(self.precision, self.model.device):
            scores = self.model.predict(
                [[str(a), str(b)] for a, b in pairs],
                batch_size=self.batch_size,
                activation_fn=torch.nn.Identity(),
                convert_to_numpy=True,  # as float32: predict casts the logits before numpy
                show_progress_bar=False,
            )
        return np.asarray(scores, dtype=float).reshape(-1)

    __call__ = score_texts


@dataclass(frozen=True)
class JointRun:
    """One trained cross-encoder of the grid: what it trained on and its scorer."""

    train_data: str
    budget: int
    seed: int
    # its folder, verifiers/<variant>/seed<seed>/CE-end2end/ (balanced-joint-b8192, ...-joint-bce-bf16-b8192)
    variant: str
    scorer: JointScorer
    precision: str = DEFAULT_PRECISION


def run_joint_grid(
    rows_by_data: dict,
    sets: dict,
    backbone: str,
    work_dir,
    training: JointTraining,
    seeds: Sequence[int] = (42, 43, 44),
    budgets: Sequence[int] = (8192,),
    results_dir=None,
    device=None,
    **labels,
):
    """Train a cross-encoder per training-data kind (`rows_by_data`: `verifiers.data.training_rows`)
    x budget x seed, each into `verifiers/<kind>-<joint_size>-b<budget>/seed<seed>/CE-end2end/` under
    `work_dir` (beside the map verifiers; a finished one is loaded), and score it on notebook 04's
    near-miss sets (`sets`: `nearmiss.evaluation.eval_sets`) with `evaluate_sets`, the verifiers' own
    table code. Seed by seed, as `verifiers.study.run_study`, so a cut run has every kind at the first seeds.

    Returns (runs, tidy, fitted): one row per model (train_data, loss, precision, budget, seed, steps,
    examples_seen, train_seconds, eval_seconds, ...), the tidy near-miss rows in notebook 04's verifiers.parquet
    shape (variant CE-end2end, size `joint_size(training.loss, training.precision)`, `loss`, `precision`,
    `budget`, `labels` such as profile), scored at the training's precision,
    and the `JointRun`s for reranking. With `results_dir`, both tables are appended there after each
    model (`RESULTS`, `RUNS`). The trainer's progress bar and its loss every 5% of the steps are printed."""
    runs, tidies, fitted = [], [], []
    for seed in seeds:
        for budget in budgets:
            for train_data, rows in rows_by_data.items():
                size = joint_size(
                    training.loss, training.precision, training.head_lr, training.lr if training.lr_named else None
                )
                variant = variant_name(train_data, size) + budget_suffix(budget)
                folder = verifier_dir(work_dir, variant, seed, LABEL)
                at = training.replace(budget_examples=int(budget))
                # a model trains for an hour on a CPU: its printed loss shows early whether it learns
                model, history = fit_joint(backbone, rows, folder, at, seed=seed, device=device, show_progress=True)
                scorer = JointScorer(model, precision=training.precision)
                start = time.perf_counter()
                table = N.evaluate_sets({LABEL: scorer}, sets)
                eval_seconds = time.perf_counter() - start
                run = {
                    "backbone": backbone,
                    "train_data": train_data,
                    "loss": training.loss,
                    "precision": training.precision,
                    "budget": int(budget),
                    "seed": int(seed),
                    "verifier_variant": variant,
                    "n_rows": history["n_rows"],
                    "steps": history["steps"],
                    "examples_seen": history["examples_seen"],
                    "parameters": history["parameters"],
                    "train_seconds": history["train_seconds"],
                    "eval_seconds": round(eval_seconds, 3),
                    "loaded": history["loaded"],
                    "device": history["device"],
                    "folder": str(folder),
                    **labels,
                }
                tidy = N.to_tidy(
                    table,
                    "",
                    backbone,
                    seed,
                    verifier_variant=variant,
                    train_data=train_data,
                    size=size,
                    loss=training.loss,
                    precision=training.precision,
                    recipe="equal",
                    budget=int(budget),
                    parameters=history["parameters"],
                    examples_seen=history["examples_seen"],
                    **labels,
                )
                if results_dir is not None:
                    append_results(tidy, Path(results_dir) / f"{RESULTS}.parquet", key=RESULTS_KEY)
                    write_runs(pd.DataFrame([run]), results_dir)
                runs.append(run)
                tidies.append(tidy)
                fitted.append(JointRun(train_data, int(budget), int(seed), variant, scorer, training.precision))
    return pd.DataFrame(runs), pd.concat(tidies, ignore_index=True), fitted


def write_runs(runs: pd.DataFrame, results_dir) -> pd.DataFrame:
    """Append one row per model to results/crossencoder_runs.parquet (a model trained again replaces
    its row) and write the whole table beside it as CSV, for reading without pandas. A model is its
    folder (`verifier_variant`: rows, loss, precision and budget) at a backbone and seed, so a bf16 model's
    row stands beside the fp32 one's; rows written before the `precision` column have it blank (fp32)."""
    key = ["backbone", "train_data", "loss", "budget", "seed", "verifier_variant"]
    merged = append_results(runs, Path(results_dir) / f"{RUNS}.parquet", key=key)
    write_table(merged, Path(results_dir) / f"{RUNS}.csv")
    return merged
