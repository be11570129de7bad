"""Search speed from mid-deal: CPU seconds per decision at given playout budgets (a benchmark, not a test).

Usage: ``python benchmarks/bench_search.py [--positions 20] [--players 2 4] [--rules treppenromme]
[--budgets 250 500 1000 2000 4000] [--out runs/bench/bench_search.json]``

Positions are taken from greedy self-play deals after 6-30 moves (mid-deal) where the mover has
more than one searched move. For each search agent (``rollout``, ``ismcts``) and playout budget it
times whole decisions (``agent.act``) in CPU seconds of this thread (``time.thread_time``, so
other load on the machine does not count), after one untimed decision that loads the kernels. It
reports the mean seconds per decision, playouts per CPU second, and the playouts that fit 0.25 s
and 1 s of CPU per decision. The JSON goes atomically to ``--out``.
"""

from __future__ import annotations

import argparse
import json
import platform
import time
from datetime import datetime, timezone
from pathlib import Path

import numpy as np

from treppen.agents import GreedyAgent, ISMCTSAgent, RolloutAgent
from treppen_env.engine import GameState
from treppen_env.files import atomic_write_text
from treppen_env.observation import encode
from treppen_env.rules import make_rules


def positions(rules_name: str, players: int, count: int, seed: int) -> list[GameState]:
    """``count`` mid-deal positions (6-30 greedy moves into seeded deals, deal not over)."""
    rules = make_rules(rules_name)
    greedy = GreedyAgent(rules=rules)
    rng = np.random.default_rng(seed)
    out: list[GameState] = []
    while len(out) < count:
        state = GameState(rules, players, np.random.default_rng(int(rng.integers(2**31))))
        state.deal(int(rng.integers(players)))
        for _ in range(int(rng.integers(6, 31))):
            if state.deal_over:
                break
            state.apply(greedy.act(observe(state)))
        if not state.deal_over and RolloutAgent(rules=rules, playouts=1).analyse(observe(state))[0].playouts:
            out.append(state)
    return out


def observe(state: GameState) -> dict:
    return {"observation": encode(state, state.current), "action_mask": state.legal_mask().copy()}


AGENTS = {"rollout": RolloutAgent, "ismcts": ISMCTSAgent}


def measure(rules_name: str, players: int, count: int, budgets: list[int], seed: int) -> dict:
    """Mean CPU seconds per decision of each agent and budget over the positions."""
    observations = [observe(s) for s in positions(rules_name, players, count, seed)]
    per_decision: dict[str, dict[str, float]] = {}
    for name, make in AGENTS.items():
        make(seed=seed, rules=rules_name, playouts=2).act(observations[0])  # load the kernels
        per_decision[name] = {}
        for budget in budgets:
            agent = make(seed=seed, rules=rules_name, playouts=budget)
            spent, searched = 0.0, 0
            for obs in observations:
                start = time.thread_time()
                agent.act(obs)
                if agent.simulations:
                    spent += time.thread_time() - start
                    searched += 1
            per_decision[name][str(budget)] = spent / max(searched, 1)
    rates = {name: max(budgets) / per_decision[name][str(max(budgets))] for name in AGENTS}
    return {
        "rules": rules_name,
        "players": players,
        "positions": len(observations),
        "cpu_s_per_decision": per_decision,
        "playouts_per_cpu_s": rates,
        "playouts_for_cpu_s": {name: {"0.25": int(0.25 * r), "1.0": int(r)} for name, r in rates.items()},
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="bench_search", description=__doc__.splitlines()[0])
    parser.add_argument("--positions", type=int, default=20, help="mid-deal positions per table size")
    parser.add_argument("--budgets", type=int, nargs="+", default=[250, 500, 1000, 2000, 4000], help="playouts")
    parser.add_argument("--players", type=int, nargs="+", default=[2, 4], help="table sizes")
    parser.add_argument("--rules", default="treppenromme", help="rules preset")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", default="runs/bench/bench_search.json", help="JSON results file")
    args = parser.parse_args(argv)
    runs = [measure(args.rules, p, args.positions, args.budgets, args.seed) for p in args.players]
    doc = {
        "benchmark": "bench_search",
        "when": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "python": platform.python_version(),
        "machine": platform.machine(),
        "results": runs,
    }
    atomic_write_text(Path(args.out), json.dumps(doc, indent=2) + "\n")
    for r in runs:
        for name, by_budget in r["cpu_s_per_decision"].items():
            times = ", ".join(f"{b}: {s:.3f} s" for b, s in by_budget.items())
            print(f"{r['players']}p {r['rules']} {name}: CPU s per decision by playouts {times}")
            fits = r["playouts_for_cpu_s"][name]
            print(f"  {r['playouts_per_cpu_s'][name]:.0f} playouts/CPU-s; for 0.25 s / 1 s: {fits}")
    print(f"results in {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
