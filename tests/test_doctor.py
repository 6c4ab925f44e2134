"""`compsense doctor`: exits 1 naming what a profile needs and lacks, with a fix for each; 0 when all is there."""
from __future__ import annotations

import pytest

from compsense import doctor
from compsense.__main__ import main as cli
from compsense.data import _LOCAL_FILES

SMOKE_DATA = ("condaqa", "mrpc", "nfcorpus", "scifact", "stsb", "sugarcrepe")


def _data_dir(root, names=SMOKE_DATA):
    for name in names:
        (root / name).mkdir(parents=True)
        for rel in _LOCAL_FILES.get(name, ()):
            (root / name / rel).parent.mkdir(parents=True, exist_ok=True)
            (root / name / rel).write_text("")
    return root


@pytest.fixture
def machine_ok(monkeypatch):
    """Runner, kernel and lab extensions as found: the data and Chromium checks are under test."""
    monkeypatch.setattr(doctor, "_notebook_checks", lambda nbs: [doctor.Check("kernel python3", True, "stub")])
    monkeypatch.setattr(doctor, "_widget_checks", lambda: [])
    monkeypatch.setattr(doctor, "find_chromium", lambda: "/usr/bin/chromium")


def test_missing_data_exits_1_and_says_how_to_fix(tmp_path, monkeypatch, capsys, machine_ok):
    monkeypatch.setenv("COMPSENSE_DATA_DIR", str(_data_dir(tmp_path, ["mrpc", "nfcorpus"])))
    assert cli(["doctor", "--profile", "smoke"]) == 1
    out = capsys.readouterr().out
    for name in ("scifact", "sugarcrepe", "stsb", "condaqa"):
        assert f"MISSING  data {name}" in out
        assert f"fix: put the dataset folder in {tmp_path}: {name}/" in out
    assert "ok       data mrpc" in out and "ok       backbone tiny-bert" in out
    assert "4 missing for profile 'smoke'" in out


def test_everything_there_exits_0(tmp_path, monkeypatch, capsys, machine_ok):
    monkeypatch.setenv("COMPSENSE_DATA_DIR", str(_data_dir(tmp_path)))
    assert doctor.main("smoke", png=True) == 0
    assert "everything profile 'smoke' needs is here" in capsys.readouterr().out


def test_no_data_folder_names_the_variable(tmp_path, monkeypatch, machine_ok):
    monkeypatch.setenv("COMPSENSE_DATA_DIR", str(tmp_path / "absent"))
    data = [c for c in doctor.profile_checks("smoke", png=False) if c.what.startswith("data ")]
    assert data and not any(c.ok for c in data)
    assert all("COMPSENSE_DATA_DIR" in c.fix for c in data)


def test_png_needs_chromium(monkeypatch):
    pytest.importorskip("kaleido")
    monkeypatch.setattr(doctor, "find_chromium", lambda: None)
    check = doctor._chromium_check()
    assert not check.ok and "apt-get install -y chromium" in check.fix


def test_offline_backbone_without_weights_is_missing(monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    (check,) = doctor._backbone_checks({"nb": {"backbones": ["gte-small"]}})
    assert not check.ok and "HF_HUB_OFFLINE=0" in check.fix


def test_kernel_and_lab_extension_checks(tmp_path, monkeypatch):
    pytest.importorskip("jupyter_client")
    missing = doctor._kernel_check("no-such-kernel-compsense")
    assert not missing.ok and "ipykernel install" in missing.fix
    import jupyter_core.paths

    monkeypatch.setattr(jupyter_core.paths, "jupyter_path", lambda *parts: [str(tmp_path)])
    assert not any(c.ok for c in doctor._widget_checks() if c.what.startswith("lab extension"))
    for ext in doctor.LAB_EXTENSIONS:
        (tmp_path / ext).mkdir(parents=True)
        (tmp_path / ext / "package.json").write_text("{}")
    assert all(c.ok for c in doctor._widget_checks() if c.what.startswith("lab extension"))
