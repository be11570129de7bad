"""Speed of the compiled core (a benchmark, not a test): playouts, env decisions and compilation.

Usage: ``python benchmarks/bench_core.py [--positions 20] [--rounds 7] [--playouts 10]
[--players 2 4] [--rules treppenromme] [--out runs/bench/bench_core.json]``

- ``random_playouts_per_cpu_s``: from mid-deal positions (6-30 greedy moves into seeded deals, as
  ``bench_search.py`` takes them), a clone played to the end of the deal with uniformly random
  legal actions through the engine's API (``legal_mask``, ``apply``). Each round plays
  ``--playouts`` playouts from every position and counts CPU seconds of this process
  (``time.process_time``); reported: the median over the rounds with a distribution-free
  interval (``train.bench.median_interval``).
- ``random_playouts_kernel_per_cpu_s``: the same playouts in one kernel
  (:func:`treppen_env.agent_hooks.random_playout`, its own seeded generator).
- ``env_decisions_per_cpu_s``: random legal play in ``treppen_env.env()`` and ``raw_env`` as
  PettingZoo users play (``agent_iter``, ``last``, ``step``), per CPU second, same rounds.
- ``compile_s``: wall and CPU seconds from a fresh interpreter to a dealt state, its legal mask, one action
  and one observation: with an empty kernel cache (``NUMBA_CACHE_DIR`` a new folder: the first
  call after an install compiles every kernel) and then again in a later process that loads the
  cache.

The JSON goes atomically to ``--out``.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from datetime import datetime, timezone
from pathlib import Path

import numpy as np
from bench_search import positions

from treppen.apps.bench import median_interval, treppen_player
from treppen_env.agent_hooks import random_playout as kernel_playout
from treppen_env.engine import GameState
from treppen_env.files import atomic_write_text

_FIRST_CALL = """
import time
start, cpu = time.perf_counter(), time.process_time()
import numpy as np
from treppen_env.engine import GameState
from treppen_env.observation import encode
from treppen_env.rules import make_rules
for preset in ("treppenromme", "rum500"):
    state = GameState(make_rules(preset), 2, np.random.default_rng(0))
    state.deal(0)
    state.apply(int(np.flatnonzero(state.legal_mask())[0]))
    encode(state, 0)
print(time.perf_counter() - start, time.process_time() - cpu)
"""


def random_playout(state: GameState, rng: np.random.Generator) -> None:
    """Play ``state`` to the end of the deal with uniformly random legal actions."""
    while not state.deal_over:
        legal = np.flatnonzero(state.legal_mask())
        state.apply(int(legal[rng.integers(legal.size)]))


def rounds_of(fn: Callable[[], int], rounds: int) -> dict[str, float]:
    """Median and interval over ``rounds`` of ``fn()`` (which returns a count) per CPU second."""
    rates = []
    for _ in range(rounds):
        cpu = time.process_time()
        done = fn()
        rates.append(done / (time.process_time() - cpu))
    median, low, high = median_interval(rates)
    return {"median": median, "low": low, "high": high, "rounds": rounds}


def measure(rules_name: str, players: int, count: int, rounds: int, playouts: int, seed: int) -> dict:
    """Random playouts and env decisions per CPU second (see the module docstring)."""
    states = positions(rules_name, players, count, seed)
    rng = np.random.default_rng(seed)

    def play_round() -> int:
        for state in states:
            for _ in range(playouts):
                random_playout(state.clone(rng), rng)
        return len(states) * playouts

    def kernel_round() -> int:
        for i, state in enumerate(states):
            for k in range(playouts):
                kernel_playout(state.clone(rng), i * playouts + k)
        return len(states) * playouts

    def env_round(play_one: Callable[[], int], deals: int = 20) -> Callable[[], int]:
        return lambda: sum(play_one() for _ in range(deals))

    random_playout(states[0].clone(rng), rng)  # load the kernels before timing
    kernel_playout(states[0].clone(rng), 0)
    wrapped = treppen_player(True, players, rules_name, seed)
    raw = treppen_player(False, players, rules_name, seed)
    return {
        "rules": rules_name,
        "players": players,
        "positions": len(states),
        "random_playouts_per_cpu_s": rounds_of(play_round, rounds),
        "random_playouts_kernel_per_cpu_s": rounds_of(kernel_round, rounds),
        "env_decisions_per_cpu_s": {
            "env()": rounds_of(env_round(wrapped), rounds),
            "raw_env": rounds_of(env_round(raw), rounds),
        },
    }


def first_call_seconds() -> dict[str, dict[str, float]]:
    """Wall and CPU seconds to the first action in a fresh process (imports included), with a new
    and with a filled kernel cache."""
    out = {}
    with tempfile.TemporaryDirectory() as cache:
        env = {**os.environ, "NUMBA_CACHE_DIR": cache}
        for name in ("fresh_cache", "later_process"):
            done = subprocess.run([sys.executable, "-c", _FIRST_CALL], env=env, capture_output=True, text=True)
            if done.returncode:
                raise RuntimeError(done.stderr)
            wall, cpu = map(float, done.stdout.split())
            out[name] = {"wall_s": wall, "cpu_s": cpu}
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="bench_core", description=__doc__.splitlines()[0])
    parser.add_argument("--positions", type=int, default=20, help="mid-deal positions per table size")
    parser.add_argument("--rounds", type=int, default=7, help="timed rounds (median and interval over them)")
    parser.add_argument("--playouts", type=int, default=10, help="playouts per position and round")
    parser.add_argument("--players", type=int, nargs="+", default=[2, 4], help="table sizes")
    parser.add_argument("--rules", default="treppenromme", help="rules preset")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--no-compile", action="store_true", help="skip the compile-time measurement")
    parser.add_argument("--out", default="runs/bench/bench_core.json", help="JSON results file")
    args = parser.parse_args(argv)
    compile_s = None if args.no_compile else first_call_seconds()
    runs = [measure(args.rules, p, args.positions, args.rounds, args.playouts, args.seed) for p in args.players]
    doc = {
        "benchmark": "bench_core",
        "when": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "python": platform.python_version(),
        "machine": platform.machine(),
        "compile_s": compile_s,
        "results": runs,
    }
    atomic_write_text(Path(args.out), json.dumps(doc, indent=2) + "\n")
    if compile_s:
        fresh, later = compile_s["fresh_cache"], compile_s["later_process"]
        print(
            f"first call: fresh cache {fresh['cpu_s']:.1f} CPU s ({fresh['wall_s']:.1f} s wall), "
            f"later process {later['cpu_s']:.2f} CPU s ({later['wall_s']:.2f} s wall)"
        )
    for r in runs:
        p = r["random_playouts_per_cpu_s"]
        q = r["random_playouts_kernel_per_cpu_s"]
        envs = ", ".join(f"{k} {v['median']:,.0f}" for k, v in r["env_decisions_per_cpu_s"].items())
        print(
            f"{r['players']}p {r['rules']}: random playouts/CPU s {p['median']:,.0f} "
            f"[{p['low']:,.0f}, {p['high']:,.0f}] (API loop), {q['median']:,.0f} [{q['low']:,.0f}, "
            f"{q['high']:,.0f}] (one kernel); env decisions/CPU s {envs}"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
