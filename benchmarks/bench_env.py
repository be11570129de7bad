"""Env speed (a benchmark, not a test): decisions a second of the AEC env and env steps a second
of the batched env, each beside OpenSpiel's ``gin_rummy`` (only with ``pip install -e ".[bench]"``).

Variants (the first word; ``--help`` after it lists its options):

- ``single``: ``treppen bench`` (:mod:`treppen.apps.bench`): random legal play in ``env()`` and
  ``raw_env`` against OpenSpiel, decisions per wall second in interleaved rounds, and their ratios.
  ``python benchmarks/bench_env.py single [--seconds 5] [--rounds 10] [--players 2 4]``.
- ``vector``: the batched env's throughput, env steps per CPU second against the number of rows,
  beside ``env()``, OpenSpiel and Gymnasium's ``SyncVectorEnv``. In one run, interleaved rounds of
  each contender, the order reversed every other round (CPU time of this process, so one core;
  medians and an order-statistic interval over the rounds):

  - ``env()`` 2 players, random legal actions (as ``treppen bench``: ``last()``, ``np.flatnonzero``);
  - OpenSpiel ``gin_rummy`` through its Observer API;
  - ``gymnasium.vector.SyncVectorEnv`` over 16 ``SingleAgentEnv`` with greedy opponents, the learner
    random legal (its masks through ``call("action_masks")``);
  - ``treppen_env.vector_env`` at N = 1, 16, 64, 256, 1024 rows in three modes: random legal at every
    seat (self-play rows, actions from ``sample_actions()``), random opponents inside the kernel and
    greedy opponents inside the kernel (the learner random legal).

  An env step is one decision of the caller: with kernel opponents their moves are inside the step.
  ``python benchmarks/bench_env.py vector [--seconds 2] [--rounds 3]`` prints a Markdown table.

Both write their JSON under ``benchmarks/results/`` (``bench_env_single.json``, ``bench_env_vector.json``).
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable, Sequence

import gymnasium as gym
import numpy as np
from harness import RESULTS, conditions, median_interval, run_variant, write

import treppen_env
from treppen.agents import GreedyAgent
from treppen.apps import bench
from treppen.apps.bench import open_spiel_player, treppen_player

ROWS = (1, 16, 64, 256, 1024)
MODES = {"random legal, every seat": None, "random opponents": "random", "greedy opponents": "greedy"}
#: Steps a contender plays for: (steps, CPU seconds) of one call.
Round = Callable[[float], tuple[int, float]]


def timed(step: Callable[[], int]) -> Round:
    """A round of repeated ``step()`` calls (each returning its env steps) for about ``seconds``."""

    def run(seconds: float) -> tuple[int, float]:
        steps, start = 0, time.process_time()
        while (elapsed := time.process_time() - start) < seconds:
            steps += step()
        return steps, elapsed

    return run


def vector_round(rows: int, opponents: str | None) -> Round:
    env = treppen_env.vector_env(rows, 2, opponents=opponents)
    env.reset(seed=0)

    def step() -> int:
        env.step(env.sample_actions())
        return rows

    step()
    return timed(step)


def sync_vector_round(rows: int = 16) -> Round:
    envs = gym.vector.SyncVectorEnv(
        [lambda: treppen_env.SingleAgentEnv([GreedyAgent()], num_players=2) for _ in range(rows)]
    )
    envs.reset(seed=0)
    rng = np.random.default_rng(0)

    def step() -> int:
        masks = envs.call("action_masks")
        # a finished env's next step only resets it (next-step auto-reset): any action then
        envs.step(np.array([rng.choice(np.flatnonzero(m)) if m.any() else 0 for m in masks]))
        return rows

    step()
    return timed(step)


def deal_round(play_one: Callable[[], int]) -> Round:
    return timed(play_one)


def single(argv: Sequence[str] | None = None) -> int:
    """``treppen bench``: the AEC env against OpenSpiel in interleaved rounds (wall seconds)."""
    parser = argparse.ArgumentParser(prog="bench_env single", description=bench.__doc__.splitlines()[0])
    bench.add_arguments(parser)
    parser.set_defaults(out=RESULTS / "bench_env_single.json")
    return bench.run(parser.parse_args(argv))


def vector(argv: Sequence[str] | None = None) -> int:
    """The batched env's env steps per CPU second beside ``env()``, OpenSpiel and ``SyncVectorEnv``."""
    parser = argparse.ArgumentParser(prog="bench_env vector", description="the batched env's throughput")
    parser.add_argument("--seconds", type=float, default=2.0, help="CPU seconds per contender and round")
    parser.add_argument("--rounds", type=int, default=3, help="interleaved rounds")
    parser.add_argument("--out", default=RESULTS / "bench_env_vector.json", help="JSON results file")
    args = parser.parse_args(argv)
    before = conditions()

    contenders: dict[str, Round] = {"env() 2p": deal_round(treppen_player(True, 2, "treppenromme", 0))}
    spiel = open_spiel_player("observer", 0)
    if spiel is not None:
        contenders["OpenSpiel gin_rummy observer"] = deal_round(spiel)
    contenders["SyncVectorEnv(16 x SingleAgentEnv, greedy opponents)"] = sync_vector_round()
    for mode, opponents in MODES.items():
        for rows in ROWS:
            contenders[f"vector_env N={rows}, {mode}"] = vector_round(rows, opponents)
    rates: dict[str, list[float]] = {name: [] for name in contenders}
    names = list(contenders)
    for r in range(args.rounds):
        for name in names if r % 2 == 0 else names[::-1]:  # the order reversed every other round
            steps, seconds = contenders[name](args.seconds)
            rates[name].append(steps / seconds)
    summary = {name: dict(zip(("median", "low", "high"), median_interval(v), strict=True)) for name, v in rates.items()}
    env_rate = summary["env() 2p"]["median"]
    sync_rate = summary["SyncVectorEnv(16 x SingleAgentEnv, greedy opponents)"]["median"]
    lines = ["| contender | env steps per CPU s | interval | x env() | x SyncVectorEnv |", "|---|---|---|---|---|"]
    for name, s in summary.items():
        lines.append(
            f"| {name} | {s['median']:,.0f} | [{s['low']:,.0f}, {s['high']:,.0f}] | "
            f"{s['median'] / env_rate:.2f} | {s['median'] / sync_rate:.2f} |"
        )
    print("\n".join(lines))
    write(args.out, {"seconds": args.seconds, "rounds": args.rounds, "rates": rates, "summary": summary}, before)
    return 0


if __name__ == "__main__":
    raise SystemExit(run_variant({"single": single, "vector": vector}))
