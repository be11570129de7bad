"""Environment throughput: random legal play, decision steps/s and deals/s (not a test).

Every decision reads the observation and the mask and picks uniformly among the legal actions with
a seeded ``numpy.random.Generator``:

- treppen: ``env.last()`` then ``np.flatnonzero(obs["action_mask"])``, for ``raw_env`` and the
  wrapped ``env()``, over ``agent_iter()`` as PettingZoo users play;
- OpenSpiel ``gin_rummy`` (C++, when ``pyspiel`` is importable) as the reference of DESIGN
  "Performance notes": ``state.observation_tensor()`` as a float32 array and
  ``state.legal_actions_mask()`` as an array; chance nodes are sampled from ``chance_outcomes()``
  and are not counted as decisions.

Whole deals (games) are played until ``--seconds`` have passed, so a measurement may run over by
one deal. Results are printed as a table and written as JSON (atomically) to ``--out``.

Usage: ``treppen bench [--seconds 5] [--players 2 4] [--repeat 1] [--out PATH]`` (or
``python benchmarks/bench_env.py`` with the same arguments).
"""

from __future__ import annotations

import argparse
import datetime as dt
import functools
import json
import os
import platform
import time
from collections.abc import Callable, Sequence
from importlib import metadata
from pathlib import Path

import numpy as np

from train.io import atomic_write_text

DEFAULT_OUT = Path("runs") / "bench" / "bench_env.json"


def _measure(play_one: Callable[[], int], seconds: float) -> dict:
    """Call ``play_one`` (plays one deal, returns its decisions) until ``seconds`` have passed."""
    play_one()  # warm-up, not timed
    steps = deals = 0
    start = time.perf_counter()
    while True:
        steps += play_one()
        deals += 1
        elapsed = time.perf_counter() - start
        if elapsed >= seconds:
            break
    return {
        "decisions": steps,
        "deals": deals,
        "seconds": round(elapsed, 3),
        "steps_per_s": steps / elapsed,
        "deals_per_s": deals / elapsed,
        "decisions_per_deal": steps / deals,
    }


def bench_treppen(wrapped: bool, num_players: int, rules: str, seconds: float, seed: int) -> dict:
    """Random legal play in treppen's ``env()`` (``wrapped``) or ``raw_env``."""
    import treppen_env

    make = treppen_env.env if wrapped else treppen_env.raw_env
    env = make(num_players=num_players, rules=rules)
    rng = np.random.default_rng(seed)
    env.reset(seed=seed)
    first = [True]

    def play_one() -> int:
        if not first[0]:
            env.reset()
        first[0] = False
        steps = 0
        for _ in env.agent_iter():
            obs, _, term, trunc, _ = env.last()
            if term or trunc:
                env.step(None)
                continue
            legal = np.flatnonzero(obs["action_mask"])
            env.step(int(legal[rng.integers(len(legal))]))
            steps += 1
        return steps

    return _measure(play_one, seconds)


def bench_open_spiel(seconds: float, seed: int) -> dict | None:
    """Random legal play in OpenSpiel's ``gin_rummy``; ``None`` when pyspiel is not installed."""
    try:
        import pyspiel
    except ImportError:
        return None
    game = pyspiel.load_game("gin_rummy")
    rng = np.random.default_rng(seed)

    def play_one() -> int:
        state = game.new_initial_state()
        steps = 0
        while not state.is_terminal():
            if state.is_chance_node():
                state.apply_action(_sample_chance(state.chance_outcomes(), rng.random()))
                continue
            np.asarray(state.observation_tensor(), dtype=np.float32)
            legal = np.flatnonzero(np.asarray(state.legal_actions_mask()))
            state.apply_action(int(legal[rng.integers(len(legal))]))
            steps += 1
        return steps

    return _measure(play_one, seconds)


def _sample_chance(outcomes: list[tuple[int, float]], u: float) -> int:
    """The outcome whose cumulative probability first exceeds ``u`` (``u`` uniform in [0, 1))."""
    acc = 0.0
    for action, prob in outcomes:
        acc += prob
        if u < acc:
            return action
    return outcomes[-1][0]  # rounding: the probabilities may sum to slightly less than 1


def _version(dist: str) -> str | None:
    try:
        return metadata.version(dist)
    except metadata.PackageNotFoundError:
        return None


