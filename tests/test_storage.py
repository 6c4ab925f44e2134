"""Result tables appended by several processes at once (compsense.core.storage.append_results)."""

from __future__ import annotations


def _append_many(path, who, n):
    import pandas as pd

    from compsense.core.storage import append_results

    for i in range(n):
        append_results(pd.DataFrame({"who": [who], "i": [i], "value": [1.0]}), path, key=["who", "i"])


def test_two_processes_appending_at_once_both_keep_their_rows(tmp_path):
    import multiprocessing as mp

    from compsense.core.storage import read_table

    path = tmp_path / "results" / "table.parquet"
    ctx = mp.get_context("spawn")
    procs = [ctx.Process(target=_append_many, args=(path, who, 15)) for who in ("a", "b")]
    for p in procs:
        p.start()
    for p in procs:
        p.join(120)
    assert [p.exitcode for p in procs] == [0, 0]
    assert len(read_table(path)) == 30  # without the lock one process's rows are lost
