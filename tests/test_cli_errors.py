"""The command line: an error a user can cause (an unknown model, a bad --rate, a bad --set) ends in one
line that names it and the fix, exit status 2; --debug shows the traceback instead."""

import pytest

from compsense.__main__ import main as cli
from compsense.core.encoders import BackboneUnavailable


def _one_line(err: str) -> str:
    assert "Traceback" not in err and len(err.strip().splitlines()) == 1, err
    return err


def _beir(folder):
    (folder / "qrels").mkdir(parents=True)
    (folder / "corpus.jsonl").write_text('{"_id": "d0", "title": "", "text": "a document"}\n')
    (folder / "queries.jsonl").write_text('{"_id": "q0", "text": "a query"}\n')
    (folder / "qrels" / "test.tsv").write_text("query-id\tcorpus-id\tscore\nq0\td0\t1\n")
    return folder


@pytest.mark.slow  # imports sentence-transformers (~10 s) to look the name up
def test_an_unknown_model_is_one_line_naming_the_offline_ones(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")  # offline: the hub is never asked
    args = ["evaluate", "no-such-model", str(_beir(tmp_path / "toy")), "--out", str(tmp_path / "out")]
    assert cli(args) == 2
    err = _one_line(capsys.readouterr().err)
    assert err.startswith("compsense evaluate: BackboneUnavailable: cannot load 'no-such-model'") and "minilm-l6" in err
    with pytest.raises(BackboneUnavailable):  # --debug: the error itself, with its traceback
        cli(["--debug", *args])


@pytest.mark.parametrize(
    "rate, message",
    [
        ("02/train/tiny-bert=-5", "the rate must be a number of units per second > 0, got '-5'"),
        ("02/train/tiny-bert=0", "the rate must be a number of units per second > 0, got '0'"),
        ("02/train/tiny-bert=fast", "the rate must be a number of units per second > 0, got 'fast'"),
        ("02/train/tiny-bert=nan", "the rate must be a number of units per second > 0, got 'nan'"),
        ("09/train=3", "no component 09/train; the components are 00/notebook"),
        ("02=3", "expected STAGE/COMPONENT[/BACKBONE]=UNITS_PER_S"),
    ],
)
def test_a_bad_rate_is_refused_in_one_line_before_anything_is_priced(rate, message, capsys):
    args = ["estimate", "--profile", "smoke", "--rate", rate, "--rate-device", "cpu", "--rate-source", "a test"]
    assert cli(args) == 2
    err = _one_line(capsys.readouterr().err)
    assert f"--rate {rate!r}: {message}" in err, err


def test_a_rate_passed_in_code_is_checked_too():
    from compsense import estimate as E

    with pytest.raises(ValueError, match=r"rate must be a number of units per second > 0, got -5"):
        E.estimate("smoke", rates={("02", "train", "tiny-bert"): {"rate": -5, "device": "cpu", "source": "x"}})


def test_a_full_disk_met_while_writing_is_one_line_naming_the_file(monkeypatch, capsys):
    from compsense import estimate as E

    def full(*args, **kwargs):
        raise OSError(28, "No space left on device", "/work/runs/local/results/rerank.parquet")

    monkeypatch.setattr(E, "estimate", full)
    assert cli(["estimate", "--profile", "smoke"]) == 2
    err = _one_line(capsys.readouterr().err)
    assert "No space left on device: '/work/runs/local/results/rerank.parquet'" in err, err
    with pytest.raises(OSError):
        cli(["--debug", "estimate", "--profile", "smoke"])
