"""Imitation collection speed (a benchmark, not a test): decisions per CPU second that
:func:`treppen.train.imitation.collect` records with the greedy teacher at every seat, as the default
config's warm start does (16 tables side by side, 2 players, treppenromme).

Usage: ``python benchmarks/bench_imitation.py [--decisions 4000] [--rounds 5]
[--out runs/bench/bench_imitation.json]``

Each round collects ``--decisions`` decisions from new seeded deals and counts the CPU seconds of
this process (``time.process_time``); the report gives the median of the rounds and the lowest and
highest. A first, untimed round loads (or compiles) the kernels. The JSON goes atomically to ``--out``.
"""

from __future__ import annotations

import argparse
import json
import platform
import time
from datetime import datetime, timezone
from pathlib import Path

import numpy as np

from treppen.train.imitation import collect, make_teacher
from treppen_env.files import atomic_write_text


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="bench_imitation", description=__doc__.splitlines()[0])
    parser.add_argument("--decisions", type=int, default=4000, help="decisions per round")
    parser.add_argument("--rounds", type=int, default=5, help="timed rounds")
    parser.add_argument("--out", default="runs/bench/bench_imitation.json", help="JSON results file")
    args = parser.parse_args(argv)
    collect(lambda: make_teacher("greedy"), 200, seed=10_000)
    rates = []
    for r in range(args.rounds):
        start = time.process_time()
        data = collect(lambda: make_teacher("greedy"), args.decisions, seed=r)
        rates.append(len(data) / (time.process_time() - start))
    result = {"median": float(np.median(rates)), "low": min(rates), "high": max(rates), "rounds": rates}
    doc = {
        "benchmark": "bench_imitation",
        "when": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "python": platform.python_version(),
        "decisions_per_cpu_s": result,
    }
    atomic_write_text(Path(args.out), json.dumps(doc, indent=2) + "\n")
    low, high, median = result["low"], result["high"], result["median"]
    print(f"imitation collection: {median:,.0f} decisions per CPU s [{low:,.0f}, {high:,.0f}]")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