def run_benchmarks(
    seconds: float = 5.0,
    players: Sequence[int] = (2, 4),
    rules: str = "treppenromme",
    seed: int = 0,
    open_spiel: bool = True,
    repeat: int = 1,
    log: Callable[[str], None] = print,
) -> dict:
    """Run every measurement and return the results (the JSON document written by :func:`main`).

    :param seconds: time per measurement.
    :param players: player counts to measure treppen with.
    :param rules: treppen rules preset.
    :param seed: seeds the deals and the action choices.
    :param open_spiel: also measure OpenSpiel's ``gin_rummy`` when pyspiel is importable.
    :param repeat: rounds of all measurements, interleaved; each figure is the best round (on a
        shared machine other work only ever slows a round down).
    :param log: called with each line of the table.
    """
    jobs: list[tuple[str, int, Callable[[], dict | None]]] = []
    for num_players in players:
        for wrapped in (False, True):
            name = f"treppen {'env()' if wrapped else 'raw_env'} {rules}"
            jobs.append(
                (name, num_players, functools.partial(bench_treppen, wrapped, num_players, rules, seconds, seed))
            )
    if open_spiel:
        jobs.append(("open_spiel gin_rummy", 2, functools.partial(bench_open_spiel, seconds, seed)))
    header = f"{'env':<28}{'players':>8}{'decisions/s':>14}{'deals/s':>10}{'decisions/deal':>16}"

    def line(row: dict) -> str:
        return (
            f"{row['env']:<28}{row['players']:>8}{row['steps_per_s']:>14,.0f}{row['deals_per_s']:>10,.1f}"
            f"{row['decisions_per_deal']:>16,.1f}"
        )

    load_before = os.getloadavg() if hasattr(os, "getloadavg") else None
    best: dict[tuple[str, int], dict] = {}
    for round_ in range(repeat):
        log(header if repeat == 1 else f"round {round_ + 1} of {repeat}\n{header}")
        log("-" * len(header))
        for name, num_players, measure in jobs:
            row = measure()
            if row is None:
                log(f"{name}: skipped (pyspiel is not importable)")
                continue
            row = {"env": name, "players": num_players, **row}
            log(line(row))
            key = (name, num_players)
            rounds = [*best.get(key, {}).get("rounds_steps_per_s", []), row["steps_per_s"]]
            if key not in best or row["steps_per_s"] > best[key]["steps_per_s"]:
                best[key] = row
            best[key]["rounds_steps_per_s"] = rounds
    results = list(best.values())
    if repeat > 1:
        log(f"best of {repeat} rounds\n{header}")
        log("-" * len(header))
        for row in results:
            log(line(row))
    reference = best.get(("open_spiel gin_rummy", 2))
    ratios = {}
    if reference is not None:
        for row in results:
            if row["env"].startswith("treppen") and row["players"] == 2:
                key = row["env"].split()[1]
                ratios[f"{key} 2p / open_spiel"] = row["steps_per_s"] / reference["steps_per_s"]
        for key, ratio in ratios.items():
            log(f"ratio decisions/s {key}: {ratio:.2f}")
    return {
        "benchmark": "random legal play, observation and mask read at every decision",
        "date": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
        "settings": {"seconds": seconds, "players": list(players), "rules": rules, "seed": seed, "repeat": repeat},
        "machine": {
            "python": platform.python_version(),
            "platform": platform.platform(),
            "cpus": os.cpu_count(),
            "load_average_before": load_before,
            "load_average_after": os.getloadavg() if hasattr(os, "getloadavg") else None,
            "numpy": np.__version__,
            "pettingzoo": _version("pettingzoo"),
            "open_spiel": _version("open_spiel"),
        },
        "results": results,
        "ratios": ratios,
    }


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Arguments of ``treppen bench`` (and of ``benchmarks/bench_env.py``)."""
    parser.add_argument("--seconds", type=float, default=5.0, help="time per measurement (default 5)")
    parser.add_argument(
        "--players", type=int, nargs="+", default=[2, 4], choices=[2, 3, 4], help="treppen player counts (default 2 4)"
    )
    parser.add_argument(
        "--rules",
        default="treppenromme",
        choices=["treppenromme", "rum500"],
        help="treppen rules preset (default treppenromme)",
    )
    parser.add_argument("--seed", type=int, default=0, help="seed of the deals and action choices")
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT, help=f"JSON results (default {DEFAULT_OUT})")
    parser.add_argument(
        "--repeat", type=int, default=1, help="rounds of all measurements, interleaved; report the best (default 1)"
    )
    parser.add_argument(
        "--no-open-spiel", dest="open_spiel", action="store_false", help="skip the OpenSpiel gin_rummy reference"
    )


def run(args: argparse.Namespace) -> int:
    """Run the benchmarks, print the table and write the JSON; returns 0.

    :raises ValueError: for a non-positive ``--seconds`` or ``--repeat``.
    """
    if args.seconds <= 0 or args.repeat < 1:
        raise ValueError("--seconds must be positive and --repeat at least 1")
    print(f"random legal play, {args.seconds:g} s per measurement ({os.cpu_count()} CPUs)", flush=True)
    doc = run_benchmarks(
        args.seconds,
        args.players,
        args.rules,
        args.seed,
        args.open_spiel,
        args.repeat,
        log=lambda line: print(line, flush=True),
    )
    atomic_write_text(args.out, json.dumps(doc, indent=2) + "\n")
    print(f"results written to {args.out}")
    return 0
