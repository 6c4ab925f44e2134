import pandas as pd
import pytest

from compsense.core import storage as io


def test_write_table_is_atomic_on_failure(tmp_path):
    path = tmp_path / "results.parquet"
    io.write_table(pd.DataFrame({"a": [1, 2]}), path)

    class Boom(pd.DataFrame):
        def to_parquet(self, *args, **kwargs):
            raise RuntimeError("disk full")

    with pytest.raises(RuntimeError):
        io.write_table(Boom({"a": [3]}), path)
    assert io.read_table(path)["a"].tolist() == [1, 2]  # the old table survives intact
    assert [p.name for p in tmp_path.iterdir()] == ["results.parquet"]  # no temp file left behind


@pytest.mark.parametrize("suffix", [".parquet", ".csv", ".jsonl"])
def test_table_round_trip(tmp_path, suffix):
    df = pd.DataFrame({"x": [1, 2], "y": ["a", "b"]})
    pd.testing.assert_frame_equal(io.read_table(io.write_table(df, tmp_path / f"t{suffix}")), df)


def test_unknown_format_and_missing_file_have_clear_errors(tmp_path):
    with pytest.raises(ValueError, match="unknown table format"):
        io.write_table(pd.DataFrame({"a": [1]}), tmp_path / "t.xlsx")
    with pytest.raises(FileNotFoundError, match="run the notebook"):
        io.read_table(tmp_path / "missing.parquet")


def test_append_results_replaces_rows_with_the_same_key(tmp_path):
    path = tmp_path / "r.parquet"
    io.append_results(io.tidy([{"metric": "ndcg@10", "value": 0.1}], run="r1", dataset="d"), path)
    io.append_results(
        io.tidy([{"metric": "ndcg@10", "value": 0.2}, {"metric": "acc@1", "value": 0.3}], run="r1", dataset="d"), path
    )
    table = io.read_table(path)
    assert sorted(zip(table.metric, table.value)) == [("acc@1", 0.3), ("ndcg@10", 0.2)]
    assert list(table.columns[:7]) == io.TIDY_COLUMNS


def test_written_files_get_normal_permissions(tmp_path):
    import os
    import stat

    path = io.write_text(tmp_path / "x.txt", "hello")
    expected = 0o666 & ~io._umask()
    assert stat.S_IMODE(os.stat(path).st_mode) == expected
    # a writer that replaces the temporary file with its own 0600 one (as safetensors does) is fixed too
    with io.atomic_path(tmp_path / "w.bin") as tmp:
        tmp.unlink()
        fd = os.open(tmp, os.O_CREAT | os.O_WRONLY, 0o600)
        os.close(fd)
    assert stat.S_IMODE(os.stat(tmp_path / "w.bin").st_mode) == expected


def test_truncated_table_names_the_file_and_the_fix(tmp_path):
    path = io.write_table(pd.DataFrame({"a": list(range(100))}), tmp_path / "results.parquet")
    path.write_bytes(path.read_bytes()[: path.stat().st_size // 2])  # a copy cut short
    with pytest.raises(io.CorruptFile, match=r"results\.parquet.*Fix: .*re-run"):
        io.read_table(path)
    with pytest.raises(io.CorruptFile, match=r"results\.parquet"):
        io.append_results(io.tidy([{"metric": "m", "value": 1.0}]), path)


def test_read_json_names_the_file_and_the_fix(tmp_path):
    path = io.write_json(tmp_path / "stages.json", {"01": {"fingerprint": "abc"}})
    assert io.read_json(path) == {"01": {"fingerprint": "abc"}}
    path.write_text(path.read_text()[:10])
    with pytest.raises(io.CorruptFile, match=r"stages\.json: not readable JSON.*Fix: delete it"):
        io.read_json(path, recover="delete it; every stage then re-runs once")
    with pytest.raises(FileNotFoundError):
        io.read_json(tmp_path / "absent.json")
