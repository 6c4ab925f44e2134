"""benchmarks/bench_concurrency.py's arithmetic (the timed runs themselves are never a test)."""

from __future__ import annotations

import pytest

from scripts import load_benchmark


def _load():
    return load_benchmark("bench_concurrency")


def _worker(t0, t1, steps, batch=128):
    return {
        "t0": t0,
        "t1": t1,
        "steps": steps,
        "triplets": steps * batch,
        "triplets_per_s": steps * batch / (t1 - t0),
        "peak_memory_gib": None,
    }


def test_aggregate_counts_every_triplet_over_the_union_of_windows():
    bc = _load()
    # two trainings of 100 steps: one times 0-10 s, the other 5-15 s: 25,600 triplets over 15 s
    agg = bc.aggregate([_worker(0.0, 10.0, 100), _worker(5.0, 15.0, 100)])
    assert agg["procs"] == 2
    assert agg["aggregate_triplets_per_s"] == pytest.approx(25_600 / 15)
    assert agg["overlap_share"] == pytest.approx(5 / 15)
    assert agg["per_process_triplets_per_s"] == [pytest.approx(1280.0), pytest.approx(1280.0)]
    # windows that do not overlap at all cannot pass for concurrency: the rate is that of one
    apart = bc.aggregate([_worker(0.0, 10.0, 100), _worker(10.0, 20.0, 100)])
    assert apart["aggregate_triplets_per_s"] == pytest.approx(1280.0) and apart["overlap_share"] == 0


def test_table_gives_the_gain_over_one_training():
    bc = _load()
    levels = [bc.aggregate([_worker(0, 10, 100)]), bc.aggregate([_worker(0, 10, 100), _worker(0, 10, 100)])]
    meta = {
        "model": "m",
        "device": "d",
        "batch_size": 128,
        "max_seq_length": 128,
        "precision": "bf16",
        "steps": 80,
        "warmup": 20,
    }
    rows = [ln for ln in bc.table(levels, meta).splitlines() if ln.startswith("| ") and ln[2].isdigit()]
    assert rows[0].startswith("| 1 | 1,280 | 1.00 |") and rows[1].startswith("| 2 | 2,560 | 2.00 |")
