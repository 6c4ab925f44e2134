import json

import pytest

from compsense.data.datasets import DataError, load_condaqa
from compsense.nearmiss.evaluation import condaqa_pairs

ORIGINAL = "Cats purr. The shop does not open on Sundays. It sells bread."


def _row(pid, edit, text, qid="q1"):
    return {
        "QuestionID": qid,
        "original cue": "not",
        "PassageEditID": edit,
        "original passage": ORIGINAL,
        "SampleID": hash((pid, edit, qid)) % 10_000,
        "label": "YES",
        "original sentence": "The shop does not open on Sundays.",
        "sentence2": "Is it open?",
        "PassageID": pid,
        "sentence1": text,
    }


def _write(tmp_path, rows):
    folder = tmp_path / "condaqa"
    folder.mkdir()
    (folder / "condaqa_dev.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return tmp_path


def test_load_condaqa_keeps_one_record_per_passage_edit(tmp_path):
    rows = [
        _row(7, 0, ORIGINAL),
        _row(7, 0, ORIGINAL, qid="q2"),
        _row(7, 1, "Cats purr. The shop is closed on Sundays. It sells bread."),
        _row(7, 3, "Cats purr. The shop opens on Sundays. It sells bread."),
        _row(8, 0, "Dogs bark. They are not quiet."),
    ]
    records = load_condaqa(data_dir=_write(tmp_path, rows))
    assert [(r["passage_id"], r["edit_id"], r["edit"]) for r in records] == [
        ("7", 0, "original"),
        ("7", 1, "paraphrase"),
        ("7", 3, "affirmative"),
        ("8", 0, "original"),
    ]
    assert records[0]["original_sentence"] == "The shop does not open on Sundays." and records[0]["cue"] == "not"


def test_load_condaqa_rejects_bad_files_with_the_fix(tmp_path):
    rows = [_row(7, 0, ORIGINAL), _row(7, 0, "Another text.", qid="q2")]
    with pytest.raises(DataError, match="two different texts"):
        load_condaqa(data_dir=_write(tmp_path, rows))
    with pytest.raises(FileNotFoundError, match="condaqa"):
        load_condaqa(data_dir=tmp_path / "nowhere")


def test_condaqa_pairs_cut_every_edit_at_the_same_sentences(tmp_path):
    rows = [
        _row(7, 0, ORIGINAL),
        _row(7, 1, "Cats purr. The shop is closed on Sundays. It sells bread."),
        _row(7, 3, "Cats purr. The shop opens on Sundays. It sells bread."),
        _row(9, 0, ORIGINAL),
        _row(9, 3, "Cats purr. The shop opens on Sundays. It sells bread."),
    ]  # no edit 1
    positives, near_misses = condaqa_pairs(data_dir=_write(tmp_path, rows))
    assert positives.values.tolist() == [["The shop does not open on Sundays.", "The shop is closed on Sundays.", "7"]]
    assert near_misses.values.tolist() == [
        ["The shop does not open on Sundays.", "The shop opens on Sundays.", "7", "affirmative"]
    ]
    whole, _ = condaqa_pairs(data_dir=tmp_path, unit="passage")
    assert whole.sentence1.tolist() == [ORIGINAL]
    with pytest.raises(ValueError, match="unit"):
        condaqa_pairs(data_dir=tmp_path, unit="word")
