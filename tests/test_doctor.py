"""`compsense doctor`: exits 1 naming what a profile needs and lacks, with a fix for each; 0 when all is there."""

from __future__ import annotations

import pytest

from compsense import doctor
from compsense.__main__ import main as cli
from compsense.core.paths import smoke_data_dir
from compsense.core.storage import sha256_file
from compsense.data import release
from compsense.data.datasets import _LOCAL_FILES

SMOKE_DATA = ("condaqa", "mrpc", "nfcorpus", "scifact", "stsb", "sugarcrepe")


def _data_dir(root, names=SMOKE_DATA):
    for name in names:
        (root / name).mkdir(parents=True)
        for rel in _LOCAL_FILES.get(name, ("corpus.jsonl",)):
            (root / name / rel).parent.mkdir(parents=True, exist_ok=True)
            (root / name / rel).write_text("")
    return root


def _manifest_of(root, names=SMOKE_DATA) -> dict:
    """A manifest whose entries are the files found under root/<name>, with their sizes and sha256."""
    datasets = {}
    for name in names:
        files = {
            str(p.relative_to(root / name)): {"bytes": p.stat().st_size, "sha256": sha256_file(p)}
            for p in sorted((root / name).rglob("*"))
            if p.is_file()
        }
        datasets[name] = {"folder": name, "files": files, "get": f"https://example.org/{name}.zip"}
    return {"datasets": datasets}


@pytest.fixture
def machine_ok(monkeypatch):
    """Runner, kernel, pip and backbones as found: the data checks are under test."""
    monkeypatch.setattr(doctor, "tool_checks", lambda nbs: [doctor.Check("kernel python3", True, "stub")])
    monkeypatch.setattr(doctor, "_backbone_checks", lambda params: [doctor.Check("backbone stub", True, "stub")])


def test_missing_data_exits_1_and_says_how_to_fix(tmp_path, monkeypatch, capsys, machine_ok):
    full = _data_dir(tmp_path / "full")
    monkeypatch.setattr(release, "load_manifest", lambda path=None: _manifest_of(full))
    monkeypatch.setenv("COMPSENSE_DATA_DIR", str(_data_dir(tmp_path / "mine", ["mrpc", "nfcorpus"])))
    assert cli(["doctor", "--profile", "local"]) == 1
    out = capsys.readouterr().out
    flat = " ".join(out.split())  # the lines are wrapped to 100 columns
    for name in ("scifact", "sugarcrepe", "stsb", "condaqa"):
        assert f"MISSING  data {name}" in out
        assert f"fix: put {name}/ in {tmp_path / 'mine'} (get it from https://example.org/{name}.zip;" in flat
    assert "ok       data mrpc" in out and "ok       data nfcorpus" in out
    assert "4 missing for profile 'local'" in out


def test_everything_there_exits_0(tmp_path, monkeypatch, capsys, machine_ok):
    monkeypatch.setenv("COMPSENSE_DATA_DIR", str(_data_dir(tmp_path)))
    monkeypatch.setattr(release, "load_manifest", lambda path=None: _manifest_of(tmp_path))
    assert doctor.main("local") == 0
    assert "everything profile 'local' needs is here" in capsys.readouterr().out


def test_no_data_folder_names_the_variable(tmp_path, monkeypatch, machine_ok):
    monkeypatch.setenv("COMPSENSE_DATA_DIR", str(tmp_path / "absent"))
    data = [c for c in doctor.profile_checks("local") if c.what.startswith("data ")]
    assert data and not any(c.ok for c in data)
    assert all("COMPSENSE_DATA_DIR" in c.fix or "nq_path" in c.fix for c in data)
    assert any("data/MANIFEST.json" in c.fix for c in data)


def test_smoke_profile_needs_only_the_projects_own_data(tmp_path, monkeypatch, capsys, machine_ok):
    """data/smoke is committed: the smoke profile is complete in a fresh clone, whatever
    COMPSENSE_DATA_DIR says (the profile's data_dir wins), and no checksum of the external sets applies."""
    monkeypatch.setenv("COMPSENSE_DATA_DIR", str(tmp_path / "absent"))
    checks = [c for c in doctor.profile_checks("smoke") if c.what.startswith("data ")]
    assert {c.what for c in checks} == {f"data {name}" for name in SMOKE_DATA}
    assert all(c.ok and str(smoke_data_dir()) in c.detail for c in checks), checks


