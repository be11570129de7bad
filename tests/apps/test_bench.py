"""The env benchmark's machinery (apps.bench): interleaved rounds, medians and their intervals.
Speed itself is measured in benchmarks/, never asserted here (STANDARDS)."""

from __future__ import annotations

import importlib.util

import pytest

from treppen.apps import bench


def test_median_interval_uses_order_statistics():
    # n = 10: (x_2, x_9) covers the median with 1 - 2 * 11/1024 = 97.9%; (x_3, x_8) only 89%
    assert bench.median_interval(list(range(10, 0, -1))) == (5.5, 2, 9)
    # n = 20: (x_6, x_15), 95.9%
    assert bench.median_interval([float(x) for x in range(20)]) == (9.5, 5.0, 14.0)
    # too few rounds for 95%: the range
    assert bench.median_interval([3.0, 1.0, 2.0]) == (2.0, 1.0, 3.0)
    with pytest.raises(ValueError, match="no values"):
        bench.median_interval([])


def test_sample_chance_walks_the_cumulative_probabilities():
    outcomes = [(4, 0.25), (7, 0.5), (9, 0.25)]
    assert [bench._sample_chance(outcomes, u) for u in (0.0, 0.24, 0.25, 0.74, 0.75, 0.999)] == [4, 4, 7, 7, 9, 9]
    assert bench._sample_chance([(1, 0.3), (2, 0.69)], 0.995) == 2  # probabilities short of 1


def test_interleaved_rounds_alternate_the_order():
    calls = []
    contenders = {name: (lambda name=name: calls.append(name) or 5) for name in "ab"}
    raw = bench.interleaved(contenders, seconds=1e-9, rounds=3, log=lambda line: None)
    assert calls == ["a", "b", "a", "b", "b", "a", "a", "b"]  # warm-up, then a b / b a / a b
    assert [steps for steps, _, _ in raw["a"]] == [5, 5, 5]
    assert [deals for _, deals, _ in raw["b"]] == [1, 1, 1]


def test_run_benchmarks_reports_medians_and_ratios():
    with_open_spiel = importlib.util.find_spec("pyspiel") is not None
    lines = []
    doc = bench.run_benchmarks(seconds=0.02, players=(2,), rounds=2, open_spiel=with_open_spiel, log=lines.append)
    names = [row["contender"] for row in doc["results"]]
    expected = ["treppen env() 2p", "treppen raw_env 2p"]
    if with_open_spiel:
        expected += ["open_spiel observer", "open_spiel asarray"]
        assert set(doc["ratios"]) == {
            f"treppen {e} / open_spiel {m}" for e in ("env()", "raw_env") for m in ("observer", "asarray")
        }
    assert names == expected
    for row in doc["results"]:
        assert len(row["rounds_steps_per_s"]) == 2 and row["decisions"] > 0
        lo, hi = row["steps_per_s_interval"]
        assert lo <= row["steps_per_s"] <= hi
    with pytest.raises(ValueError, match="rounds=0"):
        bench.run_benchmarks(rounds=0)
