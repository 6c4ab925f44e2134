"""Atomic writes and tidy tables: a crash never leaves a half-written file behind.

Every result file is written to a temporary name in the same folder and renamed into place
(`os.replace` is atomic on POSIX and Windows within one filesystem).
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

import pandas as pd

from compsense.core.paths import code_commit

TIDY_COLUMNS = ["run", "backbone", "variant", "seed", "dataset", "metric", "value"]
# What names one tidy result; tables with more dimensions extend it (nearmiss NEARMISS_KEY, rerank RERANK_KEY).
TIDY_KEY = [c for c in TIDY_COLUMNS if c != "value"]
RERUN = "delete it (or restore a copy) and re-run the notebook that writes it"
# The code commit that computed a row (`stamp_commit`); never part of a key: a row recomputed at another
# commit replaces the old one.
COMMIT = "commit"
# Columns holding commits: always text. A short hash can be all digits ("8455727") or read as a float
# ("5e12345" -> inf, "0123456" -> 123456), which pandas' type guessing would turn into a number.
TEXT_COLUMNS = (COMMIT, "row_commits")


class CorruptFile(ValueError):
    """A file the project wrote cannot be read back (cut short, or edited by hand); the message names
    the file and how to recover."""


@contextmanager
def atomic_path(path: str | os.PathLike) -> Iterator[Path]:
    """Yield a temporary path next to `path`; on success it replaces `path`, on error it is removed."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    os.close(fd)
    tmp_path = Path(tmp)
    mode = 0o666 & ~_umask()  # mkstemp makes 0600; results should read like any other file
    os.chmod(tmp_path, mode)
    try:
        yield tmp_path
        os.chmod(tmp_path, mode)  # again: some writers (safetensors) re-create the file as 0600
        os.replace(tmp_path, path)
    except BaseException:
        tmp_path.unlink(missing_ok=True)
        raise


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def write_text(path: str | os.PathLike, text: str) -> Path:
    with atomic_path(path) as tmp:
        tmp.write_text(text, encoding="utf-8")
    return Path(path)


def write_json(path: str | os.PathLike, obj) -> Path:
    return write_text(path, json.dumps(obj, indent=2, sort_keys=True, default=str) + "\n")


def write_table(df: pd.DataFrame, path: str | os.PathLike) -> Path:
    """Write a table atomically; the format follows the suffix (.parquet, .csv, .jsonl)."""
    path = Path(path)
    with atomic_path(path) as tmp:
        if path.suffix == ".parquet":
            df.to_parquet(tmp, index=False)
        elif path.suffix == ".csv":
            df.to_csv(tmp, index=False)
        elif path.suffix == ".jsonl":
            df.to_json(tmp, orient="records", lines=True, force_ascii=False)
        else:
            raise ValueError(f"{path}: unknown table format {path.suffix!r}; use .parquet, .csv or .jsonl")
    return path


def read_csv(source, **kwargs) -> pd.DataFrame:
    """`pd.read_csv` with the commit columns (`TEXT_COLUMNS`) kept as text; `source` a path or buffer."""
    dtype = kwargs.pop("dtype", {})
    if isinstance(dtype, dict):  # dtype=str already reads every column as text
        dtype = {name: str for name in TEXT_COLUMNS} | dtype
    return pd.read_csv(source, dtype=dtype, **kwargs)


def read_table(path: str | os.PathLike, recover: str = RERUN) -> pd.DataFrame:
    """A table written by `write_table`; one that cannot be parsed raises CorruptFile naming it and `recover`."""
    path = Path(path)
    if not path.exists():
        raise FileNotFoundError(f"{path} does not exist; run the notebook that writes it first")
    readers = {
        ".parquet": pd.read_parquet,
        ".csv": read_csv,
        ".jsonl": lambda p: pd.read_json(p, orient="records", lines=True),
    }
    if path.suffix not in readers:
        raise ValueError(f"{path}: unknown table format {path.suffix!r}; use .parquet, .csv or .jsonl")
    import pyarrow

    try:
        return readers[path.suffix](path)
    except (pyarrow.ArrowException, OSError, ValueError, UnicodeDecodeError) as err:
        raise CorruptFile(f"{path}: not a readable {path.suffix} table ({err}). Fix: {recover}") from None


