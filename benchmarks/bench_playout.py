"""Compiled playouts from mid-deal (a benchmark, not a test): greedy and random playouts per CPU second.

Usage: ``python benchmarks/bench_playout.py [--positions 40] [--rounds 9] [--playouts 200]
[--players 2 4] [--rules treppenromme] [--out runs/bench/bench_playout.json]``

Positions are those of ``benchmarks/bench_search.py`` (6-30 greedy moves into seeded deals). Each
is sampled once from the mover's observation (:func:`treppen_env.determinize.sample_state`), then
:func:`treppen_env.agent_core.playout.playouts` plays ``--playouts`` playouts from it, each from a
fresh redeal of the unseen cards, as flat Monte Carlo search does. A round covers every position;
the rate of a round is its playouts over the CPU seconds of this process (``time.process_time``:
one core, other load on the machine does not count). The report gives the median of the rounds
and an order-statistic interval (about 95% for 9 rounds: the 2nd-lowest to the 2nd-highest).
The JSON goes atomically to ``--out``.
"""

from __future__ import annotations

import argparse
import json
import platform
import time
from datetime import datetime, timezone
from pathlib import Path

import numpy as np
from bench_search import observe, positions

from treppen_env.agent_core import greedy as G
from treppen_env.agent_core import playout as P
from treppen_env.determinize import sample_state
from treppen_env.files import atomic_write_text


def rates(rules_name: str, players: int, count: int, rounds: int, playouts: int, policy: str, seed: int) -> dict:
    """Playouts per CPU second over ``rounds`` rounds (median, interval, all rounds), and moves per playout."""
    rng = np.random.default_rng(seed)
    samples = [sample_state(observe(s), rules_name, rng) for s in positions(rules_name, players, count, seed)]
    playout = P.Playout(P.seat_policies(policy, players), G.settings_row())
    points = np.zeros((playouts, players), dtype=np.int64)

    def one_round(round_seed: int) -> tuple[float, int]:
        moves = 0
        start = time.process_time()
        for k, s in enumerate(samples):
            moves += P.playouts(s.arrays(), *s.tables, 0, playout, round_seed * 1000 + k, points)
        return len(samples) * playouts / (time.process_time() - start), moves

    one_round(0)  # load (or compile) the kernels before timing
    results = [one_round(r + 1) for r in range(rounds)]
    per_s = sorted(r for r, _ in results)
    k = max(0, round(rounds / 2 - 1.96 * np.sqrt(rounds) / 2) - 1)
    return {
        "median": float(np.median(per_s)),
        "interval": [float(per_s[k]), float(per_s[-1 - k])],
        "rounds": per_s,
        "moves_per_playout": results[0][1] / (len(samples) * playouts),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="bench_playout", description=__doc__.splitlines()[0])
    parser.add_argument("--positions", type=int, default=40, help="mid-deal positions per table size")
    parser.add_argument("--rounds", type=int, default=9, help="timed rounds over all positions")
    parser.add_argument("--playouts", type=int, default=200, help="playouts per position and round")
    parser.add_argument("--players", type=int, nargs="+", default=[2, 4], help="table sizes")
    parser.add_argument("--rules", default="treppenromme", help="rules preset")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", default="runs/bench/bench_playout.json", help="JSON results file")
    args = parser.parse_args(argv)
    runs = []
    for players in args.players:
        for policy in ("greedy", "random"):
            r = rates(args.rules, players, args.positions, args.rounds, args.playouts, policy, args.seed)
            runs.append({"rules": args.rules, "players": players, "policy": policy, "playouts_per_cpu_s": r})
            low, high = r["interval"]
            print(
                f"{players}p {args.rules} {policy}: {r['median']:,.0f} playouts per CPU s "
                f"[{low:,.0f}, {high:,.0f}], {r['moves_per_playout']:.0f} moves a playout"
            )
    doc = {
        "benchmark": "bench_playout",
        "when": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "python": platform.python_version(),
        "machine": platform.machine(),
        "results": runs,
    }
    atomic_write_text(Path(args.out), json.dumps(doc, indent=2) + "\n")
    print(f"results in {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