def test_manifest_check_names_each_missing_or_changed_file_and_where_to_get_it(tmp_path):
    _data_dir(tmp_path, ["scifact"])
    (tmp_path / "scifact" / "corpus.jsonl").write_text('{"_id": "1", "text": "x"}\n')
    entry = _manifest_of(tmp_path, ["scifact"])["datasets"]["scifact"]
    assert release.manifest_check("scifact", tmp_path, entry).ok

    (tmp_path / "scifact" / "qrels" / "test.tsv").unlink()
    check = release.manifest_check("scifact", tmp_path, entry)
    assert not check.ok and f"missing {tmp_path / 'scifact' / 'qrels' / 'test.tsv'}" in check.detail
    assert "https://example.org/scifact.zip" in check.fix and "data/MANIFEST.json" in check.fix

    (tmp_path / "scifact" / "qrels" / "test.tsv").write_text("")
    (tmp_path / "scifact" / "corpus.jsonl").write_text('{"_id": "2", "text": "y"}\n')  # same size, other bytes
    check = release.manifest_check("scifact", tmp_path, entry)
    assert not check.ok and f"{tmp_path / 'scifact' / 'corpus.jsonl'} has another sha256" in check.detail
    assert "https://example.org/scifact.zip" in check.fix
    (tmp_path / "scifact" / "corpus.jsonl").write_text("{}\n")
    check = release.manifest_check("scifact", tmp_path, entry)
    assert not check.ok and "has 3 bytes, expected 26" in check.detail
    assert release.manifest_check("scifact", tmp_path, entry, checksums=False).ok  # layout only (smoke data)

    check = release.manifest_check("nfcorpus", tmp_path, {"folder": "nfcorpus", "files": {}, "get": "BEIR"})
    assert not check.ok and f"no folder {tmp_path / 'nfcorpus'}" in check.detail
    assert check.fix.startswith(f"put nfcorpus/ in {tmp_path} (get it from BEIR;")


def test_the_project_manifest_lists_every_external_dataset_the_profiles_read():
    manifest = release.load_manifest()
    listed = manifest["datasets"]
    for profile in ("local", "study", "paper"):
        assert set(doctor.profile_data_needs(profile)) <= set(listed), profile
    for name, entry in listed.items():
        assert entry["licence"] and entry["get"] and entry["name"], name
        for rel, f in entry["files"].items():
            assert len(f["sha256"]) == 64 and f["bytes"] > 0 and f["records"] > 0, (name, rel)
    assert listed["nfcorpus"]["files"].keys() >= {"qrels/train.tsv", "qrels/test.tsv"}
    assert manifest["smoke"]["folder"] == "data/smoke" and "scripts/make_smoke_data.py" in manifest["smoke"]["licence"]


def test_offline_backbone_without_weights_is_missing(monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    (check,) = doctor._backbone_checks({"nb": {"backbones": ["gte-small"]}})
    assert not check.ok and "HF_HUB_OFFLINE=0" in check.fix


def test_tool_checks_report_what_pip_and_jupyter_say(tmp_path, monkeypatch):
    """papermill, `pip check` and `jupyter kernelspec list` as the tools answer; a kernel the notebooks
    name that is not listed is missing, with the command that installs it."""
    nb = tmp_path / "nb.ipynb"
    nb.write_text('{"metadata": {"kernelspec": {"name": "no-such-kernel-compsense"}}, "cells": []}')
    checks = {c.what: c for c in doctor.tool_checks([nb])}
    assert checks["papermill"].ok and checks["pip check"].ok, checks
    missing = checks["kernel no-such-kernel-compsense"]
    assert not missing.ok and "no such kernelspec" in missing.detail and "ipykernel install" in missing.fix

    broken = doctor.subprocess.CompletedProcess([], 1, "foo 1.0 has requirement bar>=2, but you have bar 1.0.", "")
    monkeypatch.setattr(doctor, "_tool", lambda *argv: broken if argv[0] == "pip" else None)
    checks = {c.what: c for c in doctor.tool_checks([nb])}
    assert (
        not checks["pip check"].ok
        and "bar>=2" in checks["pip check"].detail
        and "constraints.txt" in checks["pip check"].fix
    )
    kernel = checks["kernel no-such-kernel-compsense"]
    assert not kernel.ok and "`jupyter kernelspec list` failed" in kernel.detail


def test_what_the_profile_does_not_use_is_listed_apart_as_optional_and_never_missing(
    tmp_path, monkeypatch, capsys, machine_ok
):
    """NanoBEIR and the hub backbones are the paper profile's: for the local profile they are optional,
    read from every profile's parameters, and their absence neither fails nor reads as a problem."""
    monkeypatch.setenv("COMPSENSE_DATA_DIR", str(_data_dir(tmp_path)))
    monkeypatch.setattr(release, "load_manifest", lambda path=None: _manifest_of(tmp_path))
    backbones = {"minilm-l6": "package x", "minilm-l12": "unavailable offline", "tiny-bert": "built"}
    monkeypatch.setattr(doctor, "offline_status", lambda: backbones)
    assert doctor.main("local") == 0
    out = capsys.readouterr().out
    assert max(len(line) for line in out.splitlines()) <= 100
    needed, optional = out.split("\nneeded by profile 'local'\n")[1].split("\noptional: not used by profile 'local'")
    assert "data scifact" in needed and "nanobeir" not in needed and "minilm-l12" not in needed
    lines = {
        line.split()[1]: line
        for line in optional.splitlines()
        if line.startswith("  backbone ") or line.startswith("  data ")
    }
    assert "unavailable offline" in lines["minilm-l12"] and lines["minilm-l12"].endswith("used by profile paper")
    assert "missing" in lines["nanobeir"] and lines["nanobeir"].endswith("used by profile paper")
    assert lines["tiny-bert"].endswith("used by profile smoke")
    assert "minilm-l6" not in lines and "scifact" not in lines  # the local profile uses them
    assert "everything profile 'local' needs is here" in out
    # the paper profile needs NanoBEIR and the hub backbones: there they are checked, not optional
    paper = [what for what, _, _ in doctor.optional_items("paper", backbones, {"nanobeir": False, "scifact": True})]
    assert "data nanobeir" not in paper and "backbone minilm-l12" not in paper and "backbone tiny-bert" in paper