_SHA256: dict[tuple, str] = {}  # (path, size, mtime) -> hex digest: a file is hashed once per process


def sha256_file(path: str | os.PathLike) -> str:
    """Hex SHA-256 of a file, read in 1 MiB blocks; memoised per (path, size, mtime)."""
    path = Path(path)
    st = path.stat()
    key = (str(path), st.st_size, st.st_mtime_ns)
    if key not in _SHA256:
        h = hashlib.sha256()
        with open(path, "rb") as fh:
            for block in iter(lambda: fh.read(1 << 20), b""):
                h.update(block)
        _SHA256[key] = h.hexdigest()
    return _SHA256[key]


def file_digest(path: Path) -> str:
    """ "size:sha256" of a file: what the runner records of each data file a stage read."""
    return f"{path.stat().st_size}:{sha256_file(path)}"


def read_json(path: str | os.PathLike, recover: str = RERUN):
    """A JSON file written by `write_json`; one that cannot be parsed raises CorruptFile naming it and `recover`."""
    path = Path(path)
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (ValueError, UnicodeDecodeError) as err:
        raise CorruptFile(f"{path}: not readable JSON ({err}). Fix: {recover}") from None


def tidy(rows: list[dict], **constants) -> pd.DataFrame:
    """Build a tidy results table (one row per run x dataset x metric) from dict rows.

    Missing standard columns are filled from `constants` or left empty, extra columns are kept.
    """
    df = pd.DataFrame([{**constants, **r} for r in rows])
    for col in TIDY_COLUMNS:
        if col not in df.columns:
            df[col] = None
    return df[TIDY_COLUMNS + [c for c in df.columns if c not in TIDY_COLUMNS]]


def append_results(df: pd.DataFrame, path: str | os.PathLike, key: list[str] | None = None) -> pd.DataFrame:
    """Merge new tidy rows into the table at `path` (replacing rows with the same key), atomically,
    and under a lock on the table: two processes appending at once both keep their rows (without it,
    each reads the old table and the later write drops the other's). Each new row records the commit that
    computed it (`stamp_commit`)."""
    path = Path(path)
    key = key or TIDY_KEY
    path.parent.mkdir(parents=True, exist_ok=True)
    # Why here, on the rows being added (not in tidy(), not on the merged table): a stage adds a row when
    # it computes it (per-query and cost rows too, which tidy() never builds), and a result it reuses (an
    # evaluation of the same model on the same data, an AUC on the same pairs) stays in the table and is
    # not added again. So the commit running now is the one that computed the new rows, and the rows
    # already here keep theirs through every later merge (an old table's rows have none: blank, "not
    # recorded"); a row passed back in keeps the commit it carries.
    df = stamp_commit(df)
    with exclusive(path.parent / f".{path.name}.lock"):
        if path.exists():
            old = read_table(path)
            merged = pd.concat([old, df], ignore_index=True)
            merged = merged.drop_duplicates(subset=[k for k in key if k in merged.columns], keep="last")
        else:
            merged = df
        write_table(merged.reset_index(drop=True), path)
    return merged


def stamp_commit(df: pd.DataFrame) -> pd.DataFrame:
    """`df` with a `commit` column (`paths.code_commit`: the runner's start commit, else HEAD's) on the
    rows that have none; rows that carry one keep it. A copy: the caller's frame is left as it is."""
    if COMMIT in df.columns and df[COMMIT].notna().all():
        return df
    out = df.copy()
    out[COMMIT] = out[COMMIT].fillna(code_commit()) if COMMIT in out.columns else code_commit()
    return out


@contextmanager
def exclusive(lock_path: Path) -> Iterator[None]:
    """Hold an exclusive OS lock on `lock_path` (waiting for it), released on exit or when the process dies."""
    with open(lock_path, "a+b") as fh:
        try:
            import fcntl
        except ImportError:  # Windows: msvcrt retries for 10 s, then raises
            import msvcrt

            msvcrt.locking(fh.fileno(), msvcrt.LK_LOCK, 1)
            yield
            return
        fcntl.flock(fh.fileno(), fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh.fileno(), fcntl.LOCK_UN)
