"""Search simulation speed from mid-deal (a benchmark, not a test).

Usage: ``python benchmarks/bench_search.py [--positions 20] [--repeats 5] [--players 2 4]
[--rules treppenromme] [--out runs/bench/bench_search.json]``

Positions are taken from greedy self-play deals after 6-30 moves (mid-deal). For each it measures,
per operation, CPU seconds of this process (``time.process_time``, so other load on the machine
does not count) and wall seconds:

- ``clone``: :meth:`GameState.clone`;
- ``determinize``: :func:`treppen_env.determinize.sample_state` from the mover's observation;
- ``playout_greedy`` / ``playout_random``: a sampled state played to the end of the deal by the
  search agents' default policies (greedy at every seat through the fast public view, or random);
- ``ismcts_iteration``: one IS-MCTS iteration of the default agent (determinize, descend, play out).

It reports playouts per CPU second and the ``iterations`` budget of ``ismcts`` that fits 0.25 s
and 1 s of CPU per decision. The JSON goes atomically to ``--out``.
"""

from __future__ import annotations

import argparse
import json
import platform
import time
from collections.abc import Callable
from datetime import datetime, timezone
from pathlib import Path

import numpy as np

from agents import GreedyAgent, ISMCTSAgent
from treppen_env.determinize import sample_state
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
        if not state.deal_over:
            out.append(state)
    return out


def observe(state: GameState) -> dict:
    return {"observation": encode(state, state.current), "action_mask": state.legal_mask().copy()}


def timed(fn: Callable[[], object], repeats: int) -> dict[str, float]:
    """Mean CPU and wall seconds of ``fn()`` over ``repeats`` calls."""
    cpu, wall = time.process_time(), time.perf_counter()
    for _ in range(repeats):
        fn()
    return {"cpu_s": (time.process_time() - cpu) / repeats, "wall_s": (time.perf_counter() - wall) / repeats}


def measure(rules_name: str, players: int, count: int, repeats: int, seed: int) -> dict:
    """Per-operation mean CPU and wall seconds over the positions (see the module docstring)."""
    states = positions(rules_name, players, count, seed)
    agent = ISMCTSAgent(seed=seed, rules=rules_name)
    rng = np.random.default_rng(seed)
    ops: dict[str, list[dict[str, float]]] = {}

    def add(name: str, fn: Callable[[], object]) -> None:
        ops.setdefault(name, []).append(timed(fn, repeats))

    steps = []
    for state in states:
        obs = observe(state)
        add("clone", lambda s=state: s.clone(rng))
        add("determinize", lambda o=obs: sample_state(o, rules_name, rng))
        samples = [sample_state(obs, rules_name, rng) for _ in range(repeats)]
        agent.playout = "greedy"
        greedy_samples = iter(samples)
        add("playout_greedy", lambda it=greedy_samples: agent._play_out(next(it)))
        steps.append(np.mean([s.turn for s in samples]) - state.turn)
        fresh = [sample_state(obs, rules_name, rng) for _ in range(repeats)]
        agent.playout = "random"
        random_samples = iter(fresh)
        add("playout_random", lambda it=random_samples: agent._play_out(next(it)))
        agent.playout = "greedy"
        agent.iterations = 8
        cpu = time.process_time()
        wall = time.perf_counter()
        agent.act(obs)
        sims = max(agent.simulations, 1)
        ops.setdefault("ismcts_iteration", []).append(
            {"cpu_s": (time.process_time() - cpu) / sims, "wall_s": (time.perf_counter() - wall) / sims}
        )
    result = {
        name: {k: float(np.mean([r[k] for r in runs])) for k in ("cpu_s", "wall_s")} for name, runs in ops.items()
    }
    per_iteration = result["ismcts_iteration"]["cpu_s"]
    return {
        "rules": rules_name,
        "players": players,
        "positions": len(states),
        "repeats": repeats,
        "mean_turns_left": float(np.mean(steps)),
        "seconds_per_op": result,
        "playouts_per_cpu_s": {p: 1.0 / result[f"playout_{p}"]["cpu_s"] for p in ("greedy", "random")},
        "ismcts_iterations_for_cpu_s": {"0.25": int(0.25 / per_iteration), "1.0": int(1.0 / per_iteration)},
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="bench_search", description=__doc__.splitlines()[0])
    parser.add_argument("--positions", type=int, default=20, help="mid-deal positions per table size")
    parser.add_argument("--repeats", type=int, default=5, help="timed calls per position and operation")
    parser.add_argument("--players", type=int, nargs="+", default=[2, 4], help="table sizes")
    parser.add_argument("--rules", default="treppenromme", help="rules preset")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", default="runs/bench/bench_search.json", help="JSON results file")
    args = parser.parse_args(argv)
    runs = [measure(args.rules, p, args.positions, args.repeats, args.seed) for p in args.players]
    doc = {
        "benchmark": "bench_search",
        "when": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "python": platform.python_version(),
        "machine": platform.machine(),
        "results": runs,
    }
    atomic_write_text(Path(args.out), json.dumps(doc, indent=2) + "\n")
    for r in runs:
        ops = ", ".join(f"{k} {v['cpu_s'] * 1e3:.2f} ms" for k, v in r["seconds_per_op"].items())
        print(f"{r['players']}p {r['rules']}: {ops} (CPU per call)")
        print(
            f"  playouts/CPU-s greedy {r['playouts_per_cpu_s']['greedy']:.0f}, "
            f"random {r['playouts_per_cpu_s']['random']:.0f}; "
            f"ismcts iterations for 0.25 s / 1 s CPU: {r['ismcts_iterations_for_cpu_s']}"
        )
    print(f"results in {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
